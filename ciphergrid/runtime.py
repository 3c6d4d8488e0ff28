"""The runtime: what runs requests holds here, not in module globals.

A :class:`Runtime` owns the engines (one per device spec: ``route.engine_of``), the device
backends with what hangs off them (compiled programs, cached pipelines, copy jobs, the AEAD
drivers and their memos: ``devices.backend``), device discovery's answers (``devices``: ``rt.devices``),
the page-lock cache of host memory (``rt.pins``: ``transfer.pinning.pins_of``), the host threads (their
budget, the OpenSSL engine's pool, the AEAD repeated-pair check's thread: ``rt.threads``), the
use policy's state (the warnings said, the suspension of the self-test and benchmarks:
``request``; a service's client session keeps its own: ``policy_of``), the library's use of a
service (``service.for_library``: ``rt.service``), the scheduler's measured speeds
(``engines.composite``) and route's plans of one device by what decides them (``rt.plans``).
The library keeps a default runtime; a service serving many clients, or an MPI rank, makes its
own and runs its requests under it::

    rt = ciphergrid.runtime.Runtime()
    with rt:                      # this thread (and task) uses rt until the block ends
        ciphergrid.encrypt(...)

Two runtimes in one process share none of that (tests/test_runtime.py); what stays per process
is the settings read from the environment and the pure tables computed once (S-boxes, vectors:
tests/test_structure.py lists every module-level state and why).  The work of one runtime keeps
at most ``rt.threads.budget`` threads busy (the usable cores unless ``Runtime(threads=N)``): the
OpenSSL engine, the scheduler's host share, the file pieces' workers and the prefault take
their counts from it.

A runtime is chosen per thread and task (a context variable); a thread started by ciphergrid
(the scheduler's workers, the file pieces' workers) is handed the objects it needs, not the
runtime's name, so it never falls back to the default by accident: an engine keeps its runtime's
threads, a backend its runtime (``backend.runtime``: the pin cache).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import weakref

from .settings import usable_cores

TYPE_CHECKING = False   # (the command line imports no typing: docs/benchmarks.md 0c, 'Start-up')

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


def _after_fork(ref) -> None:
    obj = ref()
    if obj is not None:
        obj._after_fork_in_child()


class PolicyState:
    """The use policy's state (request.py): the warnings said once, and the depth of
    ``weak_use_allowed`` blocks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.warned: set = set()
        self.suspended = 0


class Threads:
    """A runtime's host threads: ``budget`` (the threads its work keeps busy at once), the OpenSSL
    engine's worker pool (``pool``: the budget's size, larger for a run that asks more) and the one
    thread beside the device work (``beside``: the AEAD repeated-pair check).  The pools start at
    first use; a forked child, which has the objects but none of their threads, starts new ones."""

    def __init__(self, budget: int | None = None):
        self.budget = max(1, int(budget)) if budget else usable_cores()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0
        self._beside: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        os.register_at_fork(after_in_child=lambda ref=weakref.ref(self): _after_fork(ref))

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()   # (it may have been held by a thread the child lacks)
        self._pool, self._size, self._beside = None, 0, None   # (their threads stayed behind)
        self._pid = os.getpid()

    def pool(self, workers: int) -> ThreadPoolExecutor:
        """The worker pool, with at least ``workers`` threads (and at least the budget)."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._pool is None or self._size < workers:
                old = self._pool
                self._size = max(workers, self.budget)
                self._pool = ThreadPoolExecutor(max_workers=self._size,
                                                thread_name_prefix="cg-native")
                if old is not None:
                    old.shutdown(wait=False)
            return self._pool

    def beside(self) -> ThreadPoolExecutor:
        """The one thread for host work beside the devices' (kept: a thread started per call
        would make the caller wait for it)."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._beside is None:
                self._beside = ThreadPoolExecutor(1, thread_name_prefix="ciphergrid-check")
            return self._beside

    def share(self, reserved: int) -> int:
        """Threads left of the budget once ``reserved`` are taken (at least one)."""
        return max(1, self.budget - reserved)


class Discovery:
    """Device discovery's answers (devices.py): each device runtime's devices (enumerated once: a
    runtime's start-up is a large part of a command's), the specs resolved, whether the machine
    shows a GPU."""

    def __init__(self):
        self.lock = threading.RLock()
        self.by_runtime: dict = {}       # "cuda" | "opencl" | "native" -> tuple of DeviceInfo
        self.resolved: dict = {}         # spec -> DeviceInfo
        self.gpu_nodes: bool | None = None


class ServiceUse:
    """The library's use of a service (service.for_library): each thread's connection, kept
    between calls; the depth of ``in_process()`` blocks (calls under them run here)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.local = threading.local()   # .held: (setting, client, pid)
        self.in_process = 0


class Plans:
    """``route``'s plans kept by what decides them (route.py says what): templates without
    their request (no key, IV or batch is kept), at most LIMIT of them (past it, all are
    dropped).  ``clear()`` drops them: whatever changes a decision (the engine kinds, a device
    rediscovered, an engine replaced) calls it or is checked by route on each use."""

    LIMIT = 512

    def __init__(self):
        self.table: dict = {}

    def get(self, key):
        return self.table.get(key)

    def put(self, key, value) -> None:
        table = self.table
        if len(table) >= self.LIMIT:
            table.clear()
        table[key] = value

    def clear(self) -> None:
        self.table.clear()

    def __len__(self) -> int:
        return len(self.table)


class Runtime:
    """Engines, backends, device discovery, pinned memory, host threads, policy state, the
    library's service connections, the scheduler's speeds and route's plans (see the module
    docstring).
    ``threads``: the thread budget (None: the usable cores); ``serving``: the runtime of a
    service (calls under it never go to a service)."""

    def __init__(self, name: str = "runtime", *, threads: int | None = None,
                 serving: bool = False):
        self.name = name
        self.lock = threading.RLock()
        self.engines: dict = {}          # device spec -> Engine
        self.backends: dict = {}         # device spec -> Backend
        self.devices = Discovery()
        self.threads = Threads(threads)
        self._policy = PolicyState()
        self.service = ServiceUse()
        self.serving = serving
        self.speeds: dict = {}           # (spec, device name, cipher, encrypt) -> bytes/s
        self.plans = Plans()             # route's plans by what decides them (route.py)
        self.calibration = {"loaded": False, "saved": 0.0}
        #: the page-lock cache of host memory (transfer.pinning._PinCache), made at first use by
        #: transfer.pinning.pins_of
        self.pins = None
        self._local = threading.local()   # each thread's stack of entries (several may enter)

    def __repr__(self) -> str:
        return f"<Runtime {self.name!r}: {len(self.engines)} engines>"

    @property
    def policy(self) -> PolicyState:
        """The use policy's state of this thread's requests: its session's (``policy_of``), else
        the runtime's own."""
        return getattr(self._local, "policy", None) or self._policy

    @contextlib.contextmanager
    def policy_of(self, state: PolicyState):
        """Within the block, this thread's requests under this runtime keep their use-policy
        state in ``state``: a service's client session (its warnings said once and its
        ``weak_use_allowed`` are that client's, not every client's)."""
        before = getattr(self._local, "policy", None)
        self._local.policy = state
        try:
            yield state
        finally:
            self._local.policy = before

    def pinned_bytes(self) -> int:
        """Host memory this runtime keeps page-locked now (0 before any run locked some)."""
        return 0 if self.pins is None else int(self.pins.locked_bytes())

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
