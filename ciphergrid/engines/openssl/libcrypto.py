"""libcrypto through ctypes: loading and declaring it, EVP cipher lookup (cached), the error
queue, the OpenSSL version, and the optional C helper loop.

The system ``libcrypto`` is called through :mod:`ctypes`.  ctypes releases the GIL for the
duration of every foreign call, so worker threads encrypt in parallel.  When no libcrypto can be
loaded, :data:`LIB` is None and the contexts fall back to pyca ``cryptography``
(``contexts.PycaCtx``); :data:`BACKEND_NAME` says which one is in use.

Loops that make one EVP call per small buffer (``speed``, per-sector XTS) run in a tiny C helper
compiled once with the system C compiler when there is one (see :func:`speed_loop`); Python-level
ctypes calls cost more than OpenSSL's work on a small buffer.

Environment: ``CIPHERGRID_NATIVE_BACKEND=cryptography`` forces the pyca fallback;
``CIPHERGRID_NATIVE_LOOP=ctypes`` disables the C helper; the helper is cached in
``ciphergrid.settings.cache_dir()`` (``CIPHERGRID_CACHE_DIR``, default
``$XDG_CACHE_HOME/ciphergrid`` or ``~/.cache/ciphergrid``), named by its source and the machine:
built once by whichever compiler is found first, then loaded by every later process.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from ... import settings
from ..._libcrypto import pyca_newer  # noqa: F401 - the engine's name for it
from ...errors import DeviceError, UnsupportedCipher

__all__ = ["BACKEND_NAME", "LIB", "MAX_UPDATE", "openssl_version", "pyca_newer", "speed_loop"]

#: largest length passed to one EVP_CipherUpdate (its length argument is a C int)
MAX_UPDATE = 1 << 30

_c_int_p = ctypes.POINTER(ctypes.c_int)


def _load_libcrypto():
    from ..._libcrypto import load

    return load(_declare)


def _declare(lib) -> None:
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.EVP_CIPHER_CTX_new.restype = vp
    lib.EVP_CIPHER_CTX_new.argtypes = ()
    lib.EVP_CIPHER_CTX_free.restype = None
    lib.EVP_CIPHER_CTX_free.argtypes = (vp,)
    lib.EVP_CipherInit_ex.restype = i
    lib.EVP_CipherInit_ex.argtypes = (vp, vp, vp, vp, vp, i)
    lib.EVP_CIPHER_CTX_set_key_length.restype = i
    lib.EVP_CIPHER_CTX_set_key_length.argtypes = (vp, i)
    for getter in ("EVP_CIPHER_CTX_get_key_length", "EVP_CIPHER_CTX_key_length"):  # 3.x, 1.1
        if hasattr(lib, getter):
            lib.cg_ctx_key_length = getattr(lib, getter)
            lib.cg_ctx_key_length.restype = i
            lib.cg_ctx_key_length.argtypes = (vp,)
            break
    lib.EVP_CIPHER_CTX_set_padding.restype = i
    lib.EVP_CIPHER_CTX_set_padding.argtypes = (vp, i)
    lib.EVP_CipherUpdate.restype = i
    lib.EVP_CipherUpdate.argtypes = (vp, vp, _c_int_p, vp, i)
    lib.EVP_CipherFinal_ex.restype = i
    lib.EVP_CipherFinal_ex.argtypes = (vp, vp, _c_int_p)
    lib.EVP_CIPHER_CTX_ctrl.restype = i
    lib.EVP_CIPHER_CTX_ctrl.argtypes = (vp, i, i, vp)
    lib.ERR_clear_error.restype = None
    lib.ERR_clear_error.argtypes = ()
    lib.ERR_get_error.restype = ctypes.c_ulong
    lib.ERR_get_error.argtypes = ()
    lib.ERR_error_string_n.restype = None
    lib.ERR_error_string_n.argtypes = (ctypes.c_ulong, ctypes.c_char_p, ctypes.c_size_t)
    try:  # OpenSSL 3: explicit fetch, and the providers (the legacy one holds SEED, CAST5, DES)
        lib.EVP_CIPHER_fetch.restype = vp
        lib.EVP_CIPHER_fetch.argtypes = (vp, ctypes.c_char_p, ctypes.c_char_p)
        lib.OSSL_PROVIDER_load.restype = vp
        lib.OSSL_PROVIDER_load.argtypes = (vp, ctypes.c_char_p)
    except AttributeError:
        pass
    lib.EVP_get_cipherbyname.restype = vp
    lib.EVP_get_cipherbyname.argtypes = (ctypes.c_char_p,)
    try:
        lib.OpenSSL_version.restype = ctypes.c_char_p
        lib.OpenSSL_version.argtypes = (i,)
    except AttributeError:
        pass


LIB = _load_libcrypto()


def _raw_functions():
    """The hot-loop functions again, without argtypes: called with prebuilt ctypes objects,
    which skips the per-call argument conversion."""
    if LIB is None:
        return None
    raw = ctypes.CDLL(LIB._name)
    for fn in (raw.EVP_CipherInit_ex, raw.EVP_CipherUpdate):
        fn.restype = ctypes.c_int
    return raw


RAW = _raw_functions()

#: "libcrypto" (system OpenSSL through ctypes) or "cryptography" (pyca fallback)
BACKEND_NAME = "libcrypto" if LIB is not None else "cryptography"


def openssl_version() -> str:
    """Version text of the OpenSSL in use, e.g. ``"OpenSSL 3.0.13 30 Jan 2024"``."""
    if LIB is not None and hasattr(LIB, "OpenSSL_version"):
        return LIB.OpenSSL_version(0).decode("ascii", "replace")
    from cryptography.hazmat.backends.openssl import backend

    return backend.openssl_version_text()


def openssl_errors() -> str:
    """Drain this thread's OpenSSL error queue into one string."""
    msgs = []
    buf = ctypes.create_string_buffer(256)
    while True:
        code = LIB.ERR_get_error()
        if not code:
            break
        LIB.ERR_error_string_n(code, buf, len(buf))
        msgs.append(buf.value.decode("ascii", "replace"))
    return "; ".join(msgs) or "no OpenSSL error queued"


