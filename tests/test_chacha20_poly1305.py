"""ChaCha20-Poly1305 (RFC 8439) through its device driver (ciphergrid/engines/device_aead/chacha20_poly1305.py).

Vectors (RFC 8439 §2.8.2 and A.5, Wycheproof, the cryptography_vectors files) run as batches, one
driver call per group or file; pyca/cryptography's ChaCha20Poly1305 is the differential reference
(random keys, nonces, AAD and lengths at the kernels' edges, mixed batches with per-message keys,
small knobs that force several work-items and sum levels per message); tamper tests check that the
driver's tags change with a flipped bit of ciphertext, AAD or nonce.  Large cases run on GPUs only.
"""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305 as Ref

from ciphergrid.aeads import lookup
from ciphergrid.aeads.base import make_batch, verify
from ciphergrid.aeads.chacha20_poly1305 import CIPHER
from ciphergrid.devices import backend, resolve
from ciphergrid.engines.device_aead.chacha20_poly1305 import ChaChaDriver
from ciphergrid.errors import InvalidIVSize, InvalidKeySize
from ciphergrid.vectors import aeads as aead_vectors

NAME = "chacha20-poly1305"
_drivers: dict = {}


def driver(device: str, **knobs) -> ChaChaDriver:
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    key = (device, tuple(sorted(knobs.items())))
    if key not in _drivers:
        _drivers[key] = ChaChaDriver(backend(resolve(device)), CIPHER, NAME, **knobs)
    return _drivers[key]


def run(drv, encrypt, keys, nonces, aads, texts):
    """(output texts, tags) of one batch through the driver."""
    b = make_batch(NAME, encrypt, 16, keys, nonces, aads, texts)
    tags = drv.run(b)
    outs = [b.dst[b.off[i]:b.off[i + 1]].tobytes() for i in range(b.count)]
    return outs, [t.tobytes() for t in tags]


def check_vectors(drv, vs):
    """Decrypt every vector in one batch and encrypt the valid ones in another."""
    vs = [v for v in vs if len(v.nonce) == 12]
    outs, tags = run(drv, False, [v.key for v in vs], [v.nonce for v in vs], [v.aad for v in vs],
                     [v.ciphertext for v in vs])
    for v, out, tag in zip(vs, outs, tags):
        if v.valid:
            assert tag == v.tag, f"{v.source}: tag {tag.hex()} != {v.tag.hex()}"
            assert out == v.plaintext, f"{v.source}: plaintext differs"
        else:
            assert tag != v.tag, f"{v.source}: an invalid vector's tag verified"
    ok = [v for v in vs if v.valid]
    outs, tags = run(drv, True, [v.key for v in ok], [v.nonce for v in ok], [v.aad for v in ok],
                     [v.plaintext for v in ok])
    for v, out, tag in zip(ok, outs, tags):
        assert out == v.ciphertext and tag == v.tag, f"{v.source}: encryption differs"
    return len(vs)


# --------------------------------------------------------------------------- declaration

def test_declaration():
    a = lookup(NAME)
    assert a is CIPHER and a.family == NAME and a.names == {NAME: 32}
    assert a.nonce_lengths == (12,) and a.tag_lengths == (16,) and a.default_tag_length == 16
    assert a.max_message == (1 << 38) - 64
    assert a.implementations["fast"].constant_time and a.constant_time_implementation() == "fast"
    assert a.openssl == {NAME: "ChaCha20Poly1305"}
    with pytest.raises(InvalidKeySize):
        a.check(NAME, 16, 12, 16)


def test_invalid_nonce_sizes_refused():
    """Wycheproof's InvalidNonceSize cases: refused by the declaration before any kernel."""
    bad = [v for v in aead_vectors.load(NAME, files=False) if len(v.nonce) != 12]
    assert len(bad) == 9 and not any(v.valid for v in bad)
    for v in bad:
        with pytest.raises(InvalidIVSize):
            CIPHER.check(NAME, len(v.key), len(v.nonce), 16)


def test_vector_counts():
    vs = aead_vectors.load(NAME, files=False)
    srcs = {v.source.split(" ")[0] for v in vs}
    assert len(vs) == 327 and sum(not v.valid for v in vs) == 69
    assert {"RFC", "Wycheproof"} <= srcs
    files = aead_vectors.load(NAME)
    if aead_vectors.vectors_dir() is not None:
        assert len(files) - len(vs) == 71


# --------------------------------------------------------------------------- vectors on devices

def test_rfc_vectors(device):
    vs = [v for v in aead_vectors.load(NAME, files=False) if v.source.startswith("RFC")]
    assert check_vectors(driver(device), vs) == 2


