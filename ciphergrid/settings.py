"""Options that come from the environment, read here and handed on as values or objects.

(The device switches are read here too, at each call: ``CIPHERGRID_NO_<RUNTIME>``
(:func:`runtime_disabled`), ``CIPHERGRID_NO_ICD_FIXUP`` (:func:`icd_fixup`),
``CIPHERGRID_NATIVE_BACKEND`` (:func:`openssl_through_pyca`) and ``CIPHERGRID_NATIVE_LOOP``
(:func:`openssl_c_loop`).  The OpenCL backend sets ``OCL_ICD_VENDORS`` and ``POCL_AFFINITY`` for
the C libraries, which read nothing else; the command line sets ``OPENBLAS_NUM_THREADS``:
:func:`one_blas_thread`.)

* :func:`cache_dir`: where ciphergrid keeps its per-machine files: ``CIPHERGRID_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/ciphergrid``, else ``~/.cache/ciphergrid`` (the compiled OpenSSL loop helper,
  the OpenCL device probe).
* :func:`transfer`: the options of the transfer layer (:mod:`ciphergrid.transfer`) as a frozen
  :class:`TransferSettings`, read and validated at the call.  The transfer layer takes such an
  object wherever it has a ``settings=`` parameter; ``None`` there means "this function's result,
  read now".

=========================  =====================  ============================================
variable                   TransferSettings        meaning (default)
=========================  =====================  ============================================
CIPHERGRID_CHUNK_SIZE      chunk_bytes             pipeline chunk size, bytes with binary
                                                   suffixes (``8Mi``); None: tuned / default
CIPHERGRID_DEPTH           depth                   chunks in flight; None: tuned / default
CIPHERGRID_TUNING_CACHE    tuning_cache            the tuning cache file
                                                   (``$XDG_CACHE_HOME/ciphergrid/tuning.json``,
                                                   else ``~/.cache/ciphergrid/tuning.json``)
CIPHERGRID_AUTOTUNE        autotune                ``0``: never tune a GPU by itself (on)
CIPHERGRID_HOST_THREADS    host_threads            worker threads per side, 1..64
                                                   (min(8, cores / 2), at least 1); where
                                                   set, also sealed files' workers
                                                   (transfer/sealed.py; else one per core)
CIPHERGRID_PIN_GRAIN       pin_grain               bytes per page-lock registration piece
                                                   (:data:`PIN_GRAIN`, at least a page)
CIPHERGRID_PIN_CACHE       pin_cache               bytes of caller memory kept page-locked
                                                   between runs, 0: none (min(RAM/4, 64 GiB))
CIPHERGRID_MAPPED_LOCK     mapped_lock             file to file through two mappings: which to
                                                   page-lock: ``none`` (default), ``in``,
                                                   ``out``, ``both``
CIPHERGRID_STREAM_MMAP     stream_mmap             a regular output of known size: ``1``
                                                   mapped (default), ``populate`` mapped with
                                                   MAP_POPULATE, ``out`` mapped but the input
                                                   read (never both mapped), ``0`` written
                                                   with pwrite/write
CIPHERGRID_PREFAULT        prefault_min            the smallest new RAM-disk output faulted in
                                                   ahead; 0: never (:data:`PREFAULT_MIN`)
=========================  =====================  ============================================
"""

from __future__ import annotations

import os
import re
import sys

from .errors import InvalidArgument

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

ENV_CHUNK = "CIPHERGRID_CHUNK_SIZE"
ENV_DEPTH = "CIPHERGRID_DEPTH"
ENV_TUNING_CACHE = "CIPHERGRID_TUNING_CACHE"
ENV_AUTOTUNE = "CIPHERGRID_AUTOTUNE"
ENV_HOST_THREADS = "CIPHERGRID_HOST_THREADS"
ENV_PIN_GRAIN = "CIPHERGRID_PIN_GRAIN"
ENV_PIN_CACHE = "CIPHERGRID_PIN_CACHE"
ENV_MAPPED_LOCK = "CIPHERGRID_MAPPED_LOCK"
ENV_STREAM_MMAP = "CIPHERGRID_STREAM_MMAP"
ENV_PREFAULT = "CIPHERGRID_PREFAULT"

