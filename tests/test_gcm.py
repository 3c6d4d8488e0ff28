"""AES-GCM (ciphergrid/aeads/gcm.py, engines/device_aead/gcm.py, kernels/gcm.cl) through its
driver on every device present.

* the declaration; the plain-Python model of SP 800-38D (tests/gcm_model.py) against pyca;
* the vectors of the data file (McGrew-Viega test cases 1-18, the Wycheproof subset with its
  invalid ModifiedTag records) as batches, both implementations, both directions;
* the NIST CAVP files of cryptography_vectors (~47k records) as batches grouped by key, nonce and
  tag length: a seeded sample here, all of them on GPUs;
* differential tests against pyca's GCM (the model for nonces pyca refuses, < 8 or > 128 bytes):
  random keys, nonces, AAD and lengths 0, 1, 15, 16, 17, odd, the kernels' tile edges, batches with
  mixed lengths and per-message keys, truncated tags;
* tamper tests on the driver's computed tags, re-runnable jobs, launches per batch.
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import gcm_model
from ciphergrid import aeads
from ciphergrid.aeads import gcm as gcm_decl
from ciphergrid.aeads.base import make_batch
from ciphergrid.engines import device_aead
from ciphergrid.engines.device_aead import gcm
from ciphergrid.errors import InvalidArgument, InvalidIVSize, InvalidKeySize
from ciphergrid.vectors import aeads as aead_vectors

NAMES = ("aes-128-gcm", "aes-192-gcm", "aes-256-gcm")
IMPLS = ("fast", "ct")


# --------------------------------------------------------------------------- helpers

@functools.lru_cache(maxsize=None)
def _driver(spec: str, name: str, impl: str):
    from ciphergrid.devices import backend, resolve

    return device_aead.build(backend(resolve(spec)), aeads.lookup(name), name, impl)


def driver(device: str, name: str, impl: str):
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    return _driver(device, name, impl)


def reference(key, nonce, aad, pt, tag_length=16):
    """(ciphertext, tag): pyca's GCM where it takes the nonce (8..128 bytes), else the model."""
    if 8 <= len(nonce) <= 128:
        e = Cipher(algorithms.AES(key), modes.GCM(nonce, min_tag_length=tag_length)).encryptor()
        e.authenticate_additional_data(aad)
        ct = e.update(pt) + e.finalize()
        return ct, e.tag[:tag_length]
    return gcm_model.encrypt(key, nonce, aad, pt, tag_length)


def run(drv, name, encrypt, tag_length, keys, nonces, aads, texts):
    """(output texts, computed tags) of one batch through the driver."""
    b = make_batch(name, encrypt, tag_length, keys, nonces, aads, texts)
    tags = drv.run(b)
    assert tags.shape == (len(texts), tag_length) and tags.dtype == np.uint8
    outs = [b.dst[b.off[i]:b.off[i + 1]].tobytes() for i in range(len(texts))]
    return outs, [t.tobytes() for t in tags]


def check_vectors(drv, name, vs):
    """Vectors of one cipher, nonce length and tag length as one batch each way."""
    t = len(vs[0].tag)
    valid = [v for v in vs if v.valid]
    if valid:
        outs, tags = run(drv, name, True, t, [v.key for v in valid], [v.nonce for v in valid],
                         [v.aad for v in valid], [v.plaintext for v in valid])
        for v, o, g in zip(valid, outs, tags):
            assert (o, g) == (v.ciphertext, v.tag), v.source
    outs, tags = run(drv, name, False, t, [v.key for v in vs], [v.nonce for v in vs],
                     [v.aad for v in vs], [v.ciphertext for v in vs])
    for v, o, g in zip(vs, outs, tags):
        if v.valid:
            assert (o, g) == (v.plaintext, v.tag), v.source
        else:
            assert g != v.tag, f"{v.source}: an invalid vector's tag was computed"


def gcm_vectors(files: bool = False):
    """The AES-GCM vectors (load() without a name gives every AEAD family's)."""
    return [v for v in aead_vectors.load(files=files) if v.cipher in NAMES]


def groups(vs):
    by = defaultdict(list)
    for v in vs:
        by[(v.cipher, len(v.nonce), len(v.tag))].append(v)
    return by


# --------------------------------------------------------------------------- declaration, model

