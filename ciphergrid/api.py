"""The public Python API, in the idiom of pyca/cryptography.

    ciphergrid.encrypt(data, "aes-256-ctr", key=..., iv=..., device="auto")
    ctx = ciphergrid.Cipher("aes-128-cbc", key, iv).decryptor(); ctx.update(a) + ctx.update(b) + ctx.finalize()

What comes back has the type of what went in: bytes-like data gives ``bytes``, a numpy array gives
a numpy array of its shape and dtype (a flat uint8 array with padding, which changes the length),
a GPU array gives the same kind of GPU array.  Keys and IVs are bytes-like (``TypeError``
otherwise); every other bad argument is a :class:`ciphergrid.Error` (see ``ciphergrid.errors``).
"""

from __future__ import annotations

from typing import NamedTuple

from . import buffers
from .devices import check_spec
from .errors import AlreadyFinalized, InvalidArgument
from .modes import padding as _padding
from .registry import aead_names, is_aead, lookup, names
from .request import Closing, implementation_of as _implementation, make_request
from .engines.base import Sessions
from .route import route
from ._lazy import numpy_for

np = numpy_for(__name__)


def available_ciphers() -> list[str]:
    """The names of every cipher·mode ciphergrid can run, e.g. ``"aes-256-xts"``.

    Takes no arguments and raises nothing.  Returns a new ``list[str]`` of lower-case OpenSSL-style
    names: each one is accepted as the ``cipher`` argument of :func:`encrypt`/:func:`decrypt` and
    the ``name`` of :class:`Cipher` (whether a given device runs it is a separate question:
    ``device="auto"`` always finds one).
    """
    return names() + aead_names()


def devices():
    """Every device present: CUDA GPUs, OpenCL devices of every platform, the native OpenSSL engine.

    Takes no arguments.  Returns a ``list`` of ``DeviceInfo`` records (``spec``, ``runtime``,
    ``name``, ``kind`` ("gpu" or "cpu"), ``compute_units``, ``memory``...); a record's ``spec``
    (``"native"``, ``"opencl:0:0"``, ``"cuda:1"``) is what the ``device=`` arguments take.
    The native engine is always listed.  Each device runtime is enumerated once per
    ``ciphergrid.runtime.Runtime`` (the library's default one, unless a block enters another); one
    that is not installed simply contributes no device (nothing is raised for it).
    """
    from .devices import devices as _devices

    return _devices()


def _request(cipher: str, key, iv, encrypt: bool, padding, sector_size, start_sector,
             constant_time, implementation, allow_weak=False):
    key = buffers.bytes_like(key, "key")
    iv = buffers.bytes_like(iv, "iv", optional=True)
    spec = lookup(cipher)
    return make_request(spec, key, iv, encrypt, padding, sector_size, start_sector,
                        _implementation(spec.algorithm, constant_time, implementation), allow_weak)


def _crypt_resident(req, gpu, device, out, wait=True, stats=None):
    """The GPU-resident path: same type out, in place when ``out`` is the input.  ``wait=False``
    (CuPy arrays in and out): queued on CuPy's current stream like CuPy's own operations."""
    src, wrap = gpu
    n = src.nbytes
    req.check_length(n)
    req.admit(n)
    plan = route(req, device, n, path="resident", resident_device=f"cuda:{src.device.id}")
    dst = buffers.gpu_output(out, n, src)
    plan.run(src, dst, wait=wait, stats=stats)   # (a host engine's plan: through host copies)
    return out if out is not None else wrap(dst)


def _crypt(req, data, device, out=None, stats=None):
    """A block cipher·mode's message (``req``: a request.Request) in one call."""
    encrypt, padding = req.encrypt, req.padding
    gpu = buffers.gpu_array(data)
    if gpu is not None:
        if padding:
            raise InvalidArgument("padding is not supported for GPU-resident data")
        return _crypt_resident(req, gpu, device, out, wait=not buffers.cupy_only(data, out),
                               stats=stats)
    arr, wrap = buffers.host_array(data)
    if out is not None and padding:
        raise InvalidArgument("out= cannot be used with padding (the length changes)")
    bs = req.block_size
    if encrypt and padding:
        arr = np.frombuffer(_padding.pad(arr.tobytes(), bs), dtype=np.uint8)
    n = arr.nbytes
    req.check_length(n)
    req.admit(n)
    dst = buffers.output(out, n, arr)
    if n:
        route(req, device, n).run(arr, dst, stats=stats)
    if out is not None:
        return out
    if not encrypt and padding:
        dst = np.frombuffer(_padding.unpad(dst.tobytes(), bs), dtype=np.uint8)
    return wrap(dst, not padding)


