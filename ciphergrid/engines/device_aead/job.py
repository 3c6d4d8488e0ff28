"""A batch of AEAD messages on one device: the ``Job`` that ``DeviceAEAD.prepare(batch, queue)``
returns (uploads, kernels in slices, downloads, the key wipe, the waits), the edges of its slices
(``Cut``) and the texts already on their way up before it (``Head``).

A job computes tags in both directions and never decides: ``aeads.base.verify`` compares them.
"""

from __future__ import annotations

from typing import NamedTuple

from ...errors import InvalidArgument
from ...transfer.flight import drain
from ..._lazy import numpy_for

np = numpy_for(__name__)

I64 = np.int64

#: slices whose texts go up before a piece's metadata (Job.upload): more (the copy engine busy
#: through a slow host's first metadata) are no faster within the spread (docs/benchmarks.md 0l)
FIRST_SLICES = 1


class Cut(NamedTuple):
    """An edge of a job's slice (Job's ``slices``): cut number ``index`` (0: the job's start),
    at byte ``rel`` of message ``msg``'s text (0: at its start; the job's end is message m,
    byte 0).  A slice from ``lo`` to ``hi`` holds the texts from one to the other and completes
    messages [lo.msg, hi.msg)."""

    index: int
    msg: int
    rel: int


class Head(NamedTuple):
    """A job's input texts already on their way up (transfer/batches.py starts the first
    piece's before its host work): ``buf``, a device buffer of the job's texts and at least the
    slack its class pads them with, bytes [0, ``done``) of them enqueued on the job's queue."""

    buf: object
    done: int