def test_declaration():
    c = aeads.family("aes-gcm")
    assert c is gcm_decl.CIPHER and c.names == {"aes-128-gcm": 16, "aes-192-gcm": 24, "aes-256-gcm": 32}
    for n in NAMES:
        assert aeads.lookup(n) is c and c.openssl[n] == "AESGCM"
    assert list(c.tag_lengths) == [12, 13, 14, 15, 16] and c.default_tag_length == 16
    assert c.default_nonce_length == 12 and 1 in c.nonce_lengths and 0 not in c.nonce_lengths
    assert 4096 in c.nonce_lengths
    assert c.max_message == 2**36 - 32 and c.max_aad == 2**61 - 1 and c.parallel_message
    assert not c.implementations["fast"].constant_time
    assert c.implementations["ct"].constant_time and c.constant_time_implementation() == "ct"
    # the OpenSSL engine (pyca) takes nonces of 8 to 128 bytes only
    assert c.openssl_takes("aes-128-gcm", 12, 16) and c.openssl_takes("aes-256-gcm", 8, 12)
    assert c.openssl_takes("aes-192-gcm", 128, 13)
    assert not c.openssl_takes("aes-128-gcm", 7, 16) and not c.openssl_takes("aes-128-gcm", 129, 16)


def test_declaration_refuses():
    c = gcm_decl.CIPHER
    with pytest.raises(InvalidKeySize):
        c.check("aes-128-gcm", 24, 12, 16)
    with pytest.raises(InvalidIVSize):
        c.check("aes-128-gcm", 16, 0, 16)
    for t in (4, 8, 11, 17):
        with pytest.raises(InvalidArgument):
            c.check("aes-256-gcm", 32, 12, t)


def test_model_matches_pyca():
    r = random.Random(7)
    for n in (8, 12, 13, 16, 60, 128):
        for k in (16, 24, 32):
            key, nonce = r.randbytes(k), r.randbytes(n)
            aad, pt = r.randbytes(r.randrange(40)), r.randbytes(r.randrange(70))
            assert gcm_model.encrypt(key, nonce, aad, pt) == reference(key, nonce, aad, pt)


def test_data_file_vectors_are_complete():
    vs = gcm_vectors()
    mv = [v for v in vs if v.source.startswith("McGrew-Viega GCM Test Case")]
    assert len(mv) == 18
    assert {v.cipher for v in mv} == set(NAMES)
    assert {len(v.nonce) for v in mv} == {8, 12, 60}
    wp = [v for v in vs if v.source.startswith("Wycheproof")]
    assert sum(not v.valid for v in wp) == 27 and all(len(v.nonce) for v in wp)
    assert {len(v.nonce) for v in wp} >= {1, 2, 4, 6, 8, 10, 12, 16}


def test_data_file_vectors_match_the_reference():
    """Catches a transcription slip independently of the kernels."""
    for v in gcm_vectors():
        if v.valid:
            assert reference(v.key, v.nonce, v.aad, v.plaintext, len(v.tag)) == (v.ciphertext, v.tag), v.source
        else:
            assert gcm_model.tag(v.key, v.nonce, v.aad, v.ciphertext, len(v.tag)) != v.tag, v.source


def test_choose_tiles():
    nb = np.array([1 << 26], dtype=np.int64)           # one 1 GiB message
    w, r = gcm.choose_tiles(nb, 256, False, 270_000)
    assert (1 << (w + r)) >= 1024 and w >= 3
    nb = np.full(100_000, 18, dtype=np.int64)         # 256-byte messages
    w, r = gcm.choose_tiles(nb, 256, False, 270_000)
    assert (1 << (w + r)) <= 64 and w >= 3
    w, r = gcm.choose_tiles(nb, 256, True, 270_000)
    assert (1 << (w + r)) <= 64
    # gcm_ghash_pos (knob gh): any width; 16 KiB messages (1026 stream blocks) get narrow tiles
    # of 128 blocks (9 per message) rather than tiles of 8 lanes
    nb = np.full(65536, 1026, dtype=np.int64)
    for ct in (False, True):
        w, r = gcm.choose_tiles(nb, 256, ct, 101_376, gen=gcm._POS_GEN_COST[ct], wmin=0)
        assert (w, r) == (0, 7)


# --------------------------------------------------------------------------- vectors

