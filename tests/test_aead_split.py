"""One long AEAD message split into ranges of its blocks over several engines
(engines/scheduler/message_range.py): the output equals pyca's, decryption verifies before it
releases anything, and more than one engine takes part."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

import ciphergrid
from ciphergrid import route
from ciphergrid.engines.composite import CompositeEngine, SchedulerStats
from ciphergrid.engines.scheduler import message_range, run

#: a message of a few MiB, an odd length, cut into ranges of 256 KiB at least
N = (3 << 20) + 13
PYCA = {"aes-128-gcm": (AESGCM, 16), "aes-256-gcm": (AESGCM, 32),
        "chacha20-poly1305": (ChaCha20Poly1305, 32)}


@pytest.fixture
def small_ranges(monkeypatch):
    """Messages of 1 MiB split, in ranges of 256 KiB; every engine expected at one speed (each
    takes a first share), none measured (no range is declared hung while kernels build)."""
    monkeypatch.setattr(route, "AEAD_SPLIT_MIN_BYTES", 1 << 20)
    monkeypatch.setattr(message_range, "RANGE_GRAIN", 256 << 10)
    monkeypatch.setattr(run, "expected_speed", lambda *a, **k: (1e9, False))


def _present() -> str:
    return ",".join(d.spec for d in ciphergrid.devices())


def _case(name: str):
    cls, klen = PYCA[name]
    key, nonce, aad = os.urandom(klen), os.urandom(12), os.urandom(29)
    pt = os.urandom(N)
    return cls(key), key, nonce, aad, pt


@pytest.mark.parametrize("name", sorted(PYCA))
@pytest.mark.parametrize("where", ["all", "present"])
def test_one_message_split_equals_pyca(name, where, small_ranges):
    ref, key, nonce, aad, pt = _case(name)
    device = "all" if where == "all" else _present()
    want = ref.encrypt(nonce, pt, aad)
    st = SchedulerStats()
    ct = ciphergrid.encrypt(pt, name, key=key, nonce=nonce, aad=aad, device=device, stats=st)
    assert bytes(ct) == want
    back = ciphergrid.decrypt(want, name, key=key, nonce=nonce, aad=aad, device=device)
    assert bytes(back) == pt
    plan = ciphergrid.aead.route_message(name, True, N, 12, device=device)
    if "ranges" in plan.describe():
        assert sum(1 for e in st.engines.values() if e.ranges) >= 2
        assert sum(e.bytes for e in st.engines.values()) == N


@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305"])
@pytest.mark.parametrize("fault", [False, True])
def test_split_uses_several_engines(name, fault, small_ranges, monkeypatch):
    specs = [d.spec for d in ciphergrid.devices()]
    if len(specs) < 2:
        pytest.skip("one device present")
    if fault:   # (one engine fails after its first range: the others run the rest again)
        monkeypatch.setenv("CIPHERGRID_FAULT", f"{specs[0]}:fail:{256 << 10}")
    ref, key, nonce, aad, pt = _case(name)
    st = SchedulerStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ciphergrid.EngineFailureWarning)
        ct = ciphergrid.encrypt(pt, name, key=key, nonce=nonce, aad=aad, device=",".join(specs),
                                stats=st)
    assert bytes(ct) == ref.encrypt(nonce, pt, aad)
    assert sum(1 for e in st.engines.values() if e.ranges) >= (1 if fault else 2)
    assert sum(e.bytes for e in st.engines.values()) == N
    if fault:
        assert st.failures and st.rework_bytes > 0


@pytest.mark.parametrize("name", ["aes-256-gcm", "chacha20-poly1305"])
def test_split_bad_tag_releases_nothing(name, small_ranges):
    ref, key, nonce, aad, pt = _case(name)
    sealed = bytearray(ref.encrypt(nonce, pt, aad))
    sealed[N // 2] ^= 1
    out = np.full(N, 0xAA, dtype=np.uint8)
    with pytest.raises(ciphergrid.InvalidTag):
        ciphergrid.decrypt(bytes(sealed), name, key=key, nonce=nonce, aad=aad, device=_present(),
                           out=out)
    assert not out.any()


@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305"])
@pytest.mark.parametrize("aad_len", [0, 29])
def test_ranges_fold_to_the_tag(name, aad_len, small_ranges, monkeypatch):
    """The fold over many ranges (one OpenSSL engine made to run the message in ranges)."""
    from ciphergrid.aeads.base import Batch
    from ciphergrid.route import engine

    monkeypatch.setattr(message_range, "RANGE_GRAIN", 64 << 10)
    ref, key, nonce, _, pt = _case(name)
    aad = os.urandom(aad_len)
    n = len(pt) - 5
    sealed = ref.encrypt(nonce, pt[:n], aad)
    eng = CompositeEngine([engine("native")], message_ranges=True)

    def batch(encrypt, src):
        return Batch(name, encrypt, 16, np.frombuffer(key, np.uint8).reshape(1, -1).copy(),
                     np.zeros(1, np.int32), np.frombuffer(nonce, np.uint8).reshape(1, -1),
                     np.frombuffer(aad, np.uint8), np.array([0, aad_len], np.int64),
                     np.frombuffer(src, np.uint8), np.array([0, n], np.int64),
                     np.empty(n, np.uint8))

    st = SchedulerStats()
    b = batch(True, pt[:n])
    tags = eng.seal(b, stats=st)
    assert b.dst.tobytes() + tags.tobytes() == sealed
    assert st.engines["native"].ranges > 4
    b = batch(False, sealed[:n])
    ok = eng.open(b, np.frombuffer(sealed[n:], np.uint8).reshape(1, 16))
    assert ok.tolist() == [True] and b.dst.tobytes() == pt[:n]
    b = batch(False, sealed[:n])
    bad = np.frombuffer(sealed[n:], np.uint8).copy().reshape(1, 16)
    bad[0, 0] ^= 1
    assert eng.open(b, bad).tolist() == [False] and not b.dst.any()


def test_small_or_odd_nonce_messages_are_not_split(small_ranges):
    plan = ciphergrid.aead.route_message("aes-128-gcm", True, 1000, 12, device="all")
    assert "ranges" not in plan.describe()
    plan = ciphergrid.aead.route_message("aes-128-gcm", True, N, 16, device=_present())
    assert "ranges" not in plan.describe()


def test_device_chacha_stream_at_an_offset():
    """A device's ``chacha_stream`` kernel from block counter 1 + first_byte / 64, a partial last
    block included, equals pyca's ChaCha20 there."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    from ciphergrid.route import engine

    devices = [engine(d.spec) for d in ciphergrid.devices()]
    devices = [e for e in devices if message_range.engine_runs_ranges(
        e, "chacha20-poly1305", 12, 16) and e.kind == "device"]
    if not devices:
        pytest.skip("no device of our kernels present")
    key, nonce = os.urandom(32), os.urandom(12)
    keys = message_range.PolyKeys(key, nonce)
    src = np.frombuffer(os.urandom(64 * 70 + 13), dtype=np.uint8)
    want = Cipher(algorithms.ChaCha20(key, (1 + 10).to_bytes(4, "little") + nonce),
                  None).encryptor().update(src.tobytes())
    for eng in devices:
        out = np.zeros_like(src)
        keys.device_keystream(eng, src, out, 640)
        assert out.tobytes() == want


