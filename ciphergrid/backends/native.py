"""The CPU ("native") engine: OpenSSL's EVP ciphers (AES-NI), driven from a thread pool.

The system ``libcrypto`` is called through :mod:`ctypes`.  ctypes releases the GIL for the
duration of every foreign call, so the worker threads encrypt in parallel.  When no libcrypto can
be loaded, pyca ``cryptography`` is used instead (same results, maybe without thread scaling).
:data:`BACKEND_NAME` says which one is in use.

Public API
----------
* :func:`crypt`        one-shot, multi-threaded encryption/decryption of a whole buffer;
* :func:`speed`        the ``openssl speed -evp`` baseline of the benchmark;
* :func:`openssl_version`, :data:`BACKEND_NAME`, :func:`speed_loop`.

Semantics follow ``openssl enc -nopad``: no padding is ever added or removed here.  XTS without a
sector size treats the whole buffer as one data unit whose tweak is ``iv`` (OpenSSL semantics);
with ``sector_size=S`` the buffer is a run of S-byte units with dm-crypt ``plain64`` tweaks.
A registered XTS name that OpenSSL has no EVP cipher for (XTS of another 128-bit block cipher) is
composed from that cipher's ECB mode (IEEE 1619, ciphertext stealing included).

Loops that make one EVP call per small buffer (:func:`speed`, per-sector XTS) run in a tiny C
helper compiled once with the system C compiler when there is one (see :func:`speed_loop`);
Python-level ctypes calls cost more than OpenSSL's work on a small buffer.

Environment: ``CIPHERGRID_NATIVE_BACKEND=cryptography`` forces the pyca fallback;
``CIPHERGRID_NATIVE_LOOP=ctypes`` disables the C helper; ``CIPHERGRID_CACHE_DIR`` (default
``$XDG_CACHE_HOME/ciphergrid`` or ``~/.cache/ciphergrid``) is where the helper is cached.

Keys are copied into ctypes buffers that are zeroed right after ``EVP_CipherInit_ex``; they are
never logged or shown in a repr.  Contexts are released with ``EVP_CIPHER_CTX_free`` (which
clears them).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from .. import registry
from ..errors import (
    DeviceError,
    InvalidArgument,
    InvalidKey,
    InvalidLength,
    UnsupportedCipher,
)

__all__ = ["BACKEND_NAME", "openssl_version", "crypt", "run", "speed", "speed_loop"]

#: smallest amount of work (bytes) given to one thread; smaller inputs run in the calling thread
MIN_CHUNK = 1 << 20
#: largest length passed to one EVP_CipherUpdate (its length argument is a C int)
MAX_UPDATE = 1 << 30
#: bytes a worker processes between two looks at its run's cancel flag (an interrupt stops every
#: worker within one step, ~10-30 ms, before the contexts are freed)
STEP = 32 << 20
#: data processed per batch when XTS is composed from ECB (bounds the temporary mask memory)
_XTS_ECB_BATCH = 4 << 20
#: without the C loop, sector-mode XTS uses threads only for units at least this large (below,
#: the per-unit ctypes calls make threads slower than one thread: measured 0.14 vs 0.21 GB/s at
#: 512-byte sectors, 0.78 vs 1.49 GB/s at 4 KiB on 2 cores)
_XTS_CTYPES_THREAD_MIN_UNIT = 32 << 10


# ---------------------------------------------------------------------------------------------
# libcrypto through ctypes
# ---------------------------------------------------------------------------------------------

_c_int_p = ctypes.POINTER(ctypes.c_int)


def _load_libcrypto():
    if os.environ.get("CIPHERGRID_NATIVE_BACKEND", "").strip().lower() == "cryptography":
        return None
    names = []
    found = ctypes.util.find_library("crypto")
    if found:
        names.append(found)
    names += ["libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", "libcrypto.3.dylib",
              "libcrypto.dylib"]
    for libname in names:
        try:
            lib = ctypes.CDLL(libname)
        except OSError:
            continue
        try:
            _declare(lib)
        except AttributeError:
            continue  # too old (or not OpenSSL): missing symbols
        return lib
    return None


def _declare(lib) -> None:
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.EVP_CIPHER_CTX_new.restype = vp
    lib.EVP_CIPHER_CTX_new.argtypes = ()
    lib.EVP_CIPHER_CTX_free.restype = None
    lib.EVP_CIPHER_CTX_free.argtypes = (vp,)
    lib.EVP_CipherInit_ex.restype = i
    lib.EVP_CipherInit_ex.argtypes = (vp, vp, vp, vp, vp, i)
    lib.EVP_CIPHER_CTX_set_padding.restype = i
    lib.EVP_CIPHER_CTX_set_padding.argtypes = (vp, i)
    lib.EVP_CipherUpdate.restype = i
    lib.EVP_CipherUpdate.argtypes = (vp, vp, _c_int_p, vp, i)
    lib.EVP_CipherFinal_ex.restype = i
    lib.EVP_CipherFinal_ex.argtypes = (vp, vp, _c_int_p)
    lib.ERR_get_error.restype = ctypes.c_ulong
    lib.ERR_get_error.argtypes = ()
    lib.ERR_error_string_n.restype = None
    lib.ERR_error_string_n.argtypes = (ctypes.c_ulong, ctypes.c_char_p, ctypes.c_size_t)
    try:  # OpenSSL 3: explicit fetch from the default provider
        lib.EVP_CIPHER_fetch.restype = vp
        lib.EVP_CIPHER_fetch.argtypes = (vp, ctypes.c_char_p, ctypes.c_char_p)
    except AttributeError:
        pass
    lib.EVP_get_cipherbyname.restype = vp
    lib.EVP_get_cipherbyname.argtypes = (ctypes.c_char_p,)
    try:
        lib.OpenSSL_version.restype = ctypes.c_char_p
        lib.OpenSSL_version.argtypes = (i,)
    except AttributeError:
        pass


_LIB = _load_libcrypto()


def _raw_functions():
    """The hot-loop functions again, without argtypes: called with prebuilt ctypes objects,
    which skips the per-call argument conversion."""
    if _LIB is None:
        return None
    raw = ctypes.CDLL(_LIB._name)
    for fn in (raw.EVP_CipherInit_ex, raw.EVP_CipherUpdate):
        fn.restype = ctypes.c_int
    return raw


_RAW = _raw_functions()

#: "libcrypto" (system OpenSSL through ctypes) or "cryptography" (pyca fallback)
BACKEND_NAME = "libcrypto" if _LIB is not None else "cryptography"


def openssl_version() -> str:
    """Version text of the OpenSSL in use, e.g. ``"OpenSSL 3.0.13 30 Jan 2024"``."""
    if _LIB is not None and hasattr(_LIB, "OpenSSL_version"):
        return _LIB.OpenSSL_version(0).decode("ascii", "replace")
    from cryptography.hazmat.backends.openssl import backend

    return backend.openssl_version_text()


def _openssl_errors() -> str:
    """Drain this thread's OpenSSL error queue into one string."""
    msgs = []
    buf = ctypes.create_string_buffer(256)
    while True:
        code = _LIB.ERR_get_error()
        if not code:
            break
        _LIB.ERR_error_string_n(code, buf, len(buf))
        msgs.append(buf.value.decode("ascii", "replace"))
    return "; ".join(msgs) or "no OpenSSL error queued"


