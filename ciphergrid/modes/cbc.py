"""CBC (NIST SP 800-38A 6.2).  Decryption is parallel: block i needs ciphertext block i - 1,
which is in the input.  Encryption is serial: block i needs the ciphertext of block i - 1, so a
device runs it on one work-item, carrying the chaining value from launch to launch in the run's
16-byte scratch buffer (the kernels of one queue run in order)."""

from __future__ import annotations

from .base import U32, U64, Mode, iv_words, replace


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

    def enqueue(self, kp, req, in_buf, out_buf, first_block, nblocks, queue=None, *, chain=None,
                layout=None, scratch=None, wait_for=None, record=True):
        """``chain``: the chaining value as bytes, or a device chain (program.DeviceChain: the
        value in its buffer, or its ``known`` bytes), which the launch leaves holding this run's
        next chaining value (decryption: the last input block; encryption: the last output
        block) without a copy or a wait."""
        b = kp.b
        held = chain if getattr(chain, "on_device", False) else None
        if held is not None:
            queue = queue if queue is not None else b.default_queue
            if held.queue is not None and held.queue is not queue:
                # the chain's last writer ran on another queue: this launch (and an upload
                # into the chain) waits for it on the device
                wait_for = list(wait_for or ()) + [b.marker(held.queue)]
        if not req.encrypt:   # (cg_cbc_dec's carry: modes.cl)
            if held is None:
                carry, dev, iv = 0, out_buf, iv_words(chain)  # (chain[] not touched)
            elif held.known is not None:
                carry, dev, iv = 2, held.buf, iv_words(held.known)
            else:
                carry, dev, iv = 3, held.buf, iv_words(b"")
            ev = b.launch(kp.prg, "cg_cbc_dec", self.items(kp, "cg_cbc_dec", nblocks),
                          [in_buf, out_buf, kp.rk[0], dev, U32(carry), *iv, U64(nblocks)],
                          queue, wait_for=wait_for, record=record)
            if held is not None:
                held.known = None
                held.queue = queue
            return ev
        if held is not None:          # the chain buffer carries it from launch to launch
            scratch, chain = held.buf, held.known
            held.known = None
            held.queue = queue
        elif scratch is None:         # (a call of its own: the program's scratch on this queue)
            scratch = kp.scratch(16, queue)
        if chain is not None:  # a new chain (the IV, or a split's) into the chain buffer
            ev = b.upload(scratch, kp.host_block(chain), queue, wait_for=wait_for)
            wait_for = [ev]
        return b.launch(kp.prg, "cg_cbc_enc", b.group_size(kp.prg),
                        [in_buf, out_buf, kp.rk[0], scratch, U64(nblocks)], queue,
                        wait_for=wait_for, record=record)


CBC = CBCMode()
