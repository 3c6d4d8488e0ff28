"""The narrow interface every device backend implements.

A backend owns one device: it compiles kernel sources, allocates device buffers and pinned host
buffers, and enqueues copies and kernel launches on queues (OpenCL command queues, CUDA streams),
returning events.  Everything above it (modes, pipeline, bench) is written against this class only.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field

from .._lazy import numpy_for

np = numpy_for(__name__)


@dataclass
class DeviceInfo:
    spec: str                  # "opencl:0:0", "cuda:0", "native"
    runtime: str               # "opencl" | "cuda" | "native"
    name: str
    kind: str                  # "cpu" | "gpu" | "accelerator"
    compute_units: int
    memory: int                # bytes of device memory (host memory for CPUs)
    vendor: str = ""
    platform: str = ""
    clock_mhz: int | None = None
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.spec} ({self.name})"


@functools.lru_cache(maxsize=None)
def kernel_text(filename: str) -> str:
    """A kernel file: a name under ciphergrid/kernels/, or an absolute path (the kernel of a
    cipher declared outside the package, e.g. a test's toy cipher)."""
    if os.path.isabs(filename):
        from pathlib import Path

        return Path(filename).read_text()
    from importlib import resources     # (pulls in pathlib: only where a kernel is read)

    return resources.files("ciphergrid").joinpath("kernels", filename).read_text()


def program_source(cipher_file: str | None, *extra_files: str) -> str:
    """portable.h + the cipher's block functions + the given kernel files, as one source."""
    parts = [kernel_text("portable.h")]
    if cipher_file:
        parts.append(kernel_text(cipher_file))
    parts.extend(kernel_text(f) for f in extra_files)
    return "\n".join(parts)


class Program:
    """A compiled program: ``native`` is the runtime's object, kernels are fetched once by name."""

    def __init__(self, native, get_kernel, local_size: int | None = None):
        self.native = native
        #: work-items per work-group of this program's launches (None: the backend's)
        self.local_size = local_size
        self._get = get_kernel
        self._kernels: dict = {}
        self._lock = threading.Lock()

    def kernel(self, name: str):
        k = self._kernels.get(name)  # (fetched already: no lock on the launch path)
        if k is not None:
            return k
        with self._lock:
            k = self._kernels.get(name)
            if k is None:
                k = self._kernels[name] = self._get(self.native, name)
            return k


def defines_prefix(defines: dict[str, int]) -> str:
    return "".join(f"#define {k} {int(v)}\n" for k, v in sorted(defines.items()))


class Backend:
    """One device.  Buffers are backend objects; host arrays are numpy uint8 arrays."""

    #: the ciphergrid.runtime.Runtime that made it (devices.backend; None: made directly)
    runtime = None

    def owned(self, name: str, make):
        """The object ``name`` this backend keeps for its users (the transfer layer's cached
        pipelines and copy job, the AEAD drivers), made by ``make()`` the first time: it lives
        and dies with the backend, so with the runtime that owns it."""
        d = self.__dict__.setdefault("_owned", {})
        v = d.get(name)
        if v is None:
            lock = self.__dict__.setdefault("_owned_lock", threading.Lock())
            with lock:
                v = d.get(name)
                if v is None:
                    v = d[name] = make()
        return v

    info: DeviceInfo
    #: work-items per work-group used for launches
    local_size: int = 256

    # -- compilation -------------------------------------------------------------------------
    def build(self, source: str, key: tuple, *, local_size: int | None = None,
              max_registers: int | None = None):
        """Compile ``source`` once per ``key`` (cached); return a program with ``.kernel(name)``.

        ``local_size``: work-group size of its launches (default: the backend's);
        ``max_registers``: a cap on registers per work-item where the compiler takes one (the
        CUDA source caps itself through CG_MAX_REGS; NVIDIA OpenCL: -cl-nv-maxrregcount)."""
        raise NotImplementedError

    def cached_program(self, key: tuple):
        """The program built earlier under ``key``, or None."""
        return getattr(self, "_programs", {}).get(key)

    def group_size(self, program) -> int:
        """Work-items per work-group when launching ``program``."""
        return min(getattr(program, "local_size", None) or self.local_size, self.local_size)

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        raise NotImplementedError

    def pinned(self, nbytes: int) -> np.ndarray:
        """A page-locked host buffer (uint8) for fast, asynchronous transfers."""
        raise NotImplementedError

    def host_staging(self, nbytes: int) -> np.ndarray:
        """A host buffer (uint8) for the small, frequent transfers of one job (an AEAD piece's
        metadata and tags) that the host does not wait for: page-locked where that is cheap
        (CUDA's pinned pool), else ordinary memory (the caller keeps it until the job ends)."""
        return np.empty(max(int(nbytes), 16), np.uint8)[:nbytes]

    #: byte alignment of a view()'s offset
    view_align = 256

    def in_place(self, arr, pad: int = 0, apart=None) -> bool:
        """Whether a job's kernels may read and write the caller's device array ``arr`` where it
        is (GPU-resident texts, no copy): a contiguous uint8 array on this device, aligned to
        ``view_align``, with ``pad`` more bytes readable after it in its allocation, and not
        overlapping the device array ``apart``.  Host arrays and memory this backend cannot see
        into: False (the job copies)."""
        return False

    def view(self, buf, offset: int, nbytes: int):
        """Bytes [offset, offset + nbytes) of device buffer ``buf`` as a buffer of their own
        (a kernel argument, an upload's or a zero's target); ``offset`` a multiple of view_align."""
        raise NotImplementedError

    # -- caller memory for the pipeline (ciphergrid.transfer) ----------------------------------
    def host_transfer_mode(self) -> str:
        """How the pipeline moves ordinary (pageable) host memory: "register" (page-lock it in
        place with register_host, then DMA), "any" (hand it to the runtime as it is: host memory
        is device memory) or "staging" (copy it through pinned() buffers)."""
        return "staging"

    def register_host(self, ptr: int, nbytes: int, readonly: bool = False) -> bool:
        """Page-lock ``nbytes`` of host memory at ``ptr`` for direct DMA; False when not possible.
        ``readonly``: the memory is mapped read-only (the device only reads it)."""
        return False

    def unregister_host(self, ptr: int) -> None:
        """Undo register_host (``ptr`` as registered)."""

    def host_is_pinned(self, arr: np.ndarray) -> bool:
        """Whether host array ``arr`` lies in memory page-locked for this device by its allocator
        (pinned(), cupyx.empty_pinned): the pipeline then registers nothing for it."""
        return False

    def zero(self, buf, queue=None, *, wait: bool = True) -> None:
        """Overwrite a device buffer with zeros (key material is wiped before release);
        ``wait=False``: only enqueued (the caller finishes the queue)."""
        raise NotImplementedError

    # -- queues, transfers, launches, events ----------------------------------------------------
    def queue(self):
        """A new in-order queue / stream."""
        raise NotImplementedError

    @property
    def default_queue(self):
        raise NotImplementedError

    def after(self, queue, events) -> None:
        """Make ``queue`` wait (on the device, not the host) for ``events`` of other queues."""
        raise NotImplementedError

    def upload(self, buf, host: np.ndarray, queue=None, *, offset: int = 0, wait_for=None,
               record: bool = True):
        """Copy ``host`` into ``buf`` at byte ``offset``; returns an event (non-blocking).
        ``record=False``: the caller needs no event (a backend may then return None)."""
        raise NotImplementedError

    def download(self, host: np.ndarray, buf, queue=None, *, offset: int = 0, wait_for=None,
                 record: bool = True):
        """Copy ``host.nbytes`` bytes of ``buf`` from byte ``offset`` into ``host``; returns an
        event.  ``record=False``: the caller needs no event (a backend may then return None)."""
        raise NotImplementedError

    #: ``upload_rows`` / ``download_rows`` move rows at a pitch in ONE copy (else a copy a row)
    row_copies = False

    def upload_rows(self, buf, rows: np.ndarray, queue=None, *, offset: int = 0) -> None:
        """Copy the rows of host array ``rows`` (2-D uint8, each row contiguous, rows at any
        pitch) into ``buf`` back to back from byte ``offset`` (nothing waited for)."""
        w = rows.shape[1]
        for k in range(rows.shape[0]):
            self.upload(buf, rows[k], queue, offset=offset + k * w, record=False)

    def download_rows(self, rows: np.ndarray, buf, queue=None, *, offset: int = 0) -> None:
        """Copy bytes of ``buf`` from byte ``offset`` into the rows of host array ``rows``
        (see ``upload_rows``), back to back (nothing waited for)."""
        w = rows.shape[1]
        for k in range(rows.shape[0]):
            self.download(rows[k], buf, queue, offset=offset + k * w, record=False)

    def launch(self, program, name: str, items: int, args: list, queue=None, *, wait_for=None,
               record: bool = True):
        """Run kernel ``name`` over ``items`` work-items (rounded up to the work-group size);
        returns an event.  ``record=False``: the caller needs no event (a backend may then return
        None)."""
        raise NotImplementedError

    def resident_items(self, program, name: str) -> int:
        """Work-items of kernel ``name`` that the device holds at once (a persistent grid's size).

        From the kernel's resource use: work-groups per compute unit limited by threads,
        registers and shared memory, times the compute units.
        """
        key = (id(program), name)
        cache = self.__dict__.setdefault("_resident", {})
        if key not in cache:
            local = self.group_size(program)
            if self.info.kind == "cpu":
                cache[key] = max(1, self.info.compute_units) * local * 4
            else:
                r = self.kernel_resources(program, name)
                ex = self.info.extra
                per_cu = [ex.get("max_threads_per_sm", 2048) // local, ex.get("max_blocks_per_sm", 32)]
                if r.get("registers_per_item"):
                    regs = -(-r["registers_per_item"] // 8) * 8  # allocation granularity
                    per_cu.append(ex.get("regs_per_sm", 65536) // (regs * local))
                if r.get("local_mem_bytes"):
                    per_cu.append(ex.get("smem_per_sm", 228 * 1024) // (r["local_mem_bytes"] + 1024))
                cache[key] = max(1, min(per_cu)) * local * max(1, self.info.compute_units)
        return cache[key]

    def marker(self, queue=None):
        """An event that completes when everything enqueued so far on ``queue`` has."""
        raise NotImplementedError

    def wait(self, event) -> None:
        raise NotImplementedError

    def query(self, event) -> bool | None:
        """Whether ``event`` has completed, without waiting (None: this backend cannot tell)."""
        return None

    def finish(self, queue=None) -> None:
        raise NotImplementedError

    def elapsed(self, start_event, end_event) -> float:
        """Seconds between two events recorded with timing (device clock)."""
        raise NotImplementedError

    def kernel_resources(self, program, name: str) -> dict:
        return {}
