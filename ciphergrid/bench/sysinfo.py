"""What the numbers were measured on: host, library and driver versions, GPU clocks and power limits.

Every probe is best effort: a probe that fails leaves its field null (or says why), it never stops
a benchmark.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata

from . import energy

_PACKAGES = ("ciphergrid", "numpy", "cryptography", "pyopencl", "pocl-binary-distribution",
             "cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "nvidia-ml-py", "matplotlib", "rich")


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _run(cmd: list[str], timeout: float = 10.0) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def physical_cores() -> int | None:
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    pairs = set()
    for block in text.split("\n\n"):
        phys = re.search(r"^physical id\s*:\s*(\d+)", block, re.M)
        core = re.search(r"^core id\s*:\s*(\d+)", block, re.M)
        if phys and core:
            pairs.add((phys.group(1), core.group(1)))
    return len(pairs) or None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def openssl_versions() -> dict:
    out: dict = {"cli": _run(["openssl", "version"])}
    try:
        from cryptography.hazmat.backends.openssl import backend

        out["cryptography_linked"] = backend.openssl_version_text()
    except Exception:
        out["cryptography_linked"] = None
    return out


def opencl_platforms() -> list[dict] | None:
    try:
        from ..backends.opencl import platforms  # prepares the ICD vendors folder first

        plats = platforms()
    except Exception:
        return None
    res = []
    for p in plats:
        try:
            devs = [{"name": d.name.strip(), "driver_version": d.driver_version,
                     "version": d.version} for d in p.get_devices()]
        except Exception:
            devs = []
        res.append({"name": p.name, "vendor": p.vendor, "version": p.version, "devices": devs})
    return res


def cuda_versions() -> dict | None:
    try:
        import cupy

        rt = cupy.cuda.runtime
        info = {"runtime": rt.runtimeGetVersion(), "driver": rt.driverGetVersion()}
        try:
            info["nvrtc"] = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
        except Exception:
            info["nvrtc"] = None
        return info
    except Exception:
        return None


def _nvml_str(v) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


def nvidia() -> dict | None:
    """Driver, CUDA driver version and per-GPU clocks/power limits (NVML, else nvidia-smi)."""
    nv = energy.nvml()
    if nv is not None:
        try:
            info = {"source": "nvml", "driver": _nvml_str(nv.nvmlSystemGetDriverVersion())}
            try:
                v = nv.nvmlSystemGetCudaDriverVersion()
                info["cuda_driver"] = f"{v // 1000}.{v % 1000 // 10}"
            except Exception:
                info["cuda_driver"] = None
            info["gpus"] = [nvml_gpu(nv, nv.nvmlDeviceGetHandleByIndex(i))
                            for i in range(nv.nvmlDeviceGetCount())]
            return info
        except Exception:
            pass
    out = _run(["nvidia-smi", "--format=csv,noheader,nounits",
                "--query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,"
                "power.limit,power.max_limit,temperature.gpu"])
    if not out:
        return None
    gpus = []
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 9:
            continue
        gpus.append({"index": _num(f[0]), "name": f[1], "pci_bus_id": f[2], "sm_clock_mhz": _num(f[4]),
                     "max_sm_clock_mhz": _num(f[5]), "power_limit_w": _num(f[6]),
                     "max_power_limit_w": _num(f[7]), "temperature_c": _num(f[8])})
    drv = out.splitlines()[0].split(",")[3].strip() if out else None
    return {"source": "nvidia-smi", "driver": drv, "cuda_driver": None, "gpus": gpus}


def _num(s: str):
    try:
        v = float(s)
        return int(v) if v.is_integer() else v
    except ValueError:
        return None


def nvml_gpu(nv, h) -> dict:
    def q(fn, *a, scale=1.0):
        try:
            v = getattr(nv, fn)(h, *a)
            return v / scale if scale != 1.0 else v
        except Exception:
            return None

    clk = getattr(nv, "NVML_CLOCK_SM", 1)
    pci = q("nvmlDeviceGetPciInfo")
    return {
        "index": q("nvmlDeviceGetIndex"),
        "name": _nvml_str(q("nvmlDeviceGetName")),
        "pci_bus_id": _nvml_str(pci.busId) if pci is not None else None,
        "sm_clock_mhz": q("nvmlDeviceGetClockInfo", clk),
        "max_sm_clock_mhz": q("nvmlDeviceGetMaxClockInfo", clk),
        "power_limit_w": q("nvmlDeviceGetEnforcedPowerLimit", scale=1e3),
        "default_power_limit_w": q("nvmlDeviceGetPowerManagementDefaultLimit", scale=1e3),
        "temperature_c": q("nvmlDeviceGetTemperature", 0),
        "energy_counter": q("nvmlDeviceGetTotalEnergyConsumption") is not None,
    }


def gpu_info(dev) -> dict | None:
    """NVML facts for one ciphergrid DeviceInfo (None if it is no NVIDIA GPU NVML can see)."""
    h = energy.nvml_handle(dev)
    return nvml_gpu(energy.nvml(), h) if h is not None else None


def sm_clock_mhz(dev) -> float | None:
    """Current SM clock of an NVIDIA GPU via NVML (None otherwise)."""
    h = energy.nvml_handle(dev)
    if h is None:
        return None
    nv = energy.nvml()
    try:
        return float(nv.nvmlDeviceGetClockInfo(h, getattr(nv, "NVML_CLOCK_SM", 1)))
    except Exception:
        return None


def device_info(dev) -> dict:
    """A JSON-ready description of a ciphergrid DeviceInfo, with NVML facts when present."""
    d = {k: getattr(dev, k, None) for k in
         ("spec", "runtime", "name", "kind", "compute_units", "memory", "clock_mhz", "vendor")}
    extra = getattr(dev, "extra", None) or {}
    d["extra"] = {str(k): (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                  for k, v in extra.items()}
    d["nvml"] = gpu_info(dev)
    d["energy"] = energy.meter_for(dev).method if d["kind"] in ("gpu", "cpu") else "unavailable"
    return d


def ciphergrid_source() -> dict:
    """Version of ciphergrid, and the git commit when it runs from a checkout (read-only git)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    info: dict = {"version": _version("ciphergrid"), "git_commit": None, "git_dirty": None}
    if os.path.isdir(os.path.join(root, ".git")):
        info["git_commit"] = _run(["git", "-C", root, "rev-parse", "HEAD"])
        st = _run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])
        info["git_dirty"] = None if st is None else bool(st)
    return info


def collect() -> dict:
    """Everything about the host and its software that a reader needs to reproduce a number."""
    return {
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_logical": os.cpu_count(),
        "cpu_physical": physical_cores(),
        "cpu_usable": usable_cpus(),
        "memory_bytes": host_memory(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "ciphergrid": ciphergrid_source(),
        "packages": {p: v for p in _PACKAGES if (v := _version(p)) is not None},
        "openssl": openssl_versions(),
        "opencl": opencl_platforms(),
        "cuda": cuda_versions(),
        "nvidia": nvidia(),
        "nvcc": (_run(["nvcc", "--version"]) or "").splitlines()[-1:] or None,
        "rapl": energy.rapl_status(),
    }
