"""Ascon-AEAD128 (NIST SP 800-232): the KAT records of ciphergrid/vectors/aead/ascon-aead128.json
through the reference (tests/ascon_model.py) and through the driver on every device, and the
driver against the reference on random batches (keys per message, nonces, AAD, lengths at the
block and tile edges, alignments), tampering, re-runs."""

from __future__ import annotations

import numpy as np
import pytest

import ascon_model as model
from ciphergrid.aeads import lookup
from ciphergrid.aeads.base import make_batch
from ciphergrid.vectors import aeads as aead_vectors

NAME = "ascon-aead128"


def _vectors():
    return aead_vectors.load(NAME, files=False)


def _driver(device, **options):
    if device == "native":
        pytest.skip("OpenSSL lacks Ascon: the native engine is no device backend")
    from ciphergrid.devices import backend, resolve

    from ciphergrid.engines import device_aead

    return device_aead.build(backend(resolve(device)), lookup(NAME), NAME, **options)


def _run(drv, encrypt, keys, nonces, aads, texts, in_place=False):
    b = make_batch(NAME, encrypt, 16, keys, nonces, aads, texts)
    if in_place:
        b.dst = b.src
    tags = drv.run(b)
    outs = [b.dst[b.off[i]:b.off[i + 1]].tobytes() for i in range(b.count)]
    return outs, [t.tobytes() for t in tags]


def _random_batch(rng, lengths, aad_lengths=None, one_key=False):
    m = len(lengths)
    key = rng.randbytes(16)
    keys = [key if one_key else rng.randbytes(16) for _ in range(m)]
    nonces = [rng.randbytes(16) for _ in range(m)]
    if aad_lengths is None:
        aad_lengths = [rng.choice((0, 0, 1, 5, 15, 16, 17, 33)) for _ in range(m)]
    aads = [rng.randbytes(a) for a in aad_lengths]
    texts = [rng.randbytes(n) for n in lengths]
    return keys, nonces, aads, texts


def _check_both_ways(drv, keys, nonces, aads, texts):
    cts, tags = _run(drv, True, keys, nonces, aads, texts)
    for i, (k, n, a, p) in enumerate(zip(keys, nonces, aads, texts)):
        c, t = model.encrypt_parts(k, n, a, p)
        assert cts[i] == c, f"message {i} (len {len(p)}, aad {len(a)}): ciphertext"
        assert tags[i] == t, f"message {i} (len {len(p)}, aad {len(a)}): tag"
    pts, dtags = _run(drv, False, keys, nonces, aads, cts)
    assert pts == list(texts)
    assert dtags == tags            # decryption computes the tag over the ciphertext


# ----------------------------------------------------------------------------- the declaration

def test_declaration():
    a = lookup(NAME)
    assert a.family == NAME and a.names == {NAME: 16}
    assert tuple(a.nonce_lengths) == (16,) and tuple(a.tag_lengths) == (16,)
    assert a.parallel_message is False and a.openssl == {}
    assert a.implementations["fast"].constant_time
    assert a.constant_time_implementation() == "fast"


# ----------------------------------------------------------------------------- the reference

def test_vectors_present():
    vs = _vectors()
    assert len(vs) >= 45
    lens = {len(v.plaintext) for v in vs}
    assert {0, 1, 7, 8, 15, 16, 17, 31, 32} <= lens


def test_model_reproduces_the_kat():
    for v in _vectors():
        c, t = model.encrypt_parts(v.key, v.nonce, v.aad, v.plaintext)
        assert (c, t) == (v.ciphertext, v.tag), v.source
        assert model.encrypt(v.key, v.nonce, v.aad, v.plaintext) == v.ciphertext + v.tag
        assert model.decrypt(v.key, v.nonce, v.aad, v.ciphertext, v.tag) == v.plaintext
        assert model.decrypt(v.key, v.nonce, v.aad, v.ciphertext, bytes(16)) is None