#: limits on the chunk size and depth any source (argument, environment, cache) may ask for
MIN_CHUNK, MAX_CHUNK = 4 * KiB, 1 * GiB
MIN_DEPTH, MAX_DEPTH = 1, 64
#: bytes per page-lock registration piece (at least the chunk): few, large registrations
PIN_GRAIN = 64 << 20
#: new RAM-disk outputs smaller than this are not faulted in ahead (transfer.files.prefault_output)
PREFAULT_MIN = 256 << 20

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_SUFFIX = {"": 1, "b": 1, "k": KiB, "ki": KiB, "kib": KiB, "kb": KiB, "m": MiB, "mi": MiB,
           "mib": MiB, "mb": MiB, "g": GiB, "gi": GiB, "gib": GiB, "gb": GiB}


def cache_dir() -> str:
    """The cache folder (created, mode 0700); a fresh temporary folder if it cannot be made."""
    base = os.environ.get("CIPHERGRID_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "ciphergrid")
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        return base
    except OSError:
        import tempfile

        return tempfile.mkdtemp(prefix="ciphergrid-")


def service_setting() -> str | None:
    """``CIPHERGRID_SERVICE``: the encryption service the command line (and, when set, the API)
    uses: ``auto`` (the per-user one where it runs), ``off``, or an address (a socket path)."""
    v = os.environ.get("CIPHERGRID_SERVICE", "").strip()
    return v or None


def malloc_arena_max_set() -> bool:
    """Whether the user sets glibc's MALLOC_ARENA_MAX (the service then leaves it alone)."""
    return "MALLOC_ARENA_MAX" in os.environ


def activation_fds() -> list[int]:
    """The listening sockets systemd passed (socket activation: ``LISTEN_PID`` is this process,
    ``LISTEN_FDS`` of them from descriptor 3 on); [] when none."""
    if os.environ.get("LISTEN_PID", "") != str(os.getpid()):
        return []
    try:
        n = int(os.environ.get("LISTEN_FDS", "0"))
    except ValueError:
        return []
    return list(range(3, 3 + max(0, n)))


def mpiexec_path() -> str | None:
    """The ``mpiexec`` of this Python's environment (the ``mpi`` extra installs MPICH's beside
    it), else the one on ``PATH``; None where there is none."""
    import shutil

    return shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                        + os.environ.get("PATH", ""))


def default_service_address() -> str:
    """The per-user service's socket: ``$XDG_RUNTIME_DIR/ciphergrid.sock``, else
    ``/tmp/ciphergrid-UID/ciphergrid.sock`` (its folder made mode 0700 by the server)."""
    run = os.environ.get("XDG_RUNTIME_DIR")
    if run and os.path.isdir(run):
        return os.path.join(run, "ciphergrid.sock")
    return os.path.join("/tmp", f"ciphergrid-{os.getuid()}", "ciphergrid.sock")


