"""C2SP chunked encryption (ciphergrid.cobblestone): the vectors generated with pyca (the spec
publishes none), interoperation both ways with ``cryptography.cobblestone`` (both schemes, sizes
around the chunk edges, streaming in odd pieces), every way a sealed message can be wrong, ranges
that authenticate only what they read, and the chunks on the OpenCL CPU device."""
from __future__ import annotations

import hashlib
import json
from importlib import resources

import pytest

import ciphergrid
from ciphergrid import cobblestone as cb
from conftest import all_devices

pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
CPU = next((d.spec for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
K = 16384
SEALED = K + 16


def _classes(aes256):
    if aes256:
        return pyca.Cobblestone256Encryptor, pyca.Cobblestone256Decryptor, cb.Cobblestone256Encryptor, cb.Cobblestone256Decryptor
    return pyca.Cobblestone128Encryptor, pyca.Cobblestone128Decryptor, cb.Cobblestone128Encryptor, cb.Cobblestone128Decryptor


def test_vectors():
    doc = json.loads(resources.files("ciphergrid").joinpath("vectors", "formats", "cobblestone.json").read_text())
    assert "pyca/cryptography" in doc["source"] and "5ba5ee8" in doc["source"]
    for v in doc["vectors"]:
        aes256 = v["scheme"] == "cobblestone-256"
        key, ctx, salt = (bytes.fromhex(v[f]) for f in ("key", "context", "salt"))
        n = v["message_length"]
        msg = bytes((i * 31 + n) % 251 for i in range(n))
        sealed = cb.encrypt(msg, key, ctx, aes256=aes256, salt=salt)
        assert len(sealed) == v["sealed_length"] == cb.sealed_length(n)
        assert hashlib.sha256(sealed).hexdigest() == v["sealed_sha256"], v["scheme"]
        if "sealed" in v:
            assert sealed.hex() == v["sealed"]
        assert cb.decrypt(sealed, key, ctx, aes256=aes256) == msg


@pytest.mark.parametrize("aes256", [False, True])
@pytest.mark.parametrize("n", [0, 1, K - 1, K, K + 1, 3 * K, 5 * K + 123])
def test_interop_both_ways(aes256, n, rng):
    PE, PD, CE, CD = _classes(aes256)
    key, ctx, msg = PE.generate_key(), rng.randbytes(rng.randrange(0, 40)), rng.randbytes(n)
    ours = cb.encrypt(msg, key, ctx, aes256=aes256)
    d = PD(key, ctx)
    assert d.update(ours) + d.finalize() == msg
    e = PE(key, ctx)
    theirs = e.update(msg) + e.finalize()
    assert cb.decrypt(theirs, key, ctx, aes256=aes256) == msg
    # the streaming classes, in odd pieces both ways
    e = CE(key, ctx)
    step = rng.randrange(1, 3 * K)
    sealed = b"".join(e.update(msg[i:i + step]) for i in range(0, n, step)) + e.finalize()
    d = PD(key, ctx)
    assert d.update(sealed) + d.finalize() == msg
    d = CD(key, ctx)
    got = b"".join(d.update(theirs[i:i + step]) for i in range(0, len(theirs), step)) + d.finalize()
    assert got == msg
    assert len(CE.generate_key()) == (32 if aes256 else 16)


def _sealed(rng, n=4 * K + 100, ctx=b"ctx"):
    key, msg = pyca.Cobblestone128Encryptor.generate_key(), rng.randbytes(n)
    return key, ctx, msg, cb.encrypt(msg, key, ctx)


def test_every_wrong_message_refused(rng):
    key, ctx, msg, s = _sealed(rng)
    header, chunk, cut = cb.CommitmentMismatch, cb.ChunkFailed, cb.Truncated
    bad = {
        "salt": (header, s[:3] + bytes([s[3] ^ 1]) + s[4:]),
        "commitment": (header, s[:30] + bytes([s[30] ^ 1]) + s[31:]),
        "a chunk's text": (chunk, s[:100] + bytes([s[100] ^ 1]) + s[101:]),
        "a chunk's tag": (chunk, s[:56 + SEALED - 1] + bytes([s[56 + SEALED - 1] ^ 1]) + s[56 + SEALED:]),
        "truncated at a chunk": (cut, s[:56 + 4 * SEALED]),
        "truncated by a byte": (chunk, s[:-1]),
        "extended by a chunk": (chunk, s + s[56:56 + SEALED]),
        "chunks reordered": (chunk, s[:56] + s[56 + SEALED:56 + 2 * SEALED] + s[56:56 + SEALED]
                             + s[56 + 2 * SEALED:]),
        "the header alone": (cut, s[:56]),
        "shorter than a header": (cut, s[:40]),
    }
    for what, (cls, x) in bad.items():
        with pytest.raises(cls) as e:
            cb.decrypt(x, key, ctx)
        assert isinstance(e.value, ciphergrid.InvalidTag), what
        d = cb.Cobblestone128Decryptor(key, ctx)
        with pytest.raises(cls):    # (pyca's InvalidTag too: ours is one)
            d.update(x)
            d.finalize()
    with pytest.raises(cb.ChunkFailed) as e:
        cb.decrypt(bad["chunks reordered"][1], key, ctx)
    assert e.value.chunk == 0
    with pytest.raises(ciphergrid.InvalidTag, match="commitment"):
        cb.decrypt(s, bytes(16), ctx)
    with pytest.raises(ciphergrid.InvalidTag, match="commitment"):
        cb.decrypt(s, key, b"other context")
    with pytest.raises(ciphergrid.InvalidKeySize):
        cb.decrypt(s, bytes(15), ctx)


def test_ranges_authenticate_what_they_read(rng):
    key, ctx, msg, s = _sealed(rng)
    n = len(msg)
    for off, ln in ((0, 10), (K - 3, 7), (2 * K, K), (n - 5, 5), (0, n), (n, 0)):
        assert cb.decrypt_range(s, key, ctx, off, ln) == msg[off:off + ln]
    assert cb.decrypt_range(s, key, ctx, -7) == msg[-7:]
    assert cb.decrypt_range(s, key, ctx, 3 * K) == msg[3 * K:]
    # chunk 2 altered: ranges in chunks 0-1 still read, any range over chunk 2 refused
    t = 56 + 2 * SEALED + 5
    bad = s[:t] + bytes([s[t] ^ 1]) + s[t + 1:]
    assert cb.decrypt_range(bad, key, ctx, 10, K) == msg[10:10 + K]
    with pytest.raises(ciphergrid.InvalidTag, match="chunk 2"):
        cb.decrypt_range(bad, key, ctx, 2 * K + 1, 10)
    # the final chunk altered: relative to the end, or reaching it, refused; the middle read
    f = len(s) - 3
    badf = s[:f] + bytes([s[f] ^ 1]) + s[f + 1:]
    assert cb.decrypt_range(badf, key, ctx, K, K) == msg[K:2 * K]
    for off, ln in ((-5, None), (n - 5, 5), (0, None)):
        with pytest.raises(ciphergrid.InvalidTag):
            cb.decrypt_range(badf, key, ctx, off, ln)
    with pytest.raises(ciphergrid.InvalidArgument, match="not within"):
        cb.decrypt_range(s, key, ctx, n - 5, 6)


def test_range_past_the_end_is_one_usage_error(rng):
    """An offset past the message's end is an error whatever the length (issue 48: without a
    length it gave nothing for an offset inside the final chunk's room, and 'truncated' -- a
    false tamper report -- past it); the end itself gives nothing."""
    key, ctx, msg, s = _sealed(rng)
    n = len(msg)
    assert cb.decrypt_range(s, key, ctx, n) == b""
    assert cb.decrypt_range(s, key, ctx, n, 0) == b""
    for off in (n + 1, n + 200, 5 * K, 5 * K + 1, 10 * K):
        with pytest.raises(ciphergrid.InvalidArgument, match=f"not within the message's {n} bytes"):
            cb.decrypt_range(s, key, ctx, off)
        with pytest.raises(ciphergrid.InvalidArgument, match=f"not within the message's {n} bytes"):
            cb.decrypt_range(s, key, ctx, off, 1)
    with pytest.raises(ciphergrid.InvalidArgument, match="not within"):
        cb.decrypt_range(s, key, ctx, -(n + 1))


@pytest.mark.skipif(CPU is None, reason="no OpenCL CPU device")
def test_chunks_on_the_device(rng):
    key, ctx, msg = pyca.Cobblestone128Encryptor.generate_key(), b"", rng.randbytes(2 * K + 9)
    s = cb.encrypt(msg, key, ctx, device=CPU)
    d = pyca.Cobblestone128Decryptor(key, ctx)
    assert d.update(s) + d.finalize() == msg
    assert cb.decrypt(s, key, ctx, device=CPU) == msg


def _cli(*args, **kw):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "ciphergrid", *args], capture_output=True,
                          timeout=120, **kw)


