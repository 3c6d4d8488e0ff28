"""The uniform AEAD interface: an AEAD is a declaration (``AEAD``), a device driver
(``DeviceAEAD``: kernels and their launches over a ``Batch``) and a vector file.

Everything is a batch.  One message is a batch of one; a million database cells are a batch of a
million; the public API, the CLI, the engines and the benchmark all hand the driver a ``Batch``:

* the texts of every message, concatenated in ``src`` (message i is ``src[off[i]:off[i+1]]``:
  plaintext when encrypting, ciphertext *without its tag* when decrypting); ``dst`` has the same
  size and layout and receives the output texts;
* a key per message as an index into a table of distinct keys (``keys[key_index[i]]``), so one
  key for all (the common case) is expanded once;
* a nonce per message (``nonces``, one row each, one length per batch), the AAD per message
  (``aad[aad_off[i]:aad_off[i+1]]``) and one tag length for the batch.

The driver returns the tags it computed, one row per message, in both directions; the shared layer
(``seal``/``open_``) writes them after the ciphertext, or compares them in constant time with the
received ones and zeroes the plaintext of every message that fails.  A driver never decides
whether a tag verifies, so no engine can release unverified plaintext by mistake.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import InvalidArgument, InvalidKeySize
from .._lazy import numpy_for

np = numpy_for(__name__)

I64 = np.int64


@dataclass
class Batch:
    """Messages of one AEAD name, one direction (see the module docstring)."""

    name: str                    # the cipher name, e.g. "aes-128-gcm"
    encrypt: bool
    tag_length: int              # bytes of each tag
    keys: np.ndarray             # (k, key_len) uint8: the distinct keys
    key_index: np.ndarray        # (m,) int32: message i uses keys[key_index[i]]
    nonces: np.ndarray           # (m, nonce_len) uint8
    aad: np.ndarray              # uint8: every message's AAD, concatenated
    aad_off: np.ndarray          # (m + 1,) int64
    src: np.ndarray              # uint8: every message's text, concatenated
    off: np.ndarray              # (m + 1,) int64: message i is src[off[i]:off[i + 1]]
    dst: np.ndarray              # uint8, src's size and layout (may be src itself: in place)

    @property
    def count(self) -> int:
        return int(self.key_index.shape[0])

    def lengths(self) -> np.ndarray:
        return np.diff(self.off)

    def aad_lengths(self) -> np.ndarray:
        return np.diff(self.aad_off)

    def message(self, i: int):
        """(key, nonce, aad, text) of message i as bytes (tests and host references)."""
        return (self.keys[self.key_index[i]].tobytes(), self.nonces[i].tobytes(),
                self.aad[self.aad_off[i]:self.aad_off[i + 1]].tobytes(),
                self.src[self.off[i]:self.off[i + 1]].tobytes())

    def wipe(self) -> None:
        """Zero the key table (the shared layer calls it when the batch is done)."""
        self.keys.fill(0)

    def part(self, a: int, b: int, dst=None) -> "Batch":
        """Messages [a, b) as a batch of their own: views of this one's arrays (the key table
        shared), offsets from 0; its output texts into ``dst`` (default: this batch's, in place
        where they lie)."""
        o0, o1 = int(self.off[a]), int(self.off[b])
        p0, p1 = int(self.aad_off[a]), int(self.aad_off[b])
        return Batch(self.name, self.encrypt, self.tag_length, self.keys, self.key_index[a:b],
                     self.nonces[a:b], self.aad[p0:p1], self.aad_off[a:b + 1] - p0,
                     self.src[o0:o1], self.off[a:b + 1] - o0,
                     self.dst[o0:o1] if dst is None else dst)


def make_batch(name: str, encrypt: bool, tag_length: int, keys, nonces, aads, texts,
               dst: np.ndarray | None = None) -> Batch:
    """A Batch from lists (tests, small batches): ``keys`` one bytes per message (equal keys are
    stored once), ``nonces``/``aads``/``texts`` one bytes-like each."""
    m = len(texts)
    table: dict[bytes, int] = {}
    index = np.empty(m, dtype=np.int32)
    for i, k in enumerate(keys):
        index[i] = table.setdefault(bytes(k), len(table))
    klen = len(next(iter(table))) if table else 0
    key_arr = np.frombuffer(b"".join(table), dtype=np.uint8).reshape(len(table), klen).copy()
    nlen = len(nonces[0]) if m else 0
    if any(len(n) != nlen for n in nonces):
        raise InvalidArgument("every nonce of a batch has the same length")
    non = np.frombuffer(b"".join(bytes(n) for n in nonces), dtype=np.uint8).reshape(m, nlen).copy()
    aad_off = np.zeros(m + 1, dtype=I64)
    aad_off[1:] = np.cumsum([len(a) for a in aads])
    off = np.zeros(m + 1, dtype=I64)
    off[1:] = np.cumsum([len(t) for t in texts])
    aad = np.frombuffer(b"".join(bytes(a) for a in aads), dtype=np.uint8).copy()
    src = np.frombuffer(b"".join(bytes(t) for t in texts), dtype=np.uint8).copy()
    if dst is None:
        dst = np.empty_like(src)
    return Batch(name, bool(encrypt), int(tag_length), key_arr, index, non, aad, aad_off, src,
                 off, dst)


@dataclass(frozen=True)
class Kernel:
    """One device implementation of an AEAD: the driver class and what it promises."""

    driver: type                  # a DeviceAEAD subclass
    constant_time: bool = False   # no table indexed by secret data, no secret-dependent branch
    options: dict = field(default_factory=dict)   # passed to the driver (variants of one driver)


class AEAD:
    """Base class of the AEAD declarations: one module of ``ciphergrid/aeads/`` each, defining
    ``CIPHER = TheSubclass()`` (as the block ciphers' modules of ``algorithms/`` do)."""

    #: family name ("aes-gcm", "chacha20-poly1305", "ascon-aead128", "aegis-128l")
    family: str = ""
    #: cipher name -> key length in bytes ({"aes-128-gcm": 16, ...})
    names: dict = {}
    #: accepted nonce lengths in bytes (a tuple, or a range: GCM takes any length >= 1)
    nonce_lengths = (12,)
    #: the nonce length the CLI and the docs recommend
    default_nonce_length: int = 12
    #: accepted tag lengths in bytes, and the default
    tag_lengths = (16,)
    default_tag_length: int = 16
    #: the longest plaintext of one message, in bytes (GCM: 2^36 - 32; ChaCha20: 2^38 - 64)
    max_message: int = 1 << 62
    #: the longest AAD of one message, in bytes
    max_aad: int = 1 << 61
    #: whether one message runs in parallel on a device (GCM, ChaCha20-Poly1305) or serially on
    #: one work-item (Ascon, AEGIS: their speed comes from batches)
    parallel_message: bool = True
    #: with device "auto", ONE message of host data this long or longer goes to a GPU rather than
    #: to OpenSSL (where OpenSSL has the AEAD: route._gpu_takes_host_aead)
    gpu_one_message_min: int = 1 << 20
    #: device implementations by name; "fast" is the default
    implementations: dict = {}
    #: cipher name -> OpenSSL / pyca class name, when OpenSSL has it (the openssl engine)
    openssl: dict = {}

    def openssl_takes(self, name: str, nonce_len: int, tag_length: int) -> bool:
        """Whether the OpenSSL engine runs ``name`` with these sizes (pyca's AES-GCM takes
        nonces of 8 to 128 bytes only, for example)."""
        return name in self.openssl

    def key_length(self, name: str) -> int:
        return self.names[name]

    def check(self, name: str, key_len: int, nonce_len: int, tag_length: int) -> None:
        """Raise the ciphergrid error for a key, nonce or tag length ``name`` does not take."""
        from ..errors import InvalidIVSize

        if key_len != self.names[name]:
            raise InvalidKeySize(f"{name} takes a {self.names[name]}-byte "
                                 f"({8 * self.names[name]}-bit) key, got {key_len} bytes")
        if nonce_len not in self.nonce_lengths:
            raise InvalidIVSize(f"{name} takes a nonce of {_lengths(self.nonce_lengths)} bytes, "
                                f"got {nonce_len}")
        if tag_length not in self.tag_lengths:
            raise InvalidArgument(f"{name} takes a tag of {_lengths(self.tag_lengths)} bytes, "
                                  f"got {tag_length}")

    def implementation(self, impl: str | None) -> Kernel:
        impl = impl or "fast"
        try:
            return self.implementations[impl]
        except KeyError:
            raise InvalidArgument(f"{self.family} has no implementation {impl!r} "
                                  f"(it has {', '.join(sorted(self.implementations))})") from None

    def constant_time_implementation(self) -> str:
        for n, k in self.implementations.items():
            if k.constant_time:
                return n
        raise InvalidArgument(f"{self.family} has no constant-time kernel")

    def driver(self, backend, name: str, impl: str | None = None) -> "DeviceAEAD":
        k = self.implementation(impl)
        return k.driver(backend, self, name, **k.options)


def _lengths(lens) -> str:
    lens = list(lens) if not isinstance(lens, range) else lens
    if isinstance(lens, range):
        return f"{lens.start} to {lens.stop - 1}"
    return " or ".join(str(n) for n in lens)


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
      right after that slice's launches, not after the last slice's (on a slow host the
      launches of a piece took 0.5 ms, and the first download waited for them);
    * ``collect(queue=None)`` enqueues the zeroing of the key material on the device (on the
      kernels' queue, after them) and the downloads (the texts into ``batch.dst`` unless
      ``enqueue`` did, the tags into host staging; on ``queue``, or the queue of the texts,
      after the kernels);
    * ``finish()`` (collecting first if needed) waits for them, releases everything and returns
      the tags, one row per message.

    **Slices.**  ``slices`` (byte offsets in the job's texts [0, ..., total], rising) cut the
    job into byte ranges that move and run on their own: the texts go up as one copy per slice
    (the first before the metadata, the others after it), each slice's kernels wait (on the
    device) only for its own texts and the metadata, and each slice's output texts come down as
    soon as its kernels are done.  The host work stays once per job, but the device no longer
    waits for a whole job's texts before its first kernels, nor for its last kernels before its
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

    def __init__(self, backend, batch, queue=None, *, slices=None, head: Head | None = None):
        """Enqueue the uploads (``setup``, a subclass's); on any failure the key material
        already on the device is wiped before the error propagates.  ``slices``: see the class
        docstring (None: one slice); ``head``: the input texts' first bytes already enqueued on
        ``queue`` (``upload`` takes its buffer and enqueues the rest)."""
        self.b = backend
        self.batch = batch
        self.m = batch.count
        self.queue = queue if queue is not None else backend.default_queue
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
        self._tags = None
        self._out = None
        if self.m:
            try:
                self.setup()
                self._upload_later()
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
    def stage(self, arrays: dict, pads: dict | None = None, secret=()) -> dict:
        """Device buffers holding the host ``arrays`` (name -> array), all in ONE device buffer
        and ONE upload from a host staging buffer: views at aligned offsets, each ``pads[name]``
        zeroed bytes longer.  Names in ``secret``: key material (zeroed on the host once the job
        ends, and on the device by the caller listing the views in ``self.secret``)."""
        b, pads = self.b, pads or {}
        al = b.view_align
        offs, pos = {}, 0
        for name, a in arrays.items():
            offs[name] = pos
            pos += -(-(a.nbytes + pads.get(name, 0)) // al) * al or al
        host = b.host_staging(pos)
        dev = b.alloc(pos)
        out = {}
        for name, a in arrays.items():
            o, n = offs[name], a.nbytes
            if n:
                host[o:o + n] = a.reshape(-1).view(np.uint8)
            pad = pads.get(name, 0)
            if pad:
                host[o + n:o + n + pad] = 0
            out[name] = b.view(dev, o, max(n + pad, 1))
        b.upload(dev, host, self.queue, record=False)
        if self._text_up:   # (the first slices' texts went up before: now they have everything)
            done = b.marker(self.queue)
            self._text_up = [done] * len(self._text_up)
            self._upload_later()
        self._hold += [host, dev]
        if secret:
            self._secret_host.append(host)   # (the key words lie in it)
        return out

    def scratch(self, sizes: dict):
        """(the whole buffer, name -> view): device scratch of ``sizes`` (name -> bytes) in ONE
        allocation (one zeroing wipes all of it)."""
        b = self.b
        al = b.view_align
        offs, pos = {}, 0
        for name, n in sizes.items():
            offs[name] = pos
            pos += -(-max(int(n), 1) // al) * al
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
        size = max(arr.nbytes + pad, 16)
        head, done = self._head if texts_in else None, 0
        if head is not None:
            self._head = None
            self._hold.append(head.buf)   # (its copies may be running: kept until the job ends)
            if _nbytes(head.buf) >= size and head.done <= arr.nbytes:
                buf, done = head.buf, head.done
        if not done:
            buf = b.alloc(size)
        if zero_pad and pad:   # (the slack, from the last aligned offset; the upload follows)
            o = arr.nbytes // b.view_align * b.view_align
            b.zero(b.view(buf, o, size - o), self.queue, wait=False)
        if texts_in and len(self.slices) > 2:
            bounds = list(self.slices)
            bounds[-1] = arr.nbytes
            self._later = [(buf, arr, max(lo, min(done, hi)), hi)
                           for lo, hi in zip(bounds[:-1], bounds[1:])]
            # the first slice now, the others after the metadata (stage): the first kernels
            # wait for one slice's texts and the metadata, not for every slice's texts (the
            # metadata on a queue of its own instead ran 0.71 of the copy strawman against
            # 0.93 on one queue: H100, docs/benchmarks.md 0j)
            self._upload_later(FIRST_SLICES)
        elif texts_in:
            self._copy_up(buf, arr, done, arr.nbytes)
        elif arr.nbytes:
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
        if self._target is None:
            dst = self.batch.dst
            n = int(self.batch.off[-1])
            if isinstance(dst, np.ndarray) and not dst.flags.c_contiguous:
                self._target = self._out = np.empty(n, dtype=np.uint8)
            else:
                target = dst.reshape(-1)[:n]
                self._target = target.view(np.uint8) if isinstance(target, np.ndarray) else target
            self._bounds = list(self.slices) if self._done else [0, n]
        target, bounds = self._target, self._bounds
        if q is not kq:
            b.after(q, [self._done[j] if self._done else b.marker(kq)])
        if self._out_in_place:   # (the kernels wrote the batch's own array: nothing to copy)
            return
        for x, y in _pieces(b, target, bounds[j], bounds[j + 1]):
            b.download(target[x:y], self.texts_out, q, offset=x, record=False)

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
        # texts and before the next piece's (~0.08 ms per piece of an H200's D2H time)
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

    def abort(self) -> None:
        """After a failure: let every queue of the job drain (a kernel still queued could write
        key material after an earlier wipe; a download still reads the buffers released below),
        wipe the key material on the device (best effort), wait, release."""
        b = self.b
        queues = [q for q in (self.queue, self._kq, self._dq) if q is not None]
        for q in queues:
            try:
                b.finish(q)
            except Exception:
                pass
        for buf in self.secret:
            try:
                b.zero(buf, self.queue, wait=False)
            except Exception:
                pass
        try:
            b.finish(self.queue)
        except Exception:
            pass
        self.release()

    def release(self) -> None:
        for h in self._secret_host:
            h.fill(0)
        self._secret_host = []
        self._hold = []
        self.secret = []
        self.texts_out = self.tags_out = None


#: kernel queues for a serial AEAD's pieces (DeviceAEAD): 1, 2 and 4 alternated on two H100s,
#: AEGIS-128L and Ascon-AEAD128 host -> host, paired with the copy strawman (docs/benchmarks.md
#: 0i): 4 against 1 +0.02, 0.00, +0.02 and -0.003 (within the spread)
SERIAL_KERNEL_QUEUES = 4

#: an AEAD's pieces (DeviceAEAD): bytes of text per piece (the host work, once) and per slice
#: (one upload, launch set and download each: Job's slices).  AES-128-GCM and
#: ChaCha20-Poly1305, 1 GiB of 16 KiB messages, paired with the copy strawman on one H100
#: (docs/benchmarks.md 0j): pieces of 64 MiB whole 0.935 / 0.906 (encryption), of 128 MiB in
#: 32 MiB slices 0.986 / 0.972; smaller slices cost more host work per piece than they save.
#: A serial AEAD's slices only where its messages average at most SERIAL_SLICE_MEAN_MAX bytes
#: (DeviceAEAD.slice_mean_max): its launch lasts one message's time (~0.5 ms for 16 KiB of
#: AEGIS-128L), under a slice's upload (~0.7 ms) for short messages, but a piece's slices run
#: one after the other on its kernel queue, so slices of long messages multiplied the run's
#: time (64 x 16 MiB of Ascon-AEAD128 on an H200: 10.0 s in slices, 2.8 s in whole 64 MiB
#: pieces; docs/benchmarks.md 0n)
SLICED_PIECE_BYTES = 128 << 20
SLICE_BYTES = 32 << 20
#: slices whose texts go up before a piece's metadata (Job.upload).  2 (the copy engine busy
#: through a slow host's first metadata) measured no different from 1: two H100 machines, 16
#: and 24 pairs, 1 GiB of 16 KiB messages, AES-128-GCM and ChaCha20-Poly1305 each way: 2 ahead
#: in 5 of 8 medians, by -0.031..+0.062 of the copy strawman, interquartile ranges 0.04-0.15;
#: all 4 first: 0.936-0.992 (docs/benchmarks.md 0l)
FIRST_SLICES = 1
#: a serial AEAD's pieces go in slices only where its messages average at most this many bytes
#: (DeviceAEAD.slice_mean_max; why: SLICED_PIECE_BYTES above)
SERIAL_SLICE_MEAN_MAX = 32 << 10
#: message layouts a driver remembers (DeviceAEAD.shape): a large batch of equal messages has
#: one for its equal pieces and one for each of the smaller last pieces (transfer.batches.RAMP)
SHAPES_KEPT = 8
#: ... holding at most this many bytes of arrays in all (a GCM layout of a 128 MiB piece of 16
#: KiB messages: about 0.5 MiB; of 256-byte messages: about 25 MiB)
SHAPES_KEPT_BYTES = 32 << 20


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

    def shape(self, batch: Batch, *extra):
        """What the layout of ``batch``'s messages alone decides for this driver's jobs:
        ``derive_shape(off, aad_off, *extra)`` (a subclass's: lengths, prefix sums, coarse
        indexes, a tile choice), remembered for the last SHAPES_KEPT layouts and returned again
        for a batch with equal offsets and ``extra``: the equal pieces of a large batch of
        equal messages (transfer/batches.py) share one, and so do the calls of a program that
        seals chunks of one size.  An invalid layout raises and is not remembered.  The arrays
        of a shape are read-only: jobs share them; one with fields ``off`` and ``aad_off`` (the
        offsets, any integer type) is compared with them instead of copies."""
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

    def derive_shape(self, off: np.ndarray, aad_off: np.ndarray, *extra):
        """The layout-only part of a job's host work (``shape``), as a NamedTuple whose
        arrays the jobs only read; raise for a layout the AEAD refuses."""
        raise NotImplementedError

    def prepare(self, batch: Batch, queue=None, **slicing) -> Job:
        """A Job of ``batch`` with its uploads enqueued on ``queue``; ``slicing``: the Job's
        ``slices``."""
        raise NotImplementedError

    def run(self, batch: Batch) -> np.ndarray:
        job = self.prepare(batch)
        try:
            job.enqueue()
        except BaseException:
            job.abort()
            raise
        return job.finish()


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
    # of the whole index after it cost more than the repeat: ~0.1 ms for 64 K entries)
    first = (p + (step - 1)) >> shift
    counts = np.diff(first)
    counts[-1] += n - int(first[-1] - first[0])
    return np.repeat(np.arange(m, dtype=np.uint32), counts)


def _pieces(backend, arr, lo: int, hi: int) -> list:
    """Bytes [lo, hi) of host texts ``arr`` as the copies that move them: cut where one copy
    must not cross, at the edges of the cached page-locked registrations of that memory
    (transfer/pinning.copy_ranges)."""
    from ..transfer import pinning

    return pinning.copy_ranges(backend, arr, lo, hi)


def upload_texts(backend, buf, arr, lo: int, hi: int, queue) -> None:
    """Enqueue on ``queue`` the upload of bytes [lo, hi) of host texts ``arr`` into device
    buffer ``buf`` at the same offsets, in the copies ``_pieces`` cuts."""
    for x, y in _pieces(backend, arr, lo, hi):
        backend.upload(buf, arr[x:y], queue, offset=x, record=False)


def _nbytes(buf) -> int:
    """Bytes of a device buffer (a CuPy array's ``nbytes``, an OpenCL buffer's ``size``)."""
    n = getattr(buf, "nbytes", None)
    return int(n if n is not None else buf.size)


def texts(a, dtype=np.uint8):
    """A batch's texts (or any of its arrays) C-contiguous as ``dtype``: host data as a numpy
    array; GPU-resident texts (a CUDA batch's ``src``/``dst`` may be CuPy arrays, contiguous
    uint8 by construction) as they are, for the backend's device-to-device copies."""
    if isinstance(a, np.ndarray) or not hasattr(a, "__cuda_array_interface__"):
        return np.ascontiguousarray(a, dtype=dtype)
    return a


def verify(batch: Batch, computed: np.ndarray, received: np.ndarray) -> np.ndarray:
    """Compare each message's computed tag with the received one in constant time; zero the
    output text of every message that fails.  Returns the boolean mask of messages that verified."""
    m = batch.count
    if m == 0:
        return np.zeros(0, dtype=bool)
    c = np.ascontiguousarray(computed, dtype=np.uint8).reshape(m, -1)
    r = np.ascontiguousarray(received, dtype=np.uint8).reshape(m, -1)
    if c.shape != r.shape:
        raise InvalidArgument("computed and received tags differ in length")
    # every byte of every tag XORed and ORed (no early exit, no branch on the bytes: constant
    # time, as hmac.compare_digest, for the whole batch at once), 8 bytes at a time: the rows
    # zero-padded to whole words (numpy's OR-reduce along a row of bytes took 1.8 ms for 64 K
    # tags on a Zen 5 core, most of a GPU batch's host time after its last download; this 0.3)
    t = c.shape[1]
    x = np.zeros((m, -(-t // 8) * 8), dtype=np.uint8)
    np.bitwise_xor(c, r, out=x[:, :t])
    words = x.view(np.uint64)
    acc = words[:, 0].copy()
    for j in range(1, words.shape[1]):
        acc |= words[:, j]
    ok = acc == 0
    if not ok.all():
        for i in np.flatnonzero(~ok):
            batch.dst[batch.off[i]:batch.off[i + 1]] = 0
    return ok
