"""Device discovery and the device specification language.

Specs: ``auto`` (the fastest engine for each request: decided by ``route``), ``gpu`` (first GPU: CUDA if present,
else an OpenCL GPU), ``cpu`` (first OpenCL CPU device, e.g. PoCL: our kernels on the CPU),
``native`` (OpenSSL on every core), ``opencl`` / ``opencl:P`` / ``opencl:P:N``, ``cuda`` / ``cuda:N``;
and the devices of engine kinds registered with their own (registry.register_engine_kind), by
spec or by runtime.

What discovery finds is kept by the runtime (``Runtime.devices``): enumerated once per device
runtime and :class:`ciphergrid.runtime.Runtime`.
"""

from __future__ import annotations

import glob
import sys

from .backends.base import DeviceInfo
from .errors import DeviceNotFound, InvalidArgument
from .settings import runtime_disabled


def _found():
    from .runtime import current

    return current().devices


def _runtime_devices(runtime: str) -> tuple[DeviceInfo, ...]:
    """The devices of one device runtime, enumerated once per :class:`Runtime` (each device
    runtime's start-up is a large part of a command's: a spec that names one does not pay for
    the others)."""
    found = _found()
    got = found.by_runtime.get(runtime)
    if got is None:
        with found.lock:
            got = found.by_runtime.get(runtime)
            if got is None:
                got = found.by_runtime[runtime] = _enumerate(runtime)
    return got


def _enumerate(runtime: str) -> tuple[DeviceInfo, ...]:
    if runtime == "native":
        from .engines import openssl

        return (openssl.device_info(),)
    if runtime_disabled(runtime):
        return ()
    if runtime == "cuda":
        from .backends import cuda

        return tuple(cuda.enumerate_devices())
    from .backends import opencl

    return tuple(opencl.enumerate_devices())


def all_devices() -> tuple[DeviceInfo, ...]:
    return (_runtime_devices("cuda") + _runtime_devices("opencl") + _runtime_devices("native")
            + _registered())


def _registered() -> tuple[DeviceInfo, ...]:
    """The devices of engine kinds registered with their own (registry.register_engine_kind)."""
    from .registry import registered_devices

    return tuple(registered_devices())


def devices() -> list[DeviceInfo]:
    """Every device present: CUDA GPUs, OpenCL devices of every platform, and the native engine."""
    return list(all_devices())


#: device nodes of GPUs on Linux: NVIDIA's driver, AMD's compute driver, any DRM render node, WSL2's GPU
GPU_NODES = ("/dev/nvidia[0-9]*", "/dev/kfd", "/dev/dri/renderD*", "/dev/dxg")


def gpu_nodes_present() -> bool:
    """Whether this machine shows a GPU at all (on Linux: one of GPU_NODES exists; elsewhere:
    assumed; looked at once per runtime).  Without one, the automatic choice starts no GPU
    runtime (no PyOpenCL, no CuPy import in a CPU-only command's start-up)."""
    found = _found()
    if found.gpu_nodes is None:
        found.gpu_nodes = (not sys.platform.startswith("linux")
                           or any(glob.glob(p) for p in GPU_NODES))
    return found.gpu_nodes


def first_gpu() -> DeviceInfo | None:
    """The first GPU: CUDA before OpenCL (a CUDA GPU present: no OpenCL start-up); None at once
    on a machine with no GPU device node."""
    if not gpu_nodes_present():
        return None
    for runtime in ("cuda", "opencl"):
        for d in _runtime_devices(runtime):
            if d.kind == "gpu":
                return d
    return None


def first_cpu() -> DeviceInfo | None:
    """The first OpenCL CPU device (PoCL: our kernels on the host's cores)."""
    return next((d for d in _runtime_devices("opencl") if d.kind == "cpu"), None)


