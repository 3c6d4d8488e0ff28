"""The public API of the AEADs (authenticated encryption with associated data), in the idiom of
pyca/cryptography.

    ct = ciphergrid.encrypt(data, "aes-256-gcm", key=k, nonce=n, aad=b"hdr")   # ciphertext || tag
    pt = ciphergrid.decrypt(ct, "aes-256-gcm", key=k, nonce=n, aad=b"hdr")     # or InvalidTag
    ciphergrid.AESGCM(k).encrypt(nonce, data, associated_data)                  # pyca's classes
    r = ciphergrid.encrypt_batch(messages, "chacha20-poly1305", key=k, nonces=ns)  # data first
    r = ciphergrid.decrypt_batch(r.messages, "chacha20-poly1305", key=k, nonces=ns)
    r.messages[i] is None where r.ok[i] is False: that message's tag failed, its plaintext is withheld

The public functions check their arguments into a ``request.AEADRequest`` once
(:func:`message_request`, :func:`batch_request`); the internals take it.  One message is a
batch of one: everything goes through ``request.Batch``, as an AEADRequest, to the engine that
``route.route`` picks (a GPU for large work, OpenSSL where it has the AEAD, else an OpenCL
CPU device).  No plaintext is returned before its tag verified: a failed message's output is
zeroed (``out=`` included) and ``InvalidTag`` raised (one-shot) or ``None`` given (batches).
"""

from __future__ import annotations

import os

import numpy as np

from . import aeads, buffers
# (aead_tables.py holds the tables and checks these functions share)
from .aead_tables import Beside as _Beside
from .aead_tables import REPEATS_BESIDE as _REPEATS_BESIDE
from .aead_tables import aad_table as _aad_table
from .aead_tables import check_limits as _check_limits
from .aead_tables import implementation_of as _implementation
from .aead_tables import key_table as _key_table
from .aead_tables import longest_of as _longest
from .aead_tables import nonce_table as _nonce_table
from .aead_tables import refuse_repeats as _refuse_repeats
from .aead_tables import tag_length_of as _tag_length
from .errors import InvalidArgument, InvalidTag
from .request import Batch, Closing, aead_request

I64 = np.int64


# --------------------------------------------------------------------------- one message

def message_request(cipher, encrypt: bool, key, nonce, aad=None, tag_length: int | None = None,
                    constant_time: bool = False, implementation: str | None = None):
    """One message's request (``request.AEADRequest``) of AEAD ``cipher`` (a name or an
    ``aeads.AEADSpec``): key, nonce, AAD, tag length and implementation checked here, once
    (``TypeError`` for a key, nonce or AAD that is not bytes-like; the AEAD's errors)."""
    spec = aeads.spec(cipher) if isinstance(cipher, str) else cipher
    aead = spec.aead
    key = buffers.bytes_like(key, "key")
    if nonce is None:
        raise InvalidArgument(f"{spec.name} needs a nonce (nonce=): "
                              f"{aead.default_nonce_length} bytes, new for every message under one key")
    nonce = buffers.bytes_like(nonce, "nonce")
    aad = buffers.bytes_like(aad if aad is not None else b"", "aad")
    tl = _tag_length(aead, tag_length)
    aead.check(spec.name, len(key), len(nonce), tl)
    return aead_request(spec, encrypt=encrypt, tag_length=tl,
                        impl=_implementation(aead, constant_time, implementation),
                        key=key, nonce=nonce, aad=aad)


def route_message(cipher, encrypt: bool, nbytes: int, nonce_len: int,
                  tag_length: int | None = None, device: str = "auto", path: str = "array"):
    """Where one message of ``nbytes`` input bytes (decryption: its text, then its tag) of AEAD
    ``cipher`` (a name or an ``aeads.AEADSpec``) runs: the plan (``plan.Plan``) that
    :func:`crypt` runs it on.  ``path``: "array" (host data), "stream" (a file's: the command line),
    "resident" (GPU arrays).  A caller that says where a message runs (the command line's
    ``-v``) computes it once here and hands it to ``crypt(plan=)``."""
    spec = aeads.spec(cipher) if isinstance(cipher, str) else cipher
    tl = _tag_length(spec.aead, tag_length)
    req = aead_request(spec, encrypt=encrypt, nonce_len=nonce_len, tag_length=tl)
    return route_one(req, nbytes, device, path)


