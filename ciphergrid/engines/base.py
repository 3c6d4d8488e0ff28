"""The engine protocol: every engine runs requests through the same calls, so the command line,
the API, and later a scheduler over many devices, a daemon client and an MPI engine, never know
which one runs.

* ``session(req)``: the request bound to the engine, its keys set up once (expanded and, on a
  device, uploaded); ``session.crypt(src, dst, first_block=f, chain=c)`` runs blocks [f, ...) of
  the message (``Request.at``: the split primitive), any number of times; ``close()`` wipes the
  keys.
* ``crypt(req, src, dst)``: one whole message, host arrays in and out.
* ``stream(req, src, dst, ...)``: a file or pipe to a file or pipe (see the transfer layer).
* ``seal(batch)`` / ``open(batch, tags)``: the AEADs (``aeads.base.Batch``: one message or a
  million); ``seal`` returns the tags, ``open`` the mask of messages whose tag verified, the
  plaintext of the others zeroed.
* ``kind`` names the engine's kind: its column of the capability table and what makes it
  (registry.register_engine_kind: the kinds are open).
"""

from __future__ import annotations

import threading


class Session:
    """A request bound to an engine (use as a context manager, or call close())."""

    def __init__(self, engine, req):
        self.engine = engine
        self.req = req

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Sessions:
    """Sessions kept by a key (their keys set up once), made on first use, all closed (their
    keys wiped) together: a Cipher's for its contexts, a composite session's for its engines."""

    def __init__(self):
        self._d: dict = {}
        self._lock = threading.Lock()

    def get(self, key, make):
        with self._lock:
            s = self._d.get(key)
            if s is None:
                s = self._d[key] = make()
            return s

    def close(self) -> None:
        with self._lock:
            sessions, self._d = list(self._d.values()), {}
        for s in sessions:
            s.close()


class Engine:
    #: the engine's kind (registry.EngineKind): "device" (our kernels), "openssl", "composite",
    #: or a registered one
    kind: str = ""
    #: the DeviceInfo of what runs the requests
    info = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.info.spec if self.info else '?'}>"

    def capability(self, req, nbytes: int | None = None) -> str | None:
        """"parallel", "serial" or None (cannot run it), for this request and size."""
        return req.spec.capability(self.kind, req.encrypt)

    def session(self, req) -> Session:
        raise NotImplementedError

    def crypt(self, req, src, dst, stats=None) -> None:
        """One whole message: ``src`` through the mode into ``dst`` (host uint8 arrays of the
        same size; ``dst`` may be ``src``).  ``stats``: an ``engines.composite.SchedulerStats``
        to fill in (one engine: all the bytes)."""
        import time

        t0 = time.perf_counter()
        with self.session(req) as s:
            s.crypt(src, dst)
        if stats is not None:
            stats.ran(self.info.spec, src.nbytes, time.perf_counter() - t0)

    def stream(self, req, src, dst, *, progress=None, chunk_bytes=None, depth=None,
               nbytes: int | None = None) -> int:
        """Read ``src`` (file object or descriptor) to its end, write the result to ``dst``;
        returns the bytes written.  Only for requests whose mode streams (Mode.streams)."""
        raise NotImplementedError

    def seal(self, batch, impl: str | None = None, beside=None):
        """AEAD encryption of every message of ``batch`` into ``batch.dst``; returns the tags.
        ``beside``: host work of the caller's (the repeated-nonce check of a large batch), an
        object whose ``start()`` the engine calls once, as soon as its device is busy (at once
        where it has nothing better: start_beside); None: none."""
        raise NotImplementedError

    def open(self, batch, tags, impl: str | None = None):
        """AEAD decryption: every message into ``batch.dst``, its tag checked against ``tags``;
        returns the boolean mask of the messages that verified (the others' output zeroed)."""
        raise NotImplementedError


def start_beside(beside) -> None:
    """Start the caller's host work ``beside`` (Engine.seal), if any."""
    if beside is not None:
        beside.start()
