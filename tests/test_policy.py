"""The encryption policy of a cipher (algorithms/base.py UsePolicy) applied by the API and the
CLI: encryption with DES, 2-key or 3-key TDEA is refused unless allow_weak / --allow-weak (then one
warning; TDEA keeps a limit of 2^20 blocks per key bundle); the other 64-bit block ciphers warn
once, naming the birthday bound, and refuse more than 2^32 blocks under one key unless allow_weak,
counted over one call or one streaming context; decryption is never refused."""

from __future__ import annotations

import warnings

import pytest

import ciphergrid
from ciphergrid import registry, request, selftest
from ciphergrid.runtime import current
from ciphergrid.algorithms.base import UsePolicy

from test_cli import cli

NAME = "present-80-ctr"
pytestmark = pytest.mark.policy


@pytest.fixture
def strict(monkeypatch):
    """PRESENT made to refuse more than 4 blocks under one key, and the all-zero key outright."""
    alg = registry.lookup(NAME).algorithm

    def policy(key):
        if key == bytes(10):
            return UsePolicy(refusal="an all-zero key is refused here")
        return UsePolicy(warning="a test warning", block_limit=4, over_limit_refused=True)

    monkeypatch.setattr(alg, "encryption_policy", policy)
    monkeypatch.setattr(current().policy, "warned", set())
    return alg


def _weak_warnings(w) -> list[str]:
    return [str(x.message) for x in w if x.category is ciphergrid.WeakCipherWarning]


@pytest.mark.parametrize("name, key, iv, dev", [
    (NAME, bytes(range(10)), bytes(8), "cpu"),
    ("cast5-cbc", bytes(range(16)), bytes(8), "native")])
def test_64_bit_block_cipher_warns_once(name, key, iv, dev, monkeypatch):
    """One warning per process, naming the cipher as its designers write it and the birthday
    bound's limit; never "old data"; decryption says nothing."""
    monkeypatch.setattr(current().policy, "warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            ct = ciphergrid.encrypt(b"x" * 16, name, key, iv, device=dev)
        assert ciphergrid.decrypt(ct, name, key, iv, device=dev) == b"x" * 16
    msgs = _weak_warnings(w)
    assert len(msgs) == 1, msgs
    title = {"present": "PRESENT", "cast5": "CAST5 (CAST-128)"}[registry.lookup(name).algorithm.name]
    assert msgs[0].startswith(f"{name}: {title} has 64-bit blocks: rekey well before 2^32 blocks "
                              f"(32 GiB) under one key (the birthday bound"), msgs[0]
    assert "refused unless allow_weak" in msgs[0] and "old data" not in msgs[0]


def test_64_bit_policies_name_the_limit():
    """Every 64-bit block cipher but DES: a warning with its designers' spelling, the 2^32-block
    limit refused past it (unless allow_weak), the birthday bound as the reason."""
    titles = {"present": "PRESENT", "hight": "HIGHT", "misty1": "MISTY1", "cast5": "CAST5 (CAST-128)"}
    algs = {registry.lookup(n).algorithm for n in registry.names()}
    seen = set()
    for alg in algs:
        if alg.block_size != 8 or alg.name not in titles:
            continue
        pol = alg.encryption_policy(bytes(max(alg.key_sizes)))
        assert pol.refusal is None and pol.block_limit == 1 << 32 and pol.over_limit_refused
        assert pol.warning.startswith(f"{titles[alg.name]} has 64-bit blocks:"), pol.warning
        assert "2^32 blocks (32 GiB)" in pol.warning and "old data" not in pol.warning
        assert "birthday bound" in pol.limit_reason
        seen.add(alg.name)
    assert seen == set(titles)
    for alg in algs:                     # 128-bit blocks: no rule
        if alg.block_size == 16:
            assert alg.encryption_policy(bytes(max(alg.key_sizes))) == UsePolicy()


def test_64_bit_limit_of_2_32_blocks(monkeypatch):
    """The real limit (32 GiB of PRESENT: counted, not encrypted): admit() refuses a call or
    context past 2^32 blocks under one key, allow_weak turns that into a warning."""
    monkeypatch.setattr(current().policy, "warned", set())
    spec = registry.lookup(NAME)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ciphergrid.WeakCipherWarning)
        req = request.make_request(spec, bytes(range(10)), bytes(8), True)
        lifted = request.make_request(spec, bytes(range(10)), bytes(8), True, allow_weak=True)
    assert req.limit_refuses and not lifted.limit_refuses
    req.admit(8 << 32)                                              # 2^32 blocks: allowed
    with pytest.raises(ciphergrid.InvalidArgument,
                       match=r"more than 2\^32 blocks \(32 GiB\) under one key is refused \(the "
                             r"birthday bound.*allow_weak=True / --allow-weak"):
        req.admit((8 << 32) + 1)
    with pytest.warns(ciphergrid.WeakCipherWarning, match=r"more than 2\^32 blocks.*\(allow_weak\)"):
        lifted.admit((8 << 32) + 1)
    request.make_request(spec, bytes(range(10)), bytes(8), False).admit(1 << 40)  # decryption


