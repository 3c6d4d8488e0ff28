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
from .._lazy import numpy_for
from . import protocol

np = numpy_for(__name__)


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
        from ..api import _one_request, _Options

        options = _Options(padding=padding, sector_size=sector_size, start_sector=start_sector,
                           constant_time=constant_time, implementation=implementation,
                           allow_weak=allow_weak, nonce=nonce, aad=aad, tag_length=tag_length)
        return self._one_shot(_one_request(True, cipher, key, iv, options), data, device)

    def decrypt(self, data, cipher: str, key=None, iv=None, *, device: str = "auto", padding=None,
                sector_size=None, start_sector=None, constant_time=False, implementation=None,
                allow_weak=False, nonce=None, aad=None, tag_length=None):
        """As :func:`ciphergrid.decrypt`, run by the service (AEADs: InvalidTag, and nothing
        released, when the tag does not verify)."""
        from ..api import _one_request, _Options

        options = _Options(padding=padding, sector_size=sector_size, start_sector=start_sector,
                           constant_time=constant_time, implementation=implementation,
                           allow_weak=allow_weak, nonce=nonce, aad=aad, tag_length=tag_length)
        return self._one_shot(_one_request(False, cipher, key, iv, options), data, device)

    def _one_shot(self, req, data, device: str):
        """One message of ``req`` (checked here first, as the library checks it: a bad key is
        refused before anything is sent): an AEAD's (api._one_request's AEADRequest) or a block
        cipher·mode's, padded and unpadded here."""
        from .. import buffers

        arr, wrap = buffers.host_array(data)
        if req.kind == "messages":
            return wrap(self._run(_Message(req, arr, device)), False)
        padding = req.padding
        if req.encrypt and padding:
            from ..modes import padding as _padding

            arr = np.frombuffer(_padding.pad(arr.tobytes(), req.block_size), dtype=np.uint8)
        req.check_length(arr.nbytes)
        out = self._run(_Blocks(req, arr, device))
        if not req.encrypt and padding:
            from ..modes import padding as _padding

            out = np.frombuffer(_padding.unpad(out.tobytes(), req.block_size), dtype=np.uint8)
        return wrap(out, not padding)

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
        out[:] = self._run(_Blocks(req, arr, device, first_block, chain))

    def encrypt_batch(self, messages, cipher: str, *, nonces, key=None, keys=None, aad=None,
                      offsets=None, tag_length=None, device: str = "auto",
                      constant_time: bool = False, implementation=None):
        """As :func:`ciphergrid.encrypt_batch`, run by the service."""
        from .. import aead as _aead

        _aead._check_order("encrypt_batch", messages, cipher)
        req = _aead.batch_request(cipher, True, tag_length, constant_time, implementation)
        return self._batch(req, device, messages, dict(offsets=offsets, tags=None, key=key,
                                                       keys=keys, nonces=nonces, aad=aad))

    def decrypt_batch(self, messages, cipher: str, *, nonces, key=None, keys=None, aad=None,
                      offsets=None, tags=None, tag_length=None, device: str = "auto",
                      constant_time: bool = False, implementation=None):
        """As :func:`ciphergrid.decrypt_batch`, run by the service: a message whose tag fails is
        withheld (zeros, ``ok[i]`` False), nothing raised."""
        from .. import aead as _aead

        _aead._check_order("decrypt_batch", messages, cipher)
        req = _aead.batch_request(cipher, False, tag_length, constant_time, implementation)
        return self._batch(req, device, messages, dict(offsets=offsets, tags=tags, key=key,
                                                       keys=keys, nonces=nonces, aad=aad))

    def _batch(self, req, device, messages, given: dict):
        """The batch of ``req`` (aead.batch_request's): the caller's messages and ``given``
        tables (offsets, tags, key, keys, nonces, aad: the batch functions' keywords) checked
        here by the library's own check (aead.checked_batch), run by the service
        (:meth:`run_batch`)."""
        from .. import aead as _aead
        from ..request import aead_request

        # (no output texts here: the service's reply is the output)
        batch, got = _aead.checked_batch(req, messages, given, output=False)
        m, off = batch.count, batch.off
        try:
            out, res = self.run_batch(aead_request(req.spec, batch, impl=req.impl), got, device)
        finally:
            batch.keys.fill(0)
        if req.encrypt:
            return _aead.BatchResult(True, out, off, res, np.ones(m, dtype=bool))
        return _aead.BatchResult(False, out, off, None, res)

    def run_batch(self, req, got, device: str = "auto"):
        """The batch ``req`` holds (an AEADRequest with its checked ``request.Batch``), opened
        against the received tags ``got`` or sealed, by the service: (the output texts, the
        tags (sealing) or the mask of the messages that verified)."""
        return self._run(_Batch(req, got, device))

    # -- the one path of a buffer op (crypt, aead, batch) -------------------------------------
    def _run(self, op):
        """A buffer op (:class:`_Blocks`, :class:`_Message`, :class:`_Batch`): over a local
        connection one request; over a remote one the op's requests of at most REMOTE_PIECE
        (``op.remote``: its data travel inside the messages)."""
        if self.ch.local:
            return self._exchange(op)
        return op.remote(self._exchange)

    def _exchange(self, op):
        """One request of ``op`` and its reply: the buffer inline in the message (up to
        INLINE_MAX, and always over a remote connection: the reply's data the op's output), or
        through a memfd sealed against shrinking and growing (the connection's arena or, past
        ARENA_MAX, one of the request's own) that the service works on in place.  The result:
        ``op.read`` of the buffer (copied out of an arena, which the next request reuses)."""
        msg = dict(op.msg)
        if op.room <= protocol.INLINE_MAX or not self.ch.local:
            msg["data"] = op.inline()
            back = self._call(msg)["data"]
            if not isinstance(back, bytes) or len(back) != op.reply_size:
                raise protocol.ProtocolError(f"a {msg['op']} reply of the wrong size")
            return op.take(back)
        with self.arena_lock:
            fd, mm, token = self._buffer(op.room)
            try:
                region = np.frombuffer(mm, dtype=np.uint8, count=op.room)
                try:
                    op.write(region)
                    msg.update(op.shared, length=op.room)
                    if token is not None:
                        msg["arena"] = token
                    self._call(msg, [fd])
                finally:
                    op.wipe(region)
                return op.read(region, token is None)
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


