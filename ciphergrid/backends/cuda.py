"""CUDA backend (CuPy RawModule / NVRTC): the same kernel files as OpenCL, compiled as CUDA C++."""

from __future__ import annotations

import threading

import numpy as np

from ..errors import DeviceError, DeviceNotFound
from .base import Backend, DeviceInfo, Program

_cp = None


def cp():
    global _cp
    if _cp is None:
        import cupy

        _cp = cupy
    return _cp


def enumerate_devices() -> list[DeviceInfo]:
    try:
        cupy = cp()
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, no driver, no GPU
        return []
    out = []
    for i in range(n):
        try:
            p = cupy.cuda.runtime.getDeviceProperties(i)
        except Exception:
            continue
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        extra = {
            "cc": f"{p['major']}.{p['minor']}",
            "driver": str(cupy.cuda.runtime.driverGetVersion()),
            "runtime": str(cupy.cuda.runtime.runtimeGetVersion()),
            "regs_per_sm": int(p.get("regsPerMultiprocessor", 65536)),
            "smem_per_sm": int(p.get("sharedMemPerMultiprocessor", 0)),
            "max_threads_per_sm": int(p.get("maxThreadsPerMultiProcessor", 2048)),
            "max_blocks_per_sm": int(p.get("maxBlocksPerMultiProcessor", 32)),
        }
        out.append(DeviceInfo(
            spec=f"cuda:{i}", runtime="cuda", name=name, kind="gpu",
            compute_units=int(p["multiProcessorCount"]), memory=int(p["totalGlobalMem"]),
            vendor="NVIDIA", platform="CUDA", clock_mhz=int(p["clockRate"]) // 1000 or None,
            extra=extra,
        ))
    return out


def _source(arr, host_kind: int) -> tuple[int, int]:
    """(address, cudaMemcpyKind) of the other side of an upload/download: a host numpy array
    (``host_kind``: host to device 1, device to host 2), or a device array (CuPy: device to
    device 3; GPU-resident data, e.g. an AEAD's texts, copied into a padded buffer)."""
    if isinstance(arr, np.ndarray):
        return arr.ctypes.data, host_kind
    return arr.data.ptr, 3


def _pitch(rows) -> int:
    """Bytes from one row of a 2-D host array to the next (one row: its width; numpy may give
    a lone row any stride)."""
    return int(rows.strides[0]) if rows.shape[0] > 1 else int(rows.shape[1])


class _Event:
    """A CUDA event recorded on a stream (what launch/upload/download return)."""

    def __init__(self, stream):
        # block=True: a host wait sleeps instead of spinning a core (the pipeline's CPU budget)
        self.ev = cp().cuda.Event(block=True)
        self.ev.record(stream)

    def wait(self):
        self.ev.synchronize()


