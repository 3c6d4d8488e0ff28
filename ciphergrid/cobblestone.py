"""C2SP chunked encryption (Cobblestone-128 and -256) with the names of pyca/cryptography's
``cryptography.cobblestone``, plus one-shot ``encrypt`` / ``decrypt`` and ``decrypt_range``;
the chunks go to the device in AEAD batches (ciphergrid/formats/cobblestone.py).  ``encrypt`` /
``decrypt`` also take GPU arrays (CuPy, or any CUDA array): the whole message is one batch on
the device where it lies, and the result a CuPy array (``out=``: the caller's;
ciphergrid/formats/resident.py).

A message that does not open raises one of three ``InvalidTag`` subclasses (each still pyca's
``InvalidTag``): :class:`CommitmentMismatch` (a wrong key, passphrase or context, or a damaged
header: the commitment cannot tell them apart), :class:`ChunkFailed` (a chunk does not verify;
``.chunk`` its number) and :class:`Truncated` (cut at a chunk boundary, or not a sealed length).

Under a passphrase (``encrypt_with_passphrase`` / ``decrypt_with_passphrase`` /
``decrypt_range_with_passphrase``): a small wrapper, Argon2id's costs and salt, in front of the
unchanged C2SP body, whose input key Argon2id derives (formats/passphrase.py, docs/format.md).
"""

from .errors import ChunkFailed, CommitmentMismatch, Truncated  # noqa: F401
from .formats.passphrase import Argon2Params  # noqa: F401
from .formats.passphrase import decrypt as decrypt_with_passphrase  # noqa: F401
from .formats.passphrase import decrypt_range as decrypt_range_with_passphrase  # noqa: F401
from .formats.passphrase import encrypt as encrypt_with_passphrase  # noqa: F401
from .formats.passphrase import is_wrapped as is_passphrase_sealed  # noqa: F401
from .formats.cobblestone import decrypt_range, message_length, sealed_length  # noqa: F401
from .formats.streams import (Cobblestone128Decryptor, Cobblestone128Encryptor,  # noqa: F401
                              Cobblestone256Decryptor, Cobblestone256Encryptor)
from .formats.resident import decrypt, encrypt  # noqa: F401

__all__ = ["Cobblestone128Encryptor", "Cobblestone128Decryptor", "Cobblestone256Encryptor",
           "Cobblestone256Decryptor", "encrypt", "decrypt", "decrypt_range", "sealed_length",
           "message_length", "CommitmentMismatch", "ChunkFailed", "Truncated", "Argon2Params",
           "encrypt_with_passphrase", "decrypt_with_passphrase", "decrypt_range_with_passphrase",
           "is_passphrase_sealed"]
