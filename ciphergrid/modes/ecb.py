"""ECB: each block on its own (NIST SP 800-38A 6.1)."""

from __future__ import annotations

from .base import Mode


class ECBMode(Mode):
    name = "ecb"
    whole_blocks = True
    paddable = True

    def iv_len(self, block_size: int) -> int:
        return 0

    def kernel(self, encrypt: bool) -> str:
        return "cg_ecb_enc" if encrypt else "cg_ecb_dec"


ECB = ECBMode()