class CudaBackend(Backend):
    #: cudaMemcpyAsync from pageable memory returns once it has its own copy of the bytes
    upload_copies_pageable = True
    #: host registrations are portable (every GPU of the process): one cache domain for them all
    pin_domain = "cuda"

    def __init__(self, info: DeviceInfo):
        cupy = cp()
        self.index = int(info.spec.split(":")[1])
        if self.index >= cupy.cuda.runtime.getDeviceCount():
            raise DeviceNotFound(f"no CUDA device {info.spec}")
        self.info = info
        self.dev = cupy.cuda.Device(self.index)
        with self.dev:
            self._default = cupy.cuda.Stream(non_blocking=True)
        self._programs: dict = {}
        self._lock = threading.Lock()
        self._side = None
        self.local_size = 256

    def side_streams(self):
        """Three non-blocking streams of this GPU kept for the scheduler's peer pipelines (copy
        in, kernels, copy out): made once, not per call."""
        with self._lock:
            if self._side is None:
                with self.dev:
                    self._side = tuple(cp().cuda.Stream(non_blocking=True) for _ in range(3))
            return self._side

    def build(self, source: str, key: tuple, *, local_size=None, max_registers=None):
        with self._lock:
            prg = self._programs.get(key)
            if prg is None:
                cupy = cp()
                try:
                    with self.dev:
                        mod = cupy.RawModule(code=source, options=("--std=c++14",))
                        mod.compile()
                except Exception as e:
                    raise DeviceError(f"CUDA build failed on {self.info}: {e}") from None
                prg = self._programs[key] = Program(mod, lambda m, name: m.get_function(name),
                                                    local_size)
            return prg

    def alloc(self, nbytes: int):
        cupy = cp()
        try:
            with self.dev:
                return cupy.empty(max(int(nbytes), 16), dtype=cupy.uint8)
        except cupy.cuda.memory.OutOfMemoryError as e:
            raise DeviceError(f"cannot allocate {nbytes} bytes on {self.info}: {e}") from None

    def pinned(self, nbytes: int) -> np.ndarray:
        # what cupyx.empty_pinned does, without importing cupyx (it pulls in SciPy: start-up)
        n = max(int(nbytes), 16)
        with self.dev:
            mem = cp().cuda.alloc_pinned_memory(n)
        return np.ndarray((n,), np.uint8, buffer=mem)[:nbytes]

    def host_staging(self, nbytes: int) -> np.ndarray:
        # CuPy's pinned memory pool: page-locked, reused between jobs (an upload from pageable
        # memory would make the host wait for the copy engine)
        return self.pinned(nbytes)

    def in_place(self, arr, pad: int = 0, apart=None) -> bool:
        cupy = cp()
        if not (isinstance(arr, cupy.ndarray) and arr.dtype == cupy.uint8 and arr.flags.c_contiguous
                and arr.nbytes and arr.device.id == self.dev.id):
            return False
        ptr, mem = arr.data.ptr, getattr(arr.data, "mem", None)
        if mem is None or not hasattr(mem, "size"):
            return False
        end = ptr + arr.nbytes
        if ptr % self.view_align or not mem.ptr <= ptr or end + pad > mem.ptr + mem.size:
            return False   # (foreign memory of unknown extent: mem.size covers the array alone)
        if apart is not None and isinstance(apart, cupy.ndarray):
            a = apart.data.ptr
            if a < end and ptr < a + apart.nbytes:
                return False
        return True

    def view(self, buf, offset: int, nbytes: int):
        return buf[int(offset):int(offset) + int(nbytes)]

    def host_transfer_mode(self) -> str:
        return "register"

    def register_host(self, ptr: int, nbytes: int, readonly: bool = False) -> bool:
        try:
            with self.dev:
                # cudaHostRegisterPortable (1): page-locked for every GPU of the process, not only
                # this one (one registration serves every GPU's pipeline: a second one of the same
                # pages is refused); cudaHostRegisterReadOnly (8): a read-only mapping (an input
                # file) can be locked
                cp().cuda.runtime.hostRegister(int(ptr), int(nbytes), 1 | (8 if readonly else 0))
            return True
        except Exception:  # already registered, overlapping pages, limits: caller stages instead
            return False

    def unregister_host(self, ptr: int) -> None:
        with self.dev:
            cp().cuda.runtime.hostUnregister(int(ptr))

    def host_is_pinned(self, arr) -> bool:
        # Allocated page-locked by CuPy (cupyx.empty_pinned, alloc_pinned_memory): the array's
        # base chain ends in a PinnedMemoryPointer.  (Not cudaPointerGetAttributes: a stale
        # registration of freed memory would make unrelated memory look page-locked.)
        o = arr
        while isinstance(o, np.ndarray):
            o = o.base
        return isinstance(o, cp().cuda.PinnedMemoryPointer)

    def zero(self, buf, queue=None, *, wait: bool = True) -> None:
        with self.dev:
            s = queue or self._default
            cp().cuda.runtime.memsetAsync(buf.data.ptr, 0, buf.nbytes, s.ptr)
            if wait:
                s.synchronize()

    def queue(self):
        with self.dev:
            return cp().cuda.Stream(non_blocking=True)

    @property
    def default_queue(self):
        return self._default

    def _prepare(self, stream, wait_for):
        for ev in wait_for or ():
            stream.wait_event(ev.ev)

    def after(self, queue, events) -> None:
        with self.dev:
            self._prepare(queue or self._default, events)

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        s = queue or self._default
        ptr, kind = _source(host, 1)
        with self.dev:
            self._prepare(s, wait_for)
            cp().cuda.runtime.memcpyAsync(buf.data.ptr + offset, ptr, host.nbytes, kind, s.ptr)
            return _Event(s) if record else None

    def download(self, host, buf, queue=None, *, offset=0, wait_for=None, record=True):
        s = queue or self._default
        ptr, kind = _source(host, 2)
        with self.dev:
            self._prepare(s, wait_for)
            cp().cuda.runtime.memcpyAsync(ptr, buf.data.ptr + offset, host.nbytes, kind, s.ptr)
            return _Event(s) if record else None

    row_copies = True

    def upload_rows(self, buf, rows, queue=None, *, offset=0):
        s = queue or self._default
        h, w = rows.shape
        with self.dev:   # (cudaMemcpyHostToDevice: 1)
            cp().cuda.runtime.memcpy2DAsync(buf.data.ptr + offset, w, rows.ctypes.data,
                                            _pitch(rows), w, h, 1, s.ptr)

    def download_rows(self, rows, buf, queue=None, *, offset=0):
        s = queue or self._default
        h, w = rows.shape
        with self.dev:   # (cudaMemcpyDeviceToHost: 2)
            cp().cuda.runtime.memcpy2DAsync(rows.ctypes.data, _pitch(rows),
                                            buf.data.ptr + offset, w, w, h, 2, s.ptr)

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        s = queue or self._default
        k = program.kernel(name)
        local = self.group_size(program)
        grid = -(-max(int(items), 1) // local)
        with self.dev:
            self._prepare(s, wait_for)
            try:
                k((grid,), (local,), tuple(args), stream=s)
            except Exception as e:
                raise DeviceError(f"kernel {name} failed on {self.info}: {e}") from None
            return _Event(s) if record else None

    def marker(self, queue=None):
        with self.dev:
            return _Event(queue or self._default)

    def wait(self, event) -> None:
        event.wait()

    def query(self, event) -> bool | None:
        return bool(event.ev.done)

    def finish(self, queue=None) -> None:
        (queue or self._default).synchronize()

    def elapsed(self, start_event, end_event) -> float:
        end_event.ev.synchronize()
        return cp().cuda.get_elapsed_time(start_event.ev, end_event.ev) * 1e-3

    def kernel_resources(self, program, name: str) -> dict:
        k = program.kernel(name)
        regs = int(k.num_regs)
        smem = int(k.shared_size_bytes)
        local = self.group_size(program)
        ex = self.info.extra
        per_sm = [ex["max_threads_per_sm"] // local, ex["max_blocks_per_sm"]]
        if regs:
            per_sm.append(ex["regs_per_sm"] // (regs * local))
        if smem and ex["smem_per_sm"]:
            per_sm.append(ex["smem_per_sm"] // smem)
        blocks = max(0, min(per_sm))
        # (resident_items() in base.py applies the register allocation granularity)
        return {
            "work_group_size": local,
            "registers_per_item": regs,
            "local_mem_bytes": smem,
            "private_mem_bytes": int(k.local_size_bytes),
            "occupancy": blocks * local / ex["max_threads_per_sm"],
            "sm_count": self.info.compute_units,
            "max_threads_per_sm": ex["max_threads_per_sm"],
        }
