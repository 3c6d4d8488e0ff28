"""``DeviceAEAD``: the kernels of one AEAD name on one device (built once; the device engine
caches it), how transfer/batches.py cuts a large batch for it, and the layouts it remembers.
"""

from __future__ import annotations

import threading

from ...aeads.base import AEAD, Batch
from ..._lazy import numpy_for
from .job import Job, aligned

np = numpy_for(__name__)

I64 = np.int64


#: kernel queues for a serial AEAD's pieces (DeviceAEAD): 4 is no slower than 1 or 2 host ->
#: host (docs/benchmarks.md 0i)
SERIAL_KERNEL_QUEUES = 4

#: an AEAD's pieces (DeviceAEAD): bytes of text per piece (the host work, once) and per slice
#: (one upload, launch set and download each: Job's slices).  Large pieces in slices come
#: closer to the copy strawman than whole pieces; smaller slices cost more host work per piece
#: than they save (docs/benchmarks.md 0j).  A serial AEAD's slices only where its messages
#: average at most SERIAL_SLICE_MEAN_MAX bytes (DeviceAEAD.slice_mean_max): its launch lasts
#: one message's time, under a slice's upload for short messages, but a piece's slices run one
#: after the other on its kernel queue, so slices of long messages multiply the run's time
#: (docs/benchmarks.md 0n)
SLICED_PIECE_BYTES = 128 << 20
SLICE_BYTES = 32 << 20
#: a serial AEAD's pieces go in slices only where its messages average at most this many bytes
#: (DeviceAEAD.slice_mean_max; why: SLICED_PIECE_BYTES above)
SERIAL_SLICE_MEAN_MAX = 32 << 10
#: message layouts a driver remembers (DeviceAEAD.shape): a large batch of equal messages has
#: one for its equal pieces and one for each of the smaller last pieces (transfer.batches.RAMP)
SHAPES_KEPT = 8
#: ... holding at most this many bytes of arrays in all (a GCM layout of a 128 MiB piece of 16
#: KiB messages: about 0.5 MiB; of 256-byte messages: about 25 MiB)
SHAPES_KEPT_BYTES = 32 << 20
#: message layouts whose layout-only metadata a driver keeps on its device for resident jobs
#: (DeviceAEAD.device_layout), and the most bytes of it: the first ones seen, never replaced
#: (jobs on any queue read them without the host waiting, so none may be freed under them);
#: a layout past these is uploaded with each job's metadata.  Layouts of at most
#: LAYOUT_MESSAGES messages only (resident jobs are one message)
LAYOUTS_KEPT = 16
LAYOUTS_KEPT_BYTES = 64 << 20
LAYOUT_MESSAGES = 4


