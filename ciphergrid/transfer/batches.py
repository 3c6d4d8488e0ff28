"""AEAD batches through one device in pieces, overlapped: the host -> host path of the AEADs.

A batch (aeads.base.Batch) is cut at message boundaries into pieces of about ``piece_bytes`` of
text (a message longer than that is a piece alone); every piece is a batch of its own, run by
the AEAD's driver as one Job (upload, kernels, download of the texts and tags).  ``depth``
threads each own a queue of the device and take pieces in turn, so one piece's upload, another's
kernels and a third's download run at once (both copy engines and the SMs busy).  The caller's
text buffers are page-locked for the run (transfer.pinning: kept in the registration cache), so
the copies are DMA from and to them with no staging copy.  The tags come back in message order;
comparing them (decryption) stays with the caller: the shared layer's ``verify``.

Pieces must hold enough messages to fill the device with the AEADs that are serial within a
message (Ascon, AEGIS: one message per work-item): ``depth`` pieces run at once.
"""

from __future__ import annotations

import threading

import numpy as np

from ..engines.openssl.threads import check_cancel, run_all
from .pinning import pinned

#: text per piece (whole messages); a few pieces in flight at once on ``DEPTH`` queues
PIECE_BYTES = 64 << 20
DEPTH = 4


def cuts(off: np.ndarray, piece_bytes: int) -> list[int]:
    """Message indices where the pieces start, and the count at the end: [0, ..., m].  A cut
    falls on the first message starting at or after each multiple of ``piece_bytes``."""
    m = off.shape[0] - 1
    total = int(off[-1]) if m else 0
    targets = np.arange(piece_bytes, total, piece_bytes, dtype=np.int64)
    idx = np.searchsorted(np.asarray(off, dtype=np.int64), targets, side="left")
    out = [0]
    for i in idx.tolist():
        if out[-1] < i < m:
            out.append(i)
    out.append(m)
    return out


def piece(batch, a: int, b: int):
    """Messages [a, b) of ``batch`` as a batch of their own: views of its buffers, offsets
    rebased (the key table is shared)."""
    o0, o1 = int(batch.off[a]), int(batch.off[b])
    q0, q1 = int(batch.aad_off[a]), int(batch.aad_off[b])
    return type(batch)(
        name=batch.name, encrypt=batch.encrypt, tag_length=batch.tag_length, keys=batch.keys,
        key_index=batch.key_index[a:b], nonces=batch.nonces[a:b],
        aad=batch.aad[q0:q1], aad_off=batch.aad_off[a:b + 1] - q0,
        src=batch.src[o0:o1], off=batch.off[a:b + 1] - o0, dst=batch.dst[o0:o1])


def run(backend, make_driver, batch, *, piece_bytes: int | None = None,
        depth: int | None = None) -> np.ndarray:
    """The tags of every message of ``batch`` (texts into ``batch.dst``), pieces overlapped on
    ``depth`` queues of ``backend`` (None: PIECE_BYTES, DEPTH).  ``make_driver(view)``: the
    AEAD's driver on a view of the backend whose default queue is one of those queues
    (aeads.base.DeviceAEAD)."""
    piece_bytes = piece_bytes or PIECE_BYTES
    depth = depth or DEPTH
    bounds = cuts(batch.off, piece_bytes)
    n = len(bounds) - 1
    if n <= 1 or depth <= 1:
        return make_driver(backend).run(batch)
    tags = np.zeros((batch.count, batch.tag_length), dtype=np.uint8)
    lock = threading.Lock()
    taken = [0]   # pieces handed out so far

    def job(drv):
        def work(cancel) -> None:
            while True:
                check_cancel(cancel)  # (an interrupt: the others stop after their piece)
                with lock:
                    k = taken[0]
                    if k >= n:
                        return
                    taken[0] = k + 1
                a, b = bounds[k], bounds[k + 1]
                tags[a:b] = drv.run(piece(batch, a, b))
        return work

    drivers = [make_driver(backend.with_queue(backend.queue())) for _ in range(min(depth, n))]
    with pinned(backend, batch.src), pinned(backend, batch.dst):
        run_all([job(d) for d in drivers])  # (waits for every piece in flight, even interrupted)
    return tags
