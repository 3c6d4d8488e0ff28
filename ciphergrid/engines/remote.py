"""The remote engine kind: an engine whose device is an encryption service (``ciphergrid serve``).

Its device specs: ``service`` (the per-user service's socket) and ``service:PATH`` (the service
listening on socket PATH).  Its requests go through the service's client (service/client.py),
on the client's own paths: a buffer inline or through the connection's sealed memfd arena, a
file or pipe as its descriptors, an AEAD batch as one shared buffer.  The service's runtime
decides which of its engines runs each request (``remote_device``: the spec the service is
asked for, ``auto`` unless the caller named one: ``toward``).

What it runs is what the service's runtime runs: the ``capabilities`` of the service's hello
reply where it lists them, else the built-in table (what OpenSSL or our kernels run).  Each
thread of each process holds a connection of its own (a forked child makes its own); a
connection that failed is dropped, and the next request connects again.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading

from ..backends.base import DeviceInfo
from ..errors import InvalidArgument, ServiceError
from ..registry import engine_kind, register_engine_kind
from .base import Engine, Session, start_beside

#: the prefix of the remote kind's device specs
PREFIX = "service"


def is_service_spec(spec: str | None) -> bool:
    """Whether a device spec names a service (``service`` or ``service:PATH``)."""
    s = (spec or "").strip()
    return s.lower() == PREFIX or s[: len(PREFIX) + 1].lower() == PREFIX + ":"


def info_of(spec: str) -> DeviceInfo:
    """The device of a service spec: the service at the path it names (``service``: the
    per-user one)."""
    from ..settings import default_service_address

    s = spec.strip()
    path = s[len(PREFIX) + 1:].strip() if len(s) > len(PREFIX) else ""
    if s[: len(PREFIX)].lower() != PREFIX or (len(s) > len(PREFIX) and not path):
        raise InvalidArgument(f"a service's device spec is service or service:PATH, not {spec!r}")
    if path.startswith(("tls://", "tcp://")):
        raise InvalidArgument("a service device is a local socket path; a remote service through "
                              "ciphergrid.connect(address, cafile=..., token=...)")
    address = path or default_service_address()
    return DeviceInfo(spec=f"{PREFIX}:{path}" if path else PREFIX, runtime="service",
                      name=f"the service at {address}", kind="accelerator", compute_units=1,
                      memory=0, extra={"address": address})


def for_setting(where: str | None):
    """The remote engine a service setting (``CIPHERGRID_SERVICE``, ``--service``) names:
    ``off`` or unset -> None; ``auto`` -> the per-user service's engine where its socket answers
    as yours, else None; a socket path -> that service's engine (ServiceError when it does not
    answer)."""
    from ..route import engine_of

    where = (where or "").strip()
    if not where or where.lower() == "off":
        return None
    if where.startswith(("tls://", "tcp://")):
        raise InvalidArgument("CIPHERGRID_SERVICE: the library takes a local service (auto or a "
                              "socket path); a remote one through ciphergrid.connect(address, "
                              "cafile=..., token=...)")
    if where.lower() == "auto":
        eng = engine_of(info_of(PREFIX))
        if not os.path.exists(eng.address):
            return None
        try:
            eng.client()
        except ServiceError:
            return None   # (a stale socket, another user's: this process runs it)
        return eng
    eng = engine_of(info_of(f"{PREFIX}:{where}"))
    eng.client()   # (must answer: ServiceError says why not)
    return eng


class _Connections:
    """One connection to a service per thread and process, made on first use."""

    def __init__(self, address: str):
        self.address = address
        self.local = threading.local()
        self.hello = None   # (the first connection's hello reply: the service's capabilities)
        self.lock = threading.Lock()
        self.made: list = []   # (every connection made and not closed: close() ends them)
        self.generation = 0

    def get(self):
        held = getattr(self.local, "held", None)
        if held is not None and held[1:] == (os.getpid(), self.generation):
            return held[0]
        from ..service import connect

        client = connect(self.address)
        with self.lock:
            self.made.append(client)
            self.local.held = (client, os.getpid(), self.generation)
            if self.hello is None:
                self.hello = getattr(client, "hello", None) or {}
        return client

    def drop(self) -> None:
        """Close this thread's connection."""
        held = getattr(self.local, "held", None)
        self.local.held = None
        if held is not None and held[1] == os.getpid():
            with self.lock:
                if held[0] in self.made:
                    self.made.remove(held[0])
            held[0].close()

    def close(self) -> None:
        """Close every thread's connection (each connects again on its next request)."""
        with self.lock:
            made, self.made = self.made, []
            self.generation += 1
            self.hello = None
        for c in made:
            c.close()


