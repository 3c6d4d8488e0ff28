"""A service for the tests: one in a thread of the calling process on a socket in a fresh short
folder, stopped within a bounded time; a raw request to a service's socket (no checks of the
client's)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading

from ..service import protocol


@contextlib.contextmanager
def short_folder(prefix: str = "cg-svc-"):
    """A fresh folder under the system's temporary one (a short path: a socket's is at most 107
    bytes), removed on leaving."""
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def threaded(folder: str, job_timeout: float = 20):
    """A ``Server`` on ``folder``/s.sock serving in a thread of this process; on leaving it is
    stopped, its thread ended (within 15 s) and its socket gone (AssertionError otherwise)."""
    from ..service.server import Server

    s = Server(os.path.join(folder, "s.sock"), job_timeout=job_timeout)
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    try:
        yield s
    finally:
        s.stop()
        t.join(15)
    assert not t.is_alive() and not os.path.exists(s.address)


def ask(address: str, msg: dict, fds=(), timeout: float = 10):
    """One request on a connection of its own (a raw client: no checks of the client's); the
    reply, progress skipped (None: closed without one)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(timeout)
        s.connect(address)
        protocol.send(s, msg, fds)
        while True:
            reply, extra = protocol.recv(s)
            protocol.close_fds(extra)
            if reply is None or set(reply) != {"progress"}:
                return reply
