"""The job ops: what the service runs for ``crypt``, ``aead``, ``batch``, ``stream`` and
``sealed`` (docs/service.md, the protocol), once session.py has checked and admitted them.

Every op builds its request from the message and runs the plan that ``route`` returns for it;
nobody here decides an engine.  The buffer ops -- a block cipher's ``crypt``, one AEAD message
(``aead``), a batch of them (``batch``) -- share one path (:func:`_buffer_op`): the request's
buffer (:class:`Buffer`: inline, or the client's sealed memfd, or the connection's arena), the
op's request routed and run on it, one reply (the bytes, the device that ran it, and inline the
data).  Files and pipes (``stream``, ``sealed``) run between the client's descriptors with
progress messages.  Each job takes its fair turn (fair.py) before the bytes it runs.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import threading
import time

from .. import errors
from . import memory, protocol

#: seconds between two progress messages of a stream job
PROGRESS_EVERY_S = 0.2


class Job:
    """One admitted request of ``session``: its place among the fair shares (this object)."""

    def __init__(self, session):
        self.session = session

    def turn(self, nbytes: int) -> None:
        """Wait for this job's fair turn to run ``nbytes`` more."""
        self.session.server.fair.take(self, nbytes)


def prepare(op: str, msg: dict, fds: list, limit: int):
    """(what :func:`run` takes for the op, the bytes of the service's memory the job holds),
    before any work: a block cipher's request (its checks and the cipher's use policy run here,
    under the session's policy state); a stream's buffers sized for its input; a sealed file's
    scheme and pieces (its workers cut to its input and to ``limit`` bytes)."""
    if op in ("crypt", "stream"):
        req = block_request(msg)
        if op == "stream":   # (its buffers sized for its input, before they are counted)
            msg["chunk_bytes"], msg["depth"] = memory.stream_tuning(msg, fds[0])
        return req, memory.need(op, msg)
    if op == "sealed":
        sch = scheme(msg["cipher"])
        pieces = memory.sealed_plan(sch, msg, fds[0], limit)
        return (sch, pieces), pieces[2]
    return None, memory.need(op, msg)


def run(op: str, job: Job, msg: dict, fds: list, prepared) -> dict:
    """The admitted job: its reply's fields (``bytes`` always)."""
    if op == "stream":
        return _stream(job, msg, prepared, fds)
    if op == "sealed":
        return _sealed(job, msg, prepared, fds)
    return _buffer_op(op, job, msg, fds, prepared)


def device_of(msg: dict) -> str:
    return msg.get("device") or "auto"


# --------------------------------------------------------------------------- buffers

def _buffer_op(op: str, job: Job, msg: dict, fds: list, prepared) -> dict:
    """``crypt``, ``aead`` or ``batch`` on the request's buffer: (the plan that ran, the bytes
    enciphered, the output) from the op; the reply carries the output where it came inline."""
    with Buffer(job.session, msg, fds) as buf:
        plan, nbytes, out = _BUFFER_OPS[op](job, msg, buf, prepared)
        reply = {"bytes": nbytes, "device": plan.device if plan is not None else None}
        if buf.inline:
            reply["data"] = out.tobytes()
        del out
        return reply


def _crypt(job, msg, buf, req):
    """A block cipher's whole message, in place, in slices of fair.SLICE, each after its turn."""
    from ..route import route
    from .fair import SLICE

    a = buf.array
    n = a.nbytes
    req.check_length(n)
    req.admit((msg.get("first_block") or 0) * req.block_size + n)   # (its place in its message)
    if not n:
        return None, 0, a
    plan = route(req, device_of(msg), n)
    plan.run(a, a, slice_bytes=SLICE, turn=job.turn)
    return plan, n, a


