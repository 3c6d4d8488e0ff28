"""The encryption policy of a cipher (algorithms/base.py UsePolicy) applied by the API and the
CLI: 64-bit block ciphers warn once; a refusal (2-key TDEA...) and a refusing block limit (3-key
TDEA: 2^20 blocks) raise unless allow_weak / --allow-weak, counted over one call or one streaming
context; decryption is never refused.  The TDEA rules themselves are tested with DES."""

from __future__ import annotations

import warnings

import pytest

import ciphergrid
from ciphergrid import registry, request
from ciphergrid.algorithms.base import UsePolicy

from test_cli import cli

NAME = "present-80-ctr"
pytestmark = pytest.mark.policy


@pytest.fixture
def strict(monkeypatch):
    """PRESENT made to behave like 3-key TDEA with a limit of 4 blocks, and a key it refuses."""
    alg = registry.lookup(NAME).algorithm

    def policy(key):
        if key == bytes(10):
            return UsePolicy(refusal="an all-zero key is refused here")
        return UsePolicy(warning="a test warning", block_limit=4, over_limit_refused=True)

    monkeypatch.setattr(alg, "encryption_policy", policy)
    monkeypatch.setattr(request, "_warned", set())
    return alg


def test_64_bit_block_cipher_warns_once(monkeypatch):
    monkeypatch.setattr(request, "_warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            ciphergrid.encrypt(b"x" * 16, NAME, bytes(range(10)), bytes(8))
        ciphergrid.decrypt(b"x" * 16, NAME, bytes(range(10)), bytes(8))
    msgs = [str(x.message) for x in w if x.category is ciphergrid.WeakCipherWarning]
    assert len(msgs) == 1 and "64-bit blocks" in msgs[0]


def test_refusal_and_allow_weak(strict):
    with pytest.raises(ciphergrid.InvalidKey, match="refused here.*allow_weak"):
        ciphergrid.encrypt(b"x" * 8, NAME, bytes(10), bytes(8))
    with pytest.raises(ciphergrid.InvalidKey):
        ciphergrid.Cipher(NAME, bytes(10), bytes(8)).encryptor()
    ciphergrid.decrypt(b"x" * 8, NAME, bytes(10), bytes(8))  # old data is always readable
    with pytest.warns(ciphergrid.WeakCipherWarning, match="allowed by allow_weak"):
        ciphergrid.encrypt(b"x" * 8, NAME, bytes(10), bytes(8), allow_weak=True)


def test_block_limit_per_call_and_per_context(strict):
    key = bytes(range(10))
    with pytest.warns(ciphergrid.WeakCipherWarning):
        assert len(ciphergrid.encrypt(b"x" * 32, NAME, key, bytes(8))) == 32  # 4 blocks: allowed
    with pytest.raises(ciphergrid.InvalidArgument, match="more than 4 blocks"):
        ciphergrid.encrypt(b"x" * 33, NAME, key, bytes(8))
    ctx = ciphergrid.Cipher(NAME, key, bytes(8)).encryptor()
    ctx.update(b"x" * 20)
    ctx.update(b"x" * 12)
    with pytest.raises(ciphergrid.InvalidArgument, match="more than 4 blocks"):
        ctx.update(b"x")
    ciphergrid.encrypt(b"x" * 64, NAME, key, bytes(8), allow_weak=True)
    ciphergrid.decrypt(b"x" * 64, NAME, key, bytes(8))


def test_cli_warns_once_on_stderr(tmp_path):
    """The library's WeakCipherWarning reaches the CLI's stderr as one "warning:" line; decryption
    does not warn; --allow-weak is accepted."""
    src, out, back = tmp_path / "in", tmp_path / "out", tmp_path / "back"
    src.write_bytes(bytes(range(64)))
    args = ["--cipher", "present-80-ctr", "--key", "01" * 10, "--iv", "00" * 8, "-q", "-d", "cpu"]
    p = cli("encrypt", *args, "--in", src, "--out", out, "--allow-weak")
    assert p.returncode == 0, p.stderr.decode()
    lines = [ln for ln in p.stderr.decode().splitlines() if "64-bit blocks" in ln]
    assert len(lines) == 1 and lines[0].startswith("ciphergrid: warning: present-80-ctr:")
    p = cli("decrypt", *args, "--in", out, "--out", back)
    assert p.returncode == 0 and "64-bit" not in p.stderr.decode()
    assert back.read_bytes() == src.read_bytes()


def test_tdea_rules_end_to_end(monkeypatch, tmp_path):
    """DES's real policy through the API and the CLI: 2-key TDEA refused unless allowed; 3-key
    TDEA refused past 2^20 blocks in one context; decryption of old 2-key data always works."""
    monkeypatch.setattr(request, "_warned", set())
    k1, k2, k3 = bytes(range(8)), bytes(range(8, 16)), bytes(range(16, 24))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ciphergrid.WeakCipherWarning)
        with pytest.raises(ciphergrid.InvalidKey, match="2-key TDEA"):
            ciphergrid.encrypt(bytes(16), "des-ede-cbc", k1 + k2, bytes(8))
        ct = ciphergrid.encrypt(bytes(16), "des-ede-cbc", k1 + k2, bytes(8), allow_weak=True)
        assert ciphergrid.decrypt(ct, "des-ede-cbc", k1 + k2, bytes(8)) == bytes(16)
        ctx = ciphergrid.Cipher("des-ede3-ctr", k1 + k2 + k3, bytes(8), device="cpu").encryptor()
        ctx.update(bytes(4 << 20))
        ctx.update(bytes(4 << 20))                         # 2^20 blocks of 8 bytes: the limit
        with pytest.raises(ciphergrid.InvalidArgument, match="more than 1048576 blocks"):
            ctx.update(b"x")
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(64))
    args = ["encrypt", "--cipher", "des-ede-ecb", "--key", (k1 + k2).hex(), "--in", src, "--out", out,
            "-q", "-d", "native"]
    p = cli(*args)
    assert p.returncode == 2 and "2-key TDEA" in p.stderr.decode() and not out.exists()
    p = cli(*args, "--allow-weak")
    assert p.returncode == 0 and out.stat().st_size == 64, p.stderr.decode()


def test_selftest_and_bench_suspend_the_policy(monkeypatch):
    """weak_use_allowed(): the self-test and the benchmark measure TDEA on random keys."""
    monkeypatch.setattr(request, "_warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with request.weak_use_allowed():
            ciphergrid.encrypt(bytes(16), "des-ede-cbc", bytes(range(16)), bytes(8))
    assert not [x for x in w if x.category is ciphergrid.WeakCipherWarning]
    with pytest.raises(ciphergrid.InvalidKey):
        ciphergrid.encrypt(bytes(16), "des-ede-cbc", bytes(range(16)), bytes(8))
