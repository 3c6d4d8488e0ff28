"""The client side of the service: ``ciphergrid.connect(address)``.

A :class:`Client` checks who serves before it sends a key (the server process's user id,
SO_PEERCRED, must be its own or root) and speaks protocol.py: buffers of up to INLINE_MAX bytes
inside the messages, larger ones through a sealed memfd the server enciphers in place, files and
pipes as their descriptors.  Padding (PKCS#7) is done here; the request's checks and the use
policy run here first (a bad key is refused before anything is sent) and again in the server.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import socket
import threading

from .. import errors
from . import protocol


#: seconds a service has to answer the connection and its hello (a hung one is not waited for)
HELLO_TIMEOUT_S = 10.0
#: the largest shared buffer a connection keeps for its next requests (its arena: its pages stay
#: mapped on both sides, so a request does not fault them in again); a larger request gets a
#: memfd of its own
ARENA_MAX = 256 << 20


def _sealed_memfd(size: int):
    """(a memfd of ``size`` bytes sealed against shrinking and growing, its mapping)."""
    fd = os.memfd_create("ciphergrid", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        raise


class Client:
    """A connection to a running service (see :func:`ciphergrid.connect`)."""

    _arena = None   # (memfd, mapping, size, token): the shared buffer kept for the next requests

    def __init__(self, address: str | None = None, *, timeout: float | None = None):
        from ..settings import default_service_address

        self.address = address or default_service_address()
        self.lock = threading.Lock()
        self.arena_lock = threading.Lock()   # (one request fills, sends and reads it at a time)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.settimeout(timeout if timeout is not None else HELLO_TIMEOUT_S)
            self.sock.connect(self.address)
        except OSError as e:
            self.sock.close()
            raise errors.ServiceError(f"no service at {self.address}: {e.strerror or e}") from None
        self.ch = protocol.Channel(self.sock)
        try:
            uid = protocol.peer_uid(self.sock)
            if uid not in (os.getuid(), 0):
                raise errors.ServiceError(f"the service at {self.address} runs as user {uid}, not "
                                          f"as you ({os.getuid()}) or root: nothing sent to it")
            hello = self._call({"op": "hello", "version": protocol.VERSION})
            if hello.get("version") != protocol.VERSION:
                raise errors.ServiceError(f"the service speaks protocol {hello.get('version')}, "
                                          f"this client {protocol.VERSION}")
            self.server_pid = hello.get("pid")
            self.hello = hello   # (what the service says of itself: engines/remote.py reads it)
            self.sock.settimeout(timeout)   # (a job may run long: no limit unless asked)
        except BaseException:
            self.sock.close()
            raise

    def close(self) -> None:
        self.sock.close()
        arena, self._arena = self._arena, None
        if arena is not None:
            os.close(arena[0])
            try:
                arena[1].close()
            except BufferError:   # (a view still held: unmapped when it goes)
                pass

    def _buffer(self, n: int):
        """(memfd, mapping, arena token or None) for a request of ``n`` shared bytes (under
        arena_lock): the connection's arena, made or enlarged here, up to ARENA_MAX; past it a
        memfd of the request's own (the caller closes it)."""
        if n > ARENA_MAX:
            return (*_sealed_memfd(n), None)
        a = self._arena
        if a is None or a[2] < n:
            size = min(ARENA_MAX, max(n, 2 * a[2] if a is not None else 1 << 20))
            if a is not None:
                os.close(a[0])
            fd, mm = _sealed_memfd(size)
            a = self._arena = (fd, mm, size, os.urandom(8))
        return a[0], a[1], a[3]

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ciphergrid service client of {self.address}>"

    # -- the wire -----------------------------------------------------------------------------
    def _call(self, msg: dict, fds=(), progress=None) -> dict:
        """One request, its progress messages, its reply (an error reply raised)."""
        with self.lock:
            try:
                self.ch.send(msg, fds)
                while True:
                    reply, extra = self.ch.recv()
                    protocol.close_fds(extra)
                    if reply is None:
                        raise errors.ServiceError(f"the service at {self.address} closed the "
                                                  "connection before it answered")
                    if "progress" in reply and len(reply) == 1:
                        if progress is not None:
                            progress(int(reply["progress"]))
                        continue
                    break
            except socket.timeout:
                raise errors.ServiceError(f"the service at {self.address} did not answer in "
                                          "time") from None
            except OSError as e:   # (a reset, a closed pipe, TLS refusing us)
                raise errors.ServiceError(f"the service at {self.address} went away: "
                                          f"{e.strerror or e}") from None
        if not reply.get("ok"):
            protocol.raise_error(reply)
        return reply

    def status(self) -> dict:
        """What the service is doing: its clients, jobs and bytes so far, its devices."""
        reply = self._call({"op": "status"})
        reply.pop("ok", None)
        return reply

    # -- the API's functions --------------------------------------------------------------------
    def encrypt(self, data, cipher: str, key=None, iv=None, *, device: str = "auto", padding=None,
                sector_size=None, start_sector=None, constant_time=False, implementation=None,
                allow_weak=False, nonce=None, aad=None, tag_length=None):
        """As :func:`ciphergrid.encrypt`, run by the service (AEADs too: ciphertext || tag)."""
        if self._is_aead(cipher, iv, padding, sector_size, start_sector, nonce, aad, tag_length):
            return self._aead(True, data, cipher, key, iv, nonce, aad, tag_length, device,
                              constant_time, implementation)
        return self._crypt(True, data, cipher, key, iv, device, padding, sector_size, start_sector,
                           constant_time, implementation, allow_weak)

    def decrypt(self, data, cipher: str, key=None, iv=None, *, device: str = "auto", padding=None,
                sector_size=None, start_sector=None, constant_time=False, implementation=None,
                allow_weak=False, nonce=None, aad=None, tag_length=None):
        """As :func:`ciphergrid.decrypt`, run by the service (AEADs: InvalidTag, and nothing
        released, when the tag does not verify)."""
        if self._is_aead(cipher, iv, padding, sector_size, start_sector, nonce, aad, tag_length):
            return self._aead(False, data, cipher, key, iv, nonce, aad, tag_length, device,
                              constant_time, implementation)
        return self._crypt(False, data, cipher, key, iv, device, padding, sector_size, start_sector,
                           constant_time, implementation, allow_weak)

    @staticmethod
    def _is_aead(cipher, iv, padding, sector_size, start_sector, nonce, aad, tag_length) -> bool:
        from ..api import _is_aead

        return _is_aead(cipher, iv, padding, sector_size, start_sector, nonce, aad, tag_length)

    def _aead(self, encrypt, data, cipher, key, iv, nonce, aad, tag_length, device, constant_time,
              implementation):
        """One AEAD message, checked here first (key, nonce, tag length), run by the service."""
        from .. import aead as _aead
        from .. import aeads, buffers
        from ..api import _nonce

        spec = aeads.spec(cipher)
        nonce = _nonce(cipher, iv, nonce)
        if nonce is None:
            raise errors.InvalidArgument(f"{spec.name} needs a nonce (nonce=)")
        key, nonce = buffers.bytes_like(key, "key"), buffers.bytes_like(nonce, "nonce")
        aad = buffers.bytes_like(aad if aad is not None else b"", "aad")
        tl = _aead._tag_length(spec.aead, tag_length)
        spec.aead.check(spec.name, len(key), len(nonce), tl)
        impl = _aead._implementation(spec.aead, constant_time, implementation)
        arr, wrap = buffers.host_array(data)
        n = arr.nbytes
        msg = {"op": "aead", "version": protocol.VERSION, "cipher": spec.name, "key": key,
               "nonce": nonce, "aad": aad, "tag_length": tl, "encrypt": bool(encrypt),
               "device": device, "impl": impl}
        room = n + tl if encrypt else n
        if room > protocol.REMOTE_PIECE and not self.ch.local:
            raise errors.InvalidArgument(f"one AEAD message through a remote service is at most "
                                         f"{protocol.REMOTE_PIECE - tl} bytes (a batch or a "
                                         "sealed file for more)")
        if room <= protocol.INLINE_MAX or not self.ch.local:
            import numpy as np

            msg["data"] = arr.tobytes()
            out = np.frombuffer(bytearray(self._call(msg)["data"]), dtype=np.uint8)
        else:
            msg["text_length"] = n
            out = self._shared(msg, arr, room)[: n + tl if encrypt else n - tl]
        return wrap(out, False)

    def Cipher(self, name: str, key, iv=None, *, device: str = "auto", padding=None,
               sector_size=None, start_sector=None, constant_time=False, implementation=None,
               allow_weak=False):
        """As :class:`ciphergrid.Cipher`, its contexts (``encryptor()``, ``decryptor()``:
        ``update``, ``update_into``, ``finalize`` over any split) run by the service; host data."""
        from .contexts import ServiceCipher

        return ServiceCipher(self, name, key, iv, device=device, padding=padding,
                             sector_size=sector_size, start_sector=start_sector,
                             constant_time=constant_time, implementation=implementation,
                             allow_weak=allow_weak)

    def _piece(self, req, arr, out, first_block: int, chain, device: str) -> None:
        """A context's piece: the blocks of ``req``'s message from ``first_block`` on (``chain``:
        CBC's chaining value before them) into ``out``."""
        import numpy as np

        msg = {"op": "crypt", "version": protocol.VERSION, "device": device,
               **protocol.request_fields(req)}
        msg["padding"] = None   # (the context pads and unpads)
        if arr.nbytes <= protocol.INLINE_MAX:
            msg.update(data=arr.tobytes(), first_block=first_block, chain=chain)
            out[:] = np.frombuffer(self._call(msg)["data"], dtype=np.uint8)
        elif self.ch.local:
            msg.update(first_block=first_block, chain=chain)
            out[:] = self._shared(msg, arr)
        else:
            out[:] = self._pieces(msg, req, arr, first_block, chain)

    def encrypt_batch(self, messages, cipher: str, *, nonces, key=None, keys=None, aad=None,
                      offsets=None, tag_length=None, device: str = "auto",
                      constant_time: bool = False, implementation=None):
        """As :func:`ciphergrid.encrypt_batch`, run by the service."""
        return self._batch(True, "encrypt_batch", messages, cipher, nonces, key, keys, aad,
                           offsets, None, tag_length, device, constant_time, implementation)

    def decrypt_batch(self, messages, cipher: str, *, nonces, key=None, keys=None, aad=None,
                      offsets=None, tags=None, tag_length=None, device: str = "auto",
                      constant_time: bool = False, implementation=None):
        """As :func:`ciphergrid.decrypt_batch`, run by the service: a message whose tag fails is
        withheld (zeros, ``ok[i]`` False), nothing raised."""
        return self._batch(False, "decrypt_batch", messages, cipher, nonces, key, keys, aad,
                           offsets, tags, tag_length, device, constant_time, implementation)

    def _batch(self, encrypt, fn, messages, cipher, nonces, key, keys, aad, offsets, tags,
               tag_length, device, constant_time, implementation):
        """The batch's tables made and checked here as the library makes them (aead.py), sent in
        one buffer (protocol.batch_layout): inline, or a sealed memfd; over a remote connection
        in groups of whole messages of at most REMOTE_PIECE."""
        import numpy as np

        from .. import aead as _aead
        from .. import aeads

        _aead._check_order(fn, messages, cipher)
        spec = aeads.spec(cipher)
        tl = _aead._tag_length(spec.aead, tag_length)
        impl = _aead._implementation(spec.aead, constant_time, implementation)
        src, off, got, longest = _aead._texts(spec, messages, offsets, encrypt, tags, tl)
        m = off.size - 1
        table, index = _aead._key_table(spec, key, keys, m)
        try:
            non = _aead._nonce_table(spec, nonces, m, tl, table.shape[1])
            aad_arr, aad_off = _aead._aad_table(aad, m)
            _aead._check_limits(spec, longest, _aead._longest(aad_off, spec.aead.max_aad))
            head = {"op": "batch", "version": protocol.VERSION, "cipher": spec.name,
                    "encrypt": bool(encrypt), "tag_length": tl, "impl": impl, "device": device}
            groups = self._groups(off, tl, non.shape[1], aad_off, table.size)
            if len(groups) > 1:
                out = np.empty(src.nbytes, dtype=np.uint8)
                res = np.empty((m, tl), dtype=np.uint8) if encrypt else np.empty(m, dtype=bool)
            for i, j in groups:
                rows = np.unique(index[i:j]) if j > i else np.zeros(0, dtype=index.dtype)
                a, b = int(off[i]), int(off[j])
                keys_used = table[rows]   # (a copy: wiped below, as the table is)
                try:
                    part = self._batch_call(
                        head, src[a:b], off[i:j + 1] - a, None if got is None else got[i:j],
                        keys_used, np.searchsorted(rows, index[i:j]).astype(np.int32),
                        non[i:j], aad_arr[int(aad_off[i]):int(aad_off[j])],
                        aad_off[i:j + 1] - aad_off[i])
                finally:
                    keys_used.fill(0)
                if len(groups) == 1:   # (one group: its arrays are the result's)
                    out, res = part
                else:
                    out[a:b], res[i:j] = part
        finally:
            table.fill(0)
        if encrypt:
            return _aead.BatchResult(True, out, off, res, np.ones(m, dtype=bool))
        return _aead.BatchResult(False, out, off, None, res)

    def _groups(self, off, tl: int, nl: int, aad_off, key_bytes: int):
        """[(first message, end)] of the batch's requests: one (a local connection), or groups
        whose buffers fit REMOTE_PIECE (a remote one)."""
        import numpy as np

        m = off.size - 1
        if self.ch.local or m == 0:
            return [(0, m)]
        per = 2 * np.diff(off) + np.diff(aad_off) + (tl + nl + 1 + 4 + 16 + 8)
        budget = protocol.REMOTE_PIECE - key_bytes - (1 << 12)
        ends, i, csum = [], 0, np.concatenate(([0], np.cumsum(per)))
        while i < m:
            j = int(np.searchsorted(csum, csum[i] + budget, side="right")) - 1
            if j <= i:
                raise errors.InvalidArgument(
                    f"message {i} ({int(off[i + 1] - off[i])} bytes) does not fit one request "
                    f"to a remote service ({protocol.REMOTE_PIECE} bytes)")
            ends.append((i, j))
            i = j
        return ends

    def _batch_call(self, head, src, off, got, table, index, non, aad, aad_off):
        """One batch request; (the texts out, the tags (encryption) or the ok mask)."""
        import numpy as np

        m = off.size - 1
        tl = head["tag_length"]
        layout, total = protocol.batch_layout(m, src.nbytes, tl, table.shape[0], table.shape[1],
                                              non.shape[1], aad.nbytes)
        msg = dict(head, m=m, n=int(src.nbytes), keys=int(table.shape[0]),
                   nonce_length=int(non.shape[1]), aad_length=int(aad.nbytes))
        if total <= protocol.INLINE_MAX or not self.ch.local:
            return self._batch_fill(msg, layout, np.zeros(total, dtype=np.uint8), None, None,
                                    src, off, got, table, index, non, aad, aad_off)
        with self.arena_lock:
            fd, mm, token = self._buffer(total)
            try:
                region = np.frombuffer(mm, dtype=np.uint8, count=total)
                return self._batch_fill(msg, layout, region, fd, token, src, off, got, table,
                                        index, non, aad, aad_off)
            finally:
                if token is None:
                    os.close(fd)

    def _batch_fill(self, msg, layout, region, fd, token, src, off, got, table, index, non, aad,
                    aad_off):
        """Write a batch's sections into ``region`` (inline: sent in the message; else the memfd
        ``fd``, the arena ``token``'s or its own), run it, read the results (copied out of an
        arena, which the next request reuses)."""
        import numpy as np

        m = off.size - 1
        v = protocol.batch_views(region, layout)
        try:
            v["text"][:] = src
            if got is not None:
                v["tags"][:] = got.reshape(-1)
            v["off"][:], v["index"][:], v["keys"][:] = off, index, table.reshape(-1)
            v["nonces"][:], v["aad"][:], v["aad_off"][:] = non.reshape(-1), aad, aad_off
            if fd is None:
                msg["data"] = region.tobytes()
                v["keys"][:] = 0
                back = self._call(msg)["data"]
                start = layout["out"][0]
                if not isinstance(back, bytes) or len(back) != layout["ok"][0] + m - start:
                    raise protocol.ProtocolError("a batch reply of the wrong size")
                region[start:start + len(back)] = np.frombuffer(back, dtype=np.uint8)
            else:
                msg["length"] = region.nbytes
                if token is not None:
                    msg["arena"] = token
                self._call(msg, [fd])
        finally:
            v["keys"][:] = 0
        out = v["out"] if token is None else v["out"].copy()
        if msg["encrypt"]:
            tags = v["tags"].reshape(m, msg["tag_length"])
            return out, tags if token is None else tags.copy()
        return out, v["ok"].astype(bool)

    def _crypt(self, encrypt, data, cipher, key, iv, device, padding, sector_size, start_sector,
               constant_time, implementation, allow_weak):
        import numpy as np

        from .. import buffers
        from ..api import _request
        from ..modes import padding as _padding

        req = _request(cipher, key, iv, encrypt, padding, sector_size, start_sector, constant_time,
                       implementation, allow_weak)
        arr, wrap = buffers.host_array(data)
        bs = req.block_size
        raw = arr.tobytes() if (encrypt and padding) else None
        if raw is not None:
            arr = np.frombuffer(_padding.pad(raw, bs), dtype=np.uint8)
        req.check_length(arr.nbytes)
        msg = {"op": "crypt", "version": protocol.VERSION, "device": device,
               **protocol.request_fields(req)}
        msg["padding"] = None
        if arr.nbytes <= protocol.INLINE_MAX:
            msg["data"] = arr.tobytes()
            out = np.frombuffer(bytearray(self._call(msg)["data"]), dtype=np.uint8)
        elif self.ch.local:
            out = self._shared(msg, arr)
        else:
            out = self._pieces(msg, req, arr)
        if not encrypt and padding:
            out = np.frombuffer(_padding.unpad(out.tobytes(), bs), dtype=np.uint8)
        return wrap(out, not padding)

    def _pieces(self, msg: dict, req, arr, first: int = 0, chain=None):
        """A buffer too large for one remote message (the blocks of ``req`` from ``first`` on,
        ``chain`` before them): in pieces of REMOTE_PIECE on the mode's grain, each a message
        of its own (its first block, the chaining value carried)."""
        import numpy as np

        n = arr.nbytes
        unit = req.mode.split_unit(req) or (req.block_size if req.mode.carries else None)
        if unit is None:
            raise errors.InvalidArgument(f"{req.spec.name}: one data unit of {n} bytes does not "
                                         f"fit a remote message ({protocol.REMOTE_PIECE} bytes)")
        step = max(unit, protocol.REMOTE_PIECE // unit * unit)
        out = np.empty(n, dtype=np.uint8)
        bs = req.block_size
        for a in range(0, n, step):
            b = min(n, a + step)
            piece = dict(msg, data=arr[a:b].tobytes(), first_block=first + a // bs, chain=chain)
            out[a:b] = np.frombuffer(self._call(piece)["data"], dtype=np.uint8)
            if req.mode.carries:   # (CBC: the chaining value of the next piece)
                chain = req.mode.carry(req, arr[a:b], out[a:b])
        return out

    def _shared(self, msg: dict, arr, room: int | None = None):
        """``arr`` through a memfd (``room`` bytes, default the data's) sealed against shrinking
        and growing, enciphered in place by the service; the result: an array over the mapping
        (no copy back)."""
        import numpy as np

        n = arr.nbytes if room is None else room
        with self.arena_lock:
            fd, mm, token = self._buffer(n)
            try:
                region = np.frombuffer(mm, dtype=np.uint8, count=n)
                region[: arr.nbytes] = arr.reshape(-1)
                msg["length"] = n
                if token is not None:
                    msg["arena"] = token
                self._call(msg, [fd])
                return region if token is None else region.copy()
            finally:
                if token is None:
                    os.close(fd)

    def stream(self, req, src: int, dst: int, *, device: str = "auto", progress=None,
               nbytes: int | None = None, chunk_bytes: int | None = None,
               depth: int | None = None, fresh_output: bool = False) -> dict:
        """Request ``req`` from descriptor ``src`` (read to its end) into descriptor ``dst``:
        the service reads and writes them itself (``fresh_output``: ``dst`` is a new empty
        file of nobody else's: its pages may be faulted in ahead).  Returns the reply
        (``bytes``, ``device``)."""
        msg = {"op": "stream", "version": protocol.VERSION, "device": device, "nbytes": nbytes,
               "chunk_bytes": chunk_bytes, "depth": depth, "fresh_output": bool(fresh_output),
               **protocol.request_fields(req)}
        step = _steps(progress)
        reply = self._call(msg, [src, dst], progress=step)
        step(int(reply.get("bytes", 0)))
        return reply


    def sealed(self, encrypt: bool, scheme: str, key: bytes, context: bytes, src: int, dst: int,
               *, header: bytes | None = None, device: str = "auto", progress=None) -> dict:
        """A sealed file (C2SP chunked encryption, ``scheme`` cobblestone-128 or -256) from
        descriptor ``src`` (read to its end from its offset) into descriptor ``dst``, run by the
        service: sealing writes the C2SP header and the chunks; opening takes ``header`` (the
        input's C2SP header, read here) and checks its key commitment first.  ``key``: the
        input key (a passphrase's is derived here, never sent).  ``progress(k)``: bytes written
        (the header included) as the service says them.  Returns the reply (``bytes``,
        ``device``, ``reason``, ``seconds``); a failure raises its class (CommitmentMismatch,
        ChunkFailed, Truncated...) after the bytes written before it were given to
        ``progress``."""
        msg = {"op": "sealed", "version": protocol.VERSION, "cipher": scheme, "key": bytes(key),
               "encrypt": bool(encrypt), "context": bytes(context), "device": device}
        if header is not None:
            msg["header"] = bytes(header)
        step = _steps(progress)
        try:
            reply = self._call(msg, [src, dst], progress=step)
        except Exception as e:
            done = getattr(e, "service_done", None)
            if done is not None:
                step(done)
            raise
        step(int(reply.get("bytes", 0)))
        return reply


def _steps(progress):
    """A file job's progress messages (the bytes so far, as the service says them) as the steps
    ``progress(k)`` takes (None: none)."""
    last = [0]

    def step(total: int) -> None:
        if progress is not None and total > last[0]:
            progress(total - last[0])
            last[0] = total

    return step


class RemoteClient(Client):
    """A connection to a remote service over TCP: TLS (the server's certificate verified
    against ``cafile`` or the system's roots; a client certificate, or a ``token``), or --
    ``insecure=True``, a loopback address only -- none.  The data travel inside the messages
    (a buffer larger than REMOTE_PIECE in pieces); files and pipes are local only."""

    def __init__(self, host: str, port: int, *, cafile=None, certfile=None, keyfile=None,
                 token: str | None = None, insecure: bool = False, timeout: float | None = None,
                 server_hostname: str | None = None):
        import ssl

        self.address = f"{host}:{port}"
        self.lock = threading.Lock()
        try:
            raw = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise errors.ServiceError(f"no service at {self.address}: {e.strerror or e}") from None
        try:
            if insecure:
                import ipaddress

                try:
                    loopback = ipaddress.ip_address(host).is_loopback
                except ValueError:
                    loopback = host == "localhost"
                if not loopback:
                    raise errors.InvalidArgument("insecure (no TLS) only to a loopback address")
                self.sock = raw
            else:
                ctx = ssl.create_default_context(cafile=cafile)
                if certfile:
                    ctx.load_cert_chain(certfile, keyfile)
                try:
                    self.sock = ctx.wrap_socket(raw, server_hostname=server_hostname or host)
                except ssl.SSLError as e:
                    raise errors.ServiceError(f"TLS with {self.address} failed: {e.reason or e}") from None
            self.ch = protocol.StreamChannel(self.sock)
            hello = self._call({"op": "hello", "version": protocol.VERSION, "token": token})
            if hello.get("version") != protocol.VERSION:
                raise errors.ServiceError(f"the service speaks protocol {hello.get('version')}")
            self.server_pid = hello.get("pid")
        except BaseException:
            raw.close()
            raise

    def __repr__(self) -> str:
        return f"<ciphergrid remote service client of {self.address}>"

    def stream(self, *a, **kw):
        raise errors.InvalidArgument("files and pipes pass only to a local service")

    def sealed(self, *a, **kw):
        raise errors.InvalidArgument("files and pipes pass only to a local service")