def route_one(req, nbytes: int, device: str, path: str, resident_device: str | None = None):
    """The plan of ``req``'s one message of ``nbytes`` input bytes (its text, then its tag when
    decrypting) through route.route: the one decision (GPU-resident data: on
    ``resident_device`` unless ``device`` names another).  A caller holding the message's
    request (message_request) routes it here and runs the same request on the plan
    (``crypt(req, ..., plan=)``)."""
    from .route import route

    text = nbytes if req.encrypt else max(0, nbytes - req.tag_length)
    return route(req, device, text, path=path, resident_device=resident_device)


def crypt(req, data, device: str = "auto", out=None, path: str = "array", *, plan=None,
          stats=None):
    """ciphergrid.encrypt/decrypt of one AEAD message: ``req`` from :func:`message_request`,
    ``data`` its text (decryption: then its tag); ``path`` "stream": the data is a file's (the
    command line).  ``plan``: where it runs (:func:`route_one`'s answer for ``req``), routed
    here when None.  ``stats``: a SchedulerStats filled in with what ran."""
    if getattr(req, "kind", None) != "messages" or req.key is None or req.nonce is None:
        raise TypeError("aead.crypt runs one message's request (aead.message_request), "
                        f"not {type(req).__name__}")
    spec, tl, encrypt = req.spec, req.tag_length, req.encrypt
    gpu = buffers.gpu_array(data)
    arr, wrap = gpu if gpu is not None else buffers.host_array(data)
    n = arr.nbytes
    if not encrypt and n < tl:
        raise InvalidTag(f"{spec.name}: the input ({n} bytes) is shorter than its tag ({tl} bytes)")
    _check_limits(spec, n if encrypt else n - tl, len(req.aad))
    if gpu is not None:
        return _crypt_gpu(req, arr, wrap, out, device, plan, stats,
                          wait=not buffers.cupy_only(data, out))
    dst = buffers.output(out, n + tl if encrypt else n - tl, arr)
    if plan is None:
        plan = route_one(req, n, device, path)
    _one(req, plan, arr, dst, path, stats)
    return out if out is not None else wrap(dst, False)


def _one(req, plan, arr, dst, path: str, stats=None) -> None:
    """One message ``arr`` (its text, then its tag when decrypting) into ``dst`` (the text, then
    the tag when encrypting) on ``plan``: host arrays (``path`` "array", or "stream": a
    file's), or GPU arrays on a CUDA device ("resident").  A tag that fails zeroes ``dst`` and
    raises InvalidTag."""
    tl = req.tag_length
    text = arr.nbytes if req.encrypt else arr.nbytes - tl
    batch = Batch.one(req.name, req.encrypt, tl, req.key, req.nonce, req.aad, arr[:text],
                      dst[:text])
    if req.encrypt:
        tag = plan.run(batch, impl=req.impl, stats=stats)[0]
        if path == "resident":
            dst[text:].set(tag)
        else:
            dst[text:] = tag
        return
    tag = arr[text:]
    tag = (tag.get() if path == "resident" else tag).reshape(1, tl)
    try:
        ok = plan.run(batch, tags=tag, impl=req.impl, stats=stats)
    except BaseException:
        dst[:] = 0   # (a device error or an interrupt mid-way: no unverified plaintext stays)
        raise
    if not ok[0]:
        dst[:] = 0
        raise _tag_fails(req.spec)


def _tag_fails(spec) -> InvalidTag:
    """The error of a message whose tag does not verify (its plaintext already withheld)."""
    return InvalidTag(f"{spec.name}: the tag does not verify (wrong key, nonce or associated "
                      "data, or the data was altered): no plaintext is released")


