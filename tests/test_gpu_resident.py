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


CONTEXT_CASES = [("aes-128-ctr", (4096, 17, 0, 65536, 5, 1000)), ("des-ede3-ctr", (64, 3, 4096, 9)),
                 ("camellia-256-cbc", (4096, 16, 0, 32768)), ("aes-256-xts", (8192, 4096, 0, 12288)),
                 ("present-80-ecb", (8, 4096, 64)), ("hight-cbc", (4096, 8, 0, 32768))]


@pytest.mark.gpu
@pytest.mark.parametrize("name,pieces", CONTEXT_CASES)
@pytest.mark.parametrize("encrypt", [True, False])
def test_cupy_pieces_through_a_context(name, pieces, encrypt):
    """A reused Cipher context takes GPU-resident pieces (update, update_into a GPU buffer, in
    place), any split the mode releases whole, CTR mid-block too: the bytes of one host call."""
    key, iv, opts = oracle.random_inputs(name, os.urandom, 4096)
    host = np.frombuffer(os.urandom(sum(pieces)), dtype=np.uint8)
    want = oracle.crypt(name, key, iv, host.tobytes(), encrypt, **opts)
    with ciphergrid.Cipher(name, key, iv, allow_weak=True, **opts) as c:
        ctx = c.encryptor() if encrypt else c.decryptor()
        got, at = [], 0
        for i, n in enumerate(pieces):
            d = cupy.asarray(host[at:at + n])
            at += n
            if i % 3 == 0:
                out = ctx.update(d)
                assert isinstance(out, cupy.ndarray)
            elif i % 3 == 1:
                buf = cupy.empty(n + 16, dtype=cupy.uint8)
                assert ctx.update_into(d, buf) == n
                out = buf[:n]
            else:
                assert ctx.update_into(d, d) == n        # in place
                out = d
            got.append(cupy.asnumpy(out).tobytes())
        assert ctx.finalize() == b""
    assert b"".join(got) == want


@pytest.mark.gpu
@pytest.mark.parametrize("encrypt", [True, False])
def test_cbc_context_between_gpu_and_host_pieces(encrypt):
    """CBC's chaining value after a GPU piece (kept on the device: decryption's last input
    block, encryption's last output block) reaches the next piece, GPU-resident or host, in
    place or not."""
    name = "aes-128-cbc"
    key, iv = os.urandom(16), os.urandom(16)
    host = os.urandom(4096 * 5)
    want = oracle.crypt(name, key, iv, host, encrypt)
    with ciphergrid.Cipher(name, key, iv) as c:
        ctx = c.encryptor() if encrypt else c.decryptor()
        got = []
        for i in range(5):
            piece = host[4096 * i: 4096 * (i + 1)]
            if i == 2:
                got.append(ctx.update(piece))                  # a host piece between GPU ones
                continue
            d = cupy.asarray(np.frombuffer(piece, dtype=np.uint8))
            if i % 2:
                assert ctx.update_into(d, d) == 4096           # in place
                got.append(cupy.asnumpy(d).tobytes())
            else:
                got.append(cupy.asnumpy(ctx.update(d)).tobytes())
        assert ctx.finalize() == b""
    assert b"".join(got) == want