def _fail(what: str, exc=DeviceError):
    raise exc(f"OpenSSL {what} failed: {_openssl_errors()}")


_CIPHERS: dict[str, int] = {}
_CIPHERS_LOCK = threading.Lock()


def _evp_cipher(evp_name: str) -> int:
    """EVP_CIPHER pointer for a name (cached for the life of the process), or UnsupportedCipher."""
    ptr = _CIPHERS.get(evp_name)
    if ptr:
        return ptr
    with _CIPHERS_LOCK:
        ptr = _CIPHERS.get(evp_name)
        if ptr:
            return ptr
        raw = evp_name.encode("ascii")
        ptr = None
        if hasattr(_LIB, "EVP_CIPHER_fetch"):
            ptr = _LIB.EVP_CIPHER_fetch(None, raw, None)
        if not ptr:
            ptr = _LIB.EVP_get_cipherbyname(raw)
        if not ptr:
            _openssl_errors()  # clear the queue
            raise UnsupportedCipher(f"OpenSSL ({openssl_version()}) has no cipher {evp_name!r}")
        _CIPHERS[evp_name] = ptr
        return ptr


def _has_evp(evp_name: str) -> bool:
    if _LIB is None:
        return _pyca_mode(evp_name) is not None
    try:
        _evp_cipher(evp_name)
        return True
    except UnsupportedCipher:
        return False


# --- optional C loop --------------------------------------------------------------------------
#
# A ctypes call costs ~0.5 us, which is more than OpenSSL needs for a small buffer (~25 ns for
# 16 bytes, ~150 ns for 1 KiB with AES-NI), and every call releases and retakes the GIL, so
# threads convoy on it.  ``openssl speed`` and per-sector XTS make one EVP call per small buffer;
# to measure OpenSSL and not Python, those two loops run in a tiny C helper when a C compiler is
# available (built once, cached).  The helper takes the EVP functions as pointers (no headers, no
# link flags).  Without a compiler the same loops run in Python through ctypes (slower for small
# buffers); :func:`speed_loop` says which one is in use.

_LOOP_SRC = r"""
typedef int (*cg_upd_t)(void *, unsigned char *, int *, const unsigned char *, int);
typedef int (*cg_init_t)(void *, const void *, void *, const unsigned char *,
                         const unsigned char *, int);

/* iters in-place updates of buf[0:size]; returns iters, or -(i+1) if update i failed */
long long cg_spin(cg_upd_t upd, void *ctx, unsigned char *buf, int size, long long iters)
{
    int outl;
    long long i;
    for (i = 0; i < iters; i++)
        if (upd(ctx, buf, &outl, buf, size) != 1 || outl != size)
            return -(i + 1);
    return iters;
}

/* XTS data units of `unit` bytes over src[0:n] -> dst (the last may be shorter); unit k's tweak
   is tweaks[16k:16k+16]; returns the number of units, or -(k+1) if unit k failed */
long long cg_xts_units(cg_init_t init, cg_upd_t upd, void *ctx, const unsigned char *tweaks,
                       const unsigned char *src, unsigned char *dst, long long n, int unit)
{
    long long pos = 0, k = 0;
    int outl, m;
    while (pos < n) {
        m = (n - pos >= unit) ? unit : (int)(n - pos);
        if (init(ctx, 0, 0, 0, tweaks + 16 * k, -1) != 1)
            return -(k + 1);
        if (upd(ctx, dst + pos, &outl, src + pos, m) != 1 || outl != m)
            return -(k + 1);
        pos += m;
        k++;
    }
    return k;
}
"""

