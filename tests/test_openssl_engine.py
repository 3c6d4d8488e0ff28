"""The OpenSSL engine (ciphergrid.engines.openssl) against the oracle (ciphergrid.testing.oracle)
and the openssl command line: every mode and direction, threads and splits, CTR carries, XTS
sectors and XTS composed from ECB, the pyca fallback, errors, sessions and speed."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from ciphergrid import errors, registry
from ciphergrid import modes as modes_
from ciphergrid.bench import evp_speed
from ciphergrid.engines import openssl
from ciphergrid.engines.openssl import contexts, libcrypto, xts
from ciphergrid.engines.openssl import threads as workers
from ciphergrid.testing import oracle

#: every registered AES name (aes-{128,192,256}-{ecb,cbc,ctr}, aes-{128,256}-xts)
NAMES = [n for n in registry.names() if n.startswith("aes-")]
XTS_NAMES = [n for n in NAMES if n.endswith("xts")]
MIB = 1 << 20


def key_for(name: str, rng: random.Random) -> bytes:
    bits = int(name.split("-")[1])
    k = rng.randbytes(bits // 8)
    if name.endswith("xts"):
        k2 = rng.randbytes(bits // 8)
        while k2 == k:  # pragma: no cover
            k2 = rng.randbytes(bits // 8)
        k += k2
    return k


def iv_for(name: str, rng: random.Random) -> bytes | None:
    return None if name.endswith("ecb") else rng.randbytes(16)


def lengths_for(name: str) -> list[int]:
    mode = name.split("-")[2]
    if mode in ("ecb", "cbc"):
        return [0, 16, 64, 4096 + 32]
    if mode == "ctr":
        return [0, 1, 16, 17, 4096 + 5]
    return [16, 17, 31, 4096 + 7]


@pytest.fixture(params=["auto", "ctypes"])
def loop(request, monkeypatch):
    """Run a test with the compiled C loop (when a compiler is there) and with the ctypes loop."""
    if request.param == "ctypes":
        monkeypatch.setattr(libcrypto, "_LOOP", False)
    return request.param


# ----------------------------------------------------------------------------------- basics

def test_backend_info():
    assert openssl.BACKEND_NAME in ("libcrypto", "cryptography")
    v = openssl.openssl_version()
    assert isinstance(v, str) and "SSL" in v
    assert openssl.speed_loop() in ("c", "ctypes", "cryptography")


@pytest.mark.parametrize("encrypt", [True, False], ids=["enc", "dec"])
@pytest.mark.parametrize("name", NAMES)
def test_against_oracle(name, encrypt):
    rng = random.Random(hash((name, encrypt)) & 0xFFFF)
    for n in lengths_for(name):
        key, iv = key_for(name, rng), iv_for(name, rng)
        data = rng.randbytes(n)
        got = openssl.crypt(name, key, iv, data, encrypt)
        assert isinstance(got, bytes)
        assert got == oracle.crypt(name, key, iv, data, encrypt), (name, n)
        # and the inverse gets the data back
        assert openssl.crypt(name, key, iv, got, not encrypt) == data


@pytest.mark.parametrize("name", ["aes-128-ecb", "aes-256-cbc", "aes-192-ctr"])
def test_input_and_output_types(name):
    rng = random.Random(7)
    key, iv = key_for(name, rng), iv_for(name, rng)
    data = rng.randbytes(256)
    want = oracle.crypt(name, key, iv, data, True)
    for d in (data, bytearray(data), memoryview(data),
              np.frombuffer(data, dtype=np.uint8).copy()):
        assert openssl.crypt(name, key, iv, d, True) == want
    out = np.zeros(len(data), dtype=np.uint8)
    assert openssl.crypt(name, key, iv, data, True, out=out) is out
    assert out.tobytes() == want
    # in place
    buf = np.frombuffer(bytearray(data), dtype=np.uint8)
    openssl.crypt(name, key, iv, buf, True, out=buf)
    assert buf.tobytes() == want
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt(name, key, iv, data, True, out=np.zeros(len(data) + 1, dtype=np.uint8))


def test_large_output_is_bytes():
    # large outputs are written straight into a fresh bytes object
    key, iv = os.urandom(16), os.urandom(16)
    data = os.urandom(300_000)
    got = openssl.crypt("aes-128-ctr", key, iv, data, True, threads=1)
    assert type(got) is bytes and got == oracle.crypt("aes-128-ctr", key, iv, data, True)
    assert hash(got) == hash(bytes(got))


# ----------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("name", NAMES)
def test_bad_key_and_iv_sizes(name):
    rng = random.Random(1)
    key, iv = key_for(name, rng), iv_for(name, rng)
    with pytest.raises(errors.InvalidKeySize, match=str(len(key))):
        openssl.crypt(name, key + b"x", iv, bytes(32), True)
    if iv is None:
        with pytest.raises(errors.InvalidIVSize, match="no IV"):
            openssl.crypt(name, key, bytes(16), bytes(32), True)
    else:
        with pytest.raises(errors.InvalidIVSize, match="16-byte"):
            openssl.crypt(name, key, iv[:-1], bytes(32), True)
        with pytest.raises(errors.InvalidIVSize, match="16-byte"):
            openssl.crypt(name, key, None, bytes(32), True)


@pytest.mark.parametrize("name", ["aes-128-ecb", "aes-256-cbc"])
def test_whole_blocks_required(name):
    rng = random.Random(2)
    key, iv = key_for(name, rng), iv_for(name, rng)
    for n in (1, 17, 4095):
        with pytest.raises(errors.InvalidLength):
            openssl.crypt(name, key, iv, bytes(n), True)


@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_short_and_equal_halves(name):
    rng = random.Random(3)
    key, iv = key_for(name, rng), iv_for(name, rng)
    for n in (0, 1, 15):
        with pytest.raises(errors.InvalidLength):
            openssl.crypt(name, key, iv, bytes(n), True)
    half = key[: len(key) // 2]
    with pytest.raises(errors.InvalidKey):
        openssl.crypt(name, half + half, iv, bytes(32), True)
    with pytest.raises(errors.InvalidKey):
        openssl.crypt(name, half + half, None, bytes(1024), True, sector_size=512)


def test_unknown_cipher_and_bad_args():
    with pytest.raises(errors.UnsupportedCipher):
        openssl.crypt("aes-128-foo", bytes(16), bytes(16), bytes(16), True)
    if "aes-192-xts" not in registry.names():  # IEEE 1619 has no XTS-AES-192
        with pytest.raises(errors.UnsupportedCipher):
            openssl.crypt("aes-192-xts", bytes(48), bytes(16), bytes(16), True)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-ctr", bytes(16), bytes(16), bytes(16), True, threads=0)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-ctr", bytes(16), bytes(16), bytes(16), True, sector_size=512)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-ctr", bytes(16), bytes(16), "text", True)


def test_openssl_error_becomes_device_error():
    # OpenSSL 3 refuses an XTS data unit of more than 2**20 blocks; that error is reported
    if openssl.BACKEND_NAME != "libcrypto":
        pytest.skip("needs libcrypto")
    key = os.urandom(32)
    data = np.zeros((16 << 20) + 16, dtype=np.uint8)
    if not openssl.openssl_version().startswith("OpenSSL 3"):
        pytest.skip("the data-unit limit is OpenSSL 3's")
    # (the requests refuse such a unit before OpenSSL sees it: the EVP layer is called directly)
    out = np.empty_like(data)
    ctx = contexts.Ctx("aes-128-xts", key, bytes(16), True)
    try:
        with pytest.raises(errors.DeviceError, match="EVP_CipherUpdate failed: error:"):
            ctx.process(data, out, 0, data.size)
    finally:
        ctx.free()
    # the error queue was drained: the next call works
    assert openssl.crypt("aes-128-xts", key, bytes(16), data[:4096], True)
    tweaks = np.zeros((1, 16), np.uint8)
    for loop in (None, False):  # the C loop (if any) and the ctypes loop report it too
        if loop is None and libcrypto.c_loop() is None:
            continue
        saved, libcrypto._LOOP = libcrypto._LOOP, (libcrypto._LOOP if loop is None else False)
        ctx = contexts.Ctx("aes-128-xts", key, None, True)
        try:
            with pytest.raises(errors.DeviceError, match="EVP_Cipher.*failed: error:"):
                ctx.xts_units(tweaks, 0, data, out, 0, data.size, data.size)
        finally:
            ctx.free()
            libcrypto._LOOP = saved


# ----------------------------------------------------------------------------------- threads

def _ctr_ivs():
    return [
        b"\xff" * 16,                                  # wraps at once
        bytes(8) + b"\xff" * 8,                        # low 64 bits carry into the high half
        ((1 << 128) - (MIB // 16)).to_bytes(16, "big"),  # chunk 1 starts at counter 0 (4 threads)
        ((1 << 64) - 65537).to_bytes(16, "big"),         # 64-bit carry inside chunk 0
        os.urandom(16),
    ]


@pytest.mark.parametrize("encrypt", [True, False], ids=["enc", "dec"])
def test_ctr_threads_full_carry(encrypt):
    n = 4 * MIB + 5
    assert len(workers.split(n, 16, 4)) == 4  # the multi-threaded path is taken
    data = os.urandom(n)
    for iv in _ctr_ivs():
        key = os.urandom(16)
        got = openssl.crypt("aes-128-ctr", key, iv, data, encrypt, threads=4)
        assert got == oracle.crypt("aes-128-ctr", key, iv, data, encrypt), iv.hex()


@pytest.mark.parametrize("name", ["aes-256-ecb", "aes-128-cbc"])
def test_block_modes_threads(name):
    n = 4 * MIB
    data = os.urandom(n)
    key, iv = os.urandom(len(key_for(name, random.Random(0)))), iv_for(name, random.Random(5))
    for encrypt in (True, False):
        want = oracle.crypt(name, key, iv, data, encrypt)
        assert openssl.crypt(name, key, iv, data, encrypt, threads=4) == want
        # in place, threaded (CBC decryption must read chaining blocks before they are overwritten)
        buf = np.frombuffer(bytearray(data), dtype=np.uint8)
        openssl.crypt(name, key, iv, buf, encrypt, threads=3, out=buf)
        assert buf.tobytes() == want


def test_split():
    assert workers.split(100, 16, 8) == [(0, 100)]
    parts = workers.split(4 * MIB + 5, 16, 3)
    assert len(parts) == 3 and sum(p[1] for p in parts) == 4 * MIB + 5
    assert all(off % 16 == 0 for off, _ in parts)
    assert all(a[0] + a[1] == b[0] for a, b in zip(parts, parts[1:]))
    assert workers.split(MIB * 3, 4 * MIB, 4) == [(0, MIB * 3)]


def _worker_until_cancelled(left: list):
    """A job that stays busy until its run is cancelled, then takes 50 ms more to leave."""
    def job(cancel):
        deadline = time.monotonic() + 5
        while not cancel.is_set() and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.05)
        left.append("cancelled" if cancel.is_set() else "timed out")
    return job


def test_run_all_failure_cancels_and_waits():
    # a failing job cancels the others, and run_all raises only after every worker has left
    left = []
    started = threading.Event()
    busy = _worker_until_cancelled(left)

    def worker(cancel):
        started.set()
        busy(cancel)

    def failing(cancel):
        started.wait(5)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        workers.run_all([failing, worker])
    assert left == ["cancelled"]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_run_all_interrupted_while_waiting():
    # an interrupt that arrives while the calling thread waits for the workers cancels them and
    # is raised only once they have left (the contexts are freed right after)
    assert threading.current_thread() is threading.main_thread()
    left = []

    def on_alarm(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            workers.run_all([lambda cancel: None, _worker_until_cancelled(left),
                             _worker_until_cancelled(left)])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert left == ["cancelled", "cancelled"]


# ----------------------------------------------------------------------------------- XTS sectors

@pytest.mark.parametrize("name", XTS_NAMES)
@pytest.mark.parametrize("encrypt", [True, False], ids=["enc", "dec"])
def test_xts_sectors(name, encrypt, loop):
    rng = random.Random(hash((name, encrypt)) & 0xFFFF)
    key = key_for(name, rng)
    for sector, n, start in [(512, 512 * 5, 0), (512, 512 * 3 + 40, 7),
                             (4096, 4096 * 2 + 16, (1 << 64) - 2), (16, 16 * 9, 1 << 100),
                             (512, 100, (1 << 128) - 1),
                             (25, 25 * 7 + 16, 3), (500, 500 * 4 + 30, 0)]:  # unaligned units
        data = rng.randbytes(n)
        got = openssl.crypt(name, key, None, data, encrypt, sector_size=sector, start_sector=start)
        want = oracle.crypt(name, key, None, data, encrypt, sector_size=sector, start_sector=start)
        assert got == want, (sector, n, start)


@pytest.mark.parametrize("name", ["aes-128-xts", "aes-256-xts"])
def test_xts_sectors_threads(name, monkeypatch, loop):
    monkeypatch.setattr(workers, "MIN_CHUNK", 64 << 10)
    monkeypatch.setattr(xts, "CTYPES_THREAD_MIN_UNIT", 4096)
    key = key_for(name, random.Random(9))
    data = os.urandom(4096 * 64 + 48)
    start = 12345
    want = oracle.crypt(name, key, None, data, True, sector_size=4096, start_sector=start)
    got = openssl.crypt(name, key, None, data, True, sector_size=4096, start_sector=start,
                        threads=3)
    assert got == want
    back = openssl.crypt(name, key, None, want, False, sector_size=4096, start_sector=start,
                         threads=3)
    assert back == data


def test_xts_from_ecb_192_against_oracle(monkeypatch):
    # the ECB-composed XTS (for registered XTS names OpenSSL lacks) with a key size OpenSSL has
    # no XTS for, against the oracle (its XTS composed over AES-192 ECB), per unit and in sectors
    monkeypatch.setattr(xts, "ECB_BATCH", 1024)
    spec = registry.CipherSpec("aes-192-xts", registry.lookup("aes-192-ecb").algorithm, 24, modes_.XTS)
    rng = random.Random(12)
    key = rng.randbytes(48)
    for sector, n in [(None, 16), (None, 33), (None, 1000), (512, 512 * 5 + 20), (256, 256 * 9),
                      (33, 33 * 4 + 17)]:
        iv = rng.randbytes(16) if sector is None else None
        data = rng.randbytes(n)
        for encrypt in (True, False):
            want = oracle.crypt(spec, key, iv, data, encrypt, sector_size=sector,
                                start_sector=9 if sector else None)
            dst = np.zeros(n, dtype=np.uint8)
            xts.from_ecb(spec, key, iv, np.frombuffer(data, dtype=np.uint8), dst, encrypt, 2,
                         sector, 9)
            assert dst.tobytes() == want, (sector, n, encrypt)


def test_xts_from_ecb_matches_openssl(monkeypatch):
    # the ECB-composed XTS agrees with OpenSSL's XTS where OpenSSL has one
    monkeypatch.setattr(xts, "ECB_BATCH", 2048)  # several batches
    for name in XTS_NAMES:
        spec = registry.lookup(name)
        key = key_for(name, random.Random(11))
        for sector, n, iv in [(None, 16, os.urandom(16)), (None, 1000, os.urandom(16)),
                              (512, 512 * 9 + 17, None), (1024, 1024 * 5, None),
                              (40, 40 * 6 + 20, None)]:
            data = os.urandom(n)
            for encrypt in (True, False):
                want = openssl.crypt(name, key, iv, data, encrypt, sector_size=sector,
                                     start_sector=3)
                dst = np.zeros(n, dtype=np.uint8)
                xts.from_ecb(spec, key, iv, np.frombuffer(data, dtype=np.uint8), dst,
                             encrypt, 2, sector, 3)
                assert dst.tobytes() == want, (name, sector, n, encrypt)


def test_xts_sector_errors():
    key = os.urandom(32)
    with pytest.raises(errors.InvalidIVSize):
        openssl.crypt("aes-128-xts", key, bytes(16), bytes(1024), True, sector_size=512)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-xts", key, None, bytes(1024), True, sector_size=15)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-xts", key, None, bytes(1024), True, sector_size=0)
    with pytest.raises(errors.InvalidLength):  # the last sector is 8 bytes
        openssl.crypt("aes-128-xts", key, None, bytes(1032), True, sector_size=512)
    with pytest.raises(errors.InvalidArgument):
        openssl.crypt("aes-128-xts", key, None, bytes(1024), True, sector_size=512, start_sector=-1)


# ----------------------------------------------------------------------------------- streams

@pytest.mark.parametrize("name", ["aes-128-cbc", "aes-192-cbc", "aes-256-cbc", "aes-128-ecb",
                                  "aes-256-ctr", "aes-128-xts"])
def test_session_pieces(name):
    """The split primitive on the OpenSSL engine: a message run piece by piece through one
    session (each piece from its first block, CBC with the chaining value carried) gives the
    one-shot bytes."""
    from ciphergrid.engines.openssl import OpenSSLEngine
    from ciphergrid.request import make_request

    rng = random.Random(13)
    spec = registry.lookup(name)
    key, iv = key_for(name, rng), iv_for(name, rng)
    sector = 512 if spec.mode.key_count == 2 else None
    if sector:
        iv = None
    unit = sector or 16
    data = rng.randbytes(unit * 60)
    for encrypt in (True, False):
        want = openssl.crypt(name, key, iv, data, encrypt, sector_size=sector,
                             start_sector=7 if sector else 0)
        req = make_request(spec, key, iv, encrypt, sector_size=sector,
                           start_sector=7 if sector else None)
        got, pos, chain = [], 0, None
        with OpenSSLEngine().session(req) as s:
            assert key.hex() not in repr(s.req)
            while pos < len(data):
                piece = np.frombuffer(data[pos: pos + unit * rng.randint(0, 9)], np.uint8)
                out = np.empty_like(piece)
                s.crypt(piece, out, pos // 16, chain)
                chain = req.mode.carry(req, piece, out) or chain
                got.append(out.tobytes())
                pos += piece.nbytes
        assert b"".join(got) == want, (name, encrypt)


# ----------------------------------------------------------------------------------- speed

@pytest.mark.parametrize("name,size,threads", [("aes-128-ctr", 16384, 1), ("aes-256-xts", 4096, 2),
                                               ("aes-128-cbc", 16, 1)])
def test_speed(name, size, threads, loop):
    bps = evp_speed.speed(name, size, threads=threads, seconds=0.05)
    assert bps > 0


def test_speed_bad_size():
    with pytest.raises(errors.InvalidLength):
        evp_speed.speed("aes-128-cbc", 17, seconds=0.01)
    with pytest.raises(errors.InvalidLength):
        evp_speed.speed("aes-128-xts", 8, seconds=0.01)


# ----------------------------------------------------------------------------------- fallback

def test_cryptography_fallback(monkeypatch):
    monkeypatch.setattr(contexts, "Ctx", contexts.PycaCtx)
    monkeypatch.setattr(workers, "MIN_CHUNK", 4096)
    rng = random.Random(16)
    for name in NAMES:
        for n in lengths_for(name)[-2:]:
            key, iv = key_for(name, rng), iv_for(name, rng)
            data = rng.randbytes(n)
            for encrypt in (True, False):
                got = openssl.crypt(name, key, iv, data, encrypt, threads=2)
                assert got == oracle.crypt(name, key, iv, data, encrypt), (name, n, encrypt)
    key = key_for("aes-256-xts", rng)
    data = rng.randbytes(512 * 20 + 32)
    got = openssl.crypt("aes-256-xts", key, None, data, True, sector_size=512, start_sector=5,
                        threads=2)
    assert got == oracle.crypt("aes-256-xts", key, None, data, True, sector_size=512,
                               start_sector=5)
    assert evp_speed.speed("aes-128-ctr", 4096, seconds=0.02) > 0


# ----------------------------------------------------------------------------------- openssl CLI

@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl on PATH")
@pytest.mark.parametrize("name,n", [("aes-128-ctr", 1000), ("aes-128-ctr", 70000),
                                    ("aes-256-cbc", 4096), ("aes-192-ecb", 64)])
@pytest.mark.parametrize("encrypt", [True, False], ids=["enc", "dec"])
def test_openssl_cli(name, n, encrypt):
    rng = random.Random(n)
    key, iv = key_for(name, rng), iv_for(name, rng)
    if name.endswith("ctr"):
        iv = bytes(8) + b"\xff" * 7 + b"\xf0"  # the counter carries past 64 bits
    data = rng.randbytes(n)
    cmd = ["openssl", "enc", f"-{name}", "-nopad", "-K", key.hex()]
    if iv is not None:
        cmd += ["-iv", iv.hex()]
    if not encrypt:
        cmd.append("-d")
    res = subprocess.run(cmd, input=data, capture_output=True, check=True)
    assert openssl.crypt(name, key, iv, data, encrypt) == res.stdout