class Job:
    """A batch on a device: what ``DeviceAEAD.prepare(batch, queue)`` returns.

    Nothing of a job makes the host wait until ``finish``, so one thread can keep many jobs in
    flight on several queues (transfer/batches.py):

    * the constructor does the host work and enqueues every upload on ``queue`` (the job's
      queue; None: the backend's default): the batch's metadata as ONE upload from a host
      staging buffer (``stage``), the texts straight from the caller's memory;
    * ``enqueue(queue=None, down=None)`` launches the kernels (on another queue it first
      waits, on the device, for the uploads); it may be called many times (the benchmark times
      it).  With ``down`` (the download queue) each slice's output texts are enqueued there
      right after that slice's launches, not after the last slice's (on a slow host the first
      download would wait for all of a piece's launches);
    * ``collect(queue=None)`` enqueues the zeroing of the key material on the device (on the
      kernels' queue, after them) and the downloads (the texts into ``batch.dst`` unless
      ``enqueue`` did, the tags into host staging; on ``queue``, or the queue of the texts,
      after the kernels);
    * ``finish()`` (collecting first if needed) waits for them, releases everything and returns
      the tags, one row per message.

    **Resident jobs** (``resident=True``: one message of GPU-resident texts, ``queue`` the
    caller's stream, engines.device.DeviceEngine.aead_resident): the kernels read and write the
    caller's arrays where they lie (``upload``, ``output_texts``: a copy only where the backend
    cannot allow it), the metadata that the message layout alone decides comes from the
    driver's device copy of it (``stage``'s ``layout``, DeviceAEAD.device_layout: uploaded once
    per layout), the rest in one upload, and ``settle`` ends the job without the host waiting
    (encryption: the tag copied on the device into the caller's output; decryption waits for
    the computed tag).  Everything is enqueued on the one queue, in order: no events between
    queues.

    **Slices.**  ``slices`` (byte offsets in the job's texts [0, ..., total], rising) cut the
    job into byte ranges that move and run on their own: the texts go up as one copy per slice
    (the first before the metadata, the others after it), each slice's kernels wait (on the
    device) only for its own texts and the metadata, and each slice's output texts come down as
    soon as its kernels are done.  The host work stays once per job, but the device does not
    wait for a whole job's texts before its first kernels, nor for its last kernels before its
    first download (transfer/batches.py: large pieces, small transfers).  A cut lies on a
    message boundary, or, for a job class with ``cut_align``, inside a message at a multiple of
    ``cut_align`` bytes from its start: one long message then moves in slices too (the block
    range splitting a scheduler over several devices will use).  A job class whose kernels take
    ranges sets ``ranges``; others run as one slice.

    A subclass sets ``texts_out`` (the device buffer of the output texts) and ``tags_out`` (the
    tags, ``tag_width`` bytes per message), appends its key material to ``secret`` (device
    buffers; neither the texts nor the tags: those are downloaded after the wipe is enqueued)
    and implements ``launch(queue, lo, hi)``: the kernels for the texts between the cuts ``lo``
    and ``hi`` (``Cut``: the tags of messages [lo.msg, hi.msg), the ones the slice completes;
    with ``ranges`` False always the whole job), the job's per-batch kernels with the first
    slice's texts (``lo.index`` 0); with ``tags_apart`` the text and tag kernels of a range
    apart on request (``launch``'s ``texts`` / ``tags``)."""

    tag_width = 16
    #: the kernels take a range of the texts: launch(queue, lo, hi) for any slice
    ranges = False
    #: cuts may fall inside a message at multiples of this many bytes from its start (0: on
    #: message boundaries only)
    cut_align = 0
    #: the output texts need none of the tags' work (CTR, ChaCha20): with several slices cut
    #: between messages each slice launches its text kernels only and the tags' kernels run
    #: once over the whole job after the last (``_tags_apart``): fewer launches, each slice's
    #: texts down as soon as its own text kernels are done
    tags_apart = False
    #: the kernels write nothing past a message's end and read at most an upload's ``pad``
    #: bytes past the texts: GPU-resident texts are read and written where they are, where the
    #: backend allows (``Backend.in_place``; ``upload``, ``output_texts``)
    texts_in_place = False

    def __init__(self, backend, batch, queue=None, *, slices=None, head: Head | None = None,
                 resident: bool = False, after=None):
        """Enqueue the uploads (``setup``, a subclass's); on any failure the key material
        already on the device is wiped before the error propagates.  ``slices``: see the class
        docstring (None: one slice); ``head``: the input texts' first bytes already enqueued on
        ``queue`` (``upload`` takes its buffer and enqueues the rest); ``resident``: see the
        class docstring (one slice, no head); ``after``: events (of other queues) that write
        the input texts: the job's copy of them waits for these on the device, or, where its
        kernels read them in place, its first kernels do."""
        self.b = backend
        self.batch = batch
        self.m = batch.count
        self.queue = queue if queue is not None else backend.default_queue
        self._after = list(after) if after else None
        self.resident = bool(resident)
        if self.resident:
            slices, head = None, None
        self._head = head
        self.slices, self.cuts = self._cuts(slices)
        # events, several slices: slice j's inputs are on the device (its texts; the first
        # slice's: its texts and the metadata, which goes up after them)
        self._text_up: list = []
        self._later: list = []        # slice uploads not yet enqueued (see upload)
        self._done: list = []         # events: each slice's kernels are done (several)
        self.texts_out = None
        self.tags_out = None
        self.secret: list = []        # device buffers zeroed when the job ends
        self._hold: list = []         # host arrays the asynchronous copies still read or write
        self._secret_host: list = []  # host copies of key material: zeroed when the job ends
        self._up = None               # event: the uploads are done
        self._kq = None               # queue of the last launches
        self._down = None             # event: the downloads are done
        self._wiped = None            # event: the key material is zeroed (on another queue)
        self._tags_done = None        # event: the tags' kernels launched apart are done
        self._dq = None               # queue of the downloads
        self._target = None           # host array the output texts are downloaded into
        self._bounds = None           # the slices' byte offsets in it (_texts_down)
        self._texts_q = None          # queue the output texts went down on (enqueue's down)
        self._out_in_place = False    # texts_out is the batch's own device array (no download)
        self._tags_home = None        # (staged buffer, offset) of tags_out inside it (stage)
        self._tags = None
        self._out = None
        if self.m:
            try:
                self.setup()
                self._upload_later()
                if not self.resident:   # (a resident job's kernels run on its own queue)
                    self._up = backend.marker(self.queue)
            except BaseException:
                self.abort()
                raise

    def _cuts(self, slices) -> tuple[list, list]:
        """(the slices' byte offsets, their ``Cut``s) for ``slices`` (see the class docstring;
        None, or a class without ``ranges``: one slice)."""
        off = self.batch.off
        total = int(off[-1]) if self.m else 0
        if not (self.ranges and slices is not None and len(slices) > 2):
            return [0, total], [Cut(0, 0, 0), Cut(1, self.m, 0)]
        pos = [int(x) for x in slices]
        if pos[0] != 0 or pos[-1] != total or any(b < a for a, b in zip(pos, pos[1:])):
            raise InvalidArgument(f"slices must rise from 0 to {total}: {pos}")
        # an inner cut names the last message starting at or before it (the empty messages at a
        # boundary belong to the slice before): message i, byte r of it
        idx = np.searchsorted(np.asarray(off, dtype=I64), pos[1:-1], side="right") - 1
        cuts = [Cut(0, 0, 0)]
        for k, (p, i) in enumerate(zip(pos[1:-1], idx.tolist()), 1):
            r = p - int(off[i])
            if r and not (self.cut_align and r % self.cut_align == 0):
                raise InvalidArgument(f"a cut at byte {p} lies {r} bytes into message {i} "
                                      f"(this AEAD's jobs cut messages at multiples of "
                                      f"{self.cut_align} bytes)" if self.cut_align else
                                      f"a cut at byte {p} lies inside message {i} (this AEAD's "
                                      f"jobs cut at message boundaries)")
            cuts.append(Cut(k, i, r))
        cuts.append(Cut(len(pos) - 1, self.m, 0))
        return pos, cuts

    def setup(self) -> None:
        """The host work and the uploads of a batch of at least one message."""
        raise NotImplementedError

    # -- uploads --------------------------------------------------------------------------------
    def stage(self, arrays: dict, pads: dict | None = None, secret=(), layout=None,
              scratch: dict | None = None) -> dict:
        """Device buffers holding the host ``arrays`` (name -> array), all in ONE device buffer
        and ONE upload from a host staging buffer: views at aligned offsets, each ``pads[name]``
        zeroed bytes longer.  Names in ``secret``: key material (zeroed on the host once the job
        ends, and on the device by the caller listing the views in ``self.secret``).
        ``layout``: (driver, key, names): the arrays of those names are what the message
        layout alone decides (the same for every job of it; ``key``: driver.layout_key's); a
        resident job takes them from the driver's device copy (DeviceAEAD.device_layout)
        instead of uploading them.  ``scratch`` (name -> bytes): device scratch the kernels
        write (key powers, partial sums: key material), its views returned with the others
        (``scratch``), and ``self.secret`` set to what holds key material: the views of
        ``secret`` and the scratch -- a resident job's all in the staged buffer, after the
        uploaded bytes (one allocation, one zeroing)."""
        b, pads = self.b, pads or {}
        kept = {}
        if self.resident and layout is not None:
            drv, key, names = layout
            kept = drv.device_layout(key, {k: arrays[k] for k in names}, pads, self.queue) or {}
            arrays = {k: a for k, a in arrays.items() if k not in kept}
        # a resident job's metadata straight from ordinary memory where the backend's upload
        # returns with its own copy of it (no staging buffer to keep, the key words wiped at
        # once); every other job's from page-locked staging kept until the job ends
        direct = self.resident and getattr(b, "upload_copies_pageable", False)
        al = b.view_align
        offs, pos = aligned({k: a.nbytes + pads.get(k, 0) for k, a in arrays.items()}, al)
        host = np.empty(max(pos, 16), np.uint8)[:pos] if direct else b.host_staging(pos)
        inner = self.resident and scratch
        at, end = aligned(scratch if inner else {}, al, pos)
        dev = b.alloc(end)
        out = dict(kept)
        for name, a in arrays.items():
            o, n = offs[name], a.nbytes
            if n:
                host[o:o + n] = a.reshape(-1).view(np.uint8)
            pad = pads.get(name, 0)
            if pad:
                host[o + n:o + n + pad] = 0
            out[name] = b.view(dev, o, max(n + pad, 1))
        b.upload(dev, host, self.queue, record=False)
        if inner:
            out.update({name: b.view(dev, o, max(int(scratch[name]), 1)) for name, o in at.items()})
            self.secret = [dev]
            if "tags" in at:   # (settle takes a tag's bytes from the buffer itself)
                self._tags_home = (dev, at["tags"])
        elif scratch:
            whole, views = self.scratch(scratch)
            out.update(views)
            self.secret = [out[name] for name in secret] + [whole]
        if self._text_up:   # (the first slices' texts are up: with this, all they need)
            done = b.marker(self.queue)
            self._text_up = [done] * len(self._text_up)
            self._upload_later()
        if direct:
            if secret:
                host.fill(0)   # (the upload has its own copy)
            self._hold.append(dev)
            return out
        self._hold += [host, dev]
        if secret:
            self._secret_host.append(host)   # (the key words lie in it)
        return out

    def scratch(self, sizes: dict):
        """(the whole buffer, name -> view): device scratch of ``sizes`` (name -> bytes) in ONE
        allocation (one zeroing wipes all of it)."""
        b = self.b
        offs, pos = aligned(sizes, b.view_align)
        whole = b.alloc(pos)
        return whole, {name: b.view(whole, offs[name], max(int(n), 1)) for name, n in sizes.items()}

    def upload(self, arr: np.ndarray, pad: int = 0, zero_pad: bool = False,
               texts_in: bool = False):
        """A device buffer of ``arr``'s bytes (+ ``pad``), uploaded straight from ``arr`` (the
        texts: the caller's memory, page-locked for large batches; or a GPU array).
        ``texts_in``: ``arr`` is the batch's input texts (the layout of ``batch.off``): a copy
        per slice, each cut at the registrations' edges (``upload_texts``), into the job's ``head``
        buffer where it has one (its first bytes already on their way: the copies start after
        them)."""
        b = self.b
        if (texts_in and self.texts_in_place and not zero_pad and len(self.slices) <= 2
                and b.in_place(arr, pad)):
            self._hold.append(arr)   # (GPU-resident texts, read where they are)
            return arr
        if texts_in and self._after:   # (the texts are still being written elsewhere)
            b.after(self.queue, self._after)
            self._after = None
        n = _nbytes(arr)
        size = max(n + pad, 16)
        head, done = self._head if texts_in else None, 0
        if head is not None:
            self._head = None
            self._hold.append(head.buf)   # (its copies may be running: kept until the job ends)
            if _nbytes(head.buf) >= size and head.done <= arr.nbytes:
                buf, done = head.buf, head.done
        if not done:
            buf = b.alloc(size)
        if zero_pad and pad:   # (the slack, from the last aligned offset; the upload follows)
            o = n // b.view_align * b.view_align
            b.zero(b.view(buf, o, size - o), self.queue, wait=False)
        if texts_in and len(self.slices) > 2:
            bounds = list(self.slices)
            bounds[-1] = n
            self._later = [(buf, arr, max(lo, min(done, hi)), hi)
                           for lo, hi in zip(bounds[:-1], bounds[1:])]
            # the first slice now, the others after the metadata (stage): the first kernels
            # wait for one slice's texts and the metadata, not for every slice's texts (one
            # queue: the metadata on a queue of its own is slower, docs/benchmarks.md 0j)
            self._upload_later(FIRST_SLICES)
        elif texts_in:
            self._copy_up(buf, arr, done, n)
        elif n:
            b.upload(buf, arr, self.queue, record=False)
        self._hold.append(arr)
        return buf

    def output_texts(self, nbytes: int, pad: int = 0):
        """The device buffer the kernels write the output texts into (``nbytes``, ``pad`` more
        readable): the batch's own GPU array where ``texts_in_place`` and the backend allow it
        (apart from the input texts; nothing to download then), else a new buffer."""
        dst = self.batch.dst
        if (self.texts_in_place and len(self.slices) <= 2 and not isinstance(dst, np.ndarray)
                and self.b.in_place(dst, pad, apart=self.batch.src)):
            self._out_in_place = True
            return dst
        return self.b.alloc(nbytes + pad)

    def _upload_later(self, n: int | None = None) -> None:
        """Enqueue the first ``n`` (None: all) slice uploads not yet enqueued."""
        later = self._later
        take, self._later = (later, []) if n is None else (later[:n], later[n:])
        for buf, arr, lo, hi in take:
            self._copy_up(buf, arr, lo, hi)
            self._text_up.append(self.b.marker(self.queue))

    def _copy_up(self, buf, arr, lo: int, hi: int) -> None:
        upload_texts(self.b, buf, arr, lo, hi, self.queue)

    # -- kernels --------------------------------------------------------------------------------
    def launch(self, queue, lo: "Cut", hi: "Cut", texts: bool = True, tags: bool = True) -> None:
        """The kernels for the texts between the cuts ``lo`` and ``hi`` (see the class
        docstring); a class with ``tags_apart`` takes ``texts`` / ``tags``: only the output
        texts' kernels, or only the tags' (the authenticator over the range and the tags of the
        messages it completes)."""
        raise NotImplementedError

    def _tags_apart(self) -> bool:
        """Whether ``enqueue`` launches each slice's text kernels alone and the tags' kernels
        once over the whole job after them: a class with ``tags_apart``, several slices, every
        cut between messages (a cut inside one long message keeps each slice's share of its
        authenticator behind the slice, so that its tag does not wait for a whole message's
        GHASH or Poly1305 after the last slice)."""
        cuts = self.cuts
        return self.tags_apart and len(cuts) > 2 and not any(c.rel for c in cuts[1:-1])

    def enqueue(self, queue=None, down=None) -> None:
        if self.m == 0:
            return
        b, cuts = self.b, self.cuts
        q = queue if queue is not None else self.queue
        several = len(cuts) > 2
        if down is not None:
            if self._texts_q is not None:
                raise RuntimeError("this job's output texts are already on their way down")
            self._dq = down   # (before any download: abort drains it after a failure here)
        self._done = []
        if self._after:   # (texts read in place: the kernels wait for their writers)
            b.after(q, self._after)
            self._after = None
        apart = self._tags_apart()
        parts = {"tags": False} if apart else {}   # (a class without tags_apart takes none)
        for j in range(len(cuts) - 1):
            if q is not self.queue:
                b.after(q, [self._text_up[j] if several else self._up])
            self.launch(q, cuts[j], cuts[j + 1], **parts)
            if several:
                self._done.append(b.marker(q))
            if down is not None:
                self._texts_down(down, q, j)
        if apart:   # (the tags' download waits for these, not for the last slice's marker)
            self.launch(q, cuts[0], cuts[-1], texts=False)
            self._tags_done = b.marker(q)
        self._kq = q
        if down is not None:
            self._texts_q = down

    # -- downloads ------------------------------------------------------------------------------
    def _texts_down(self, q, kq, j: int) -> None:
        """Enqueue on ``q`` the download of slice ``j``'s output texts, after its kernels (on
        ``kq``; one slice: all of them)."""
        b = self.b
        if q is not kq:
            b.after(q, [self._done[j] if self._done else b.marker(kq)])
        if self._out_in_place:   # (the kernels wrote the batch's own array: nothing to copy)
            return
        if self._target is None:
            dst = self.batch.dst
            n = int(self.batch.off[-1])
            if isinstance(dst, np.ndarray) and not dst.flags.c_contiguous:
                self._target = self._out = np.empty(n, dtype=np.uint8)
            elif hasattr(dst, "reshape"):
                target = dst.reshape(-1)[:n]
                self._target = target.view(np.uint8) if isinstance(target, np.ndarray) else target
            else:   # (a device buffer of a backend without arrays: OpenCL's)
                self._target = span(dst, 0, n)
            self._bounds = list(self.slices) if self._done else [0, n]
        target, bounds = self._target, self._bounds
        for x, y in _pieces(b, target, bounds[j], bounds[j + 1]):
            b.download(span(target, x, y), self.texts_out, q, offset=x, record=False)

    def collect(self, queue=None) -> None:
        """Enqueue the downloads and the wipe of the key material (nothing waited for)."""
        if self._down is not None or self.m == 0:
            return
        b = self.b
        kq = self._kq if self._kq is not None else self.queue
        if self._texts_q is not None:   # (enqueue sent the texts down: the tags follow them)
            q = self._texts_q
        else:
            q = queue if queue is not None else kq
            # each slice's texts as soon as its kernels are done (one slice: all of them)
            for j in range(max(1, len(self._done))):
                self._texts_down(q, kq, j)
        # the key material is zeroed on the kernels' queue, right after the kernels (q waited for
        # them before): not on the download queue, where each piece's memsets queued behind its
        # texts and before the next piece's, taking the copy engine's time)
        for buf in self.secret:
            b.zero(buf, kq, wait=False)
        self._wiped = b.marker(kq) if q is not kq and self.secret else None
        self._dq = q
        self._tags = b.host_staging(self.m * self.tag_width)
        if self._tags_done is not None and q is not kq:
            b.after(q, [self._tags_done])
        b.download(self._tags, self.tags_out, q, record=False)
        self._down = b.marker(q)

    def finish(self) -> np.ndarray:
        t = self.batch.tag_length
        if self.m == 0:
            return np.zeros((0, t), dtype=np.uint8)
        try:
            self.collect()
            self.b.wait(self._down)
            if self._wiped is not None:
                self.b.wait(self._wiped)
            if self._out is not None:
                self.batch.dst[...] = self._out.reshape(self.batch.dst.shape)
            tags = self._tags.reshape(self.m, self.tag_width)[:, :t].copy()
        except BaseException:
            self.abort()
            raise
        self.release()
        return tags

    def settle(self, tag_to=None, tags_from=None):
        """A resident job's end, after ``enqueue`` (see the class docstring), all on its queue:
        the output texts copied into the batch's array where the kernels did not write them
        there, the key material zeroed, the job released.  Encryption (``tag_to``: a device
        buffer and a byte offset in it): the message's tag (its first tag_length bytes) copied
        there on the device, and nothing waited for where the backend's later allocations on
        this queue wait for this work (CUDA: CuPy's pool is stream-ordered, and every buffer of
        the job was taken on this queue), else the queue finished.  Decryption: the computed
        tags, (m, tag_length), downloaded and waited for, and with ``tags_from`` (a device
        buffer and the byte offset of the received tags in it, each message's tag_length bytes
        back to back) those tags in the same wait: returns (computed, received or None).
        ``tag_to`` may instead be a function, called with a device view of the computed tags
        (``tag_width`` bytes a message, back to back) and ``tag_width``: it enqueues their copies
        on the queue before the key material (the tags with it) is zeroed.  On any failure the
        job is aborted."""
        b, q, t = self.b, self.queue, self.batch.tag_length
        got = rec = None
        try:
            self._texts_down(q, q, 0)
            home = self._tags_home or (self.tags_out, 0)
            if callable(tag_to):
                tag_to(b.view(home[0], home[1], self.m * self.tag_width), self.tag_width)
            elif tag_to is not None:
                out, at = tag_to
                b.upload(out, b.view(home[0], home[1], t), q, offset=at, record=False)
            else:
                got = np.empty(self.m * self.tag_width, dtype=np.uint8)
                b.download(got, self.tags_out, q, record=False)
                if tags_from is not None:
                    rec = np.empty(self.m * t, dtype=np.uint8)
                    b.download(rec, tags_from[0], q, offset=tags_from[1], record=False)
            for buf in self.secret:
                b.zero(buf, q, wait=False)
            if got is not None or not getattr(b, "upload_copies_pageable", False):
                b.finish(q)
        except BaseException:
            self.abort()
            raise
        self.release()
        if got is None:
            return None
        return (got.reshape(self.m, self.tag_width)[:, :t].copy(),
                None if rec is None else rec.reshape(self.m, t))

    def abort(self) -> None:
        """After a failure: let every queue of the job drain (a kernel still queued could write
        key material after an earlier wipe; a download still reads the buffers released below),
        wipe the key material on the device (best effort), wait, release."""
        b = self.b
        drain(b, self.queue, self._kq, self._dq)
        for buf in self.secret:
            try:
                b.zero(buf, self.queue, wait=False)
            except Exception:
                pass
        drain(b, self.queue)
        self.release()

    def release(self) -> None:
        for h in self._secret_host:
            h.fill(0)
        self._secret_host = []
        self._hold = []
        self.secret = []
        self.texts_out = self.tags_out = None