def _aead(job, msg, buf, _):
    """One AEAD message through the library's one-message body (aead.crypt) on the plan routed
    here: inline, or in the shared buffer (encryption: the text, room for the tag after it;
    decryption: text and tag, the plaintext written over them only once the tag verified --
    else the buffer is left as it was, and InvalidTag).  The text is copied out first: the
    client changing its buffer meanwhile changes nothing here."""
    from .. import aead, aeads

    spec = aeads.spec(msg["cipher"])   # (the fields: checked by schema.check)
    encrypt, tl, key, nonce = msg["encrypt"], msg["tag_length"], msg["key"], msg["nonce"]
    spec.aead.check(spec.name, len(key), len(nonce), tl)
    n = buf.array.nbytes if buf.inline else msg["text_length"]
    src = buf.array if buf.inline else buf.array[:n].copy()
    try:
        if not buf.inline and encrypt and n + tl > buf.array.nbytes:
            raise errors.InvalidArgument("aead: length leaves no room for the tag")
        req = aead.message_request(spec, encrypt, key, nonce, msg.get("aad"), tl, False,
                                   msg.get("impl"))
        plan = aead.route_one(req, n, device_of(msg), "array")   # (the request it runs)
        job.turn(n)
        dst = aead.crypt(req, src, device_of(msg), plan=plan)
        if not buf.inline:
            buf.array[:dst.nbytes] = dst
        return plan, n if encrypt else n - tl, dst
    finally:
        src[:] = 0   # (the client's plaintext or unverified text: not kept)


def _batch(job, msg, buf, _):
    """A batch of AEAD messages in one buffer (protocol.batch_layout).  Its tables (offsets, key
    indices, keys, nonces, AAD) are copied out and checked as the library checks its own, so a
    client changing the buffer meanwhile changes only its own results; decryption runs into a
    buffer of the service's, and only verified texts (zeros for the others) are written back."""
    from .. import aead, aeads
    from ..request import aead_request
    from ..route import route

    spec = aeads.spec(msg["cipher"])   # (the fields: checked by schema.check)
    encrypt, tl, m, n = msg["encrypt"], msg["tag_length"], msg["m"], msg["n"]
    k, nl, kl = msg["keys"], msg["nonce_length"], spec.key_len
    spec.aead.check(spec.name, kl, nl, tl)
    req = aead.batch_request(spec, encrypt, tl, False, msg.get("impl"))
    layout, total = protocol.batch_layout(m, n, tl, k, kl, nl, msg["aad_length"])
    region = buf.array
    if region.nbytes != total:
        raise errors.InvalidArgument(f"batch: a buffer of {region.nbytes} bytes; m, n, keys, "
                                     f"nonce_length, aad_length and tag_length say {total}")
    v = protocol.batch_views(region, layout)
    # the tables copied out of the client's buffer, checked by the library's own check
    tags = None if encrypt else v["tags"].reshape(m, tl).copy()
    given = dict(offsets=v["off"].copy(), tags=tags, key=None, keys=v["keys"].reshape(k, kl),
                 key_index=v["index"],
                 nonces=v["nonces"].reshape(m, nl).copy(), aad=v["aad"].copy(),
                 aad_offsets=v["aad_off"].copy())
    batch = None
    try:
        batch, got = aead.checked_batch(req, v["text"], given, v["out"] if encrypt else None)
        req = aead_request(spec, batch, impl=req.impl)
        plan = route(req, device_of(msg), n) if m else None
        job.turn(n)
        res = aead.run_batch(req, got, device_of(msg), plan)
        if encrypt:
            v["tags"][:] = res.tags.reshape(-1)
        else:
            v["out"][:] = res.data
            v["ok"][:] = res.ok
            res.data[...] = 0
        return plan, n, region[layout["out"][0]:layout["ok"][0] + m]
    finally:
        if batch is not None:
            batch.keys.fill(0)
        del v


_BUFFER_OPS = {"crypt": _crypt, "aead": _aead, "batch": _batch}


