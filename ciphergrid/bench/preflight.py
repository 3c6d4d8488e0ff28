"""What every benchmark suite checks before it starts, and the plain figures its tables print.

* :func:`check_devices`: each ``--device`` (and ``--sched-devices``) value names a device present,
  else one line and exit 2 (``DeviceNotFound``) before anything is measured;
* :func:`room`: how many bytes a file may take in a folder: its free space and, on a file
  system held in memory (tmpfs, ramfs), also the memory available (``/proc/meminfo``);
* :func:`fs_type`: the folder's file system as ``/proc/self/mountinfo`` names it (``ext4``, not
  the statfs magic's ``ext2/ext3``);
* :func:`host_rate`: a first measured rate (pyca AES-128-CTR, one core) for the estimates;
* :func:`size_text`, :func:`duration_text`, :func:`signed_ms`, :func:`opt`: the table's units.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import warnings

#: the device tokens every suite takes without naming one device
ALWAYS = ("all", "auto", "openssl", "native", "cpu")
#: file systems whose files are held in memory
RAM_FS = ("tmpfs", "ramfs", "shm")
#: the part of the available memory a benchmark's files may take on a RAM disk
RAM_SHARE = 0.5


def device_tokens(values) -> list[str]:
    """``--device a,b --device c`` -> ``[a, b, c]`` (lower case)."""
    return [t.strip().lower() for v in values or [] for t in str(v).split(",") if t.strip()]


def check_devices(api, args) -> None:
    """Raise ``DeviceNotFound`` (exit 2) for a ``--device``/``--sched-devices`` value that names
    no device present; ``gpu`` needs one GPU.  The engine's devices are listed only where a
    value names one that is not always there."""
    from ..errors import DeviceError, DeviceNotFound

    tokens = (device_tokens(getattr(args, "device", None))
              + device_tokens(getattr(args, "sched_devices", None)))
    tokens = [t for t in dict.fromkeys(tokens) if t not in ALWAYS]
    if not tokens:
        return
    try:
        devices = api.devices()
    except ImportError as e:
        raise DeviceError(f"the ciphergrid engine is not available: {e}") from None
    specs = [d.spec.lower() for d in devices]
    kinds = {d.kind for d in devices}
    for t in tokens:
        if t == "gpu":
            if "gpu" not in kinds:
                raise DeviceNotFound("no GPU present (see `ciphergrid devices`): nothing for "
                                     "--device gpu to measure")
            continue
        if not any(s == t or s.startswith(t + ":") for s in specs):
            raise DeviceNotFound(f"no device {t!r}; present: {', '.join(specs) or 'none'}")


# ------------------------------------------------------------------------- space and memory
def mem_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (None where it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return None


def fs_type(path: str) -> str:
    """The file system holding ``path`` as the kernel's mount table names it (``ext4``, ``xfs``,
    ``tmpfs``); ``?`` where it cannot be told."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return "?"
    want = f"{os.major(dev)}:{os.minor(dev)}"
    best, best_len = "?", -1
    real = os.path.realpath(path)
    with contextlib.suppress(OSError):
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                parts, tail = left.split(), right.split()
                if len(parts) < 5 or not tail or parts[2] != want:
                    continue
                mnt = parts[4].replace("\\040", " ")
                inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
                score = len(mnt) if inside else 0
                if score > best_len:
                    best, best_len = tail[0], score
    return best


def is_ram_fs(path: str) -> bool:
    return fs_type(path) in RAM_FS


def room(folder: str) -> tuple[int, str]:
    """The bytes a benchmark's files may take in ``folder`` and what bounds them: its free space,
    and on a RAM disk also :data:`RAM_SHARE` of the memory available (a RAM disk's free space is
    memory other processes need)."""
    free = shutil.disk_usage(folder).free
    if is_ram_fs(folder):
        mem = mem_available()
        if mem is not None and mem * RAM_SHARE < free:
            return int(mem * RAM_SHARE), (f"half the available memory ({size_text(mem)}: {folder} "
                                          "is a RAM disk)")
    return free, f"the free space of {folder} ({size_text(free)})"


def allocated(path: str) -> int:
    """The bytes a file's blocks take on its file system (a sparse file: fewer than its size)."""
    return os.stat(path).st_blocks * 512


def sparse_zeros(path: str, size: int) -> bool:
    """A file of ``size`` zero bytes, sparse where the file system allows; whether it is (its
    allocated blocks under 1 % of its size)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return allocated(path) <= size // 100


# ------------------------------------------------------------------------- estimates
_RATE: list[float] = []


def host_rate() -> float:
    """Bytes/s of AES-128-CTR on one core through pyca (measured once per process, in a small
    fraction of a second): the first measured rate the suites' estimates scale."""
    if _RATE:
        return _RATE[0]
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        _RATE.append(1e9)
        return _RATE[0]
    data = bytes(8 << 20)
    enc = Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor()
    enc.update(data[: 1 << 20])
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        enc.update(data)
        best = min(best, time.perf_counter() - t0)
    _RATE.append(len(data) / max(best, 1e-6))
    return _RATE[0]


def duration_text(seconds: float) -> str:
    """``~40 s``, ``~3 min``, ``~1.5 h``."""
    if seconds < 90:
        return f"~{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"~{round(seconds / 60)} min"
    return f"~{seconds / 3600:.1f} h"


# ------------------------------------------------------------------------- table units
def size_text(n: int | float) -> str:
    """Bytes in the largest binary unit that gives a number >= 1: ``16 B``, ``4 KiB``,
    ``1.20 GiB`` (three significant figures where the unit does not divide it)."""
    n = int(n)
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            if n % (1 << k) == 0:
                return f"{n >> k} {unit}"
            v = n / (1 << k)
            return f"{v:.3g} {unit}" if v >= 100 else f"{v:.2f} {unit}" if v < 10 else f"{v:.1f} {unit}"
    return f"{n} B"


def signed_ms(seconds: float) -> str:
    """A difference in ms with its one sign: ``+0.120 ms``, ``-0.063 ms``."""
    return f"{seconds * 1e3:+.3f} ms"


def opt(x, fmt: str = "{:.3f}") -> str:
    """A figure, or ``-`` where it is not defined (None, NaN)."""
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    return fmt.format(x)


@contextlib.contextmanager
def tdea_warnings_quiet():
    """pyca's deprecation of TripleDES unsaid while a suite deliberately runs TDEA (its oracle
    and its baseline); every other warning as before."""
    with warnings.catch_warnings():
        try:
            from cryptography.utils import CryptographyDeprecationWarning
        except ImportError:
            yield
            return
        warnings.filterwarnings("ignore", message=r".*TripleDES", category=CryptographyDeprecationWarning)
        yield