def resolve(spec: str) -> DeviceInfo:
    """Turn an explicit device spec into one DeviceInfo (or raise DeviceNotFound).  ``auto`` is
    decided per request by ``route``, not here.  (Answers are kept: every call of the API
    resolves its device.)"""
    s = (spec or "").strip().lower()
    if s == "service" or s.startswith("service:"):   # (the remote kind's: its path as written)
        import importlib   # (on use, as route imports it: it is the service's client)

        return importlib.import_module(".engines.remote", __package__).info_of(spec)
    for d in _registered():   # (a registered kind's devices: asked each time, never kept)
        if s == d.spec or s == d.runtime:
            return d
    found = _found()
    got = found.resolved.get(s)
    if got is None:
        got = _resolve(s)
        with found.lock:
            if len(found.resolved) >= 64:
                found.resolved.clear()
            found.resolved[s] = got
    return got


def _resolve(spec: str) -> DeviceInfo:
    parts = spec.split(":")
    head = parts[0]
    if head == "native" and len(parts) == 1:
        return _runtime_devices("native")[0]
    if head == "gpu" and len(parts) == 1:
        d = first_gpu()
        if d is None:
            raise DeviceNotFound("no GPU found (see `ciphergrid devices`)")
        return d
    if head == "cpu" and len(parts) == 1:
        d = first_cpu()
        if d is None:
            raise DeviceNotFound("no OpenCL CPU device found (install your system's PoCL)")
        return d
    if head in ("opencl", "cuda"):
        cands = list(_runtime_devices(head))
        if len(parts) > 1:
            prefix = spec + ":"
            cands = [d for d in cands if d.spec == spec or d.spec.startswith(prefix)]
        if not cands:
            raise DeviceNotFound(f"no device matches {spec!r}; present: "
                                 + ", ".join(d.spec for d in all_devices()))
        return cands[0]
    if head == "auto":
        raise InvalidArgument("'auto' is chosen per request (ciphergrid.route), not resolved alone")
    raise InvalidArgument(
        f"bad device spec {spec!r}; expected auto, all, cpu, gpu, native, opencl[:P[:N]], cuda[:N] "
        "or a comma-separated list of them (cuda:0,native)")


def is_multi(device: str | None) -> bool:
    """Whether a device spec names several engines: ``all`` or a comma-separated list."""
    d = (device or "").strip().lower()
    return d == "all" or "," in d


def member_specs(device: str) -> list[str]:
    """The engines a multi-device spec names: ``all`` = every GPU (a CUDA device, not also its
    OpenCL view) and the host's CPU engines (``native``, ``cpu``: ``route`` keeps the one that
    fits each request); a list as written."""
    d = device.strip().lower()
    if d != "all":
        specs = [s.strip() for s in d.split(",") if s.strip()]
        if not specs or len(set(specs)) != len(specs):
            raise InvalidArgument(f"bad device list {device!r}: name each device once")
        return specs
    out = []
    if gpu_nodes_present():
        cuda = [x for x in _runtime_devices("cuda") if x.kind == "gpu"]
        out += [x.spec for x in cuda]
        if not cuda:
            out += [x.spec for x in _runtime_devices("opencl") if x.kind == "gpu"]
    return out + ["native", "cpu"]


def check_spec(spec: str | None) -> None:
    """Raise now for a spec that names no device present (``auto`` and ``all`` always find
    one; a list: each of its devices)."""
    if spec is None:
        return
    s = spec.strip().lower()
    if s in ("auto", "all"):
        return
    if "," in s:
        for part in member_specs(s):
            resolve(part)
        return
    resolve(s)


def backend(info: DeviceInfo):
    """The backend object of a device (one per device and runtime: ``runtime.current()``)."""
    from .runtime import current

    rt = current()
    with rt.lock:
        b = rt.backends.get(info.spec)
        if b is None:
            if info.runtime == "opencl":
                from .backends.opencl import OpenCLBackend

                b = OpenCLBackend(info)
            elif info.runtime == "cuda":
                from .backends.cuda import CudaBackend

                b = CudaBackend(info)
            else:
                raise InvalidArgument(f"{info.spec} has no kernel backend")
            b.runtime = rt   # (what hangs off it is this runtime's: its pin cache)
            rt.backends[info.spec] = b
        return b