def test_openssl_chacha_stream_at_an_offset():
    """OpenSSL's ChaCha20 of a range in pieces on its threads, from block counter
    1 + first_byte / 64, equals pyca's ChaCha20 there."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    from ciphergrid.route import engine

    key, nonce = os.urandom(32), os.urandom(12)
    keys = message_range.PolyKeys(key, nonce)
    src = np.frombuffer(os.urandom((2 << 20) + 13), dtype=np.uint8)
    want = Cipher(algorithms.ChaCha20(key, (1 + 10).to_bytes(4, "little") + nonce),
                  None).encryptor().update(src.tobytes())
    out = np.zeros_like(src)
    keys.openssl_keystream(engine("native"), src, out, 640)
    assert out.tobytes() == want


def test_field_products_agree():
    """The fold's four-bits-at-a-time product equals the bitwise one, and H^(2^128 - 1) = 1."""
    import random

    from ciphergrid.modes.gf128 import mul, mul4, power

    r = random.Random(20261206)
    for _ in range(200):
        a, b = r.getrandbits(128), r.getrandbits(128)
        assert mul4(a, b) == mul(a, b)
    h = r.getrandbits(128) | 1
    assert power(h, (1 << 128) - 1) == 1 and mul4(power(h, (1 << 128) - 3), mul4(h, h)) == 1
