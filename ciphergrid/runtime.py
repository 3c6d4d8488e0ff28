"""The runtime: what runs requests holds here, not in module globals.

A :class:`Runtime` owns the engines (one per device spec: ``route.engine_of``), the device
backends with what hangs off them (compiled programs, cached pipelines, copy jobs, the AEAD
drivers: ``devices.backend``), the use policy's state (the warnings said, the suspension of the
self-test and benchmarks: ``request``) and the scheduler's measured speeds
(``engines.composite``).  The library keeps a default runtime; a service serving many clients,
or an MPI rank, makes its own and runs its requests under it::

    rt = ciphergrid.runtime.Runtime()
    with rt:                      # this thread (and task) uses rt until the block ends
        ciphergrid.encrypt(...)

Two runtimes in one process share none of that (tests/test_runtime.py).  What stays per process,
on purpose: OpenSSL's thread pool (one set of cores, whoever asks: one core budget), the
page-lock cache of host memory (one budget of locked memory), the device enumeration (the
hardware does not change), and the settings read from the environment.

A runtime is chosen per thread and task (a context variable); a thread started by ciphergrid
(the scheduler's workers, the file pieces' workers) is handed the objects it needs, not the
runtime's name, so it never falls back to the default by accident.
"""

from __future__ import annotations

import contextvars
import threading


class PolicyState:
    """The use policy's state (request.py): the warnings said once, and the depth of
    ``weak_use_allowed`` blocks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.warned: set = set()
        self.suspended = 0


class Runtime:
    """Engines, backends, policy state and the scheduler's speeds (see the module docstring)."""

    def __init__(self, name: str = "runtime"):
        self.name = name
        self.lock = threading.RLock()
        self.engines: dict = {}          # device spec -> Engine
        self.backends: dict = {}         # device spec -> Backend
        self.policy = PolicyState()
        self.speeds: dict = {}           # (spec, device name, cipher, encrypt) -> bytes/s
        self.calibration = {"loaded": False, "saved": 0.0}
        self._local = threading.local()   # each thread's stack of entries (several may enter)

    def __repr__(self) -> str:
        return f"<Runtime {self.name!r}: {len(self.engines)} engines>"

    def __enter__(self) -> "Runtime":
        tokens = self._local.__dict__.setdefault("tokens", [])
        tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc) -> None:
        _current.reset(self._local.tokens.pop())


_default = Runtime("default")
_current: contextvars.ContextVar = contextvars.ContextVar("ciphergrid_runtime", default=None)


def current() -> Runtime:
    """The runtime of this thread or task: the one entered last, else the library's default."""
    return _current.get() or _default


def default() -> Runtime:
    return _default
