"""The constant-time AES kernel (implementation "ct", kernels/aes_bs.cl: bitsliced, table-free).

* the kernel source holds no table (no program-scope constant table, no shared memory);
* known answers: FIPS 197 Appendix C (one block, AES-128/192/256) and NIST SP 800-38A Appendix F
  (ECB, CBC, CTR, AES-128/192/256), both directions;
* every registered AES name against pyca/cryptography on random keys and IVs, lengths around the
  32-block batch of a work-item, in both directions (CBC encryption is serial and runs on the host
  engine, CBC decryption on the device); XTS also in sector mode; CTR with counters that wrap
  2^64 and 2^128.

Devices: every OpenCL/CUDA device of ``ciphergrid.devices()`` (honouring CIPHERGRID_TEST_DEVICES):
PoCL in CI, and a GPU where one is present.
"""

from __future__ import annotations

from importlib import resources

import pytest

import ciphergrid
from ciphergrid import registry, vectors

try:
    from conftest import all_devices
except ImportError:  # pragma: no cover - run outside pytest's rootdir conftest
    def all_devices():
        return tuple(ciphergrid.devices())


def _ct_devices():
    return [pytest.param(d.spec, id=d.spec, marks=[pytest.mark.gpu] if d.kind == "gpu" else [])
            for d in all_devices() if d.runtime in ("opencl", "cuda")]


CT_DEVICES = _ct_devices()
AES_NAMES = [n for n in registry.names() if n.startswith("aes-")]
needs_device = pytest.mark.skipif(not CT_DEVICES, reason="no OpenCL/CUDA device")


def _kernel_source() -> str:
    return resources.files("ciphergrid").joinpath("kernels", "aes_bs.cl").read_text()


# --------------------------------------------------------------------------- the source

def test_ct_is_registered():
    im = registry.lookup("aes-128-ctr").algorithm.implementation("ct")
    assert im.file == "aes_bs.cl"
    assert im.batch == 32


def test_kernel_has_no_table():
    src = _kernel_source()
    for word in ("CONST_TABLE", "LOCAL_VAR", "CONST_PTR", "LOCAL_PTR", "__constant", "__local",
                 "__shared__", "__constant__"):
        assert word not in src, f"aes_bs.cl mentions {word}: the constant-time kernel has no table"


