"""OpenCL backend (PyOpenCL): PoCL on any CPU, NVIDIA, AMD and Intel GPUs."""

from __future__ import annotations

import os
import re
import threading

import numpy as np

from ..errors import DeviceError, DeviceNotFound
from . import icd
from .base import Backend, DeviceInfo, Program

_cl = None


def cl():
    """Import pyopencl once, after the ICD vendors folder is prepared."""
    global _cl
    if _cl is None:
        icd.prepare()
        # keep PoCL quiet and let it use every core
        os.environ.setdefault("POCL_AFFINITY", "0")
        import pyopencl

        _cl = pyopencl
    return _cl


def platforms() -> list:
    """OpenCL platforms in a stable order (by name), whatever order the ICD loader finds them in:
    ``opencl:P:N`` must name the same device in every process."""
    return sorted(cl().get_platforms(),
                  key=lambda p: (p.name.strip(), p.vendor.strip(), p.version.strip()))


_PROBE_SRC = "__kernel void cg_probe(__global uint *a) { a[get_global_id(0)] ^= 1u; }"


def _compiles(plat, dev) -> bool:
    """Whether a CPU device's compiler builds a kernel at all.  PoCL's LLVM does not know every
    host CPU (the PoCL in the pyopencl wheel, LLVM 14, refuses Zen 5 as "unknown target CPU
    'generic'", while a system PoCL on the same host works): such a device is not offered.
    The answer is cached on disk per (platform version, device, driver), so only the first run
    on a machine pays for the probe."""
    from ..settings import load_cache_json, save_cache_json

    key = "|".join((plat.version.strip(), dev.name.strip(), dev.driver_version.strip()))
    known = load_cache_json("opencl-probe.json", {})
    if key in known:
        return bool(known[key])
    c = cl()
    try:
        c.Program(c.Context([dev]), _PROBE_SRC).build()
        ok = True
    except Exception:
        ok = False
    known[key] = ok
    save_cache_json("opencl-probe.json", known)
    return ok


def _kind(dev) -> str:
    t = dev.type
    c = cl()
    if t & c.device_type.GPU:
        return "gpu"
    if t & c.device_type.CPU:
        return "cpu"
    return "accelerator"


def enumerate_devices() -> list[DeviceInfo]:
    try:
        plats = platforms()
    except Exception:  # no ICD at all, or pyopencl missing: no OpenCL devices
        return []
    out = []
    for p, plat in enumerate(plats):
        try:
            devs = plat.get_devices()
        except Exception:
            continue
        for d, dev in enumerate(devs):
            if _kind(dev) == "cpu" and not _compiles(plat, dev):
                continue
            extra = {"driver": dev.driver_version, "opencl": dev.version}
            out.append(DeviceInfo(
                spec=f"opencl:{p}:{d}", runtime="opencl", name=dev.name.strip(), kind=_kind(dev),
                compute_units=int(dev.max_compute_units), memory=int(dev.global_mem_size),
                vendor=dev.vendor.strip(), platform=plat.name.strip(),
                clock_mhz=int(dev.max_clock_frequency) or None, extra=extra,
            ))
    return out


def buffer_root(buf) -> tuple:
    """(the buffer ``buf`` is a sub-buffer of, or ``buf``; ``buf``'s offset in it)."""
    c = cl()
    parent = buf.get_info(c.mem_info.ASSOCIATED_MEMOBJECT)
    if parent is None:
        return buf, 0
    return parent, int(buf.get_info(c.mem_info.OFFSET))


