"""The sealed-file data path (transfer/sealed.py, engines/openssl/aead.py ``chunked``): pieces
read, sealed or opened and written by several workers in any order, from regular files and pipes,
byte-identical to pyca's ``cryptography.cobblestone``; both AES-GCM paths of a chunk run (OpenSSL's
C loop, pyca's AESGCM for a lone worker) give the same bytes; a chunk that does not verify stops
the stream with nothing of it or after it written; the command line's path imports no numpy."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

import ciphergrid
from ciphergrid.engines.openssl import aead as ossl
from ciphergrid.formats import cobblestone as cb
from ciphergrid.formats import streams
from ciphergrid.transfer import sealed

pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
K = cb.CHUNK
PIECE = 2 * K     # (many pieces from a small input)


def _seal_file(tmp_path, msg, key, ctx, **kw):
    src, dst = tmp_path / "m", tmp_path / "m.cg"
    src.write_bytes(msg)
    s = cb.Sealer(cb.COBBLESTONE_128, key, ctx, path="stream")
    with open(src, "rb", buffering=0) as f, open(dst, "wb", buffering=0) as g:
        g.write(s.header())
        wrote = sealed.seal(f, g, s, piece=PIECE, **kw)
    out = dst.read_bytes()
    assert wrote == len(out) - cb.HEADER
    return out


def _open_file(tmp_path, data, key, ctx, **kw):
    src, dst = tmp_path / "o.cg", tmp_path / "o"
    src.write_bytes(data)
    with open(src, "rb", buffering=0) as f, open(dst, "wb", buffering=0) as g:
        op = cb.Opener(cb.COBBLESTONE_128, key, ctx, f.read(cb.HEADER), path="stream")
        sealed.open_(f, g, op, piece=PIECE, **kw)
    return dst.read_bytes()


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n", [0, 1, K, 2 * K, 2 * K + 5, 6 * K, 7 * K + 100])
def test_files_both_ways(tmp_path, rng, n, threads):
    key, ctx, msg = os.urandom(16), rng.randbytes(5), rng.randbytes(n)
    out = _seal_file(tmp_path, msg, key, ctx, threads=threads)
    d = pyca.Cobblestone128Decryptor(key, ctx)
    assert len(out) == cb.sealed_length(n) and d.update(out) + d.finalize() == msg
    e = pyca.Cobblestone128Encryptor(key, ctx)
    assert _open_file(tmp_path, e.update(msg) + e.finalize(), key, ctx, threads=threads) == msg


@pytest.mark.parametrize("threads", [1, 2])
def test_pipes_both_ways(rng, threads):
    """A pipe is read in order, its final piece the first that reads short (here a multiple of
    the piece: the final chunk empty), and written in order."""
    key, msg = os.urandom(16), rng.randbytes(4 * PIECE)

    def through(data, run):
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        got = []
        feeder = threading.Thread(target=lambda: (os.write(w_in, data) if data else None, os.close(w_in)))
        reader = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(r_out, 1 << 16), b""))))
        feeder.start(), reader.start()
        try:
            run(r_in, w_out)
        finally:
            os.close(w_out)
            feeder.join(10), reader.join(10)
            os.close(r_in), os.close(r_out)
        return got[0]

    s = cb.Sealer(cb.COBBLESTONE_128, key, b"p", path="stream")

    def seal(fi, fo):
        os.write(fo, s.header())
        sealed.seal(fi, fo, s, piece=PIECE, threads=threads)

    out = through(msg, seal)
    d = pyca.Cobblestone128Decryptor(key, b"p")
    assert d.update(out) + d.finalize() == msg

    def open_(fi, fo):
        op = cb.Opener(cb.COBBLESTONE_128, key, b"p", os.read(fi, cb.HEADER), path="stream")
        sealed.open_(fi, fo, op, piece=PIECE, threads=threads)

    assert through(out, open_) == msg


@pytest.mark.parametrize("alone", [False, True])
@pytest.mark.parametrize("final", [False, True])
def test_both_gcm_paths_give_the_same_chunks(rng, alone, final):
    """OpenSSL's C loop and pyca's AESGCM (a lone worker, where pyca's OpenSSL is the later
    release) seal the same chunks, and each opens the other's; a tag altered is found by both,
    the chunk's plaintext zeroed."""
    key, base = os.urandom(16), os.urandom(12)
    n = 3 * K + (77 if final else 0)
    msg = bytearray(rng.randbytes(n))
    ref = bytearray(n + 4 * 16)
    assert ossl.chunked(True, "aes-128-gcm", key, base, 5, msg, ref, n, final, K, 16) == -1
    ref = ref[:n + (n // K + (1 if final else 0)) * 16]
    ours = bytearray(len(ref))
    assert ossl.chunked(True, "aes-128-gcm", key, base, 5, msg, ours, n, final, K, 16, 1, alone) == -1
    assert ours == ref
    back = bytearray(n)
    assert ossl.chunked(False, "aes-128-gcm", key, base, 5, ref, back, len(ref), final, K, 16, 1, alone) == -1
    assert back == msg
    ref[2 * (K + 16) + 3] ^= 1                         # chunk 2
    back = bytearray(b"\xaa" * n)
    assert ossl.chunked(False, "aes-128-gcm", key, base, 5, ref, back, len(ref), final, K, 16, 1, alone) == 2
    assert back[2 * K:3 * K] == bytes(K)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_chunk_that_does_not_verify_stops_the_stream(rng, threads):
    """A regular input: InvalidTag; a pipe's output gets the pieces before the bad one at most,
    never its plaintext or what follows."""
    key, msg = os.urandom(16), rng.randbytes(6 * PIECE + 9)
    e = pyca.Cobblestone128Encryptor(key, b"")
    s = bytearray(e.update(msg) + e.finalize())
    bad_piece = 3
    s[cb.HEADER + bad_piece * 2 * cb.SEALED_CHUNK + 100] ^= 1
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: os.read(r_out, 1 << 16), b""))))
    reader.start()
    feeder = threading.Thread(target=lambda: (os.write(w_in, bytes(s)), os.close(w_in)))
    feeder.start()
    try:
        op = cb.Opener(cb.COBBLESTONE_128, key, b"", os.read(r_in, cb.HEADER), path="stream")
        with pytest.raises(ciphergrid.InvalidTag, match="chunk 6 does not verify"):
            sealed.open_(r_in, w_out, op, piece=PIECE, threads=threads)
    finally:
        os.close(w_out)
        reader.join(10)
        os.close(r_out)
        while os.read(r_in, 1 << 16):                  # (the feeder ends)
            pass
        feeder.join(10)
        os.close(r_in)
    assert msg.startswith(got[0]) and len(got[0]) <= bad_piece * PIECE