@pytest.mark.parametrize("impl", IMPLS)
def test_data_file_vectors(device, impl):
    for (name, _n, _t), vs in sorted(groups(gcm_vectors()).items()):
        check_vectors(driver(device, name, impl), name, vs)


def _cavp(sample: int | None):
    vs = [v for v in gcm_vectors(files=True) if v.source.startswith("ciphers/AES/GCM/")]
    if not vs:
        pytest.skip("cryptography_vectors is not installed")
    assert len(vs) > 40_000
    # the CAVP files also have 32- and 64-bit tags (SP 800-38D Appendix C): the API refuses those
    vs = [v for v in vs if len(v.tag) in gcm_decl.CIPHER.tag_lengths]
    if sample is not None:
        vs = random.Random(20260601).sample(vs, sample)
    return groups(vs)


@pytest.mark.parametrize("impl", IMPLS)
def test_nist_cavp_sample(device, impl):
    """A seeded sample of the CAVP records, as batches (key, nonce and tag length)."""
    for (name, _n, _t), vs in sorted(_cavp(300).items()):
        check_vectors(driver(device, name, impl), name, vs)


@pytest.mark.parametrize("impl", IMPLS)
def test_nist_cavp_all(gpu_device, impl):
    for (name, _n, _t), vs in sorted(_cavp(None).items()):
        check_vectors(_driver(gpu_device, name, impl), name, vs)


# --------------------------------------------------------------------------- differential

LENGTHS = (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 255, 256, 257, 1000, 4095, 4097)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", NAMES)
def test_differential_batch(device, impl, name):
    """One batch: every length, AAD of random lengths, per-message keys (some shared), both
    directions, against pyca."""
    drv = driver(device, name, impl)
    r = random.Random(f"{name}-{impl}")
    k = gcm_decl.CIPHER.names[name]
    pool = [r.randbytes(k) for _ in range(3)]
    m = len(LENGTHS)
    keys = [r.choice(pool) if i % 2 else r.randbytes(k) for i in range(m)]
    nonces = [r.randbytes(12) for _ in range(m)]
    aads = [r.randbytes(r.choice((0, 1, 13, 16, 17, 40, 300))) for _ in range(m)]
    pts = [r.randbytes(n) for n in LENGTHS]
    want = [reference(*a) for a in zip(keys, nonces, aads, pts)]
    outs, tags = run(drv, name, True, 16, keys, nonces, aads, pts)
    assert list(zip(outs, tags)) == want
    outs, tags = run(drv, name, False, 16, keys, nonces, aads, [w[0] for w in want])
    assert outs == pts and tags == [w[1] for w in want]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("nlen", (1, 7, 8, 13, 16, 17, 60, 129, 300))
