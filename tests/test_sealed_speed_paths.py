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
