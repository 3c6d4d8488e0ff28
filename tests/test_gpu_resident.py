"""GPU-resident data: CuPy arrays and CUDA DLPack tensors in, the same type out, no host copies.
Runs where CuPy and a CUDA device are present (the GPU suite); skipped, with the reason, elsewhere."""
import os

import numpy as np
import pytest

import ciphergrid
from ciphergrid.testing import oracle

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
if not any(d.runtime == "cuda" for d in ciphergrid.devices()):
    pytest.skip("no CUDA device present", allow_module_level=True)


CASES = [("aes-128-ctr", 1 << 20), ("aes-128-ctr", 100003), ("aes-256-xts", 4096 * 7 + 9),
         ("aes-192-ecb", 4096), ("aes-256-cbc", 65536)]


@pytest.mark.gpu
@pytest.mark.parametrize("name,n", CASES)
def test_cupy_out_of_place_and_in_place(name, n):
    spec = ciphergrid.registry.lookup(name)
    key = os.urandom(spec.key_len)
    iv = os.urandom(spec.iv_len) if spec.iv_len else None
    host = np.frombuffer(os.urandom(n), dtype=np.uint8)
    ref = oracle.encrypt(host.tobytes(), name, key, iv)
    d = cupy.asarray(host)
    ct = ciphergrid.encrypt(d, name, key, iv)
    assert isinstance(ct, cupy.ndarray) and cupy.asnumpy(ct).tobytes() == ref
    assert cupy.asnumpy(d).tobytes() == host.tobytes()  # input untouched
    ciphergrid.decrypt(ct, name, key, iv, out=ct)       # in place
    assert cupy.asnumpy(ct).tobytes() == host.tobytes()


@pytest.mark.gpu
def test_torch_cuda_tensor_same_type_out():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    key, iv = os.urandom(32), os.urandom(16)
    t = torch.randint(0, 256, (4096, 33), dtype=torch.uint8, device="cuda")
    ct = ciphergrid.encrypt(t, "aes-256-ctr", key, iv)
    assert isinstance(ct, torch.Tensor) and ct.is_cuda and ct.shape == t.shape
    assert ct.cpu().numpy().tobytes() == oracle.encrypt(t.cpu().numpy().tobytes(), "aes-256-ctr", key, iv)
    back = ciphergrid.decrypt(ct, "aes-256-ctr", key, iv)
    assert torch.equal(back, t)
