"""The narrow interface every device backend implements.

A backend owns one device: it compiles kernel sources, allocates device buffers and pinned host
buffers, and enqueues copies and kernel launches on queues (OpenCL command queues, CUDA streams),
returning events.  Everything above it (modes, pipeline, bench) is written against this class only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources

import numpy as np


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
    return resources.files("ciphergrid").joinpath("kernels", filename).read_text()


def program_source(cipher_file: str | None, *extra_files: str) -> str:
    """portable.h + the cipher's block functions + the given kernel files, as one source."""
    parts = [kernel_text("portable.h")]
    if cipher_file:
        parts.append(kernel_text(cipher_file))
    parts.extend(kernel_text(f) for f in extra_files)
    return "\n".join(parts)


def defines_prefix(defines: dict[str, int]) -> str:
    return "".join(f"#define {k} {int(v)}\n" for k, v in sorted(defines.items()))


class Backend:
    """One device.  Buffers are backend objects; host arrays are numpy uint8 arrays."""

    info: DeviceInfo
    #: work-items per work-group used for launches
    local_size: int = 256

    # -- compilation -------------------------------------------------------------------------
    def build(self, source: str, key: tuple):
        """Compile ``source`` once per ``key`` (cached); return a program with ``.kernel(name)``."""
        raise NotImplementedError

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        raise NotImplementedError

    def pinned(self, nbytes: int) -> np.ndarray:
        """A page-locked host buffer (uint8) for fast, asynchronous transfers."""
        raise NotImplementedError

    def zero(self, buf, queue=None) -> None:
        """Overwrite a device buffer with zeros (key material is wiped before release)."""
        raise NotImplementedError

    # -- queues, transfers, launches, events ----------------------------------------------------
    def queue(self):
        """A new in-order queue / stream."""
        raise NotImplementedError

    @property
    def default_queue(self):
        raise NotImplementedError

    def upload(self, buf, host: np.ndarray, queue=None, *, offset: int = 0, wait_for=None):
        """Copy ``host`` into ``buf`` at byte ``offset``; returns an event (non-blocking)."""
        raise NotImplementedError

    def download(self, host: np.ndarray, buf, queue=None, *, offset: int = 0, wait_for=None):
        """Copy ``host.nbytes`` bytes of ``buf`` from byte ``offset`` into ``host``; returns an event."""
        raise NotImplementedError

    def launch(self, program, name: str, items: int, args: list, queue=None, *, wait_for=None):
        """Run kernel ``name`` over ``items`` work-items (rounded up to the work-group size)."""
        raise NotImplementedError

    def marker(self, queue=None):
        """An event that completes when everything enqueued so far on ``queue`` has."""
        raise NotImplementedError

    def wait(self, event) -> None:
        raise NotImplementedError

    def finish(self, queue=None) -> None:
        raise NotImplementedError

    def elapsed(self, start_event, end_event) -> float:
        """Seconds between two events recorded with timing (device clock)."""
        raise NotImplementedError

    def max_items(self) -> int:
        """How many work-items fill the device (grid-stride kernels need no more)."""
        return max(1, self.info.compute_units) * 2048

    def kernel_resources(self, program, name: str) -> dict:
        return {}