def test_refusal_and_allow_weak(strict):
    with pytest.raises(ciphergrid.InvalidKey, match="refused here: encryption refused unless allow_weak"):
        ciphergrid.encrypt(b"x" * 8, NAME, bytes(10), bytes(8))
    with pytest.raises(ciphergrid.InvalidKey):
        ciphergrid.Cipher(NAME, bytes(10), bytes(8)).encryptor()
    ciphergrid.decrypt(b"x" * 8, NAME, bytes(10), bytes(8))  # old data is always readable
    with pytest.warns(ciphergrid.WeakCipherWarning, match=r"refused here: encrypting anyway \(allow_weak\)"):
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


def test_policy_worked_out_once_per_request(strict, monkeypatch):
    """A call works the key's policy out once (make_request) and its limit reads it from the
    request (DES's took 2 x 38 parity strips a call, ~0.1 ms of an H200 host's per-call time)."""
    calls = []
    policy = strict.encryption_policy
    monkeypatch.setattr(strict, "encryption_policy", lambda key: calls.append(1) or policy(key))
    key = bytes(range(10))
    with pytest.warns(ciphergrid.WeakCipherWarning):
        ciphergrid.encrypt(b"x" * 32, NAME, key, bytes(8))
    assert len(calls) == 1
    ctx = ciphergrid.Cipher(NAME, key, bytes(8)).encryptor()
    for _ in range(3):
        ctx.update(b"x" * 8)
    assert len(calls) == 2        # the context's request: once, whatever the updates
    with pytest.raises(ciphergrid.InvalidArgument, match="more than 4 blocks"):
        ctx.update(b"x" * 9)


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


K1, K2, K3 = bytes(range(8)), bytes(range(8, 16)), bytes(range(16, 24))


@pytest.mark.parametrize("name, key, cites", [
    ("des-cbc", K1, "single DES (a 56-bit key), withdrawn by NIST in 2005 (FIPS 46-3)"),
    ("des-ede-cbc", K1 + K2, "2-key TDEA is disallowed for encryption (SP 800-131A Rev. 2)"),
    ("des-ede3-cbc", K1 + K2 + K3, "TDEA encryption is disallowed after 2023 (SP 800-131A Rev. 2; "
                                   "NIST withdrew SP 800-67 Rev. 2 on 2024-01-01)"),
    ("des-ede3-cbc", K1 + K2 + K2, "this 24-byte TDEA key bundle has K2 == K3 (ignoring the parity "
                                   "bits): it is single DES (a 56-bit key)"),
])
def test_des_family_refused_unless_allow_weak(name, key, cites, monkeypatch):
    """Every DES-family encryption (one call or a context) is refused unless allow_weak, citing
    its own document; with allow_weak one warning and OpenSSL's bytes; decryption always works."""
    monkeypatch.setattr(current().policy, "warned", set())
    pt = bytes(range(32))
    with pytest.raises(ciphergrid.InvalidKey, match="allow_weak=True / --allow-weak") as e:
        ciphergrid.encrypt(pt, name, key, bytes(8), device="native")
    assert cites in str(e.value) and "encryption refused" in str(e.value)
    with pytest.raises(ciphergrid.InvalidKey):
        ciphergrid.Cipher(name, key, bytes(8), device="native").encryptor()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ct = ciphergrid.encrypt(pt, name, key, bytes(8), device="native", allow_weak=True)
        ciphergrid.encrypt(pt, name, key, bytes(8), device="native", allow_weak=True)
        assert ciphergrid.decrypt(ct, name, key, bytes(8), device="native") == pt  # no allow_weak
    msgs = _weak_warnings(w)
    assert len(msgs) == 1 and msgs[0].startswith(f"{name}: {cites}"), msgs
    assert "encrypting anyway (allow_weak)" in msgs[0]
    if name == "des-cbc":   # single DES: its own document, not TDEA's
        assert "TDEA" not in msgs[0] and "SP 800-67" not in msgs[0] and "2^32 blocks" in msgs[0]
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    k = key * 3 if len(key) == 8 else key + key[:8] if len(key) == 16 else key
    enc = Cipher(TripleDES(k), modes.CBC(bytes(8))).encryptor()
    assert ct == enc.update(pt) + enc.finalize()


