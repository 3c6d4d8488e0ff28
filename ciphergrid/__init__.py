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
from .api import Cipher, CipherContext, available_ciphers, decrypt, devices, encrypt
from .aead import (AEGIS128L, AESGCM, AsconAEAD128, BatchResult, ChaCha20Poly1305, decrypt_batch,
                   encrypt_batch)

__version__ = "0.1.0"

__all__ = [
    "encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers",
    "encrypt_batch", "decrypt_batch", "BatchResult", "AESGCM", "ChaCha20Poly1305", "AsconAEAD128",
    "AEGIS128L",
    "Error", "UnsupportedCipher", "InvalidKeySize", "InvalidKey", "InvalidIVSize", "InvalidLength",
    "InvalidPadding", "InvalidArgument", "AlreadyFinalized", "DeviceError", "DeviceNotFound",
    "InvalidTag", "WeakCipherWarning",
]
