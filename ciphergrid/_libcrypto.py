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
