"""The service's memory: what a job makes it hold, computed from the request's fields before
anything is allocated, and the admission of that memory and of a job slot against the user's
``max_jobs`` and ``max_memory`` (policy.py) and against the budget of all jobs together (half
the machine's memory).

A job that alone exceeds a limit is refused at once (:meth:`Admission.check`: one line naming
the fields that size it); one that would exceed it beside the user's running jobs waits for
them (:meth:`Admission.held`, up to the job time limit).  Whatever ends the job gives its slot
and its memory back.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from .. import errors

#: a stream's chunk and depth counted where the client sizes one of them and not the other
#: (the largest of the engines' defaults: transfer.chunking.DEFAULTS, transfer.pieces)
STREAM_CHUNK, STREAM_DEPTH = 16 << 20, 4


def budget() -> int:
    """Half the machine's physical memory: what the service's running jobs may hold together."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 8 << 30


class Admission:
    """Each user's running jobs and the bytes of the service's memory they hold (``running``,
    ``memory``: uid -> count), under the server's ``lock``; ``budget``: what all running jobs
    may hold together."""

    def __init__(self, lock, job_timeout: float, stopping: threading.Event):
        self.running: dict = {}
        self.memory: dict = {}
        self.budget = budget()
        self.job_timeout = job_timeout
        self.stopping = stopping
        self.slots = threading.Condition(lock)   # (a job waiting for its user's slot)

    def limit(self, grant) -> int:
        """The most one job of ``grant``'s user may hold."""
        return self.budget if grant.max_memory is None else min(grant.max_memory, self.budget)

    def check(self, op: str, need: int, uid, grant) -> None:
        """Refuse (ServiceError, one line) a job that alone would hold more than its user's
        ``max_memory`` or the budget."""
        if grant.max_memory is not None and need > grant.max_memory:
            raise errors.ServiceError(f"this job would hold {need} bytes of the service's memory "
                                      f"({fields(op)}); user {uid} may hold "
                                      f"{grant.max_memory} ({grant.why}): {hint(op)}")
        if need > self.budget:
            raise errors.ServiceError(f"this job would hold {need} bytes of the service's memory "
                                      f"({fields(op)}); its jobs together may hold "
                                      f"{self.budget} (half this machine's memory): {hint(op)}")

    @contextlib.contextmanager
    def held(self, uid, grant, need: int, admitted=None):
        """One of the user's job slots and ``need`` bytes of its memory, for the block: waits
        past ``max_jobs`` or ``max_memory`` (up to the job time limit); given back when the
        block ends, whatever ends it.  ``admitted()`` is called under the lock once they are
        taken."""
        with self.slots:
            deadline = time.monotonic() + self.job_timeout
            while (self.running.get(uid, 0) >= grant.max_jobs
                   or (grant.max_memory is not None
                       and self.memory.get(uid, 0) + need > grant.max_memory)
                   or sum(self.memory.values()) + need > self.budget):
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    raise errors.ServiceError(f"user {uid} runs {self.running.get(uid, 0)} jobs "
                                              f"holding {self.memory.get(uid, 0)} bytes, its "
                                              f"limits ({grant.why}; all jobs hold "
                                              f"{sum(self.memory.values())} of "
                                              f"{self.budget}), and none ended in time")
                self.slots.wait(min(left, 0.5))
            self.running[uid] = self.running.get(uid, 0) + 1
            self.memory[uid] = self.memory.get(uid, 0) + need
            if admitted is not None:
                admitted()
        try:
            yield
        finally:
            with self.slots:
                self.running[uid] -= 1
                self.memory[uid] -= need
                self.slots.notify_all()