# ------------------------------------------------------------------------------ buffer ops
#
# What differs between the three buffer ops is data on one object each, read by Client._run and
# Client._exchange: ``msg`` (the request's fields), ``room`` (the bytes of its buffer, results
# included), ``reply_size`` (the bytes of an inline reply), ``shared`` (the fields a shared
# buffer adds); ``inline()`` / ``take(data)`` (the buffer as the message's data, the reply's
# data as the result), ``write(region)`` / ``read(region, own)`` / ``wipe(region)`` (the same
# through a shared buffer: ``own`` False for the connection's arena, whose bytes are copied
# out), and ``remote(exchange)`` (the op over a remote connection: its requests of at most
# REMOTE_PIECE, each through ``exchange``).

class _Text:
    """An op on one text (``arr``), its result written over it in the buffer."""

    shared = ()   # (no fields of its own for a shared buffer)

    def inline(self) -> bytes:
        return self.arr.tobytes()

    def take(self, data: bytes):
        return np.frombuffer(bytearray(data), dtype=np.uint8)

    def write(self, region) -> None:
        region[:self.arr.nbytes] = self.arr.reshape(-1)

    def wipe(self, region) -> None:
        pass

    def read(self, region, own: bool):
        out = region[:self.reply_size]
        return out if own else out.copy()