def _crypt_gpu(req, src, wrap, out, device, plan=None, stats=None, wait=True):
    """GPU-resident data (CuPy arrays, CUDA DLPack tensors): where route puts it (the data's
    CUDA device unless told otherwise), on CuPy's current stream, the kernels on the arrays
    where they lie and the tag written after the text on the device
    (engines.device.DeviceEngine.aead_resident: only key, nonce and AAD cross the bus, and a
    decryption's tag); through host copies where the
    engine routed to is not a CUDA device.  An encryption returns once queued unless ``wait``
    (other arrays than CuPy's); a decryption's tag is compared first (a failure zeroes the
    output and raises InvalidTag)."""
    import cupy

    encrypt, tl = req.encrypt, req.tag_length
    n = src.nbytes
    r = plan
    if r is None:
        r = route_one(req, n, device, "resident", f"cuda:{src.device.id}")
    out_n = n + tl if encrypt else n - tl
    dst = buffers.gpu_output(out, out_n, src)
    runs = getattr(r.engine, "runs_resident", None)
    if r.path == "resident" and runs is not None and runs(src, dst):
        if not r.engine.aead_resident(req.name, encrypt, req.key, req.nonce, req.aad, tl, src,
                                      dst, n if encrypt else n - tl, req.impl, stats=stats):
            raise _tag_fails(req.spec)
        if wait and encrypt:
            with src.device:
                cupy.cuda.get_current_stream().synchronize()
    elif r.path == "resident":
        with src.device:   # (the caller's work on its arrays is done: their device's stream)
            cupy.cuda.get_current_stream().synchronize()
        _one(req, r, src, dst, "resident", stats)
    else:
        host = np.empty(out_n, dtype=np.uint8)
        try:
            _one(req, r, cupy.asnumpy(src), host, "array", stats)
            dst.set(host)
        except InvalidTag:
            dst.fill(0)
            raise
    return out if out is not None else wrap(dst, False)


# --------------------------------------------------------------------------- batches

class BatchResult:
    """What ``encrypt_batch``/``decrypt_batch`` give back.

    Attributes:
        ok: numpy bool array, one per message: its tag verified (always True for encryption).
        data: the output texts, one uint8 buffer in the input's layout (``offsets``); a failed
            message's bytes are zero.
        tags: (m, tag_length) uint8 array of the tags (encryption).
        offsets: (m + 1,) int64: message i is ``data[offsets[i]:offsets[i + 1]]``.
        messages: a list, one per message: ``bytes`` (ciphertext || tag when encrypting, the
            plaintext when decrypting), or ``None`` for a message whose tag failed.
        failed: the indices of the messages whose tag failed.
    """

    def __init__(self, encrypt: bool, data, offsets, tags, ok):
        self.encrypt = encrypt
        self.data, self.offsets, self.tags, self.ok = data, offsets, tags, ok

    @property
    def failed(self) -> list[int]:
        return [int(i) for i in np.flatnonzero(~self.ok)]

    @property
    def messages(self) -> list:
        out = []
        for i in range(len(self.ok)):
            a, b = int(self.offsets[i]), int(self.offsets[i + 1])
            if not self.ok[i]:
                out.append(None)
            elif self.encrypt:
                out.append(self.data[a:b].tobytes() + self.tags[i].tobytes())
            else:
                out.append(self.data[a:b].tobytes())
        return out

    def __len__(self) -> int:
        return len(self.ok)

    def __iter__(self):
        return iter(self.messages)

    def __getitem__(self, i):
        return self.messages[i]

    def __repr__(self) -> str:
        return (f"BatchResult({len(self)} messages, {'encrypted' if self.encrypt else 'decrypted'}"
                f", {len(self.failed)} failed)")


def _texts(spec, messages, offsets, encrypt: bool, tags, tl: int):
    """(src uint8, offsets, received tags or None, the longest message's bytes as ``_longest``
    gives them) from a list of messages (decryption: each ending with its tag) or one buffer +
    offsets (decryption: tags= separately)."""
    if offsets is not None:
        src = buffers.as_u8(messages)
        off = np.asarray(offsets, dtype=I64)
        if (off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != src.nbytes
                or not bool((off[1:] >= off[:-1]).all())):
            raise InvalidArgument("offsets must rise from 0 to the buffer's size (m + 1 entries)")
        m = off.size - 1
        longest = _longest(off, spec.aead.max_message)
        got = None
        if not encrypt:
            if tags is None:
                raise InvalidArgument("decrypt_batch with offsets= needs tags= (one per message)")
            got = np.asarray(buffers.as_u8(tags) if not isinstance(tags, np.ndarray) else tags,
                             dtype=np.uint8).reshape(m, tl)
        elif tags is not None:
            raise InvalidArgument("tags= is for decrypt_batch")
        return src, off, got, longest
    if tags is not None:
        raise InvalidArgument("tags= goes with offsets=; in a list each message ends with its tag")
    if isinstance(messages, (bytes, bytearray, memoryview, np.ndarray)):
        raise InvalidArgument("messages is a list of messages, or one buffer with offsets=")
    msgs = [buffers.as_u8(x) for x in messages]
    m = len(msgs)
    got = None
    if not encrypt:
        short = [i for i, x in enumerate(msgs) if x.nbytes < tl]
        if short:
            raise InvalidArgument(f"message {short[0]} is shorter than its tag ({tl} bytes)")
        got = np.empty((m, tl), dtype=np.uint8)
        for i, x in enumerate(msgs):
            got[i] = x[x.nbytes - tl:]
        msgs = [x[:x.nbytes - tl] for x in msgs]
    off = np.zeros(m + 1, dtype=I64)
    off[1:] = np.cumsum([x.nbytes for x in msgs])
    src = np.concatenate(msgs) if m else np.zeros(0, dtype=np.uint8)
    return src, off, got, max((x.nbytes for x in msgs), default=0)


