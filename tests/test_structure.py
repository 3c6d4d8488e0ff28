"""The shape of the package (DESIGN.md): modes compared by no one but themselves, and no option
passed through the environment by our own code (import cycles: test_imports.py)."""

from __future__ import annotations

import re
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ciphergrid"


def test_modes_are_asked_not_compared():
    """Outside modes/ (and the independent oracle), nothing compares a mode's name."""
    names = "(ecb|cbc|ctr|xts|gcm)"
    pat = re.compile(rf"""mode(\.name)?\s*(==|!=)\s*["']{names}["']|mode(\.name)?\s+in\s+\(["']{names}["']""")
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("modes/", "testing/", "vectors")):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pat.search(line):
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert bad == []


def test_options_do_not_travel_through_the_environment():
    """Only the C libraries' own variables are set (the OpenCL loader's ICD list, PoCL's
    affinity, the command line's OpenBLAS thread count)."""
    bad = []
    for path in PKG.rglob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ\[[^]]+\]\s*=|os\.environ\.setdefault|os\.putenv", line):
                if ("OCL_ICD_VENDORS" not in line and "POCL_" not in line
                        and "OPENBLAS_NUM_THREADS" not in line):
                    bad.append(f"{path.relative_to(PKG)}:{i}: {line.strip()}")
    assert bad == []


def test_environment_is_read_in_settings_only():
    """Our own CIPHERGRID_* variables are read in settings.py alone (the OpenCL loader's own
    variables, and a passphrase the user names with --pass env:, are not options)."""
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel == "settings.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "os.environ" in line and "OCL_ICD_VENDORS" not in line and "POCL_" not in line:
                if rel == "keys.py":  # --pass env:VAR reads the variable the user named
                    continue
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert bad == []