class _Blocks(_Text):
    """A block cipher·mode's message (padded already), or a context's piece of it from
    ``first_block`` on (``chain``: CBC's chaining value before it): enciphered in place."""

    def __init__(self, req, arr, device: str, first_block: int | None = None, chain=None):
        self.req, self.arr, self.device = req, arr, device
        self.first_block, self.chain = first_block, chain
        self.msg = {"op": "crypt", "version": protocol.VERSION, "device": device,
                    **protocol.request_fields(req), "padding": None}   # (padded here)
        if first_block is not None:
            self.msg.update(first_block=first_block, chain=chain)
        self.room = self.reply_size = arr.nbytes

    def remote(self, exchange):
        """Past REMOTE_PIECE, in pieces on the mode's grain, each a request from its block on
        (CBC's chaining value carried from the piece before)."""
        req, arr = self.req, self.arr
        n = arr.nbytes
        if n <= protocol.REMOTE_PIECE:
            return exchange(self)
        unit = req.mode.split_unit(req) or (req.block_size if req.mode.carries else None)
        if unit is None:
            raise errors.InvalidArgument(f"{req.spec.name}: one data unit of {n} bytes does not "
                                         f"fit a remote message ({protocol.REMOTE_PIECE} bytes)")
        step = max(unit, protocol.REMOTE_PIECE // unit * unit)
        out = np.empty(n, dtype=np.uint8)
        bs, first, chain = req.block_size, self.first_block or 0, self.chain
        for a in range(0, n, step):
            b = min(n, a + step)
            out[a:b] = exchange(_Blocks(req, arr[a:b], self.device, first + a // bs, chain))
            if req.mode.carries:
                chain = req.mode.carry(req, arr[a:b], out[a:b])
        return out


class _Message(_Text):
    """One AEAD message of ``req`` (aead.message_request's: key, nonce, AAD and tag length
    checked): its text (decryption: then its tag) in the buffer, the result over it
    (encryption: ciphertext || tag, room for the tag after the text)."""

    def __init__(self, req, arr, device: str):
        n, tl = arr.nbytes, req.tag_length
        self.arr, self.tag_length = arr, tl
        self.msg = {"op": "aead", "version": protocol.VERSION, "cipher": req.spec.name,
                    "key": req.key, "nonce": req.nonce, "aad": req.aad, "tag_length": tl,
                    "encrypt": bool(req.encrypt), "device": device, "impl": req.impl}
        self.room = n + tl if req.encrypt else n
        self.reply_size = n + tl if req.encrypt else n - tl
        self.shared = (("text_length", n),)

    def remote(self, exchange):
        if self.room > protocol.REMOTE_PIECE:
            raise errors.InvalidArgument(f"one AEAD message through a remote service is at most "
                                         f"{protocol.REMOTE_PIECE - self.tag_length} bytes (a batch or a "
                                         "sealed file for more)")
        return exchange(self)


class _Batch:
    """A batch of AEAD messages (``req``: an AEADRequest holding its checked ``request.Batch``;
    ``got``: the received tags when opening) in one buffer of protocol.batch_layout's sections;
    the result: (the output texts, the tags (sealing) or the mask of verified messages)."""

    shared = ()   # (no fields of its own for a shared buffer)

    def __init__(self, req, got, device: str):
        b = req.batch
        m, tl = b.count, b.tag_length
        self.req, self.got, self.device = req, got, device
        self.layout, self.room = protocol.batch_layout(
            m, b.src.nbytes, tl, b.keys.shape[0], b.keys.shape[1], b.nonces.shape[1], b.aad.nbytes)
        self.msg = {"op": "batch", "version": protocol.VERSION, "cipher": b.name,
                    "encrypt": bool(b.encrypt), "tag_length": tl, "impl": req.impl,
                    "device": device, "m": m, "n": int(b.src.nbytes), "keys": int(b.keys.shape[0]),
                    "nonce_length": int(b.nonces.shape[1]), "aad_length": int(b.aad.nbytes)}
        self.start = self.layout["out"][0]
        self.reply_size = self.layout["ok"][0] + m - self.start
        self._region = None

    def write(self, region) -> None:
        b, v = self.req.batch, protocol.batch_views(region, self.layout)
        v["text"][:] = b.src
        if self.got is not None:
            v["tags"][:] = self.got.reshape(-1)
        v["off"][:], v["index"][:], v["keys"][:] = b.off, b.key_index, b.keys.reshape(-1)
        v["nonces"][:], v["aad"][:], v["aad_off"][:] = b.nonces.reshape(-1), b.aad, b.aad_off

    def wipe(self, region) -> None:
        protocol.batch_views(region, self.layout)["keys"][:] = 0

    def inline(self) -> bytes:
        region = self._region = np.zeros(self.room, dtype=np.uint8)
        try:
            self.write(region)
            return region.tobytes()
        finally:
            self.wipe(region)

    def take(self, data: bytes):
        self._region[self.start:self.start + len(data)] = np.frombuffer(data, dtype=np.uint8)
        return self.read(self._region, True)

    def read(self, region, own: bool):
        v = protocol.batch_views(region, self.layout)
        out = v["out"] if own else v["out"].copy()
        if self.msg["encrypt"]:
            tags = v["tags"].reshape(self.msg["m"], self.msg["tag_length"])
            return out, tags if own else tags.copy()
        return out, v["ok"].astype(bool)

    def remote(self, exchange):
        """In groups of whole messages whose buffers fit REMOTE_PIECE, each a batch of its own
        (the keys it uses only, wiped once sent)."""
        from ..request import Batch, aead_request

        b = self.req.batch
        groups = self._groups()
        if len(groups) == 1:
            return exchange(self)
        m, tl = b.count, b.tag_length
        out = np.empty(b.src.nbytes, dtype=np.uint8)
        res = np.empty((m, tl), dtype=np.uint8) if b.encrypt else np.empty(m, dtype=bool)
        for i, j in groups:
            rows = np.unique(b.key_index[i:j])
            x, y = int(b.off[i]), int(b.off[j])
            p, q = int(b.aad_off[i]), int(b.aad_off[j])
            keys = b.keys[rows]   # (a copy: wiped below)
            try:
                part = Batch(b.name, b.encrypt, tl, keys,
                             np.searchsorted(rows, b.key_index[i:j]).astype(np.int32),
                             b.nonces[i:j], b.aad[p:q], b.aad_off[i:j + 1] - p, b.src[x:y],
                             b.off[i:j + 1] - x, None)
                out[x:y], res[i:j] = exchange(_Batch(
                    aead_request(self.req.spec, part, impl=self.req.impl),
                    None if self.got is None else self.got[i:j], self.device))
            finally:
                keys.fill(0)
        return out, res

    def _groups(self):
        """[(first message, end)]: whole messages whose buffers fit REMOTE_PIECE."""
        b = self.req.batch
        m, off, aad_off = b.count, b.off, b.aad_off
        if m == 0:
            return [(0, 0)]
        per = 2 * np.diff(off) + np.diff(aad_off) + (b.tag_length + b.nonces.shape[1] + 1 + 4
                                                     + 16 + 8)
        budget = protocol.REMOTE_PIECE - b.keys.size - (1 << 12)
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