@pytest.mark.gpu
@pytest.mark.parametrize("encrypt", [True, False])
def test_cbc_context_pieces_on_alternating_streams(encrypt):
    """CBC pieces of one context on two non-blocking streams in turn, each stream kept busy
    first: the chain kept on the device is read only after the other stream's kernel wrote
    it (the one-shot bytes)."""
    name = "aes-128-cbc"
    key, iv = os.urandom(16), os.urandom(16)
    n = 1 << 20
    host = os.urandom(4 * n)
    want = oracle.crypt(name, key, iv, host, encrypt)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    with ciphergrid.Cipher(name, key, iv) as c:
        ctx = c.encryptor() if encrypt else c.decryptor()
        outs = []
        for i in range(4):
            with streams[i % 2]:
                d = cupy.asarray(np.frombuffer(host[i * n:(i + 1) * n], dtype=np.uint8))
                outs.append(ctx.update(d))
        for s in streams:
            s.synchronize()
        assert ctx.finalize() == b""
    assert b"".join(cupy.asnumpy(o).tobytes() for o in outs) == want


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["aes-128-ctr", "aes-128-cbc", "aes-256-xts"])
def test_context_closed_while_its_stream_is_busy(name):
    """A context's CuPy piece queued behind a busy stream (returned at once) and the Cipher
    closed before the stream is done: the keys' zeroing waits on the device for the piece, whose
    output is the one-shot's once the stream is done."""
    spin = cupy.RawKernel(r'''extern "C" __global__ void spin(long long n) {
        long long t0 = clock64(); while (clock64() - t0 < n) { } }''', "spin")
    key, iv, opts = oracle.random_inputs(name, os.urandom, 4096)
    host = os.urandom(1 << 20)
    want = oracle.crypt(name, key, iv, host, True, **opts)
    x = cupy.asarray(np.frombuffer(host, dtype=np.uint8))
    with ciphergrid.Cipher(name, key, iv, **opts) as c:
        ctx = c.encryptor()
        cupy.cuda.get_current_stream().synchronize()
        spin((1,), (1,), (np.int64(200_000_000),))
        y = ctx.update(x)
    cupy.cuda.get_current_stream().synchronize()
    assert cupy.asnumpy(y).tobytes() == want


@pytest.mark.gpu
def test_cupy_piece_that_is_not_whole_blocks_refused():
    c = ciphergrid.Cipher("aes-128-cbc", bytes(16), bytes(16))
    with pytest.raises(ciphergrid.InvalidArgument, match="GPU-resident piece"):
        c.encryptor().update(cupy.zeros(17, dtype=cupy.uint8))


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


AEAD_CASES = [("aes-128-gcm", 1 << 20), ("aes-256-gcm", 100003), ("chacha20-poly1305", 65537),
              ("ascon-aead128", 4099), ("aegis-128l", 70001), ("aes-128-gcm", 0)]


@pytest.mark.gpu
@pytest.mark.parametrize("name,n", AEAD_CASES)
def test_cupy_aead_resident(name, n):
    """AEADs on GPU-resident data: CuPy in, CuPy out (ciphertext || tag), the same bytes as the
    host path (itself checked against pyca and the plain-Python models); a wrong tag raises and
    zeroes out=, the input untouched."""
    spec = ciphergrid.aeads.spec(name)
    key = os.urandom(spec.aead.key_length(name))
    nonce = os.urandom(spec.aead.default_nonce_length)
    aad = os.urandom(37)
    host = np.frombuffer(os.urandom(n), dtype=np.uint8)
    ref = ciphergrid.encrypt(host.tobytes(), name, key, nonce=nonce, aad=aad)
    if name in ("aes-128-gcm", "aes-256-gcm"):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        assert ref == AESGCM(key).encrypt(nonce, host.tobytes(), aad)
    d = cupy.asarray(host)
    ct = ciphergrid.encrypt(d, name, key, nonce=nonce, aad=aad)
    assert isinstance(ct, cupy.ndarray) and ct.nbytes == n + 16
    assert cupy.asnumpy(ct).tobytes() == ref
    assert cupy.asnumpy(d).tobytes() == host.tobytes()
    out = cupy.empty(n, dtype=cupy.uint8)
    assert ciphergrid.decrypt(ct, name, key, nonce=nonce, aad=aad, out=out) is out
    assert cupy.asnumpy(out).tobytes() == host.tobytes()
    bad = ct.copy()
    bad[-1] ^= 1
    out.fill(7)
    with pytest.raises(ciphergrid.InvalidTag):
        ciphergrid.decrypt(bad, name, key, nonce=nonce, aad=aad, out=out)
    assert not cupy.asnumpy(out).any()
    # on another engine than the data's device: through host copies, the same bytes
    back = ciphergrid.decrypt(ct, name, key, nonce=nonce, aad=aad, device="native"
                              if spec.capability("openssl") else "cpu")
    assert isinstance(back, cupy.ndarray) and cupy.asnumpy(back).tobytes() == host.tobytes()
