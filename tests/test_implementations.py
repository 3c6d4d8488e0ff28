"""Every kernel implementation of AES (ciphers/aes.py ``implementations``: the ablation steps, the
alternatives, "ct-c") passes the known answers and matches OpenSSL, on every OpenCL/CUDA device.

The default ("fast") runs in every other test file and "ct" in test_constant_time.py; here each
other implementation is selected with ``implementation=`` and checked on:

* the known answers of FIPS 197 Appendix C and NIST SP 800-38A Appendix F (ECB, CBC, CTR; AES-128,
  -192, -256; both directions: test_constant_time.kat_failures, from ciphergrid/vectors/aes.json);
* every registered AES name against pyca/cryptography on random keys and IVs, lengths around one
  work-item's batch and over a persistent grid's worth of blocks, both directions; CTR counters that
  wrap 2^64 and 2^128; XTS in sector mode.

On CPU OpenCL devices (conftest.lean) the checks are lean: AES-128 only, the known answers of ECB
(both directions) and CTR, and against OpenSSL AES-128-CTR and -XTS (both directions, sector mode):
the variants differ in how a round is computed, not in the number of rounds or the modes (modes.cl
is shared), and their time there is compiling a kernel per mode, direction and key size; GPUs run
every key size and mode.
"""

from __future__ import annotations

import pytest

from ciphergrid import registry
from conftest import lean
from test_constant_time import CT_DEVICES, compare_cases, kat_failures

AES = registry.lookup("aes-128-ecb").algorithm
COVERED_ELSEWHERE = ("fast", "ct")
IMPLS = [i for i in AES.implementations if i not in COVERED_ELSEWHERE]
AES_NAMES = [n for n in registry.names() if n.startswith("aes-")]
LENGTHS = [0, 17, 33 * 16 + 1, 257 * 16 + 3, 100000, (2 << 20) + 3]
needs_device = pytest.mark.skipif(not CT_DEVICES, reason="no OpenCL/CUDA device")


def _lengths(mode: str) -> list[int]:
    if mode in ("ecb", "cbc"):
        return sorted({n - n % 16 for n in LENGTHS})
    if mode == "xts":
        return [n for n in LENGTHS if n >= 16]
    return LENGTHS


def test_every_implementation_is_covered():
    assert "fast" in AES.implementations and "ct" in AES.implementations
    assert len(IMPLS) == len(AES.implementations) - len(COVERED_ELSEWHERE)


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_known_answers(kdev, impl):
    if lean(kdev):   # (ECB both ways and CTR: CBC decryption is ECB's block function + modes.cl)
        bad = kat_failures(kdev, 128, ("ecb", "ctr"), implementation=impl)
    else:
        bad = kat_failures(kdev, implementation=impl)
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)


@needs_device
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kdev", CT_DEVICES)
def test_matches_openssl(kdev, impl, rng, ref, diff):
    bad = []
    names = ["aes-128-ctr", "aes-128-xts"] if lean(kdev) else AES_NAMES
    for name in names:
        mode = registry.lookup(name).mode.name
        cases = [(f"{n} bytes", rng.data(n), rng.key(name), rng.iv(name), {}) for n in _lengths(mode)]
        if mode == "ctr":
            hi, lo = rng.getrandbits(64), (1 << 64) - rng.randrange(1, 40)
            cases.append(("counter wraps 2^64", rng.data(33 * 16 + 1), rng.key(name),
                          ((hi << 64) | lo).to_bytes(16, "big"), {}))
            cases.append(("counter wraps 2^128", rng.data(100000), rng.key(name),
                          ((1 << 128) - rng.randrange(1, 40)).to_bytes(16, "big"), {}))
        if mode == "xts":
            cases.append(("sector_size=512, start_sector=7", rng.data(257 * 16 + 3), rng.key(name),
                          None, {"sector_size": 512, "start_sector": 7}))
        bad += [f"{name} {b}" for b in compare_cases(name, cases, ref, diff, device=kdev,
                                                      implementation=impl)]
    assert not bad, f"{impl} on {kdev}:\n  " + "\n  ".join(bad)
