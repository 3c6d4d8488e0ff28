"""ciphergrid: bulk encryption and decryption offloaded to accelerators.

    import ciphergrid
    ct = ciphergrid.encrypt(data, "aes-256-ctr", key=key, iv=iv)        # device="auto"
    ctx = ciphergrid.Cipher("aes-128-cbc", key, iv, padding="pkcs7").encryptor()
    ct = ctx.update(part1) + ctx.update(part2) + ctx.finalize()         # or ctx.update_into(part, buf)
    ciphergrid.devices()                                                 # what is present
    ciphergrid.available_ciphers()                                       # "aes-128-cbc", ...
    ct = ciphergrid.encrypt(data, "aes-256-gcm", key=key, nonce=nonce, aad=hdr)  # ciphertext || tag
    ciphergrid.AESGCM(key).decrypt(nonce, ct, hdr)                       # or ciphergrid.InvalidTag
    ciphergrid.encrypt_batch("chacha20-poly1305", messages, key=key, nonces=nonces)

Output has the form of the input: bytes-like data gives bytes, a numpy array a numpy array of its
shape and dtype (flat uint8 with padding), a GPU array the same kind of GPU array.  Keys and IVs
are bytes-like (TypeError otherwise); the other errors derive from ciphergrid.Error.
"""

from .backends import icd as _icd

_icd.prepare()  # before anything (ours or the caller's) makes the first OpenCL call

from .errors import (AlreadyFinalized, DeviceError, DeviceNotFound, Error, InvalidArgument,
                     InvalidIVSize, InvalidKey, InvalidKeySize, InvalidLength, InvalidPadding,
                     InvalidTag, UnsupportedCipher, WeakCipherWarning)

__version__ = "0.1.0"

#: the public names of the API's modules, imported on first use (PEP 562): the command line
#: sets itself up before numpy is imported (cli.py), and a script that needs only the errors
#: pays for nothing else
_LAZY = {
    **dict.fromkeys(("encrypt", "decrypt", "Cipher", "CipherContext", "devices",
                     "available_ciphers"), "api"),
    **dict.fromkeys(("encrypt_batch", "decrypt_batch", "BatchResult", "AESGCM", "ChaCha20Poly1305",
                     "AsconAEAD128", "AEGIS128L"), "aead"),
}

__all__ = [
    "encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers",
    "encrypt_batch", "decrypt_batch", "BatchResult", "AESGCM", "ChaCha20Poly1305", "AsconAEAD128",
    "AEGIS128L",
    "Error", "UnsupportedCipher", "InvalidKeySize", "InvalidKey", "InvalidIVSize", "InvalidLength",
    "InvalidPadding", "InvalidArgument", "AlreadyFinalized", "DeviceError", "DeviceNotFound",
    "InvalidTag", "WeakCipherWarning",
]


def __getattr__(name: str):
    import importlib

    mod = _LAZY.get(name)
    if mod is None:  # a submodule (ciphergrid.registry, ...) not imported yet
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