_LOOP = None          # the loaded helper (ctypes CDLL), or False when it cannot be had
_LOOP_LOCK = threading.Lock()


def _build_loop():
    import hashlib
    import platform
    import shutil
    import subprocess
    import tempfile

    if os.environ.get("CIPHERGRID_NATIVE_LOOP", "").strip().lower() == "ctypes":
        return None
    cc = None
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            cc = shutil.which(cand)
            break
    if cc is None:
        return None
    tag = hashlib.sha256(
        (_LOOP_SRC + platform.machine() + sys.platform + cc).encode()).hexdigest()[:16]
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    from ..settings import cache_dir

    d = cache_dir()
    path = os.path.join(d, f"native_loop_{tag}{suffix}")
    if not os.path.exists(path):
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            src = os.path.join(tmp, "loop.c")
            with open(src, "w") as f:
                f.write(_LOOP_SRC)
            obj = os.path.join(tmp, "loop" + suffix)
            res = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", obj, src],
                                 capture_output=True, timeout=60)
            if res.returncode != 0:
                return None
            os.replace(obj, path)  # atomic: concurrent builders leave one good file
    lib = ctypes.CDLL(path)
    vp, ll, i = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int
    lib.cg_spin.restype = ll
    lib.cg_spin.argtypes = (vp, vp, vp, i, ll)
    lib.cg_xts_units.restype = ll
    lib.cg_xts_units.argtypes = (vp, vp, vp, vp, vp, vp, ll, i)
    return lib


def _loop():
    """The C loop helper, or None (no compiler, or disabled with CIPHERGRID_NATIVE_LOOP=ctypes)."""
    global _LOOP
    if _LOOP is None:
        with _LOOP_LOCK:
            if _LOOP is None:
                try:
                    _LOOP = _build_loop() or False
                except Exception:  # noqa: BLE001 - any failure: use the ctypes loops
                    _LOOP = False
    return _LOOP or None


def speed_loop() -> str:
    """How :func:`speed` and per-sector XTS drive OpenSSL: ``"c"`` (compiled helper loop),
    ``"ctypes"`` (one Python-level call per buffer) or ``"cryptography"`` (pyca fallback)."""
    if _LIB is None:
        return "cryptography"
    return "c" if _loop() is not None else "ctypes"