def test_bitsliced_key_layout():
    """The "bitsliced" schedule: one 0 / 0xffffffff mask per bit of the usual round keys, then
    those round keys."""
    import numpy as np

    cipher = registry.lookup("aes-128-ecb").algorithm
    for key in (bytes(range(16)), bytes(range(24)), bytes(range(32))):
        words = 4 * (len(key) // 4 + 7)
        for decrypt in (False, True):
            ek = cipher.expand(key, decrypt)
            bs = cipher.expand(key, decrypt, layout="bitsliced")
            assert bs.dtype == np.dtype("<u4") and bs.size == 33 * words
            bits = (ek[:, None] >> np.arange(32, dtype=np.uint32)) & 1
            masks = np.where(bits.reshape(-1) == 1, 0xFFFFFFFF, 0).astype("<u4")
            assert np.array_equal(bs[: 32 * words], masks)
            assert np.array_equal(bs[32 * words:], ek)  # then the plain schedule (CTR tiles)


# --------------------------------------------------------------------------- known answers

# FIPS 197 Appendix C (one block each, AES-128/192/256) and NIST SP 800-38A Appendix F (ECB, CBC,
# CTR; AES-128/192/256): the records of ciphergrid/vectors/aes.json from those two documents
KAT_SOURCES = ("FIPS 197 ", "NIST SP 800-38A ")


def kat_vectors() -> list:
    vs = [v for v in vectors.load() if v.cipher.startswith("aes-") and v.source.startswith(KAT_SOURCES)]
    assert len(vs) == 12, f"expected the 3 FIPS 197 and 9 SP 800-38A AES vectors, found {len(vs)}"
    return vs


def kat_failures(device: str, bits: int | None = None, modes=None, **kw) -> list[str]:
    """The KAT vectors (of one key size, or all; of some modes, or all) that
    ``encrypt``/``decrypt(..., **kw)`` get wrong."""
    bad = []
    for v in kat_vectors():
        if bits is not None and 8 * registry.lookup(v.cipher).key_size != bits:
            continue
        if modes is not None and registry.lookup(v.cipher).mode.name not in modes:
            continue
        got = ciphergrid.encrypt(v.plaintext, v.cipher, v.key, v.iv, device=device, **kw)
        if got != v.ciphertext:
            bad.append(f"{v.source} encrypt: {got.hex()} != {v.ciphertext.hex()}")
        got = ciphergrid.decrypt(v.ciphertext, v.cipher, v.key, v.iv, device=device, **kw)
        if got != v.plaintext:
            bad.append(f"{v.source} decrypt: {got.hex()} != {v.plaintext.hex()}")
    return bad


@needs_device
@pytest.mark.parametrize("bits", [128, 192, 256])
@pytest.mark.parametrize("ct_device", CT_DEVICES)
def test_known_answers(ct_device, bits):
    bad = kat_failures(ct_device, bits, constant_time=True)
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- against OpenSSL

# around the 32-block batch of one work-item: partial batches, one full batch, one block over,
# many batches with a partial last one, a larger message, and one over 2 MiB (on PoCL the persistent
# grid holds 2048 work-items x 32 blocks = 1 MiB, so work-items take more than one step)
LENGTHS = [0, 1, 5, 15, 16, 17, 31 * 16 + 5, 32 * 16, 33 * 16 + 1, 257 * 16 + 3, 100000, (2 << 20) + 3]


def _lengths(mode: str) -> list[int]:
    if mode in ("ecb", "cbc"):  # whole blocks only
        return sorted({n - n % 16 for n in LENGTHS})
    if mode == "xts":
        return [n for n in LENGTHS if n >= 16]
    return LENGTHS


@needs_device
@pytest.mark.parametrize("name", AES_NAMES)
@pytest.mark.parametrize("ct_device", CT_DEVICES)
def test_matches_openssl(ct_device, name, rng, ref, diff):
    mode = registry.lookup(name).mode.name
    cases = []  # (what, data, key, iv, extra keyword arguments)
    for n in _lengths(mode):
        cases.append((f"{n} bytes", rng.data(n), rng.key(name), rng.iv(name), {}))
    if mode == "ctr":
        # counters that carry into the high 64 bits, and that wrap 2^128 inside the message
        for n in (33 * 16 + 1, 100000):
            hi = rng.getrandbits(64)
            lo = (1 << 64) - rng.randrange(1, 40)
            cases.append((f"{n} bytes, counter wraps 2^64", rng.data(n), rng.key(name),
                          ((hi << 64) | lo).to_bytes(16, "big"), {}))
            iv = (1 << 128) - rng.randrange(1, 40)
            cases.append((f"{n} bytes, counter wraps 2^128", rng.data(n), rng.key(name),
                          iv.to_bytes(16, "big"), {}))
    if mode == "xts":
        for n in (512, 33 * 16 + 1, 257 * 16 + 3, 100000):
            cases.append((f"{n} bytes, sector_size=512, start_sector=7", rng.data(n), rng.key(name),
                          None, {"sector_size": 512, "start_sector": 7}))

    bad = compare_cases(name, cases, ref, diff, device=ct_device, constant_time=True)
    assert not bad, f"{name} on {ct_device}, constant_time=True:\n  " + "\n  ".join(bad)


def compare_cases(name, cases, ref, diff, **options) -> list[str]:
    """Each case (what, data, key, iv, extra keyword arguments) encrypted and decrypted with
    ``options`` against the reference; the problems found, every case reported."""
    bad = []
    for what, data, key, iv, kw in cases:
        for encrypt in (True, False):
            fn = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
            want = ref.crypt(encrypt, data, name, key, iv, **kw)
            try:
                got = fn(data, name, key, iv, **options, **kw)
            except Exception as e:  # report every case, not just the first
                bad.append(f"{'enc' if encrypt else 'dec'} {what}: {type(e).__name__}: {e}")
                continue
            if got != want:
                bad.append(f"{'enc' if encrypt else 'dec'} {what}: {diff(got, want)}")
    return bad


@needs_device
@pytest.mark.parametrize("name", [n for n in AES_NAMES if registry.lookup(n).mode.name == "ctr"])
@pytest.mark.parametrize("ct_device", CT_DEVICES)
def test_ctr_pieces(ct_device, name, rng, ref):
    """CTR in pieces (each a launch that starts inside a counter tile of aes_bs.cl, or spans
    several) gives the one-shot key stream: a counter near 2^64 so that tiles carry."""
    key = rng.key(name)
    iv = ((rng.getrandbits(64) << 64) | ((1 << 64) - 8192 * 3 - rng.randrange(1, 5000))).to_bytes(16, "big")
    pieces = [1, 15, 16, 17, 4096, 8192 * 16, 5, 8192 * 16 + 3, 100000, 1]
    data = rng.data(sum(pieces))
    enc = ciphergrid.Cipher(name, key, iv, device=ct_device, constant_time=True).encryptor()
    out, pos = [], 0
    for n in pieces:
        out.append(enc.update(data[pos:pos + n]))
        pos += n
    out.append(enc.finalize())
    assert b"".join(out) == ref.crypt(True, data, name, key, iv)
