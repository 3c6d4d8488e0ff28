"""``ciphergrid serve``: one process that owns a runtime (device contexts, compiled kernels,
page-locked staging, the scheduler's speeds) and runs the requests of many clients.

The server holds what its clients share: the one :class:`Runtime` (what a client's job sets up
-- a GPU's kernels, its pipeline -- serves the next client too), the policy, the admission of
jobs and memory (memory.py), the fair shares (fair.py), the counts its status and metrics show.
The rest is in the modules below it:

* listener.py: the sockets (Unix; TCP with TLS for remote clients), accept, a thread per
  connection;
* session.py: one client connection -- who it is, its own use-policy state (weak-cipher
  warnings and decisions are per client, never the service's), its requests one by one;
* handlers.py: the ops (``crypt``, ``aead``, ``batch``, ``stream``, ``sealed``): each builds
  its request and runs the plan ``route`` returns;
* memory.py: what a job makes the service hold, admitted against ``max_jobs``/``max_memory``.

Who may connect: a local peer's user id (SO_PEERCRED) must be the server's own or one the policy
allows; a remote client needs TLS with its certificate, or a token.  A job's keys live in its
request for the job only and are dropped with it; every error goes back as one line.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time

from .. import errors
from ..runtime import Runtime
from . import protocol
from .listener import Listener, check_port
from .memory import Admission

#: a job running longer than this is given up: its connection is closed (a silent pipe cannot
#: hold a client's connection for ever)
JOB_TIMEOUT_S = 3600.0
#: seconds a stopping server waits for the jobs running to end
STOP_GRACE_S = 10.0


class Server:
    """A service on the Unix socket ``address`` (created; removed by :meth:`close`), or on the
    socket systemd passed (``inherited``)."""

    def __init__(self, address: str | None, *, job_timeout: float = JOB_TIMEOUT_S, policy=None,
                 socket_mode: int = 0o600, socket_group: str | None = None,
                 inherited: socket.socket | None = None):
        from .fair import Fair
        from .policy import Policy

        self.job_timeout = check_job_timeout(job_timeout)
        self.runtime = Runtime("service", serving=True)
        self.uid = os.getuid()
        self.policy = policy or Policy(self.uid)
        self.started = time.time()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.admission = Admission(self.lock, self.job_timeout, self.stopping)
        self.fair = Fair()           # the devices' bytes shared by the clients' weights
        self.clients: dict = {}      # connection id -> {"uid", "pid", "jobs", "bytes", "since"}
        self.totals = {"connections": 0, "jobs": 0, "bytes": 0, "errors": 0, "refused": 0}
        self.next_id = 0             # the last connection id given
        self.metrics = None          # metrics.Metrics once serve_metrics() ran
        self.listener = Listener(address, socket_mode, socket_group, inherited)

    @property
    def address(self):
        return self.listener.address

    @property
    def running(self) -> dict:
        """uid -> jobs running now."""
        return self.admission.running

    @property
    def memory(self) -> dict:
        """uid -> bytes of the service's memory its running jobs hold."""
        return self.admission.memory

    @property
    def memory_budget(self) -> int:
        """What all the running jobs together may hold, whatever the policy allows each user."""
        return self.admission.budget

    @memory_budget.setter
    def memory_budget(self, value: int) -> None:
        self.admission.budget = value

    def listen_remote(self, host: str, port: int, *, tls=None, tokens=None,
                      insecure_loopback: bool = False) -> int:
        """Also serve remote clients on TCP ``host:port`` (Listener.listen_remote; the port)."""
        return self.listener.listen_remote(host, port, tls=tls, tokens=tokens,
                                           insecure_loopback=insecure_loopback)

    def serve_forever(self) -> None:
        """Accept and serve until :meth:`stop`; then wait for the running jobs (STOP_GRACE_S)."""
        from .session import serve_local, serve_remote

        try:
            self.listener.accept(self.stopping, lambda conn: serve_local(self, conn),
                                 lambda conn: serve_remote(self, conn))
        finally:
            self.close()

    def stop(self) -> None:
        """Stop accepting (a signal handler may call this)."""
        self.stopping.set()

    def close(self) -> None:
        """Remove the socket; give the jobs running STOP_GRACE_S to end."""
        self.stopping.set()
        self.listener.close()
        if self.metrics is not None and self.metrics.server is not None:
            self.metrics.server.shutdown()
            self.metrics.server.server_close()
        self.listener.join(time.monotonic() + STOP_GRACE_S)

    def hello(self) -> dict:
        return {"ok": True, "version": protocol.VERSION, "pid": os.getpid(), "uid": self.uid}

    def count(self, what: str) -> None:
        """One more of ``what`` in the totals (and the metrics)."""
        with self.lock:
            self.totals[what] += 1
        if self.metrics is not None:
            self.metrics.count(what)

    def status(self, full: bool = True) -> dict:
        """What the service does; ``full``: with each connection's user, pid, jobs and bytes
        (not shown to other users' clients)."""
        from ..devices import all_devices

        with self.lock:
            out = {"version": protocol.VERSION, "pid": os.getpid(), "uid": self.uid,
                   "address": self.address, "uptime_s": round(time.time() - self.started, 3),
                   "clients": len(self.clients), "totals": dict(self.totals),
                   "connections": [{"uid": c["uid"], "pid": c["pid"], "jobs": c["jobs"],
                                    "bytes": c["bytes"], "weight": c["weight"]}
                                   for c in self.clients.values()],
                   "running": {str(u): n for u, n in self.running.items() if n},
                   "memory": {str(u): n for u, n in self.memory.items() if n},
                   "policy": self.policy.source or None,
                   "devices": [d.spec for d in all_devices()],
                   "engines": sorted(self.runtime.engines),
                   "pinned_bytes": self.runtime.pinned_bytes()}
        if not full:
            out.pop("connections")
            out.pop("running")
            out.pop("memory")
        return out

    def serve_metrics(self, port: int, addr: str = "127.0.0.1"):
        """Prometheus metrics (text format) on http://ADDR:PORT/metrics (prometheus-client)."""
        from .metrics import Metrics

        check_port(port, "--metrics")
        self.metrics = Metrics(self)
        return self.metrics.start(port, addr)


def check_job_timeout(seconds) -> float:
    """A job time limit: a finite number of seconds above 0 (InvalidArgument naming
    --job-timeout otherwise)."""
    ok = (isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
          and math.isfinite(seconds) and seconds > 0)
    if not ok:
        raise errors.InvalidArgument(f"--job-timeout must be a number of seconds above 0, not "
                                     f"{seconds!r}")
    return float(seconds)
