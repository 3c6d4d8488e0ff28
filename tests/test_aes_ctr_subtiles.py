"""AES-CTR on counter sub-tiles (kernels/aes.cl, AES_CTR_SLOTS: the implementations of ciphers/aes.py
that set it) gives OpenSSL's bytes: AES-128/192/256, random keys and IVs, lengths that start, end
and cross sub-tiles, counters that wrap 2^64 and 2^128, and a stream in pieces (each launch starting
inside a sub-tile), on every OpenCL/CUDA device.

The sub-tile kernel computes rounds 1 and 2 from per-sub-tile constants and one byte of the counter,
so a wrong constant shows in every block; a wrong slot or lane shows in the blocks that slot or
lane takes (the lengths reach every slot of a sub-tile).  On CPU OpenCL devices (conftest.lean) the
key sizes are all three for the 8-slot kernel and AES-128 for the others (test_implementations runs
their ECB, XTS and known answers).
"""

from __future__ import annotations

import pytest

import ciphergrid
from ciphergrid import registry
from conftest import first_difference, lean
from test_constant_time import CT_DEVICES

AES = registry.lookup("aes-128-ctr").algorithm
SUBTILED = [n for n, im in AES.implementations.items() if im.defines.get("AES_CTR_SLOTS")]
FULL = "+last-round-permutes"   # the 8-slot kernel that every key size runs on, even lean
needs_device = pytest.mark.skipif(not CT_DEVICES, reason="no OpenCL/CUDA device")


def _cases(rng, name):
    """(what, data, iv): lengths around one sub-tile (256 blocks at 8 slots) and over several,
    IVs anywhere in a sub-tile, near the 2^64 carry and near the 2^128 wrap."""
    cases = []
    for n in (0, 1, 17, 255 * 16 + 7, 257 * 16 + 9, 3 * 256 * 16 + 1, 20000 * 16 + 5):
        cases.append((f"{n} bytes", rng.data(n), rng.iv(name)))
    hi = rng.getrandbits(64)
    cases.append(("counter wraps 2^64", rng.data(600 * 16 + 3),
                  ((hi << 64) | ((1 << 64) - rng.randrange(1, 400))).to_bytes(16, "big")))
    cases.append(("counter wraps 2^128", rng.data(600 * 16 + 11),
                  ((1 << 128) - rng.randrange(1, 400)).to_bytes(16, "big")))
    return cases


def test_subtiled_implementations_are_registered():
    assert {"+ctr-subtiles", FULL} <= set(SUBTILED)
    for n in SUBTILED:
        im = AES.implementations[n]
        assert im.file == "aes.cl" and im.local_size == 256 and im.defines["AES_CTR_SLOTS"] in (1, 2, 4, 8)
    fast = AES.implementations["fast"].defines   # the default stays as it is until a GPU says so
    assert not {"AES_CTR_SLOTS", "AES_DP4A", "AES_LAST_PERMUTE"} & set(fast)


@needs_device
@pytest.mark.parametrize("impl", SUBTILED)
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_matches_openssl(kdev, impl, rng, ref):
    names = ["aes-128-ctr", "aes-192-ctr", "aes-256-ctr"]
    if lean(kdev) and impl != FULL:
        names = names[:1]
    bad = []
    for name in names:
        key = rng.key(name)
        for what, data, iv in _cases(rng, name):
            want = ref.crypt(True, data, name, key, iv)
            got = ciphergrid.encrypt(data, name, key, iv, device=kdev, implementation=impl)
            if got != want:
                bad.append(f"{name} encrypt {what}: {first_difference(got, want)}")
            back = ciphergrid.decrypt(want, name, key, iv, device=kdev, implementation=impl)
            if back != data:
                bad.append(f"{name} decrypt {what}: {first_difference(back, data)}")
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_pieces(kdev, rng, ref):
    """A stream in pieces (launches that start inside a sub-tile, end inside another or span
    several) gives the one-shot key stream, across the 2^64 carry."""
    name = "aes-128-ctr"
    key = rng.key(name)
    iv = ((rng.getrandbits(64) << 64) | ((1 << 64) - 700 * 16 - rng.randrange(1, 300))).to_bytes(16, "big")
    pieces = [1, 15, 16, 17, 4096, 5, 256 * 16 + 3, 100000, 1]
    data = rng.data(sum(pieces))
    enc = ciphergrid.Cipher(name, key, iv, device=kdev, implementation=FULL).encryptor()
    out, pos = [], 0
    for n in pieces:
        out.append(enc.update(data[pos:pos + n]))
        pos += n
    out.append(enc.finalize())
    got, want = b"".join(out), ref.crypt(True, data, name, key, iv)
    assert got == want, first_difference(got, want)