def _builtin(spec, mode, direction: str, **details) -> str | None:
    """What a service's runtime runs by the built-in table: OpenSSL's or our kernels' answer,
    parallel where either runs it in parallel."""
    got = [engine_kind(k).capability(spec, mode, direction, **details)
           for k in ("openssl", "device")]
    return "parallel" if "parallel" in got else "serial" if "serial" in got else None


class RemoteSession(Session):
    """A request bound to a service: each piece is a request of its own from its block on."""

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        import numpy as np

        a = np.asarray(src).reshape(-1).view(np.uint8)
        b = np.asarray(dst).reshape(-1).view(np.uint8)
        self.engine._call(lambda c: c._piece(self.req, a, b, first_block, chain,
                                             self.engine.remote_device))


class RemoteEngine(Engine):
    """The engine of a service (see the module docstring)."""

    kind = "remote"

    def __init__(self, info, remote_device: str = "auto", connections=None):
        self.info = info
        self.address = info.extra["address"]
        self.remote_device = remote_device
        self._conns = connections or _Connections(self.address)
        self._toward: dict = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<RemoteEngine {self.address} device={self.remote_device}>"

    def toward(self, device: str | None) -> "RemoteEngine":
        """This service's engine asking the service for ``device`` (its spec; ``auto``: the
        service's route decides), on the same connections."""
        device = (device or "auto").strip().lower()
        if device == self.remote_device:
            return self
        with self._lock:
            e = self._toward.get(device)
            if e is None:
                e = self._toward[device] = RemoteEngine(self.info, device, self._conns)
            return e

    def close(self) -> None:
        """Close this service's connections, every thread's (the next request connects again)."""
        self._conns.close()

    def client(self):
        """This thread's connection to the service (made here; ServiceError when none answers)."""
        return self._conns.get()

    def _call(self, fn):
        try:
            return fn(self.client())
        except ServiceError:
            self._conns.drop()   # (the next request connects again)
            raise

    # -- what it runs -----------------------------------------------------------------------
    def _listed(self, spec, direction: str):
        """The service's own answer from its hello's ``capabilities``, or ``...`` where it lists
        none."""
        self.client()
        caps = (self._conns.hello or {}).get("capabilities")
        if not isinstance(caps, dict):
            return ...
        row = caps.get(spec.name)
        return row.get(direction) if isinstance(row, dict) else None

    def capability(self, req, nbytes: int | None = None) -> str | None:
        d = "encrypt" if req.encrypt else "decrypt"
        got = self._listed(req.spec, d)
        return _builtin(req.spec, req.spec.mode, d) if got is ... else got

    def aead_capability(self, spec, **details) -> str | None:
        """How the service runs AEAD ``spec`` (``details``: count, nonce_len, tag_length)."""
        got = self._listed(spec, "encrypt")
        return _builtin(spec, None, "encrypt", **details) if got is ... else got

    # -- running ----------------------------------------------------------------------------
    def session(self, req) -> Session:
        return RemoteSession(self, req)

    def stream(self, req, src, dst, *, progress=None, chunk_bytes=None, depth=None,
               nbytes: int | None = None, fresh_output: bool = False) -> int:
        """``src`` to ``dst`` (files or pipes): their descriptors go to the service, which reads
        and writes them itself."""
        fds = [f if isinstance(f, int) else f.fileno() for f in (src, dst)]
        reply = self._call(lambda c: c.stream(req, fds[0], fds[1], device=self.remote_device,
                                              progress=progress, nbytes=nbytes,
                                              chunk_bytes=chunk_bytes, depth=depth,
                                              fresh_output=fresh_output))
        self._conns.local.reply = reply
        return int(reply.get("bytes", 0))

    def sealed_file(self, seal: bool, scheme: str, key: bytes, context: bytes, src, dst, *,
                    header: bytes | None = None, progress=None) -> int:
        """A sealed file (C2SP chunked encryption, ``scheme`` by name) from ``src`` into ``dst``
        (files or pipes: their descriptors go to the service, which reads and writes them):
        sealing writes the C2SP header and the chunks; opening takes ``header`` (the input's,
        read by the caller) and checks its key commitment first.  ``key``: the input key (a
        passphrase's derived by the caller, never sent).  ``progress(k)``: bytes written (the
        header included), as the service says them.  Returns the bytes written (``last_reply``:
        where the service ran it); a failure raises its class (CommitmentMismatch,
        ChunkFailed, Truncated...)."""
        fds = [f if isinstance(f, int) else f.fileno() for f in (src, dst)]
        reply = self._call(lambda c: c.sealed(seal, scheme, key, context, fds[0], fds[1],
                                              header=header, device=self.remote_device,
                                              progress=progress))
        self._conns.local.reply = reply
        return int(reply.get("bytes", 0))

    def sealed_refusal(self, context: bytes) -> str | None:
        """Why a sealed file under ``context`` does not go to the service (it stays in the
        caller's process), else None: a context past what one request carries."""
        from ..service import protocol

        if len(context) > protocol.INLINE_MAX:
            return f"a context of more than {protocol.INLINE_MAX >> 10} KiB"
        return None

    def last_reply(self) -> dict:
        """This thread's last stream or sealed-file reply from the service (``device``,
        ``reason``, ``seconds``: what ran it there), {} before one."""
        return getattr(self._conns.local, "reply", None) or {}

    def _batch(self, batch, tags, impl):
        from .. import aeads
        from ..request import aead_request

        req = aead_request(aeads.spec(batch.name), batch, impl=impl)
        out, res = self._call(lambda c: c.run_batch(req, tags, self.remote_device))
        batch.dst[...] = out
        return res

    def seal(self, batch, impl: str | None = None, beside=None):
        start_beside(beside)
        return self._batch(batch, None, impl)

    def open(self, batch, tags, impl: str | None = None):
        return self._batch(batch, tags, impl)