def test_wycheproof(device):
    """All 316 Wycheproof cases with a 12-byte nonce: one decryption batch, one encryption batch."""
    vs = [v for v in aead_vectors.load(NAME, files=False) if v.source.startswith("Wycheproof")]
    assert check_vectors(driver(device), vs) == 316


@pytest.mark.parametrize("fname", ["boringssl.txt", "openssl.txt"])
def test_package_files(device, fname):
    vs = [v for v in aead_vectors.load(NAME) if fname in v.source]
    if not vs:
        pytest.skip("cryptography_vectors is not installed")
    check_vectors(driver(device), vs)


def test_vectors_with_small_knobs(device):
    """The vectors again with one Poly1305 block per work-item and sums of two: every message
    spreads over many work-items and several sum levels."""
    vs = [v for v in aead_vectors.load(NAME, files=False) if v.valid and len(v.nonce) == 12]
    check_vectors(driver(device, poly_blocks=1, fanin=2), vs[::3])


# --------------------------------------------------------------------------- differential

EDGE = [0, 1, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 255, 256, 257, 1000, 4079, 4080, 4095,
        4096, 4097, 8191, 8193]


def _random_batch(rng, lengths, aad_lengths, same_key=False):
    k = rng.randbytes(32)
    keys = [k if same_key else rng.randbytes(32) for _ in lengths]
    nonces = [rng.randbytes(12) for _ in lengths]
    aads = [rng.data(a) for a in aad_lengths]
    pts = [rng.data(n) for n in lengths]
    return keys, nonces, aads, pts


def check_differential(drv, keys, nonces, aads, pts):
    refs = [Ref(k).encrypt(n, p, a) for k, n, p, a in zip(keys, nonces, pts, aads)]
    outs, tags = run(drv, True, keys, nonces, aads, pts)
    for i, (o, t, r) in enumerate(zip(outs, tags, refs)):
        assert o == r[:-16], f"message {i} ({len(pts[i])} B, aad {len(aads[i])}): ciphertext"
        assert t == r[-16:], f"message {i} ({len(pts[i])} B, aad {len(aads[i])}): tag"
    outs, tags = run(drv, False, keys, nonces, aads, [r[:-16] for r in refs])
    for i, (o, t, r) in enumerate(zip(outs, tags, refs)):
        assert o == pts[i] and t == r[-16:], f"message {i}: decryption"


@pytest.mark.parametrize("knobs", [{}, {"poly_blocks": 3, "fanin": 2}, {"poly_blocks": 16,
                                                                          "fanin": 5}],
                         ids=["default", "pb3-f2", "pb16-f5"])
def test_differential_edges(device, rng, knobs):
    """Every edge length, each with its own key and AAD of a varied length, in one batch."""
    aad_lens = [rng.choice([0, 1, 12, 15, 16, 17, 31, 100]) for _ in EDGE]
    check_differential(driver(device, **knobs), *_random_batch(rng, EDGE, aad_lens))


@pytest.mark.parametrize("seg_log,knobs", [(1, {"poly_blocks": 4}),
                                            (2, {"poly_blocks": 3, "fanin": 2}),
                                            (0, {"poly_blocks": 1})],
                         ids=["seg2x4", "seg4x3-f2", "seg1x1"])
def test_long_messages_in_segments(device, rng, monkeypatch, seg_log, knobs):
    """Poly1305 in segments (kernels: CHACHA_SEG_LOG, here so small that short messages have
    many, the last one shorter): every edge length against pyca, whole and in slices cut
    inside the messages on ChaCha20 blocks (device_aead.job.Job slices: each slice runs the blocks
    and the segments it holds whole, the tags of the messages it completes)."""
    import ciphergrid.engines.device_aead.chacha20_poly1305 as mod

    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    monkeypatch.setattr(mod, "SEG_LOG", seg_log)
    drv = ChaChaDriver(backend(resolve(device)), CIPHER, NAME, **knobs)
    aad_lens = [rng.choice([0, 1, 15, 16, 17, 100]) for _ in EDGE]
    keys, nonces, aads, pts = _random_batch(rng, EDGE, aad_lens)
    check_differential(drv, keys, nonces, aads, pts)
    refs = [Ref(k).encrypt(n, p, a) for k, n, p, a in zip(keys, nonces, pts, aads)]
    for encrypt in (True, False):
        b = make_batch(NAME, encrypt, 16, keys, nonces, aads,
                       pts if encrypt else [r[:-16] for r in refs])
        off = [int(x) for x in b.off]
        cuts = sorted({off[i] + 64 * k for i in range(len(EDGE)) for k in (1, 2, 7, 40)
                       if 64 * k < EDGE[i]} | {off[5], off[-1]})
        job = drv.prepare(b, slices=[0] + cuts)
        job.enqueue()
        tags = job.finish()
        for i, r in enumerate(refs):
            assert tags[i].tobytes() == r[-16:], (encrypt, i)
            want = r[:-16] if encrypt else pts[i]
            assert b.dst[off[i]:off[i + 1]].tobytes() == want, (encrypt, i)