def _is_aead(cipher, iv, padding, sector_size, start_sector, nonce, aad, tag_length) -> bool:
    """Whether ``cipher`` names an AEAD; the options of the other kind refused."""
    if is_aead(cipher):
        if padding is not None or sector_size is not None or start_sector is not None:
            raise InvalidArgument(f"{cipher}: padding, sector_size and start_sector are not AEAD options")
        return True
    if nonce is not None or aad is not None or tag_length is not None:
        lookup(cipher)   # (an unknown name: say so, with the close names, before the options)
        raise InvalidArgument(f"nonce, aad and tag_length are AEAD options; {cipher} is not an AEAD")
    return False


def _nonce(cipher, iv, nonce):
    """The nonce; GCM also takes it as iv= (its name in NIST SP 800-38D)."""
    if iv is None:
        return nonce
    if nonce is not None:
        raise InvalidArgument("give nonce= or iv=, not both")
    if not cipher.strip().lower().endswith("-gcm"):
        raise InvalidArgument(f"{cipher} takes nonce=, not iv=")
    return iv


_CRYPT_ARGS = """
    Arguments:
        data: the input.  Bytes-like (``bytes``, ``bytearray``, ``memoryview``), a numpy array
            of any shape and dtype (its raw bytes in C order; a non-contiguous array is copied
            first), a host DLPack tensor, or GPU-resident data (a CuPy array, a PyTorch CUDA
            tensor, anything with a CUDA ``__dlpack__`` or ``__cuda_array_interface__``), which
            is processed on its GPU without host copies, on CuPy's current stream.  With CuPy
            arrays (in, and ``out``) the call returns once its work is queued there, as CuPy's
            own operations do: CuPy reads the result in order (synchronize the stream before
            handing the array to another library or stream); with other GPU arrays the work is
            finished when the call returns.
        cipher: a name of :func:`available_ciphers`, e.g. ``"aes-256-xts"``.
        key: bytes-like, of the cipher's key length (XTS: key1 || key2, the halves different
            on encryption).
        iv: bytes-like: the CBC IV, the CTR initial counter block (big-endian, wraps modulo
            2^128) or the XTS tweak of the single data unit; ``None`` for ECB and for XTS
            with ``sector_size``.
        device: a device spec: ``"auto"`` (the fastest engine for the cipher and size),
            ``"native"`` (OpenSSL), ``"cpu"``, ``"gpu"``, ``"opencl[:P[:N]]"``, ``"cuda[:N]"``;
            several at once: ``"all"`` (every GPU and the host's cores) or a list
            (``"cuda:0,native"``): the message is split over them by speed, the rest
            self-scheduled, a failed engine's ranges run again by the others
            (``ciphergrid.EngineFailureWarning``).  GPU-resident data: over the spec's CUDA
            GPUs and its own (the others through peer copies), finished when the call returns.
        stats: a ``ciphergrid.SchedulerStats()`` to fill in: the bytes, ranges and seconds of
            each engine that ran, the failures and the bytes run again, and how the job ran
            (``choice``: together, or on one member ``alone`` where together was slower; ""
            for a job not judged: under 64 MiB, on one engine, or on GPU-resident data).
        padding: ``None`` or ``"pkcs7"`` (ECB and CBC only).
        sector_size, start_sector: XTS only: cut the data into data units of ``sector_size``
            bytes, unit ``i`` taking the tweak LE128(``start_sector`` + i) (disk-sector style).
        constant_time: run the bitsliced, table-free kernel (no secret-dependent memory access).
        implementation: a kernel variant by name (see ``ciphergrid bench ablation``).
        nonce, aad, tag_length: the AEADs ("aes-256-gcm", "chacha20-poly1305", "ascon-aead128",
            "aegis-128l"): the nonce (required; GCM also takes it as ``iv``), the associated data
            (authenticated, not encrypted) and the tag's length.  Encryption returns
            ciphertext || tag; decryption takes it and returns the plaintext, or raises
            ``ciphergrid.InvalidTag`` and releases nothing (an ``out=`` buffer is zeroed).
        allow_weak: encrypt what the cipher's policy refuses -- any DES-family cipher (single
            DES, 2- and 3-key TDEA), more than 2^32 blocks of a 64-bit cipher under one key --
            with a ``WeakCipherWarning`` instead (TDEA still warns past 2^20 blocks); the other
            64-bit block ciphers warn once when encrypting (the birthday bound).
        out: a writable contiguous buffer of the output's size (may be ``data`` itself) to write
            into instead of allocating; it is returned.  Reusing buffers avoids the page faults
            of fresh memory.  Not with ``padding``.  GPU-resident data: a GPU array of the same
            size (``out=data`` works in place).

    Returns:
        The output in the form of the input: ``bytes`` for bytes-like data; for a numpy array
        (or host DLPack tensor), a new numpy array with the input's shape and dtype -- except
        with ``padding="pkcs7"``, where the length changes, which gives a flat (1-D) ``uint8``
        array; for GPU-resident data, the same type of GPU array; ``out`` when it is given.

    Raises:
        TypeError: ``key`` or ``iv`` is not bytes-like (a ``str`` of hex, an int, a list...).
        ciphergrid.UnsupportedCipher: ``cipher`` is not a known name.
        ciphergrid.InvalidKeySize, ciphergrid.InvalidIVSize: wrong key or IV length (or an IV
            given where none is taken, or missing where one is needed).
        ciphergrid.InvalidKey: XTS encryption with key1 == key2.
        ciphergrid.InvalidLength: ECB/CBC data not a whole number of blocks (without padding);
            XTS data unit shorter than 16 bytes or longer than 2^20 blocks.
        ciphergrid.InvalidPadding: (decrypt) the PKCS#7 padding does not check.
        ciphergrid.InvalidTag: (decrypt, AEADs) the tag does not verify.
        ciphergrid.InvalidArgument: any other bad argument (data type, padding or sector
            options, device spec syntax, ``out``).
        ciphergrid.DeviceNotFound: ``device`` matches no device present.
        ciphergrid.DeviceError: the device or its runtime failed.
        Every ``ciphergrid`` error is a :class:`ciphergrid.Error`; the argument errors are also
        ``ValueError``, as in pyca/cryptography.
"""


