"""No import cycles in ciphergrid (scripts/import_check.py): none in the static graph of every
import statement (deferred ones included), none taken at import time, no module left partially
initialised, whichever module is imported first."""

from __future__ import annotations

import os
import subprocess
import sys

import ciphergrid

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ciphergrid.__file__)))


def test_no_import_cycles():
    p = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "scripts", "import_check.py")],
                       capture_output=True, text=True, timeout=300, cwd=PKG_ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no import cycles" in p.stdout


def test_transfer_layer_reads_no_environment():
    """The transfer layer takes its options as objects; only ciphergrid.settings reads them."""
    base = os.path.join(PKG_ROOT, "ciphergrid", "transfer")
    for f in sorted(os.listdir(base)):
        if f.endswith(".py"):
            text = open(os.path.join(base, f), encoding="utf-8").read()
            assert "os.environ" not in text and "getenv" not in text, f