class Buffer:
    """A request's buffer, for the block: ``array`` (uint8), ``inline`` (the request's ``data``:
    a private copy, zeroed when the block ends) or the client's sealed memfd of ``length``
    bytes (mapped for the block; one the request names as the connection's ``arena`` -- a
    token of the client's -- stays mapped in ``session.maps`` for its next requests: its pages
    are not faulted in again each time; a new arena replaces the connection's old one)."""

    def __init__(self, session, msg: dict, fds: list):
        import numpy as np

        self.inline = "data" in msg
        self._mm = None
        if self.inline:
            self.array = _inline(msg, session.ch.local)
            return
        fd = fds[0]
        n = _sealed_size(fd, msg.get("length"), arena="arena" in msg)
        if "arena" not in msg:
            self._mm = mmap.mmap(fd, n) if n else None
            self.array = (np.frombuffer(self._mm, dtype=np.uint8) if self._mm is not None
                          else np.zeros(0, dtype=np.uint8))
            return
        token, st = msg["arena"], os.fstat(fd)
        if not isinstance(token, bytes):
            raise protocol.ProtocolError("arena must be bytes")
        maps = session.maps
        key = (token, st.st_dev, st.st_ino, st.st_size)
        mm = maps.get(key)
        if mm is None:
            unmap_all(maps)
            mm = maps[key] = mmap.mmap(fd, st.st_size)
        self.array = np.frombuffer(mm, dtype=np.uint8, count=n)

    def __enter__(self) -> "Buffer":
        return self

    def __exit__(self, *exc) -> None:
        if self.inline:
            self.array[:] = 0   # (the client's texts and keys: not kept)
        self.array = None
        _unmap(self._mm)


def _sealed_size(fd: int, length, arena: bool = False) -> int:
    """The bytes of a client's shared buffer a request uses: sealed against shrinking (else a
    client could shrink it under the server's mapping), and the size the request says (an
    arena's first ``length`` bytes: at most its size)."""
    seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    if not seals & fcntl.F_SEAL_SHRINK:
        raise errors.InvalidArgument("the shared buffer must be sealed against shrinking "
                                     "(F_SEAL_SHRINK)")
    n = os.fstat(fd).st_size
    if not isinstance(length, int) or not (0 <= length <= n if arena else length == n):
        raise errors.InvalidArgument(f"the shared buffer holds {n} bytes, the request says {length}")
    return length


def _unmap(mm) -> None:
    """Close a mapping of a client's buffer (None: nothing; one still viewed somewhere is
    unmapped when the view goes)."""
    if mm is not None:
        try:
            mm.close()
        except BufferError:
            pass


def unmap_all(maps: dict) -> None:
    """Close a connection's arena mappings and forget them."""
    for mm in maps.values():
        _unmap(mm)
    maps.clear()


def _inline(msg: dict, local: bool):
    """A request's inline data, as a writable array of its own (at most INLINE_MAX bytes on a
    local connection, REMOTE_PIECE on a remote one)."""
    import numpy as np

    data = msg["data"]
    limit = protocol.INLINE_MAX if local else protocol.REMOTE_PIECE
    if not isinstance(data, bytes) or len(data) > limit:
        raise protocol.ProtocolError(f"inline data must be bytes of at most {limit}")
    return np.frombuffer(bytearray(data), dtype=np.uint8)


def block_request(msg: dict):
    """The client's block-cipher Request, made again here (its checks and the use policy run
    here too).  Padding is the client's (it pads and unpads; the service runs whole blocks)."""
    from ..registry import lookup
    from ..request import make_request

    req = make_request(lookup(msg["cipher"]), msg["key"], msg.get("iv"), msg["encrypt"],
                       None, msg.get("sector_size"), msg.get("start_sector"),
                       msg.get("impl"), bool(msg.get("allow_weak")))
    first = msg.get("first_block") or 0   # (a piece of a longer message: its place in it)
    if first:
        try:
            req = req.at(first, msg.get("chain"))
        except ValueError as e:
            raise errors.InvalidArgument(str(e)) from None
    return req


# --------------------------------------------------------------------------- files and pipes

class Progress:
    """A streamed job's progress callback (called from its workers' threads, one at a time under
    a lock): the bytes written counted, the job's fair turn taken before it goes on, the count
    sent to the client every PROGRESS_EVERY_S (a client gone: raises)."""

    def __init__(self, job: Job):
        self.done = 0
        self._job, self._ch = job, job.session.ch
        self._sent = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, k: int) -> None:
        with self._lock:
            self.done += k
            self._job.turn(k)
            now = time.monotonic()
            if now - self._sent >= PROGRESS_EVERY_S:
                self._sent = now
                self._ch.send({"progress": self.done})


