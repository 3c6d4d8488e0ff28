"""ciphergrid: bulk encryption and decryption offloaded to accelerators.

    import ciphergrid
    ct = ciphergrid.encrypt(data, "aes-256-ctr", key=key, iv=iv)        # device="auto"
    ctx = ciphergrid.Cipher("aes-128-cbc", key, iv, padding="pkcs7").encryptor()
    ct = ctx.update(part1) + ctx.update(part2) + ctx.finalize()         # or ctx.update_into(part, buf)
    ciphergrid.devices()                                                 # what is present
    ciphergrid.available_ciphers()                                       # "aes-128-cbc", ...
    ct = ciphergrid.encrypt(data, "aes-256-gcm", key=key, nonce=nonce, aad=hdr)  # ciphertext || tag
    ciphergrid.AESGCM(key).decrypt(nonce, ct, hdr)                       # or ciphergrid.InvalidTag
    ciphergrid.encrypt_batch(messages, "chacha20-poly1305", key=key, nonces=nonces)

Output has the form of the input: bytes-like data gives bytes, a numpy array a numpy array of its
shape and dtype (flat uint8 with padding), a GPU array the same kind of GPU array.  Keys and IVs
are bytes-like (TypeError otherwise); the other errors derive from ciphergrid.Error.
"""

import sys as _sys
import types as _types


class _BeforeOpenCL:
    """A meta path finder that finds nothing: the ICD loader's drivers (backends/icd.py: an
    unregistered NVIDIA driver, OCL_ICD_VENDORS) are prepared before anything makes the first
    OpenCL call: at the first import of pyopencl, the caller's or ours (backends/opencl.py
    prepares them too), or at once where it was imported before the package.  Nothing else
    prepares them (a sealed file's start-up reads no /dev or vendors folder).  Preparing them
    is a help, never a condition: a failure of it does not fail the import of pyopencl."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pyopencl":
            try:
                from .backends import icd

                icd.prepare()   # (once: later calls return at once)
            except Exception:  # noqa: BLE001 - the drivers registered stay as they are
                pass
        return None


if "pyopencl" in _sys.modules:
    _BeforeOpenCL.find_spec("pyopencl")
else:
    _sys.meta_path.insert(0, _BeforeOpenCL)

from .errors import (AlreadyFinalized, DeviceError, DeviceNotFound, Error, InvalidArgument,
                     InvalidIVSize, InvalidKey, InvalidKeySize, InvalidLength, InvalidPadding,
                     ServiceError, UnsupportedCipher, WeakCipherWarning, EngineFailureWarning)

__version__ = "0.1.0"

__all__ = [
    "encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers",
    "encrypt_batch", "decrypt_batch", "BatchResult", "AESGCM", "ChaCha20Poly1305", "AsconAEAD128",
    "AEGIS128L",
    "Error", "UnsupportedCipher", "InvalidKeySize", "InvalidKey", "InvalidIVSize", "InvalidLength",
    "InvalidPadding", "InvalidArgument", "AlreadyFinalized", "DeviceError", "DeviceNotFound",
    "InvalidTag", "WeakCipherWarning", "EngineFailureWarning", "SchedulerStats", "ServiceError",
    "connect",
]

# The public names of api and aead are imported on first use (PEP 562), not with the package: the
# command line imports only what its command runs (no AEAD modules for a block cipher, numpy
# after the output is open), and ``import ciphergrid`` costs no numpy import.
# encrypt, decrypt and the batches come from front.py: the library's own, or a service's when
# CIPHERGRID_SERVICE asks for one.
_LAZY = {name: "api" for name in ("Cipher", "CipherContext", "devices", "available_ciphers")}
_LAZY.update({name: "front" for name in ("encrypt", "decrypt", "encrypt_batch", "decrypt_batch")})
_LAZY["SchedulerStats"] = "engines.composite"
_LAZY["connect"] = "service"
_LAZY["InvalidTag"] = "errors"   # (made at its first use: errors.TAG_ERRORS)
_LAZY.update({name: "aead" for name in ("BatchResult", "AESGCM", "ChaCha20Poly1305", "AsconAEAD128",
                                        "AEGIS128L")})


def __getattr__(name: str):
    import importlib

    module = _LAZY.get(name)
    if module is None:  # a submodule not imported yet (ciphergrid.registry, ...), as before
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

    found = importlib.import_module(f"{__name__}.{module}")
    for key, where in _LAZY.items():
        if where == module:
            object.__setattr__(_sys.modules[__name__], key, getattr(found, key))
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(_types.ModuleType):
    """The package's module type: the submodule ``ciphergrid.devices`` is never bound on the
    package, where that name is the function ``devices`` (the import system binds a submodule on
    its package when it is first imported; the eager package rebound the function after that)."""

    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
