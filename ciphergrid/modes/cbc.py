"""CBC (NIST SP 800-38A 6.2).  Decryption is parallel: block i needs ciphertext block i - 1,
which is in the input.  Encryption is serial: block i needs the ciphertext of block i - 1, so a
device runs it on one work-item, carrying the chaining value from launch to launch in the run's
16-byte scratch buffer (the kernels of one queue run in order)."""

from __future__ import annotations

from .base import U64, Mode, iv_words, replace


class CBCMode(Mode):
    name = "cbc"
    whole_blocks = True
    paddable = True
    serial_encrypt = True

    def kernel(self, encrypt: bool) -> str:
        return "cg_cbc_enc" if encrypt else "cg_cbc_dec"

    def reads_behind(self, req) -> bool:
        return not req.encrypt

    carries = True

    def carry_reads(self, req):
        # the next IV: decryption's is the last ciphertext block of the input
        return "output" if req.encrypt else "input"

    def carry(self, req, piece_in, piece_out):
        bs = req.block_size
        last = (piece_out if req.encrypt else piece_in)[-bs:]
        return bytes(last) if len(last) == bs else None

    def scratch_bytes(self, req, layout, nblocks):
        return 16 if req.encrypt else 0

    def chain_at(self, req, data, first_block: int) -> bytes | None:
        if first_block == 0:
            return req.iv
        if req.encrypt:
            return None  # the previous launch's last ciphertext block, kept on the device
        bs = req.block_size
        return bytes(data[(first_block - 1) * bs: first_block * bs])

    def at(self, req, first_block: int, chain: bytes | None = None):
        if first_block == 0:
            return req
        if chain is None:
            raise ValueError("CBC from a block other than the first needs the chaining value")
        return replace(req, iv=bytes(chain))

    def kernel_args(self, req, first_block, chain):
        return iv_words(chain)

    def enqueue(self, kp, req, in_buf, out_buf, first_block, nblocks, queue=None, *, chain=None,
                layout=None, scratch=None, wait_for=None):
        if not req.encrypt:
            return super().enqueue(kp, req, in_buf, out_buf, first_block, nblocks, queue,
                                   chain=chain, wait_for=wait_for)
        b = kp.b
        if scratch is None:  # (a call of its own: the chain lives as long as the program)
            scratch = kp.keep(b.alloc(16))
        if chain is not None:  # a new chain (the IV, or a split's) into the chain buffer
            ev = b.upload(scratch, kp.host_block(chain), queue, wait_for=wait_for)
            wait_for = [ev]
        return b.launch(kp.prg, "cg_cbc_enc", b.group_size(kp.prg),
                        [in_buf, out_buf, kp.rk[0], scratch, U64(nblocks)], queue,
                        wait_for=wait_for)


CBC = CBCMode()
