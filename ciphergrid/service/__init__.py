"""The encryption service: one resident process shares every device among local clients
(``ciphergrid serve``; docs/service.md).

* :class:`server.Server` owns one runtime (device contexts, compiled kernels, staging, the
  scheduler's speeds) and serves each client connection on a thread of its own;
* :func:`connect` gives a :class:`client.Client` with the API's functions, run by the service;
* protocol.py: the wire format (MessagePack over a Unix SOCK_SEQPACKET socket, descriptors
  beside the messages).
"""

from __future__ import annotations


def connect(address: str | None = None, *, timeout: float | None = None):
    """A connection to the service at ``address`` (a socket path; default: the per-user one,
    ``$XDG_RUNTIME_DIR/ciphergrid.sock``).  Raises ServiceError when none answers there, or when
    it runs as another user than you or root (no key is sent to it)."""
    from .client import Client

    return Client(address, timeout=timeout)


def default_address() -> str:
    from ..settings import default_service_address

    return default_service_address()