def test_differential_nonce_lengths(device, impl, nlen):
    """Nonces other than 96 bits: J0 = GHASH(IV ...) on the device (pyca, or the model outside
    8..128 bytes)."""
    name = "aes-128-gcm"
    drv = driver(device, name, impl)
    r = random.Random(f"n{nlen}-{impl}")
    m = 5
    keys = [r.randbytes(16) for _ in range(m)]
    nonces = [r.randbytes(nlen) for _ in range(m)]
    aads = [r.randbytes(r.randrange(0, 40)) for _ in range(m)]
    pts = [r.randbytes(n) for n in (0, 1, 17, 64, 200)]
    outs, tags = run(drv, name, True, 16, keys, nonces, aads, pts)
    assert list(zip(outs, tags)) == [reference(*a) for a in zip(keys, nonces, aads, pts)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("tag_length", (12, 13, 15))
def test_truncated_tags(device, impl, tag_length):
    name = "aes-256-gcm"
    drv = driver(device, name, impl)
    r = random.Random(tag_length)
    keys = [r.randbytes(32)] * 3
    nonces = [r.randbytes(12) for _ in range(3)]
    aads = [b"", r.randbytes(5), r.randbytes(33)]
    pts = [r.randbytes(n) for n in (0, 16, 50)]
    outs, tags = run(drv, name, True, tag_length, keys, nonces, aads, pts)
    assert list(zip(outs, tags)) == [reference(*a, tag_length) for a in zip(keys, nonces, aads, pts)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("one_key", (False, True), ids=("keys", "one-key"))
@pytest.mark.parametrize("tiles", ((0, 0), (3, 0), (3, 1), (4, 2), (3, 3)))
def test_tile_edges(device, impl, tiles, one_key, monkeypatch):
    """GHASH tiles of W x R blocks forced small, so messages span many tiles (tile powers,
    first tiles that start before the stream): lengths at and around tile edges; a key per
    message, or one key for the batch (the fast kernel's 8-bit tables)."""
    wlog, rlog = tiles
    if impl == "fast" and wlog < 3:
        pytest.skip("the fast kernel's tiles are at least GCM_MIN_W = 8 lanes wide")
    monkeypatch.setattr(gcm, "choose_tiles", lambda nb, ls, ct, target, **kw: (wlog, rlog))
    name = "aes-192-gcm"
    drv = driver(device, name, impl)
    r = random.Random(f"{tiles}-{impl}")
    tb = 16 << (wlog + rlog)                          # bytes of stream per tile
    lens = sorted({max(0, tb * j + d) for j in (1, 2, 3) for d in (-17, -16, -1, 0, 1, 15)})
    m = len(lens)
    keys = [r.randbytes(24)] * m if one_key else [r.randbytes(24) for _ in range(m)]
    nonces = [r.randbytes(12) for _ in range(m)]
    aads = [r.randbytes(r.choice((0, 3, 16, tb + 5))) for _ in range(m)]
    pts = [r.randbytes(n) for n in lens]
    outs, tags = run(drv, name, True, 16, keys, nonces, aads, pts)
    assert list(zip(outs, tags)) == [reference(*a) for a in zip(keys, nonces, aads, pts)]


# --------------------------------------------------------------------------- knob variants

def _launches(drv, monkeypatch) -> list:
    """The names of the kernels ``drv`` launches from now on, in order."""
    seen: list = []
    real = drv.backend.launch

    def spy(program, kname, *a, **kw):
        seen.append(kname)
        return real(program, kname, *a, **kw)

    monkeypatch.setattr(drv.backend, "launch", spy)
    return seen


@functools.lru_cache(maxsize=None)
def _knob_driver(spec: str, name: str, knobs: tuple):
    from ciphergrid.devices import backend, resolve

    return gcm.GCMDriver(backend(resolve(spec)), gcm_decl.CIPHER, name, **dict(knobs))


#: the variants of scripts/dev/aead_knobs.py: positional GHASH tables (gh), ct groups (grp), the ct
#: counter pass of one key (ctr); each with the kernels a batch of one key must launch
KNOBS = {
    "gh1": ((("gh", 1),), "gcm_ghash_pos", "gcm_ctr"),
    "gh2": ((("gh", 2),), "gcm_ghash_pos", "gcm_ctr"),
    "gh2-roll1-ctr3": ((("gh", 2), ("roll", 1), ("ctr", 3)), "gcm_ghash_pos", "gcm_ctr_one"),
    "gh3-ctr3": ((("gh", 3), ("ctr", 3)), "gcm_ghash_pos", "gcm_ctr_one"),
    # the ct counter pass in text-block space (16 KiB batches)
    "ct-gh1-grp6-ctr4-roll1": ((("ct", 1), ("gh", 1), ("grp", 6), ("ctr", 4), ("roll", 1)), "gcm_ghash_pos",
                               "gcm_ctr_one"),
    "ct-gh1-grp3-ctr4": ((("ct", 1), ("gh", 1), ("grp", 3), ("ctr", 4)), "gcm_ghash_pos", "gcm_ctr_one"),
    "ct-gh1-grp6-ctr4-roll1-pf1": ((("ct", 1), ("gh", 1), ("grp", 6), ("ctr", 4), ("roll", 1), ("pf", 1)),
                                   "gcm_ghash_pos", "gcm_ctr_one"),
    # fast: the counter pass in text-block space (ctr=3), GHASH loads in chunks (pf), byte addressing (mad)
    "gh3-ctr3-pf1-mad1": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1)), "gcm_ghash_pos", "gcm_ctr_one"),
    "gh3-ctr3-pf2-mad1": ((("gh", 3), ("ctr", 3), ("pf", 2), ("mad", 1)), "gcm_ghash_pos", "gcm_ctr_one"),
    # GHASH's head blocks in each message's first tile (hd), tile factors (tf), forced tiles (tw, tr)
    "gh3-ctr3-pf1-mad1-hd1": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1), ("hd", 1)), "gcm_ghash_pos",
                              "gcm_ctr_one"),
    "gh3-ctr3-hd1": ((("gh", 3), ("ctr", 3), ("hd", 1)), "gcm_ghash_pos", "gcm_ctr_one"),
    "ct-gh1-grp6-ctr4-roll1-hd1": ((("ct", 1), ("gh", 1), ("grp", 6), ("ctr", 4), ("roll", 1), ("hd", 1)),
                                   "gcm_ghash_pos", "gcm_ctr_one"),
    "ct-gh1-grp6-ctr4-roll1-pf1-hd1": ((("ct", 1), ("gh", 1), ("grp", 6), ("ctr", 4), ("roll", 1), ("pf", 1),
                                        ("hd", 1)), "gcm_ghash_pos", "gcm_ctr_one"),
    "gh3-ctr3-pf1-mad1-hd1-tf1": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1), ("hd", 1), ("tf", 1)),
                                  "gcm_ghash_pos", "gcm_ctr_one"),
    "ct-gh1-grp6-ctr4-roll1-pf1-hd1-tf1": ((("ct", 1), ("gh", 1), ("grp", 6), ("ctr", 4), ("roll", 1), ("pf", 1),
                                            ("hd", 1), ("tf", 1)), "gcm_ghash_pos", "gcm_ctr_one"),
    "gh3-ctr3-pf1-mad1-hd2": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1), ("hd", 2)), "gcm_ghash_pos",
                              "gcm_ctr_one"),
    "gh3-ctr3-pf1-mad1-hd1-tw4-tr256": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1), ("hd", 1), ("tw", 4),
                                         ("tr", 256)), "gcm_ghash_pos", "gcm_ctr_one"),
    "gh3-ctr3-pf1-mad1-regs128": ((("gh", 3), ("ctr", 3), ("pf", 1), ("mad", 1), ("regs", 128)),
                                  "gcm_ghash_pos", "gcm_ctr_one"),
}


