"""The encryption service: one resident process shares every device among local clients
(``ciphergrid serve``; docs/service.md).

* :class:`server.Server` owns one runtime (device contexts, compiled kernels, staging, the
  scheduler's speeds) and serves each client connection on a thread of its own;
* :func:`connect` gives a :class:`client.Client` with the API's functions, run by the service;
* protocol.py: the wire format (MessagePack over a Unix SOCK_SEQPACKET socket, descriptors
  beside the messages).
"""

from __future__ import annotations


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
