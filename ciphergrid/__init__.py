"""ciphergrid: bulk encryption and decryption offloaded to accelerators.

    import ciphergrid
    ct = ciphergrid.encrypt(data, "aes-256-ctr", key=key, iv=iv)        # device="auto"
    ciphergrid.devices()                                                 # what is present
"""

from .backends import icd as _icd

_icd.prepare()  # before anything (ours or the caller's) makes the first OpenCL call

from .errors import (AlreadyFinalized, DeviceError, DeviceNotFound, Error, InvalidArgument,
                     InvalidIVSize, InvalidKey, InvalidKeySize, InvalidLength, InvalidPadding,
                     InvalidTag, UnsupportedCipher)
from .api import Cipher, CipherContext, available_ciphers, decrypt, devices, encrypt

__version__ = "0.1.0"

__all__ = [
    "encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers",
    "Error", "UnsupportedCipher", "InvalidKeySize", "InvalidKey", "InvalidIVSize", "InvalidLength",
    "InvalidPadding", "InvalidArgument", "AlreadyFinalized", "DeviceError", "DeviceNotFound",
    "InvalidTag",
]
