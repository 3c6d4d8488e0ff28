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
from ciphergrid import registry

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

_PT4 = bytes.fromhex(
    "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710")
_KEYS = {
    128: bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"),
    192: bytes.fromhex("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b"),
    256: bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"),
}
_CBC_IV = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
_CTR_IV = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")

# (source, mode, bits, key, iv, plaintext, ciphertext)
KAT = [
    # FIPS 197 (2001), Appendix C: example vectors C.1, C.2, C.3
    ("FIPS 197 C.1", "ecb", 128, bytes(range(16)), None,
     bytes.fromhex("00112233445566778899aabbccddeeff"), bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a")),
    ("FIPS 197 C.2", "ecb", 192, bytes(range(24)), None,
     bytes.fromhex("00112233445566778899aabbccddeeff"), bytes.fromhex("dda97ca4864cdfe06eaf70a0ec0d7191")),
    ("FIPS 197 C.3", "ecb", 256, bytes(range(32)), None,
     bytes.fromhex("00112233445566778899aabbccddeeff"), bytes.fromhex("8ea2b7ca516745bfeafc49904b496089")),
    # NIST SP 800-38A (2001), Appendix F: F.1.1/F.1.3/F.1.5 (ECB), F.2.1/F.2.3/F.2.5 (CBC),
    # F.5.1/F.5.3/F.5.5 (CTR)
    ("SP 800-38A F.1.1", "ecb", 128, _KEYS[128], None, _PT4, bytes.fromhex(
        "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf"
        "43b1cd7f598ece23881b00e3ed030688 7b0c785e27e8ad3f8223207104725dd4")),
    ("SP 800-38A F.1.3", "ecb", 192, _KEYS[192], None, _PT4, bytes.fromhex(
        "bd334f1d6e45f25ff712a214571fa5cc 974104846d0ad3ad7734ecb3ecee4eef"
        "ef7afd2270e2e60adce0ba2face6444e 9a4b41ba738d6c72fb16691603c18e0e")),
    ("SP 800-38A F.1.5", "ecb", 256, _KEYS[256], None, _PT4, bytes.fromhex(
        "f3eed1bdb5d2a03c064b5a7e3db181f8 591ccb10d410ed26dc5ba74a31362870"
        "b6ed21b99ca6f4f9f153e7b1beafed1d 23304b7a39f9f3ff067d8d8f9e24ecc7")),
    ("SP 800-38A F.2.1", "cbc", 128, _KEYS[128], _CBC_IV, _PT4, bytes.fromhex(
        "7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2"
        "73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7")),
    ("SP 800-38A F.2.3", "cbc", 192, _KEYS[192], _CBC_IV, _PT4, bytes.fromhex(
        "4f021db243bc633d7178183a9fa071e8 b4d9ada9ad7dedf4e5e738763f69145a"
        "571b242012fb7ae07fa9baac3df102e0 08b0e27988598881d920a9e64f5615cd")),
    ("SP 800-38A F.2.5", "cbc", 256, _KEYS[256], _CBC_IV, _PT4, bytes.fromhex(
        "f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d"
        "39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b")),
    ("SP 800-38A F.5.1", "ctr", 128, _KEYS[128], _CTR_IV, _PT4, bytes.fromhex(
        "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff"
        "5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee")),
    ("SP 800-38A F.5.3", "ctr", 192, _KEYS[192], _CTR_IV, _PT4, bytes.fromhex(
        "1abc932417521ca24f2b0459fe7e6e0b 090339ec0aa6faefd5ccc2c6f4ce8e94"
        "1e36b26bd1ebc670d1bd1d665620abf7 4f78a7f6d29809585a97daec58c6b050")),
    ("SP 800-38A F.5.5", "ctr", 256, _KEYS[256], _CTR_IV, _PT4, bytes.fromhex(
        "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5"
        "2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6")),
]


def kat_failures(device: str, bits: int | None = None, **kw) -> list[str]:
    """The KAT vectors (of one key size, or all) that ``encrypt``/``decrypt(..., **kw)`` get wrong."""
    bad = []
    for source, mode, b, key, iv, pt, ct in KAT:
        if bits is not None and b != bits:
            continue
        name = f"aes-{b}-{mode}"
        got = ciphergrid.encrypt(pt, name, key, iv, device=device, **kw)
        if got != ct:
            bad.append(f"{source} encrypt: {got.hex()} != {ct.hex()}")
        got = ciphergrid.decrypt(ct, name, key, iv, device=device, **kw)
        if got != pt:
            bad.append(f"{source} decrypt: {got.hex()} != {pt.hex()}")
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
