"""CTR (NIST SP 800-38A 6.5): the counter block is the whole block, big-endian, incremented with
carry over its full width (128 bits for 16-byte blocks, 64 for 8-byte ones), as OpenSSL does."""

from __future__ import annotations

from .base import MASK64, U64, Mode, replace


def ctr_at(iv: bytes, block: int) -> int:
    """The counter of block ``block``: big-endian IV + block, modulo 2^(8*len(iv))."""
    return (int.from_bytes(iv, "big") + block) % (1 << (8 * len(iv)))


class CTRMode(Mode):
    name = "ctr"

    def decrypt_schedule(self, encrypt: bool) -> bool:
        return False  # both directions encrypt the counters

    def kernel(self, encrypt: bool) -> str:
        return "cg_ctr"

    def kernel_args(self, req, first_block, chain):
        c = ctr_at(req.iv, first_block)
        return [U64(c >> 64), U64(c & MASK64)]

    def releasable(self, req, pending, final):
        return pending  # every byte at once (a piece may start inside a block)

    def held_back(self, req):
        return 0

    def at(self, req, first_block: int, chain: bytes | None = None):
        if first_block == 0:
            return req
        return replace(req, iv=ctr_at(req.iv, first_block).to_bytes(req.block_size, "big"))


CTR = CTRMode()
