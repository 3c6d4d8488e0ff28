"""AEGIS-128L: the plain-Python model (tests/aegis_model.py) against the CFRG draft's vectors and
pyca's AES, libaegis (the ``aeg`` binding, when importable) as a second reference, and the device
driver against the vectors, the model and aeg: random keys, nonces, AAD and lengths in batches,
both tag lengths, per-message keys, tampering."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ciphergrid.aeads import lookup
from ciphergrid.aeads.base import make_batch, verify
from ciphergrid.vectors import aeads as aead_vectors

import aegis_model as model

NAME = "aegis-128l"
# lengths around the block (32 bytes) and the kernel's tile (4 blocks = 128 bytes) edges
LENGTHS = [0, 1, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 95, 127, 128, 129, 255, 256, 257, 301]


def _vectors():
    return aead_vectors.load(NAME, files=False)


# --------------------------------------------------------------------------- the model

def test_model_aes_round_vector():
    # draft-irtf-cfrg-aegis-aead-18, Appendix A.1
    out = model.aes_round(bytes.fromhex("000102030405060708090a0b0c0d0e0f"),
                          bytes.fromhex("101112131415161718191a1b1c1d1e1f"))
    assert out.hex() == "7a7b4e5638782546a8c0477a3b813f43"


def test_model_aes_matches_pyca():
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    rng = random.Random(7)
    for _ in range(4):
        key, block = rng.randbytes(16), rng.randbytes(16)
        enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        assert model.aes128_encrypt_block(key, block) == enc.update(block) + enc.finalize()


def test_model_update_vector():
    # draft-irtf-cfrg-aegis-aead-18, Appendix A.2.1
    S = [bytes.fromhex(h) for h in (
        "9b7e60b24cc873ea894ecc07911049a3", "330be08f35300faa2ebf9a7b0d274658",
        "7bbd5bd2b049f7b9b515cf26fbe7756c", "c35a00f55ea86c3886ec5e928f87db18",
        "9ebccafce87cab446396c4334592c91f", "58d83e31f256371e60fc6bb257114601",
        "1639b56ea322c88568a176585bc915de", "640818ffb57dc0fbc2e72ae93457e39a")]
    m0 = bytes.fromhex("033e6975b94816879e42917650955aa0")
    m1 = bytes.fromhex("fcc1968a46b7e97861bd6e89af6aa55f")
    after = [s.hex() for s in model.update(S, m0, m1)]
    assert after == ["596ab773e4433ca0127c73f60536769d", "790394041a3d26ab697bde865014652d",
                     "38cf49e4b65248acd533041b64dd0611", "16d8e58748f437bfff1797f780337cee",
                     "9689ecdf08228c74d7e3360cca53d0a5", "a21746bb193a569e331e1aa985d0d729",
                     "09d714e6fcf9177a8ed1cde7e3d259a6", "61279ba73167f0ab76f0a11bf203bdff"]


def test_vector_file_has_both_tags_and_negatives():
    vs = _vectors()
    assert len(vs) == 18
    assert {len(v.tag) for v in vs} == {16, 32}
    assert sum(not v.valid for v in vs) == 8


@pytest.mark.parametrize("v", _vectors(), ids=lambda v: v.source)
def test_model_vectors(v):
    pt = model.decrypt(v.key, v.nonce, v.ciphertext, v.tag, v.aad)
    if v.valid:
        assert pt == v.plaintext
        assert model.encrypt(v.key, v.nonce, v.plaintext, v.aad, len(v.tag)) == (v.ciphertext, v.tag)
    else:
        assert pt is None


# --------------------------------------------------------------------------- libaegis (aeg)

@pytest.fixture(scope="module")
def aeg():
    pytest.importorskip("aeg")
    return pytest.importorskip("aeg.aegis128l")


def _aeg_encrypt(aeg, key, nonce, msg, ad, tag_length):
    ct, tag = aeg.encrypt_detached(key, nonce, msg, ad=ad, maclen=tag_length)
    return bytes(ct), bytes(tag)


@pytest.mark.parametrize("v", _vectors(), ids=lambda v: v.source)
def test_aeg_vectors(aeg, v):
    if v.valid:
        assert _aeg_encrypt(aeg, v.key, v.nonce, v.plaintext, v.aad, len(v.tag)) == (v.ciphertext, v.tag)
        assert bytes(aeg.decrypt_detached(v.key, v.nonce, v.ciphertext, v.tag, ad=v.aad)) == v.plaintext
    else:
        with pytest.raises(ValueError):
            aeg.decrypt_detached(v.key, v.nonce, v.ciphertext, v.tag, ad=v.aad)


def test_aeg_matches_model(aeg):
    rng = random.Random(11)
    for n in (0, 1, 31, 33, 100):
        key, nonce, msg, ad = rng.randbytes(16), rng.randbytes(16), rng.randbytes(n), rng.randbytes(n // 3)
        for tl in (16, 32):
            assert _aeg_encrypt(aeg, key, nonce, msg, ad, tl) == model.encrypt(key, nonce, msg, ad, tl)


# --------------------------------------------------------------------------- the declaration

def test_declaration():
    c = lookup(NAME)
    assert c.family == "aegis-128l" and c.names == {NAME: 16}
    assert c.nonce_lengths == (16,) and c.default_nonce_length == 16
    assert c.tag_lengths == (16, 32) and c.default_tag_length == 16
    assert c.max_message == c.max_aad == (1 << 61) - 1
    assert c.parallel_message is False and c.openssl == {}
    assert c.implementations["fast"].constant_time is False
    c.check(NAME, 16, 16, 32)
    with pytest.raises(Exception):
        c.check(NAME, 16, 12, 16)


# --------------------------------------------------------------------------- the device driver

_DRIVERS: dict = {}


def _driver(device, **opts):
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a backend (and OpenSSL lacks AEGIS)")
    from ciphergrid.devices import backend, resolve
    from ciphergrid.engines import device_aead

    key = (device, tuple(sorted(opts.items())))
    if key not in _DRIVERS:
        be = backend(resolve(device))
        c = lookup(NAME)
        _DRIVERS[key] = device_aead.build(be, c, NAME, **opts)
    return _DRIVERS[key]


def _texts(b):
    return [b.dst[b.off[i]:b.off[i + 1]].tobytes() for i in range(b.count)]


@pytest.mark.parametrize("tag_length", [16, 32])
def test_device_vectors(device, tag_length):
    drv = _driver(device)
    vs = [v for v in _vectors() if len(v.tag) == tag_length]
    b = make_batch(NAME, False, tag_length, [v.key for v in vs], [v.nonce for v in vs],
                   [v.aad for v in vs], [v.ciphertext for v in vs])
    tags = drv.run(b)
    received = np.frombuffer(b"".join(v.tag for v in vs), dtype=np.uint8).reshape(len(vs), -1)
    ok = verify(b, tags, received)
    assert list(ok) == [v.valid for v in vs]
    for v, text in zip(vs, _texts(b)):
        assert text == (v.plaintext if v.valid else bytes(len(v.ciphertext)))
    valid = [v for v in vs if v.valid]
    e = make_batch(NAME, True, tag_length, [v.key for v in valid], [v.nonce for v in valid],
                   [v.aad for v in valid], [v.plaintext for v in valid])
    etags = drv.run(e)
    assert _texts(e) == [v.ciphertext for v in valid]
    assert [t.tobytes() for t in etags] == [v.tag for v in valid]


def _random_batch(rng, m, shared_key=False):
    one = rng.randbytes(16)
    keys = [one if shared_key else rng.randbytes(16) for _ in range(m)]
    nonces = [rng.randbytes(16) for _ in range(m)]
    aads = [rng.randbytes(rng.choice(LENGTHS + [3, 77])) for _ in range(m)]
    texts = [rng.randbytes(LENGTHS[i % len(LENGTHS)] if i < len(LENGTHS) else rng.randrange(0, 400))
             for i in range(m)]
    return keys, nonces, aads, texts


@pytest.mark.parametrize("tag_length", [16, 32])
@pytest.mark.parametrize("shared_key", [False, True], ids=["per-message-keys", "one-key"])
def test_device_differential(device, tag_length, shared_key, rng):
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, 70, shared_key)   # > one work-group of 64
    e = make_batch(NAME, True, tag_length, keys, nonces, aads, texts)
    tags = drv.run(e)
    cts = _texts(e)
    for i in range(e.count):
        assert (cts[i], tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i],
                                                            tag_length), i
    d = make_batch(NAME, False, tag_length, keys, nonces, aads, cts)
    dtags = drv.run(d)
    assert _texts(d) == texts
    assert np.array_equal(dtags, tags)


def test_device_against_aeg(device, aeg, rng):
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, 40)
    for tl in (16, 32):
        e = make_batch(NAME, True, tl, keys, nonces, aads, texts)
        tags = drv.run(e)
        for i, ct in enumerate(_texts(e)):
            assert (ct, tags[i].tobytes()) == _aeg_encrypt(aeg, keys[i], nonces[i], texts[i], aads[i], tl)


@pytest.mark.parametrize("stage", [0, 1, 2])
def test_device_small_groups_and_tiles(device, stage, rng):
    """Other knobs (work-groups of 8, one-block tiles, staged or not) give the same bytes."""
    drv = _driver(device, group=8, tile_blocks=1, stage=stage)
    keys, nonces, aads, texts = _random_batch(rng, 21)
    e = make_batch(NAME, True, 16, keys, nonces, aads, texts)
    tags = drv.run(e)
    for i, ct in enumerate(_texts(e)):
        assert (ct, tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i])


@pytest.mark.parametrize("knobs", [{}, {"stage": 1}, {"stage": 2, "tile_blocks": 4, "group": 32},
                                   {"tables": 2, "copies": 16}, {"mulhi": 0, "group": 32, "unroll": 2}],
                         ids=["defaults", "staged", "pipelined", "two-tables", "shift-group32-unroll2"])
def test_device_aligned_and_mixed(device, knobs, rng):
    """Messages and AAD at 16-byte aligned offsets (the direct kernel's 16-byte loads and stores,
    one block ahead), beside messages at odd offsets and partial last blocks, both directions."""
    drv = _driver(device, **knobs)
    lens = [64, 96, 0, 32, 320, 48, 16, 1024, 31, 33, 160, 15, 64, 17, 256, 47, 32, 5, 128, 4096]
    m = len(lens)
    keys = [rng.randbytes(16) for _ in range(m)]
    nonces = [rng.randbytes(16) for _ in range(m)]
    aads = [rng.randbytes(rng.choice([0, 16, 32, 48, 13, 96])) for _ in range(m)]
    texts = [rng.randbytes(n) for n in lens]
    for tl in (16, 32):
        e = make_batch(NAME, True, tl, keys, nonces, aads, texts)
        tags = drv.run(e)
        cts = _texts(e)
        for i in range(m):
            assert (cts[i], tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i], tl), i
        d = make_batch(NAME, False, tl, keys, nonces, aads, cts)
        assert np.array_equal(drv.run(d), tags)
        assert _texts(d) == texts


def test_byte_misaligned():
    """The default driver sends a batch to the staged kernel on GPUs when a text starts at an
    offset that is not a multiple of 4 (the last offset, the end, does not count)."""
    from ciphergrid.engines.device_aead.aegis import byte_misaligned

    assert not byte_misaligned(np.array([0, 16, 32, 48], dtype=np.int64))
    assert not byte_misaligned(np.array([0, 4, 12, 13], dtype=np.int64))
    assert byte_misaligned(np.array([0, 16, 17, 48], dtype=np.int64))
    assert not byte_misaligned(np.array([0], dtype=np.int64))


def test_device_misaligned_batches_take_their_program(device, rng):
    """A batch with a text at an odd offset, or of long texts, runs the driver's staged_prg
    (on GPUs the pipelined staging; here the staged kernel stands in for it), an aligned batch of
    short texts its prg."""
    drv = _driver(device, group=16, stage=0, tile_blocks=2)
    staged = drv._program(1)
    used = []
    real_launch = drv.backend.launch

    def launch(prg, *args, **kw):
        used.append(prg)
        return real_launch(prg, *args, **kw)

    drv.staged_prg, drv.backend.launch = staged, launch
    try:
        for lens, want in (([32, 64, 96], drv.prg), ([32, 5, 96, 7], staged),
                           ([1024, 2048, 1024], staged)):   # long texts: the staged program too
            keys, nonces = [rng.randbytes(16) for _ in lens], [rng.randbytes(16) for _ in lens]
            aads, texts = [rng.randbytes(16) for _ in lens], [rng.randbytes(n) for n in lens]
            e = make_batch(NAME, True, 16, keys, nonces, aads, texts)
            tags = drv.run(e)
            assert used[-1] is want
            for i, ct in enumerate(_texts(e)):
                assert (ct, tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i])
    finally:
        drv.staged_prg = None
        del drv.backend.launch


def test_device_job_rerunnable_and_in_place(device, rng):
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, 9)
    e = make_batch(NAME, True, 16, keys, nonces, aads, texts)
    e.dst = e.src   # in place
    job = drv.prepare(e)
    job.enqueue()
    job.enqueue()
    tags = job.finish()
    for i, ct in enumerate(_texts(e)):
        assert (ct, tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i])


def test_device_empty_batch(device):
    drv = _driver(device)
    b = make_batch(NAME, True, 32, [], [], [], [])
    assert drv.run(b).shape == (0, 32)


@pytest.mark.parametrize("tag_length", [16, 32])
def test_device_tamper(device, tag_length, rng):
    """A flipped bit in the ciphertext, the AAD, the nonce or the key gives another computed tag
    (and the shared layer then rejects the message and zeroes its text)."""
    drv = _driver(device)
    key, nonce, aad, msg = rng.randbytes(16), rng.randbytes(16), rng.randbytes(20), rng.randbytes(45)
    ct, tag = model.encrypt(key, nonce, msg, aad, tag_length)

    def flip(b, i):
        x = bytearray(b)
        x[i] ^= 1 << rng.randrange(8)
        return bytes(x)

    cases = [(key, nonce, aad, ct), (key, nonce, aad, flip(ct, 0)), (key, nonce, aad, flip(ct, 44)),
             (key, nonce, flip(aad, 19), ct), (key, flip(nonce, 15), aad, ct), (flip(key, 3), nonce, aad, ct),
             (key, nonce, aad, ct[:-1]), (key, nonce, aad + b"\0", ct)]
    d = make_batch(NAME, False, tag_length, *zip(*cases))
    tags = drv.run(d)
    ok = verify(d, tags, np.frombuffer(tag * len(cases), dtype=np.uint8).reshape(len(cases), -1))
    assert list(ok) == [True] + [False] * (len(cases) - 1)
    assert _texts(d)[0] == msg
    assert all(t == bytes(len(t)) for t in _texts(d)[1:])


@pytest.mark.parametrize("knobs", [
    {"AEGIS_STAGE": 0, "AEGIS_COPIES": 4, "AEGIS_TABLES": 1},
    {"AEGIS_STAGE": 0, "AEGIS_COPIES": 4, "AEGIS_TABLES": 2},
    {"AEGIS_STAGE": 1, "AEGIS_COPIES": 4, "AEGIS_TABLES": 1, "AEGIS_TILE_BLOCKS": 2},
    {"AEGIS_STAGE": 1, "AEGIS_COPIES": 2, "AEGIS_TABLES": 2, "AEGIS_TILE_BLOCKS": 1},
    {"AEGIS_STAGE": 2, "AEGIS_COPIES": 4, "AEGIS_TABLES": 1, "AEGIS_TILE_BLOCKS": 2},
    {"AEGIS_STAGE": 2, "AEGIS_COPIES": 8, "AEGIS_TABLES": 2, "AEGIS_TILE_BLOCKS": 1},
    {"AEGIS_STAGE": 0, "AEGIS_COPIES": 4, "AEGIS_TABLES": 1, "AEGIS_MAD": 0, "AEGIS_UNROLL": 2},
], ids=lambda k: ",".join(f"{n[6:].lower()}={v}" for n, v in k.items()))
def test_local_table_kernel_unoptimized(device, knobs):
    """The GPUs' variants (table in work-group memory: direct or staged, one or two tables) on an
    OpenCL CPU device, built without optimization: PoCL 3.0's optimizer miscomputes them
    (docs/ciphers/aegis-128l.md), so this is the only check of their logic without a GPU."""
    if not device.startswith("opencl"):
        pytest.skip("an OpenCL device builds the unoptimized program")
    from ciphergrid.devices import backend, resolve

    be = backend(resolve(device))
    if be.info.kind != "cpu":
        pytest.skip("GPUs run this variant in the other tests")
    import pyopencl as cl

    from ciphergrid.engines.device_aead.aegis import source
    from ciphergrid.backends.base import Program

    defines = {"AEGIS_GROUP": 8, "AEGIS_TABLE_LOCAL": 1, **knobs}
    native = cl.Program(be.ctx, source(defines)).build(
        options=["-cl-std=CL1.2", "-cl-opt-disable"])
    drv = _driver(device, group=8, tile_blocks=2, copies=4, table_local=False)
    real, real_stride = drv.prg, drv.stride
    drv.prg = Program(native, lambda p, name: cl.Kernel(p, name), 8)
    drv.stride = 4 * knobs["AEGIS_COPIES"] * knobs["AEGIS_TABLES"]
    try:
        rng = random.Random(5)
        keys, nonces, aads, texts = _random_batch(rng, 12)
        batches = [(keys, nonces, aads, texts)]
        # equal, aligned lengths: every tile is full in every message (the staged kernels' lean
        # copies), then one message shorter than the others of its work-group
        for lens in ([160] * 10, [96] + [160] * 9):
            batches.append(([rng.randbytes(16) for _ in lens], [rng.randbytes(16) for _ in lens],
                            [rng.randbytes(64) for _ in lens], [rng.randbytes(n) for n in lens]))
        for (keys, nonces, aads, texts), tl in [(b, tl) for b in batches for tl in (16, 32)]:
            e = make_batch(NAME, True, tl, keys, nonces, aads, texts)
            tags = drv.run(e)
            for i, ct in enumerate(_texts(e)):
                assert (ct, tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i], tl)
            d = make_batch(NAME, False, tl, keys, nonces, aads, _texts(e))
            assert np.array_equal(drv.run(d), tags)
            assert _texts(d) == texts
    finally:
        drv.prg, drv.stride = real, real_stride


def test_gpu_large_batch(gpu_device, rng):
    """Many 16 KiB messages and one of 3 MiB + 5 bytes (GPUs only)."""
    drv = _driver(gpu_device)
    m = 300
    keys = [rng.randbytes(16) for _ in range(m)]
    nonces = [rng.randbytes(16) for _ in range(m)]
    aads = [rng.randbytes(13) for _ in range(m)]
    texts = [rng.data(16384) for _ in range(m - 1)] + [rng.data(3 * 2**20 + 5)]
    e = make_batch(NAME, True, 16, keys, nonces, aads, texts)
    tags = drv.run(e)
    cts = _texts(e)
    for i in (0, 1, 150, m - 2):
        assert (cts[i], tags[i].tobytes()) == model.encrypt(keys[i], nonces[i], texts[i], aads[i])
    d = make_batch(NAME, False, 16, keys, nonces, aads, cts)
    assert np.array_equal(drv.run(d), tags)
    assert _texts(d) == texts