register_engine_kind("remote", RemoteEngine, None, runtimes=("service",),
                     label="a client of the encryption service (service, service:PATH)")


# --------------------------------------------------------------------------- routing to it

_ASKED = contextvars.ContextVar("ciphergrid_service_asked", default=None)


@contextlib.contextmanager
def service_asked(where):
    """Within the block, ``route`` runs this context's requests on the service that ``where``
    names (a service setting: ``auto``, ``off``, a socket path, for_setting says which; or a
    remote engine, chosen already; None: none), unless their device names a service itself."""
    token = _ASKED.set(where)
    try:
        yield
    finally:
        _ASKED.reset(token)


def asks_service() -> bool:
    """Whether this context was asked to send its requests to a service (service_asked with a
    setting other than ``off``, or a remote engine): ``chosen`` then asks whether one answers."""
    where = _ASKED.get()
    if where is None:
        return False
    return not isinstance(where, str) or where.strip().lower() not in ("", "off")


def chosen(device: str | None, path: str):
    """The remote engine a request runs on, or None (this process's engines): the service its
    device spec names; else, for host data and files, the service this context was asked for
    (service_asked), except in a service's own runtime and under ``service.in_process()``."""
    from ..route import engine_of
    from ..runtime import current

    if is_service_spec(device):
        if current().serving:
            raise InvalidArgument("a service does not send its requests to a service")
        if path == "resident":
            raise InvalidArgument("GPU arrays do not pass to the service yet (no CUDA IPC): use "
                                  "a device of this process for them")
        return engine_of(info_of(device))
    where = _ASKED.get()
    if where is None or path == "resident":
        return None
    rt = current()
    if rt.serving or rt.service.in_process:
        return None
    eng = where if isinstance(where, RemoteEngine) else for_setting(where)
    return None if eng is None else eng.toward(device)


def cannot(eng, what: str):
    """The error for what the service ``eng`` does not run."""
    from ..errors import UnsupportedCipher

    return UnsupportedCipher(f"the service at {eng.address} cannot run {what}")