class OpenCLBackend(Backend):
    def __init__(self, info: DeviceInfo):
        c = cl()
        _, p, d = info.spec.split(":")
        try:
            self.device = platforms()[int(p)].get_devices()[int(d)]
        except (IndexError, ValueError):
            raise DeviceNotFound(f"no OpenCL device {info.spec}") from None
        self.info = info
        self.ctx = c.Context([self.device])
        self._default = self.queue()
        self._programs: dict = {}
        self._lock = threading.Lock()
        self.local_size = min(256, int(self.device.max_work_group_size))

    # -- compilation -------------------------------------------------------------------------
    def build(self, source: str, key: tuple, *, local_size=None, max_registers=None):
        with self._lock:
            prg = self._programs.get(key)
            if prg is None:
                c = cl()
                opts = ["-cl-std=CL1.2"]
                if "nvidia" in self.info.platform.lower():
                    opts.append("-cl-nv-verbose")
                    if max_registers:
                        opts.append(f"-cl-nv-maxrregcount={int(max_registers)}")
                try:
                    built = c.Program(self.ctx, source).build(options=opts)
                except c.Error as e:
                    raise DeviceError(f"OpenCL build failed on {self.info}: {e}") from None
                prg = self._programs[key] = Program(built, lambda p, name: cl().Kernel(p, name),
                                                    local_size)
            return prg

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        c = cl()
        try:
            return c.Buffer(self.ctx, c.mem_flags.READ_WRITE, max(int(nbytes), 16))
        except c.Error as e:
            raise DeviceError(f"cannot allocate {nbytes} bytes on {self.info}: {e}") from None

    def pinned(self, nbytes: int) -> np.ndarray:
        c = cl()
        buf = c.Buffer(self.ctx, c.mem_flags.READ_WRITE | c.mem_flags.ALLOC_HOST_PTR, max(int(nbytes), 16))
        arr, _ = c.enqueue_map_buffer(self._default, buf, c.map_flags.READ | c.map_flags.WRITE,
                                      0, (max(int(nbytes), 16),), np.uint8, is_blocking=True)
        return arr[:nbytes]

    @property
    def view_align(self) -> int:
        return max(16, int(self.device.mem_base_addr_align) // 8)

    def view(self, buf, offset: int, nbytes: int):
        return buf.get_sub_region(int(offset), max(int(nbytes), 1))

    def in_place(self, arr, pad: int = 0, apart=None) -> bool:
        # a buffer of this context (a resident AEAD job's texts: engines.device.aead_resident)
        # at an aligned offset of the buffer it is part of; ``pad`` bytes past it only where
        # they lie inside it (an OpenCL kernel may not read past its buffer argument)
        c = cl()
        if not isinstance(arr, c.Buffer) or arr.get_info(c.mem_info.CONTEXT) != self.ctx:
            return False
        root, o = buffer_root(arr)
        if pad or o % self.view_align:
            return False
        if isinstance(apart, c.Buffer):
            other, a = buffer_root(apart)
            if other.int_ptr == root.int_ptr and a < o + arr.size and o < a + apart.size:
                return False
        return True

    def host_transfer_mode(self) -> str:
        # a CPU device (PoCL) reads host memory in place; a GPU needs pinned staging
        return "any" if self.info.kind == "cpu" else "staging"

    def zero(self, buf, queue=None, *, wait: bool = True) -> None:
        c = cl()
        q = queue or self._default
        c.enqueue_fill_buffer(q, buf, np.uint8(0), 0, buf.size)
        if wait:
            q.finish()

    # -- queues, transfers, launches ---------------------------------------------------------------
    def queue(self):
        c = cl()
        return c.CommandQueue(self.ctx, self.device,
                              properties=c.command_queue_properties.PROFILING_ENABLE)

    @property
    def default_queue(self):
        return self._default

    def after(self, queue, events) -> None:
        if events:
            cl().enqueue_barrier(queue or self._default, wait_for=list(events))

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        if not isinstance(host, np.ndarray):   # (a device buffer: a copy on the device)
            return cl().enqueue_copy(queue or self._default, buf, host, dst_offset=offset,
                                     byte_count=host.size, wait_for=wait_for)
        return cl().enqueue_copy(queue or self._default, buf, host, dst_offset=offset,
                                 is_blocking=False, wait_for=wait_for)

    def download(self, host, buf, queue=None, *, offset=0, wait_for=None, record=True):
        if not isinstance(host, np.ndarray):   # (a device buffer: a copy on the device)
            return cl().enqueue_copy(queue or self._default, host, buf, src_offset=offset,
                                     byte_count=host.size, wait_for=wait_for)
        return cl().enqueue_copy(queue or self._default, host, buf, src_offset=offset,
                                 is_blocking=False, wait_for=wait_for)

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        c = cl()
        k = program.kernel(name)
        local = self.group_size(program)
        glob = -(-max(int(items), 1) // local) * local
        k.set_args(*args)
        try:
            return c.enqueue_nd_range_kernel(queue or self._default, k, (glob,), (local,),
                                             wait_for=wait_for)
        except c.Error as e:
            raise DeviceError(f"kernel {name} failed on {self.info}: {e}") from None

    def marker(self, queue=None):
        return cl().enqueue_marker(queue or self._default)

    def wait(self, event) -> None:
        event.wait()

    def query(self, event) -> bool | None:
        try:
            return event.command_execution_status == cl().command_execution_status.COMPLETE
        except Exception:
            return None

    def finish(self, queue=None) -> None:
        (queue or self._default).finish()

    def elapsed(self, start_event, end_event) -> float:
        return (end_event.profile.end - start_event.profile.start) * 1e-9

    def kernel_resources(self, program, name: str) -> dict:
        c = cl()
        k = program.kernel(name)
        info = c.kernel_work_group_info
        res = {
            "work_group_size": self.group_size(program),
            "local_mem_bytes": int(k.get_work_group_info(info.LOCAL_MEM_SIZE, self.device)),
            "private_mem_bytes": int(k.get_work_group_info(info.PRIVATE_MEM_SIZE, self.device)),
            "registers_per_item": None,
        }
        try:  # NVIDIA prints "Used N registers" per function with -cl-nv-verbose
            log = program.native.get_build_info(self.device, c.program_build_info.LOG)
            m = re.search(rf"Function properties for {name}.*?Used (\d+) registers", log, re.S)
            if m is None:
                m = re.search(rf"Compiling entry function '{name}'.*?Used (\d+) registers", log, re.S)
            if m:
                res["registers_per_item"] = int(m.group(1))
        except Exception:
            pass
        return res
