"""Streaming host data through one device in chunks.

``run_chunks`` cuts a message into chunks of whole blocks and runs each through upload, mode
kernel and download; block offsets, counters, CBC chaining values and XTS tweak positions are
carried across chunk boundaries so the output equals a one-shot call.
"""

from __future__ import annotations

import numpy as np


def run_chunks(kp, data: np.ndarray, out: np.ndarray, layout, *, chunk_bytes: int) -> None:
    b, p, bs = kp.b, kp.p, kp.bs
    n = data.nbytes
    total = layout.kernel_blocks if layout is not None else -(-n // bs)
    if total == 0:
        return
    chunk_blocks = max(1, chunk_bytes // bs)
    cap = min(total, chunk_blocks) * bs
    in_buf, out_buf = b.alloc(cap), b.alloc(cap)
    scratch = None
    if layout is not None:
        nseg = max(kp.xts_segments(layout, f, min(chunk_blocks, total - f))[1]
                   for f in range(0, total, chunk_blocks))
        scratch = b.alloc(16 * nseg)
    for first in range(0, total, chunk_blocks):
        nb = min(chunk_blocks, total - first)
        lo = first * bs
        hi = min(lo + nb * bs, n)
        src = data[lo:hi]
        short = hi - lo < nb * bs
        if short:  # CTR tail: pad the last partial block
            padded = np.zeros(nb * bs, dtype=np.uint8)
            padded[: hi - lo] = src
            src = padded
        b.upload(in_buf, src)
        chain = None
        if p.spec.mode == "cbc":
            chain = p.iv if first == 0 else data[lo - bs: lo].tobytes()
        kp.enqueue(in_buf, out_buf, nb, first, chain=chain, layout=layout, scratch=scratch)
        if short:
            tmp = np.empty(nb * bs, dtype=np.uint8)
            b.wait(b.download(tmp, out_buf))
            out[lo:hi] = tmp[: hi - lo]
        else:
            b.wait(b.download(out[lo:hi], out_buf))
