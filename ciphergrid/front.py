"""The package's one-shot and batch functions (``ciphergrid.encrypt``, ``decrypt``,
``encrypt_batch``, ``decrypt_batch``): api's and aead's, run under the service setting the user
gave (``CIPHERGRID_SERVICE``), which ``route`` decides on: a service (the remote engine kind,
engines/remote.py) runs the call when the setting names one that answers (``auto``: the per-user
one where its socket answers; a socket path: that one, ServiceError when it does not answer),
this process otherwise, and for GPU-resident data.  ``api`` and ``aead`` called directly take
no setting: they run where their device says.  A call with ``stats=`` runs in this process (the
figures of this process's scheduler).
"""

from __future__ import annotations

import functools

from . import aead, api
from .engines.remote import asks_service, service_asked
from .settings import service_setting


def _front(inner):
    """``inner`` (api's or aead's) as the package offers it: under the user's service setting."""

    @functools.wraps(inner)
    def call(data, *args, stats=None, **kw):
        if stats is not None:
            return inner(data, *args, stats=stats, **kw)
        where = service_setting()
        if where is None and not asks_service():   # (no service either way: nothing to set)
            return inner(data, *args, **kw)
        with service_asked(where):
            return inner(data, *args, **kw)

    return call


encrypt = _front(api.encrypt)
decrypt = _front(api.decrypt)
encrypt_batch = _front(aead.encrypt_batch)
decrypt_batch = _front(aead.decrypt_batch)