def test_cli_seal_and_open(tmp_path, rng):
    """`ciphergrid seal` / `open`: files pyca opens and seals, a range, a wrong context exit 3
    with no output, a truncated pipe exit 3."""
    key = pyca.Cobblestone128Encryptor.generate_key()
    kf, src, sealed, back = (tmp_path / x for x in ("k", "m", "m.cg", "m.out"))
    kf.write_bytes(key.hex().encode() + b"\n")
    msg = rng.randbytes(3 * K + 777)
    src.write_bytes(msg)
    p = _cli("seal", "--key-file", str(kf), "--context", "backup 1", "--in", str(src), "--out", str(sealed))
    assert p.returncode == 0, p.stderr.decode()
    d = pyca.Cobblestone128Decryptor(key, b"backup 1")
    assert d.update(sealed.read_bytes()) + d.finalize() == msg
    e = pyca.Cobblestone128Encryptor(key, b"backup 1")
    sealed.write_bytes(e.update(msg) + e.finalize())
    p = _cli("open", "--key-file", str(kf), "--context", "backup 1", "--in", str(sealed), "--out", str(back))
    assert p.returncode == 0 and back.read_bytes() == msg, p.stderr.decode()
    p = _cli("open", "--key-file", str(kf), "--context", "backup 1", "--in", str(sealed),
             "--offset", str(K + 5), "--length", "100")
    assert p.returncode == 0 and p.stdout == msg[K + 5:K + 105], p.stderr.decode()
    back.unlink()
    p = _cli("open", "--key-file", str(kf), "--context", "backup 2", "--in", str(sealed), "--out", str(back))
    assert p.returncode == 8 and b"commitment" in p.stderr and not back.exists()
    p = _cli("open", "--key-file", str(kf), "--context", "backup 1", "--out", str(back),
             input=sealed.read_bytes()[:56 + 2 * SEALED])
    assert p.returncode == 10 and b"truncated" in p.stderr and not back.exists()
    p = _cli("seal", "--key-file", str(kf), "--aes256", input=b"x")
    assert p.returncode == 2 and b"32-byte (256-bit) key" in p.stderr
