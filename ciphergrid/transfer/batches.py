"""AEAD batches through one device in pieces, overlapped: the host -> host path of the AEADs.

A batch (aeads.base.Batch) is cut at message boundaries into pieces of about ``piece_bytes`` of
text (a message longer than that is a piece alone); every piece is a batch of its own, run by
the AEAD's driver as one Job: the AEADs' job kind of the one pipeline (transfer/flight.py),
whose block ciphers' kind is transfer/driver.py's chunks.  As for an array's chunks there, ONE
thread enqueues every piece and waits only for the oldest when too many are in flight: the
uploads on one queue, the kernels on a second, the downloads on a third, each piece's kernels
waiting on the device for its uploads and its downloads for its kernels -- so one piece's
upload, another's kernels and a third's download run at once (both copy engines and the SMs
busy), and no host thread waits for another's lock.  A job's host work is a few vectorised
array operations and ONE upload of its metadata from page-locked staging
(engines.device_aead.job.Job.stage); the first piece's first slice of texts goes up before any
of it (``head_start``).  The pieces are large and move in slices (Job's ``slices``: each
slice's texts uploaded, run and downloaded on their own, the host work once per piece; a
slice's download is enqueued right after its launches; a serial AEAD's long messages go in
whole pieces: ``layout``), and a message longer than a slice is cut into slices inside it
where the driver says so (``slice_align``: GCM and ChaCha20-Poly1305), so one long message
overlaps its transfers and kernels as a batch does.
Texts held as rows (a 2-D view, one message a row at any pitch: a sealed message's chunks
between their tags, formats/cobblestone.py) are staged per piece in contiguous texts its job
reads or writes: device memory filled or emptied by one DMA per run of rows where the backend
has ``row_copies`` (CUDA's 2-D copies), so the host copies nothing; the pieces are then whole
(a slice's size, no slices), their jobs reading and writing that staging where it lies.
The caller's text buffers are page-locked for the run (transfer.pinning: kept in the
registration cache), so the texts move by DMA from and to them with no staging copy (each copy
cut at the registrations' edges: Job, transfer.pinning.copy_ranges).  The tags come back in
message order; comparing them (decryption) stays per piece as it is done (``run(...,
received=)``), with the shared layer's ``verify``.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from itertools import accumulate

import numpy as np

from ..aeads.base import verify
from ..engines.base import start_beside
from ..engines.device_aead.job import Head, upload_texts
from .flight import Lanes, fly
from .pinning import pinned

#: text per piece (whole messages); up to 2 x DEPTH pieces in flight; RAMP: halvings of the
#: piece size at the start and at the end of a batch (cuts).  No small pieces first: a piece's
#: host work outlasts a small piece's upload, so they would leave the copy engine idle; smaller
#: ones last, where the downloads lag (scripts/dev/aead_e2e_probe.py; docs/benchmarks.md,
#: 'Figures moved from code comments')
PIECE_BYTES = 64 << 20
DEPTH = 4
RAMP = (0, 3)
#: ONE job's host texts are page-locked from this size on (below it a registration costs about
#: what it saves)
PIN_MIN_BYTES = 1 << 20
#: (a driver may ask for other pieces: DeviceAEAD.piece_bytes; for slices of its pieces,
#: DeviceAEAD.slice_bytes: each slice's texts uploaded, run and downloaded on their own, the host
#: work once per piece -- whole pieces of 64 MiB would make the device wait for a whole piece's
#: texts before its first kernels, docs/benchmarks.md 0j; and for several kernel queues
#: taken in turn, DeviceAEAD.kernel_queues: a serial AEAD's launch, one work-item per message,
#: holds few SMs for one message's whole time, so two pieces' launches can overlap.  DEPTH
#: counts pieces of PIECE_BYTES: larger pieces, fewer of them in flight)


def cuts(off: np.ndarray, piece_bytes: int, ramp=0) -> list[int]:
    """Message indices where the pieces start, and the count at the end: [0, ..., m].  A cut
    falls on the first message starting at or after each target: the multiples of
    ``piece_bytes``, or with ``ramp`` = (h, t) pieces of piece_bytes / 2^h, ..., / 2 first and
    of piece_bytes / 2, ..., / 2^t last (an int r: (r, r)) and between them equal pieces of at
    most ``piece_bytes``: the device starts sooner and ends sooner after the last upload (the
    pipeline's fill and drain cost a small piece's copy, not a whole one's; the largest piece
    adds its upload and kernels to the whole run's time, so none is larger than asked)."""
    m = off.shape[0] - 1
    total = int(off[-1]) if m else 0
    rh, rt = (ramp, ramp) if isinstance(ramp, int) else ramp
    first = [piece_bytes >> k for k in range(rh, 0, -1)]
    last = [piece_bytes >> k for k in range(1, rt + 1)]
    # (the targets in Python integers, a few dozen: one numpy call, the search, on the host's
    # critical path before the first upload)
    if (rh or rt) and total >= sum(first) + sum(last) + 2 * piece_bytes:
        head = list(accumulate(first))                                  # after each first piece
        tail = [total - t for t in accumulate(last[::-1])][::-1]        # before each last
        lo = head[-1] if first else 0
        hi = tail[0] if last else total
        k = -(-(hi - lo) // piece_bytes)                 # equal pieces between (no sliver)
        targets = head + [lo + (j * (hi - lo)) // k for j in range(1, k)] + tail
    else:
        targets = list(range(piece_bytes, total, piece_bytes))
    idx = np.searchsorted(np.asarray(off, dtype=np.int64), targets, side="left")
    return _rising(idx.tolist(), m)


def _rising(values, end: int) -> list[int]:
    """[0, then each of ``values`` above the last kept and below ``end``, then ``end``]."""
    out = [0]
    for x in values:
        if out[-1] < x < end:
            out.append(x)
    out.append(end)
    return out


def slice_cuts(off: np.ndarray, slice_bytes: int, align: int = 0) -> list[int]:
    """Byte offsets in a piece's texts (``off``: its message offsets) where its slices start,
    and its end: [0, ..., total] (engines.device_aead.job.Job's ``slices``).  Each multiple of
    ``slice_bytes`` falls on the first message starting at or after it, or, with ``align``,
    inside a message longer than ``slice_bytes`` on the multiple of ``align`` bytes from the
    message's start at or before it: one long message moves in slices as a batch does (smaller
    slices first and last, as ``cuts`` ramps pieces, are slower: docs/benchmarks.md 0m)."""
    o = np.asarray(off, dtype=np.int64)
    total = int(o[-1]) if o.shape[0] > 1 else 0
    t = np.arange(slice_bytes, total, slice_bytes, dtype=np.int64)
    c = o[np.searchsorted(o, t, side="left")]                 # the next message's start
    if align and t.size:
        i = np.searchsorted(o, t, side="right") - 1           # the message holding t
        start = o[i]
        inner = start + (t - start) // align * align
        c = np.where(o[i + 1] - start > slice_bytes, inner, c)
    return _rising(c.tolist(), total)


def piece(batch, a: int, b: int):
    """Messages [a, b) of ``batch`` as a batch of their own: views of its buffers, offsets
    rebased (the key table is shared)."""
    o0, o1 = int(batch.off[a]), int(batch.off[b])
    q0, q1 = int(batch.aad_off[a]), int(batch.aad_off[b])
    return type(batch)(
        name=batch.name, encrypt=batch.encrypt, tag_length=batch.tag_length, keys=batch.keys,
        key_index=batch.key_index[a:b], nonces=batch.nonces[a:b],
        aad=batch.aad[q0:q1], aad_off=batch.aad_off[a:b + 1] - q0,
        src=texts_range(batch.src, o0, o1), off=batch.off[a:b + 1] - o0,
        dst=texts_range(batch.dst, o0, o1))


def texts_range(arr, lo: int, hi: int):
    """Bytes [lo, hi) of a batch's texts: a flat buffer's slice, or the rows [lo / w, hi / w)
    of texts held as rows of w bytes (a 2-D view whose rows lie at any pitch: a sealed
    message's chunks between their tags, formats/cobblestone.py; every message one row, so
    every cut falls between rows)."""
    if _ndim(arr) == 2:
        w = arr.shape[1]
        return arr[lo // w:hi // w]
    return arr[lo:hi]


def _lanes(backend, kernel_queues: int = 1) -> Lanes:
    """The backend's queues for batches as the pipeline's lanes: uploads, ``kernel_queues``
    kernel queues, downloads, made once (not before every batch's first upload).  Runs in
    several threads may share them: every dependency between a job's uploads, kernels and
    downloads is an event, so sharing only orders their work."""
    qs = backend.__dict__.setdefault("_batch_queues", [])
    while len(qs) < 2 + kernel_queues:
        qs.append(backend.queue())
    return Lanes(backend, qs[0], qs[2:2 + kernel_queues], qs[1])


def layout(driver, nbytes: int, count: int) -> tuple[int, int | None]:
    """(bytes of text per piece, per slice of a piece or None: whole pieces) for a batch of
    ``count`` messages, ``nbytes`` of text, on ``driver``: its ``piece_bytes`` (None:
    PIECE_BYTES) and ``slice_bytes``, or whole pieces of PIECE_BYTES where its messages average
    more than its ``slice_mean_max`` bytes (a serial AEAD: a launch lasts one message's time,
    so a piece's slices of long messages, one after the other on its kernel queue, would
    multiply it)."""
    mean_max = getattr(driver, "slice_mean_max", None)
    if mean_max is not None and nbytes > mean_max * max(count, 1):
        return PIECE_BYTES, None
    return getattr(driver, "piece_bytes", None) or PIECE_BYTES, getattr(driver, "slice_bytes", None)


def slice_align(driver) -> int:
    """Bytes: where ``driver`` cuts a long message into slices (its ``slice_align``; 0: between
    messages only)."""
    return int(getattr(driver, "slice_align", 0) or 0)


def overlaps(driver, nbytes: int, count: int = 2) -> bool:
    """Whether a batch of ``count`` messages, ``nbytes`` of text in host memory, goes through
    ``run`` (its transfers and kernels overlapped) rather than ONE job: at least two pieces, or
    two slices of one (one message: where the driver cuts messages into slices)."""
    if count < 2 and not slice_align(driver):
        return False
    piece_bytes, slice_bytes = layout(driver, nbytes, count)
    return nbytes >= 2 * (slice_bytes or piece_bytes)


@contextmanager
def page_locked(backend, batch, min_bytes: int = 0):
    """``with page_locked(backend, batch):`` keeps the batch's host text buffers (numpy arrays
    of at least ``min_bytes``) page-locked for the block (transfer.pinning: kept in the
    registration cache), so that the texts move by DMA from and to them; GPU arrays and
    backends that need no locking are left as they are."""
    with ExitStack() as stack:
        for arr in (batch.src, batch.dst):
            if isinstance(arr, np.ndarray) and arr.ndim == 2:   # (rows: their whole extent,
                arr = span(arr) if getattr(backend, "row_copies", False) else None  # for DMA)
            if isinstance(arr, np.ndarray) and arr.nbytes >= max(1, min_bytes):
                stack.enter_context(pinned(backend, arr))
        yield


def whole(driver, batch, *, received: np.ndarray | None = None, beside=None) -> np.ndarray:
    """``batch`` as ONE job of ``driver`` (``beside`` started first): the tags, or with
    ``received`` the mask of the messages that verified (see ``run``).  Host texts of
    PIN_MIN_BYTES or more are page-locked for it, as ``run``'s are (copies from pageable
    memory are a fraction of the bus's rate: docs/benchmarks.md 0l)."""
    start_beside(beside)
    with page_locked(driver.backend, batch, PIN_MIN_BYTES):
        tags = driver.run(batch)
    return tags if received is None else verify(batch, tags, received)


#: bytes a head start's device buffer holds past the first piece's texts (the most any AEAD's
#: job pads its texts with: GCM 32)
HEAD_PAD = 64


def head_start(backend, batch, nbytes: int, first: int, queue) -> Head | None:
    """The first ``first`` bytes (rounded down to the device's view alignment) of ``batch``'s
    host texts uploaded on ``queue`` into a new device buffer for a job of its first ``nbytes``
    (engines.device_aead.job.Head), before that job's host work and the pieces' own cutting: the
    copy engine starts sooner after the call, as the copy strawman's does (docs/benchmarks.md
    0n).  None for GPU-resident or non-contiguous texts."""
    src = batch.src
    if not (isinstance(src, np.ndarray) and src.flags.c_contiguous and src.dtype == np.uint8):
        return None
    al = backend.view_align
    done = min(nbytes, first) // al * al
    if done <= 0:
        return None
    buf = backend.alloc(nbytes + HEAD_PAD)
    upload_texts(backend, buf, src, 0, done, queue)
    return Head(buf, done)


def _ndim(a) -> int:
    """Dimensions of a batch's texts (a device buffer without them: 1)."""
    return int(getattr(a, "ndim", 1))


def pitch(rows: np.ndarray) -> int:
    """Bytes from one row of texts held as rows to the next (a lone row: its width)."""
    return int(rows.strides[0]) if rows.shape[0] > 1 else int(rows.shape[1])


def span(rows: np.ndarray) -> np.ndarray | None:
    """The flat bytes from the first byte of texts held as rows (a 2-D uint8 view, rows at any
    pitch) to the last byte of their last row, as a view of the memory they lie in (its
    registrations are that memory's); None where that memory is not one buffer."""
    h, w = rows.shape
    n = (h - 1) * pitch(rows) + w if h else 0
    try:
        whole = np.frombuffer(rows.base, dtype=np.uint8)
    except (TypeError, ValueError, BufferError):
        return None
    at = int(rows.ctypes.data) - int(whole.ctypes.data)
    return whole[at:at + n] if 0 <= at and at + n <= whole.nbytes else None


def row_copies(ranges, h: int, w: int, pitch: int) -> list[tuple]:
    """How rows [0, h) of ``w`` bytes at ``pitch`` move where no copy may cross the edges of
    ``ranges`` (byte ranges of their span covering it, rising: transfer.pinning.copy_ranges):
    ("rows", a, b), runs of whole rows inside one range, and ("part", k, x, y), bytes [x, y)
    of row k, a row cut by an edge."""
    out = []
    for x, y in ranges:
        a = min(h, -(-x // pitch))                  # the first row starting at or after x
        k = a - 1
        if k >= 0 and k * pitch < x < k * pitch + w:   # (the row before ends in this range)
            out.append(("part", k, x - k * pitch, min(w, y - k * pitch)))
        b = max(a, min(h, (y - w) // pitch + 1)) if y >= w else a   # rows ending by y
        if b > a:
            out.append(("rows", a, b))
        if b < h and x <= b * pitch < y:            # (a row starting here, ending past y)
            out.append(("part", b, 0, y - b * pitch))
    return out


class _Rows:
    """A batch whose texts lie as rows (formats/cobblestone.py: a sealed message's chunks
    between their tags; one message a row) in pieces: each piece's rows staged in contiguous
    texts its job reads or writes.  On a backend with ``row_copies`` (CUDA) the staging is
    device memory, the rows moving by DMA in one copy per run of rows (cut at the host
    memory's registrations, ``row_copies``), on the upload queue before the piece's job and on
    the download queue after its texts; elsewhere host memory, copied on this thread (before
    the job, after its finish)."""

    def __init__(self, backend, batch):
        self.b = backend
        self.into = _ndim(batch.src) == 2        # the input texts are rows (decryption)
        self.out = _ndim(batch.dst) == 2         # the output texts are rows (encryption)
        self.dev = bool(getattr(backend, "row_copies", False)) and all(
            span(a) is not None for a in (batch.src, batch.dst) if _ndim(a) == 2)

    def stage(self, sub, q_up):
        """``sub`` (a piece) with contiguous texts in place of its rows."""
        src, dst = sub.src, sub.dst
        if self.into:
            src = self._buffer(src)
            self._move(sub.src, src, q_up, True)
        if self.out:
            dst = self._buffer(dst)
        return type(sub)(name=sub.name, encrypt=sub.encrypt, tag_length=sub.tag_length,
                         keys=sub.keys, key_index=sub.key_index, nonces=sub.nonces, aad=sub.aad,
                         aad_off=sub.aad_off, src=src, off=sub.off, dst=dst)

    def down(self, staged, sub, q_down) -> None:
        """After the job's texts are on their way down (``enqueue(down=q_down)``): the rows'
        copies from device staging."""
        if self.out and self.dev:
            self._move(sub.dst, staged.dst, q_down, False)

    def done(self, staged, sub) -> None:
        """After the job's finish: the rows' copies from host staging."""
        if self.out and not self.dev:
            sub.dst[...] = staged.dst.reshape(sub.dst.shape)

    def _buffer(self, rows):
        n = rows.shape[0] * rows.shape[1]
        if self.dev:   # (HEAD_PAD more: the job may read its texts where they lie)
            return self.b.view(self.b.alloc(n + HEAD_PAD), 0, n)
        return np.empty(n, dtype=np.uint8)

    def _move(self, rows, flat, queue, up: bool) -> None:
        if not self.dev:
            if up:
                flat.reshape(rows.shape)[...] = rows
            return
        from .pinning import copy_ranges

        h, w = rows.shape
        whole = span(rows)
        b = self.b
        for kind, k, x, *y in row_copies(copy_ranges(b, whole, 0, whole.nbytes), h, w,
                                         pitch(rows)):
            if kind == "rows" and up:
                b.upload_rows(flat, rows[k:x], queue, offset=k * w)
            elif kind == "rows":
                b.download_rows(rows[k:x], flat, queue, offset=k * w)
            elif up:
                b.upload(flat, rows[k, x:y[0]], queue, offset=k * w + x, record=False)
            else:
                b.download(rows[k, x:y[0]], flat, queue, offset=k * w + x, record=False)


def run(backend, driver, batch, *, received: np.ndarray | None = None, beside=None,
        piece_bytes: int | None = None, depth: int | None = None) -> np.ndarray:
    """The tags of every message of ``batch`` (texts into ``batch.dst``), pieces overlapped on
    ``backend`` (see the module docstring) with at most ``2 * depth`` pieces in flight (None:
    the driver's ``piece_bytes`` or PIECE_BYTES, DEPTH).  ``driver``: the AEAD's driver on
    ``backend`` (engines.device_aead.driver.DeviceAEAD).

    With ``received`` (decryption: the (m, tag length) tags that came with the messages):
    each piece's tags are compared with them as soon as the piece is done, while later pieces
    are still on the bus (aeads.base.verify: constant time, a failed message's plaintext zeroed),
    and the result is the boolean mask of the messages that verified; only the last piece's
    comparison is left after the last download, not all of it.

    ``beside`` (the caller's host work: engines.base.Engine.seal) is started when the pieces in
    flight first fill up, just before this thread waits for the oldest (the device then has
    2 x depth pieces queued), or after the last piece is enqueued: not beside the first pieces'
    host work, which it would slow down."""
    rows = _Rows(backend, batch) if 2 in (_ndim(batch.src), _ndim(batch.dst)) else None
    own, slice_bytes = layout(driver, int(batch.off[-1]), batch.count)
    if rows is not None and rows.dev:
        # (whole pieces of a slice's size: the job reads and writes its staged texts where
        # they lie, with no copy between device buffers on the copy engines; the device's
        # first kernels wait for one such piece's rows)
        own, slice_bytes = slice_bytes or own, None
    piece_bytes, align = piece_bytes or own, slice_align(driver)
    depth = depth or max(2, DEPTH * PIECE_BYTES // piece_bytes)
    bounds = cuts(batch.off, piece_bytes, RAMP)
    n = len(bounds) - 1
    if (n <= 1 and not slice_bytes) or depth <= 1:
        return whole(driver, batch, received=received, beside=beside)
    lanes = _lanes(backend, max(1, int(getattr(driver, "kernel_queues", 1))))
    kind = _Pieces(driver, batch, bounds, rows, slice_bytes, align, lanes, received)
    with page_locked(backend, batch):
        # (an interrupt, a device error: every queue drained, then every piece in flight
        # wiped, before the caller's buffers are unlocked)
        fly(kind, lanes, n, window=2 * depth,
            full=lambda: start_beside(beside), ending=lambda _: start_beside(beside))
    return kind.out


class _Piece:
    """A piece in flight: its job, the piece, the piece as run (its rows staged), its
    messages [a, b)."""

    __slots__ = ("job", "sub", "ran", "a", "b")
    last = False   # (the batch's count ends it: transfer/flight.py's fly)

    def __init__(self, job, sub, ran, a: int, b: int):
        self.job, self.sub, self.ran, self.a, self.b = job, sub, ran, a, b


class _Pieces:
    """The AEAD batches' job kind of the one pipeline (transfer/flight.py): piece ``seq`` of
    a batch (messages ``bounds[seq]`` to ``bounds[seq + 1]``) as one Job of the driver: its
    rows staged, its metadata and texts up on the upload queue (``stage``; the first piece's
    first slice of texts before any host work: ``head_start``), its kernels on the kernel queue
    of its turn with each slice's texts down at once, its tags down after them (``launch``);
    retired: its tags into the result, or compared with the ones received."""

    def __init__(self, driver, batch, bounds, rows, slice_bytes, align, lanes, received):
        self.driver, self.batch, self.bounds, self.rows = driver, batch, bounds, rows
        self.slice_bytes, self.align, self.lanes = slice_bytes, align, lanes
        self.received = received
        self.head = None
        self.out = None           # the result, made once the first piece is enqueued

    def stage(self, k: int) -> _Piece:
        batch, rows, slice_bytes = self.batch, self.rows, self.slice_bytes
        if k == 0:
            end = int(batch.off[self.bounds[1]])
            self.head = None if rows else head_start(self.lanes.b, batch, end,
                                                     slice_bytes or end, self.lanes.up)
        a, b = self.bounds[k], self.bounds[k + 1]
        sub = piece(batch, a, b)
        ran = sub if rows is None else rows.stage(sub, self.lanes.up)
        job = self.driver.prepare(ran, self.lanes.up, slices=slice_cuts(sub.off, slice_bytes,
                                                                    self.align)
                                  if slice_bytes else None, head=self.head)
        self.head = None
        return _Piece(job, sub, ran, a, b)

    def launch(self, p: _Piece, k: int) -> None:
        down = self.lanes.down
        p.job.enqueue(self.lanes.kernel(k), down)   # (each slice's texts down at once)
        if self.rows is not None:
            self.rows.down(p.ran, p.sub, down)
        p.job.collect(down)
        if self.out is None:   # (after the first piece's work is on the device)
            batch = self.batch
            self.out = (np.zeros((batch.count, batch.tag_length), dtype=np.uint8)
                        if self.received is None else np.zeros(batch.count, dtype=bool))

    def retire(self, p: _Piece) -> None:
        tags = p.job.finish()
        if self.rows is not None:
            self.rows.done(p.ran, p.sub)
        self.out[p.a:p.b] = (tags if self.received is None
                             else verify(p.ran, tags, self.received[p.a:p.b]))

    def abort(self, p: _Piece) -> None:
        p.job.abort()
