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

import functools
import threading
from dataclasses import dataclass, field

from ..errors import InvalidArgument, InvalidKeySize
from .._lazy import numpy_for

np = numpy_for(__name__)


@dataclass(frozen=True)
class Implementation:
    """One kernel implementation of a block cipher: a kernel file and how to compile and launch it."""

    file: str                             # kernel file under ciphergrid/kernels/, or an absolute path
    defines: dict = field(default_factory=dict)   # extra compile-time constants
    batch: int = 1                        # blocks per work-item step (CG_BATCH)
    grid: str = "persistent"              # "persistent" (grid-stride, capped at residency) or "per-block"
    local_size: int | None = None         # a work-group size the kernels rely on (launches use exactly it)
    max_registers: int | None = None      # a register cap per work-item
    key_layout: str | None = None         # the round-key layout expand() makes for it (None: the plain one)
    constant_time: bool = False           # no table indexed by secret data, no secret-dependent branch


def bit_masks(words: np.ndarray) -> np.ndarray:
    """A bitsliced kernel's key layout: one mask word per bit of each 32-bit word of ``words``
    (0 or 0xffffffff; bit 0 of the first word first), flat little-endian uint32: the bits of
    the words' little-endian bytes, low bit first, as masks.  Its own temporaries are zeroed;
    the caller zeroes ``words`` and, when done, the result."""
    le = words.astype("<u4")
    bits = np.unpackbits(le.view(np.uint8), bitorder="little")
    le.fill(0)
    masks = np.empty(bits.size, dtype="<u4")
    np.negative(bits, out=masks, dtype=np.uint32)
    bits.fill(0)
    return masks


class NativeSchedule:
    """A key schedule computed by libcrypto's low-level call ``symbol`` (a few microseconds where
    Python takes tens: the schedule is on the path of every one-shot device call), used only
    where its result, converted by the cipher, equals the cipher's own schedule for the probe
    keys of ``check`` (run once, at first use); otherwise (no libcrypto, no such call, another
    layout) the cipher's Python runs.  ``call(fn, key, address)`` writes the schedule's
    ``words`` 32-bit words at ``address``; ``argtypes`` names the call's ctypes types.
    ``check`` returns what the cipher keeps of the comparison as ``found`` (where its words lie
    among the call's, or just True), false where they disagree."""

    def __init__(self, symbol: str, argtypes: tuple, words: int, call):
        self.symbol, self.argtypes, self.words, self.call = symbol, argtypes, words, call
        self.fn = None
        self.found = None
        self.checked = False
        self.lock = threading.Lock()

    def raw(self, key: bytes) -> np.ndarray:
        """The schedule's words for ``key`` (the caller zeroes them): a ctypes array's memory
        (its address without numpy's ``ctypes`` attribute, which costs more than the call)."""
        import ctypes

        ks = (ctypes.c_uint32 * self.words)()
        self.call(self.fn, key, ctypes.addressof(ks))
        return np.frombuffer(ks, dtype=np.uint32)

    def ready(self, check) -> bool:
        """Whether the native call runs: found, and ``check(self)`` true (asked once)."""
        if not self.checked:
            with self.lock:
                if not self.checked:
                    self._find(check)
                    self.checked = True
        return self.fn is not None

    def _find(self, check) -> None:
        import ctypes

        from .._libcrypto import load

        found = []

        def declare(lib) -> None:
            fn = getattr(lib, self.symbol)
            fn.restype, fn.argtypes = None, tuple(getattr(ctypes, t) for t in self.argtypes)
            found.append(fn)

        try:
            if load(declare) is None:
                return
            self.fn = found[-1]
            self.found = check(self)
            if not self.found:
                self.fn = None
        except Exception:  # (no library, no such call, or it disagreed: the Python runs)
            self.fn = None


def byte_mask_table() -> np.ndarray:
    """A (256, 8) table: row b holds byte b's 8 masks (0 or 0xffffffff, bit 0 first), so that
    ``table.take(data, axis=0).reshape(-1)`` is :func:`bit_masks` of bytes in one gather (the
    bitsliced layouts of ciphers whose round keys are bytes or 16-bit words)."""
    bits = (np.arange(256, dtype=np.uint32)[:, None] >> np.arange(8, dtype=np.uint32)) & np.uint32(1)
    return (np.uint32(0) - bits).astype("<u4")


@dataclass(frozen=True)
class UsePolicy:
    """What encrypting under one key is allowed (DES and TDEA: refused; 64-bit blocks: a limit).

    The API and the CLI apply it to encryption only (decryption always works); ``allow_weak=True``
    / ``--allow-weak`` lifts the refusal and the block limit, with a warning instead."""

    warning: str | None = None          # said once per process when encrypting (after the refusal's
                                        # reason, where allow_weak lifted one)
    refusal: str | None = None          # why encryption is refused unless allow_weak (DES, TDEA)
    block_limit: int | None = None      # blocks one call or one streaming context may encrypt
    over_limit_refused: bool = False    # past block_limit: refused unless allow_weak (else warned)
    limit_reason: str | None = None     # why block_limit, said when a call goes past it


