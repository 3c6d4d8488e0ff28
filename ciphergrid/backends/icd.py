"""Find OpenCL drivers the ICD loader does not know about.

NVIDIA's OpenCL library (libnvidia-opencl.so.1) is often installed without an ICD registration
file (no /etc/OpenCL/vendors/nvidia.icd).  Before the first OpenCL call we build a vendors folder
holding the system's own entries (and any folder already named by OCL_ICD_VENDORS) plus one-line
.icd files for such libraries, and point OCL_ICD_VENDORS at it.  The PoCL that the pyopencl wheel
embeds is found by that wheel's loader whatever this variable says.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from pathlib import Path

#: libraries known to implement an OpenCL platform, tried when not registered
KNOWN_DRIVERS = {
    "nvidia.icd": "libnvidia-opencl.so.1",
}

_done = False


def _loadable(lib: str) -> bool:
    try:
        ctypes.CDLL(lib, mode=ctypes.RTLD_LOCAL)
        return True
    except OSError:
        return False


def _icd_entries(folder: Path) -> dict[str, str]:
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
    _done = True

    existing = os.environ.get("OCL_ICD_VENDORS")
    sources: list[Path] = []
    if existing:
        p = Path(existing)
        sources.append(p if p.is_dir() else p.parent)
    sources.append(Path("/etc/OpenCL/vendors"))

    entries: dict[str, str] = {}
    for folder in sources:
        for name, lib in _icd_entries(folder).items():
            entries.setdefault(name, lib)
    if existing and Path(existing).is_file():  # a single .icd file given directly
        entries.setdefault(Path(existing).name, Path(existing).read_text().strip())

    registered = set(entries.values())
    missing = {
        name: lib for name, lib in KNOWN_DRIVERS.items()
        if lib not in registered and name not in entries and _loadable(lib)
    }
    if not missing:
        return existing

    folder = Path(tempfile.mkdtemp(prefix="ciphergrid-icd-"))
    for name, lib in {**entries, **missing}.items():
        (folder / name).write_text(lib + "\n")
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return str(folder)
