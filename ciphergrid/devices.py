"""Device discovery and the device specification language.

Specs: ``auto`` (fastest engine for the cipher and size), ``gpu`` (first GPU: CUDA if present,
else an OpenCL GPU), ``cpu`` (first OpenCL CPU device, e.g. PoCL: our kernels on the CPU),
``native`` (OpenSSL on every core), ``opencl`` / ``opencl:P`` / ``opencl:P:N``, ``cuda`` / ``cuda:N``.
"""

from __future__ import annotations

import functools
import os
import threading

from .backends.base import DeviceInfo
from .errors import DeviceNotFound, InvalidArgument

#: below this many bytes a GPU launch costs more than OpenSSL on the host
AUTO_GPU_MIN_BYTES = 1 << 20


def _native_info() -> DeviceInfo:
    from .backends import native

    try:
        ver = native.openssl_version()
    except Exception:
        ver = "OpenSSL"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return DeviceInfo(spec="native", runtime="native", name=f"{ver} ({_cpu_name()})", kind="cpu",
                      compute_units=os.cpu_count() or 1, memory=int(mem), vendor="OpenSSL",
                      platform=getattr(native, "BACKEND_NAME", "libcrypto"))


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


@functools.lru_cache(maxsize=None)
def _runtime_devices(runtime: str) -> tuple[DeviceInfo, ...]:
    """The devices of one runtime, enumerated once per process (each runtime's start-up costs
    0.1-0.2 s: a spec that names one runtime does not pay for the others)."""
    if runtime == "native":
        return (_native_info(),)
    if os.environ.get(f"CIPHERGRID_NO_{runtime.upper()}") == "1":
        return ()
    if runtime == "cuda":
        from .backends import cuda

        return tuple(cuda.enumerate_devices())
    from .backends import opencl

    return tuple(opencl.enumerate_devices())


def all_devices() -> tuple[DeviceInfo, ...]:
    return _runtime_devices("cuda") + _runtime_devices("opencl") + _runtime_devices("native")


def devices() -> list[DeviceInfo]:
    """Every device present: CUDA GPUs, OpenCL devices of every platform, and the native engine."""
    return list(all_devices())


def resolve(spec: str, cipher_name: str | None = None, nbytes: int | None = None) -> DeviceInfo:
    """Turn a device spec into one DeviceInfo (or raise DeviceNotFound)."""
    spec = (spec or "auto").strip().lower()
    parts = spec.split(":")
    head = parts[0]
    if head in ("cuda", "opencl", "native"):
        devs = _runtime_devices(head)
    elif head in ("auto", "gpu") and (nbytes is None or nbytes >= AUTO_GPU_MIN_BYTES or head == "gpu") \
            and _runtime_devices("cuda"):
        devs = _runtime_devices("cuda")  # a CUDA GPU is the answer: no OpenCL start-up
    else:
        devs = all_devices()
    by_spec = {d.spec: d for d in devs}
    if spec in by_spec:
        return by_spec[spec]
    if head == "auto":
        gpus = [d for d in devs if d.kind == "gpu"]
        cuda = [d for d in gpus if d.runtime == "cuda"]
        if gpus and (nbytes is None or nbytes >= AUTO_GPU_MIN_BYTES):
            return (cuda or gpus)[0]
        if _native_has(cipher_name):
            return by_spec["native"]
        cpus = [d for d in devs if d.runtime == "opencl"]
        if cpus:
            return cpus[0]
        if gpus:
            return (cuda or gpus)[0]
        raise DeviceNotFound("no device can run this cipher")
    if head == "gpu":
        gpus = [d for d in devs if d.kind == "gpu"]
        cuda = [d for d in gpus if d.runtime == "cuda"]
        if not gpus:
            raise DeviceNotFound("no GPU found (see `ciphergrid devices`)")
        return (cuda or gpus)[0]
    if head == "cpu":
        cpus = [d for d in devs if d.runtime == "opencl" and d.kind == "cpu"]
        if not cpus:
            raise DeviceNotFound("no OpenCL CPU device found (install pocl-binary-distribution)")
        return cpus[0]
    if head in ("opencl", "cuda"):
        cands = [d for d in devs if d.runtime == head]
        if len(parts) > 1:
            prefix = ":".join(parts) + ":"
            cands = [d for d in cands if d.spec == spec or d.spec.startswith(prefix)]
        if not cands:
            raise DeviceNotFound(f"no device matches {spec!r}; present: "
                                 + ", ".join(d.spec for d in all_devices()))
        return cands[0]
    raise InvalidArgument(
        f"bad device spec {spec!r}; expected auto, cpu, gpu, native, opencl[:P[:N]] or cuda[:N]")


def _native_has(cipher_name: str | None) -> bool:
    if cipher_name is None:
        return True
    from .registry import lookup

    return lookup(cipher_name).cipher.name in NATIVE_CIPHERS


#: block ciphers the native (OpenSSL) engine runs
NATIVE_CIPHERS = {"aes"}

_backends: dict[str, object] = {}
_lock = threading.Lock()


def backend(info: DeviceInfo):
    """The (cached) backend object of a device."""
    with _lock:
        b = _backends.get(info.spec)
        if b is None:
            if info.runtime == "opencl":
                from .backends.opencl import OpenCLBackend

                b = OpenCLBackend(info)
            elif info.runtime == "cuda":
                from .backends.cuda import CudaBackend

                b = CudaBackend(info)
            else:
                raise InvalidArgument(f"{info.spec} has no kernel backend")
            _backends[info.spec] = b
        return b