#: the variants run on every device (the expected winners); the others on GPUs only (a cold PoCL
#: build of each costs 3 to 12 s, and this file's share of the suite stays under 60 s cold)
#: (one variant per code path of the library's defaults and their neighbours: fast ctr=3 with
#: pf=1, mad=1 and hd=1 (hd=2 and tw, tr share its program), ct ctr=4 with pf=1 and hd=1)
KNOBS_EVERYWHERE = ("ct-gh1-grp6-ctr4-roll1-pf1-hd1", "gh3-ctr3-pf1-mad1-hd1", "gh3-ctr3-pf1-mad1-hd2",
                    "gh3-ctr3-pf1-mad1-hd1-tw4-tr256", "gh3-ctr3-pf1-mad1-hd1-tf1",
                    "ct-gh1-grp6-ctr4-roll1-pf1-hd1-tf1")


@pytest.mark.parametrize("variant", KNOBS_EVERYWHERE)
def test_knob_variants(device, variant, monkeypatch):
    check_knob_variant(device, variant, monkeypatch)


@pytest.mark.parametrize("variant", sorted(set(KNOBS) - set(KNOBS_EVERYWHERE)))
def test_knob_variants_gpu(gpu_device, variant, monkeypatch):
    check_knob_variant(gpu_device, variant, monkeypatch)


