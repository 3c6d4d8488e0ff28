"""Sealed messages in C2SP chunked encryption (c2sp.org/chunked-encryption, the C2SP repository at
commit 5ba5ee8; docs/format.md): Cobblestone-128 (SHA-512 + AES-128-GCM, the recommended
instantiation) and Cobblestone-256 (SHA-512 + AES-256-GCM), byte-identical to pyca/cryptography's
``cryptography.cobblestone``.

    key || base nonce || commitment = HKDF-Expand(SHA-512, prk = input key,
        info = "c2sp.org/chunked-encryption@v1+" || "AEAD_AES_128_GCM" || 0x00 || salt || context)

A sealed message is salt (24 random bytes) || commitment (32) || the chunks: the plaintext in
16 KiB chunks, the last always shorter (possibly empty), each an AEAD message under the derived
key with nonce = base nonce XOR its number (big-endian), no AAD, ciphertext || tag.  Every chunk is
independent: on a device a message's whole chunks are ONE AEAD batch (aeads.base.Batch: one
key, counter nonces, no AAD) whose texts the device reads and writes where they lie between the
tags (rows of the sealed message: transfer/batches.py), the shorter final chunk one AES-GCM
call on the host; where OpenSSL runs them, its C loop; decryption checks the commitment before any chunk, each
chunk's tag before its plaintext is released, and the final chunk's length (a message cut at a
chunk boundary is truncated).  ``decrypt_range`` authenticates only the chunks a range needs.
"""

from __future__ import annotations

import os
from _operator import _compare_digest   # (hmac.compare_digest itself: constant time, no hashlib)
from _thread import allocate_lock

from .._lazy import numpy_for
from . import lone
from .. import errors
from ..errors import InvalidArgument, InvalidKeySize

np = numpy_for(__name__)

CHUNK = 16384
TAG = 16
SALT = 24
COMMITMENT = 32
HEADER = SALT + COMMITMENT
SEALED_CHUNK = CHUNK + TAG
#: the spec's limit on a message's chunks
MAX_CHUNKS = 1 << 38
#: chunks per AEAD batch where the engine takes only contiguous texts (several engines, a
#: service), and per update of a device's stream encryptor
BATCH_CHUNKS = 4096
PREFIX = b"c2sp.org/chunked-encryption@v1+"


def __getattr__(name: str):
    """The failed-tag classes (errors.TAG_ERRORS: made at their first use) by this module's
    names for them too."""
    return errors.tag_error(name, __name__)


class Scheme:
    """An instantiation: its name, ciphergrid's name of its AEAD, the AEAD's IANA name (in the
    key derivation), the input key's bytes.  (Not a named tuple: one is made by ``eval``.)"""

    __slots__ = ("name", "aead", "iana", "key_len")

    def __init__(self, name: str, aead: str, iana: str, key_len: int):
        self.name, self.aead, self.iana, self.key_len = name, aead, iana, key_len

    def __repr__(self) -> str:
        return f"Scheme({self.name!r}, {self.aead!r}, {self.iana!r}, {self.key_len})"

COBBLESTONE_128 = Scheme("cobblestone-128", "aes-128-gcm", "AEAD_AES_128_GCM", 16)
COBBLESTONE_256 = Scheme("cobblestone-256", "aes-256-gcm", "AEAD_AES_256_GCM", 32)
NONCE = 12


def scheme(aes256: bool = False) -> Scheme:
    return COBBLESTONE_256 if aes256 else COBBLESTONE_128


def _key_of(sch: Scheme, input_key) -> bytes:
    """``input_key`` as bytes, of the length ``sch`` takes (InvalidKeySize)."""
    key = bytes(input_key)
    if len(key) != sch.key_len:
        raise InvalidKeySize(f"{sch.name} takes a {sch.key_len}-byte key, got {len(key)} bytes")
    return key


