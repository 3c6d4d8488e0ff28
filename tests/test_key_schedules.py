"""The host key schedules a one-shot call runs for every fresh key (issue 50: ``expand`` is on the
path of every call), against the readable schedules each cipher module keeps beside them (which
the cipher's own tests check against its RFC model): the same words for random keys, every key
size and direction, with libcrypto's schedule where the module takes it and without it.  And the
host block functions XTS one-shots take their tweaks from, against ``reference_ecb``."""

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