def test_differential_random(device, rng):
    lens = [rng.randrange(0, 3000) for _ in range(60)]
    aads = [rng.randrange(0, 70) for _ in lens]
    check_differential(driver(device), *_random_batch(rng, lens, aads, same_key=True))


def test_one_larger_message(device, rng):
    """One 300 KB message (aligned: the 128-bit load paths), AAD of 1 KB + 3 bytes: many
    Poly1305 work-items; fanin 4 makes three sum levels."""
    drv = driver(device, poly_blocks=64, fanin=4)
    check_differential(drv, *_random_batch(rng, [300_000], [1027]))


def test_many_small_messages(device, rng):
    """2000 messages of 256 B and 4 KiB and 1-17 B with per-message keys: one launch set."""
    lens = [256] * 1000 + [4096] * 40 + [rng.randrange(1, 18) for _ in range(960)]
    rng.shuffle(lens)
    check_differential(driver(device), *_random_batch(rng, lens, [16] * len(lens)))


def test_launches_do_not_grow_with_messages(device, rng, monkeypatch):
    drv = driver(device)
    seen = []
    real = drv.backend.launch

    def spy(program, name, *a, **kw):
        seen.append(name)
        return real(program, name, *a, **kw)

    monkeypatch.setattr(drv.backend, "launch", spy)
    counts = []
    for m in (1, 500):
        seen.clear()
        run(drv, True, *_random_batch(rng, [100] * m, [8] * m))
        counts.append(len(seen))
    assert counts[0] == counts[1] == 4


# --------------------------------------------------------------------------- job contract

def test_rerun_in_place_and_wiped(device, rng):
    drv = driver(device)
    keys, nonces, aads, pts = _random_batch(rng, [0, 77, 1024], [3, 0, 40])
    b = make_batch(NAME, True, 16, keys, nonces, aads, pts)
    b.dst = b.src   # in place
    job = drv.prepare(b)
    job.enqueue()
    job.enqueue()   # re-runnable: the same result
    tags = job.finish()
    for i in range(3):
        r = Ref(keys[i]).encrypt(nonces[i], pts[i], aads[i])
        assert b.dst[b.off[i]:b.off[i + 1]].tobytes() == r[:-16]
        assert tags[i].tobytes() == r[-16:]
    be = drv.backend
    for buf in (job.keys, job.polykey, job.powers):
        host = np.ones(buf.size, dtype=np.uint8)
        be.download(host, buf)
        be.finish()
        assert not host.any(), "key material left on the device"


def test_tamper(device, rng):
    """A flipped bit of ciphertext, AAD or nonce gives a different computed tag; verify() then
    rejects the message and zeroes its plaintext."""
    drv = driver(device)
    key, nonce, aad, pt = rng.randbytes(32), rng.randbytes(12), rng.data(20), rng.data(100)
    sealed = Ref(key).encrypt(nonce, pt, aad)
    ct, tag = sealed[:-16], sealed[-16:]

    def flip(x: bytes, bit: int) -> bytes:
        y = bytearray(x)
        y[bit // 8] ^= 1 << (bit % 8)
        return bytes(y)

    cases = [(nonce, aad, ct), (nonce, aad, flip(ct, 0)), (nonce, aad, flip(ct, 799)),
             (nonce, flip(aad, 77), ct), (flip(nonce, 95), aad, ct), (nonce, aad + b"\0", ct)]
    b = make_batch(NAME, False, 16, [key] * len(cases), [c[0] for c in cases],
                   [c[1] for c in cases], [c[2] for c in cases])
    computed = drv.run(b)
    received = np.frombuffer(tag * len(cases), dtype=np.uint8).reshape(len(cases), 16)
    ok = verify(b, computed, received)
    assert ok.tolist() == [True] + [False] * (len(cases) - 1)
    assert b.dst[b.off[0]:b.off[1]].tobytes() == pt
    assert not b.dst[b.off[1]:].any()


# --------------------------------------------------------------------------- GPU only

def test_gpu_large(gpu_device, rng):
    """64 MiB + 1 byte in one message, then 100,000 messages of 256 B (per-message keys)."""
    drv = driver(gpu_device)
    check_differential(drv, *_random_batch(rng, [(64 << 20) + 1], [13]))
    lens = [256] * 100_000
    check_differential(drv, *_random_batch(rng, lens, [12] * len(lens)))