def test_a_regular_input_of_no_sealed_length_is_refused_before_reading(tmp_path):
    key = os.urandom(16)
    e = pyca.Cobblestone128Encryptor(key, b"")
    s = e.update(bytes(3 * K)) + e.finalize()
    with pytest.raises(ciphergrid.InvalidTag, match="not a sealed length"):
        _open_file(tmp_path, s[:cb.HEADER + 2 * cb.SEALED_CHUNK], key, b"")
    assert (tmp_path / "o").read_bytes() == b""


def test_the_command_line_path_imports_no_numpy(tmp_path):
    """`seal` and `open` of a file: numpy's import would be a tenth of a second of start-up."""
    kf, src = tmp_path / "k", tmp_path / "m"
    kf.write_bytes(os.urandom(16))
    src.write_bytes(os.urandom(3 * K + 5))
    for cmd, a, b in (("seal", src, tmp_path / "m.cg"), ("open", tmp_path / "m.cg", tmp_path / "back")):
        p = subprocess.run([sys.executable, "-X", "importtime", "-m", "ciphergrid", cmd, "--key-file", str(kf),
                            "--in", str(a), "--out", str(b), "--no-sync"], capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr.decode()[-500:]
        assert b"| numpy\n" not in p.stderr and b" numpy\n" not in p.stderr
    assert (tmp_path / "back").read_bytes() == src.read_bytes()


def test_streaming_classes_release_what_pycas_do(rng):
    """Every update returns as many bytes as pyca's context's (whole sealed chunks as they fill,
    not held back for a batch), from data given as bytes, bytearray or memoryview."""
    key = os.urandom(16)
    sizes = [0, 100, K, K - 100, 5, 40000, 3 * K]
    e, ours = pyca.Cobblestone128Encryptor(key, b""), streams.Cobblestone128Encryptor(key, b"")
    sealed_parts = []
    for i, n in enumerate(sizes):
        data = rng.randbytes(n)
        got = ours.update((bytes, bytearray, memoryview)[i % 3](data))
        assert len(got) == len(e.update(data))
        sealed_parts.append(got)
    sealed_parts.append(ours.finalize())
    assert len(sealed_parts[-1]) == len(e.finalize())
    s = b"".join(sealed_parts)
    d, od = pyca.Cobblestone128Decryptor(key, b""), streams.Cobblestone128Decryptor(key, b"")
    cuts = [0, 10, cb.HEADER, cb.HEADER + cb.SEALED_CHUNK, cb.HEADER + cb.SEALED_CHUNK + 20000, len(s)]
    for a, b in zip(cuts, cuts[1:]):
        assert od.update(s[a:b]) == d.update(s[a:b])
    assert od.finalize() == d.finalize()


def test_workers_follow_the_cores_or_the_host_threads_setting(monkeypatch):
    s = cb.Sealer(cb.COBBLESTONE_128, bytes(16), b"", path="stream")
    monkeypatch.delenv("CIPHERGRID_HOST_THREADS", raising=False)
    assert sealed.plan(s) == (sealed.PIECE, sealed.cores(), 1)
    monkeypatch.setenv("CIPHERGRID_HOST_THREADS", "1")
    assert sealed.plan(s)[1] == 1
    monkeypatch.setenv("CIPHERGRID_HOST_THREADS", "3")
    assert sealed.plan(s)[1] == 3
    assert sealed.plan(s, threads=2)[1] == 2


def test_a_runtime_of_one_thread_seals_with_one_worker(tmp_path, rng):
    """The file workers and the API's chunk runs take the runtime's thread budget; with one
    thread the chunks still match pyca's (a lone worker's AES-GCM path)."""
    from ciphergrid.runtime import Runtime

    key, msg = os.urandom(16), rng.randbytes(5 * K + 3)
    with Runtime("one", threads=1):
        s = cb.Sealer(cb.COBBLESTONE_128, key, b"r", path="stream")
        assert sealed.plan(s)[1] == 1
        out = _seal_file(tmp_path, msg, key, b"r")
        assert cb.decrypt(cb.encrypt(msg, key, b"r"), key, b"r") == msg
    d = pyca.Cobblestone128Decryptor(key, b"r")
    assert d.update(out) + d.finalize() == msg