def check_knob_variant(device, variant, monkeypatch):
    """Each variant against pyca: batches of one key (the new kernels, with tiles forced small
    so that messages span many tiles, runs longer and shorter than a group, first tiles that
    start before the stream) and of several keys (gcm_ghash and gcm_ctr), both directions;
    messages longer than a work-group's counter blocks."""
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    knobs, gh_kernel, ctr_kernel = KNOBS[variant]
    ct = dict(knobs).get("ct", 0)
    name = "aes-128-gcm"
    drv = _knob_driver(device, name, knobs)
    seen = _launches(drv, monkeypatch)
    r = random.Random(variant)
    for tiles in ((0, 2), (3, 0), (3, 3), (4, 2), None):
        if tiles is not None:
            monkeypatch.setattr(gcm, "choose_tiles", lambda nb, ls, c, target, t=tiles, **kw: t)
        else:
            monkeypatch.undo()
            seen = _launches(drv, monkeypatch)
        tb = 16 << ((tiles or (3, 3))[0] + (tiles or (3, 3))[1])
        lens = sorted({max(0, tb * j + d) for j in (1, 2) for d in (-17, -1, 0, 1)} | {0, 1, 15, 16, 17})
        m = len(lens)
        # several keys: gcm_ghash and gcm_ctr, the default kernels (tested above); checked for
        # the fast variants only (a cold PoCL build of another bitsliced kernel costs seconds)
        # (and gcm_ghash's fast tiles are at least GCM_MIN_W = 8 lanes wide)
        for one_key in (True,) if ct or (tiles and tiles[0] < 3) else (True, False):
            keys = [r.randbytes(16)] * m if one_key else [r.randbytes(16) for _ in range(m)]
            nonces = [r.randbytes(12) for _ in range(m)]
            aads = [r.randbytes(r.choice((0, 3, 16, tb + 5))) for _ in range(m)]
            pts = [r.randbytes(n) for n in lens]
            want = [reference(*a) for a in zip(keys, nonces, aads, pts)]
            seen.clear()
            outs, tags = run(drv, name, True, 16, keys, nonces, aads, pts)
            assert list(zip(outs, tags)) == want, (tiles, one_key)
            if one_key:
                assert gh_kernel in seen and ctr_kernel in seen
            else:
                assert "gcm_ghash" in seen and "gcm_ctr" in seen
            outs, tags = run(drv, name, False, 16, keys, nonces, aads, [w[0] for w in want])
            assert outs == pts and tags == [w[1] for w in want]
    # messages longer than a work-group's 32 x LSIZE text blocks (gcm_ctr_one's blocks of one
    # message, from registers), one key; tiles of the device's choice, then tiles
    # of 8 blocks: more than _MAX_NF lane factors (the tile powers by square-and-multiply)
    key = r.randbytes(16)
    lens = (300_011, 5, 140_000)
    nonces = [r.randbytes(12) for _ in lens]
    pts = [r.randbytes(n) for n in lens]
    want = [reference(key, n, b"ad", p) for n, p in zip(nonces, pts)]
    for tiles in (None, (3, 0)):
        if tiles:
            monkeypatch.setattr(gcm, "choose_tiles", lambda nb, ls, c, target, t=tiles, **kw: t)
        outs, tags = run(drv, name, True, 16, [key] * 3, nonces, [b"ad"] * 3, pts)
        assert list(zip(outs, tags)) == want, tiles


@pytest.mark.parametrize("variant", KNOBS_EVERYWHERE)
def test_knob_variants_aligned_batch(device, variant):
    """Batches of one key whose messages are whole multiples of 16 KiB (the sub-group tiles of
    ctr=4: every work-item's 32 blocks in one message), with a few odd messages between them
    and AAD; against pyca both ways."""
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    knobs = KNOBS[variant][0]
    name = "aes-128-gcm"
    drv = _knob_driver(device, name, knobs)
    r = random.Random("aligned-" + variant)
    key = r.randbytes(16)
    lens = [16384] * 9 + [32768, 16384 + 16, 0, 16384 * 2 - 1, 5, 16384 * 3, 16384]
    nonces = [r.randbytes(12) for _ in lens]
    aads = [r.randbytes(r.choice((0, 16, 21))) for _ in lens]
    pts = [r.randbytes(n) for n in lens]
    want = [reference(key, n, a, p) for n, a, p in zip(nonces, aads, pts)]
    outs, tags = run(drv, name, True, 16, [key] * len(lens), nonces, aads, pts)
    assert list(zip(outs, tags)) == want
    outs, tags = run(drv, name, False, 16, [key] * len(lens), nonces, aads, [w[0] for w in want])
    assert outs == pts and tags == [w[1] for w in want]


def test_knobs_refused(device):
    if device == "native":
        pytest.skip("native is the OpenSSL engine, not a device backend")
    for knobs in ((("gh", 4),), (("ct", 1), ("gh", 2)), (("ct", 1), ("ctr", 5)), (("ct", 1), ("grp", 7)),
                  (("ctr", 4),), (("ctr", 1),), (("ctr", 2),), (("ct", 1), ("ctr", 3)),
                  (("pf", 1),), (("gh", 3), ("pf", 3)), (("ct", 1), ("gh", 1), ("pf", 2)),
                  (("gh", 2), ("mad", 1)), (("ct", 1), ("gh", 1), ("mad", 1)), (("regs", 8),),
                  (("roll", 2),), (("hd", 1),), (("gh", 3), ("hd", 3)),
                  (("gh", 3), ("tw", 8)), (("gh", 3), ("tr", 8)), (("tw", 8), ("tr", 8)),
                  (("gh", 3), ("tw", 3), ("tr", 8)), (("gh", 3), ("tw", 8), ("tr", 512)),
                  (("gh", 3), ("tw", 1024), ("tr", 8)), (("tf", 1),), (("gh", 3), ("tf", 2))):
        with pytest.raises(InvalidArgument):
            _knob_driver(device, "aes-128-gcm", knobs)


