"""The service's wire protocol (docs/service.md), version :data:`VERSION`.

A local connection is a Unix ``SOCK_SEQPACKET`` socket: the kernel keeps each message whole, so
one message is one packet, and its body is one MessagePack map (``msgpack``).  File descriptors
travel beside a message (``SCM_RIGHTS``).  Bulk data never crosses the socket: files and pipes
pass as their descriptors, buffers as a sealed ``memfd`` (at most :data:`INLINE_MAX` bytes
travel inside a message).

Requests carry ``op``; replies carry ``ok: true`` and the op's fields, or ``error: {type,
message}`` (``type``: the name of a ciphergrid error class, which the client raises again).  A
long job also sends ``{"progress": BYTES}`` messages before its reply.
"""

from __future__ import annotations

import array
import socket
import threading

from .. import errors

VERSION = 1
#: the largest message (a packet) either side sends or takes
MAX_MESSAGE = 128 << 10
#: data up to this many bytes travels inside the request and the reply; more goes by memfd
INLINE_MAX = 64 << 10
#: descriptors one message may carry
MAX_FDS = 4


class ProtocolError(errors.ServiceError):
    """A message that is not one of the protocol's (the connection is closed)."""


def send(sock: socket.socket, msg: dict, fds=()) -> None:
    """One message, with descriptors ``fds`` beside it."""
    import msgpack

    body = msgpack.packb(msg, use_bin_type=True)
    if len(body) > MAX_MESSAGE:
        raise ProtocolError(f"a message of {len(body)} bytes (at most {MAX_MESSAGE})")
    if fds:
        socket.send_fds(sock, [body], list(fds))
    else:
        sock.sendall(body)


def recv(sock: socket.socket) -> tuple[dict | None, list]:
    """(the next message, the descriptors that came with it); (None, []) when the peer closed the
    connection.  A malformed message raises ProtocolError (its descriptors closed)."""
    import msgpack

    fds = array.array("i")
    body, anc, flags, _ = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * fds.itemsize))
    got = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            a = array.array("i")
            a.frombytes(data[: len(data) - len(data) % a.itemsize])
            got += list(a)
    try:
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise ProtocolError("a message larger than the protocol allows")
        if not body:
            if got:
                raise ProtocolError("descriptors without a message")
            return None, []
        try:
            msg = msgpack.unpackb(body, raw=False, strict_map_key=True)
        except Exception as e:
            raise ProtocolError(f"not a MessagePack message ({type(e).__name__})") from None
        if not isinstance(msg, dict):
            raise ProtocolError("a message must be a map")
        return msg, got
    except BaseException:
        close_fds(got)
        raise


def close_fds(fds) -> None:
    import os

    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def error_reply(exc: BaseException) -> dict:
    """The reply for a failed request: the error's class (a ciphergrid one, else ServiceError)
    and its one-line message (never key material: the library's messages hold none)."""
    kind = type(exc).__name__ if isinstance(exc, errors.Error) else "ServiceError"
    if isinstance(exc, OSError) and not isinstance(exc, errors.Error):
        kind = "OSError"
    text = str(exc) if isinstance(exc, (errors.Error, OSError)) else f"{type(exc).__name__}: {exc}"
    out = {"error": {"type": kind, "message": text[:1000]}}
    if kind == "OSError" and exc.errno:   # (the client raises the same errno: a full disk is one)
        out["error"].update(errno=exc.errno, message=(exc.strerror or text)[:1000])
    chunk = getattr(exc, "chunk", None)   # (a sealed chunk that failed: its number)
    if isinstance(exc, errors.ChunkFailed) and isinstance(chunk, int):
        out["error"]["chunk"] = chunk
    done = getattr(exc, "service_done", None)   # (bytes a file job wrote before it failed)
    if isinstance(done, int) and not isinstance(done, bool) and done >= 0:
        out["error"]["done"] = done
    return out


def raise_error(reply: dict) -> None:
    """Raise the error a reply carries (its ciphergrid class where it names one: a sealed
    file's CommitmentMismatch, ChunkFailed with its ``chunk``, Truncated keep theirs); a file
    job's bytes written before it failed as the error's ``service_done``."""
    err = reply.get("error")
    if not isinstance(err, dict):
        raise ProtocolError("a reply without ok or error")
    kind, text = str(err.get("type", "")), str(err.get("message", ""))
    if kind == "OSError":
        code = err.get("errno")
        exc = OSError(code, text) if isinstance(code, int) else OSError(text)
    else:
        cls = getattr(errors, kind, None)
        if not (isinstance(cls, type) and issubclass(cls, errors.Error)):
            cls = errors.ServiceError
        exc = cls(text)
        chunk = err.get("chunk")
        if isinstance(exc, errors.ChunkFailed) and isinstance(chunk, int) and not isinstance(chunk, bool):
            exc.chunk = chunk
    done = err.get("done")
    if isinstance(done, int) and not isinstance(done, bool) and done >= 0:
        exc.service_done = done
    raise exc