def batch_request(cipher, encrypt: bool, tag_length: int | None = None,
                  constant_time: bool = False, implementation: str | None = None):
    """A batch's request (``request.AEADRequest``, without its messages yet) of AEAD
    ``cipher`` (a name or an ``aeads.AEADSpec``): tag length and implementation checked."""
    spec = aeads.spec(cipher) if isinstance(cipher, str) else cipher
    return aead_request(spec, encrypt=encrypt, tag_length=_tag_length(spec.aead, tag_length),
                        impl=_implementation(spec.aead, constant_time, implementation))


def checked_batch(req, messages, given: dict, out=None, *, output: bool = True):
    """(the ``request.Batch`` of ``req`` (:func:`batch_request`'s), its received tags or None)
    from a batch function's ``messages`` and the ``given`` tables (``offsets``, ``tags``,
    ``key``, ``keys``, ``nonces``, ``aad``: encrypt_batch's and decrypt_batch's keywords; a
    service's batch adds ``key_index`` (``keys`` then its table of distinct keys) and
    ``aad_offsets`` (``aad`` then one buffer)), checked as every caller checks them: texts,
    keys, nonces, AAD, the AEAD's limits.  The output texts go into ``out`` (a new array where
    None; none with ``output=False``: a service's reply is the output).  The key table is wiped
    when a check fails."""
    spec, tl, g = req.spec, req.tag_length, given
    src, off, got, longest = _texts(spec, messages, g["offsets"], req.encrypt, g["tags"], tl)
    m = off.size - 1
    table, index = _key_table(spec, g["key"], g["keys"], m, g.get("key_index"))
    try:
        non = _nonce_table(spec, g["nonces"], m, tl, table.shape[1])
        aad_arr, aad_off = _aad_table(g["aad"], m, g.get("aad_offsets"))
        _check_limits(spec, longest, _longest(aad_off, spec.aead.max_aad))
        dst = buffers.output(out, src.nbytes, src) if output else None
    except BaseException:
        table.fill(0)
        raise
    return Batch(spec.name, req.encrypt, tl, table, index, non, aad_arr, aad_off, src, off,
                 dst), got


def _batch(req, device, messages, given: dict, out=None) -> BatchResult:
    """``encrypt_batch``/``decrypt_batch`` of ``req`` (:func:`batch_request`): the caller's
    messages and tables checked into a ``request.Batch`` (:func:`checked_batch`), then run
    (:func:`run_batch`)."""
    batch, got = checked_batch(req, messages, given, out)
    return run_batch(aead_request(req.spec, batch, impl=req.impl), got, device)


def run_batch(req, got, device: str = "auto", plan=None) -> BatchResult:
    """The batch of ``req`` (an AEADRequest holding its checked ``request.Batch``: ``_batch``
    makes it from the caller's arguments, the service from a client's request), opened
    against the received tags ``got`` or sealed: the limits, nonce repeats, the run, the
    result.  ``plan``: where it runs (route.route's for its sizes), routed here when None."""
    from .route import route

    batch, spec = req.batch, req.spec
    aead, encrypt, m = spec.aead, batch.encrypt, batch.count
    repeats = None
    try:
        _check_limits(spec, _longest(batch.off, aead.max_message),
                      _longest(batch.aad_off, aead.max_aad))
        if encrypt:
            if m < _REPEATS_BESIDE:
                _refuse_repeats(spec, batch.key_index, batch.nonces)
            else:  # (a large batch: checked beside the device work, see _Beside)
                repeats = _Beside(_refuse_repeats, spec, batch.key_index, batch.nonces)
    except BaseException:
        batch.wipe()   # (refused before it ran: the run would have wiped it)
        raise
    dst, off = batch.dst, batch.off
    if m == 0:
        batch.wipe()
        return BatchResult(encrypt, dst, off, np.zeros((0, batch.tag_length), np.uint8),
                           np.ones(0, bool))
    try:
        r = plan if plan is not None else route(req, device, int(batch.src.nbytes))
        res = r.run(batch, tags=got, impl=req.impl, beside=repeats)
    except BaseException:
        if not encrypt:   # (a device error or an interrupt mid-way: slices or pieces already
            dst[...] = 0  # down hold plaintext whose tag was not compared)
        raise
    finally:
        if repeats is not None and repeats.failed():
            dst[...] = 0          # (ciphertexts under a repeated nonce: none is returned)
    if repeats is not None:
        repeats.result()          # (the InvalidArgument of a repeated pair)
    if encrypt:
        return BatchResult(True, dst, off, res, np.ones(m, dtype=bool))
    return BatchResult(False, dst, off, None, np.asarray(res, dtype=bool))


