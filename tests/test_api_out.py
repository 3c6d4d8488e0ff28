"""encrypt/decrypt(out=...): into a caller's buffer, in place, and the errors."""
import os

import numpy as np
import pytest

import ciphergrid


@pytest.mark.parametrize("name", ["aes-128-ctr", "aes-256-xts", "aes-192-ecb", "aes-128-cbc"])
def test_out_buffer_and_in_place(device, name, ref):
    spec = ciphergrid.registry.lookup(name)
    key = os.urandom(spec.key_len)
    iv = os.urandom(spec.iv_len) if spec.iv_len else None
    n = 4096 * 3 + (0 if spec.mode.name in ("ecb", "cbc") else 5)
    data = np.frombuffer(os.urandom(n), dtype=np.uint8).copy()
    want = ref.encrypt(data.tobytes(), name, key, iv)

    out = np.empty_like(data)
    assert ciphergrid.encrypt(data, name, key, iv, device=device, out=out) is out
    assert out.tobytes() == want
    buf = bytearray(n)
    ciphergrid.encrypt(data.tobytes(), name, key, iv, device=device, out=buf)
    assert bytes(buf) == want
    inplace = data.copy()
    ciphergrid.encrypt(inplace, name, key, iv, device=device, out=inplace)
    assert inplace.tobytes() == want
    ciphergrid.decrypt(inplace, name, key, iv, device=device, out=inplace)
    assert inplace.tobytes() == data.tobytes()


def test_out_errors():
    key, iv = os.urandom(16), os.urandom(16)
    with pytest.raises(ciphergrid.InvalidArgument, match="writable contiguous buffer of 32 bytes"):
        ciphergrid.encrypt(bytes(32), "aes-128-ctr", key, iv, out=bytearray(31))
    with pytest.raises(ciphergrid.InvalidArgument, match="writable"):
        ciphergrid.encrypt(bytes(32), "aes-128-ctr", key, iv, out=bytes(32))
    with pytest.raises(ciphergrid.InvalidArgument, match="padding"):
        ciphergrid.encrypt(bytes(32), "aes-128-cbc", key, iv, padding="pkcs7", out=bytearray(48))