def load_cache_json(name: str, default):
    """The JSON file ``name`` of the cache folder, or ``default`` where it is missing or bad."""
    import json

    try:
        with open(os.path.join(cache_dir(), name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def save_cache_json(name: str, value) -> None:
    """Write ``value`` as the cache folder's JSON file ``name``, whole or not at all (a
    temporary file renamed over it); a cache that cannot be written is not an error."""
    import json

    path = os.path.join(cache_dir(), name)
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except OSError:
        pass


# ------------------------------------------------------------------------------- values
def parse_bytes(text, what: str = "chunk size") -> int:
    """'4096' -> 4096, '64Ki' / '64K' / '64KiB' -> 65536, '8M' -> 8 MiB (binary multiples)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SUFFIX:
        raise InvalidArgument(f"bad {what} {text!r}: expected e.g. 65536, 64Ki, 8Mi, 1Gi")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def bytes_option(flag: str):
    """An argparse ``type`` for a byte count with binary suffixes (a bad one: argparse's one-line
    usage error naming ``flag``)."""

    def parse(text: str) -> int:
        try:
            return parse_bytes(text, flag)
        except InvalidArgument as e:
            import argparse   # (here: a declaration's start-up imports no argparse)

            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = "byte count"
    return parse


def check_chunk(n: int) -> int:
    n = int(n)
    if not MIN_CHUNK <= n <= MAX_CHUNK:
        raise InvalidArgument(f"chunk size must be between {MIN_CHUNK} and {MAX_CHUNK} bytes, got {n}")
    return n


def check_depth(n: int) -> int:
    n = int(n)
    if not MIN_DEPTH <= n <= MAX_DEPTH:
        raise InvalidArgument(f"pipeline depth must be between {MIN_DEPTH} and {MAX_DEPTH}, got {n}")
    return n


# ------------------------------------------------------------------------------- the transfer layer
def host_threads_asked() -> int | None:
    """CIPHERGRID_HOST_THREADS where it is set (1..64), else None (the caller's own default)."""
    return transfer().host_threads if os.environ.get(ENV_HOST_THREADS) else None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; else every logical core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_host_threads() -> int:
    """Worker threads per side when CIPHERGRID_HOST_THREADS does not say: half the cores, 1..8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def default_pin_cache() -> int:
    """Bytes kept page-locked between runs when CIPHERGRID_PIN_CACHE does not say."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 16 << 30
    return min(ram // 4, 64 << 30)


def default_tuning_cache() -> str:
    """The tuning cache file when CIPHERGRID_TUNING_CACHE does not say."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ciphergrid", "tuning.json")


def _transfer_settings_class():
    """The TransferSettings dataclass (see :func:`__getattr__`)."""
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class TransferSettings:
        """The transfer layer's options (see the module docstring for each field's variable).
        ``TransferSettings()`` holds the defaults, :func:`transfer` what the environment says;
        ``dataclasses.replace(s, depth=2)`` changes one."""

        chunk_bytes: int | None = None
        depth: int | None = None
        tuning_cache: str = field(default_factory=default_tuning_cache)
        autotune: bool = True
        host_threads: int = field(default_factory=default_host_threads)
        pin_grain: int = PIN_GRAIN
        pin_cache: int = field(default_factory=default_pin_cache)
        mapped_lock: str = "none"
        stream_mmap: str = "1"
        prefault_min: int = PREFAULT_MIN

    TransferSettings.__module__, TransferSettings.__qualname__ = __name__, "TransferSettings"
    return TransferSettings


def __getattr__(name: str):
    """``TransferSettings`` (PEP 562): the class is made on its first use, so that the
    dataclasses import it needs is no part of every command's start-up; one class per process."""
    if name != "TransferSettings":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = globals().get(name)
    return cls if cls is not None else globals().setdefault(name, _transfer_settings_class())


def pin_cache_bytes() -> int:
    """``CIPHERGRID_PIN_CACHE`` (read now) or the default: the one option the end of every run
    reads (transfer.pinning), without the rest of ``transfer()`` (at the end of every AEAD batch:
    docs/benchmarks.md 0l)."""
    v = os.environ.get(ENV_PIN_CACHE)
    return max(0, parse_bytes(v, ENV_PIN_CACHE)) if v else default_pin_cache()


def transfer() -> TransferSettings:
    """The transfer layer's options from the environment (read now); a malformed value raises
    InvalidArgument naming its variable."""
    env = os.environ
    chunk = depth = None
    if env.get(ENV_CHUNK):
        chunk = check_chunk(parse_bytes(env[ENV_CHUNK], ENV_CHUNK))
    if env.get(ENV_DEPTH):
        try:
            depth = check_depth(int(env[ENV_DEPTH]))
        except ValueError:
            raise InvalidArgument(
                f"{ENV_DEPTH} must be an integer, got {env[ENV_DEPTH]!r}") from None
    threads = env.get(ENV_HOST_THREADS)
    if threads:
        try:
            threads = max(1, min(64, int(threads)))
        except ValueError:
            raise InvalidArgument(
                f"{ENV_HOST_THREADS} must be an integer, got {threads!r}") from None
    else:
        threads = default_host_threads()
    grain = env.get(ENV_PIN_GRAIN)
    grain = max(_PAGE, parse_bytes(grain, ENV_PIN_GRAIN)) if grain else PIN_GRAIN
    pin_cache = pin_cache_bytes()
    prefault = env.get(ENV_PREFAULT, "").strip()
    prefault = PREFAULT_MIN if not prefault else parse_bytes(prefault, ENV_PREFAULT)
    return __getattr__("TransferSettings")(
        chunk_bytes=chunk, depth=depth,
        tuning_cache=env.get(ENV_TUNING_CACHE) or default_tuning_cache(),
        autotune=env.get(ENV_AUTOTUNE, "1") != "0",
        host_threads=threads, pin_grain=grain, pin_cache=pin_cache,
        mapped_lock=env.get(ENV_MAPPED_LOCK, "none"),
        stream_mmap=env.get(ENV_STREAM_MMAP, "1"),
        prefault_min=prefault)


# ---- the engines' and devices' switches (for tests and troubleshooting) -------------------------
def runtime_disabled(runtime: str) -> bool:
    """``CIPHERGRID_NO_CUDA=1`` / ``CIPHERGRID_NO_OPENCL=1``: that runtime offers no device."""
    return os.environ.get(f"CIPHERGRID_NO_{runtime.upper()}") == "1"


def injected_faults() -> dict:
    """``CIPHERGRID_FAULT=SPEC:fail:BYTES`` or ``SPEC:hang:BYTES`` (several, comma-separated):
    the scheduler's engine SPEC raises, or stops, once it has run BYTES (engines/composite.py:
    the fault switch of the tests); ``mpi:RANK:fail|kill:BYTES``: an MPI worker rank fails, or
    is killed (ciphergrid/mpi.py).  Returns spec -> (what, bytes)."""
    out = {}
    for part in os.environ.get("CIPHERGRID_FAULT", "").split(","):
        part = part.strip()
        if not part:
            continue
        bits = part.rsplit(":", 2)
        kinds = ("fail", "hang", "kill") if bits[0].strip().lower().startswith("mpi:") else ("fail", "hang")
        if len(bits) != 3 or bits[1] not in kinds:
            raise InvalidArgument(f"CIPHERGRID_FAULT: {part!r} is not SPEC:fail:BYTES or SPEC:hang:BYTES "
                                  "(mpi:RANK:kill:BYTES for an MPI rank)")
        out[bits[0].strip().lower()] = (bits[1], parse_bytes(bits[2], "CIPHERGRID_FAULT"))
    return out


def scheduler_fence() -> str:
    """``CIPHERGRID_SCHED_FENCE=copy``: every range of a scheduled run is written into its
    worker's own buffer and copied into the output when committed (default ``direct``: straight
    into the output out of place; in place always fenced; engines/composite.py)."""
    v = os.environ.get("CIPHERGRID_SCHED_FENCE", "").strip().lower() or "direct"
    if v not in ("copy", "direct"):
        raise InvalidArgument(f"CIPHERGRID_SCHED_FENCE must be copy or direct, got {v!r}")
    return v


def openssl_through_pyca() -> bool:
    """``CIPHERGRID_NATIVE_BACKEND=cryptography``: the OpenSSL engine calls pyca/cryptography
    instead of libcrypto through ctypes."""
    return os.environ.get("CIPHERGRID_NATIVE_BACKEND", "").strip().lower() == "cryptography"


def openssl_c_loop() -> tuple[bool, str | None]:
    """(whether the OpenSSL engine may build its small C loop helper, the C compiler named by
    ``CC``); ``CIPHERGRID_NATIVE_LOOP=ctypes`` turns the helper off."""
    return (os.environ.get("CIPHERGRID_NATIVE_LOOP", "").strip().lower() != "ctypes",
            os.environ.get("CC"))


def one_blas_thread() -> None:
    """The command line's numpy starts one OpenBLAS thread, not one per core (unless the user set
    ``OPENBLAS_NUM_THREADS``): no command multiplies matrices, and OpenBLAS's threads spin for a
    while after numpy's import, taking a core from the other processes of a pipe
    (docs/benchmarks.md 0c, 'Start-up').  For the process of the CLI only, before numpy is
    imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size reads it (``COLUMNS``, else the terminal
    of standard output, else 80), without importing shutil (the command line's help formatter
    asks for the width at every command's start-up)."""
    try:
        cols = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            cols = 0
    return cols or 80


def icd_fixup() -> bool:
    """``CIPHERGRID_NO_ICD_FIXUP=1`` leaves the OpenCL loader's vendor list as the system has it."""
    return os.environ.get("CIPHERGRID_NO_ICD_FIXUP") != "1"
