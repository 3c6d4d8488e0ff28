"""A batch's plan: what the pieces of one batch share, worked out once.

transfer/batches.py runs a large batch in pieces of consecutive messages.  Without a plan each
piece is a batch of its own, and its job repeats the host's array work (lengths, prefix sums,
coarse indices, the staging of every array) and the per-key kernels: ~0.5-1 ms of host time per
piece on an H100 host, which bounds how small the pieces can be (docs/benchmarks.md 0i).
``DeviceAEAD.plan(batch, bounds)`` returns a :class:`Plan`; ``plan.prepare(piece, a, b, queue)``
returns the job of messages [a, b).  The base class shares nothing (each piece prepared as a
batch of its own); an AEAD whose pieces share work overrides it (GCM, ChaCha20-Poly1305), with
:class:`PieceMeta`: the whole batch's per-message arrays uploaded ONCE, and per piece ONE launch
of kernels/pieces.cl writing that piece's arrays (offsets rebased, rows, coarse indices) on the
device, so that its kernels run unchanged on them as on a batch of its own.

A piece is a range of messages, the way a scheduler over several devices will split a job.
"""

from __future__ import annotations

from .._lazy import numpy_for

np = numpy_for(__name__)

#: kinds of kernels/pieces.cl operations
PREFIX, ABS, ROWS, HINT = 0, 1, 2, 3


class Plan:
    """The pieces of ``batch`` (cut at ``bounds``: message indices, transfer/batches.cuts) on
    ``driver``.  This base shares nothing: each piece is prepared as a batch of its own."""

    def __init__(self, driver, batch, bounds):
        self.driver = driver
        self.batch = batch
        self.bounds = list(bounds)

    def prepare(self, piece, a: int, b: int, queue=None):
        """The job of messages [a, b) (``piece``: them as a batch, transfer/batches.piece)."""
        return self.driver.prepare(piece, queue)

    def release(self) -> None:
        """Wipe and free what the pieces shared (after every piece's job ended)."""


def program(backend):
    """kernels/pieces.cl, built once per backend."""
    from ..backends.base import program_source

    key = ("aead", "pieces")
    return backend.cached_program(key) or backend.build(program_source(None, "pieces.cl"),
                                                        key=key)


