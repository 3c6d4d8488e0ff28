"""Find OpenCL drivers the ICD loader does not know about.

NVIDIA's OpenCL library (libnvidia-opencl.so.1) is often installed without an ICD registration
file (no /etc/OpenCL/vendors/nvidia.icd).  Before the first OpenCL call we build a vendors folder
holding the system's own entries (and any folder already named by OCL_ICD_VENDORS) plus one-line
.icd files for such libraries, and point OCL_ICD_VENDORS at it.  The PoCL that the pyopencl wheel
embeds is found by that wheel's loader whatever this variable says.
"""

from __future__ import annotations

import os
import threading

#: libraries known to implement an OpenCL platform, tried when not registered
KNOWN_DRIVERS = {
    "nvidia.icd": "libnvidia-opencl.so.1",
}

#: the system's vendors folder (the ICD loader's default)
SYSTEM_VENDORS = "/etc/OpenCL/vendors"

_done = False
#: held while the driver list is prepared: a caller meanwhile waits for it (its OpenCL calls
#: come after the list is set)
_PREPARING = threading.Lock()


def _loadable(lib: str) -> bool:
    import ctypes

    try:
        ctypes.CDLL(lib, mode=ctypes.RTLD_LOCAL)
        return True
    except OSError:
        return False


def _nvidia_present() -> bool:
    """Whether an NVIDIA GPU's device node exists (/dev/nvidia0, ...; WSL2's /dev/dxg): without
    one, NVIDIA's OpenCL library has nothing to drive, and nothing is loaded or written."""
    try:
        return any((n.startswith("nvidia") and n[6:].isdigit()) or n == "dxg"
                   for n in os.listdir("/dev"))
    except OSError:
        return False


def _icd_entries(folder) -> dict[str, str]:
    out = {}
    try:
        for f in sorted(folder.glob("*.icd")):
            try:
                out[f.name] = f.read_text().strip()
            except OSError:
                pass
    except OSError:
        pass
    return out


def prepare() -> str | None:
    """Set OCL_ICD_VENDORS so unregistered drivers are found; return the folder or None.

    Idempotent; does nothing when every known driver is already registered or absent.
    CIPHERGRID_NO_ICD_FIXUP=1 turns it off.
    """
    global _done
    from ..settings import icd_fixup

    if _done or not icd_fixup():
        return os.environ.get("OCL_ICD_VENDORS")
    with _PREPARING:
        if _done:
            return os.environ.get("OCL_ICD_VENDORS")
        try:
            return _prepare()
        finally:
            _done = True   # (once, whatever came of it)


def _prepare() -> str | None:
    if not _nvidia_present():   # (KNOWN_DRIVERS: NVIDIA's alone)
        return os.environ.get("OCL_ICD_VENDORS")
    from pathlib import Path

    existing = os.environ.get("OCL_ICD_VENDORS")
    sources: list[Path] = []
    if existing:
        p = Path(existing)
        sources.append(p if p.is_dir() else p.parent)
    sources.append(Path(SYSTEM_VENDORS))

    entries: dict[str, str] = {}
    for folder in sources:
        for name, lib in _icd_entries(folder).items():
            entries.setdefault(name, lib)
    if existing and Path(existing).is_file():  # a single .icd file given directly
        entries.setdefault(Path(existing).name, Path(existing).read_text().strip())

    registered = set(entries.values())
    unregistered = {name: lib for name, lib in KNOWN_DRIVERS.items()
                    if lib not in registered and name not in entries}
    if not unregistered:
        return existing
    # made by an earlier process: used as it is (loading NVIDIA's library only to test it took
    # most of `import ciphergrid` on a GPU host; an entry whose library has gone since is
    # skipped by the loader)
    folder = _vendors_folder({**entries, **unregistered}, make=False)
    if folder is None:
        missing = {name: lib for name, lib in unregistered.items() if _loadable(lib)}
        if not missing:
            return existing
        folder = _vendors_folder({**entries, **missing}, make=True)
    os.environ["OCL_ICD_VENDORS"] = folder
    return folder


def _vendors_folder(entries: dict[str, str], make: bool) -> str | None:
    """A folder of one-line .icd files, one per entry, in the cache folder and named by its
    contents: made once (``make``) and reused by every later process (not a new temporary
    folder per process, which nothing would remove); None where it is not there and not made."""
    import hashlib
    import tempfile

    from ..settings import cache_dir

    text = "".join(f"{name}\0{lib}\n" for name, lib in sorted(entries.items()))
    base = cache_dir()
    folder = os.path.join(base, "icd-" + hashlib.sha256(text.encode()).hexdigest()[:16])
    if os.path.isdir(folder):
        return folder
    if not make:
        return None
    tmp = tempfile.mkdtemp(prefix=".icd-", dir=base)
    for name, lib in entries.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(lib + "\n")
    try:
        os.rename(tmp, folder)      # (atomic: another process sees the whole folder or none)
    except OSError:                 # another process made it first
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    return folder
