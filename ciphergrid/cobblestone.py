"""C2SP chunked encryption (Cobblestone-128 and -256) with the names of pyca/cryptography's
``cryptography.cobblestone``, plus one-shot ``encrypt`` / ``decrypt`` and ``decrypt_range``;
the chunks go to the device in AEAD batches (ciphergrid/formats/cobblestone.py)."""

from .formats.cobblestone import (Cobblestone128Decryptor, Cobblestone128Encryptor,  # noqa: F401
                                  Cobblestone256Decryptor, Cobblestone256Encryptor, decrypt,
                                  decrypt_range, encrypt, message_length, sealed_length)

__all__ = ["Cobblestone128Encryptor", "Cobblestone128Decryptor", "Cobblestone256Encryptor",
           "Cobblestone256Decryptor", "encrypt", "decrypt", "decrypt_range", "sealed_length",
           "message_length"]
