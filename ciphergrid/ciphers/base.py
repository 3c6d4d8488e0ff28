"""The uniform block-cipher interface.

A block cipher is a host-side key schedule plus one kernel file.  The kernel file defines, in the
portable OpenCL C subset of ``kernels/portable.h``:

* ``CG_BLOCK_WORDS``            number of 32-bit words in a block (4 for 128-bit, 2 for 64-bit ciphers);
* ``CG_ENC_LOCALS``             declarations placed at kernel scope (shared-memory tables), may be empty;
* ``CG_ENC_SETUP(rk)``          statements run by every work-item before the block loop (table fills,
                                keys into registers, barrier); may declare the names CG_ENC_ARGS uses;
* ``cg_encrypt_batch(uint *s CG_ENC_PARAMS)``  encrypts CG_BATCH blocks in place (block k in
                                s[k*W .. k*W+W-1]); CG_BATCH is a define the host passes (``batch``);
* ``CG_ENC_ARGS``               the arguments after ``s`` (keys, tables), starting with a comma;
* the same four with ``DEC`` for decryption (``cg_decrypt_batch``).

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

    #: kernel implementations: name -> {"file": kernel file, "defines": {...}, "batch": blocks per
    #: work-item step, optional "grid" ("persistent"), "local_size" (work-group size) and
    #: "max_registers" (a cap per work-item)}.  "fast" is the default; "ct" (if present) is
    #: constant-time.
    implementations: dict[str, dict] = {}

    def implementation(self, name: str | None = None) -> dict:
        """The kernel file, extra defines and batch of an implementation (default: "fast")."""
        from ..errors import InvalidArgument

        impls = self.implementations or {"fast": {"file": self.kernel_file, "defines": {}, "batch": 1}}
        impl = impls.get(name or "fast")
        if impl is None:
            raise InvalidArgument(
                f"{self.name} has no implementation {name!r}; expected one of: {', '.join(impls)}")
        return impl

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
