"""The sealed format's fast paths (formats/cobblestone.py, transfer/batches.py): a message's
chunks as ONE device job whose texts lie between the tags, byte-identical to pyca's and with
every failure where it was."""

import os

import numpy as np
import pytest

from conftest import all_devices

pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")

from ciphergrid.formats import cobblestone as cb  # noqa: E402

CPU = next((d.spec for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
K = cb.CHUNK


def _jobs(monkeypatch) -> list:
    """A list that grows by one for every device AEAD job made."""
    from ciphergrid.engines.device_aead import job

    made = []
    init = job.Job.__init__

    def counted(self, *a, **k):
        made.append(self)
        init(self, *a, **k)

    monkeypatch.setattr(job.Job, "__init__", counted)
    return made


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
@pytest.mark.parametrize("tail", [0, 9])
def test_a_message_is_one_device_job(monkeypatch, tail):
    """Sealing and opening on a device run the whole chunks as one batch, however many
    BATCH_CHUNKS they span (it was one job per BATCH_CHUNKS chunks, each waited for)."""
    monkeypatch.setattr(cb, "BATCH_CHUNKS", 2)
    made = _jobs(monkeypatch)
    key, msg = os.urandom(16), os.urandom(5 * K + tail)
    s = cb.encrypt(msg, key, b"ctx", device=CPU)
    assert len(made) == 1
    d = pyca.Cobblestone128Decryptor(key, b"ctx")
    assert d.update(s) + d.finalize() == msg
    e = pyca.Cobblestone128Encryptor(key, b"ctx")
    assert cb.decrypt(e.update(msg) + e.finalize(), key, b"ctx", device=CPU) == msg
    assert len(made) == 2


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
def test_device_failures_name_the_first_chunk_and_release_nothing():
    key, msg = os.urandom(16), os.urandom(4 * K + 3)
    s = cb.encrypt(msg, key, b"", device="native")
    opener = cb.Opener(cb.scheme(False), key, b"", s[:cb.HEADER], device=CPU)
    for chunk, pos in ((1, cb.SEALED_CHUNK + 7), (2, 3 * cb.SEALED_CHUNK - 1), (4, -1)):
        bad = bytearray(s[cb.HEADER:])
        bad[pos] ^= 1
        if chunk == 1:   # (a later chunk broken too: the first is named)
            bad[3 * cb.SEALED_CHUNK + 5] ^= 1
        out = np.full(len(msg), 7, dtype=np.uint8)
        with pytest.raises(cb.ChunkFailed) as e:
            opener.open(np.frombuffer(bytes(bad), dtype=np.uint8), 0, True, out=out)
        assert e.value.chunk == chunk
        assert not out.any()


def test_a_piece_of_rows_is_its_messages_rows():
    """transfer/batches.piece cuts texts held as rows (a sealed message's chunks between their
    tags) by rows, flat texts by bytes."""
    from ciphergrid.transfer import batches

    key, base = os.urandom(16), os.urandom(cb.NONCE)
    sealed = np.arange(6 * cb.SEALED_CHUNK, dtype=np.uint64).astype(np.uint8)
    rows = sealed.reshape(6, cb.SEALED_CHUNK)[:, :K]
    flat = np.arange(6 * K, dtype=np.uint64).astype(np.uint8)
    b = cb._batch(cb.scheme(False), False, key, base, 10, 6, rows, flat)
    p = batches.piece(b, 2, 5)
    assert p.src.shape == (3, K) and np.array_equal(p.src, rows[2:5])
    assert np.array_equal(p.dst, flat[2 * K:5 * K])
    assert np.array_equal(p.nonces, cb.nonces(base, 12, 3))
    assert list(p.off) == [0, K, 2 * K, 3 * K]


def test_nonces_are_the_counter_xor_base():
    base = bytes(range(1, 13))
    got = cb.nonces(base, (1 << 38) - 3, 3)
    for i in range(3):
        assert got[i].tobytes() == cb._nonce(base, (1 << 38) - 3 + i)
        assert got[i].tobytes() == (int.from_bytes(base, "big") ^ ((1 << 38) - 3 + i)).to_bytes(12, "big")


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
def test_rows_through_the_pipelined_pieces():
    """transfer/batches.run on a batch whose texts are rows between tags (a sealed message's):
    pieces overlapped on the device's queues give pyca's sealed bytes and open them; a broken
    chunk fails that chunk only, its plaintext zeroed."""
    from ciphergrid.route import engine
    from ciphergrid.transfer import batches

    eng = engine(CPU)
    drv = eng.aead_driver("aes-128-gcm")
    sch, key, ctx, h = cb.scheme(False), os.urandom(16), b"rows", 7
    msg = np.frombuffer(os.urandom(h * K), dtype=np.uint8)
    s = cb.Sealer(sch, key, ctx, device="native")
    sealed = np.zeros(h * cb.SEALED_CHUNK + cb.TAG, dtype=np.uint8)
    s.seal(msg, True, out=sealed)
    rows = np.full(h * cb.SEALED_CHUNK, 5, dtype=np.uint8).reshape(h, cb.SEALED_CHUNK)
    b = cb._batch(sch, True, s.key, s.base, 0, h, msg, rows[:, :K])
    tags = batches.run(eng.backend, drv, b, piece_bytes=2 * K, depth=2)
    rows[:, K:] = tags
    assert rows.tobytes() == sealed[:h * cb.SEALED_CHUNK].tobytes()

    bad = sealed[:h * cb.SEALED_CHUNK].copy().reshape(h, cb.SEALED_CHUNK)
    bad[3, 100] ^= 1
    out = np.full(h * K, 9, dtype=np.uint8)
    b = cb._batch(sch, False, s.key, s.base, 0, h, bad[:, :K], out)
    ok = batches.run(eng.backend, drv, b, received=np.ascontiguousarray(bad[:, K:]),
                     piece_bytes=2 * K, depth=2)
    assert ok.tolist() == [True, True, True, False, True, True, True]
    want = msg.copy()
    want[3 * K:4 * K] = 0
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("h,w,pitch,edges", [
    (4, 10, 13, []), (4, 10, 13, [15]), (4, 10, 13, [13, 26]), (3, 8, 8, [4, 12]),
    (5, 16, 20, [1, 39, 40, 77])])
def test_row_copies_cover_each_row_once_within_the_edges(h, w, pitch, edges):
    from ciphergrid.transfer.batches import row_copies

    n = (h - 1) * pitch + w
    bounds = [0, *edges, n]
    ranges = list(zip(bounds[:-1], bounds[1:]))
    seen = np.zeros(n, dtype=int)
    for kind, k, x, *y in row_copies(ranges, h, w, pitch):
        lo, hi = (k * pitch, (x - 1) * pitch + w) if kind == "rows" else (k * pitch + x, k * pitch + y[0])
        assert any(a <= lo and hi <= z for a, z in ranges)
        if kind == "rows":
            for r in range(k, x):
                seen[r * pitch:r * pitch + w] += 1
        else:
            seen[lo:hi] += 1
    want = np.zeros(n, dtype=int)
    for r in range(h):
        want[r * pitch:r * pitch + w] = 1
    assert seen.tolist() == want.tolist()


class _FakeRowsBackend:
    """A backend whose device memory is host memory: what batches._Rows asks of one with
    ``row_copies`` (CUDA's one copy per run of rows), recorded."""

    row_copies = True

    def __init__(self):
        self.calls = []

    def alloc(self, n):
        return np.zeros(n, dtype=np.uint8)

    def view(self, buf, offset, n):
        return buf[offset:offset + n]

    def upload_rows(self, buf, rows, queue=None, *, offset=0):
        self.calls.append(("rows", rows.shape[0]))
        buf[offset:offset + rows.size] = rows.reshape(-1)

    def download_rows(self, rows, buf, queue=None, *, offset=0):
        self.calls.append(("rows", rows.shape[0]))
        rows[...] = buf[offset:offset + rows.size].reshape(rows.shape)

    def upload(self, buf, host, queue=None, *, offset=0, record=True):
        self.calls.append(("part", host.size))
        buf[offset:offset + host.size] = host

    def download(self, host, buf, queue=None, *, offset=0, record=True):
        self.calls.append(("part", host.size))
        host[...] = buf[offset:offset + host.size]


def test_rows_move_as_runs_cut_at_the_registrations(monkeypatch):
    from ciphergrid.transfer import batches, pinning

    # (a registration edge 1.5 rows into the span: row 1 moves in two parts)
    edge = cb.SEALED_CHUNK + 100
    monkeypatch.setattr(pinning, "copy_ranges",
                        lambda b, arr, lo, hi: [(lo, edge), (edge, hi)])
    sch, h = cb.scheme(False), 5
    sealed = np.frombuffer(os.urandom(h * cb.SEALED_CHUNK), dtype=np.uint8).copy()
    rows = sealed.reshape(h, cb.SEALED_CHUNK)
    fake = _FakeRowsBackend()
    b = cb._batch(sch, False, os.urandom(16), os.urandom(12), 0, h, rows[:, :K],
                  np.zeros(h * K, dtype=np.uint8))
    r = batches._Rows(fake, b)
    staged = r.stage(b, None)
    assert staged.src.tobytes() == np.ascontiguousarray(rows[:, :K]).tobytes()
    assert fake.calls == [("rows", 1), ("part", 100), ("part", K - 100), ("rows", 3)]

    out = np.zeros(h * cb.SEALED_CHUNK, dtype=np.uint8).reshape(h, cb.SEALED_CHUNK)
    e = cb._batch(sch, True, os.urandom(16), os.urandom(12), 0, h, np.zeros(h * K, np.uint8),
                  out[:, :K])
    r = batches._Rows(fake, e)
    staged = r.stage(e, None)
    staged.dst[...] = np.ascontiguousarray(rows[:, :K]).reshape(-1)
    r.down(staged, e, None)
    assert out[:, :K].tobytes() == rows[:, :K].tobytes() and not out[:, K:].any()


def _pieces(sealed: bytes, q: int):
    """The body of ``sealed`` in pieces of ``q`` whole sealed chunks (the file path's), the last
    one final: (first chunk, bytes, final)."""
    body = sealed[cb.HEADER:]
    step = q * cb.SEALED_CHUNK
    k = 0
    for lo in range(0, len(body) + 1, step):
        part = body[lo:lo + step]
        final = lo + step >= len(body)
        if final and len(part) == step:   # (a message ending on a piece: its final one after)
            yield k, part, False
            yield k + q, b"", True
            return
        yield k, part, final
        if final:
            return
        k += q


@pytest.mark.parametrize("aes256", [False, True])
@pytest.mark.parametrize("size", [0, 3 * K, 7 * K + 5])
def test_a_lone_worker_opens_through_pycas_chunk_loop(monkeypatch, aes256, size):
    """One worker opening in order (the command line's one thread) runs pyca's decryptor, no
    Python per chunk, where pyca's OpenSSL is the later release; the same bytes, the same
    errors."""
    from ciphergrid.engines.openssl import aead as ossl

    if not ossl._pyca_newer():
        pytest.skip("pyca's OpenSSL is not later than the system's: the C loop runs the chunks")
    sch = cb.scheme(aes256)
    key, msg = os.urandom(sch.key_len), os.urandom(size)
    sealed = cb.encrypt(msg, key, b"c", aes256=aes256, device="native")

    def opened(data, fail_per_chunk=True):
        op = cb.Opener(sch, key, b"c", data[:cb.HEADER], device="native", path="stream")
        out = bytearray()
        for first, part, final in _pieces(data, 2):
            buf = bytearray(len(part))
            n = op.open_at(first, part, len(part), final, buf, threads=1, alone=True)
            out += buf[:n]
        return bytes(out)

    real = ossl.pyca_chunks
    monkeypatch.setattr(ossl, "pyca_chunks", lambda *a: pytest.fail("a chunk at a time"))
    assert opened(sealed) == msg
    monkeypatch.setattr(ossl, "pyca_chunks", real)
    last = size // K
    for chunk in sorted({0, last // 2, last}):
        bad = bytearray(sealed)
        bad[cb.HEADER + chunk * cb.SEALED_CHUNK + 3] ^= 1
        with pytest.raises(cb.ChunkFailed) as e:
            opened(bytes(bad))
        assert e.value.chunk == chunk


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
def test_device_files_go_through_both_mappings(tmp_path, monkeypatch):
    """transfer/sealed.py on a device between two regular files: both mapped, the message one
    call (``mapped``); pyca opens what it seals; a broken chunk is named and fails; a pipe and
    OpenSSL's C loop take the pieces' path."""
    from ciphergrid.transfer import sealed

    calls = []
    real = sealed.mapped
    monkeypatch.setattr(sealed, "mapped", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1])
    key, msg = os.urandom(16), os.urandom(3 * K + 11)
    (tmp_path / "m").write_bytes(msg)
    s = cb.Sealer(cb.scheme(False), key, b"f", device=CPU, path="stream")
    with open(tmp_path / "m", "rb") as src, open(tmp_path / "m.cg", "wb") as dst:
        dst.write(s.header())
        dst.flush()
        dst.seek(cb.HEADER)
        assert sealed.seal(src, dst, s) == cb.sealed_length(len(msg)) - cb.HEADER
    data = (tmp_path / "m.cg").read_bytes()
    d = pyca.Cobblestone128Decryptor(key, b"f")
    assert d.update(data) + d.finalize() == msg

    def opened(blob: bytes):
        (tmp_path / "in.cg").write_bytes(blob)
        op = cb.Opener(cb.scheme(False), key, b"f", blob[:cb.HEADER], device=CPU, path="stream")
        # (into an unlinked file, as the command line's --out: a named one takes the pieces)
        with open(tmp_path / "in.cg", "rb", buffering=0) as src, open(tmp_path / "o", "w+b") as dst:
            os.unlink(tmp_path / "o")
            src.seek(cb.HEADER)
            sealed.open_(src, dst, op)
            dst.seek(0)
            return dst.read()

    assert opened(data) == msg
    assert calls == [len(data) - cb.HEADER, len(msg)]
    with open(tmp_path / "in.cg", "rb", buffering=0) as src, open(tmp_path / "named", "wb") as dst:
        op = cb.Opener(cb.scheme(False), key, b"f", data[:cb.HEADER], device=CPU, path="stream")
        src.seek(cb.HEADER)
        assert sealed.mapped(src, dst, op, False) is None
    bad = bytearray(data)
    bad[cb.HEADER + 2 * cb.SEALED_CHUNK + 9] ^= 1
    with pytest.raises(cb.ChunkFailed) as e:
        opened(bytes(bad))
    assert e.value.chunk == 2
    r, w = os.pipe()
    with open(r, "rb", buffering=0) as src, open(tmp_path / "p", "wb") as dst:
        os.close(w)
        s2 = cb.Sealer(cb.scheme(False), key, b"f", device="native", path="stream")
        assert sealed.mapped(src, dst, s2, True) is None


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
def test_a_device_failure_mid_open_releases_nothing(monkeypatch):
    """A device error (or an interrupt) while a device opens: the plaintext already down, its
    tags not compared, is zeroed before the error goes up."""
    from ciphergrid import plan

    key, msg = os.urandom(16), os.urandom(3 * K)
    s = cb.encrypt(msg, key, b"", device="native")
    real = plan.Plan._run_messages

    def broken(self, batch, *a, **k):
        real(self, batch, *a, **k)            # (the plaintext is down...)
        raise ciphergrid_errors.DeviceError("the device failed")

    import ciphergrid.errors as ciphergrid_errors

    monkeypatch.setattr(plan.Plan, "_run_messages", broken)
    out = np.zeros(len(msg), dtype=np.uint8)
    op = cb.Opener(cb.scheme(False), key, b"", s[:cb.HEADER], device=CPU)
    with pytest.raises(ciphergrid_errors.DeviceError):
        op.open(np.frombuffer(s[cb.HEADER:], dtype=np.uint8), 0, True, out=out)
    assert not out.any()
