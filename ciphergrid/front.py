"""The package's one-shot and batch functions (``ciphergrid.encrypt``, ``decrypt``,
``encrypt_batch``, ``decrypt_batch``): the library's own (api.py, aead.py), or -- when the user
asks with ``CIPHERGRID_SERVICE`` -- the same call run by the encryption service.

This is the one place the library decides between its own process and a service; ``api`` and
``aead`` always run in this process (the service's client and the service itself call them).
A call runs here when ``CIPHERGRID_SERVICE`` is unset or ``off``, under ``auto`` when no
per-user service answers, for GPU-resident data (no CUDA IPC yet), and with ``stats=`` (the
figures of this process's scheduler).  ``out=`` gets the service's result copied in.
"""

from __future__ import annotations

import functools

from . import aead, api, buffers
from .errors import InvalidArgument, ServiceError
from .settings import service_setting


def _front(inner):
    """``inner`` (api's or aead's) as the package offers it: through the service when asked."""
    name = inner.__name__

    @functools.wraps(inner)
    def call(data, *args, out=None, stats=None, **kw):
        if stats is None and service_setting() is not None:
            from .service import for_library

            svc = for_library(data)
            if svc is not None:
                return _served(svc, name, data, args, kw, out)
        if stats is not None:
            kw["stats"] = stats
        return inner(data, *args, out=out, **kw)

    return call


def _served(svc, name: str, data, args, kw, out):
    from .service import forget

    if out is not None and kw.get("padding"):
        raise InvalidArgument("out= cannot be used with padding (the length changes)")
    try:
        got = getattr(svc, name)(data, *args, **kw)
    except ServiceError:
        forget()   # (a connection that failed: the next call makes a new one)
        raise
    if out is None:
        return got
    if name.endswith("_batch"):   # (the texts in the caller's buffer, as in process)
        dst = buffers.out_array(out, got.data.nbytes)
        dst[...] = got.data
        got.data = dst
        return got
    res = buffers.host_array(got)[0]
    buffers.out_array(out, res.nbytes)[...] = res.reshape(-1).view("u1")
    return out


encrypt = _front(api.encrypt)
decrypt = _front(api.decrypt)
encrypt_batch = _front(aead.encrypt_batch)
decrypt_batch = _front(aead.decrypt_batch)