_BATCH_DOC = """
    Arguments (the data first, then the cipher, as for :func:`ciphergrid.encrypt`):
        messages: a list of bytes-like messages (decryption: each ciphertext || tag), or one
            buffer (bytes-like, numpy) holding them all back to back with ``offsets``.
        cipher: an AEAD name ("aes-128-gcm", "chacha20-poly1305", "ascon-aead128", "aegis-128l").
        key: one key for every message, or ``keys``: one per message (a list, or an (m, key
            length) array).
        nonces: one per message: a list of bytes-like of one length, or an (m, nonce length) array.
        aad: the associated data: None, one bytes-like for every message, or a list.
        offsets: with one buffer: m + 1 rising offsets, message i = buffer[offsets[i]:offsets[i+1]]
            (zero-copy for large batches).
        tags: (decrypt_batch with offsets) the tags, an (m, tag_length) array or their bytes.
        tag_length: bytes of each tag (the AEAD's default when None).
        device, constant_time, implementation: as for :func:`ciphergrid.encrypt`.
        out: a writable buffer of the texts' total size (without tags) for ``data`` in the
            layout of ``offsets``; reusing one avoids the page faults of fresh memory.

    Returns:
        a :class:`BatchResult` (``messages``, ``ok``, ``failed``, ``data``, ``tags``, ``offsets``).
"""


def _check_order(fn: str, messages, cipher) -> None:
    """The module-level batches take the data first (``encrypt_batch(messages, cipher, ...)``, as
    ``encrypt(data, cipher, ...)``): a clear TypeError for the cipher first, or a cipher that is
    not a name."""
    if isinstance(messages, str):
        if aeads.is_aead(messages):
            raise TypeError(f"{fn}(messages, cipher, ...): the messages come first, then the "
                            f"cipher; got the cipher name {messages!r} first")
        raise TypeError(f"{fn}(messages, cipher, ...): the messages are bytes-like (a list of "
                        f"them, or one buffer with offsets=), not a str")
    if not isinstance(cipher, str):
        raise TypeError(f"{fn}(messages, cipher, ...): cipher is an AEAD name (a str), got "
                        f"{type(cipher).__name__}")


def encrypt_batch(messages, cipher: str, *, nonces, key=None, keys=None, aad=None, offsets=None,
                  tag_length: int | None = None, device: str = "auto", constant_time: bool = False,
                  implementation: str | None = None, out=None) -> BatchResult:
    _check_order("encrypt_batch", messages, cipher)
    req = batch_request(cipher, True, tag_length, constant_time, implementation)
    given = dict(offsets=offsets, tags=None, key=key, keys=keys, nonces=nonces, aad=aad)
    return _batch(req, device, messages, given, out)


encrypt_batch.__doc__ = """Encrypt many independent messages of one AEAD in one device launch set.

    A (key, nonce) pair that repeats within the batch is refused (InvalidArgument).
""" + _BATCH_DOC


def decrypt_batch(messages, cipher: str, *, nonces, key=None, keys=None, aad=None, offsets=None,
                  tags=None, tag_length: int | None = None, device: str = "auto",
                  constant_time: bool = False, implementation: str | None = None,
                  out=None) -> BatchResult:
    _check_order("decrypt_batch", messages, cipher)
    req = batch_request(cipher, False, tag_length, constant_time, implementation)
    given = dict(offsets=offsets, tags=tags, key=key, keys=keys, nonces=nonces, aad=aad)
    return _batch(req, device, messages, given, out)


decrypt_batch.__doc__ = """Decrypt and verify many messages of one AEAD in one device launch set.

    A message whose tag fails is withheld (``None`` in ``messages``, zeros in ``data``,
    ``ok[i]`` False); the others are returned.  Nothing is raised for a failed tag.
""" + _BATCH_DOC


