"""The AEADs through the public API, the batches and the command line, on every device present,
for every AEAD name (``ciphergrid.aeads.names()``): against the reference (pyca/cryptography for
AES-GCM and ChaCha20-Poly1305; the plain-Python models of tests/ for Ascon and AEGIS), every bit
flip fails, nothing is released before a tag verifies.  Each AEAD's own file (test_gcm.py, ...)
checks its vectors and kernels in depth; this one checks the shape every AEAD shares."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import ciphergrid
from ciphergrid import aeads
from ciphergrid.errors import InvalidArgument, InvalidIVSize, InvalidKeySize, InvalidTag, UnsupportedCipher

NAMES = aeads.names()
#: the plain-Python references of the AEADs pyca lacks: name -> (module in tests/, a function
#: (module, key, nonce, aad, plaintext, tag length) -> ciphertext || tag)
MODELS = {
    "aegis-128l": ("aegis_model", lambda m, k, n, a, p, tl: b"".join(m.encrypt(k, n, p, a, tl))),
    "ascon-aead128": ("ascon_model", lambda m, k, n, a, p, tl: m.encrypt(k, n, a, p, tl)),
}


def reference_seal(name: str, key: bytes, nonce: bytes, aad: bytes, pt: bytes, tag_length: int) -> bytes:
    """ciphertext || tag from the reference of ``name``."""
    if name.endswith("-gcm"):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        e = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
        e.authenticate_additional_data(aad)
        ct = e.update(pt) + e.finalize()
        return ct + e.tag[:tag_length]
    if name == "chacha20-poly1305":
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        return ChaCha20Poly1305(key).encrypt(nonce, pt, aad)
    mod, seal = MODELS[name]
    sys.path.insert(0, os.path.dirname(__file__))
    try:
        m = importlib.import_module(mod)
    finally:
        sys.path.pop(0)
    return seal(m, key, nonce, aad, pt, tag_length)


def _runs(name: str, device: str) -> bool:
    spec = aeads.spec(name)
    return spec.capability("openssl" if device == "native" else "device") is not None


def _sizes(name):
    a = aeads.lookup(name)
    return a.names[name], a.default_nonce_length, a.default_tag_length


@pytest.fixture(params=NAMES or [pytest.param(None, marks=pytest.mark.skip(reason="no AEAD registered"))])
def aead_name(request):
    return request.param


def _check_device(name, device):
    if not _runs(name, device):
        pytest.skip(f"{device} does not run {name}")


# --------------------------------------------------------------------------- one message

LENGTHS = (0, 1, 15, 16, 17, 63, 255, 1000, 4099)


def test_one_message_matches_reference(aead_name, device, rng):
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    for n in LENGTHS:
        key, nonce = rng.data(kl), rng.data(nl)
        aad, pt = rng.data(n % 37), rng.data(n)
        ct = ciphergrid.encrypt(pt, aead_name, key, nonce=nonce, aad=aad, device=device)
        assert ct == reference_seal(aead_name, key, nonce, aad, pt, tl), n
        assert ciphergrid.decrypt(ct, aead_name, key, nonce=nonce, aad=aad, device=device) == pt


def test_every_tamper_fails_and_releases_nothing(aead_name, device, rng):
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    key, nonce, aad, pt = rng.data(kl), rng.data(nl), rng.data(9), rng.data(77)
    ct = ciphergrid.encrypt(pt, aead_name, key, nonce=nonce, aad=aad, device=device)

    def fails(data=ct, n=nonce, a=aad, k=key, **kw):
        out = np.full(len(data) - kw.get("tag_length", tl), 0xAA, dtype=np.uint8)
        with pytest.raises(InvalidTag):
            ciphergrid.decrypt(data, aead_name, k, nonce=n, aad=a, device=device, out=out, **kw)
        assert not out.any(), "the out= buffer must be zeroed on a failed tag"

    flip = lambda b, i: b[:i] + bytes([b[i] ^ (1 << (i % 8))]) + b[i + 1:]  # noqa: E731
    for i in (0, 40, len(pt) - 1):            # ciphertext
        fails(data=flip(ct, i))
    for i in (len(pt), len(ct) - 1):          # tag
        fails(data=flip(ct, i))
    fails(n=flip(nonce, 0))
    fails(a=flip(aad, 3))
    fails(a=aad + b"\0")
    fails(k=flip(key, 5))
    with pytest.raises(InvalidTag):           # a truncated tag
        ciphergrid.decrypt(ct[:-1], aead_name, key, nonce=nonce, aad=aad, device=device)
    with pytest.raises(InvalidTag):           # shorter than a tag
        ciphergrid.decrypt(ct[:tl - 1], aead_name, key, nonce=nonce, device=device)


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_decryption_failing_mid_way_leaves_no_plaintext(error, rng, monkeypatch):
    """A decryption that fails after some plaintext reached the caller's out= buffer (slices
    or pieces already down, their tag not yet compared: a device error, Ctrl-C) zeroes it before
    the error propagates: one message and a batch."""
    from ciphergrid.plan import Plan

    name = "chacha20-poly1305"
    key, nonce, pt = rng.data(32), rng.data(12), rng.data(300)
    ct = ciphergrid.encrypt(pt, name, key, nonce=nonce, device="native")
    real = Plan._run_messages

    def half_done(plan, batch, *a, **kw):
        if not batch.encrypt:
            batch.dst[...] = np.frombuffer(pt, dtype=np.uint8)[:batch.dst.size]  # (released)
            raise error("the device failed")
        return real(plan, batch, *a, **kw)

    monkeypatch.setattr(Plan, "_run_messages", half_done)
    out = np.full(len(pt), 0xAA, dtype=np.uint8)
    with pytest.raises(error):
        ciphergrid.decrypt(ct, name, key, nonce=nonce, device="native", out=out)
    assert not out.any()
    nonces = [rng.data(12) for _ in range(3)]
    sealed = ciphergrid.encrypt_batch([pt[:100], pt[100:250], pt[250:]], name, key=key,
                                      nonces=nonces, device="native").messages
    out = np.full(len(pt) - 0, 0xAA, dtype=np.uint8)
    with pytest.raises(error):
        ciphergrid.decrypt_batch(sealed, name, key=key, nonces=nonces, device="native", out=out)
    assert not out.any()


def test_numpy_in_numpy_out_and_out_buffer(aead_name, device, rng):
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    key, nonce, pt = rng.data(kl), rng.data(nl), rng.data(1003)
    arr = np.frombuffer(pt, dtype=np.uint8)
    out = np.empty(len(pt) + tl, dtype=np.uint8)
    got = ciphergrid.encrypt(arr, aead_name, key, nonce=nonce, device=device, out=out)
    assert got is out and out.tobytes() == reference_seal(aead_name, key, nonce, b"", pt, tl)
    back = ciphergrid.decrypt(out, aead_name, key, nonce=nonce, device=device)
    assert isinstance(back, np.ndarray) and back.tobytes() == pt


STATS_AEAD = "aes-128-gcm"


def test_stats_of_one_message(device, rng):
    """``stats=`` of ciphergrid.encrypt/decrypt with an AEAD name is filled in: with one engine,
    what it ran (its spec, the message's bytes, one range)."""
    _check_device(STATS_AEAD, device)
    kl, nl, tl = _sizes(STATS_AEAD)
    key, nonce, pt = rng.data(kl), rng.data(nl), rng.data(777)
    st = ciphergrid.SchedulerStats()
    ct = ciphergrid.encrypt(pt, STATS_AEAD, key, nonce=nonce, device=device, stats=st)
    assert ct == reference_seal(STATS_AEAD, key, nonce, b"", pt, tl)
    assert set(st.engines) == {device}
    assert st.engines[device].bytes == len(pt) and st.engines[device].ranges == 1
    st = ciphergrid.SchedulerStats()
    assert ciphergrid.decrypt(ct, STATS_AEAD, key, nonce=nonce, device=device, stats=st) == pt
    assert set(st.engines) == {device} and st.engines[device].bytes == len(pt)


def test_stats_of_one_message_over_several_engines(rng):
    """With a list of devices (the scheduler), ``stats=`` gets the scheduler's record: every
    member listed, the message's range run by one of them, no failure."""
    from conftest import all_devices

    specs = [d.spec for d in all_devices() if _runs(STATS_AEAD, d.spec)]
    if len(specs) < 2:
        pytest.skip(f"fewer than two devices run {STATS_AEAD}")
    several = ",".join(specs)
    kl, nl, tl = _sizes(STATS_AEAD)
    key, nonce, pt = rng.data(kl), rng.data(nl), rng.data(777)
    for encrypt in (True, False):
        st = ciphergrid.SchedulerStats()
        if encrypt:
            ct = ciphergrid.encrypt(pt, STATS_AEAD, key, nonce=nonce, device=several, stats=st)
            assert ct == reference_seal(STATS_AEAD, key, nonce, b"", pt, tl)
        else:
            assert ciphergrid.decrypt(ct, STATS_AEAD, key, nonce=nonce, device=several,
                                      stats=st) == pt
        assert set(st.engines) == set(specs) and not st.failures
        ran = [e for e in st.engines.values() if e.ranges]
        assert len(ran) == 1 and ran[0].bytes >= len(pt) and st.seconds > 0


def test_arguments_are_checked(aead_name):
    kl, nl, tl = _sizes(aead_name)
    key, nonce = bytes(kl), bytes(nl)
    with pytest.raises(InvalidArgument, match="nonce"):
        ciphergrid.encrypt(b"x", aead_name, key)
    with pytest.raises(InvalidKeySize):
        ciphergrid.encrypt(b"x", aead_name, key + b"\0", nonce=nonce)
    bad_nonce = bytes(max(aeads.lookup(aead_name).nonce_lengths) + 1)
    with pytest.raises(InvalidIVSize):
        ciphergrid.encrypt(b"x", aead_name, key, nonce=bad_nonce)
    with pytest.raises(InvalidArgument, match="tag"):
        ciphergrid.encrypt(b"x", aead_name, key, nonce=nonce, tag_length=11)
    with pytest.raises(InvalidArgument):
        ciphergrid.encrypt(b"x", aead_name, key, nonce=nonce, padding="pkcs7")
    with pytest.raises(InvalidArgument, match="AEAD"):
        ciphergrid.encrypt(b"x" * 16, "aes-128-ecb", bytes(16), nonce=bytes(12))
    with pytest.raises(TypeError):
        ciphergrid.encrypt(b"x", aead_name, key.hex(), nonce=nonce)


def test_message_limit_refused(aead_name, monkeypatch):
    kl, nl, tl = _sizes(aead_name)
    monkeypatch.setattr(aeads.lookup(aead_name), "max_message", 100)
    with pytest.raises(ciphergrid.InvalidLength, match="chunk"):
        ciphergrid.encrypt(bytes(101), aead_name, bytes(kl), nonce=bytes(nl))


def test_batch_limits_refused(aead_name, monkeypatch):
    """encrypt_batch: the longest message (a buffer with offsets, or a list) and the longest AAD
    against the AEAD's limits, before anything runs; offsets that fall are refused."""
    kl, nl, tl = _sizes(aead_name)
    a = aeads.lookup(aead_name)
    monkeypatch.setattr(a, "max_message", 100)
    monkeypatch.setattr(a, "max_aad", 50)
    nonces = [bytes([i]) * nl for i in range(3)]
    off = [0, 10, 111, 120]
    with pytest.raises(ciphergrid.InvalidLength, match="101 bytes"):
        ciphergrid.encrypt_batch(bytes(120), aead_name, offsets=off, key=bytes(kl), nonces=nonces)
    with pytest.raises(ciphergrid.InvalidLength, match="101 bytes"):
        ciphergrid.encrypt_batch([b"", bytes(101), b"x"], aead_name, key=bytes(kl), nonces=nonces)
    with pytest.raises(ciphergrid.InvalidLength, match="51 bytes"):
        ciphergrid.encrypt_batch([b"", b"y", b"x"], aead_name, key=bytes(kl), nonces=nonces,
                                 aad=[b"", bytes(51), b""])
    with pytest.raises(InvalidArgument, match="offsets must rise"):
        ciphergrid.encrypt_batch(bytes(120), aead_name, offsets=[0, 50, 40, 120], key=bytes(kl),
                                 nonces=nonces)
    got = ciphergrid.encrypt_batch(bytes(100), aead_name, offsets=[0, 100, 100, 100],
                                   key=bytes(kl), nonces=nonces, aad=[bytes(50), b"", b""],
                                   device="native" if a.openssl else "auto")
    assert got.ok.all() and len(got.messages) == 3


# --------------------------------------------------------------------------- batches

def test_batch_mixed_lengths_keys_and_a_failure(aead_name, device, rng):
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    lens = [0, 1, 16, 17, 300, 5, 64, 1025]
    keys = [rng.data(kl) for _ in lens]
    nonces = [rng.data(nl) for _ in lens]
    aads = [rng.data(i % 5) for i in range(len(lens))]
    msgs = [rng.data(n) for n in lens]
    r = ciphergrid.encrypt_batch(msgs, aead_name, keys=keys, nonces=nonces, aad=aads, device=device)
    assert r.ok.all() and len(r) == len(lens)
    want = [reference_seal(aead_name, k, n, a, m, tl) for k, n, a, m in zip(keys, nonces, aads, msgs)]
    assert r.messages == want
    cts = list(r.messages)
    cts[3] = cts[3][:-1] + bytes([cts[3][-1] ^ 0x80])      # tag of message 3
    back = ciphergrid.decrypt_batch(cts, aead_name, keys=keys, nonces=nonces, aad=aads, device=device)
    assert back.failed == [3]
    assert back.messages[3] is None and back.messages[:3] == msgs[:3] and back.messages[4:] == msgs[4:]
    assert not back.data[back.offsets[3]:back.offsets[4]].any()


def test_batch_one_buffer_with_offsets(aead_name, device, rng):
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    key = rng.data(kl)
    lens = np.array([16, 0, 33, 256, 7])
    off = np.concatenate([[0], np.cumsum(lens)])
    buf = np.frombuffer(rng.data(int(off[-1])), dtype=np.uint8)
    nonces = np.frombuffer(rng.data(nl * len(lens)), dtype=np.uint8).reshape(len(lens), nl)
    r = ciphergrid.encrypt_batch(buf, aead_name, offsets=off, key=key, nonces=nonces, aad=b"hdr",
                                 device=device)
    for i in range(len(lens)):
        m = buf[off[i]:off[i + 1]].tobytes()
        assert r.data[off[i]:off[i + 1]].tobytes() + r.tags[i].tobytes() == \
            reference_seal(aead_name, key, nonces[i].tobytes(), b"hdr", m, tl)
    out = np.full(buf.nbytes, 0xAA, dtype=np.uint8)
    back = ciphergrid.decrypt_batch(r.data, aead_name, offsets=off, tags=r.tags, key=key,
                                    nonces=nonces, aad=b"hdr", device=device, out=out)
    assert back.ok.all() and out.tobytes() == buf.tobytes()   # into the caller's buffer
    bad_tags = r.tags.copy()
    bad_tags[2, 0] ^= 1
    back = ciphergrid.decrypt_batch(r.data, aead_name, offsets=off, tags=bad_tags, key=key,
                                    nonces=nonces, aad=b"hdr", device=device, out=out)
    assert back.failed == [2] and not out[off[2]:off[3]].any()
    assert out[off[3]:].tobytes() == buf[off[3]:].tobytes()


def test_batch_refuses_a_repeated_key_nonce_pair(aead_name):
    kl, nl, tl = _sizes(aead_name)
    with pytest.raises(InvalidArgument, match="repeats"):
        ciphergrid.encrypt_batch([b"a", b"b"], aead_name, key=bytes(kl), nonces=[bytes(nl)] * 2)
    # the same nonce under two different keys is fine
    ciphergrid.encrypt_batch([b"a", b"b"], aead_name, keys=[bytes(kl), b"\1" * kl],
                             nonces=[bytes(nl)] * 2)


def test_large_batch_refuses_a_repeated_pair_and_returns_no_ciphertext():
    """A batch large enough to check its (key, nonce) pairs beside the device work: refused all
    the same, with the caller's output zeroed (no ciphertext of it is returned)."""
    from ciphergrid import aead

    m = aead._REPEATS_BESIDE + 5
    nonces = np.zeros((m, 12), dtype=np.uint8)
    nonces[:, :4] = np.arange(m, dtype="<u4").view(np.uint8).reshape(m, 4)
    nonces[m - 1] = nonces[7]                       # one repeated pair, far from the first
    data = np.full(16 * m, 0x5A, dtype=np.uint8)
    off = np.arange(m + 1, dtype=np.int64) * 16
    out = np.full(16 * m, 0xEE, dtype=np.uint8)
    with pytest.raises(InvalidArgument, match="repeats"):
        ciphergrid.encrypt_batch(data, "aes-128-gcm", offsets=off, key=bytes(16), nonces=nonces,
                                 device="native", out=out)
    assert not out.any()
    nonces[m - 1, 11] ^= 1                          # all distinct: encrypted
    r = ciphergrid.encrypt_batch(data, "aes-128-gcm", offsets=off, key=bytes(16), nonces=nonces,
                                 device="native", out=out)
    assert r.ok.all() and out.any()


@pytest.mark.parametrize("nonce_len", [1, 7, 8, 12, 13, 16, 60])
def test_repeated_pair_check_reads_every_nonce_byte(nonce_len):
    """The check hashes each nonce in 64-bit words (overlapping where 8 does not divide its
    length, padded below 8 bytes): a repeated pair is refused wherever it lies; a pair that
    differs in any one nonce byte, or only in its key, is not."""
    from ciphergrid import aead

    spec = aeads.spec("aes-128-gcm")
    rng = np.random.default_rng(nonce_len)
    m = 100
    index = np.zeros(m, dtype=np.int32)
    nonces = rng.integers(0, 256, (m, nonce_len), dtype=np.uint8)
    nonces[:, 0] = np.arange(m)                 # (distinct pairs, even for one-byte nonces)
    aead._refuse_repeats(spec, index, nonces)
    for i, j in ((0, m - 1), (50, 51)):
        ix, nx = index.copy(), nonces.copy()
        ix[j], nx[j] = ix[i], nx[i]
        with pytest.raises(InvalidArgument, match="repeats"):
            aead._refuse_repeats(spec, ix, nx)
        ix[j] = 5                                   # the same nonce under another key
        aead._refuse_repeats(spec, ix, nx)
    for byte in range(nonce_len):
        ix, nx = index.copy(), nonces.copy()
        ix[1], nx[1] = ix[0], nx[0]
        nx[1, byte] ^= 0x80
        aead._refuse_repeats(spec, ix, nx)



def test_counter_nonces_proved_distinct_without_the_sort(monkeypatch):
    """Nonces with a counter (an aligned 32- or 64-bit word rising strictly, little- or
    big-endian, anywhere in the nonce) are distinct: the check accepts them without hashing and
    sorting; a repeat among them, a falling counter or random nonces take the hash and sort,
    and the repeat is refused."""
    from ciphergrid import aead, aead_tables

    spec = aeads.spec("aes-128-gcm")
    rng = np.random.default_rng(7)
    m = 1000
    index = np.zeros(m, dtype=np.int32)
    fixed = rng.integers(0, 256, 12, dtype=np.uint8)
    hashed = []
    pair_hash = aead_tables.pair_hash

    def counted(*a):
        hashed.append(1)
        return pair_hash(*a)

    monkeypatch.setattr(aead_tables, "pair_hash", counted)
    counters = {"u32 LE, bytes 0-3": (0, "<u4"), "u32 BE, bytes 8-11": (8, ">u4"),
                "u64 BE, bytes 4-11": (4, ">u8"), "u64 LE, bytes 0-7": (0, "<u8")}
    for what, (at, dt) in counters.items():
        nonces = np.tile(fixed, (m, 1))
        size = np.dtype(dt).itemsize
        nonces[:, at:at + size] = (np.arange(m, dtype=np.uint64) * 3 + 1 << 40 if size == 8 and
                                   dt[0] == "<" else np.arange(m) + 5).astype(dt).view(
                                       np.uint8).reshape(m, size)
        hashed.clear()
        aead._refuse_repeats(spec, index, nonces)
        assert not hashed, what
        rep = nonces.copy()
        rep[700] = rep[300]
        with pytest.raises(InvalidArgument, match="repeats"):
            aead._refuse_repeats(spec, index, rep)
        assert hashed, what
        hashed.clear()
        aead._refuse_repeats(spec, index, nonces[::-1].copy())   # falling: hashed, accepted
        assert hashed, what
    hashed.clear()
    aead._refuse_repeats(spec, index, rng.integers(0, 256, (m, 12), dtype=np.uint8))
    assert hashed


def test_batches_in_a_forked_child():
    """A process forked after using the OpenSSL engine's threads and the repeated-nonce check's
    worker (a multiprocessing pool, say) gets threads of its own, instead of waiting forever for
    its parent's."""
    import os
    import time

    from ciphergrid import aead

    m = aead._REPEATS_BESIDE + 1
    nonces = np.zeros((m, 12), dtype=np.uint8)
    nonces[:, :4] = np.arange(m, dtype="<u4").view(np.uint8).reshape(m, 4)
    data = np.zeros(64 * m, dtype=np.uint8)   # (4 MiB: several OpenSSL threads)
    off = np.arange(m + 1, dtype=np.int64) * 64
    want = ciphergrid.encrypt_batch(data, "aes-128-gcm", offsets=off, key=bytes(16),
                                    nonces=nonces, device="native").tags
    pid = os.fork()
    if pid == 0:  # the child: the same batch, compared; exit status 0 when equal
        try:
            r = ciphergrid.encrypt_batch(data, "aes-128-gcm", offsets=off, key=bytes(16),
                                         nonces=nonces, device="native")
            os._exit(0 if r.tags.tobytes() == want.tobytes() else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0


# --------------------------------------------------------------------------- pyca-style classes

CLASSES = {"aes-128-gcm": ciphergrid.AESGCM, "aes-192-gcm": ciphergrid.AESGCM,
           "aes-256-gcm": ciphergrid.AESGCM, "chacha20-poly1305": ciphergrid.ChaCha20Poly1305,
           "ascon-aead128": ciphergrid.AsconAEAD128, "aegis-128l": ciphergrid.AEGIS128L}


def test_pyca_style_class(aead_name, rng):
    cls = CLASSES[aead_name]
    kl, nl, tl = _sizes(aead_name)
    key = cls.generate_key(8 * kl)
    assert len(key) == kl
    a = cls(key)
    assert aead_name in repr(a) and key.hex() not in repr(a)
    nonce, pt = rng.data(nl), rng.data(123)
    ct = a.encrypt(nonce, pt, b"ad")
    assert ct == reference_seal(aead_name, key, nonce, b"ad", pt, tl)
    assert a.decrypt(nonce, ct, b"ad") == pt
    with pytest.raises(InvalidTag):
        a.decrypt(nonce, ct, None)
    with a:
        pass
    assert not any(a._key)  # zeroed by close()


def test_pyca_classes_match_pyca(rng):
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    for ours, theirs, kl in ((ciphergrid.AESGCM, pyca.AESGCM, 16), (ciphergrid.AESGCM, pyca.AESGCM, 32),
                             (ciphergrid.ChaCha20Poly1305, pyca.ChaCha20Poly1305, 32)):
        name = ours._names[kl]
        if name not in NAMES:
            continue
        key, nonce, pt = rng.data(kl), rng.data(12), rng.data(200)
        assert ours(key).encrypt(nonce, pt, b"x") == theirs(key).encrypt(nonce, pt, b"x")


def test_invalid_tag_is_pycas_invalid_tag(aead_name, rng):
    """ciphergrid.InvalidTag is also cryptography.exceptions.InvalidTag (and a ciphergrid.Error):
    code that swaps pyca's AEAD classes for ours catches a failed tag unchanged, from the class
    and from the one-shot call."""
    from cryptography.exceptions import InvalidTag as PycaInvalidTag

    assert issubclass(InvalidTag, PycaInvalidTag) and issubclass(InvalidTag, ciphergrid.Error)
    assert ciphergrid.InvalidTag is InvalidTag
    kl, nl, tl = _sizes(aead_name)
    key, nonce = rng.data(kl), rng.data(nl)
    a = CLASSES[aead_name](key)
    ct = a.encrypt(nonce, b"a message", b"ad")
    bad = ct[:-1] + bytes([ct[-1] ^ 1])
    try:                                  # written for pyca: catches pyca's exception only
        a.decrypt(nonce, bad, b"ad")
    except PycaInvalidTag as e:
        assert isinstance(e, ciphergrid.Error)
    else:
        raise AssertionError("a flipped tag bit verified")
    with pytest.raises(PycaInvalidTag):
        ciphergrid.decrypt(bad, aead_name, key=key, nonce=nonce, aad=b"ad")


def test_openssl_engine_refuses_what_openssl_lacks():
    for name in NAMES:
        if aeads.spec(name).capability("openssl") is None:
            kl, nl, tl = _sizes(name)
            with pytest.raises(UnsupportedCipher, match="OpenSSL lacks"):
                ciphergrid.encrypt(b"x", name, bytes(kl), nonce=bytes(nl), device="native")


# --------------------------------------------------------------------------- command line

def _cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "ciphergrid", *args], input=stdin,
                          capture_output=True)