class DeviceAEAD:
    """The kernels of one AEAD name on one device (built once; the engine caches it).

    ``__init__(backend, aead, name, **options)`` compiles; ``prepare(batch, queue=None)``
    returns a Job (its uploads enqueued on ``queue``);
    ``run(batch)`` = prepare + enqueue + finish: the output texts in ``batch.dst`` and the tags
    as a (m, tag_length) uint8 array.  Key schedules run on the host; key material on the device
    is zeroed before release.

    ``piece_bytes``, ``slice_bytes``, ``slice_mean_max``, ``slice_align`` and
    ``kernel_queues``: how transfer/batches.py cuts a large batch of host data for this driver
    (bytes of text per piece, None: its PIECE_BYTES; per slice of a piece, None: whole pieces;
    the mean message length above which pieces go whole, None: none; where a long message may
    be cut into slices; kernel queues the pieces take in turn; batches.layout).  Every AEAD gets
    large pieces in slices (SLICED_PIECE_BYTES, SLICE_BYTES): its host work once per large
    piece, its transfers and launches in small steps, the device's first download sooner and
    its last one shorter.  A serial AEAD (one work-item per message, not ``parallel_message``)
    takes slices only for short messages (SERIAL_SLICE_MEAN_MAX) and gets
    SERIAL_KERNEL_QUEUES: its launch lasts as long as one message, whatever the piece's size,
    on a few SMs, so the last (smaller) pieces' launches on one queue would run one after the
    other after the last upload; on several they overlap."""

    piece_bytes: int | None = None
    slice_bytes: int | None = None
    slice_mean_max: int | None = None
    kernel_queues: int = 1
    #: bytes: transfer/batches.py cuts a message longer than a slice into slices at multiples
    #: of this from its start (a multiple of its Job class's ``cut_align``; 0: between messages
    #: only, one long message moves whole)
    slice_align: int = 0

    def __init__(self, backend, aead: AEAD, name: str, **options):
        self.backend = backend
        self.aead = aead
        self.name = name
        self.options = options
        self.piece_bytes, self.slice_bytes = SLICED_PIECE_BYTES, SLICE_BYTES
        if not aead.parallel_message:
            self.slice_mean_max = SERIAL_SLICE_MEAN_MAX
            self.kernel_queues = SERIAL_KERNEL_QUEUES
        self._shapes: list = []   # (extra, off, aad_off, shape, bytes), the latest first
        self._shapes_lock = threading.Lock()
        self._small: dict = {}    # layout key -> shape, batches of few messages (shape)
        self._layouts: dict = {}  # layout key -> (name -> device view, the whole buffer)
        self._layout_bytes = 0

    def shape(self, batch: Batch, *extra, small: bool = False):
        """What the layout of ``batch``'s messages alone decides for this driver's jobs:
        ``derive_shape(off, aad_off, *extra)`` (a subclass's: lengths, prefix sums, coarse
        indexes, a tile choice), remembered for the last SHAPES_KEPT layouts and returned again
        for a batch with equal offsets and ``extra``: the equal pieces of a large batch of
        equal messages (transfer/batches.py) share one, and so do the calls of a program that
        seals chunks of one size.  An invalid layout raises and is not remembered.  The arrays
        of a shape are read-only: jobs share them; one with fields ``off`` and ``aad_off`` (the
        offsets, any integer type) is compared with them instead of copies.  With ``small``
        (a resident job's: one GPU-resident message a call) a batch of at most
        LAYOUT_MESSAGES messages, or of a regular layout, is found by its key (``layout_key``)
        first, with no array comparisons, among the last SHAPES_KEPT of them."""
        key = layout_key(batch, *extra) if small else None
        if key is not None:
            got = self._small.get(key)
            if got is not None:
                return got
        got = self._shape(batch, extra)
        if key is not None:
            with self._shapes_lock:
                if len(self._small) >= SHAPES_KEPT:
                    self._small.clear()
                self._small[key] = got
        return got

    def _shape(self, batch: Batch, extra: tuple):
        """``shape`` by comparing offsets with the layouts remembered (SHAPES_KEPT)."""
        off, aad_off = batch.off, batch.aad_off
        m, total, atotal = off.shape[0], off[-1], aad_off[-1]
        for ex, o, a, got, _ in self._shapes:   # (a snapshot: entries replaced, never changed)
            if (ex == extra and o.shape[0] == m and o[-1] == total and a[-1] == atotal
                    and np.array_equal(o, off) and np.array_equal(a, aad_off)):
                return got
        got = self.derive_shape(off, aad_off, *extra)
        _read_only(got)
        # (a shape that holds the offsets, as ``off`` and ``aad_off``, is its own key)
        own = getattr(got, "off", None) is not None and getattr(got, "aad_off", None) is not None
        size = _nbytes_of(got) + (0 if own else 16 * m)
        if size <= SHAPES_KEPT_BYTES:
            entry = ((extra, got.off, got.aad_off, got, size) if own else
                     (extra, np.array(off, dtype=I64), np.array(aad_off, dtype=I64), got, size))
            with self._shapes_lock:
                kept, held = [entry], size
                for e in self._shapes:
                    held += e[-1]
                    if len(kept) == SHAPES_KEPT or held > SHAPES_KEPT_BYTES:
                        break
                    kept.append(e)
                self._shapes = kept
        return got

    def device_layout(self, key, arrays: dict, pads: dict | None = None,
                      queue=None) -> dict | None:
        """name -> a device view of each of ``arrays`` (host arrays that the message layout
        ``key`` alone decides: the same for every job of it; ``pads[name]`` zeroed bytes
        longer), uploaded once per layout and kept while the driver lives: resident jobs read
        them here instead of uploading them each call (Job.stage's ``layout``).  None where
        ``key`` is None or the driver keeps LAYOUTS_KEPT layouts (LAYOUTS_KEPT_BYTES) already:
        the job uploads them with the rest.  The upload goes on ``queue`` (the job's: its new
        buffer may be memory that queue's earlier work still uses, CuPy's pool is
        stream-ordered) and is waited for, once, so that a job on any queue may read it."""
        if key is None:
            return None
        got = self._layouts.get(key)
        if got is not None:
            return got[0]
        pads = pads or {}
        b = self.backend
        with self._shapes_lock:
            got = self._layouts.get(key)
            if got is not None:
                return got[0]
            offs, pos = aligned({k: a.nbytes + pads.get(k, 0) for k, a in arrays.items()},
                                b.view_align)
            if len(self._layouts) >= LAYOUTS_KEPT or self._layout_bytes + pos > LAYOUTS_KEPT_BYTES:
                return None
            host = np.zeros(pos, dtype=np.uint8)
            for name, a in arrays.items():
                o, n = offs[name], a.nbytes
                if n:
                    host[o:o + n] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
            dev = b.alloc(pos)
            b.upload(dev, host, queue, record=False)
            b.finish(queue)
            views = {name: b.view(dev, offs[name], max(a.nbytes + pads.get(name, 0), 1))
                     for name, a in arrays.items()}
            self._layouts[key] = (views, dev)
            self._layout_bytes += pos
        return views

    def derive_shape(self, off: np.ndarray, aad_off: np.ndarray, *extra):
        """The layout-only part of a job's host work (``shape``), as a NamedTuple whose
        arrays the jobs only read; raise for a layout the AEAD refuses."""
        raise NotImplementedError

    def prepare(self, batch: Batch, queue=None, **slicing) -> Job:
        """A Job of ``batch`` with its uploads enqueued on ``queue``; ``slicing``: the Job's
        ``slices``, ``head`` or ``resident``."""
        raise NotImplementedError

    def run(self, batch: Batch) -> np.ndarray:
        job = self.prepare(batch)
        try:
            job.enqueue()
        except BaseException:
            job.abort()
            raise
        return job.finish()


