"""Pinned host memory: :func:`host_buffer` (a page-locked array), :func:`transfer_mode` (how a
backend's chunks reach the device: page-locked caller memory, caller memory as it is, or staging),
and :class:`Staging`, the pool of pinned buffers chunks are copied through (staged transfers,
file reads and writes)."""

from __future__ import annotations

import queue
import threading

from ..errors import InvalidArgument
from .._lazy import numpy_for

np = numpy_for(__name__)

TRANSFERS = ("auto", "direct", "staged")


def host_buffer(backend, nbytes: int) -> np.ndarray:
    """A page-locked host array (uint8) of ``nbytes`` for the fastest, copy-free transfers."""
    return backend.pinned(int(nbytes))


def transfer_mode(backend, transfer: str = "auto") -> str:
    """How chunks reach the device: "register" (page-lock caller memory), "any" (hand caller
    memory to the runtime as it is) or "staging" (copy through pinned buffers)."""
    if transfer not in TRANSFERS:
        raise InvalidArgument(f"transfer must be one of {', '.join(TRANSFERS)}, got {transfer!r}")
    native = getattr(backend, "host_transfer_mode", lambda: "staging")()
    if transfer == "staged":
        return "staging"
    if transfer == "direct":
        return native if native != "staging" else "any"
    return native


class Staging:
    """Pinned host buffers of one capacity, allocated on first need, recycled through a free list."""

    def __init__(self, backend, cap: int):
        self.b = backend
        self.cap = cap
        self.bufs: list[np.ndarray] = []
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()

    def take(self) -> int:
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            self.bufs.append(host_buffer(self.b, self.cap))
            return len(self.bufs) - 1

    def put(self, i: int) -> None:
        self.free.put(i)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.bufs[i]


__all__ = ["TRANSFERS", "host_buffer", "transfer_mode"]