def fail(what: str, exc=DeviceError):
    """Raise ``exc`` for a failed OpenSSL call, with the error queue drained into its message."""
    raise exc(f"OpenSSL {what} failed: {openssl_errors()}")


_CIPHERS: dict[str, int] = {}
_CIPHERS_LOCK = threading.Lock()
_PROVIDERS: dict[str, bool] = {}


def load_provider(name: str) -> bool:
    """Load an OpenSSL 3 provider ("legacy") into the default library context, once; True when
    it is there.  Loading one provider explicitly stops OpenSSL from loading "default" on its own,
    so "default" is loaded with it."""
    if name in _PROVIDERS:
        return _PROVIDERS[name]
    ok = False
    if LIB is not None and hasattr(LIB, "OSSL_PROVIDER_load"):
        ok = bool(LIB.OSSL_PROVIDER_load(None, b"default")) and bool(LIB.OSSL_PROVIDER_load(None, name.encode()))
        if not ok:
            openssl_errors()  # clear the queue
    _PROVIDERS[name] = ok
    return ok


def evp_cipher(evp_name: str) -> int:
    """EVP_CIPHER pointer for a name (cached for the life of the process), or UnsupportedCipher.
    A name the default provider lacks is looked up again with OpenSSL 3's legacy provider loaded
    (SEED, CAST5, single DES live there)."""
    ptr = _CIPHERS.get(evp_name)
    if ptr:
        return ptr
    with _CIPHERS_LOCK:
        ptr = _CIPHERS.get(evp_name)
        if ptr:
            return ptr
        raw = evp_name.encode("ascii")
        ptr = None
        if hasattr(LIB, "EVP_CIPHER_fetch"):
            ptr = LIB.EVP_CIPHER_fetch(None, raw, None)
            if not ptr and "legacy" not in _PROVIDERS and load_provider("legacy"):
                openssl_errors()  # clear the first attempt's error
                ptr = LIB.EVP_CIPHER_fetch(None, raw, None)
        if not ptr:
            ptr = LIB.EVP_get_cipherbyname(raw)
        if not ptr:
            openssl_errors()  # clear the queue
            raise UnsupportedCipher(f"OpenSSL ({openssl_version()}) has no cipher {evp_name!r}")
        _CIPHERS[evp_name] = ptr
        return ptr


# --- optional C loop --------------------------------------------------------------------------
#
# A ctypes call costs more than OpenSSL needs for a small buffer (with AES-NI, an order of
# magnitude more for 16 bytes, several times more for 1 KiB), and every call releases and retakes the GIL, so
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

