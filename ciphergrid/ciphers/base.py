"""The uniform block-cipher interface.

A block cipher is a host-side key schedule plus one kernel file.  The kernel file defines, in the
portable OpenCL C subset of ``kernels/portable.h``:

* ``CG_BLOCK_WORDS``          number of 32-bit words in a block (4 for 128-bit, 2 for 64-bit ciphers);
* ``CG_CIPHER_LOCALS``        declarations placed at kernel scope (local-memory tables), may be empty;
* ``CG_CIPHER_SETUP(rk)``     statements run by every work-item before any guard (table fills, barrier);
* ``cg_encrypt(uint *s, GLOBAL_RO const uint *rk CG_TABLE_PARAMS)``  in-place block encryption;
* ``cg_decrypt(uint *s, GLOBAL_RO const uint *dk CG_TABLE_PARAMS)``  in-place block decryption;
* ``CG_TABLE_ARGS``           the extra arguments passed to cg_encrypt/cg_decrypt (tables), may be empty.

Blocks are handled as little-endian 32-bit words of the block bytes (word i = bytes 4i..4i+3), so a
kernel loads and stores data without byte swapping.  The generic mode kernels in ``modes.cl`` are
compiled with the cipher file included first and work for any cipher that follows this contract.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidKeySize


class BlockCipher:
    """Base class: subclasses set the class attributes and implement :meth:`expand`."""

    #: registry name, as OpenSSL spells it ("aes", "camellia", "sm4", ...)
    name: str = ""
    #: block size in bytes
    block_size: int = 16
    #: accepted key sizes in bytes
    key_sizes: tuple[int, ...] = ()
    #: kernel file under ciphergrid/kernels/
    kernel_file: str = ""

    def check_key(self, key: bytes) -> None:
        if len(key) not in self.key_sizes:
            sizes = ", ".join(str(8 * k) for k in self.key_sizes)
            raise InvalidKeySize(
                f"{self.name} takes a {sizes}-bit key, got {len(key)} bytes ({8 * len(key)} bits)"
            )

    def expand(self, key: bytes, decrypt: bool) -> np.ndarray:
        """Return the round keys as a little-endian uint32 array in the layout the kernel expects.

        ``decrypt=True`` returns the schedule used by ``cg_decrypt`` (it may differ, e.g. the
        equivalent inverse cipher's InvMixColumns-transformed keys for AES).  The caller owns the
        array and zeroizes it when done.
        """
        raise NotImplementedError

    def defines(self, key_size: int) -> dict[str, int]:
        """Compile-time constants for a key size (e.g. the number of rounds)."""
        return {}

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        """Host reference ECB of whole blocks (used for XTS stealing and the tweak of tails).

        Ciphers that OpenSSL has use it; others fall back to a Python model of the cipher.
        """
        raise NotImplementedError