def _stream(job, msg, req, fds) -> dict:
    """The client's input descriptor to its output descriptor, progress sent as it goes."""
    from ..route import route
    from ..transfer.files import run_stream

    # the size the client says is a hint for the route; what sizes work here (the output's
    # pages faulted in ahead) is the input's own size, where it is a regular file
    size = memory.remaining(fds[0])
    n = size if size is not None else msg.get("nbytes")
    if n is not None:   # (the cipher's block limit, counted here too)
        req.admit(n)
    elif req.limit_refuses:   # (the client sends such an input as a context's pieces: crypt)
        raise errors.InvalidArgument(f"{req.spec.name}: a stream of unknown size under the "
                                     f"cipher's block limit is refused (send it as a "
                                     f"context's pieces)")
    plan = route(req, device_of(msg), n, path="stream")
    t0 = time.perf_counter()
    # the command line's own stream (transfer.files.run_stream), on the client's descriptors:
    # a fresh output is one the client made empty for this job, and only a regular input's
    # size (not the client's hint) sizes what is faulted in ahead
    done = run_stream(plan, fds[0], fds[1], nbytes=n,
                      fresh=bool(msg.get("fresh_output")) and size is not None,
                      progress=Progress(job), chunk_bytes=msg.get("chunk_bytes"),
                      depth=msg.get("depth"))
    return {"bytes": done, "device": plan.device, "reason": plan.reason,
            "seconds": round(time.perf_counter() - t0, 6)}


def _sealed(job, msg, prepared, fds) -> dict:
    """A sealed file from the client's input descriptor to its output descriptor
    (transfer/sealed.py, as ``ciphergrid seal`` / ``open`` run it in process): sealing writes
    the C2SP header first; opening checks the key commitment of the header the client read
    (CommitmentMismatch) before any chunk.  Progress (the bytes written, header included) is
    sent as it goes; a failure carries the bytes written before it (``service_done``)."""
    from ..formats import cobblestone as cb
    from ..transfer import files, sealed

    sch, (piece, workers, _) = prepared
    device = device_of(msg)
    context = msg.get("context") or b""
    progress = Progress(job)
    whole = sealed.one_batch(fds[0], fds[1], msg["encrypt"])   # (before the offsets move)
    t0 = time.perf_counter()
    try:
        if msg["encrypt"]:
            sealer = cb.Sealer(sch, msg["key"], context, device=device, path="stream")
            head = sealer.header()
            files.write_all(fds[1], memoryview(head), None)
            progress(len(head))
            sealed.seal(fds[0], fds[1], sealer, piece=piece, threads=workers,
                        progress=progress)
        else:
            opener = cb.Opener(sch, msg["key"], context, msg["header"], device=device,
                               path="stream")
            sealed.open_(fds[0], fds[1], opener, piece=piece, threads=workers,
                         progress=progress)
    except Exception as e:
        e.service_done = progress.done   # (what reached the output: the client says so)
        raise
    where, reason = _sealed_where(sch, device, piece, workers, whole)
    return {"bytes": progress.done, "device": where, "reason": reason,
            "seconds": round(time.perf_counter() - t0, 6)}


def scheme(name: str):
    """The sealed files' scheme a request names (``cobblestone-128``, ``cobblestone-256``)."""
    from ..formats import cobblestone as cb

    for sch in (cb.COBBLESTONE_128, cb.COBBLESTONE_256):
        if name == sch.name:
            return sch
    raise errors.InvalidArgument("sealed: cipher must be cobblestone-128 or cobblestone-256")


def _sealed_where(sch, device: str, piece: int, workers: int, whole: bool) -> tuple[str, str]:
    """(where a sealed job's chunks ran, how: transfer.sealed.said) -- OpenSSL's C loop, or a
    device's one batch over the mapped files (``whole``) or its batches of ``piece``."""
    from ..transfer import sealed

    native, where, reason = sealed.runs_on(sch, device, piece)
    return ("native" if native else where), sealed.said(native, reason, whole, workers, piece,
                                                        sch=sch)