class _Options(NamedTuple):
    """A one-shot call's keywords that make its request (all but ``device``, ``out``, ``stats``)."""

    padding: str | None
    sector_size: int | None
    start_sector: int | None
    constant_time: bool
    implementation: str | None
    allow_weak: bool
    nonce: bytes | None
    aad: bytes | None
    tag_length: int | None


def _one_request(encrypt: bool, cipher: str, key, iv, o: _Options):
    """The request of a one-shot call: an AEAD's message (aead.message_request) or a block
    cipher·mode's (``_request``), the options of the other kind refused."""
    if _is_aead(cipher, iv, o.padding, o.sector_size, o.start_sector, o.nonce, o.aad,
                o.tag_length):
        from . import aead as _aead   # (numpy: not on the OpenSSL file path's block requests)

        return _aead.message_request(cipher, encrypt, key, _nonce(cipher, iv, o.nonce), o.aad,
                                     o.tag_length, o.constant_time, o.implementation)
    return _request(cipher, key, iv, encrypt, o.padding, o.sector_size, o.start_sector,
                    o.constant_time, o.implementation, o.allow_weak)


def _one_shot(req, data, device, out=None, stats=None):
    """:func:`encrypt` / :func:`decrypt` of ``req``: an AEAD's message (aead.crypt) or a block
    cipher·mode's (``_crypt``)."""
    if req.kind == "messages":
        from . import aead as _aead

        return _aead.crypt(req, data, device, out, stats=stats)
    return _crypt(req, data, device, out, stats)


def encrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None, allow_weak: bool = False,
            nonce: bytes | None = None, aad: bytes | None = None, tag_length: int | None = None,
            stats=None):
    o = _Options(padding, sector_size, start_sector, constant_time, implementation, allow_weak,
                 nonce, aad, tag_length)
    return _one_shot(_one_request(True, cipher, key, iv, o), data, device, out, stats)