def test_cli_roundtrip_and_failed_tag_leaves_nothing(aead_name, tmp_path, rng):
    kl, nl, tl = _sizes(aead_name)
    key, nonce, pt = rng.data(kl), rng.data(nl), rng.data(5000)
    (tmp_path / "k").write_text(key.hex())
    (tmp_path / "p").write_bytes(pt)
    common = ["--cipher", aead_name, "--key-file", str(tmp_path / "k"), "--nonce", nonce.hex(),
              "--aad", "a1b2", "-q"]
    r = _cli("encrypt", *common, "--in", str(tmp_path / "p"), "--out", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    ct = (tmp_path / "c").read_bytes()
    assert ct == reference_seal(aead_name, key, nonce, bytes.fromhex("a1b2"), pt, tl)
    r = _cli("decrypt", *common, "--in", str(tmp_path / "c"))       # to stdout
    assert r.returncode == 0 and r.stdout == pt
    bad = ct[:100] + bytes([ct[100] ^ 1]) + ct[101:]
    (tmp_path / "bad").write_bytes(bad)
    r = _cli("decrypt", *common, "--in", str(tmp_path / "bad"), "--out", str(tmp_path / "o"))
    assert r.returncode == 3 and b"tag" in r.stderr and r.stderr.count(b"\n") == 1
    assert set(os.listdir(tmp_path)) == {"k", "p", "c", "bad"}  # no output, no temporary file
    r = _cli("decrypt", *common, stdin=bad)                           # stdout: nothing at all
    assert r.returncode == 3 and r.stdout == b""


def test_cli_verbose_names_the_engine_that_runs(tmp_path, rng, monkeypatch, capsys):
    """``-v`` says where the message runs, and that is where it runs: the route is decided once
    (here a route that answers differently each time it is asked would show a second decision
    naming another engine)."""
    import dataclasses

    from ciphergrid import route as route_mod
    from ciphergrid.cli import main
    from conftest import all_devices

    specs = [d.spec for d in all_devices() if _runs(STATS_AEAD, d.spec)]
    if len(specs) < 2:
        pytest.skip(f"fewer than two devices run {STATS_AEAD}")
    engines = [route_mod.engine(s) for s in specs[:2]]
    real, asked, ran = route_mod.route, [], []

    def each_time_another(req, device="auto", *args, **kw):
        eng = engines[len(asked) % 2]
        asked.append(eng.info.spec)
        return dataclasses.replace(real(req, device, *args, **kw), engine=eng)

    def spy(eng, real_seal):
        def seal(*args, **kw):
            ran.append(eng.info.spec)
            return real_seal(*args, **kw)
        return seal

    monkeypatch.setattr(route_mod, "route", each_time_another)
    for eng in engines:
        monkeypatch.setattr(eng, "seal", spy(eng, eng.seal))
    kl, nl, tl = _sizes(STATS_AEAD)
    key, nonce, pt = rng.data(kl), rng.data(nl), rng.data(3000)
    (tmp_path / "k").write_text(key.hex())
    (tmp_path / "p").write_bytes(pt)
    code = main(["encrypt", "--cipher", STATS_AEAD, "--key-file", str(tmp_path / "k"), "--nonce",
                 nonce.hex(), "-q", "-v", "--in", str(tmp_path / "p"), "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "c").read_bytes() == reference_seal(STATS_AEAD, key, nonce, b"", pt, tl)
    assert len(asked) == 1 and ran == asked and f" on {ran[0]}" in err, (asked, ran, err)


def test_cli_refusals(tmp_path):
    name = NAMES[0] if NAMES else pytest.skip("no AEAD registered")
    kl, nl, tl = _sizes(name)
    (tmp_path / "k").write_text(bytes(kl).hex())
    base = ["--cipher", name, "--key-file", str(tmp_path / "k")]
    r = _cli("encrypt", *base, stdin=b"x")
    assert r.returncode == 2 and b"--nonce" in r.stderr
    r = _cli("encrypt", *base, "--nonce", "00" * nl, "--pad", "pkcs7", stdin=b"x")
    assert r.returncode == 2 and b"--pad" in r.stderr
    r = _cli("encrypt", "--cipher", "aes-128-ctr", "--key-file", str(tmp_path / "k"),
             "--iv", "00" * 16, "--aad", "00", stdin=b"x")
    assert r.returncode == 2 and b"--aad" in r.stderr
    r = _cli("decrypt", *base, "--nonce", "00" * nl, stdin=b"x" * (tl - 1))
    assert r.returncode == 2 and b"shorter than its tag" in r.stderr


# --------------------------------------------------------------------------- pieces on several queues

def test_layout_whole_pieces_for_a_serial_aeads_long_messages():
    """batches.layout: a driver's pieces and slices; where its messages average more than its
    ``slice_mean_max`` (a serial AEAD: a launch lasts one message's time), whole pieces."""
    from types import SimpleNamespace

    from ciphergrid.transfer import batches

    par = SimpleNamespace(piece_bytes=128 << 20, slice_bytes=32 << 20, slice_mean_max=None)
    ser = SimpleNamespace(piece_bytes=128 << 20, slice_bytes=32 << 20, slice_mean_max=32 << 10)
    assert batches.layout(par, 1 << 30, 64) == (128 << 20, 32 << 20)
    assert batches.layout(ser, 1 << 30, 65536) == (128 << 20, 32 << 20)     # 16 KiB each
    assert batches.layout(ser, 1 << 30, 64) == (batches.PIECE_BYTES, None)   # 16 MiB each
    assert batches.layout(SimpleNamespace(), 1 << 30, 1) == (batches.PIECE_BYTES, None)
    # (overlapped from two slices, or two whole pieces)
    assert batches.overlaps(ser, 64 << 20, 4096) and not batches.overlaps(ser, 64 << 20, 8)
    assert batches.overlaps(ser, 128 << 20, 8)


def test_pieces_cut_at_message_boundaries():
    from ciphergrid.transfer.batches import cuts

    off = np.array([0, 10, 10, 25, 100, 101, 130])
    assert cuts(off, 20) == [0, 3, 4, 6]    # the first messages at or after 20 (25), 40.. (100)
    assert cuts(off, 1000) == [0, 6]
    assert cuts(np.array([0]), 8) == [0, 0]
    assert cuts(np.array([0, 500]), 8) == [0, 1]          # one long message: one piece
    # ramped: pieces of 4 and 8 first and last, equal ones of at most 16 between (40 bytes: 3
    # pieces, targets 25.3 and 38.7)
    even = np.arange(65)
    assert cuts(even, 16, 2) == [0, 4, 12, 25, 38, 52, 60, 64]
    assert cuts(even, 16, 0) == [0, 16, 32, 48, 64]
    # (0, 2): no small pieces first; 8 and 4 last, 52 bytes before them in 4 pieces of 13
    assert cuts(even, 16, (0, 2)) == [0, 13, 26, 39, 52, 60, 64]
    assert cuts(np.arange(40), 16, 2) == [0, 16, 32, 39]  # too short to ramp


def test_slices_cut_between_messages_or_inside_a_long_one():
    """transfer/batches.slice_cuts: byte offsets; a slice target falls on the next message's
    start, or inside a message longer than a slice on its aligned byte at or before it."""
    from ciphergrid.transfer.batches import slice_cuts

    off = np.array([0, 10, 10, 25, 100, 101, 130])
    assert slice_cuts(off, 20) == [0, 25, 100, 130]      # between messages only
    # (75 and 29 bytes, longer than 20: 40, 60, 80 -> 25 + 8k; 120 -> 101 + 16)
    assert slice_cuts(off, 20, 8) == [0, 25, 33, 57, 73, 100, 117, 130]
    assert slice_cuts(np.array([0, 100]), 32, 16) == [0, 32, 64, 96, 100]
    assert slice_cuts(np.array([0, 100]), 30, 16) == [0, 16, 48, 80, 100]
    assert slice_cuts(np.array([0, 100]), 32) == [0, 100]  # no align: one long message whole
    assert slice_cuts(np.array([0]), 8, 16) == [0, 0]
    assert slice_cuts(np.array([0, 0, 0]), 8, 16) == [0, 0]


def _cut_every(step: int):
    """For transfer.pinning.copy_ranges: bytes [lo, hi) cut at the multiples of ``step`` (as at
    the edges of registrations), None: not cut."""
    def split(backend, arr, lo, hi):
        if hi <= lo:
            return []
        edges = [lo] + (list(range((lo // step + 1) * step, hi, step)) if step else []) + [hi]
        return list(zip(edges[:-1], edges[1:]))
    return split


@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305"])
def test_layout_remembered_for_equal_offsets_only(name, cpu_device, rng, monkeypatch):
    """DeviceAEAD.shape: a job's layout-only host work is derived once for equal offsets (the
    equal pieces of a batch, repeated calls) and again for any other layout or GCM's other
    GHASH pass (several keys); its arrays are read-only; a refused layout is never remembered;
    jobs that share a layout give the pyca texts and tags of their own messages."""
    from ciphergrid.engines.device_aead import driver as aead_base
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.route import engine

    device = cpu_device
    _check_device(name, device)
    kl, nl, tl = _sizes(name)
    drv = engine(device).aead_driver(name)
    monkeypatch.setattr(drv, "_shapes", [])
    derived = []
    derive = drv.derive_shape

    def counted(*a):
        derived.append(a[0].tolist())
        return derive(*a)

    monkeypatch.setattr(drv, "derive_shape", counted)
    lens, aads = [100, 0, 16384, 33], [b"", b"ab", b"", b"x" * 17]

    def batch(keys, lens=lens, aads=aads):
        return make_batch(name, True, tl, keys, [rng.data(nl) for _ in lens], aads,
                          [rng.data(n) for n in lens])

    key = rng.data(kl)
    first, second = batch([key] * 4), batch([rng.data(kl)] * 4)
    first.off, first.aad_off = first.off.astype(np.uint64), first.aad_off.astype(np.uint64)
    s1, s2 = drv.shape(first, *_extra(name)), drv.shape(second, *_extra(name))
    assert s1 is s2 and len(derived) == 1
    assert first.off.flags.writeable and first.aad_off.flags.writeable   # (the caller's: kept)
    assert all(not v.flags.writeable for v in s1 if isinstance(v, np.ndarray))
    with pytest.raises(ValueError):
        next(v for v in s1 if isinstance(v, np.ndarray))[0] = 1
    drv.shape(batch([key] * 4, lens=[100, 0, 16384, 34]), *_extra(name))      # another length
    drv.shape(batch([key] * 4, aads=[b"", b"a", b"", b"x" * 17]), *_extra(name))  # another AAD
    assert len(derived) == 3
    if name == "aes-128-gcm":   # (the general GHASH pass of several keys: another tile choice)
        drv.shape(first, False)
        assert len(derived) == 4
    bad = batch([key] * 4)
    bad.off = np.array([0, 100, 50, 16484, 16517])
    if name == "aes-128-gcm":
        for _ in range(2):
            with pytest.raises(InvalidArgument):
                drv.shape(bad, *_extra(name))
    # jobs through the remembered layout: each its own messages' texts and tags
    for bt in (first, second, batch([key] * 4), batch([rng.data(kl) for _ in lens])):
        tags = drv.run(bt)
        for i in range(bt.count):
            k, n, a, t = bt.message(i)
            want = reference_seal(name, k, n, a, t, tl)
            assert bt.dst[bt.off[i]:bt.off[i + 1]].tobytes() + tags[i].tobytes() == want
    kept = aead_base.SHAPES_KEPT
    for j in range(kept + 2):
        drv.shape(batch([key] * 4, lens=[j + 1, 2, 3, 4]), *_extra(name))
    assert len(drv._shapes) == kept


def _extra(name: str) -> tuple:
    """DeviceAEAD.shape's extra arguments for batches of one key (GCM: the positional pass)."""
    return (True,) if name == "aes-128-gcm" else ()


@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305", "ascon-aead128"])
def test_tags_kernels_once_per_job_where_slices_cut_between_messages(name, cpu_device, rng,
                                                                     monkeypatch):
    """A job class with ``tags_apart`` (GCM, ChaCha20-Poly1305) launches each slice's text
    kernels alone and the tags' kernels once over the whole job, after the last slice, where
    every cut lies between messages; with a cut inside a message, or one slice, each slice
    launches both; a class without it (Ascon) always both.  (The texts and tags these give
    are test_job_in_slices'.)"""
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.route import engine

    device = cpu_device
    _check_device(name, device)
    kl, nl, tl = _sizes(name)
    drv = engine(device).aead_driver(name)
    lens = [4096, 4096, 8192, 4096]
    batch = make_batch(name, True, tl, [rng.data(kl)] * 4, [rng.data(nl) for _ in lens],
                       [b""] * 4, [rng.data(n) for n in lens])
    job_type = type(drv.prepare(make_batch(name, True, tl, [], [], [], [])))
    launch, calls = job_type.launch, []

    def recorded(self, queue, lo, hi, **parts):
        calls.append((lo.index, hi.index, parts))
        return launch(self, queue, lo, hi, **parts)

    monkeypatch.setattr(job_type, "launch", recorded)
    apart = job_type.tags_apart
    for slices, between in (([0, 4096, 8192, 20480], True), ([0, 4096, 12288, 20480], False),
                            (None, True)):
        if slices == [0, 4096, 12288, 20480] and not job_type.cut_align:
            continue
        calls.clear()
        job = drv.prepare(batch, slices=slices)
        job.enqueue()
        job.finish()
        n = 1 if slices is None else len(slices) - 1
        if apart and between and n > 1:
            assert calls == ([(j, j + 1, {"tags": False}) for j in range(n)]
                             + [(0, n, {"texts": False})])
        else:
            assert calls == [(j, j + 1, {}) for j in range(n)]


def test_job_in_slices(aead_name, device, rng, monkeypatch):
    """device_aead.job.Job slices: a job's texts uploaded, run and downloaded in byte ranges (each
    slice's kernels waiting only for its own texts and the metadata) give the texts and tags of
    the whole job, both directions, every implementation, one key (GCM's
    one-key passes) and several (its general ones), an empty slice, 16 KiB messages (the counter
    passes' aligned tiles) beside odd lengths, cuts between messages and, for a job class with
    ``cut_align``, inside them (a tile of the counter passes and a GHASH tile across a cut,
    two cuts in one message, a cut on an empty message); their copies cut at odd places (as at
    the edges of the caller's page-locked registrations, transfer.pinning.copy_ranges); the
    first bytes already uploaded by a head start."""
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.route import engine
    from ciphergrid.transfer import batches, pinning

    if device == "native":
        pytest.skip("the OpenSSL engine has no device queues")
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    eng = engine(device)
    b = eng.backend
    lens = [16384, 0, 16384, 17, 1, 4111, 16384, 15, 16, 16384, 300]
    m = len(lens)
    texts = [rng.data(n) for n in lens]
    nonces = [rng.data(nl) for _ in lens]
    aads = [rng.data(i % 5) for i in range(m)]
    two = [rng.data(kl), rng.data(kl)]
    queues = [b.queue() for _ in range(3)]
    for impl in sorted(aeads.lookup(aead_name).implementations):
        drv = eng.aead_driver(aead_name, impl)
        for keys in ([two[0]] * m, [two[i % 2] for i in range(m)]):
            whole = make_batch(aead_name, True, tl, keys, nonces, aads, texts)
            want = drv.run(whole)
            sealed = [whole.dst[whole.off[i]:whole.off[i + 1]].tobytes() for i in range(m)]
            off = [int(x) for x in whole.off]
            job_class = type(drv.prepare(make_batch(aead_name, True, tl, [], [], [], [])))
            a = job_class.cut_align
            # (message indices as byte cuts; inside messages, on multiples of 64 bytes (every
            # cut_align): 0 at 256, 2 (16 KiB) at 192 and 12 KiB, 5 (4111 bytes) at 64, 9 (16
            # KiB) at 8 KiB + 64, 10 (300) at 64 twice and at 256)
            inner = ([[0, 256, off[2] + 192, off[2] + 12288, off[5] + 64, off[6],
                       off[9] + 8256, off[10] + 64, off[10] + 64, off[10] + 256, off[m]]]
                     if a else [])
            assert not a or all((c - off[int(np.searchsorted(off, c, "right")) - 1]) % a == 0
                                for c in inner[0][1:-1])
            for encrypt, ins in ((True, texts), (False, sealed)):
                # (uploads, kernels and downloads on three queues, or on one; the copies cut
                # at odd places as at registrations' edges; each slice's texts sent down by
                # enqueue, as transfer/batches.py does, or all by collect)
                # the first bytes already up (a head start, transfer.batches.head_start: past
                # the first slice's end, all the texts, inside a one-slice job's) or not
                for slices, qs, step, early, first in (
                        ([off[i] for i in (0, 2, 5, 5, 9, m)], queues[:3], 0, True, off[3] + 5),
                        ([off[i] for i in (0, 1, m - 1, m)], queues[:3], 777, False, None),
                        ([off[0], off[3], off[m]], [queues[0]] * 3, 0, True, off[m]),
                        (None, queues[:3], 5000, True, 20000),
                        *((c, queues[:3], 777, True, off[5] + 64) for c in inner)):
                    monkeypatch.setattr(pinning, "copy_ranges", _cut_every(step))
                    batch = make_batch(aead_name, encrypt, tl, keys, nonces, aads, ins)
                    head = (None if first is None else
                            batches.head_start(b, batch, off[m], first, qs[0]))
                    assert first is None or head.done > first - b.view_align
                    job = drv.prepare(batch, qs[0], slices=slices, head=head)
                    job.enqueue(qs[1], qs[2] if early else None)
                    job.collect(qs[2])
                    got = job.finish()
                    what = (impl, len(set(keys)), encrypt, slices, step, early, first)
                    assert got.tobytes() == want.tobytes(), what
                    assert batch.dst.tobytes() == (whole.dst if encrypt else whole.src).tobytes(), what


def test_batch_in_pieces_on_several_queues(aead_name, device, rng, monkeypatch):
    """transfer/batches.py: a batch cut into pieces of whole messages, overlapped on several queues
    of the device (2 x depth pieces in flight), gives the texts and tags of the whole batch in one job; a tampered
    tag fails its message only."""
    from ciphergrid.aeads.base import make_batch, verify
    from ciphergrid.route import engine
    from ciphergrid.transfer import batches

    if device == "native":
        pytest.skip("the OpenSSL engine has no device queues")
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    eng = engine(device)
    lens = [0, 1, 700, 17, 300, 2048, 5, 64, 1025, 16, 333]
    keys = [rng.data(kl) for _ in range(2)] * 6
    texts = [rng.data(n) for n in lens]
    nonces = [rng.data(nl) for _ in lens]
    aads = [rng.data(i % 7) for i in range(len(lens))]
    one = make_batch(aead_name, True, tl, keys[:len(lens)], nonces, aads, texts)
    want = eng.aead_driver(aead_name).run(one)
    cut = make_batch(aead_name, True, tl, keys[:len(lens)], nonces, aads, texts)
    class Beside:   # (the caller's host work: started once, when the pieces in flight are full)
        started = []

        def start(self):
            self.started.append(len(batches.cuts(cut.off, 500)))

    got = batches.run(eng.backend, eng.aead_driver(aead_name), cut, piece_bytes=500, depth=3,
                      beside=Beside())
    assert len(batches.cuts(cut.off, 500)) > 4 and len(Beside.started) >= 1
    assert got.tobytes() == want.tobytes() and cut.dst.tobytes() == one.dst.tobytes()
    # the driver's pieces, on two kernel queues taken in turn (DeviceAEAD.kernel_queues; a
    # serial AEAD's default is several)
    from ciphergrid import aeads
    from ciphergrid.engines.device_aead.driver import SERIAL_KERNEL_QUEUES

    drv = eng.aead_driver(aead_name)
    parallel = aeads.lookup(aead_name).parallel_message
    assert drv.kernel_queues == (1 if parallel else SERIAL_KERNEL_QUEUES)
    # (every AEAD's jobs take message ranges and its pieces go in slices; a serial AEAD's only
    # for short messages: batches.layout)
    assert drv.slice_bytes and (drv.slice_mean_max is None) == parallel
    assert type(drv.prepare(make_batch(aead_name, True, tl, [], [], [], []))).ranges
    monkeypatch.setattr(drv, "piece_bytes", 700, raising=False)
    monkeypatch.setattr(drv, "kernel_queues", 2, raising=False)
    monkeypatch.setattr(drv, "slice_bytes", 300, raising=False)
    # (a long message's slices cut inside it, where the job class takes such cuts: 700, 2048,
    # 1025 and 333 bytes are longer than a slice)
    align = type(drv.prepare(make_batch(aead_name, True, tl, [], [], [], []))).cut_align
    monkeypatch.setattr(drv, "slice_align", align, raising=False)
    assert batches.slice_cuts(cut.off, 300, align) != batches.slice_cuts(cut.off, 300) or not align
    cut.dst[...] = 0
    assert batches.run(eng.backend, drv, cut, depth=2).tobytes() == want.tobytes()
    assert cut.dst.tobytes() == one.dst.tobytes()
    back = make_batch(aead_name, False, tl, keys[:len(lens)], nonces, aads,
                      [one.dst[one.off[i]:one.off[i + 1]].tobytes() for i in range(len(lens))])
    bad = want.copy()
    bad[4, 0] ^= 1
    ok = verify(back, batches.run(eng.backend, eng.aead_driver(aead_name), back,
                                  piece_bytes=500, depth=3), bad)
    assert ok.tolist() == [i != 4 for i in range(len(lens))]
    assert b"".join(back.dst[back.off[i]:back.off[i + 1]].tobytes() for i in range(len(lens)) if i != 4) \
        == b"".join(t for i, t in enumerate(texts) if i != 4)
    # the tags compared piece by piece as the pieces are done (received=): the same mask, the
    # failed messages' plaintext zeroed (two failures in different pieces, one of them the last)
    bad[-1, -1] ^= 0x80
    back.dst[...] = 0xAA
    ok = batches.run(eng.backend, eng.aead_driver(aead_name), back, received=bad,
                     piece_bytes=500, depth=3)
    assert ok.dtype == bool and ok.tolist() == [i not in (4, len(lens) - 1) for i in range(len(lens))]
    for i, t in enumerate(texts):
        got_i = back.dst[back.off[i]:back.off[i + 1]].tobytes()
        assert got_i == (bytes(len(t)) if i in (4, len(lens) - 1) else t), i


def test_batch_failing_mid_flight_aborts_every_piece(aead_name, device, rng, monkeypatch):
    """transfer/batches.py: a device error in a later piece's launches (earlier slices' downloads
    already enqueued by Job.enqueue) propagates; every job prepared is released (its key
    material wiped), and the next batch on the same queues gives the right result."""
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.route import engine
    from ciphergrid.transfer import batches

    if device == "native":
        pytest.skip("the OpenSSL engine has no device queues")
    _check_device(aead_name, device)
    kl, nl, tl = _sizes(aead_name)
    eng = engine(device)
    drv = eng.aead_driver(aead_name)
    lens = [300, 17, 700, 64, 1025, 5, 400, 333, 16, 900]
    args = ([rng.data(kl)] * len(lens), [rng.data(nl) for _ in lens],
            [rng.data(i % 3) for i in range(len(lens))], [rng.data(n) for n in lens])
    want = drv.run(make_batch(aead_name, True, tl, *args))
    monkeypatch.setattr(drv, "piece_bytes", 1200, raising=False)
    monkeypatch.setattr(drv, "slice_bytes", 400, raising=False)
    job_type = type(drv.prepare(make_batch(aead_name, True, tl, [], [], [], [])))
    launch, release, calls, released = job_type.launch, job_type.release, [], []

    def failing(self, queue, first, end, **parts):
        calls.append(first)
        if len(calls) == 5:
            raise RuntimeError("device lost")
        return launch(self, queue, first, end, **parts)

    def counted(self):
        released.append(self)
        return release(self)

    monkeypatch.setattr(job_type, "launch", failing)
    monkeypatch.setattr(job_type, "release", counted)
    prepared = []
    real_prepare = drv.prepare
    monkeypatch.setattr(drv, "prepare", lambda *a, **k: prepared.append(real_prepare(*a, **k))
                        or prepared[-1])
    with pytest.raises(RuntimeError, match="device lost"):
        batches.run(eng.backend, drv, make_batch(aead_name, True, tl, *args), depth=2)
    assert len(prepared) >= 2 and {id(j) for j in prepared} <= {id(j) for j in released}
    assert all(j.secret == [] for j in prepared)
    monkeypatch.setattr(job_type, "launch", launch)
    again = make_batch(aead_name, True, tl, *args)
    assert batches.run(eng.backend, drv, again, depth=2).tobytes() == want.tobytes()


def test_batch_in_buffers_the_pipeline_locked_in_pieces(gpu_device):
    """A buffer that the block ciphers' pipeline page-locked chunk by chunk, then encrypted as a
    batch of AEAD messages: every copy stays inside one registration (a DMA across two is
    refused: cudaErrorInvalidValue, seen in bench aead, whose copy strawman reads the batch's
    own texts).  The same as the batch in fresh (unregistered) memory."""
    from ciphergrid.route import engine
    from ciphergrid.transfer.driver import Pipeline

    b = engine(gpu_device).backend
    n, size = 80 << 20, 16384
    src = np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8)
    Pipeline(b, chunk_bytes=3 << 20, depth=2, transfer="auto").copy(src, np.empty(n, np.uint8))
    off = np.arange(0, n + 1, size, dtype=np.int64)
    nonces = np.random.default_rng(6).integers(0, 256, (off.size - 1, 16), dtype=np.uint8)
    for name in ("aes-128-gcm", "aegis-128l"):
        kl, nl, _ = _sizes(name)
        kw = dict(offsets=off, key=bytes(range(kl)), nonces=nonces[:, :nl], device=gpu_device)
        got = ciphergrid.encrypt_batch(src, name, **kw)
        want = ciphergrid.encrypt_batch(src.copy(), name, **kw)
        assert np.array_equal(got.data, want.data) and np.array_equal(got.tags, want.tags), name


@pytest.mark.parametrize("tl", [4, 12, 13, 16, 32])
def test_verify_every_bit_of_every_tag(tl):
    """aeads.base.verify (the one tag comparison, words at a time over zero-padded rows): a
    flip of any one bit of a received tag fails that message alone and zeroes its text only."""
    from ciphergrid.aeads.base import make_batch, verify

    bits = 8 * tl
    texts = [bytes([i % 251 + 1]) * 3 for i in range(bits + 1)]
    b = make_batch("aes-128-gcm", False, 16, [b"k" * 16] * len(texts),
                   [i.to_bytes(12, "big") for i in range(len(texts))], [b""] * len(texts), texts)
    b.dst[...] = b.src
    computed = np.random.default_rng(tl).integers(0, 256, (len(texts), tl), dtype=np.uint8)
    received = computed.copy()
    for i in range(bits):                      # message i: bit i of its tag flipped; the last intact
        received[i, i // 8] ^= 1 << (i % 8)
    ok = verify(b, computed, received)
    assert ok.tolist() == [False] * bits + [True]
    assert b.dst[:3 * bits].tobytes() == bytes(3 * bits) and b.dst[3 * bits:].tobytes() == texts[-1]


def test_one_job_page_locks_its_host_texts_from_a_size_on(monkeypatch):
    """batches.whole (a batch below two slices, every single message) keeps the caller's host
    texts page-locked while its job runs, as the overlapped pieces do: numpy buffers of
    PIN_MIN_BYTES or more, not smaller ones nor GPU arrays; released even when the job fails."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    from ciphergrid.transfer import batches

    held = []

    @contextmanager
    def pinned(backend, arr):
        held.append(arr)
        try:
            yield arr
        finally:
            del held[next(i for i, x in enumerate(held) if x is arr)]

    monkeypatch.setattr(batches, "pinned", pinned)
    seen = []

    class Driver:
        backend = object()

        def run(self, batch):
            seen.append([a.nbytes for a in held])
            if batch.fail:
                raise RuntimeError("device lost")
            return np.zeros((1, 16), np.uint8)

    n = batches.PIN_MIN_BYTES
    big = SimpleNamespace(src=np.zeros(n, np.uint8), dst=np.zeros(n, np.uint8), fail=False)
    small = SimpleNamespace(src=np.zeros(n - 1, np.uint8), dst=np.zeros(n - 1, np.uint8), fail=False)
    gpu = SimpleNamespace(src=memoryview(bytes(n)), dst=np.zeros(n, np.uint8), fail=False)
    batches.whole(Driver(), big)
    batches.whole(Driver(), small)
    batches.whole(Driver(), gpu)
    assert seen == [[n, n], [], [n]] and not held
    with pytest.raises(RuntimeError, match="device lost"):
        batches.whole(Driver(), SimpleNamespace(src=big.src, dst=big.dst, fail=True))
    assert not held
