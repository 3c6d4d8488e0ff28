"""The system's libcrypto as a ctypes library: the one search for it, shared by the OpenSSL engine
(engines/openssl/libcrypto.py declares its EVP calls on it) and the AES declaration (its key
schedule, algorithms/aes.py).  ``CIPHERGRID_NATIVE_BACKEND=cryptography`` (settings) means none.
"""

from __future__ import annotations

import ctypes
import sys

from . import settings


def _names():
    if sys.platform.startswith("linux"):
        # the sonames first: find_library runs `ldconfig -p` in a child process, at every
        # command's start-up (docs/benchmarks.md 0c, 'Start-up')
        yield from ("libcrypto.so.3", "libcrypto.so.1.1")
    import ctypes.util

    found = ctypes.util.find_library("crypto")
    if found:
        yield found
    yield from ("libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", "libcrypto.3.dylib",
                "libcrypto.dylib")


def load(declare):
    """The first libcrypto that loads and on which ``declare(lib)`` (the caller's ctypes
    declarations) finds every symbol it needs (an AttributeError: too old, or not OpenSSL: the
    next one is tried); None when there is none, or when the pyca fallback is asked for."""
    if settings.openssl_through_pyca():
        return None
    for libname in _names():
        try:
            lib = ctypes.CDLL(libname)
        except OSError:
            continue
        try:
            declare(lib)
        except AttributeError:
            continue
        return lib
    return None


_PYCA_NEWER: bool | None = None


def _version_symbols(lib) -> None:
    lib.OpenSSL_version_num, lib.EVP_CipherInit_ex   # (an AttributeError: not this one)


def pyca_newer() -> bool:
    """Whether pyca/cryptography's own OpenSSL is a later release (major.minor) than the system's
    libcrypto (the one :func:`load` finds): its AES-GCM then runs on instructions the system's
    may lack (OpenSSL 3.1 added VAES / AVX-512 AES-GCM).  Asked by a sealed file's lone worker
    before it imports the OpenSSL engine: only the version is read here, and pyca's AESGCM is
    looked at in its Rust bindings (the class ``cryptography.hazmat.primitives.ciphers.aead``
    re-exports)."""
    global _PYCA_NEWER
    if _PYCA_NEWER is None:
        try:
            from cryptography.hazmat.bindings._rust import openssl as rust_openssl

            aesgcm = getattr(getattr(rust_openssl, "aead", None), "AESGCM", None)
            if aesgcm is None:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM as aesgcm
            lib = load(_version_symbols)
            fn = lib.OpenSSL_version_num
            fn.restype, fn.argtypes = ctypes.c_ulong, ()
            _PYCA_NEWER = (hasattr(aesgcm, "encrypt_into")
                           and rust_openssl.openssl_version() >> 20 > fn() >> 20)
        except Exception:  # noqa: BLE001 - unknown (no libcrypto): the system's
            _PYCA_NEWER = False
    return _PYCA_NEWER
