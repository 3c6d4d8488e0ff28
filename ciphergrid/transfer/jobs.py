"""What the pipeline moves and what the device does to it: a ``Chunk`` (a range of the message,
its host buffers and pins) and the jobs, ``CipherJob`` (a mode kernel of a KeyedProgram) and
``CopyJob`` (the copy-only strawman).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgument
from ..program import build_copy_program
from .pinning import PinView

U64 = np.uint64


# ------------------------------------------------------------------------------------ chunks
@dataclass(eq=False)
class Chunk:
    index: int
    lo: int                       # byte offset in the message (input and output)
    nbytes: int                   # bytes moved each way (the device's part of the chunk)
    first_block: int = 0
    nblocks: int = 0
    chain: bytes | None = None    # CBC: the ciphertext block before the chunk (or the IV)
    last: bool = False
    src: np.ndarray | None = None  # host bytes uploaded
    dst: np.ndarray | None = None  # host bytes downloaded into
    src_pins: "PinView | None" = None
    dst_pins: "PinView | None" = None
    bufs: list = field(default_factory=list)   # staging buffers this chunk holds
    copy_out: bool = False        # dst is a staging buffer to copy into the caller's array
    extra: bytes = b""            # host-computed output right after the device part (XTS tail)
    ev: object = None             # the D2H event


# ------------------------------------------------------------------------------------ jobs
class CipherJob:
    """The mode kernel of one KeyedProgram on a range of blocks of the message of ``req`` (by
    default the program's own request; a split passes ``Request.at``'s)."""

    def __init__(self, kp, layout=None, req=None):
        self.kp = kp
        self.req = req or kp.req
        self.bs = kp.bs
        self.layout = layout
        #: what the pipeline learns its end-to-end rate for (_wait_last): each kernel its own
        self.rate_key = (self.req.spec.name, self.req.impl, self.req.encrypt)
        if layout is None and self.req.sector_size:  # a stream in data units: the grid of units
            self.layout = self.req.mode.layout(self.req, self.req.sector_size)

    def scratch_bytes(self, chunk_blocks: int) -> int:
        return self.req.mode.scratch_bytes(self.req, self.layout, chunk_blocks)

    def enqueue(self, ch: Chunk, d_in, d_out, scratch, queue_, wait_for):
        return self.kp.enqueue(d_in, d_out, ch.nblocks, ch.first_block, queue_, chain=ch.chain,
                               layout=self.layout, scratch=scratch, wait_for=wait_for, req=self.req)


class CopyJob:
    """The copy-only strawman kernel (kernels/copy.cl): the pipeline with no cipher."""

    bs = 16
    req = None
    layout = None

    def __init__(self, backend):
        self.b = backend
        self.prg = build_copy_program(backend)
        self._items = None

    def scratch_bytes(self, chunk_blocks: int) -> int:
        return 0

    def enqueue(self, ch: Chunk, d_in, d_out, scratch, queue_, wait_for):
        n = -(-ch.nbytes // 16)
        if self._items is None:
            try:
                self._items = self.b.resident_items(self.prg, "cg_copy")
            except Exception:
                self._items = max(1, self.b.info.compute_units) * 2048
        return self.b.launch(self.prg, "cg_copy", min(n, self._items), [d_in, d_out, U64(n)],
                             queue_, wait_for=wait_for)


def flat_uint8(a) -> np.ndarray:
    """``a`` (C-contiguous) as a flat uint8 array over the same memory."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        raise InvalidArgument("the pipeline needs C-contiguous arrays")
    return a.reshape(-1).view(np.uint8)


def copy_job(backend) -> CopyJob:
    """The copy job of ``backend`` (its program built once)."""
    return backend.owned("copy_job", lambda: CopyJob(backend))