def peer_creds(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    import struct

    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket."""
    return peer_creds(sock)[1]


def request_fields(req) -> dict:
    """What the server needs to make the same Request (keys included: only inside the socket)."""
    return {"cipher": req.spec.name, "key": bytes(req.key), "iv": bytes(req.iv) if req.iv else None,
            "encrypt": bool(req.encrypt), "padding": req.padding, "sector_size": req.sector_size,
            "start_sector": req.start_sector or None, "impl": req.impl, "allow_weak": bool(req.allow_weak)}


#: a batch request's sections, in their order in its buffer: (name, element type); the client
#: writes text, tags (decryption), off, index, keys, nonces, aad and aad_off, the service out,
#: tags (encryption) and ok
BATCH_SECTIONS = (("text", "u1"), ("out", "u1"), ("tags", "u1"), ("ok", "u1"), ("off", "<i8"),
                  ("index", "<i4"), ("keys", "u1"), ("nonces", "u1"), ("aad", "u1"),
                  ("aad_off", "<i8"))


def batch_layout(m: int, n: int, tag_length: int, keys: int, key_length: int,
                 nonce_length: int, aad_length: int) -> tuple[dict, int]:
    """Where each section of a batch of ``m`` messages (``n`` bytes of text) lies in its buffer:
    ({name: (start byte, element count, element type)}, the buffer's size); every section starts
    on 8 bytes."""
    counts = {"text": n, "out": n, "tags": m * tag_length, "ok": m, "off": m + 1, "index": m,
              "keys": keys * key_length, "nonces": m * nonce_length, "aad": aad_length,
              "aad_off": m + 1}
    import numpy as np

    out, pos = {}, 0
    for name, dtype in BATCH_SECTIONS:
        out[name] = (pos, counts[name], dtype)
        pos += -(-counts[name] * np.dtype(dtype).itemsize // 8) * 8
    return out, pos


def batch_views(region, layout: dict) -> dict:
    """numpy views of ``region`` (a uint8 array) for each section of ``layout``."""
    import numpy as np

    return {name: np.frombuffer(region, dtype=dtype, count=count, offset=start)
            if count else np.zeros(0, dtype=dtype)
            for name, (start, count, dtype) in layout.items()}


#: the largest message on a stream connection (TCP + TLS: the data travels inside)
MAX_STREAM_MESSAGE = 64 << 20
#: the largest buffer one remote request carries (the client sends larger ones in pieces)
REMOTE_PIECE = 32 << 20


class Channel:
    """A connection's messages: ``send(msg, fds=())``, ``recv() -> (msg | None, fds)``,
    ``shutdown()``; ``local``: descriptors and shared memory can travel."""

    local = True

    def __init__(self, sock):
        self.sock = sock

    def send(self, msg: dict, fds=()) -> None:
        send(self.sock, msg, fds)

    def recv(self):
        return recv(self.sock)

    def shutdown(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class StreamChannel(Channel):
    """MessagePack maps back to back on a stream socket (TCP, TLS): msgpack's streaming unpacker
    finds their ends; no descriptors."""

    local = False

    def __init__(self, sock):
        import msgpack

        super().__init__(sock)
        self.lock = threading.Lock()
        self.unpacker = msgpack.Unpacker(raw=False, strict_map_key=True,
                                         max_buffer_size=2 * MAX_STREAM_MESSAGE)

    def send(self, msg: dict, fds=()) -> None:
        import msgpack

        if fds:
            raise ProtocolError("descriptors travel only over a local socket")
        body = msgpack.packb(msg, use_bin_type=True)
        if len(body) > MAX_STREAM_MESSAGE:
            raise ProtocolError(f"a message of {len(body)} bytes (at most {MAX_STREAM_MESSAGE})")
        with self.lock:   # (a job's progress and the time limit's notice: one at a time)
            self.sock.sendall(body)

    def recv(self):
        import msgpack

        while True:
            try:
                msg = next(self.unpacker)
            except StopIteration:
                data = self.sock.recv(1 << 20)
                if not data:
                    return None, []
                try:
                    self.unpacker.feed(data)
                except msgpack.BufferFull:
                    raise ProtocolError("a message larger than the protocol allows") from None
                continue
            except Exception as e:
                raise ProtocolError(f"not a MessagePack message ({type(e).__name__})") from None
            if not isinstance(msg, dict):
                raise ProtocolError("a message must be a map")
            return msg, []
