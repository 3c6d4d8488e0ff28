"""pyca's ``Cobblestone{128,256}{Encryptor,Decryptor}`` streams over formats/cobblestone.py's
Sealer and Opener (``update`` / ``update_into`` / ``finalize``: ciphergrid.cobblestone's classes,
byte-identical to pyca's); the command line's file path seals and opens without them."""

from __future__ import annotations

import os

from .. import errors
from ..errors import AlreadyFinalized
from .cobblestone import (BATCH_CHUNKS, CHUNK, COBBLESTONE_128, COBBLESTONE_256, HEADER,
                          SEALED_CHUNK, Opener, Scheme, Sealer, _native, _u8)


class _Stream:
    """update / update_into / finalize (pyca's context rules); a subclass's ``_take(src,
    final)`` turns what it can of ``src`` (what came in, in order) into output and says how many
    of its bytes it used; the rest is kept for the next call."""

    def __init__(self):
        self._buf = bytearray()   # what came in and is not used yet
        self._done = False
        self._out = bytearray()   # the output before it is copied into bytes (reused)

    def _scratch(self, n: int) -> memoryview:
        """A reused buffer of ``n`` bytes (no fresh pages for every update)."""
        if len(self._out) < n:
            self._out = bytearray(n)
        return memoryview(self._out)[:n]

    def update(self, data) -> bytes:
        if self._done:
            raise AlreadyFinalized("update() after finalize()")
        try:
            view = memoryview(data).cast("B")
        except (TypeError, ValueError):  # (not one contiguous run of bytes)
            view = memoryview(bytes(_u8(data)))
        with view:
            return self._feed(view, False)

    def update_into(self, data, buf) -> int:
        out = self.update(data)
        memoryview(buf)[:len(out)] = out
        return len(out)

    def finalize(self) -> bytes:
        if self._done:
            raise AlreadyFinalized("finalize() called twice")
        self._done = True
        return self._feed(memoryview(b""), True)

    def _feed(self, view: memoryview, final: bool) -> bytes:
        """The caller's bytes used where they lie when nothing is kept from before (only the
        rest is copied), else after what is kept."""
        if not self._buf:
            out, used = self._take(view, final)
            self._buf += view[used:]
            return out
        self._buf += view
        with memoryview(self._buf) as src:
            out, used = self._take(src, final)
        del self._buf[:used]
        return out

    def _take(self, src: memoryview, final: bool) -> tuple[bytes, int]:
        raise NotImplementedError


class _Encryptor(_Stream):
    """pyca's ``Cobblestone*Encryptor``: ``update`` returns the header then whole sealed chunks as
    they fill (on a device: in batches of BATCH_CHUNKS), ``finalize`` the shorter final one."""

    _scheme: Scheme = COBBLESTONE_128

    def __init__(self, key: bytes, context: bytes = b"", *, device: str = "auto"):
        super().__init__()
        self._s = Sealer(self._scheme, bytes(key), bytes(context), device=device)
        self._head = self._s.header()

    @classmethod
    def generate_key(cls) -> bytes:
        return os.urandom(cls._scheme.key_len)

    def _take(self, src: memoryview, final: bool) -> tuple[bytes, int]:
        s = self._s
        head, self._head = self._head, b""
        m = len(src)
        unit = CHUNK if _native(s.sch, s.device, s.path, m, 1) else BATCH_CHUNKS * CHUNK
        n = m if final else m // unit * unit
        if not n and not final:
            return head, 0
        with self._scratch(len(head) + s._check(s.chunk, n, final)) as out:
            out[:len(head)] = head
            s.seal_at(s.chunk, src, n, final, out[len(head):])
            sealed = out.tobytes()
        s.chunk += n // CHUNK + (1 if final else 0)
        return sealed, n


class _Decryptor(_Stream):
    """pyca's ``Cobblestone*Decryptor``: the commitment checked once the header is in, whole
    sealed chunks released once their tags verify, the final chunk at ``finalize`` (a message
    that ends on a chunk boundary is truncated: InvalidTag)."""

    _scheme: Scheme = COBBLESTONE_128

    def __init__(self, key: bytes, context: bytes = b"", *, device: str = "auto"):
        super().__init__()
        self._key, self._context, self._device = bytes(key), bytes(context), device
        self._op: Opener | None = None
        self._chunk = 0

    def _take(self, src: memoryview, final: bool) -> tuple[bytes, int]:
        at = 0
        if self._op is None:
            if len(src) < HEADER:
                if final:
                    raise errors.Truncated("the sealed message is shorter than its header: nothing is released")
                return b"", 0
            self._op = Opener(self._scheme, self._key, self._context, src[:HEADER],
                              device=self._device)
            at = HEADER
        # whole sealed chunks (never the final one: that is shorter); at the end, the rest
        m = len(src) - at
        k = m if final else m // SEALED_CHUNK * SEALED_CHUNK
        if not k and not final:
            return b"", at
        with self._scratch(self._op._check(self._chunk, k, final)) as out:
            self._op.open_at(self._chunk, src[at:], k, final, out)
            opened = out.tobytes()
        self._chunk += k // SEALED_CHUNK
        return opened, at + k


class Cobblestone128Encryptor(_Encryptor):
    _scheme = COBBLESTONE_128


class Cobblestone128Decryptor(_Decryptor):
    _scheme = COBBLESTONE_128


class Cobblestone256Encryptor(_Encryptor):
    _scheme = COBBLESTONE_256


class Cobblestone256Decryptor(_Decryptor):
    _scheme = COBBLESTONE_256