def test_pos_tiles_by_waves():
    """hd=2's tile choice (host only): W >= 4 and R <= 256; with hd, floor(nb / (W R)) tiles a
    message, at least one: the first takes the head (fewer than 2 W R blocks, or the whole of a
    shorter message); tw, tr force the tiles."""
    d = object.__new__(gcm.GCMDriver)
    d.ls, d.hd, d.tw, d.tr, d.tf, d.tiles = 256, 2, 0, 0, 1, {}
    for ct in (False, True):
        d.ct = ct
        for target in (132 * 256 * 3, 132 * 256 * 4, 132 * 2048, 2048):
            for nb in (np.full(65536, 1026), np.array([(1 << 26) + 2]), np.array([5, 1000, 3]),
                       np.full(7, 1)):
                wlog, rlog = d.pos_tiles(nb, target)
                assert 2 <= wlog <= 8 and 0 <= rlog <= gcm.MAX_RLOG, (nb[:2], target, wlog, rlog)
                tl = wlog + rlog
                tiles = d.tile_counts(nb, tl)
                assert (tiles >= 1).all() and ((tiles == 1) | (tiles << tl <= nb)).all()
                assert (nb < (tiles + 1) << tl).all()
    d.tw, d.tr = 4, 256
    assert d.pos_tiles(np.full(3, 1026), 1000) == (2, 8)


# --------------------------------------------------------------------------- tamper, jobs, launches

