"""The host key schedules a one-shot call runs for every fresh key (issue 50: ``expand`` is on the
path of every call), against the readable schedules each cipher module keeps beside them (which
the cipher's own tests check against its RFC model) or the ``expand`` they replaced (kept here):
the same words for random keys, every key size, direction and layout, with libcrypto's schedule
where the module takes it and without it.  And the host block functions XTS one-shots take their
tweaks from, against ``reference_ecb``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ciphergrid.algorithms import camellia, clefia
from ciphergrid.algorithms.base import NativeSchedule

RNG = random.Random(5050)


def _keys(n: int, count: int = 24) -> list[bytes]:
    return [bytes(n), b"\xff" * n, bytes(range(n))] + [RNG.randbytes(n) for _ in range(count)]


def _same(got: np.ndarray, want: list[int]) -> None:
    assert got.dtype == np.dtype("<u4") and got.flags.writeable
    assert got.tolist() == want


@pytest.mark.parametrize("n", [16, 24, 32])
def test_clefia_schedule(n):
    for key in _keys(n):
        for decrypt in (False, True):
            _same(clefia.CIPHER.expand(key, decrypt), clefia.kernel_schedule(key, decrypt))


@pytest.mark.parametrize("n", [16, 24, 32])
def test_clefia_host_blocks(n):
    """The XTS tweaks' host blocks: the reference's bytes for one and several blocks."""
    for key in _keys(n, 4):
        for nblocks in (1, 2, 5):
            blocks = RNG.randbytes(16 * nblocks)
            got = clefia.CIPHER.host_encrypt(key, blocks)
            assert isinstance(got, bytearray)
            assert bytes(got) == clefia.CIPHER.reference_ecb(key, blocks, True)
    with pytest.raises(ValueError):
        clefia.CIPHER.host_encrypt(bytes(n), bytes(17))


def _without_libcrypto(monkeypatch, module, words: int) -> None:
    monkeypatch.setattr(module, "_NATIVE", NativeSchedule("no_such_call", (), words, None))


@pytest.mark.parametrize("native", [True, False], ids=["libcrypto", "python"])
@pytest.mark.parametrize("n", [16, 24, 32])
def test_camellia_schedule(monkeypatch, native, n):
    """libcrypto's Camellia_set_key picked into our order where it agrees (checked once), else
    the Python schedule: the readable schedule's words either way."""
    if not native:
        _without_libcrypto(monkeypatch, camellia, 69)
    for key in _keys(n):
        for decrypt in (False, True):
            _same(camellia.CIPHER.expand(key, decrypt), camellia.schedule_words(key, decrypt))
    if not native:
        assert camellia._NATIVE.fn is None


def _bits(values, width: int) -> list[int]:
    """Each value's ``width`` masks, bit 0 first (the bitsliced layouts)."""
    return [0xFFFFFFFF if v >> j & 1 else 0 for v in values for j in range(width)]


def test_hight_layouts():
    from ciphergrid.algorithms import hight

    for key in _keys(16):
        sk = list(hight.schedule(key))
        for decrypt in (False, True):   # (decryption takes the same keys)
            _same(hight.CIPHER.expand(key, decrypt, "bitsliced"), _bits(sk, 8))
            _same(hight.CIPHER.expand(key, decrypt), list(np.frombuffer(bytes(sk), "<u4")))


def test_misty1_layouts():
    from ciphergrid.algorithms import misty1

    for key in _keys(16):
        ek = misty1.expanded_key(key)
        rk = misty1.round_keys(ek)
        for decrypt in (False, True):
            _same(misty1.CIPHER.expand(key, decrypt, "bitsliced"), _bits(rk, 16))
            _same(misty1.CIPHER.expand(key, decrypt, "rounds"), rk)
            _same(misty1.CIPHER.expand(key, decrypt), ek)


def test_misty1_expanded_key():
    from ciphergrid.algorithms import misty1

    for key in _keys(16, 200):
        assert misty1.expanded_key_fast(key) == misty1.expanded_key(key)


def _old_present_expand(key: bytes, decrypt: bool, layout) -> list[int]:
    """PRESENT's expand() before the one-shot work on it (the reference for its layouts)."""
    from ciphergrid.algorithms import present as p

    lop3 = {"bitsliced-lop3": False, "bitsliced-lop3x": True, "bitsliced-lop3o": "all"}
    if layout == "bitsliced-t" or (layout in lop3 and decrypt):
        return _old_present_expand(key, decrypt, "bitsliced") + list(p.TRANSPOSE_MASKS)
    rk = p.round_keys(key)
    if layout in lop3:
        bits = p.lop3_masks(p.key_bits(rk), lop3[layout])
        return [0xFFFFFFFF if b else 0 for b in bits] + list(p.TRANSPOSE_MASKS)
    if decrypt:
        rk.reverse()
    plain = [w for k in rk for w in (k >> 32, k & 0xFFFFFFFF)]
    if layout is None:
        return plain
    return _bits(rk, 64) + plain


@pytest.mark.parametrize("n", [10, 16])
def test_present_layouts(n):
    from ciphergrid.algorithms import present

    for key in _keys(n, 12):
        assert present.round_keys_fast(key) == present.round_keys(key)
        for layout in present.PRESENT.LAYOUTS:
            for decrypt in (False, True):
                _same(present.CIPHER.expand(key, decrypt, layout),
                      _old_present_expand(key, decrypt, layout))
    with pytest.raises(ValueError):
        present.CIPHER.expand(bytes(n), False, "no-such-layout")


def _old_des_expand(key: bytes, decrypt: bool, layout) -> list[int]:
    """DES's expand() before the one-shot work on it: the plan's gathers on mask words."""
    from ciphergrid.algorithms import des

    plan = des._plan(len(key), decrypt, layout)
    bits = np.unpackbits(np.frombuffer(key + b"\0", dtype=np.uint8))
    masks = layout in ("bitsliced", "lop3")
    src = np.negative(bits.astype(np.uint32)) if masks else bits
    out = src[plan[0]]
    for row in plan[1:]:
        out ^= src[row]
    if not masks:
        out = np.packbits(out.reshape(-1, 32), axis=1).view(">u4").reshape(-1)
    return [int(w) for w in out]


@pytest.mark.parametrize("n", [8, 16, 24])
def test_des_layouts(n):
    from ciphergrid.algorithms import des

    for key in _keys(n, 6):
        for layout in (None, "sp", "bitsliced", "lop3"):
            for decrypt in (False, True):
                _same(des.CIPHER.expand(key, decrypt, layout),
                      _old_des_expand(key, decrypt, layout))


def test_bit_masks():
    """One mask per bit of each word, bit 0 first (the bitsliced layouts), the word's shape
    not mattering; the byte table's rows are the bytes' masks."""
    from ciphergrid.algorithms.base import bit_masks, byte_mask_table

    rows = [[RNG.getrandbits(32) for _ in range(4)] for _ in range(15)]
    words = np.array(rows + [[0, 1, 1 << 31, 0xFFFFFFFF]], dtype=np.uint32)
    _same(bit_masks(words), _bits(words.reshape(-1).tolist(), 32))
    _same(bit_masks(words.reshape(-1)), _bits(words.reshape(-1).tolist(), 32))
    assert byte_mask_table().tolist() == [_bits([b], 8) for b in range(256)]