def layout_key(batch: Batch, *extra):
    """The key of ``batch``'s message layout for DeviceAEAD.device_layout (its offsets and
    ``extra``); for a batch of more than LAYOUT_MESSAGES messages only where the layout is
    regular (``regular_key``), else None (not kept)."""
    if batch.count > LAYOUT_MESSAGES:
        return regular_key(batch, *extra)
    return (tuple(batch.off.tolist()), tuple(batch.aad_off.tolist())) + extra


def regular_key(batch: Batch, *extra):
    """The key of a regular layout -- messages of one length but the last, which may be shorter
    (possibly empty), from offset 0, no AAD: a sealed message's chunks (device_aead/rows.py) --
    as (count, length, total) and ``extra``, which decide every offset; None for any other."""
    off, m = batch.off, batch.count
    if m < 2 or batch.aad_off[-1] != 0 or np.asarray(batch.aad_off).any() or off[0] != 0:
        return None
    step, total = int(off[1]), int(off[-1])
    if step <= 0 or not 0 <= total - int(off[-2]) <= step:
        return None
    if not np.array_equal(off[:-1], np.arange(0, m * step, step, dtype=I64)):
        return None
    return ("regular", m, step, total) + extra


def _nbytes_of(x) -> int:
    """Bytes of every numpy array in ``x`` (an array, or tuples of them)."""
    if isinstance(x, np.ndarray):
        return int(x.nbytes)
    if isinstance(x, tuple):
        return sum(_nbytes_of(v) for v in x)
    return 0


def _read_only(x) -> None:
    """Mark every numpy array in ``x`` (an array, or tuples of them) read-only."""
    if isinstance(x, np.ndarray):
        x.flags.writeable = False
    elif isinstance(x, tuple):
        for v in x:
            _read_only(v)


def coarse_index(prefix: np.ndarray, shift: int) -> np.ndarray:
    """For kernels that find the message of item g among many (g in [prefix[i], prefix[i + 1])):
    the message holding every (1 << shift)-th item, uint32, (total >> shift) + 2 entries; item g
    then lies in messages index[g >> shift] .. index[(g >> shift) + 1], a short search instead
    of one over all messages (GCM's counter kernel, ChaCha20-Poly1305's kernels).  Entries past
    the last item name the last message."""
    m = prefix.shape[0] - 1
    n = (int(prefix[-1]) >> shift) + 2
    if m <= 0:
        return np.zeros(n, dtype=np.uint32)
    p = np.asarray(prefix, dtype=np.int64)
    step = 1 << shift
    # grid points j * step in [prefix[i], prefix[i + 1]) per message i: the latest message
    # starting at or before each point (an empty message never holds one); the last message
    # also takes the points past the end, so ONE repeat writes all n entries (a fill and a copy
    # of the whole index after it costs more than the repeat)
    first = (p + (step - 1)) >> shift
    counts = np.diff(first)
    counts[-1] += n - int(first[-1] - first[0])
    return np.repeat(np.arange(m, dtype=np.uint32), counts)