def test_des_weak_keys_still_warn(monkeypatch):
    monkeypatch.setattr(current().policy, "warned", set())
    with pytest.warns(ciphergrid.WeakCipherWarning, match="K1 is a weak DES key"):
        ciphergrid.encrypt(bytes(8), "des-ede3-ecb", bytes.fromhex("0101010101010101") + K2 + K3,
                           device="native", allow_weak=True)


def test_tdea_limit_of_2_20_blocks(monkeypatch):
    """3-key TDEA under allow_weak keeps SP 800-67 Rev. 2's limit: past 2^20 blocks in one
    context a warning names it (without allow_weak no TDEA encryption starts at all)."""
    monkeypatch.setattr(current().policy, "warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ctx = ciphergrid.Cipher("des-ede3-cbc", K1 + K2 + K3, bytes(8), device="native",
                                allow_weak=True).encryptor()
        ctx.update(bytes(4 << 20))
        ctx.update(bytes(4 << 20))                         # 2^20 blocks of 8 bytes: the limit
        assert not [m for m in _weak_warnings(w) if "more than" in m]
        ctx.update(bytes(8))
    over = [m for m in _weak_warnings(w) if "more than" in m]
    assert over == ["des-ede3-cbc: more than 2^20 blocks (8 MiB) under one key, encrypted anyway "
                    "(allow_weak): SP 800-67 Rev. 2's limit for 3-key TDEA"], over


def test_cli_des_refused_without_allow_weak(tmp_path):
    """The CLI: single DES encryption exits 2 naming --allow-weak and writes nothing; with it one
    warning line; decrypting what it made needs no flag."""
    src, out, back = tmp_path / "in", tmp_path / "out", tmp_path / "back"
    src.write_bytes(bytes(64))
    args = ["--cipher", "des-ecb", "--key", K1.hex(), "-q", "-d", "native"]
    p = cli("encrypt", *args, "--in", src, "--out", out)
    err = p.stderr.decode()
    assert p.returncode == 2 and "FIPS 46-3" in err and "--allow-weak" in err and not out.exists(), err
    p = cli("encrypt", *args, "--in", src, "--out", out, "--allow-weak")
    lines = [ln for ln in p.stderr.decode().splitlines() if "des-ecb" in ln]
    assert p.returncode == 0 and out.stat().st_size == 64, p.stderr.decode()
    assert len(lines) == 1 and lines[0].startswith("ciphergrid: warning: des-ecb: single DES")
    assert "encrypting anyway (allow_weak)" in lines[0], lines
    p = cli("decrypt", *args, "--in", out, "--out", back)
    assert p.returncode == 0 and back.read_bytes() == bytes(64) and "des-ecb" not in p.stderr.decode()
    p = cli("encrypt", "--help")
    assert "DES and TDEA" in " ".join(p.stdout.decode().split())


def test_selftest_passes_the_override_itself(monkeypatch, capsys):
    """The known-answer self-test encrypts DES and TDEA with the policy in force, and says nothing."""
    monkeypatch.setattr(current().policy, "warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert selftest.run("native", quiet=True) == 0
    assert not _weak_warnings(w)


def test_selftest_and_bench_suspend_the_policy(monkeypatch):
    """weak_use_allowed(): the self-test and the benchmark measure TDEA on random keys."""
    monkeypatch.setattr(current().policy, "warned", set())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with request.weak_use_allowed():
            ciphergrid.encrypt(bytes(16), "des-ede-cbc", bytes(range(16)), bytes(8))
    assert not [x for x in w if x.category is ciphergrid.WeakCipherWarning]
    with pytest.raises(ciphergrid.InvalidKey):
        ciphergrid.encrypt(bytes(16), "des-ede-cbc", bytes(range(16)), bytes(8))