#: the limit of every 64-bit block cipher: 2^32 blocks (32 GiB) under one key
BIRTHDAY_LIMIT = 1 << 32
BIRTHDAY_REASON = "the birthday bound of 64-bit blocks, where the ciphertext starts to leak plaintext (Sweet32)"


_NO_POLICY = UsePolicy()


@functools.lru_cache(maxsize=None)
def _birthday_policy(title: str) -> UsePolicy:
    """The policy of a 64-bit block cipher (other than DES's family) named ``title``."""
    return UsePolicy(
        warning=f"{title} has 64-bit blocks: rekey well before 2^32 blocks (32 GiB) under one "
                f"key (the birthday bound, Sweet32); more than that under one key in one call or "
                f"stream is refused unless allow_weak=True / --allow-weak",
        block_limit=BIRTHDAY_LIMIT, over_limit_refused=True, limit_reason=BIRTHDAY_REASON)


class BlockCipher:
    """Base class: subclasses set the class attributes and implement :meth:`expand`."""

    #: registry name, as OpenSSL spells it ("aes", "camellia", "sm4", ...)
    name: str = ""
    #: the name as its designers write it, for messages ("" : name.upper(): "PRESENT", "HIGHT")
    title: str = ""
    #: block size in bytes (16 or 8)
    block_size: int = 16
    #: accepted key sizes in bytes (a tuple, or a range for ciphers such as CAST-128)
    key_sizes = ()
    #: the names: (prefix, key size in bytes, mode names) -> "prefix-mode" for each mode
    variants: tuple = ()
    #: kernel implementations by name; "fast" is the default
    implementations: dict[str, Implementation] = {}
    #: the implementation a serial run (CBC encryption: one work-item, one block after the other)
    #: takes by default, where "fast" processes many blocks per step (a bitsliced kernel would do
    #: 32 blocks of work for each block); None: "fast"
    serial_implementation: str | None = None
    #: the OpenSSL provider holding this cipher ("default", "legacy") or None when OpenSSL lacks it
    openssl_provider: str | None = None
    #: the /proc/cpuinfo flag of CPU instructions for this cipher that OpenSSL uses ("aes"), if any
    cpu_flag: str | None = None

    def implementation(self, name: str | None = None) -> Implementation:
        """An implementation by name (default: "fast")."""
        impl = self.implementations.get(name or "fast")
        if impl is None:
            raise InvalidArgument(f"{self.name} has no implementation {name!r}; expected one of: "
                                  f"{', '.join(self.implementations)}")
        return impl

    def constant_time_implementation(self) -> str:
        """The name of a constant-time implementation ("ct"), or a clear error when there is none."""
        for name, im in self.implementations.items():
            if im.constant_time and name == "ct":
                return name
        raise InvalidArgument(f"{self.name} has no constant-time kernel: constant_time=True cannot be honoured")

    def encryption_policy(self, key: bytes) -> UsePolicy:
        """The rules for encrypting under ``key``.  64-bit block ciphers warn once, naming the
        birthday bound, and refuse more than 2^32 blocks under one key in one call or one streaming
        context unless allow_weak.  DES and TDEA (refused) override this."""
        if self.block_size == 8:
            return _birthday_policy(self.title or self.name.upper())
        return _NO_POLICY

    def check_key(self, key: bytes) -> None:
        if len(key) not in self.key_sizes:
            from ..registry import key_words

            raise InvalidKeySize(f"{self.name} takes {key_words(self.key_sizes)}, got {len(key)} "
                                 f"bytes")

    def openssl_name(self, spec) -> str | None:
        """OpenSSL's EVP name of a cipher·mode (None: OpenSSL lacks it)."""
        return spec.name if self.openssl_provider else None

    def expand(self, key: bytes, decrypt: bool, layout: str | None = None) -> np.ndarray:
        """Return the round keys as a little-endian uint32 array in the layout the kernel expects.

        ``decrypt=True`` returns the schedule used by ``cg_decrypt`` (it may differ, e.g. the
        equivalent inverse cipher's InvMixColumns-transformed keys for AES).  The caller owns the
        array and zeroizes it when done.
        """
        raise NotImplementedError

    def defines(self, key_size: int) -> dict[str, int]:
        """Compile-time constants for a key size (e.g. the number of rounds)."""
        return {}

    def host_encrypt(self, key: bytes, blocks: bytes) -> bytearray | None:
        """A few whole blocks encrypted on the host for less than a device launch costs (XTS
        one-shots' tweaks), a bytearray the caller zeroes; None where the cipher has no such
        path (modes/xts.py calls libcrypto's block functions for the ciphers OpenSSL has)."""
        return None

    def reference_ecb(self, key: bytes, data: bytes, encrypt: bool) -> bytes:
        """Host ECB of whole blocks (XTS stealing and the tweak of tails): OpenSSL's for ciphers
        it has, else a Python model of the cipher."""
        raise NotImplementedError
