"""The registry of benchmark suites: ``ciphergrid bench [suite]``.

A suite is a function ``run(args, ctx) -> dict`` that hands each :class:`records.Record` to
``ctx.add(record)`` as soon as it is measured (the rows are checkpointed to the --json file every few
seconds, so a crash or an interrupt keeps what was measured) and returns the header parts it owns:
``{"devices": [sysinfo.device_info(d), ...], "options": {...}}``.  It may add its own options with
``add_arguments(parser)``; option names must not clash with the shared ones (see bench/__init__.py).

Adding a suite: write ``ciphergrid/bench/<name>.py`` that calls :func:`register` at import, and add
the module name to :data:`MODULES`.  A listed module that fails to import is reported, not fatal.

A suite may register ``estimate(args, rate, api) -> (what, seconds)``: what it will do and roughly
how long, from its sizes and ``rate`` (bytes/s, a first measured rate: preflight.host_rate);
printed before it starts.  Every suite's progress shows the time left once its first step ran.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

#: modules that register suites when imported (the first one's first suite is the default)
MODULES = [
    "ciphergrid.bench.methodology",   # "ciphers"
    "ciphergrid.bench.pipeline",      # "pipeline"
    "ciphergrid.bench.ablation",      # "ablation"
    "ciphergrid.bench.files",         # "files"
    "ciphergrid.bench.aead",          # "aead"
    "ciphergrid.bench.api",           # "api"
    "ciphergrid.bench.scheduler",     # "scheduler"
    "ciphergrid.bench.gpus",          # "gpus"
    "ciphergrid.bench.mpi",           # "mpi"
    "ciphergrid.bench.study",         # "study"
    "ciphergrid.bench.service",       # "service"
    "ciphergrid.bench.seal",          # "seal"
]
DEFAULT = "ciphers"


@dataclass
class Context:
    api: Any                          # methodology.Api: the engine entry points
    records: list                     # the rows so far (read-only for suites: use add)
    host: dict                        # sysinfo.collect()
    progress: Callable[[int], Any]    # progress(total) -> progress.Progress context manager
    log: Callable[[str], None]        # loud message on stderr
    add: Callable[[Any], None] = None  # add(record): keep a measured row (and checkpoint)
    header: dict = field(default_factory=dict)  # header parts known early ("devices", "options")


@dataclass(frozen=True)
class Suite:
    name: str
    run: Callable[[Any, Context], dict]
    help: str = ""
    add_arguments: Callable[[Any], None] | None = None
    estimate: Callable[[Any, float, Any], tuple] | None = None


_SUITES: dict[str, Suite] = {}
_import_errors: dict[str, str] = {}
_loaded = False


def directions(args) -> tuple[bool, ...]:
    """The directions ``--direction`` asks for, as ``encrypt`` flags: (True,), (False,) or both."""
    d = getattr(args, "direction", None) or "encrypt"
    return {"encrypt": (True,), "decrypt": (False,), "both": (True, False)}[d]


def wall_times(fn, repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn`` after one untimed warm-up call."""
    import time

    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def register(name: str, run, *, help: str = "", add_arguments=None, estimate=None) -> Suite:
    suite = Suite(name, run, help, add_arguments, estimate)
    _SUITES[name] = suite
    return suite


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:  # the module exists but something it imports does not
                _import_errors[mod] = f"{type(e).__name__}: {e}"
        except Exception as e:  # a broken suite must not take the others down
            _import_errors[mod] = f"{type(e).__name__}: {e}"


def names() -> list[str]:
    _load()
    return list(_SUITES)


def get(name: str) -> Suite:
    _load()
    try:
        return _SUITES[name]
    except KeyError:
        from ..errors import InvalidArgument

        extra = "".join(f"; {m} failed to import ({err})" for m, err in _import_errors.items())
        raise InvalidArgument(
            f"unknown benchmark suite {name!r}; known: {', '.join(_SUITES)}{extra}") from None


def import_errors() -> dict[str, str]:
    _load()
    return dict(_import_errors)