class PieceMeta:
    """A batch's per-message arrays on the device, and each piece's own.

    ``ops``: (name, kind, source, parameter) -- the piece's array ``name`` made by
    kernels/pieces.cl from the whole batch's array ``source`` (a key of ``arrays``): PREFIX (an
    (m + 1) prefix array rebased to the piece), ABS (the same, not rebased: offsets into an
    array the pieces share whole), ROWS (``parameter`` bytes per message) or HINT (the coarse
    index, aeads.base.coarse_index, of the rebased prefix array ``source`` with shift
    ``parameter``).  ``arrays`` are staged with the ops table in ONE upload on ``queue``
    (aeads.base.stage; ``owner``: its ``_hold`` and ``_secret_host`` lists keep them; ``secret``:
    names of key material); ``shared`` names arrays every piece uses whole (the AAD, key tables).
    The piece buffers' layout is fixed for the batch from ``bounds`` (the largest piece fits);
    ``pads``: bytes past an array, staged or a piece's (the kernels' whole-word loads)."""

    def __init__(self, backend, queue, owner, arrays: dict, ops: list, bounds, *, pads=None,
                 secret=(), shared=()):
        from .base import stage, staging_layout

        b = backend
        self.b = b
        self.prg = program(b)
        self.ops = ops
        self.pieces = set(zip(bounds[:-1], bounds[1:]))   # (the layout fits these alone)
        bounds = np.asarray(bounds, dtype=np.int64)
        self.count = int(bounds[-1])
        nmax = int(np.max(np.diff(bounds))) if bounds.shape[0] > 1 else 0
        al = b.view_align
        pads = pads or {}
        layout, pos = {}, 0
        for name, kind, src, par in ops:
            if kind in (PREFIX, ABS):
                n = (nmax + 1) * 8
            elif kind == ROWS:
                n = nmax * int(par)
            else:
                p = np.asarray(arrays[src], dtype=np.int64)
                units = int(np.max(p[bounds[1:]] - p[bounds[:-1]])) if nmax else 0
                n = ((units >> int(par)) + 2) * 4
            n = max(n + pads.get(name, 0), 1)
            layout[name] = (pos, n)
            pos += -(-n // al) * al
        self.layout, self.piece_bytes = layout, pos
        # the ops table, and the HINT ops alone (a piece that is the whole batch uses the whole
        # arrays and needs only its coarse indices), after the arrays: their offsets as staged
        offs, _ = staging_layout(arrays, pads, al)
        rows = [[kind, offs[src], layout[name][0], int(par)] for name, kind, src, par in ops]
        table = np.array(rows, dtype=np.uint64).reshape(-1, 4)
        hints = np.array([r for r in rows if r[0] == HINT], dtype=np.uint64).reshape(-1, 4)
        self.nops, self.nhints = int(table.shape[0]), int(hints.shape[0])
        dev, self.buffer = stage(b, queue, {**arrays, "_ops": table, "_hint_ops": hints}, pads,
                                 secret, owner._hold, owner._secret_host)
        self.whole = dev
        self.table, self.hint_table = dev["_ops"], dev["_hint_ops"]
        self.shared = {k: dev[k] for k in shared}

    def piece(self, a: int, b: int):
        """(buffer, name -> view): a buffer for the arrays of messages [a, b) (``fill`` writes
        them; the caller releases it) and views of it, with the shared arrays.  For the whole
        batch: the whole arrays, and the buffer for the coarse indices alone."""
        if (a, b) not in self.pieces:
            raise ValueError(f"messages [{a}, {b}) are not a piece of this plan")
        bk = self.b
        buf = bk.alloc(self.piece_bytes)
        views = {name: bk.view(buf, o, n) for name, (o, n) in self.layout.items()}
        if a == 0 and b == self.count:
            for name, kind, src, _ in self.ops:
                if kind != HINT:
                    views[name] = self.whole[src]
        views.update(self.shared)
        return buf, views

    def fill(self, buf, a: int, b: int, queue) -> None:
        """Enqueue on ``queue`` (the piece's kernels', before them) the launch writing the arrays
        of messages [a, b) into ``buf``; the whole batch's upload must be ordered before it."""
        whole = a == 0 and b == self.count
        table, n = (self.hint_table, self.nhints) if whole else (self.table, self.nops)
        if n == 0:
            return
        items = max(1, min(b - a + 1, self.b.resident_items(self.prg, "cg_piece_meta")))
        self.b.launch(self.prg, "cg_piece_meta", items,
                      [self.buffer, table, np.uint32(n), buf, np.uint64(a), np.uint64(b - a)],
                      queue, record=False)


class Holder:
    """What a plan keeps on the device and the host for its pieces (as a Job keeps its own):
    ``_hold`` (buffers kept), ``_secret_host`` (host staging holding key material, zeroed at the
    end), ``secret`` (device buffers of key material, zeroed at the end)."""

    def __init__(self, backend):
        self.b = backend
        self._hold: list = []
        self._secret_host: list = []
        self.secret: list = []

    def wipe(self, queue=None, *, device: bool = True) -> None:
        """Zero the key material (``device``: also on the device, on ``queue``, waited for; a
        job that adopted the buffers zeroes them itself) and let everything go."""
        b = self.b
        try:
            if device:
                for buf in self.secret:
                    b.zero(buf, queue, wait=False)
                if self.secret:
                    b.finish(queue)
        finally:
            for h in self._secret_host:
                h.fill(0)
            self._secret_host, self._hold, self.secret = [], [], []