_LOOP_SRC += r"""
typedef int (*cg_fin_t)(void *, unsigned char *, int *);
typedef int (*cg_ctrl_t)(void *, int, int, void *);
typedef void (*cg_clear_t)(void);

#define CG_SET_IVLEN 0x9
#define CG_GET_TAG 0x10
#define CG_SET_TAG 0x11
#define CG_STEP (1 << 30)

/* AEAD messages [lo, hi) of a batch (ciphergrid/aeads/base.py: texts at off[], AAD at aad_off[],
   key kidx[i] of keys, nonce i of nonces); ctx holds the cipher already.  Encryption writes the
   tags; decryption checks them inside OpenSSL: ok[i] = 1 when it verified, else 0 and the
   message's plaintext zeroed.  Returns hi - lo, or -(i+1) when OpenSSL failed on message i. */
long long cg_aead_batch(cg_init_t init, cg_upd_t upd, cg_fin_t fin, cg_ctrl_t ctrl, cg_clear_t clr,
                        void *ctx, int enc, const unsigned char *keys, int klen, const int *kidx,
                        const unsigned char *nonces, int nlen, const unsigned char *aad,
                        const long long *aad_off, const unsigned char *src, unsigned char *dst,
                        const long long *off, unsigned char *tags, int tlen, unsigned char *ok,
                        long long lo, long long hi)
{
    long long i, pos, n, a;
    int outl, m, r;
    unsigned char fin_buf[32];
    for (i = lo; i < hi; i++) {
        if (ctrl(ctx, CG_SET_IVLEN, nlen, 0) != 1)
            return -(i + 1);
        if (init(ctx, 0, 0, keys + (long long)kidx[i] * klen, nonces + i * nlen, enc) != 1)
            return -(i + 1);
        if (!enc && ctrl(ctx, CG_SET_TAG, tlen, tags + i * tlen) != 1)
            return -(i + 1);
        for (a = aad_off[i]; a < aad_off[i + 1]; a += m) {
            m = (aad_off[i + 1] - a > CG_STEP) ? CG_STEP : (int)(aad_off[i + 1] - a);
            if (upd(ctx, 0, &outl, aad + a, m) != 1)
                return -(i + 1);
        }
        n = off[i + 1];
        for (pos = off[i]; pos < n; pos += m) {
            m = (n - pos > CG_STEP) ? CG_STEP : (int)(n - pos);
            if (upd(ctx, dst + pos, &outl, src + pos, m) != 1 || outl != m)
                return -(i + 1);
        }
        r = fin(ctx, fin_buf, &outl);
        if (enc) {
            if (r != 1 || ctrl(ctx, CG_GET_TAG, tlen, tags + i * tlen) != 1)
                return -(i + 1);
        } else {
            ok[i] = (unsigned char)(r == 1);
            if (r != 1) {
                clr();
                for (pos = off[i]; pos < n; pos++)
                    dst[pos] = 0;
            }
        }
    }
    return hi - lo;
}
"""

