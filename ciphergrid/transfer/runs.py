"""Cached pipelines and the one-call entry points of the transfer layer.

:func:`pipeline_for` lends a Pipeline per (backend, chunk size, depth, transfer, settings),
resolving the chunk size and depth through :func:`ciphergrid.transfer.chunking.resolve` and
tuning an untuned GPU first (:func:`ciphergrid.transfer.autotune.autotune`) when the message is
large.  :func:`run_chunks` (an array through a mode kernel: DeviceSession.crypt), :func:`copy`,
:func:`stream_crypt` (a file or pipe: DeviceEngine.stream) and :func:`stream_copy` run one
message through such a pipeline.  ``settings=None`` everywhere: the environment's
(:func:`ciphergrid.settings.transfer`).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import settings as _settings
from ..errors import InvalidArgument
from ..program import KeyedProgram
from . import chunking
from .autotune import autotune
from .driver import CipherJob, Pipeline, copy_job, flat_uint8

# ------------------------------------------------------------------------------------ cached pipelines


class _Lease:
    def __init__(self, pipe: Pipeline, owned: bool):
        self.pipe, self.owned = pipe, owned

    def __enter__(self) -> Pipeline:
        return self.pipe

    def __exit__(self, *exc):
        if self.owned:
            self.pipe.close()
        else:
            self.pipe.lock.release()
        return False


def pipeline_for(backend, chunk_bytes=None, depth=None, *, transfer: str = "auto",
                 nbytes: int | None = None,
                 settings: _settings.TransferSettings | None = None) -> _Lease:
    """``with pipeline_for(backend, ...) as pipe:`` a cached Pipeline for these settings (a fresh
    one while the cached one is busy in another thread).  The chunk size and depth resolve through
    :func:`chunking.resolve` (arguments, settings, tuning cache, defaults); a GPU with no cache
    entry is tuned first when ``nbytes`` is large.  ``settings`` None: the environment's (read
    now, and by the pipeline at each run)."""
    opts = settings or _settings.transfer()
    st = chunking.resolve(backend.info, chunk_bytes, depth, nbytes=nbytes, settings=opts,
                          tune=lambda: autotune(backend, settings=opts))
    key = (st.chunk_bytes, st.depth, transfer, settings)
    pipes, lock = backend.owned("pipelines", lambda: ({}, threading.Lock()))
    with lock:
        pipe = pipes.get(key)
        if pipe is None:
            pipe = pipes[key] = Pipeline(backend, chunk_bytes=st.chunk_bytes, depth=st.depth,
                                         transfer=transfer, settings=settings)
    if pipe.lock.acquire(blocking=False):
        return _Lease(pipe, False)
    return _Lease(Pipeline(backend, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer=transfer,
                           settings=settings), True)


# ------------------------------------------------------------------------------------ entry points
def run_chunks(kp, data: np.ndarray, out: np.ndarray, layout, *, req=None, chunk_bytes=None,
               depth=None, transfer: str = "auto", progress=None,
               settings: _settings.TransferSettings | None = None) -> None:
    """The mode kernel of ``kp`` over ``data`` into ``out``, overlapped (see ciphergrid.transfer).

    ``chunk_bytes``/``depth`` None: the tuned or default settings of the device.
    """
    n = data.nbytes
    if n == 0:
        return
    with pipeline_for(kp.b, chunk_bytes, depth, transfer=transfer, nbytes=n,
                      settings=settings) as pipe:
        pipe.crypt(kp, data, out, layout, req=req, progress=progress)


def copy(backend, data, out=None, *, chunk_bytes=None, depth=None, transfer: str = "auto",
         settings: _settings.TransferSettings | None = None):
    """The copy-only strawman through the pipeline: a copy of ``data`` made on the device."""
    data = flat_uint8(data)
    with pipeline_for(backend, chunk_bytes, depth, transfer=transfer, nbytes=data.nbytes,
                      settings=settings) as pipe:
        return pipe.copy(data, out)


def stream_crypt(backend, req, src, dst, *, chunk_bytes=None, depth=None, progress=None,
                 nbytes: int | None = None,
                 settings: _settings.TransferSettings | None = None) -> int:
    """Encrypt or decrypt file ``src`` into file ``dst`` on ``backend`` (see Pipeline.stream).
    ``nbytes``: the input's size when known (a large one may tune an untuned GPU first)."""
    if not req.mode.streams(req):
        raise InvalidArgument(f"{req.spec.name} with these options does not stream")
    with KeyedProgram(backend, req) as kp, \
            pipeline_for(backend, chunk_bytes, depth, nbytes=nbytes, settings=settings) as pipe:
        return pipe.stream(CipherJob(kp), src, dst, progress=progress)


def stream_copy(backend, src, dst, *, chunk_bytes=None, depth=None, progress=None,
                settings: _settings.TransferSettings | None = None) -> int:
    """The copy-only strawman from file ``src`` to file ``dst`` (see Pipeline.stream)."""
    with pipeline_for(backend, chunk_bytes, depth, settings=settings) as pipe:
        return pipe.stream(copy_job(backend), src, dst, progress=progress)


__all__ = ["pipeline_for", "run_chunks", "copy", "stream_crypt", "stream_copy"]