def test_model_sbox_is_the_bitsliced_formula():
    """The table S-box of the reference equals the bitsliced expressions of SP 800-232 (the
    kernel's): an independent check of the table's transcription."""
    for v in range(32):
        x = [(v >> (4 - i)) & 1 for i in range(5)]
        x[0] ^= x[4]; x[4] ^= x[3]; x[2] ^= x[1]
        t = [(1 - x[i]) & x[(i + 1) % 5] for i in range(5)]
        for i in range(5):
            x[i] ^= t[(i + 1) % 5]
        x[1] ^= x[0]; x[0] ^= x[4]; x[3] ^= x[2]; x[2] ^= 1
        assert model.SBOX[v] == sum(b << (4 - i) for i, b in enumerate(x))


# ----------------------------------------------------------------------------- the driver

@pytest.mark.parametrize("stage", [None, True, False])
def test_kat_through_driver(device, stage):
    """The default kernel of the device (direct) and both variants explicitly."""
    drv = _driver(device, stage=stage) if stage is not None else _driver(device)
    vs = _vectors()
    args = ([v.key for v in vs], [v.nonce for v in vs], [v.aad for v in vs])
    cts, tags = _run(drv, True, *args, [v.plaintext for v in vs])
    assert cts == [v.ciphertext for v in vs]
    assert tags == [v.tag for v in vs]
    pts, dtags = _run(drv, False, *args, [v.ciphertext for v in vs])
    assert pts == [v.plaintext for v in vs]
    assert dtags == [v.tag for v in vs]


def test_kat_one_at_a_time(device):
    drv = _driver(device)
    for v in _vectors()[::9]:
        cts, tags = _run(drv, True, [v.key], [v.nonce], [v.aad], [v.plaintext])
        assert (cts[0], tags[0]) == (v.ciphertext, v.tag), v.source


def test_random_edges_per_message_keys(device, rng):
    """Lengths at the block edges and the tile edges (128), alignments from the mixed lengths,
    more messages than one work-group, a key per message."""
    lengths = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300]
    lengths += [rng.randrange(0, 200) for _ in range(60)]
    rng.shuffle(lengths)
    _check_both_ways(_driver(device), *_random_batch(rng, lengths))


def test_random_one_key_long_aad(device, rng):
    lengths = [rng.choice((0, 3, 16, 45, 130)) for _ in range(20)]
    aad_lengths = [rng.choice((0, 1, 15, 16, 17, 31, 48, 100)) for _ in range(20)]
    _check_both_ways(_driver(device), *_random_batch(rng, lengths, aad_lengths, one_key=True))


@pytest.mark.parametrize("wg,tile,stage", [(4, 16, True), (8, 48, True), (32, 256, True),
                                           (16, 128, False)])
def test_other_knobs(device, rng, wg, tile, stage):
    """Other work-group sizes and tiles: a tile of one block, messages of many steps, a group
    whose messages need different numbers of steps; the unstaged kernel."""
    lengths = [0, 1, 15, 16, 17, 47, 48, 49, 95, 96, 97, 5, 250, 2, 3, 33, 64, 31, 260]
    _check_both_ways(_driver(device, wg=wg, tile=tile, stage=stage),
                     *_random_batch(rng, lengths))


@pytest.mark.parametrize("ahead", [1, 2, 4])
def test_direct_prefetch(device, rng, ahead):
    """The direct kernel's prefetch distances: messages at 16-byte offsets (the vector path)
    with fewer, as many and more full blocks than the distance, and messages at every other
    offset (the word path) between them."""
    lengths = [16, 32, 48, 0, 80, 96, 160, 16 * 9, 64, 1, 16, 32, 15, 48, 17, 80, 33, 16 * 7,
               2, 96, 3, 16 * 11, 4, 64, 5, 16 * 6, 6, 16, 7, 113, 8, 200, 9, 16 * 5]
    _check_both_ways(_driver(device, wg=8, stage=False, ahead=ahead),
                     *_random_batch(rng, lengths))


def test_single_message_and_empty_batch(device, rng):
    drv = _driver(device)
    _check_both_ways(drv, *_random_batch(rng, [1000], [7]))
    b = make_batch(NAME, True, 16, [], [], [], [])
    assert drv.run(b).shape == (0, 16)