_LOOP_SRC += r"""
/* Chunks of C2SP chunked encryption (docs/format.md): chunk j (j = 0, 1, ...) is AES-GCM under
   the key ctx holds with nonce = base XOR (first + j) big-endian in its last 8 bytes, no AAD.
   enc: src holds n plaintext bytes: whole chunks of `chunk` bytes, and with `final` the shorter
   last one (n % chunk bytes, possibly none); dst gets ciphertext || tag (chunk + tlen bytes) per
   chunk.  !enc: src holds n sealed bytes, whole sealed chunks and with `final` the shorter last
   one; dst gets the plaintext, each chunk's tag checked inside OpenSSL.  Returns the chunks done
   with *bad = 0; else the number of the chunk that stopped it, *bad = 1 where its tag did not
   verify (its plaintext zeroed), 2 where OpenSSL failed. */
long long cg_chunked(cg_init_t init, cg_upd_t upd, cg_fin_t fin, cg_ctrl_t ctrl, cg_clear_t clr,
                     void *ctx, int enc, const unsigned char *base, unsigned long long first,
                     const unsigned char *src, unsigned char *dst, long long n, int final,
                     int chunk, int tlen, int *bad)
{
    unsigned char nonce[12], fin_buf[32];
    unsigned long long c;
    long long j, count, in_step = enc ? chunk : chunk + tlen, out_step = enc ? chunk + tlen : chunk;
    long long pos;
    int outl, m, k, r;
    *bad = 0;
    count = n / in_step + (final ? 1 : 0);
    if (ctrl(ctx, CG_SET_IVLEN, 12, 0) != 1) {
        *bad = 2;
        return 0;
    }
    for (j = 0; j < count; j++) {
        const unsigned char *in = src + j * in_step;
        unsigned char *out = dst + j * out_step;
        m = (j < n / in_step) ? chunk : (int)(n - j * in_step) - (enc ? 0 : tlen);
        c = first + (unsigned long long)j;
        for (k = 0; k < 12; k++)
            nonce[k] = base[k];
        for (k = 0; k < 8; k++)
            nonce[4 + k] ^= (unsigned char)(c >> (56 - 8 * k));
        if (init(ctx, 0, 0, 0, nonce, enc) != 1
            || (!enc && ctrl(ctx, CG_SET_TAG, tlen, (void *)(in + m)) != 1)
            || (m > 0 && (upd(ctx, out, &outl, in, m) != 1 || outl != m))) {
            *bad = 2;
            return j;
        }
        r = fin(ctx, fin_buf, &outl);
        if (enc) {
            if (r != 1 || ctrl(ctx, CG_GET_TAG, tlen, out + m) != 1) {
                *bad = 2;
                return j;
            }
        } else if (r != 1) {
            clr();
            for (pos = 0; pos < m; pos++)
                out[pos] = 0;
            *bad = 1;
            return j;
        }
    }
    return count;
}
"""

_LOOP = None          # the loaded helper (ctypes CDLL), or False when it cannot be had
_LOOP_LOCK = threading.Lock()


def _build_loop():
    from cryptography.hazmat.primitives import hashes   # (loaded with the package: no hashlib)

    allowed, cc_env = settings.openssl_c_loop()
    if not allowed:
        return None
    machine = os.uname().machine if hasattr(os, "uname") else ""
    digest = hashes.Hash(hashes.SHA256())
    digest.update((_LOOP_SRC + machine + sys.platform).encode())
    tag = digest.finalize().hex()[:16]
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    from ...settings import cache_dir

    d = cache_dir()
    path = os.path.join(d, f"native_loop_{tag}{suffix}")
    # built by an earlier process: loaded as it is (looking for a compiler and importing what
    # building takes would be part of every command's start-up: docs/benchmarks.md 0g,
    # 'Start-up')
    if not os.path.exists(path) and not _compile_loop(path, d, cc_env):
        return None
    lib = ctypes.CDLL(path)
    vp, ll, i = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int
    lib.cg_spin.restype = ll
    lib.cg_spin.argtypes = (vp, vp, vp, i, ll)
    lib.cg_xts_units.restype = ll
    lib.cg_xts_units.argtypes = (vp, vp, vp, vp, vp, vp, ll, i)
    lib.cg_aead_batch.restype = ll
    lib.cg_aead_batch.argtypes = (vp, vp, vp, vp, vp, vp, i, vp, i, vp, vp, i, vp, vp, vp, vp, vp,
                                  vp, i, vp, ll, ll)
    lib.cg_chunked.restype = ll
    lib.cg_chunked.argtypes = (vp, vp, vp, vp, vp, vp, i, vp, ctypes.c_ulonglong, vp, vp, ll, i, i, i,
                               vp)
    return lib


def _compile_loop(path: str, folder: str, cc_env: str | None) -> bool:
    """Compile the helper into ``path`` with the first compiler found; False without one or
    where it fails."""
    import shutil
    import subprocess
    import tempfile

    cc = None
    for cand in (cc_env, "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            cc = shutil.which(cand)
            break
    if cc is None:
        return False
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = os.path.join(tmp, "loop.c")
        with open(src, "w") as f:
            f.write(_LOOP_SRC)
        obj = os.path.join(tmp, "loop" + os.path.splitext(path)[1])
        res = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", obj, src],
                             capture_output=True, timeout=60)
        if res.returncode != 0:
            return False
        os.replace(obj, path)  # atomic: concurrent builders leave one good file
    return True


def c_loop():
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
    if LIB is None:
        return "cryptography"
    return "c" if c_loop() is not None else "ctypes"


def fn_addr(fn) -> int:
    """The address of a ctypes foreign function (what the C loop takes)."""
    return ctypes.cast(fn, ctypes.c_void_p).value