# --------------------------------------------------------------------------- pyca-style classes

class _AEADClass(Closing):
    """Keyed AEAD object in pyca/cryptography's shape: ``encrypt(nonce, data, associated_data)``
    returns ciphertext || tag, ``decrypt(nonce, data, associated_data)`` the plaintext or raises
    ``ciphergrid.InvalidTag``.  ``device``, ``constant_time``, ``implementation``: as for
    :func:`ciphergrid.encrypt`.  The key is kept, never shown; ``close()`` (or ``with``) zeroes
    this object's copy."""

    _names: dict = {}       # key length -> cipher name
    _key_bits: tuple = ()

    def __init__(self, key, *, device: str = "auto", tag_length: int | None = None,
                 constant_time: bool = False, implementation: str | None = None):
        key = buffers.bytes_like(key, "key")
        name = self._names.get(len(key))
        if name is None:
            from .errors import InvalidKeySize
            from .registry import key_words

            raise InvalidKeySize(f"{type(self).__name__} takes {key_words(self._names)}, got "
                                 f"{len(key)} bytes")
        self._spec = aeads.spec(name)
        self._key = bytearray(key)
        self._tl = _tag_length(self._spec.aead, tag_length)
        self._impl = _implementation(self._spec.aead, constant_time, implementation)
        if device != "auto":
            from .devices import check_spec

            check_spec(device)
        self.device = device

    @classmethod
    def generate_key(cls, bit_length: int | None = None) -> bytes:
        bits = bit_length or (8 * max(cls._names))
        if bits % 8 or bits // 8 not in cls._names:
            raise InvalidArgument(f"bit_length must be one of {sorted(8 * k for k in cls._names)}")
        return os.urandom(bits // 8)

    @property
    def name(self) -> str:
        return self._spec.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec.name!r}, device={self.device!r})"

    def _request(self, encrypt: bool, nonce, associated_data):
        return message_request(self._spec, encrypt, bytes(self._key), nonce, associated_data,
                               self._tl, False, self._impl)

    def encrypt(self, nonce, data, associated_data=None) -> bytes:
        return bytes(crypt(self._request(True, nonce, associated_data), data, self.device))

    def decrypt(self, nonce, data, associated_data=None) -> bytes:
        return bytes(crypt(self._request(False, nonce, associated_data), data, self.device))

    def encrypt_batch(self, nonces, messages, associated_data=None, *, offsets=None) -> BatchResult:
        return encrypt_batch(messages, self._spec.name, key=bytes(self._key), nonces=nonces,
                             aad=associated_data, offsets=offsets, tag_length=self._tl,
                             device=self.device, implementation=self._impl)

    def decrypt_batch(self, nonces, messages, associated_data=None, *, offsets=None,
                      tags=None) -> BatchResult:
        return decrypt_batch(messages, self._spec.name, key=bytes(self._key), nonces=nonces,
                             aad=associated_data, offsets=offsets, tags=tags,
                             tag_length=self._tl, device=self.device, implementation=self._impl)

    def close(self) -> None:
        for i in range(len(self._key)):
            self._key[i] = 0


class AESGCM(_AEADClass):
    """AES-GCM (NIST SP 800-38D) with a 128-, 192- or 256-bit key; nonces of 12 bytes
    (recommended) or any other length; ``tag_length`` 12 to 16 (default 16)."""

    _names = {16: "aes-128-gcm", 24: "aes-192-gcm", 32: "aes-256-gcm"}


class ChaCha20Poly1305(_AEADClass):
    """ChaCha20-Poly1305 (RFC 8439): a 256-bit key, 12-byte nonces, 16-byte tags."""

    _names = {32: "chacha20-poly1305"}


class AsconAEAD128(_AEADClass):
    """Ascon-AEAD128 (NIST SP 800-232): a 128-bit key, 16-byte nonces, 16-byte tags."""

    _names = {16: "ascon-aead128"}


class AEGIS128L(_AEADClass):
    """AEGIS-128L (the CFRG AEGIS specification): a 128-bit key, 16-byte nonces, tags of 16 or
    32 bytes (``tag_length``; 16 by default)."""

    _names = {16: "aegis-128l"}


__all__ = ["AESGCM", "ChaCha20Poly1305", "AsconAEAD128", "AEGIS128L", "BatchResult",
           "encrypt_batch", "decrypt_batch"]