def _pieces(backend, arr, lo: int, hi: int) -> list:
    """Bytes [lo, hi) of host texts ``arr`` as the copies that move them: cut where one copy
    must not cross, at the edges of the cached page-locked registrations of that memory
    (transfer/pinning.copy_ranges)."""
    from ...transfer import pinning

    return pinning.copy_ranges(backend, arr, lo, hi)


def upload_texts(backend, buf, arr, lo: int, hi: int, queue) -> None:
    """Enqueue on ``queue`` the upload of bytes [lo, hi) of host texts ``arr`` into device
    buffer ``buf`` at the same offsets, in the copies ``_pieces`` cuts."""
    for x, y in _pieces(backend, arr, lo, hi):
        backend.upload(buf, span(arr, x, y), queue, offset=x, record=False)


def aligned(sizes: dict, align: int, start: int = 0) -> tuple[dict, int]:
    """(name -> byte offset, the end): ``sizes`` (name -> bytes) laid out back to back from
    byte ``start``, each at a multiple of ``align`` and taking at least one."""
    offs, pos = {}, start
    for name, n in sizes.items():
        offs[name] = pos
        pos += -(-max(int(n), 1) // align) * align
    return offs, pos


def span(a, x: int, y: int):
    """Bytes [x, y) of texts ``a``: a view, or ``a`` itself where that is all of it or, for an
    OpenCL buffer, nothing of it (a sub-buffer has no sub-buffers, nor an empty size)."""
    if x == 0 and (y == _nbytes(a) or (y == 0 and device_buffer(a))):
        return a
    return a[x:y]


def _nbytes(buf) -> int:
    """Bytes of a device buffer (a CuPy array's ``nbytes``, an OpenCL buffer's ``size``)."""
    n = getattr(buf, "nbytes", None)
    return int(n if n is not None else buf.size)


def texts(a, dtype=np.uint8):
    """A batch's texts (or any of its arrays) C-contiguous as ``dtype``: host data as a numpy
    array; GPU-resident texts (a CUDA batch's ``src``/``dst`` may be CuPy arrays, contiguous
    uint8 by construction; a resident job's on OpenCL, buffers) as they are, for the backend's
    device-to-device copies or to be read where they lie."""
    if isinstance(a, np.ndarray) or not (hasattr(a, "__cuda_array_interface__")
                                         or device_buffer(a)):
        return np.ascontiguousarray(a, dtype=dtype)
    return a


def device_buffer(a) -> bool:
    """Whether ``a`` is an OpenCL buffer (a resident job's texts on an OpenCL device)."""
    return type(a).__module__.startswith("pyopencl") and hasattr(a, "get_sub_region")


def flat(a):
    """Texts as a flat view: numpy and CuPy arrays reshaped, a device buffer as it is."""
    return a.reshape(-1) if hasattr(a, "reshape") else a
