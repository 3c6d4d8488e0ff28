"""The reference itself (ciphergrid.testing.oracle): its modes composed over a block cipher's ECB
agree with pyca/cryptography wherever pyca has the mode, so they can stand in for ciphers pyca
lacks; both agree with the standards' vectors through the KAT tests."""

from __future__ import annotations

import os

import pytest

from ciphergrid import registry
from ciphergrid.testing import oracle


def _key(spec):
    k = os.urandom(spec.key_len)
    if spec.mode.key_count == 2:
        k = k[: spec.key_size] + bytes(b ^ 0x5A for b in k[: spec.key_size])
    return k


CASES = [("aes-128-ctr", b"\xff" * 16, 100, {}),                  # the counter wraps
         ("aes-192-cbc", None, 64, {}), ("aes-256-ecb", None, 48, {}),
         ("aes-128-xts", None, 16 * 7 + 5, {}),                   # ciphertext stealing
         ("aes-256-xts", None, 512 * 3 + 40, {"sector_size": 512, "start_sector": 2**64 - 2}),
         ("aes-128-xts", None, 100 * 3 + 17, {"sector_size": 100, "start_sector": 9})]


@pytest.mark.parametrize("name,iv,n,kw", CASES)
def test_composition_matches_pyca(name, iv, n, kw):
    spec = registry.lookup(name)
    key = _key(spec)
    if iv is None and spec.iv_len and "sector_size" not in kw:
        iv = os.urandom(spec.iv_len)
    data = os.urandom(n)
    for enc in (True, False):
        want = oracle.crypt(spec, key, iv, data, enc, **kw)
        if kw:
            got = b"".join(oracle._composed(spec, key, tw, data[a:b], enc, None, None)
                           for tw, a, b in oracle._units(None, n, kw["sector_size"], kw["start_sector"]))
        else:
            got = oracle._composed(spec, key, iv, data, enc, None, None)
        assert got == want, (name, enc)


def test_padding_and_source():
    key, iv = os.urandom(16), os.urandom(16)
    ct = oracle.encrypt(b"abc", "aes-128-cbc", key, iv, padding="pkcs7")
    assert len(ct) == 16 and oracle.decrypt(ct, "aes-128-cbc", key, iv, padding="pkcs7") == b"abc"
    assert oracle.source("aes-128-xts").startswith("pyca/cryptography")