def need(op: str, msg: dict) -> int:
    """Bytes of the service's own memory a job holds (the policy's max_memory counts them),
    from every field that sizes an allocation (schema.py has bounded each): its inline data and
    reply; an AEAD message's copies (the text in, the text and tag out); a batch's tables (keys,
    nonces, tags, offsets, indices, AAD) and, decrypting, its private output; a stream's buffers
    where the client sizes them (``chunk_bytes`` x ``depth``, in and out).  Buffers in the
    client's shared memory, files and pipes cost none, nor does a stream the service sizes
    itself (the devices' staging is the service's, shared by every job).  A sealed file's:
    :func:`sealed_plan`."""
    def count(key: str) -> int:
        v = msg.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    data = msg.get("data")
    inline = 2 * len(data) if isinstance(data, bytes) else 0
    if op == "aead":
        return inline + 2 * count("text_length") + count("tag_length")
    if op == "batch":
        from .. import aeads

        m = count("m")
        tables = (m * (count("nonce_length") + count("tag_length") + 8 + 4 + 8 + 1)
                  + count("keys") * aeads.spec(msg["cipher"]).key_len + count("aad_length"))
        return inline + tables + (0 if msg.get("encrypt") else count("n"))
    if op == "stream" and (count("chunk_bytes") or count("depth")):
        return 2 * (count("chunk_bytes") or STREAM_CHUNK) * (count("depth") or STREAM_DEPTH)
    return inline


def fields(op: str) -> str:
    """The fields that make a job's memory (for its refusal)."""
    return {"aead": "data, text_length, tag_length",
            "batch": "data, m, nonce_length, tag_length, keys, aad_length, n",
            "stream": "chunk_bytes x depth",
            "sealed": "one worker's pieces in and out, its device and context"}.get(op, "data")


def hint(op: str) -> str:
    """What a refused job may do instead (for its refusal)."""
    if op == "sealed":
        return "open it in the client's own process (--service off)"
    return "smaller messages or chunks, or a sealed file"


def stream_tuning(msg: dict, fd: int) -> tuple[int | None, int | None]:
    """A stream's ``chunk_bytes`` and ``depth`` as the client gave them, cut to its input where
    that is a regular file: no chunk larger than the input (at least settings.MIN_CHUNK), no
    more chunks in flight than it holds."""
    from ..settings import MIN_CHUNK

    chunk, depth = msg.get("chunk_bytes"), msg.get("depth")
    size = remaining(fd)
    if size is None or (chunk is None and depth is None):
        return chunk, depth
    if chunk is not None:
        chunk = min(chunk, max(MIN_CHUNK, -(-size // MIN_CHUNK) * MIN_CHUNK))
    if depth is not None:
        depth = max(1, min(depth, -(-size // (chunk or MIN_CHUNK))))
    return chunk, depth


def sealed_plan(sch, msg: dict, fd: int, limit: int) -> tuple[int, int, int]:
    """(plaintext bytes per piece, workers, bytes of the service's memory) of a sealed job of
    scheme ``sch``, from its fields and its input: transfer.sealed.plan's pieces and workers (a
    worker per core where OpenSSL's C loop runs the chunks, two for a device's batches), no more
    workers than a regular input has pieces, nor than ``limit`` bytes hold (at least one: a job
    whose one worker passes the limit is refused by its need).  Each worker holds a piece in and
    its sealed or opened form out; a device's batches one more batch of texts; the request its
    context."""
    from types import SimpleNamespace

    from ..formats import cobblestone as cb
    from ..transfer import sealed

    probe = SimpleNamespace(sch=sch, device=msg.get("device") or "auto", path="stream")
    piece, workers, per = sealed.plan(probe)
    sealed_piece = piece // cb.CHUNK * cb.SEALED_CHUNK
    size = remaining(fd)
    if size is not None:
        step = piece if msg["encrypt"] else sealed_piece
        workers = min(workers, size // step + 1)
    each = piece + sealed_piece
    fixed = len(msg.get("context") or b"") + (0 if per == 1 else piece)
    workers = max(1, min(workers, (limit - fixed) // each))
    return piece, workers, fixed + workers * each


def remaining(fd: int) -> int | None:
    """The bytes of a regular file from the descriptor's offset to its end; None for a pipe,
    a socket, a device."""
    import stat

    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return max(0, st.st_size - os.lseek(fd, 0, os.SEEK_CUR))
    except OSError:
        return None