encrypt.__doc__ = """Encrypt ``data`` with ``cipher`` (an OpenSSL name such as "aes-256-xts") in one call.

    ``ciphergrid.encrypt(data, "aes-256-ctr", key, iv)`` gives the bytes of
    ``Cipher(AES(key), CTR(iv)).encryptor()`` update + finalize in pyca/cryptography.
""" + _CRYPT_ARGS


def decrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None, allow_weak: bool = False,
            nonce: bytes | None = None, aad: bytes | None = None, tag_length: int | None = None,
            stats=None):
    o = _Options(padding, sector_size, start_sector, constant_time, implementation, allow_weak,
                 nonce, aad, tag_length)
    return _one_shot(_one_request(False, cipher, key, iv, o), data, device, out, stats)


decrypt.__doc__ = """Decrypt ``data``: the inverse of :func:`encrypt` with the same arguments.

    With ``padding="pkcs7"`` the padding is checked and removed (``InvalidPadding`` when it does
    not check); XTS decryption accepts equal key halves, as OpenSSL does.
""" + _CRYPT_ARGS


class Cipher(Closing):
    """A keyed cipher·mode on a device; :meth:`encryptor` and :meth:`decryptor` give streaming
    contexts whose output equals the one-shot :func:`encrypt`/:func:`decrypt`.

    ``Cipher(name, key, iv=None, *, device="auto", padding=None, sector_size=None,
    start_sector=None, constant_time=False, implementation=None)``: the arguments are those of
    :func:`encrypt` (``name`` is its ``cipher``).  Everything is checked here, before any data:

    Raises:
        TypeError: ``key`` or ``iv`` is not bytes-like.
        ciphergrid.UnsupportedCipher, ciphergrid.InvalidKeySize, ciphergrid.InvalidIVSize,
        ciphergrid.InvalidArgument: as for :func:`encrypt` (a malformed device spec is an
            ``InvalidArgument``).
        ciphergrid.DeviceNotFound: ``device`` names no device present.  Any spec but ``"auto"``
            is resolved here (``"auto"`` is chosen per call, by size, without enumerating the
            devices now).
        ciphergrid.InvalidKey (XTS equal key halves) is raised by :meth:`encryptor`, since
        decryption accepts such keys.

    Attributes: ``spec`` (the registry's CipherSpec), ``device`` (the spec as given).
    The key is kept but never shown (``repr`` names the cipher and device only).
    """

    def __init__(self, name: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
                 padding: str | None = None, sector_size: int | None = None,
                 start_sector: int | None = None, constant_time: bool = False,
                 implementation: str | None = None, allow_weak: bool = False):
        key = buffers.bytes_like(key, "key")
        iv = buffers.bytes_like(iv, "iv", optional=True)
        self.spec = lookup(name)
        impl = _implementation(self.spec.algorithm, constant_time, implementation)
        # validated now, for both directions (XTS's equal-key check is encryption's): the
        # decryption request, which decryptor() uses
        decrypting = make_request(self.spec, key, iv, False, padding, sector_size, start_sector,
                                  impl, allow_weak)
        if device is not None:
            check_spec(device)  # DeviceNotFound / InvalidArgument now, not at update()
        self._args = (key, iv, padding, sector_size, start_sector, impl, allow_weak)
        self.device = device
        self._reqs: dict = {False: decrypting}
        self._plans: dict = {}
        self._sessions = Sessions()

    def __repr__(self) -> str:  # never shows the key
        return f"Cipher({self.spec.name!r}, device={self.device!r})"

    def _request(self, encrypt: bool):
        req = self._reqs.get(encrypt)
        if req is None:
            key, iv, padding, sector_size, start_sector, impl, allow_weak = self._args
            req = self._reqs[encrypt] = make_request(self.spec, key, iv, encrypt, padding,
                                                     sector_size, start_sector, impl, allow_weak)
        return req

    def _session(self, req, engine):
        """The session of ``req`` on ``engine``: keys set up once for every context of this
        Cipher (sessions hold no state between calls, so contexts may share them)."""
        return self._sessions.get((req.encrypt, engine.info.spec), lambda: engine.session(req))

    def _plan(self, req, n: int, resident_device: str | None = None):
        """The route's plan for a piece of ``n`` bytes (GPU-resident: on ``resident_device``),
        kept per direction, size and device: a context's pieces of one size route once."""
        key = (req.encrypt, n, resident_device)
        plan = self._plans.get(key)
        if plan is None:
            plan = (route(req, self.device, n, path="resident", resident_device=resident_device)
                    if resident_device else route(req, self.device, n))
            if len(self._plans) >= 64:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _run(self, req, piece, out, first_block: int, chain) -> None:
        """One piece of a context's message (its blocks from ``first_block`` on, ``chain``: CBC's
        chaining value) into ``out``: on the engine the route picks, through this Cipher's
        session (a service's Cipher sends it to the service instead)."""
        eng = self._plan(req, piece.nbytes).engine
        self._session(req, eng).crypt(piece, out, first_block, chain)

    def close(self) -> None:
        """Wipe the keys this Cipher set up on its devices (also done when it is collected)."""
        self._sessions.close()

    def encryptor(self) -> "CipherContext":
        """A new :class:`CipherContext` that encrypts.

        Raises ``ciphergrid.InvalidKey`` for XTS with key1 == key2 (refused on encryption, as
        OpenSSL does) and ``ciphergrid.DeviceNotFound`` when no device can run the cipher.
        """
        return CipherContext(self, True)

    def decryptor(self) -> "CipherContext":
        """A new :class:`CipherContext` that decrypts (``ciphergrid.DeviceNotFound`` when no
        device can run the cipher)."""
        return CipherContext(self, False)