def test_in_place(device, rng):
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, [5, 16, 33, 140])
    cts, tags = _run(drv, True, keys, nonces, aads, texts, in_place=True)
    for i in range(4):
        assert (cts[i], tags[i]) == model.encrypt_parts(keys[i], nonces[i], aads[i], texts[i])


def test_enqueue_twice_same_result(device, rng):
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, [0, 17, 129])
    b = make_batch(NAME, True, 16, keys, nonces, aads, texts)
    job = drv.prepare(b)
    job.enqueue()
    job.enqueue()
    tags = job.finish()
    for i in range(3):
        c, t = model.encrypt_parts(keys[i], nonces[i], aads[i], texts[i])
        assert b.dst[b.off[i]:b.off[i + 1]].tobytes() == c and tags[i].tobytes() == t


def test_tampering_changes_the_tag(device, rng):
    """A flipped bit of the ciphertext, the AAD, the nonce or the key gives another computed tag
    (the shared layer's verify then fails) -- and only for that message."""
    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, [0, 1, 16, 40], [3, 0, 20, 1])
    cts, tags = _run(drv, True, keys, nonces, aads, texts)
    cases = []
    for i in range(4):
        if cts[i]:
            c = bytearray(cts[i]); c[rng.randrange(len(c))] ^= 1 << rng.randrange(8)
            cases.append((i, keys[i], nonces[i], aads[i], bytes(c)))
        if aads[i]:
            a = bytearray(aads[i]); a[rng.randrange(len(a))] ^= 0x80
            cases.append((i, keys[i], nonces[i], bytes(a), cts[i]))
        n = bytearray(nonces[i]); n[rng.randrange(16)] ^= 1
        cases.append((i, keys[i], bytes(n), aads[i], cts[i]))
        k = bytearray(keys[i]); k[15] ^= 0x40
        cases.append((i, bytes(k), nonces[i], aads[i], cts[i]))
    # the tampered messages in one batch, after an untouched copy of each original
    ks = keys + [c[1] for c in cases]
    ns = nonces + [c[2] for c in cases]
    ad = aads + [c[3] for c in cases]
    tx = cts + [c[4] for c in cases]
    _, dtags = _run(drv, False, ks, ns, ad, tx)
    assert dtags[:4] == tags
    for j, case in enumerate(cases):
        assert dtags[4 + j] != tags[case[0]]
        assert dtags[4 + j] == model.tag_of(*case[1:], encrypt_=False)


def test_verify_zeroes_failed_plaintext(device, rng):
    from ciphergrid.aeads.base import verify

    drv = _driver(device)
    keys, nonces, aads, texts = _random_batch(rng, [20, 20])
    cts, tags = _run(drv, True, keys, nonces, aads, texts)
    bad = bytearray(cts[1]); bad[0] ^= 1
    b = make_batch(NAME, False, 16, keys, nonces, aads, [cts[0], bytes(bad)])
    computed = drv.run(b)
    ok = verify(b, computed, np.frombuffer(b"".join(tags), np.uint8).reshape(2, 16))
    assert list(ok) == [True, False]
    assert b.dst[:20].tobytes() == texts[0] and not b.dst[20:].any()


@pytest.mark.gpu
def test_large_batch_gpu(gpu_device, rng):
    """4096 messages of 16 KiB (two of them against the reference, which is slow) and one of
    8 MiB + 5 bytes, both directions, on a GPU."""
    drv = _driver(gpu_device)
    m = 4096
    lengths = [16384] * m
    keys, nonces, aads, texts = _random_batch(rng, lengths)
    cts, tags = _run(drv, True, keys, nonces, aads, texts)
    pts, dtags = _run(drv, False, keys, nonces, aads, cts)
    assert pts == texts and dtags == tags
    for i in (0, m - 1):            # two 16 KiB messages through the reference (~2 s each)
        assert (cts[i], tags[i]) == model.encrypt_parts(keys[i], nonces[i], aads[i], texts[i])
    big = rng.data(8 << 20) + b"12345"
    cb, tb = _run(drv, True, [keys[0]], [nonces[0]], [b""], [big])
    pb, db = _run(drv, False, [keys[0]], [nonces[0]], [b""], cb)
    assert pb == [big] and db == tb