def derive(sch: Scheme, input_key: bytes, salt: bytes, context: bytes) -> tuple[bytes, bytes, bytes]:
    """(key, base nonce, commitment) of one message (the spec's key derivation)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    input_key = _key_of(sch, input_key)
    if len(salt) != SALT:
        raise InvalidArgument(f"the salt is {SALT} bytes, got {len(salt)}")
    info = PREFIX + sch.iana.encode() + b"\x00" + bytes(salt) + bytes(context)
    okm = HKDFExpand(hashes.SHA512(), sch.key_len + NONCE + COMMITMENT, info).derive(input_key)
    k = sch.key_len
    return okm[:k], okm[k:k + NONCE], okm[k + NONCE:]


def nonces(base: bytes, first: int, count: int) -> np.ndarray:
    """The nonces of chunks [first, first + count), (count, 12) uint8: the base nonce XOR each
    chunk number (below 2^38: its last 8 bytes, one big-endian word a record) as big-endian."""
    out = np.empty(count, dtype=[("head", "V4"), ("low", ">u8")])
    out["head"] = np.frombuffer(base, dtype="V4", count=1)[0]
    low = np.arange(first, first + count, dtype=np.uint64)
    low ^= np.uint64(int.from_bytes(base[NONCE - 8:], "big"))
    out["low"] = low
    return out.view(np.uint8).reshape(count, NONCE)


def sealed_length(n: int) -> int:
    """Bytes of the sealed form of an n-byte message."""
    return HEADER + n + (n // CHUNK + 1) * TAG


def message_length(sealed: int) -> int:
    """Bytes of the message a sealed form of ``sealed`` bytes holds (InvalidTag: no such form:
    cut short at a chunk boundary, or a final chunk shorter than a tag)."""
    body = sealed - HEADER
    last = body % SEALED_CHUNK if body >= 0 else -1
    if body < TAG or last < TAG:
        raise errors.Truncated("the sealed message is truncated or not one (its length is not a "
                               "sealed length): nothing is released")
    return body // SEALED_CHUNK * CHUNK + last - TAG


def _u8(data) -> np.ndarray:
    """Bytes-like data (or a ``mmap``, read where it lies) as a flat uint8 array."""
    import mmap

    from .. import buffers

    if isinstance(data, mmap.mmap):
        return np.frombuffer(data, dtype=np.uint8)
    return buffers.host_array(data)[0].reshape(-1)


def _scratch(buf: np.ndarray | None, n: int) -> np.ndarray:
    """``buf`` when it holds ``n`` bytes, else a new buffer of ``n`` (a batch's texts, reused)."""
    return buf if buf is not None and buf.nbytes >= n else np.empty(n, dtype=np.uint8)


def _native(sch: Scheme, device: str, path: str, nbytes: int, count: int) -> bool:
    """Whether chunks run in OpenSSL's C loop (one call per run of chunks, no batch tables):
    ``native``; ``auto`` on a file (``path`` "stream", the command line: as route.route
    sends a file's AEAD message to OpenSSL), or where route.route sends such a batch to
    OpenSSL."""
    if device == "native" or device == "auto" and path == "stream":
        return True
    if device != "auto":
        return False
    from .. import aeads
    from ..request import aead_request
    from ..route import route

    r = route(aead_request(aeads.spec(sch.aead), nonce_len=NONCE, tag_length=TAG, count=count),
              "auto", nbytes)
    return r.engine.kind == "openssl"


def _host():
    """This thread's runtime's host threads (runtime.Threads: ``budget``, the usable cores
    unless the runtime says fewer)."""
    from ..runtime import current

    return current().threads


def _u8_of(buf, n: int) -> np.ndarray:
    """The first ``n`` bytes of a buffer as a uint8 array (an array: itself)."""
    return buf[:n] if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8, count=n)


def _plan(sch: Scheme, device: str, nbytes: int, count: int, encrypt: bool):
    """The plan (route.route) of ``count`` whole chunks, ``nbytes`` of text, on ``device``."""
    from .. import aeads
    from ..request import aead_request
    from ..route import route

    return route(aead_request(aeads.spec(sch.aead), encrypt=encrypt, nonce_len=NONCE,
                              tag_length=TAG, count=count), device, nbytes)


def _pitched(p) -> bool:
    """Whether plan ``p``'s engine takes a batch whose texts lie between the tags (rows of a
    sealed message, read and written where they are): one device (transfer/batches.py)."""
    return getattr(p.engine, "kind", None) == "device"


