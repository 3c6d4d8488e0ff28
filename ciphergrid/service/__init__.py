"""The encryption service: one resident process shares every device among local clients
(``ciphergrid serve``; docs/service.md).

* :class:`server.Server` owns one runtime (device contexts, compiled kernels, staging, the
  scheduler's speeds) and serves each client connection on a thread of its own;
* :func:`connect` gives a :class:`client.Client` with the API's functions, run by the service;
* protocol.py: the wire format (MessagePack over a Unix SOCK_SEQPACKET socket, descriptors
  beside the messages).
"""

from __future__ import annotations

import contextlib


def connect(address: str | None = None, *, timeout: float | None = None, cafile=None,
            certfile=None, keyfile=None, token: str | None = None, insecure: bool = False):
    """A connection to the service at ``address``: a socket path (default: the per-user one,
    ``$XDG_RUNTIME_DIR/ciphergrid.sock``), or ``tls://HOST:PORT`` (a remote one: the server's
    certificate checked against ``cafile`` or the system's roots; yours in ``certfile`` /
    ``keyfile``, or a ``token``), or ``tcp://127.0.0.1:PORT`` with ``insecure=True`` (no TLS:
    the loopback address only).  Raises ServiceError when none answers there, or when a local
    one runs as another user than you or root (no key is sent to it)."""
    from .client import Client, RemoteClient

    if address and address.startswith(("tls://", "tcp://")):
        scheme, _, rest = address.partition("://")
        host, _, port = rest.rpartition(":")
        if not port.isdigit() or not host:
            from ..errors import InvalidArgument

            raise InvalidArgument(f"a remote address is tls://HOST:PORT, not {address!r}")
        if scheme == "tcp" and not insecure:
            from ..errors import InvalidArgument

            raise InvalidArgument("tcp:// (no TLS) needs insecure=True, and a loopback address")
        return RemoteClient(host.strip("[]"), int(port), cafile=cafile, certfile=certfile,
                            keyfile=keyfile, token=token, insecure=scheme == "tcp",
                            timeout=timeout)
    return Client(address, timeout=timeout)


def default_address() -> str:
    from ..settings import default_service_address

    return default_service_address()


def resolve(where: str, *, timeout: float | None = None):
    """The local service a setting names (``--service``, ``CIPHERGRID_SERVICE``): ``off`` -> None;
    ``auto`` -> the per-user one where its socket answers as yours, else None; a socket path ->
    that one (ServiceError when it does not answer)."""
    import os

    from ..settings import default_service_address

    where = where.strip()
    if where.lower() == "off":
        return None
    if where.lower() == "auto":
        from ..errors import ServiceError

        address = default_service_address()
        if not os.path.exists(address):
            return None
        try:
            return connect(address, timeout=timeout)
        except ServiceError:
            return None   # (a stale socket, another user's: this process runs it)
    return connect(where, timeout=timeout)


@contextlib.contextmanager
def in_process():
    """Within the block the library's functions run in this process, whatever
    ``CIPHERGRID_SERVICE`` says, on every thread of this runtime: ``ciphergrid bench`` measures
    this process's engines (its records name them), not a service's."""
    from ..runtime import current

    use = current().service
    with use.lock:
        use.in_process += 1
    try:
        yield
    finally:
        with use.lock:
            use.in_process -= 1


def for_library(data=None):
    """The service the library's one-shot and batch functions use: ``CIPHERGRID_SERVICE`` set to
    ``auto`` (the per-user one, when it answers) or a socket path -- this thread's connection in
    this runtime, kept between calls; None (this process runs the call) when unset or ``off``,
    for GPU-resident data, and under a service's runtime.  A remote address is for
    :func:`connect`, with its certificates."""
    from ..runtime import current
    from ..settings import service_setting

    where = service_setting()
    if where is None or where.lower() == "off":
        return None
    rt = current()
    if rt.serving or rt.service.in_process:
        return None
    if data is not None:
        from ..buffers import gpu_array

        if gpu_array(data) is not None:
            return None
    import os

    mine = rt.service.local
    held = getattr(mine, "held", None)
    if held is not None and held[0] == where and held[2] == os.getpid():
        return held[1]
    if where.startswith(("tls://", "tcp://")):
        from ..errors import InvalidArgument

        raise InvalidArgument("CIPHERGRID_SERVICE: the library takes a local service (auto or a "
                              "socket path); a remote one through ciphergrid.connect(address, "
                              "cafile=..., token=...)")
    forget()
    client = resolve(where)
    if client is not None:   # (a forked child makes its own: the parent's socket stays its own)
        mine.held = (where, client, os.getpid())
    return client


def forget() -> None:
    """Close this thread's library connection in this runtime, and the connections of its
    remote engines (engines/remote.py; the next call connects again)."""
    from ..runtime import current

    rt = current()
    mine = rt.service.local
    held = getattr(mine, "held", None)
    mine.held = None
    if held is not None:
        held[1].close()
    with rt.lock:
        remotes = [e for e in rt.engines.values() if getattr(e, "kind", "") == "remote"]
    for e in remotes:
        e.close()
