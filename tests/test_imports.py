"""No import cycles in ciphergrid (scripts/dev/import_check.py): none in the static graph of every
import statement (deferred ones included), none taken at import time, no module left partially
initialised, whichever module is imported first."""

from __future__ import annotations

import os
import subprocess
import sys

import ciphergrid

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ciphergrid.__file__)))


def test_no_import_cycles():
    p = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "scripts", "dev", "import_check.py")],
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


def test_lazy_package_names():
    """``import ciphergrid`` imports no numpy; its public names and submodules load on first use;
    ``ciphergrid.devices`` stays the function after the submodule of that name is imported."""
    code = ("import sys, ciphergrid\n"
            "assert 'numpy' not in sys.modules\n"
            "assert ciphergrid.registry.lookup('aes-128-ctr').name == 'aes-128-ctr'\n"
            "import ciphergrid.devices, ciphergrid.route\n"
            "assert callable(ciphergrid.devices) and ciphergrid.devices()\n"
            "assert ciphergrid.encrypt(b'x' * 16, 'aes-128-ecb', bytes(16), device='native')\n"
            "try:\n    ciphergrid.no_such_name\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no AttributeError')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_icd_vendors_folder_made_once_and_reused(tmp_path, monkeypatch):
    """backends/icd.py: where NVIDIA's OpenCL library is present but unregistered, the vendors
    folder (the system's entries + the missing one) is made once in the cache folder and reused
    by later processes without loading the library again; no GPU node: nothing made."""
    from ciphergrid.backends import icd

    system = tmp_path / "vendors"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(system))
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CIPHERGRID_NO_ICD_FIXUP", raising=False)
    monkeypatch.setattr(icd, "SYSTEM_VENDORS", str(tmp_path / "no-system-vendors"))
    monkeypatch.setattr(icd, "_done", False)
    monkeypatch.setattr(icd, "_nvidia_present", lambda: False)
    assert icd.prepare() == str(system) and not (tmp_path / "cache").exists()

    loads = []
    monkeypatch.setattr(icd, "_nvidia_present", lambda: True)
    monkeypatch.setattr(icd, "_loadable", lambda lib: loads.append(lib) or True)
    folders = []
    for _ in range(2):   # (two processes: the second finds the folder)
        monkeypatch.setattr(icd, "_done", False)
        monkeypatch.setenv("OCL_ICD_VENDORS", str(system))
        folders.append(icd.prepare())
    assert folders[0] == folders[1] and loads == ["libnvidia-opencl.so.1"]
    made = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert made == [os.path.basename(folders[0])]           # no temporary folder left behind
    assert sorted(os.listdir(folders[0])) == ["nvidia.icd", "pocl.icd"]
    assert open(os.path.join(folders[0], "nvidia.icd")).read() == "libnvidia-opencl.so.1\n"
    assert os.environ["OCL_ICD_VENDORS"] == folders[0]