@pytest.mark.parametrize("impl", IMPLS)
def test_tamper_changes_the_computed_tag(device, impl):
    """Decryption: a flipped bit in ciphertext, AAD or nonce gives a different computed tag (and
    the driver returns it; verification is the shared layer's)."""
    name = "aes-128-gcm"
    drv = driver(device, name, impl)
    r = random.Random(3)
    key, nonce, aad, pt = r.randbytes(16), r.randbytes(12), r.randbytes(20), r.randbytes(100)
    ct, tag = reference(key, nonce, aad, pt)

    def flip(b: bytes, bit: int) -> bytes:
        x = bytearray(b)
        x[bit // 8] ^= 1 << (bit % 8)
        return bytes(x)

    cases = [(nonce, aad, ct)]
    cases += [(nonce, aad, flip(ct, bit)) for bit in (0, 7, 400, 799)]
    cases += [(nonce, flip(aad, bit), ct) for bit in (0, 159)]
    cases += [(flip(nonce, bit), aad, ct) for bit in (0, 95)]
    outs, tags = run(drv, name, False, 16, [key] * len(cases), [c[0] for c in cases],
                     [c[1] for c in cases], [c[2] for c in cases])
    assert tags[0] == tag and outs[0] == pt
    assert all(t != tag for t in tags[1:])
    assert len(set(tags)) == len(tags)


@pytest.mark.parametrize("impl", IMPLS)
def test_job_reruns_and_launches(device, impl, monkeypatch):
    """enqueue() may run many times with the same result; a batch is a fixed number of launches
    whatever its number of messages."""
    name = "aes-128-gcm"
    drv = driver(device, name, impl)
    seen = _launches(drv, monkeypatch)
    r = random.Random(11)
    for m in (1, 200):
        keys = [r.randbytes(16) for _ in range(m)]
        nonces = [r.randbytes(12) for _ in range(m)]
        aads = [r.randbytes(r.randrange(20)) for _ in range(m)]
        pts = [r.randbytes(r.randrange(300)) for _ in range(m)]
        b = make_batch(name, True, 16, keys, nonces, aads, pts)
        job = drv.prepare(b)
        seen.clear()
        job.enqueue()
        job.enqueue()
        tags = job.finish()
        assert len(seen) == 12
        one_key = m == 1   # the knobs' kernels (positional GHASH, one-key counter pass) need one key
        ctr = "gcm_ctr_one" if one_key and drv.ctr else "gcm_ctr"
        ghash = "gcm_ghash_pos" if one_key and drv.gh else "gcm_ghash"
        assert sorted(set(seen)) == sorted([ctr, ghash, "gcm_hkey", "gcm_hpow", "gcm_j0", "gcm_tag"])
        for i in (0, m - 1):
            assert (b.dst[b.off[i]:b.off[i + 1]].tobytes(), tags[i].tobytes()) == \
                reference(keys[i], nonces[i], aads[i], pts[i])


def test_empty_batch_and_wrong_name(device):
    drv = driver(device, "aes-128-gcm", "fast")
    b = make_batch("aes-128-gcm", True, 16, [], [], [], [])
    assert drv.run(b).shape == (0, 16)
    b = make_batch("aes-256-gcm", True, 16, [bytes(32)], [bytes(12)], [b""], [b"x"])
    with pytest.raises(InvalidArgument):
        drv.prepare(b)
    b = make_batch("aes-128-gcm", True, 11, [bytes(16)], [bytes(12)], [b""], [b"x"])
    with pytest.raises(InvalidArgument):
        drv.prepare(b)


def test_in_place(device):
    name = "aes-128-gcm"
    drv = driver(device, name, "fast")
    r = random.Random(5)
    keys, nonces, aads = [r.randbytes(16)] * 2, [r.randbytes(12), r.randbytes(12)], [b"a", b""]
    pts = [r.randbytes(33), r.randbytes(70)]
    b = make_batch(name, True, 16, keys, nonces, aads, pts)
    b.dst = b.src
    tags = drv.run(b)
    for i in range(2):
        assert (b.src[b.off[i]:b.off[i + 1]].tobytes(), tags[i].tobytes()) == \
            reference(keys[i], nonces[i], aads[i], pts[i])


# --------------------------------------------------------------------------- large (GPU only)

@pytest.mark.parametrize("impl", IMPLS)
def test_large_one_message(gpu_device, impl):
    name = "aes-256-gcm"
    drv = _driver(gpu_device, name, impl)
    rng = np.random.default_rng(1)
    key, nonce = rng.bytes(32), rng.bytes(12)
    pt = rng.bytes((64 << 20) + 7)
    outs, tags = run(drv, name, True, 16, [key], [nonce], [b"hdr"], [pt])
    assert (outs[0], tags[0]) == reference(key, nonce, b"hdr", pt)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", (256, 4096, 16384))
def test_large_batches(gpu_device, impl, size):
    name = "aes-128-gcm"
    drv = _driver(gpu_device, name, impl)
    rng = np.random.default_rng(size)
    m = (8 << 20) // size
    keys = [rng.bytes(16)] * m
    keys[::7] = [rng.bytes(16) for _ in keys[::7]]
    nonces = [rng.bytes(12) for _ in range(m)]
    aads = [rng.bytes(13) for _ in range(m)]
    pts = [rng.bytes(size) for _ in range(m)]
    outs, tags = run(drv, name, True, 16, keys, nonces, aads, pts)
    for i in range(0, m, max(1, m // 64)):
        assert (outs[i], tags[i]) == reference(keys[i], nonces[i], aads[i], pts[i])


# --------------------------------------------------------------------------- the source

def test_kernel_source_is_portable_and_prefixed():
    import re
    from importlib import resources

    src = resources.files("ciphergrid").joinpath("kernels", "gcm.cl").read_text()
    code = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    for word in ("__kernel", "__global", "__local", "__constant", "__shared__", "__device__",
                 "get_global_id", "get_local_id", "get_group_id", "barrier(", "printf", "rotate(",
                 "#include", "atomic", "mul_hi("):
        assert word not in code, f"gcm.cl uses {word!r}: only the spellings of portable.h"
    names = re.findall(r"^(?:KERNEL\s+void|DEVICE_FN\s+\w+|CONST_TABLE\s+\w+)\s+(\w+)", code, flags=re.M)
    names += re.findall(r"^#define\s+(\w+)", code, flags=re.M)
    names += re.findall(r"LOCAL_VAR\s+\w+\s+(\w+)", code)
    assert len(names) > 20
    for n in names:
        assert n.lower().startswith("gcm"), n
