"""A CPU OpenCL compiler that aborts the process (an assertion inside PoCL) becomes a DeviceError:
every new program is built first in a child process (backends/opencl.py _survives_build)."""

from __future__ import annotations

import pytest

from ciphergrid.errors import DeviceError


def _cpu_backend():
    from conftest import all_devices

    from ciphergrid.devices import backend

    info = next((d for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
    if info is None:
        pytest.skip("no OpenCL CPU device (or none selected by CIPHERGRID_TEST_DEVICES)")
    return backend(info)


def test_a_compiler_crash_is_a_device_error(monkeypatch, tmp_path):
    from ciphergrid.backends import opencl

    be = _cpu_backend()
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(opencl, "_CHILD", "import os; os.abort()")
    src = "__kernel void guard_probe(__global uint *a) { a[get_global_id(0)] += 7u; }"
    with pytest.raises(DeviceError, match="crashed building"):
        be.build(src, key=("guard-test", 1))
    assert not (tmp_path / "opencl-builds").exists() or not any((tmp_path / "opencl-builds").iterdir())


def test_a_build_that_survives_is_remembered(monkeypatch, tmp_path):
    from ciphergrid.backends import opencl

    be = _cpu_backend()
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path))
    src = "__kernel void guard_probe(__global uint *a) { a[get_global_id(0)] += 9u; }"
    be.build(src, key=("guard-test", 2))
    assert len(list((tmp_path / "opencl-builds").iterdir())) == 1
    # the second time (another key, same source): no child at all
    monkeypatch.setattr(opencl, "_CHILD", "import os; os.abort()")
    be.build(src, key=("guard-test", 3))