def _batch(sch: Scheme, encrypt: bool, key: bytes, base: bytes, first: int, count: int, src, dst):
    """Whole chunks [first, first + count) as ONE AEAD batch (aeads.base.Batch): the derived
    key once, the counter nonces (``nonces``), no AAD; ``src`` and ``dst`` the texts, flat or
    as (count, CHUNK) rows of a sealed message (a pitched view: transfer/batches.py).  Its
    nonces are distinct by construction: no repeated-pair check."""
    from ..aeads.base import Batch

    return Batch(sch.aead, encrypt, TAG, np.frombuffer(key, dtype=np.uint8).reshape(1, -1).copy(),
                 np.zeros(count, dtype=np.int32), nonces(base, first, count),
                 np.zeros(0, dtype=np.uint8), np.zeros(count + 1, dtype=np.int64), src,
                 np.arange(count + 1, dtype=np.int64) * CHUNK, dst)


def _aesgcm(key: bytes):
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _nonce(base: bytes, chunk: int) -> bytes:
    """Chunk ``chunk``'s nonce: the base nonce XOR its number, big-endian."""
    return (int.from_bytes(base, "big") ^ chunk).to_bytes(NONCE, "big")


class Sealer:
    """One message's chunks sealed in OpenSSL's C loop or in batches (the engine of the
    encryptor, of ``encrypt`` and of the command line's file path)."""

    def __init__(self, sch: Scheme, input_key: bytes, context: bytes = b"", *, salt: bytes | None = None,
                 device: str = "auto", path: str = "array"):
        self.sch, self.device, self.path = sch, device, path
        self.chunk = 0     # chunks sealed so far
        self._texts = None  # a batch's ciphertexts, before the tags go between them (reused)
        self._lock = allocate_lock()   # (the batch path's scratch: one batch at a time)
        self._made = (_key_of(sch, input_key), bytes(context))
        self._keys = None   # (key, base nonce, commitment), derived where a path needs them
        # a random salt: pyca's encryptor draws it and seals a lone worker's chunks in order
        # (lone.Sealing; None where pyca has none or the salt is given)
        self._lone = lone.Sealing.made(sch, *self._made, HEADER) if salt is None else None
        if self._lone is not None:
            head = self._lone.header
            self.salt, self.commitment = head[:SALT], head[SALT:]
        else:
            self.salt = os.urandom(SALT) if salt is None else bytes(salt)
            self.commitment = self._derived()[2]

    key = property(lambda self: self._derived()[0], doc="the derived AEAD key")
    base = property(lambda self: self._derived()[1], doc="the base nonce")

    def _derived(self) -> tuple[bytes, bytes, bytes]:
        if self._keys is None:   # (where pyca's encryptor drew the salt)
            self._keys = derive(self.sch, self._made[0], self.salt, self._made[1])
        return self._keys

    def header(self) -> bytes:
        return self.salt + self.commitment

    def _check(self, first: int, n: int, final: bool) -> int:
        """The bytes sealing ``n`` bytes from chunk ``first`` on gives."""
        if not final and n % CHUNK:
            raise InvalidArgument("only whole chunks before the final one")
        count = n // CHUNK + (1 if final else 0)
        if first + count > MAX_CHUNKS:
            raise InvalidArgument("the message passes the spec's 2^38 chunks")
        return n + count * TAG

    def seal(self, pt: np.ndarray, final: bool, out: np.ndarray | None = None) -> np.ndarray:
        """The sealed chunks of ``pt``: whole 16 KiB chunks, and with ``final`` the shorter last
        one (possibly empty) after them; in ``out`` (its first bytes) when given."""
        n = pt.nbytes
        need = self._check(self.chunk, n, final)
        out = np.empty(need, dtype=np.uint8) if out is None else out[:need]
        if out.nbytes != need:
            raise InvalidArgument(f"out holds {out.nbytes} bytes, the sealed chunks {need}")
        self._run(self.chunk, pt, n, final, out, None, False)
        self.chunk += n // CHUNK + (1 if final else 0)
        return out

    def seal_at(self, first: int, src, n: int, final: bool, dst, threads: int | None = None,
                alone: bool = False) -> int:
        """Chunks ``first``, ``first`` + 1, ... sealed from the first ``n`` bytes of ``src`` into
        ``dst`` (contiguous buffers: a bytearray, a writable memoryview, an array), whole chunks
        and with ``final`` the shorter last one; in any order, from several threads at once (the
        command line's file path, transfer/sealed.py).  ``threads``: OpenSSL's threads for this
        call (None: the runtime's thread budget); ``alone``: no other thread seals meanwhile (engines/openssl/aead.py
        ``chunked``).  Returns the bytes written."""
        need = self._check(first, n, final)
        if memoryview(dst).nbytes < need or memoryview(src).nbytes < n:
            raise InvalidArgument(f"the buffers hold less than {n} bytes and their {need} sealed")
        self._run(first, src, n, final, dst, threads, alone)
        return need

    def _run(self, first: int, src, n: int, final: bool, dst, threads: int | None, alone: bool) -> None:
        if _native(self.sch, self.device, self.path, n, n // CHUNK + 1):
            host = None
            if threads is None:
                host = _host()
                threads = host.budget
                alone = threads == 1
            if (self._lone is not None and lone.runs(self.sch, threads, alone)
                    and self._lone.seal(first, src, n, final, dst, self._check(first, n, final),
                                        CHUNK)):
                return
            from ..engines.openssl import aead as ossl

            if ossl.chunked(True, self.sch.aead, self.key, self.base, first, src, dst, n, final,
                            CHUNK, TAG, threads, alone, host) is not None:
                return
        pt, out = _u8_of(src, n), _u8_of(dst, self._check(first, n, final))
        full = n // CHUNK
        rows = out[:full * SEALED_CHUNK].reshape(full, SEALED_CHUNK)
        if full:
            p = _plan(self.sch, self.device, full * CHUNK, full, True)
            if _pitched(p):
                tags = p.run(_batch(self.sch, True, self.key, self.base, first, full,
                                    pt[:full * CHUNK], rows[:, :CHUNK]))
                rows[:, CHUNK:] = tags
            else:
                with self._lock:
                    self._batches(p, first, pt[:full * CHUNK], rows)
        if final:   # (the shorter final chunk, one AES-GCM call on the host)
            out[full * SEALED_CHUNK:] = np.frombuffer(
                _aesgcm(self.key).encrypt(_nonce(self.base, first + full), pt[full * CHUNK:n], None),
                dtype=np.uint8)

    def _batches(self, p, first: int, pt: np.ndarray, rows: np.ndarray) -> None:
        """Whole chunks through plan ``p`` where its engine takes only contiguous texts (several
        engines, a service): BATCH_CHUNKS at a time into a scratch, the texts then put between
        the tags."""
        full = rows.shape[0]
        self._texts = _scratch(self._texts, min(pt.nbytes, BATCH_CHUNKS * CHUNK))
        for a in range(0, full, BATCH_CHUNKS):
            b = min(full, a + BATCH_CHUNKS)
            texts = self._texts[:(b - a) * CHUNK]
            tags = p.run(_batch(self.sch, True, self.key, self.base, first + a, b - a,
                                pt[a * CHUNK:b * CHUNK], texts))
            rows[a:b, :CHUNK] = texts.reshape(b - a, CHUNK)
            rows[a:b, CHUNK:] = tags


class Opener:
    """One sealed message's chunks opened in OpenSSL's C loop or in batches (the engine of the
    decryptor, ``decrypt``, ``decrypt_range`` and the command line's file path): the commitment
    checked first, each chunk's tag before its plaintext is released."""

    def __init__(self, sch: Scheme, input_key: bytes, context: bytes, header, *, device: str = "auto",
                 path: str = "array"):
        self.sch, self.device, self.path = sch, device, path
        header = bytes(header)
        if len(header) != HEADER:
            raise errors.Truncated("the sealed message is shorter than its header: nothing is released")
        self._made = (_key_of(sch, input_key), bytes(context), header)
        self._keys = None   # (key, base nonce), derived where a path needs them
        self._texts = None  # a batch's ciphertexts without their tags (reused)
        self._lock = allocate_lock()   # (the batch path's scratch: one batch at a time)
        # the commitment checked by pyca's decryptor, which then opens a lone worker's chunks
        # (lone.py), or here
        seq = lone.Opening.made(sch, *self._made)
        if seq is None:
            key, base, commitment = derive(sch, self._made[0], header[:SALT], self._made[1])
            self._keys = (key, base)
            if not _compare_digest(commitment, header[SALT:]):
                seq = False
        if seq is False:
            raise errors.CommitmentMismatch(f"{sch.name}: the key commitment does not match "
                                            "(wrong key, passphrase or context, or a damaged "
                                            "header): nothing is released")
        self._lone = seq   # (lone.Opening: a lone worker's chunks in order; None where pyca has none)

    key = property(lambda self: self._derived()[0], doc="the derived AEAD key")
    base = property(lambda self: self._derived()[1], doc="the base nonce")

    def _derived(self) -> tuple[bytes, bytes]:
        if self._keys is None:
            key, context, header = self._made
            self._keys = derive(self.sch, key, header[:SALT], context)[:2]
        return self._keys

    def _check(self, first: int, m: int, final: bool) -> int:
        """The plaintext bytes of ``m`` sealed bytes from chunk ``first`` on (InvalidTag: cut
        short)."""
        full = m // SEALED_CHUNK
        last = m - full * SEALED_CHUNK
        if final and last < TAG or not final and last:
            raise errors.Truncated(f"{self.sch.name}: the sealed message is truncated: nothing more is released")
        if first + full + (1 if final else 0) > MAX_CHUNKS:
            raise errors.InvalidTag("the sealed message passes the spec's 2^38 chunks")
        return full * CHUNK + (last - TAG if final else 0)

    def open(self, ct: np.ndarray, first: int, final: bool, out: np.ndarray | None = None) -> np.ndarray:
        """The plaintext of sealed chunks ``ct`` starting at chunk ``first``: whole sealed chunks,
        and with ``final`` the message's last (shorter) one after them; in ``out`` (its first
        bytes) when given (zeroed, and InvalidTag, when a chunk does not verify)."""
        m = ct.nbytes
        n = self._check(first, m, final)
        out = np.empty(n, dtype=np.uint8) if out is None else out[:n]
        if out.nbytes != n:
            raise InvalidArgument(f"out holds {out.nbytes} bytes, the opened chunks {n}")
        self._run(first, ct, m, final, out, n, None, False)
        return out

    def open_at(self, first: int, src, m: int, final: bool, dst, threads: int | None = None,
                alone: bool = False) -> int:
        """Sealed chunks ``first``, ``first`` + 1, ... (the first ``m`` bytes of ``src``: whole
        sealed chunks, and with ``final`` the message's last one) opened into ``dst``; in any
        order, from several threads at once (the command line's file path, transfer/sealed.py).
        InvalidTag (the plaintext in ``dst`` zeroed) when one does not verify or the message is
        cut short.  ``threads``: OpenSSL's threads for this call (None: the runtime's thread budget); ``alone``: no
        other thread opens meanwhile.  Returns the bytes written."""
        n = self._check(first, m, final)
        if memoryview(dst).nbytes < n or memoryview(src).nbytes < m:
            raise InvalidArgument(f"the buffers hold less than {m} sealed bytes and their {n}")
        self._run(first, src, m, final, dst, n, threads, alone)
        return n

    def _run(self, first: int, src, m: int, final: bool, dst, n: int, threads: int | None,
             alone: bool) -> None:
        if _native(self.sch, self.device, self.path, m, m // SEALED_CHUNK + 1):
            host = None
            if threads is None:
                host = _host()
                threads = host.budget
                alone = threads == 1
            if (self._lone is not None and lone.runs(self.sch, threads, alone)
                    and self._lone.open_(first, src, m, final, dst, n, CHUNK, TAG, self._derived)):
                return
            import ctypes

            from ..engines.openssl import aead as ossl

            bad = ossl.chunked(False, self.sch.aead, self.key, self.base, first, src, dst, m, final,
                               CHUNK, TAG, threads, alone, host)
            if bad is not None:
                if bad >= 0:
                    ctypes.memset(ossl.address(dst), 0, n)
                    raise errors.ChunkFailed(f"{self.sch.name}: chunk {first + bad} does not "
                                             "verify (altered, reordered or from another "
                                             "message): nothing is released", first + bad)
                return
        ct, out = _u8_of(src, m), _u8_of(dst, n)
        full = m // SEALED_CHUNK
        rows = ct[:full * SEALED_CHUNK].reshape(full, SEALED_CHUNK)
        if full:
            p = _plan(self.sch, self.device, full * CHUNK, full, False)
            try:
                if _pitched(p):
                    ok = p.run(_batch(self.sch, False, self.key, self.base, first, full,
                                      rows[:, :CHUNK], out[:full * CHUNK]),
                               tags=rows[:, CHUNK:])   # (each piece's tags read as it is done)
                else:
                    with self._lock:
                        ok = self._batches(p, first, rows, out[:full * CHUNK])
            except BaseException:   # (a device error, an interrupt: pieces already down hold
                out.fill(0)         # plaintext whose tags were not compared)
                raise
            if not ok.all():
                self._failed(out, first + int(np.flatnonzero(~ok)[0]))
        if final:   # (the shorter final chunk, one AES-GCM call on the host)
            from cryptography.exceptions import InvalidTag as _Bad

            try:
                pt = _aesgcm(self.key).decrypt(_nonce(self.base, first + full),
                                               ct[full * SEALED_CHUNK:m], None)
            except _Bad:
                self._failed(out, first + full)
            out[full * CHUNK:] = np.frombuffer(pt, dtype=np.uint8)

    def _failed(self, out: np.ndarray, chunk: int) -> None:
        out.fill(0)
        raise errors.ChunkFailed(f"{self.sch.name}: chunk {chunk} does not verify (altered, "
                                 "reordered or from another message): nothing is released", chunk)

    def _batches(self, p, first: int, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Whole sealed chunks through plan ``p`` where its engine takes only contiguous texts
        (several engines, a service): BATCH_CHUNKS at a time, their texts and tags taken apart
        first; the mask of those that verified."""
        full = rows.shape[0]
        self._texts = _scratch(self._texts, min(out.nbytes, BATCH_CHUNKS * CHUNK))
        ok = np.ones(full, dtype=bool)
        for a in range(0, full, BATCH_CHUNKS):
            b = min(full, a + BATCH_CHUNKS)
            texts = self._texts[:(b - a) * CHUNK]
            texts.reshape(b - a, CHUNK)[:] = rows[a:b, :CHUNK]
            ok[a:b] = p.run(_batch(self.sch, False, self.key, self.base, first + a, b - a,
                                   texts, out[a * CHUNK:b * CHUNK]),
                            tags=np.ascontiguousarray(rows[a:b, CHUNK:]))
            if not ok[a:b].all():
                break
        return ok


def encrypt(data, key: bytes, context: bytes = b"", *, aes256: bool = False, salt: bytes | None = None,
            device: str = "auto") -> bytes:
    """``data`` sealed (salt || commitment || chunks): the bytes of pyca's Cobblestone
    encryptor's update + finalize with the same salt."""
    s = Sealer(scheme(aes256), key, context, salt=salt, device=device)
    return s.header() + s.seal(_u8(data), final=True).tobytes()


def decrypt(sealed, key: bytes, context: bytes = b"", *, aes256: bool = False,
            device: str = "auto") -> bytes:
    """The message of ``sealed`` (InvalidTag and nothing released: a wrong key or context, an
    altered, reordered, truncated or extended message)."""
    ct = _u8(sealed)
    message_length(ct.nbytes)
    op = Opener(scheme(aes256), key, context, ct[:HEADER].tobytes(), device=device)
    return op.open(ct[HEADER:], 0, final=True).tobytes()


def decrypt_range(sealed, key: bytes, context: bytes = b"", offset: int = 0, length: int | None = None,
                  *, aes256: bool = False, device: str = "auto") -> bytes:
    """Bytes [offset, offset + length) of the message (``length`` None: to its end; a negative
    ``offset``: from its end), authenticating only the chunks they lie in -- and the final chunk
    wherever the range is given relative to the end or reaches it (the message's length is then
    authenticated).  ``sealed``: anything indexable as bytes (a ``mmap`` of a file: only the
    chunks read are paged in)."""
    ct = _u8(sealed)
    n = message_length(ct.nbytes)
    op = Opener(scheme(aes256), key, context, ct[:HEADER].tobytes(), device=device)
    from_end = offset < 0 or length is None
    if offset < 0:
        offset += n
    end = n if length is None else offset + length
    if length is None and offset > n:
        raise InvalidArgument(f"the offset {offset} is not within the message's {n} bytes")
    if offset < 0 or offset > n or length is not None and length < 0 or end > n:
        raise InvalidArgument(f"the range [{offset}, {end}) is not within the message's {n} bytes")
    last = n // CHUNK                                  # the final chunk's number
    first_c = offset // CHUNK
    end_c = (end - 1) // CHUNK + 1 if end > offset else first_c + 1   # the chunks holding it
    if from_end or end == n:                           # (the message's length authenticated)
        end_c = last + 1
    end_c = min(end_c, last + 1)
    stop = min(ct.nbytes, HEADER + end_c * SEALED_CHUNK)
    pt = op.open(ct[HEADER + first_c * SEALED_CHUNK:stop], first_c, final=end_c == last + 1)
    a = offset - first_c * CHUNK
    return pt[a:a + (end - offset)].tobytes()