def _fn_addr(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


class _EvpCtx:
    """One EVP_CIPHER_CTX, initialised with the key (and IV) at construction."""

    __slots__ = ("ptr", "ivbuf", "outl", "poutl", "scratch", "__weakref__")

    def __init__(self, evp_name: str, key: bytes, iv: bytes | None, encrypt: bool):
        cipher = _evp_cipher(evp_name)
        self.ptr = _LIB.EVP_CIPHER_CTX_new()
        if not self.ptr:
            _fail("EVP_CIPHER_CTX_new")
        self.ivbuf = ctypes.create_string_buffer(32)
        self.outl = ctypes.c_int(0)
        self.poutl = ctypes.byref(self.outl)
        self.scratch = ctypes.create_string_buffer(64)
        keybuf = ctypes.create_string_buffer(max(1, len(key)))
        try:
            ctypes.memmove(keybuf, key, len(key))
            ivp = None
            if iv is not None:
                ctypes.memmove(self.ivbuf, iv, len(iv))
                ivp = ctypes.addressof(self.ivbuf)
            ok = _LIB.EVP_CipherInit_ex(self.ptr, cipher, None, ctypes.addressof(keybuf), ivp,
                                        1 if encrypt else 0)
        finally:
            ctypes.memset(keybuf, 0, len(keybuf))
        if ok != 1:
            self.free()
            _fail("EVP_CipherInit_ex")
        if _LIB.EVP_CIPHER_CTX_set_padding(self.ptr, 0) != 1:
            self.free()
            _fail("EVP_CIPHER_CTX_set_padding")

    def set_iv(self, iv: bytes) -> None:
        ctypes.memmove(self.ivbuf, iv, len(iv))
        if _LIB.EVP_CipherInit_ex(self.ptr, None, None, None, ctypes.addressof(self.ivbuf), -1) != 1:
            _fail("EVP_CipherInit_ex (IV)")

    def process(self, src: np.ndarray, dst: np.ndarray, off: int, n: int, cancel=None) -> None:
        """EVP_CipherUpdate over src[off:off+n] -> dst[off:off+n] in steps of STEP bytes, looking
        at ``cancel`` (a threading.Event) between steps."""
        update, ctx, poutl, outl = _LIB.EVP_CipherUpdate, self.ptr, self.poutl, self.outl
        s = src.ctypes.data + off
        d = dst.ctypes.data + off
        done = 0
        while done < n:
            _check_cancel(cancel)
            m = min(STEP, n - done)
            if update(ctx, d + done, poutl, s + done, m) != 1:
                _fail("EVP_CipherUpdate")
            if outl.value != m:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {m}")
            done += m

    def final(self) -> None:
        if _LIB.EVP_CipherFinal_ex(self.ptr, self.scratch, self.poutl) != 1:
            _fail("EVP_CipherFinal_ex")
        if self.outl.value != 0:
            raise DeviceError(f"EVP_CipherFinal_ex returned {self.outl.value} unexpected bytes")

    def xts_units(self, tweaks: np.ndarray, first: int, src: np.ndarray, dst: np.ndarray,
                  off: int, n: int, unit: int) -> None:
        """Data units of ``unit`` bytes over [off, off+n); unit k's tweak is tweaks[first+k]."""
        s = src.ctypes.data + off
        d = dst.ctypes.data + off
        t = tweaks.ctypes.data + 16 * first
        loop = _loop()
        if loop is not None:
            r = loop.cg_xts_units(_fn_addr(_LIB.EVP_CipherInit_ex), _fn_addr(_LIB.EVP_CipherUpdate),
                                  self.ptr, t, s, d, n, unit)
            if r < 0:
                _fail(f"EVP_CipherInit_ex/EVP_CipherUpdate (XTS unit {first - r - 1})")
            return
        # one ctypes call per step, with prebuilt ctypes arguments (about half the call cost)
        init, update = _RAW.EVP_CipherInit_ex, _RAW.EVP_CipherUpdate
        ctx, poutl, outl = ctypes.c_void_p(self.ptr), self.poutl, self.outl
        nul, back = ctypes.c_void_p(None), ctypes.c_int(-1)
        tp, sp, dp = ctypes.c_void_p(t), ctypes.c_void_p(s), ctypes.c_void_p(d)
        mm = ctypes.c_int(unit)
        pos = 0
        while pos < n:
            m = unit if n - pos >= unit else n - pos
            if m != mm.value:
                mm = ctypes.c_int(m)
            if init(ctx, nul, nul, nul, tp, back) != 1:
                _fail("EVP_CipherInit_ex (tweak)")
            if update(ctx, dp, poutl, sp, mm) != 1:
                _fail("EVP_CipherUpdate (XTS unit)")
            if outl.value != m:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {m}")
            pos += m
            tp.value += 16
            sp.value += m
            dp.value += m

    def spin(self, buf: np.ndarray, size: int, deadline: float) -> int:
        """In-place EVP_CipherUpdate of buf[:size] until ``deadline``; returns bytes processed.

        One EVP call per buffer, as ``openssl speed`` does; the clock is read between batches
        of about 1 MiB (at least one call)."""
        addr = buf.ctypes.data
        clock = time.perf_counter
        batch = max(1, (1 << 20) // size)
        done = 0
        loop = _loop()
        if loop is not None:
            spin, upd = loop.cg_spin, _fn_addr(_LIB.EVP_CipherUpdate)
            while True:
                if spin(upd, self.ptr, addr, size, batch) != batch:
                    _fail("EVP_CipherUpdate")
                done += batch * size
                if clock() >= deadline:
                    return done
        update = _RAW.EVP_CipherUpdate
        ctx, poutl, outl = ctypes.c_void_p(self.ptr), self.poutl, self.outl
        ap, sz = ctypes.c_void_p(addr), ctypes.c_int(size)
        batch = max(1, min(4096, (1 << 18) // size))
        while True:
            for _ in range(batch):
                if update(ctx, ap, poutl, ap, sz) != 1:
                    _fail("EVP_CipherUpdate")
            if outl.value != size:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {size}")
            done += batch * size
            if clock() >= deadline:
                return done

    def free(self) -> None:
        if self.ptr:
            _LIB.EVP_CIPHER_CTX_free(self.ptr)
            self.ptr = None


# ---------------------------------------------------------------------------------------------
# pyca cryptography fallback (same interface as _EvpCtx)
# ---------------------------------------------------------------------------------------------

def _pyca_mode(evp_name: str):
    """(algorithm class, mode name) for pyca, or None when pyca lacks the cipher."""
    try:
        spec = registry.lookup(evp_name)
    except UnsupportedCipher:
        return None
    from cryptography.hazmat.primitives.ciphers import algorithms

    algs = {"aes": "AES", "camellia": "Camellia", "sm4": "SM4", "aria": "ARIA"}
    alg = getattr(algorithms, algs.get(spec.algorithm.name, ""), None)
    if alg is None:
        return None
    if spec.mode.key_count == 2 and spec.key_size not in (16, 32):
        return None
    return alg, spec.mode.name


class _PycaCtx:
    __slots__ = ("alg", "mode", "encrypt", "ctx")

    def __init__(self, evp_name: str, key: bytes, iv: bytes | None, encrypt: bool):
        found = _pyca_mode(evp_name)
        if found is None:
            raise UnsupportedCipher(f"cryptography has no cipher {evp_name!r}")
        alg, self.mode = found
        self.alg = alg(bytes(key))
        self.encrypt = encrypt
        self.ctx = None
        if iv is not None or self.mode == "ecb":
            self.set_iv(iv)

    def set_iv(self, iv: bytes | None) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, modes

        mode = {"ecb": lambda _: modes.ECB(), "cbc": modes.CBC, "ctr": modes.CTR,
                "xts": modes.XTS}[self.mode](None if iv is None else bytes(iv))
        try:
            c = Cipher(self.alg, mode)
            self.ctx = c.encryptor() if self.encrypt else c.decryptor()
        except ValueError as e:
            raise InvalidKey(str(e)) from None

    def process(self, src: np.ndarray, dst: np.ndarray, off: int, n: int, cancel=None) -> None:
        done = 0
        while done < n:
            _check_cancel(cancel)
            m = min(STEP, n - done)
            res = self.ctx.update(memoryview(src[off + done: off + done + m]))
            if len(res) != m:
                raise DeviceError(f"cryptography update returned {len(res)} bytes for {m}")
            dst[off + done: off + done + m] = np.frombuffer(res, dtype=np.uint8)
            done += m

    def final(self) -> None:
        try:
            res = self.ctx.finalize()
        except ValueError as e:
            raise InvalidLength(str(e)) from None
        if res:
            raise DeviceError(f"cryptography finalize returned {len(res)} unexpected bytes")

    def xts_units(self, tweaks, first, src, dst, off, n, unit) -> None:
        pos = 0
        k = first
        while pos < n:
            m = min(unit, n - pos)
            self.set_iv(tweaks[k].tobytes())
            self.process(src, dst, off + pos, m)
            pos += m
            k += 1

    def spin(self, buf: np.ndarray, size: int, deadline: float) -> int:
        out = bytearray(size + 64)
        mv = memoryview(buf)[:size]
        clock = time.perf_counter
        batch = max(1, min(4096, (1 << 18) // max(1, size)))
        done = 0
        while True:
            for _ in range(batch):
                self.ctx.update_into(mv, out)
            done += batch * size
            if clock() >= deadline:
                return done

    def free(self) -> None:
        self.ctx = None
        self.alg = None


_Ctx = _EvpCtx if _LIB is not None else _PycaCtx


# ---------------------------------------------------------------------------------------------
# buffers
# ---------------------------------------------------------------------------------------------

def _as_u8(data) -> np.ndarray:
    """A flat uint8 view of a C-contiguous bytes-like object or array (no copy when possible)."""
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return data.reshape(-1).view(np.uint8)
    try:
        mv = memoryview(data)
    except TypeError:
        raise InvalidArgument(
            f"data must be bytes-like or a numpy array, not {type(data).__name__}") from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return np.frombuffer(mv, dtype=np.uint8)


def _out_view(out, n: int) -> np.ndarray:
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise InvalidArgument("out must be a writable C-contiguous array")
        view = out.reshape(-1).view(np.uint8)
    else:
        try:
            view = np.frombuffer(out, dtype=np.uint8)
        except (TypeError, ValueError):
            raise InvalidArgument("out must be a writable buffer") from None
        if not view.flags.writeable:
            raise InvalidArgument("out must be writable")
    if view.size != n:
        raise InvalidArgument(f"out has {view.size} bytes, the data {n}")
    return view


def _new_bytes_factory():
    """Allocate a fresh ``bytes`` of n bytes and a writable view of it, without a final copy.

    On CPython a bytes object made by PyBytes_FromStringAndSize(NULL, n) is private until it is
    returned, so filling it in place is safe (this is what CPython's own C code does).  The trick
    is checked once here and used for large sizes only; otherwise a bytearray is copied.
    """
    if sys.implementation.name != "cpython":
        return None
    try:
        fn = ctypes.pythonapi.PyBytes_FromStringAndSize
        fn.restype = ctypes.py_object
        fn.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
        mem = ctypes.pythonapi.PyMemoryView_FromMemory
        mem.restype = ctypes.py_object
        mem.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
        offset = bytes.__basicsize__ - 1
        probe = fn(None, 64)
        ctypes.memset(id(probe) + offset, 0x5A, 64)
        if probe != b"\x5a" * 64:
            return None
    except Exception:  # pragma: no cover - exotic interpreters
        return None

    def make(n: int):
        b = fn(None, n)
        # a writable memoryview on the private buffer (PyBUF_WRITE = 0x200); b stays referenced
        # by the caller for as long as the view is used
        return b, np.frombuffer(mem(id(b) + offset, n, 0x200), dtype=np.uint8)

    return make


_MAKE_BYTES = _new_bytes_factory()
_BYTES_TRICK_MIN = 1 << 16


def _new_output(n: int):
    """(result object, writable uint8 view) for a fresh output of n bytes."""
    if _MAKE_BYTES is not None and n >= _BYTES_TRICK_MIN:
        return _MAKE_BYTES(n)
    ba = bytearray(n)
    return ba, np.frombuffer(ba, dtype=np.uint8)


# ---------------------------------------------------------------------------------------------
# thread pool and work split
# ---------------------------------------------------------------------------------------------

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            old = _POOL
            _POOL_SIZE = max(workers, os.cpu_count() or 1)
            _POOL = ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="cg-native")
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


class _Cancelled(Exception):
    """A worker stopped because its run was cancelled (another part failed, or an interrupt)."""


def _check_cancel(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise _Cancelled()


def _run_all(jobs) -> None:
    """Run callables ``job(cancel)``: the first in this thread, the rest on the pool; wait for
    all, then raise the first error.

    A failure or an interrupt (KeyboardInterrupt, a signal turned into an exception) sets
    ``cancel``: the other workers stop at their next step.  This returns only when no worker is
    inside OpenSSL any more, even when interrupted while waiting: the callers free the EVP
    contexts right after, and the interpreter may be about to exit."""
    cancel = threading.Event()
    if len(jobs) == 1:
        jobs[0](cancel)
        return
    pool = _pool(len(jobs) - 1)
    futures = [pool.submit(j, cancel) for j in jobs[1:]]
    first_exc = None
    try:
        jobs[0](cancel)
    except BaseException as e:  # noqa: BLE001 - re-raised after the others stopped
        first_exc = e
        cancel.set()
    while True:
        try:
            wait(futures)
            break
        except BaseException as e:  # noqa: BLE001 - interrupted while waiting: wait again
            cancel.set()
            if first_exc is None:
                first_exc = e
    if first_exc is not None:
        raise first_exc
    for f in futures:
        f.result()


def _split(n: int, unit: int, threads: int, min_chunk: int | None = None) -> list[tuple[int, int]]:
    """Cut n bytes into (offset, length) parts on ``unit`` boundaries, each >= min_chunk
    (except when there is only one), at most ``threads`` of them; a tail shorter than ``unit``
    goes with the last part."""
    min_chunk = MIN_CHUNK if min_chunk is None else min_chunk
    nfull = n // unit
    parts = min(threads, max(1, n // max(1, min_chunk)), max(1, nfull))
    if parts <= 1:
        return [(0, n)]
    base, extra = divmod(nfull, parts)
    out = []
    off = 0
    for k in range(parts):
        length = (base + (1 if k < extra else 0)) * unit
        out.append((off, length))
        off += length
    last_off, last_len = out[-1]
    out[-1] = (last_off, last_len + (n - off))
    return out


# ---------------------------------------------------------------------------------------------
# crypt
# ---------------------------------------------------------------------------------------------

def crypt(name: str, key: bytes, iv: bytes | None, data, encrypt: bool, *,
          threads: int | None = None, sector_size: int | None = None, start_sector: int = 0,
          out=None):
    """Encrypt or decrypt ``data`` with the OpenSSL cipher ``name`` (no padding).

    Returns ``bytes``, or ``out`` (filled in) when a preallocated buffer is given.  The result is
    byte-identical to ``openssl enc -<name> -nopad`` and to pyca cryptography.  Large inputs are
    split over ``threads`` threads (default: all CPUs) in parts of at least :data:`MIN_CHUNK`.
    XTS: without ``sector_size`` the whole input is one data unit with tweak ``iv``; with
    ``sector_size=S`` (usually a multiple of 16; any S >= 16 works) unit n has the tweak
    ``(start_sector + n)`` as 16 little-endian bytes (dm-crypt plain64), ``iv`` must be None, and
    the last unit may be shorter than S but not shorter than 16 bytes.  Arguments are checked by
    ``request.make_request`` (the same checks as every engine).
    """
    from ..request import make_request

    try:
        key = bytes(key)
    except TypeError:
        raise InvalidArgument("key must be bytes-like") from None
    req = make_request(registry.lookup(name), key, iv, encrypt, sector_size=sector_size,
                       start_sector=start_sector if sector_size is not None else None)
    if threads is None:
        threads = os.cpu_count() or 1
    threads = int(threads)
    if threads < 1:
        raise InvalidArgument(f"threads must be >= 1, got {threads}")
    src = _as_u8(data)
    n = src.size
    req.check_length(n)
    if out is not None:
        result = out
        dst = _out_view(out, n)
    else:
        result, dst = _new_output(n)
    if n == 0:
        return result if out is not None else b""
    run(req, src, dst, threads)
    if out is not None:
        return result
    return bytes(result) if isinstance(result, bytearray) else result


def run(req, src: np.ndarray, dst: np.ndarray, threads: int) -> None:
    """A validated request over ``src`` into ``dst`` (flat uint8 arrays of the same size, checked
    for the mode's lengths; ``dst`` may be ``src``) on ``threads`` threads."""
    spec = req.spec
    key, iv, encrypt = req.key, req.iv, req.encrypt
    if req.sector_size is not None:  # XTS data units
        if not _has_evp(spec.name):
            _xts_from_ecb(spec, key, None, src, dst, encrypt, threads, req.sector_size, req.start_sector)
        else:
            _xts_sectors(spec.name, key, src, dst, encrypt, threads, req.sector_size, req.start_sector)
    elif req.mode.key_count == 2:  # XTS, one data unit
        n = src.size
        if not _has_evp(spec.name):
            _xts_from_ecb(spec, key, iv, src, dst, encrypt, threads, None, 0)
        else:
            if n > MAX_UPDATE:
                raise InvalidLength(f"{spec.name}: a data unit of {n} bytes is too large")
            ctx = _Ctx(spec.name, key, iv, encrypt)
            try:
                ctx.process(src, dst, 0, n)
            finally:
                ctx.free()
    else:
        _block_modes(req, src, dst, threads)


def _block_modes(req, src, dst, threads) -> None:
    """ECB, CBC, CTR: the message cut into parts on block boundaries, one EVP context each,
    started at its block (Request.at: the mode's state there); a serial direction on one."""
    bs = req.block_size
    if not req.mode.parallel(req.encrypt):
        threads = 1  # CBC encryption is serial
    parts = _split(src.size, bs, threads)
    # each part's request (CBC decryption reads the block before it: now, before an in-place run)
    reqs = [req.at(off // bs, req.mode.chain_at(req, src, off // bs)) for off, _ in parts]
    ctxs = []
    try:
        for r in reqs:
            ctxs.append(_Ctx(req.spec.name, r.key, r.iv, r.encrypt))

        def job(ctx, off, length):
            def run(cancel):
                ctx.process(src, dst, off, length, cancel)
                ctx.final()
            return run

        _run_all([job(c, off, length) for c, (off, length) in zip(ctxs, parts)])
    finally:
        for c in ctxs:
            c.free()


def _sector_tweaks(start_sector: int, count: int) -> np.ndarray:
    """(count, 16) uint8: tweak k = (start_sector + k) mod 2**128 as 16 little-endian bytes."""
    s = start_sector % (1 << 128)
    lo0, hi0 = s & ((1 << 64) - 1), s >> 64
    t = np.empty((count, 2), dtype="<u8")
    lo = np.arange(count, dtype=np.uint64)
    lo += np.uint64(lo0)  # wraps modulo 2**64
    t[:, 0] = lo
    t[:, 1] = np.uint64(hi0)
    t[:, 1] += (lo < np.uint64(lo0)).astype(np.uint64)
    return t.view(np.uint8).reshape(count, 16)


def _xts_sectors(evp_name, key, src, dst, encrypt, threads, unit, start_sector) -> None:
    n = src.size
    count = -(-n // unit)
    tweaks = _sector_tweaks(start_sector, count)
    if _LIB is not None and _loop() is None and unit < _XTS_CTYPES_THREAD_MIN_UNIT:
        threads = 1  # two ctypes calls per small unit: threads would only convoy on the GIL
    parts = _split(n, unit, threads)
    ctxs = []
    try:
        for _ in parts:
            ctxs.append(_Ctx(evp_name, key, None, encrypt))

        def job(ctx, off, length):
            def run(cancel):
                step = max(unit, STEP // unit * unit)  # whole units per look at the flag
                for a in range(off, off + length, step):
                    _check_cancel(cancel)
                    m = min(step, off + length - a)
                    ctx.xts_units(tweaks, a // unit, src, dst, a, m, unit)
            return run

        _run_all([job(c, off, length) for c, (off, length) in zip(ctxs, parts)])
    finally:
        for c in ctxs:
            c.free()


# --- XTS composed from ECB, for registered XTS names OpenSSL has no EVP cipher for ------------

_U64 = np.uint64


def _mul_alpha64(lo: np.ndarray, hi: np.ndarray):
    """(lo, hi) * alpha^64 in GF(2^128) mod x^128 + x^7 + x^2 + x + 1 (IEEE 1619 order)."""
    o = hi
    r_lo = o ^ (o << _U64(1)) ^ (o << _U64(2)) ^ (o << _U64(7))
    r_hi = (o >> _U64(63)) ^ (o >> _U64(62)) ^ (o >> _U64(57))
    return r_lo, lo ^ r_hi


def _xts_masks(t0: np.ndarray, nblocks: int) -> np.ndarray:
    """(N, nblocks, 2) uint64 masks T*alpha^j (j < nblocks) for encrypted tweaks t0 (N, 2).

    T*alpha^j for 0 < j < 64 is (T << j) xor (o * 0x87) with o = the j bits shifted out; all j of
    a group of 64 are computed at once by broadcasting, then the base moves on by alpha^64.
    """
    n = t0.shape[0]
    m = np.empty((n, nblocks, 2), dtype="<u8")
    lo = np.ascontiguousarray(t0[:, 0])
    hi = np.ascontiguousarray(t0[:, 1])
    for g0 in range(0, nblocks, 64):
        cnt = min(64, nblocks - g0)
        m[:, g0, 0] = lo
        m[:, g0, 1] = hi
        if cnt > 1:
            j = np.arange(1, cnt, dtype=_U64)[None, :]
            rj = _U64(64) - j
            L, H = lo[:, None], hi[:, None]
            o = H >> rj
            nlo = L << j
            nlo ^= o
            nlo ^= o << _U64(1)
            nlo ^= o << _U64(2)
            nlo ^= o << _U64(7)
            nhi = H << j
            nhi |= L >> rj
            nhi ^= o >> _U64(63)
            nhi ^= o >> _U64(62)
            nhi ^= o >> _U64(57)
            m[:, g0 + 1: g0 + cnt, 0] = nlo
            m[:, g0 + 1: g0 + cnt, 1] = nhi
        if g0 + 64 < nblocks:
            lo, hi = _mul_alpha64(lo, hi)
    return m


def _xts_from_ecb(spec, key, iv, src, dst, encrypt, threads, sector_size, start_sector) -> None:
    """XTS composed from the cipher's ECB mode: C = E_k1(P ^ T*alpha^j) ^ T*alpha^j with
    T = E_k2(tweak); whole units in batches (masks, ECB, masks), spread over threads."""
    ecb = spec.name[: -len("xts")] + "ecb"
    k1, k2 = key[: spec.key_size], key[spec.key_size:]
    n = src.size
    unit = sector_size if sector_size is not None else n
    count = -(-n // unit)
    if sector_size is None:
        raw_tweaks = np.frombuffer(iv, dtype=np.uint8).reshape(1, 16)
    else:
        raw_tweaks = _sector_tweaks(start_sector, count)
    # units made of whole blocks go through the batched path; a unit with a partial last block
    # (the last one, or the single unit without sector_size) is done with ciphertext stealing
    full_units = n // unit if unit % 16 == 0 else 0
    per_batch = max(1, _XTS_ECB_BATCH // unit)

    def run(u_start: int, u_end: int, cancel=None) -> None:
        for u0 in range(u_start, u_end, per_batch):
            _check_cancel(cancel)
            u1 = min(u_end, u0 + per_batch)
            t = np.frombuffer(crypt(ecb, k2, None, raw_tweaks[u0:u1], True, threads=1),
                              dtype="<u8").reshape(-1, 2)
            masks = _xts_masks(t, unit // 16).reshape(-1)
            seg = slice(u0 * unit, u1 * unit)
            tmp = np.bitwise_xor(src[seg].view("<u8"), masks)
            crypt(ecb, k1, None, tmp, encrypt, threads=1, out=tmp)
            np.bitwise_xor(tmp, masks, out=dst[seg].view("<u8"))

    if full_units:
        parts = _split(full_units * unit, unit, threads)
        _run_all([(lambda cancel, a=off // unit, b=(off + length) // unit: run(a, b, cancel))
                  for off, length in parts])
    for u in range(full_units, count):
        off = u * unit
        m = min(unit, n - off)
        _xts_unit_steal(ecb, k1, k2, raw_tweaks[u].tobytes(), src[off: off + m],
                        dst[off: off + m], encrypt)


def _xts_unit_steal(ecb, k1, k2, tweak, src, dst, encrypt) -> None:
    m = src.size
    nb, r = divmod(m, 16)
    t = np.frombuffer(crypt(ecb, k2, None, tweak, True, threads=1), dtype="<u8").reshape(1, 2)
    masks = _xts_masks(t, nb + 1).reshape(-1).view(np.uint8)  # nb + 1 masks (16 bytes each)

    def blocks(data: np.ndarray, msk: np.ndarray) -> np.ndarray:
        tmp = np.bitwise_xor(data, msk)
        crypt(ecb, k1, None, tmp, encrypt, threads=1, out=tmp)
        np.bitwise_xor(tmp, msk, out=tmp)
        return tmp

    head = nb if r == 0 else nb - 1  # blocks processed normally
    if head:
        dst[: 16 * head] = blocks(src[: 16 * head], masks[: 16 * head])
    if r == 0:
        return
    last = src[16 * head: 16 * head + 16]       # the last whole block
    tail = src[16 * nb:]                        # the r-byte partial block
    m_last, m_tail = masks[16 * head: 16 * nb], masks[16 * nb: 16 * nb + 16]
    if encrypt:
        cc = blocks(last, m_last)
        pp = np.concatenate([tail, cc[r:]])
        dst[16 * head: 16 * nb] = blocks(pp, m_tail)
        dst[16 * nb:] = cc[:r]
    else:
        pp = blocks(last, m_tail)
        cc = np.concatenate([tail, pp[r:]])
        dst[16 * head: 16 * nb] = blocks(cc, m_last)
        dst[16 * nb:] = pp[:r]


# ---------------------------------------------------------------------------------------------
# speed (the openssl speed -evp baseline)
# ---------------------------------------------------------------------------------------------

_speed_bufs: list = []   # [size, [buffer per thread]]: the last size's buffers, reused by repeats


def _speed_buffers(threads: int, size: int) -> list:
    """One ``size``-byte buffer per thread, filled with a random 64 KiB pattern (the content does
    not change a cipher's speed; os.urandom of threads x 256 MiB took longer than the timing).
    Kept for the next call of the same size: repeats and the other thread counts reuse them."""
    if not _speed_bufs or _speed_bufs[0] != size:
        _speed_bufs[:] = [size, []]
    bufs = _speed_bufs[1]
    if len(bufs) < threads:
        block = np.frombuffer(os.urandom(min(size, 1 << 16)), dtype=np.uint8)
        for _ in range(threads - len(bufs)):
            b = np.empty(size, dtype=np.uint8)
            for off in range(0, size, block.size):
                m = min(block.size, size - off)
                b[off: off + m] = block[:m]
            bufs.append(b)
    return bufs[:threads]


def speed(name: str, size: int, *, threads: int = 1, seconds: float = 0.5,
          encrypt: bool = True) -> float:
    """Throughput in bytes/s of repeated in-place EVP_CipherUpdate calls on ``size``-byte buffers,
    like ``openssl speed -evp NAME -bytes SIZE`` (with ``-multi threads``): every thread has its
    own buffer (random content), random key/IV and context; total bytes of all threads / wall time."""
    spec = registry.lookup(name)
    size = int(size)
    threads = int(threads)
    if size < 1:
        raise InvalidArgument(f"size must be >= 1, got {size}")
    if size > MAX_UPDATE:
        raise InvalidArgument(f"size must be <= {MAX_UPDATE}, got {size}")
    if threads < 1:
        raise InvalidArgument(f"threads must be >= 1, got {threads}")
    if not _has_evp(spec.name):
        raise UnsupportedCipher(f"{BACKEND_NAME} has no cipher {spec.name!r}")
    from ..request import make_request

    ctxs, bufs = [], []
    try:
        for _ in range(threads):
            key = os.urandom(spec.key_len)
            while spec.mode.key_count == 2 and key[: spec.key_size] == key[spec.key_size:]:
                key = os.urandom(spec.key_len)  # pragma: no cover
            iv = os.urandom(spec.iv_len) if spec.iv_len else None
            req = make_request(spec, key, iv, bool(encrypt))
            req.check_length(size)
            ctxs.append(_Ctx(spec.name, key, iv, bool(encrypt)))
        bufs = _speed_buffers(threads, size)
        # one untimed warm-up call per context (page faults, lazy init)
        for c, b in zip(ctxs, bufs):
            c.spin(b, size, 0.0)
        barrier = threading.Barrier(threads)
        start = [0.0]
        counts = [0] * threads

        def job(k):
            def run(cancel):
                try:
                    barrier.wait()
                except BaseException:
                    barrier.abort()  # an interrupt: release the threads still waiting
                    raise
                if k == 0:
                    start[0] = time.perf_counter()
                counts[k] = ctxs[k].spin(bufs[k], size, time.perf_counter() + seconds)
            return run

        _run_all([job(k) for k in range(threads)])
        elapsed = time.perf_counter() - start[0]
    finally:
        for c in ctxs:
            c.free()
    return sum(counts) / max(elapsed, 1e-9)
