"""The Mode: everything about a mode of operation, in one object per mode.

A mode owns its validation (IV or nonce length, options, key halves, data lengths), the length of
its output, the state at block *f* of a message (counter, CBC chain, XTS tweak position), the
kernels and kernel arguments that run it on a device, and whether it can stream.  Nothing else in
ciphergrid asks which mode it holds: it asks the mode.

Splitting is the primitive everything above builds on: ``req.mode.at(req, f, chain)`` is the
request for blocks [f, ...) of ``req`` on its own (any engine runs it), and ``enqueue(kp, ...,
first_block=f)`` runs blocks [f, f + n) of the message on a device with the key already there.
"""

from __future__ import annotations

import dataclasses
import struct

from ..errors import InvalidArgument, InvalidIVSize, InvalidLength
from . import padding as _padding
from .._lazy import numpy_for

np = numpy_for(__name__)


def U64(x):
    """A kernel's 64-bit unsigned argument (numpy at first use: see _lazy)."""
    return np.uint64(x)


def U32(x):
    """A kernel's 32-bit unsigned argument."""
    return np.uint32(x)


MASK64 = (1 << 64) - 1


class Mode:
    """Base class; one instance per mode (``modes.ECB`` ...), compared by identity."""

    #: OpenSSL's name ("ecb", "cbc", "ctr", "xts")
    name: str = ""
    #: block-cipher keys in the caller's key (XTS: two, data key || tweak key)
    key_count: int = 1
    #: the data must be whole blocks (unless padded)
    whole_blocks: bool = False
    #: PKCS#7 padding applies
    paddable: bool = False
    #: encryption is serial (each block needs the previous output): one work-item on a device
    serial_encrypt: bool = False
    #: per-call options this mode takes besides iv (XTS: sector_size, start_sector)
    options: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"modes.{self.name.upper()}"

    def __str__(self) -> str:
        return self.name

    # -- what a cipher·mode takes -------------------------------------------------------------
    def available_for(self, algorithm) -> bool:
        """Whether this mode is defined for the block cipher (XTS: 128-bit blocks only)."""
        return True

    def iv_len(self, block_size: int) -> int:
        """Bytes of IV / initial counter / tweak (0: none)."""
        return block_size

    def validate(self, spec, iv, encrypt: bool, sector_size, start_sector):
        """Check the IV and this mode's options; return (iv, sector_size, start_sector)."""
        if sector_size is not None or start_sector is not None:
            raise InvalidArgument("sector_size/start_sector apply to XTS only")
        want = self.iv_len(spec.block_size)
        if want == 0:
            if iv is not None:
                raise InvalidIVSize(f"{spec.name} takes no IV")
            return None, None, 0
        if iv is None:
            raise InvalidIVSize(f"{spec.name} needs a {want}-byte IV")
        iv = bytes(iv)
        if len(iv) != want:
            raise InvalidIVSize(f"{spec.name} takes a {want}-byte IV, got {len(iv)} bytes")
        return iv, None, 0

    def check_key(self, spec, key: bytes, encrypt: bool) -> None:
        """Mode-specific key rules (XTS: the halves must differ on encryption)."""

    def check_length(self, req, n: int) -> None:
        """Raise InvalidLength when ``n`` bytes (after padding, on encryption) do not suit the mode."""
        if self.whole_blocks and n % req.block_size:
            # padding makes any plaintext whole blocks; a ciphertext already is, unless cut short
            hint = ("" if req.padding else " (or use padding='pkcs7')") if req.encrypt else \
                " (its ciphertexts are: this input was cut short, or is not one)"
            raise InvalidLength(f"{req.spec.name} takes whole {req.block_size}-byte blocks{hint}: "
                                f"{n} bytes is not a multiple of {req.block_size}")

    def out_len(self, req, n: int) -> int:
        """Bytes of output for ``n`` bytes of input (padding adds on encryption; on decryption the
        padded length is an upper bound until the padding is read)."""
        if req.padding and req.encrypt:
            return _padding.padded_len(n, req.block_size)
        return n

    # -- how it runs -----------------------------------------------------------------------------
    def parallel(self, encrypt: bool) -> bool:
        """Whether the blocks of a message are independent (a device runs them in parallel)."""
        return not (encrypt and self.serial_encrypt)

    def streams(self, req) -> bool:
        """Whether a stream can be cut into chunks without the whole message (no padding, and what
        the mode needs at a chunk's start is known from what came before)."""
        return not req.padding

    def device_runs(self, req, n: int) -> bool:
        """Whether the device kernels handle ``n`` bytes of this request."""
        return True

    def decrypt_schedule(self, encrypt: bool) -> bool:
        """Whether the kernel uses the block cipher's decryption direction."""
        return not encrypt

    def kernel(self, encrypt: bool) -> str:
        raise NotImplementedError

    def schedules(self, req) -> list[tuple[bytes, bool]]:
        """The key schedules the kernels take: (block-cipher key, decryption schedule?)."""
        return [(req.key[: req.spec.key_size], self.decrypt_schedule(req.encrypt))]

    @staticmethod
    def items(kp, name: str, nblocks: int) -> int:
        """Work-items for a launch of kernel ``name`` over ``nblocks``: one per batch of blocks,
        capped at what the device holds at once when the implementation uses a persistent grid."""
        items = -(-nblocks // kp.impl.batch)
        if kp.impl.grid == "persistent":
            items = min(items, kp.b.resident_items(kp.prg, name))
        return items

    def enqueue(self, kp, req, in_buf, out_buf, first_block: int, nblocks: int, queue=None, *,
                chain: bytes | None = None, layout=None, scratch=None, wait_for=None,
                record: bool = True):
        """Launch the kernel on blocks [first_block, first_block + nblocks) of the message of
        ``req`` (``kp`` holds its keys), held in ``in_buf``/``out_buf``: one launch, nothing
        allocated or copied; returns its event (``record``: whether there is one, as
        KeyedProgram.enqueue decides)."""
        args = [in_buf, out_buf, kp.rk[0], *self.kernel_args(req, first_block, chain), U64(nblocks)]
        name = self.kernel(req.encrypt)
        return kp.b.launch(kp.prg, name, self.items(kp, name, nblocks), args, queue,
                           wait_for=wait_for, record=record)

    def kernel_args(self, req, first_block: int, chain: bytes | None) -> list:
        """The arguments between the key and the block count."""
        return []

    def reads_behind(self, req) -> bool:
        """Whether block i's output needs input block i - 1 (CBC decryption): such a run cannot
        write over its input, and a split takes the block before it from the input."""
        return False

    #: ``first_launch(req, n)``: what a mode works out on the host for a keyed program's first
    #: launch over ``n`` bytes (modes/xts.py), or None where it works out nothing: (the bytes
    #: uploaded after the keys, in the scratch reserve, or None; the indices of the key
    #: schedules uploaded with the program; the mode's own, for ``prepare``).  A schedule left
    #: out is expanded and uploaded when a launch asks for it (``KeyedProgram.schedule``), so a
    #: mode that leaves one out reads its schedules there, not from ``kp.rk``
    first_launch = None
    #: ``prepare(kp)``: a mode's set-up of a new keyed program, or None where it has none
    prepare = None

    #: device scratch bytes a keyed program reserves beside its round keys (XTS: a small call's
    #: segment tweaks), allocated, uploaded and wiped with them
    scratch_reserve = 0

    def scratch_bytes(self, req, layout, nblocks: int) -> int:
        """Device scratch a launch of up to ``nblocks`` blocks needs (XTS: segment tweaks; CBC
        encryption: the chaining value carried between launches)."""
        return 0

    # -- streaming contexts ------------------------------------------------------------------------
    def releasable(self, req, pending: int, final: bool) -> int:
        """Of ``pending`` bytes held by a streaming context, how many it can process now: whole
        blocks (the last one kept back while PKCS#7 padding is to be removed), or all at the end."""
        if final:
            return pending
        bs = req.block_size
        hold = bs if (req.padding and not req.encrypt) else 0
        return max(0, pending - hold) // bs * bs

    def held_back(self, req) -> int:
        """The most bytes update() may release beyond its input (what it held before): the
        ``n - 1`` of pyca's ``update_into`` buffer rule, len(data) + n - 1."""
        return req.block_size - 1

    #: whether a piece's output depends on the pieces before it through :meth:`carry` (CBC)
    carries = False

    def carry_reads(self, req) -> str | None:
        """Which last block of a piece :meth:`carry` reads: "input" (the caller's own data:
        nothing to wait for from a device), "output", or None (the mode carries nothing)."""
        return None

    def carry(self, req, piece_in, piece_out) -> bytes | None:
        """The chaining value after a processed piece (CBC: its last ciphertext block)."""
        return None

    # -- splitting -------------------------------------------------------------------------------
    def chain_at(self, req, data, first_block: int) -> bytes | None:
        """What the kernels need at block ``first_block`` besides its index, read from the input
        ``data`` (CBC decryption: the ciphertext block before it, or the IV); None elsewhere."""
        return None

    def split_unit(self, req) -> int | None:
        """The bytes a range of a message split over engines must start on (``at``'s grain: a
        block), or None when it cannot be split (serial encryption)."""
        return req.block_size if self.parallel(req.encrypt) else None

    def at(self, req, first_block: int, chain: bytes | None = None):
        """The request for the blocks of ``req`` from ``first_block`` on, as a message of its own
        (``chain``: see :meth:`chain_at`)."""
        return req

    def layout(self, req, n: int):
        """The data-unit layout of an n-byte message (XTS), else None."""
        return None


def replace(req, **kw):
    """``req`` with the fields ``kw`` changed (a split's IV or start sector, on every piece of a
    context): its fields copied as they are, as dataclasses.replace would set them, without
    its per-field __init__."""
    if not hasattr(req, "__dict__") or any(k not in req.__dict__ for k in kw):
        return dataclasses.replace(req, **kw)
    new = object.__new__(type(req))
    d = new.__dict__
    d.update(req.__dict__)
    d.update(kw)
    return new


def iv_words(block: bytes) -> list:
    """A block (<= 16 bytes) as four little-endian uint32 kernel arguments."""
    w0, w1, w2, w3 = struct.unpack("<4I", bytes(block).ljust(16, b"\0"))
    return [U32(w0), U32(w1), U32(w2), U32(w3)]