class CipherContext:
    """A streaming encryption or decryption, from :meth:`Cipher.encryptor`/:meth:`Cipher.decryptor`.

    Feed the data in pieces of any sizes with :meth:`update` (or :meth:`update_into`), then call
    :meth:`finalize` once; the concatenated outputs equal the one-shot :func:`encrypt`/
    :func:`decrypt` of the whole data, whatever the split.  Output is released as soon as the mode
    allows: CTR at once, ECB/CBC per whole block (with PKCS#7 decryption, the last block waits
    for finalize), XTS per whole data unit with ``sector_size`` and all at finalize without it
    (ciphertext stealing needs the end of the unit).
    """

    def __init__(self, cipher: Cipher, encrypt: bool):
        self._cipher = cipher
        self.req = cipher._request(encrypt)
        self.device = cipher.device
        self.spec = cipher.spec
        self.bs = cipher.spec.block_size
        self._pending = bytearray()
        self._pos = 0          # bytes of the message already processed
        self._chain = None     # CBC: the chaining value after what was processed (or its
        self._chain_block = None   # _BlockToHost, a GPU piece's block on its way to the host)
        self._done = False

    def update(self, data) -> bytes:
        """Process the next piece of the message; return the output it releases.

        Arguments:
            data: bytes-like or a numpy array (its raw bytes in C order), any length.

        Returns:
            ``bytes``, possibly empty: what the mode can release so far (see the class).

        Raises:
            ciphergrid.AlreadyFinalized: after :meth:`finalize`.
            ciphergrid.InvalidArgument: ``data`` is not bytes-like or a numpy array.
            ciphergrid.DeviceError: the device failed.
        """
        if self._done:
            raise AlreadyFinalized("update() after finalize()")
        gpu = buffers.gpu_array(data)
        if gpu is not None:
            return self._update_gpu(data, gpu, None)
        arr, _ = buffers.host_array(data)
        return self._update(arr)

    def update_into(self, data, buf) -> int:
        """Like :meth:`update`, but write the output into ``buf``; return how many bytes were written.

        As in pyca/cryptography, ``buf`` must hold at least ``len(data) + n - 1`` bytes, whatever
        this call releases: ``n`` is 16 (the block size) for ECB and CBC, 1 for CTR and for XTS
        without ``sector_size`` (stream-like: CTR releases ``len(data)`` bytes, XTS everything at
        finalize), and ``sector_size`` for XTS in sector mode (whole data units are released).
        The bytes written are those :meth:`update` would return, for any split of the data.

        Arguments:
            data: bytes-like or a numpy array (its raw bytes in C order).
            buf: a writable contiguous buffer (``bytearray``, writable ``memoryview``, numpy
                array...), at least the size above; the output goes to its first bytes.

        Returns:
            ``int``: the number of bytes written to ``buf``.

        Raises:
            ciphergrid.AlreadyFinalized: after :meth:`finalize`.
            TypeError: ``buf`` is not a writable contiguous buffer.
            ValueError (ciphergrid.InvalidArgument): ``buf`` is too small; nothing was consumed.
            And the errors of :meth:`update`.
        """
        if self._done:
            raise AlreadyFinalized("update_into() after finalize()")
        gpu = buffers.gpu_array(data)
        if gpu is not None:
            return self._update_gpu(data, gpu, buf)
        arr, _ = buffers.host_array(data)
        try:
            mv = memoryview(buf)
        except TypeError:
            raise TypeError(f"buf must be a writable buffer (bytearray, memoryview, numpy array), "
                            f"not {type(buf).__name__}") from None
        if mv.readonly:
            raise TypeError("buf must be writable")
        if not mv.c_contiguous:
            raise TypeError("buf must be contiguous")
        mv = mv.cast("B") if (mv.format != "B" or mv.ndim != 1) else mv
        need = arr.nbytes + self.req.mode.held_back(self.req)
        if mv.nbytes < need:
            raise InvalidArgument(f"buffer must be at least {need} bytes for this payload "
                                  f"(got {mv.nbytes})")
        req, n = self.req, arr.nbytes
        if (not self._pending and not self._pos % self.bs
                and req.mode.releasable(req, n, False) == n):
            dst = np.frombuffer(mv, dtype=np.uint8)[:n]   # the common case: straight into buf
            if not np.may_share_memory(dst, arr) or dst.ctypes.data == arr.ctypes.data:
                self._process(arr, dst)
                return n
        out = self._update(arr)
        mv[:len(out)] = out
        return len(out)

    def _update_gpu(self, data, gpu, buf):
        """A GPU-resident piece (CuPy, DLPack...): run on its device with the Cipher's session
        (keys set up once), on CuPy's current stream; the output is a GPU array of the input's
        kind, or goes into the GPU array ``buf`` (its first bytes; the count is returned).  The
        piece must be one the mode releases whole (CTR: any; ECB, CBC: whole blocks; XTS: whole
        data units of ``sector_size``), with nothing held back from host pieces."""
        import cupy

        src, wrap = gpu
        req, n = self.req, src.nbytes
        if self._pending or req.mode.releasable(req, n, False) != n:
            raise InvalidArgument(
                f"{self.spec.name}: a GPU-resident piece must be one the mode releases whole "
                f"(whole blocks; XTS: whole data units of sector_size), with no host bytes held back")
        if buf is not None:
            res = buffers.gpu_array(buf)
            if res is None or res[0].nbytes < n:
                raise InvalidArgument(f"buf must be a GPU array of at least {n} bytes")
            dst = res[0] if res[0].nbytes == n else res[0][:n]
        else:
            dst = cupy.empty_like(src)
        if n:
            req.admit(self._pos + n)
            r = self._cipher._plan(req, n, f"cuda:{src.device.id}")
            if r.path != "resident":   # an engine on the host: through host copies
                dst.set(np.frombuffer(self._process(cupy.asnumpy(src)), dtype=np.uint8))
                return n if buf is not None else wrap(dst)
            skip = self._pos % self.bs     # (CTR after a piece that ended inside a block)
            run_in, run_out = src, dst
            if skip:
                run_in = cupy.concatenate([cupy.zeros(skip, dtype=cupy.uint8), src])
                run_out = cupy.empty_like(run_in)
            reads = req.mode.carry_reads(req) if n >= self.bs else None
            session = self._cipher._session(req, r.engine)
            if reads is not None and hasattr(session, "device_chain"):
                # (CBC: the chain stays on the device, read and rewritten by the piece's kernel)
                held = getattr(self._chain, "on_device", False)
                self._chain = session.device_chain(self._chain if held else self._chain_value())
                session.crypt_resident(src, dst, self._pos // self.bs, self._chain,
                                       wait=not buffers.cupy_only(data, buf))
                self._pos += n
                return n if buf is not None else wrap(dst)
            chain = self._chain_value()
            if reads == "input":   # (queued before an in-place run; waited for at the next piece)
                self._chain_block = self._chain_block or _BlockToHost(self.bs)
                self._chain_block.start(src[-self.bs:])
            session.crypt_resident(run_in, run_out, self._pos // self.bs, chain,
                                   wait=not buffers.cupy_only(data, buf))
            if skip:
                dst[...] = run_out[skip:]
            if reads == "input":
                self._chain = self._chain_block
            elif reads == "output":
                self._chain = req.mode.carry(req, None, cupy.asnumpy(dst[-self.bs:]))
            self._pos += n
        return n if buf is not None else wrap(dst)

    def _chain_value(self) -> bytes | None:
        """The chaining value for the next piece (a GPU piece's block read now)."""
        if isinstance(self._chain, _BlockToHost) or getattr(self._chain, "on_device", False):
            self._chain = self._chain.value()
        return self._chain

    def _update(self, arr: np.ndarray) -> bytes:
        req = self.req
        if not self._pending and req.mode.releasable(req, arr.nbytes, False) == arr.nbytes:
            return self._process(arr)  # the common case: no copy into the pending buffer
        self._pending += arr.tobytes()
        take = req.mode.releasable(req, len(self._pending), False)
        return self._take(take)

    def finalize(self) -> bytes:
        """End the message: return the output still held back (padding added or checked).

        Returns:
            ``bytes``, possibly empty (always empty for CTR).  The context is finished afterwards,
            also when this raises.

        Raises:
            ciphergrid.AlreadyFinalized: called a second time.
            ciphergrid.InvalidLength: ECB/CBC without padding and a partial last block; XTS with
                less than 16 bytes (in the message, or in the last data unit).
            ciphergrid.InvalidPadding: (decryption with PKCS#7) the padding does not check.
            ciphergrid.DeviceError: the device failed.
        """
        if self._done:
            raise AlreadyFinalized("finalize() called twice")
        self._done = True
        req = self.req
        try:
            if req.padding and req.encrypt:
                self._pending = bytearray(_padding.pad(bytes(self._pending), self.bs))
            req.check_length(self._pos + len(self._pending) if req.mode.whole_blocks
                             else len(self._pending))
            out = self._take(len(self._pending))
            if req.padding and not req.encrypt:
                out = _padding.unpad(out, self.bs)
            return out
        finally:
            self._pending = bytearray()

    def _take(self, n: int) -> bytes:
        if not n:
            return b""
        piece = np.frombuffer(bytes(self._pending[:n]), dtype=np.uint8)
        del self._pending[:n]
        return self._process(piece)

    def _process(self, piece: np.ndarray, into: np.ndarray | None = None) -> bytes | None:
        """Run the next ``piece`` of the message: blocks from ``_pos`` on (a piece of CTR may
        start inside a block: it is prefixed with the bytes of the block already used).  Returns
        the output, or writes it into ``into`` (a piece starting at a block's start)."""
        n = piece.nbytes
        if not n:
            return b""
        req = self.req
        req.admit(self._pos + n)  # the UsePolicy's limit counts the whole context
        skip = self._pos % self.bs
        if skip:
            piece = np.concatenate([np.zeros(skip, dtype=np.uint8), piece])
        out = np.empty(piece.nbytes, dtype=np.uint8) if into is None else into
        last_in = piece[-self.bs:]
        if req.mode.carries and np.may_share_memory(out, piece):
            last_in = last_in.copy()     # (an in-place run writes over it)
        self._cipher._run(req, piece, out, self._pos // self.bs, self._chain_value())
        chain = req.mode.carry(req, last_in, out[-self.bs:])
        if chain is not None:
            self._chain = chain
        self._pos += n
        return out[skip:].tobytes() if into is None else None


class _BlockToHost:
    """A block of GPU-resident data copied to page-locked host memory on CuPy's current stream
    without waiting (CBC decryption's next IV: the piece's last ciphertext block), read by
    :meth:`value` when the next piece needs it.  Queued before the piece's own kernel, the copy
    waits only for the work before it, so the host never waits for its own launches."""

    def __init__(self, nbytes: int):
        import cupy

        self.host = np.ndarray((nbytes,), np.uint8, buffer=cupy.cuda.alloc_pinned_memory(nbytes))
        self.event = None

    def start(self, block) -> None:
        import cupy

        with block.device:
            s = cupy.cuda.get_current_stream()
            cupy.cuda.runtime.memcpyAsync(self.host.ctypes.data, block.data.ptr, self.host.nbytes,
                                          2, s.ptr)   # (cudaMemcpyDeviceToHost)
            self.event = cupy.cuda.Event(block=True, disable_timing=True)
            self.event.record(s)

    def value(self) -> bytes:
        self.event.synchronize()
        return self.host.tobytes()


__all__ = ["encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers"]
