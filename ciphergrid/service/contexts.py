"""Cipher contexts run by the service: ``connect().Cipher(name, key, iv, ...)``.

They are the library's own :class:`ciphergrid.api.Cipher` and its contexts -- the same checks,
buffering, padding and chaining, for any split of the message -- except that each piece the mode
releases is sent to the service as a message of its own from its block on (``first_block`` and
CBC's ``chain``: ``Request.at`` on the server), instead of to an engine of this process.
"""

from __future__ import annotations

from .. import api
from ..errors import InvalidArgument


class ServiceCipher(api.Cipher):
    """A keyed cipher·mode whose contexts the service runs (see :meth:`Client.Cipher`)."""

    def __init__(self, client, name: str, key, iv=None, *, device: str = "auto", **kw):
        super().__init__(name, key, iv, device=None, **kw)   # (the device is the service's)
        self.device = device
        self._client = client

    def __repr__(self) -> str:  # never shows the key
        return f"Cipher({self.spec.name!r}, device={self.device!r}, service={self._client.address!r})"

    def _run(self, req, piece, out, first_block: int, chain) -> None:
        self._client._piece(req, piece, out, first_block, chain, self.device)

    def encryptor(self) -> "ServiceContext":
        return ServiceContext(self, True)

    def decryptor(self) -> "ServiceContext":
        return ServiceContext(self, False)


class ServiceContext(api.CipherContext):
    """A streaming encryption or decryption run by the service (host data)."""

    def _update_gpu(self, data, gpu, buf):
        raise InvalidArgument("GPU arrays do not pass to the service yet (no CUDA IPC): use "
                              "ciphergrid.Cipher in this process for them")
