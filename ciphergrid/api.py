"""The public Python API, in the idiom of pyca/cryptography.

    ciphergrid.encrypt(data, "aes-256-ctr", key=..., iv=..., device="auto")
    ctx = ciphergrid.Cipher("aes-128-cbc", key, iv).decryptor(); ctx.update(a) + ctx.update(b) + ctx.finalize()

What comes back has the type of what went in: bytes-like data gives ``bytes``, a numpy array gives
a numpy array of its shape and dtype (a flat uint8 array with padding, which changes the length),
a GPU array gives the same kind of GPU array.  Keys and IVs are bytes-like (``TypeError``
otherwise); every other bad argument is a :class:`ciphergrid.Error` (see ``ciphergrid.errors``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import modes
from .engine import get_engine
from .errors import AlreadyFinalized, InvalidArgument, InvalidLength
from .registry import lookup, names


def available_ciphers() -> list[str]:
    """The names of every cipher·mode ciphergrid can run, e.g. ``"aes-256-xts"``.

    Takes no arguments and raises nothing.  Returns a new ``list[str]`` of lower-case OpenSSL-style
    names: each one is accepted as the ``cipher`` argument of :func:`encrypt`/:func:`decrypt` and
    the ``name`` of :class:`Cipher` (whether a given device runs it is a separate question:
    ``device="auto"`` always finds one).
    """
    return names()


def devices():
    """Every device present: CUDA GPUs, OpenCL devices of every platform, the native OpenSSL engine.

    Takes no arguments.  Returns a ``list`` of ``DeviceInfo`` records (``spec``, ``runtime``,
    ``name``, ``kind`` ("gpu" or "cpu"), ``compute_units``, ``memory``...); a record's ``spec``
    (``"native"``, ``"opencl:0:0"``, ``"cuda:1"``) is what the ``device=`` arguments take.
    The native engine is always listed.  Each runtime is enumerated once per process; a runtime
    that is not installed simply contributes no device (nothing is raised for it).
    """
    from .devices import devices as _devices

    return _devices()


_BYTES_LIKE = "bytes-like (bytes, bytearray, memoryview)"


def _check_bytes_like(value, name: str, *, optional: bool = False) -> bytes | None:
    """``value`` (a key or IV) as bytes; TypeError naming the argument when it is not bytes-like
    (a ``str`` of hex, an int, a list...).  ``optional``: None passes through (no IV)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):  # a str has no buffer; say so in the same words as the others
        try:
            return memoryview(value).tobytes()
        except TypeError:
            pass
    raise TypeError(f"{name} must be {_BYTES_LIKE}, not {type(value).__name__}")


def _host_array(data):
    """(contiguous flat uint8 view of host ``data``, function giving an output back in the
    caller's form).

    The view is made without a copy when possible.  The function takes a flat uint8 output array
    and its ``same_length`` flag: bytes-like data gets ``bytes``; a numpy array (or a host DLPack
    tensor, taken through numpy) gets a numpy array of the input's shape and dtype when the
    output has the input's length, and the flat uint8 array when padding changed it.
    """
    if isinstance(data, np.ndarray):
        shape, dtype = data.shape, data.dtype  # the input's (ascontiguousarray makes 0-d 1-d)
        flat = np.ascontiguousarray(data).reshape(-1)
        if flat.dtype != np.uint8:
            flat = flat.view(np.uint8)

        def wrap(out: np.ndarray, same_length: bool = True):
            if not same_length or (dtype == np.uint8 and len(shape) == 1):
                return out
            return out.view(dtype).reshape(shape)

        return flat, wrap
    if isinstance(data, (bytes, bytearray, memoryview)):
        mv = memoryview(data)
        if not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
        flat = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, dtype=np.uint8)
        return flat, lambda out, same_length=True: out.tobytes()
    if hasattr(data, "__dlpack__"):  # a host tensor (PyTorch CPU...): zero-copy through DLPack
        return _host_array(np.from_dlpack(data))
    raise InvalidArgument(f"data must be bytes, bytearray, memoryview or a numpy array, not {type(data).__name__}")


def _gpu_array(data):
    """(CuPy uint8 view, wrap-back function) for a GPU-resident array, or None for host data.

    Takes CuPy arrays and anything with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``
    (PyTorch, JAX...); host DLPack tensors (device type 1) are left to the host path.
    """
    if isinstance(data, (np.ndarray, bytes, bytearray, memoryview)):
        return None
    cai = hasattr(data, "__cuda_array_interface__")
    dl = hasattr(data, "__dlpack__") and hasattr(data, "__dlpack_device__")
    if not cai and not (dl and data.__dlpack_device__()[0] in (2, 3, 13)):  # CUDA, CUDA host, managed
        return None
    import cupy

    arr = cupy.asarray(data) if cai else cupy.from_dlpack(data)
    if not arr.flags.c_contiguous:
        raise InvalidArgument("GPU-resident data must be contiguous")
    flat = arr.reshape(-1).view(cupy.uint8)
    shape, dtype = arr.shape, arr.dtype

    def wrap(out_u8):
        res = out_u8.view(dtype).reshape(shape)
        if isinstance(data, cupy.ndarray):
            return res
        if type(data).__module__.split(".")[0] == "torch":
            import torch

            return torch.from_dlpack(res)
        return res

    return flat, wrap


def _crypt_resident(p, dev_arr, wrap, device, out):
    """The GPU-resident path: same type out, in place when ``out`` is the input."""
    from .devices import resolve

    spec = device if device not in (None, "auto", "gpu", "cuda") else f"cuda:{dev_arr.device.id}"
    info = resolve(spec, p.spec.name, dev_arr.nbytes)
    if info.runtime != "cuda":
        raise InvalidArgument(f"GPU-resident data needs a CUDA device, not {info.spec}")
    modes.check_length(p, dev_arr.nbytes)
    if out is not None:
        res = _gpu_array(out)
        if res is None or res[0].nbytes != dev_arr.nbytes:
            raise InvalidArgument("out must be a GPU array of the input's size")
        get_engine(info.spec).crypt_resident(p, dev_arr, res[0])
        return out
    import cupy

    dst = cupy.empty_like(dev_arr)
    get_engine(info.spec).crypt_resident(p, dev_arr, dst)
    return wrap(dst)


def _engine_for(p: modes.Params, device: str, nbytes: int | None):
    return get_engine(device, p.spec.name, nbytes)


def _impl(constant_time: bool, implementation: str | None) -> str | None:
    if constant_time:
        if implementation not in (None, "ct"):
            raise InvalidArgument("constant_time=True selects the 'ct' implementation")
        return "ct"
    return implementation


def _out_array(out, n: int) -> np.ndarray:
    """A writable contiguous uint8 view of the caller's ``out`` buffer of ``n`` bytes."""
    arr = out if isinstance(out, np.ndarray) else np.frombuffer(memoryview(out).cast("B"), dtype=np.uint8)
    if isinstance(out, np.ndarray) and out.dtype != np.uint8:
        arr = out.view(np.uint8)
    arr = arr.reshape(-1) if arr.flags.c_contiguous else arr
    if not arr.flags.writeable or not arr.flags.c_contiguous or arr.nbytes != n:
        raise InvalidArgument(f"out must be a writable contiguous buffer of {n} bytes")
    return arr


def _crypt(encrypt: bool, data, cipher: str, key, iv, device, padding, sector_size, start_sector,
           constant_time=False, implementation=None, out=None):
    key = _check_bytes_like(key, "key")
    iv = _check_bytes_like(iv, "iv", optional=True)
    spec = lookup(cipher)
    p = modes.check(spec, key, iv, encrypt, padding, sector_size, start_sector,
                    _impl(constant_time, implementation))
    gpu = _gpu_array(data)
    if gpu is not None:
        if padding:
            raise InvalidArgument("padding is not supported for GPU-resident data")
        return _crypt_resident(p, gpu[0], gpu[1], device, out)
    arr, wrap = _host_array(data)
    if out is not None and padding:
        raise InvalidArgument("out= cannot be used with padding (the length changes)")
    if encrypt and padding:
        arr = np.frombuffer(modes.pkcs7_pad(arr.tobytes(), spec.block_size), dtype=np.uint8)
    modes.check_length(p, arr.nbytes)
    if out is not None:
        _engine_for(p, device, arr.nbytes).crypt(p, arr, _out_array(out, arr.nbytes))
        return out
    res = _engine_for(p, device, arr.nbytes).crypt(p, arr)
    if not encrypt and padding:
        res = np.frombuffer(modes.pkcs7_unpad(res.tobytes(), spec.block_size), dtype=np.uint8)
    return wrap(res, not padding)


_CRYPT_ARGS = """
    Arguments:
        data: the input.  Bytes-like (``bytes``, ``bytearray``, ``memoryview``), a numpy array
            of any shape and dtype (its raw bytes in C order; a non-contiguous array is copied
            first), a host DLPack tensor, or GPU-resident data (a CuPy array, a PyTorch CUDA
            tensor, anything with a CUDA ``__dlpack__`` or ``__cuda_array_interface__``), which
            is processed on its GPU without host copies.
        cipher: a name of :func:`available_ciphers`, e.g. ``"aes-256-xts"``.
        key: bytes-like, of the cipher's key length (XTS: key1 || key2, the halves different
            on encryption).
        iv: bytes-like: the CBC IV, the CTR initial counter block (big-endian, wraps modulo
            2^128) or the XTS tweak of the single data unit; ``None`` for ECB and for XTS
            with ``sector_size``.
        device: a device spec: ``"auto"`` (the fastest engine for the cipher and size),
            ``"native"`` (OpenSSL), ``"cpu"``, ``"gpu"``, ``"opencl[:P[:N]]"``, ``"cuda[:N]"``.
        padding: ``None`` or ``"pkcs7"`` (ECB and CBC only).
        sector_size, start_sector: XTS only: cut the data into data units of ``sector_size``
            bytes, unit ``i`` taking the tweak LE128(``start_sector`` + i) (disk-sector style).
        constant_time: run the bitsliced, table-free kernel (no secret-dependent memory access).
        implementation: a kernel variant by name (see ``ciphergrid bench ablation``).
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
        ciphergrid.InvalidArgument: any other bad argument (data type, padding or sector
            options, device spec syntax, ``out``).
        ciphergrid.DeviceNotFound: ``device`` matches no device present.
        ciphergrid.DeviceError: the device or its runtime failed.
        Every ``ciphergrid`` error is a :class:`ciphergrid.Error`; the argument errors are also
        ``ValueError``, as in pyca/cryptography.
"""


def encrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None):
    return _crypt(True, data, cipher, key, iv, device, padding, sector_size, start_sector,
                  constant_time, implementation, out)


encrypt.__doc__ = """Encrypt ``data`` with ``cipher`` (an OpenSSL name such as "aes-256-xts") in one call.

    ``ciphergrid.encrypt(data, "aes-256-ctr", key, iv)`` gives the bytes of
    ``Cipher(AES(key), CTR(iv)).encryptor()`` update + finalize in pyca/cryptography.
""" + _CRYPT_ARGS


def decrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None):
    return _crypt(False, data, cipher, key, iv, device, padding, sector_size, start_sector,
                  constant_time, implementation, out)


decrypt.__doc__ = """Decrypt ``data``: the inverse of :func:`encrypt` with the same arguments.

    With ``padding="pkcs7"`` the padding is checked and removed (``InvalidPadding`` when it does
    not check); XTS decryption accepts equal key halves, as OpenSSL does.
""" + _CRYPT_ARGS


class Cipher:
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
                 implementation: str | None = None):
        key = _check_bytes_like(key, "key")
        iv = _check_bytes_like(iv, "iv", optional=True)
        self.spec = lookup(name)
        impl = _impl(constant_time, implementation)
        # validate now, for both directions (XTS equal-key check happens per direction)
        modes.check(self.spec, key, iv, False, padding, sector_size, start_sector, impl)
        if device is not None and not (isinstance(device, str) and device.strip().lower() == "auto"):
            from .devices import resolve

            resolve(device, self.spec.name)  # DeviceNotFound / InvalidArgument now, not at update()
        self._args = (key, iv, padding, sector_size, start_sector, impl)
        self.device = device

    def __repr__(self) -> str:  # never shows the key
        return f"Cipher({self.spec.name!r}, device={self.device!r})"

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
        key, iv, padding, sector_size, start_sector, impl = cipher._args
        self.p = modes.check(cipher.spec, key, iv, encrypt, padding, sector_size, start_sector, impl)
        self.device = cipher.device
        self.spec = cipher.spec
        from .devices import resolve

        resolve(self.device, self.spec.name)  # a missing device fails now, whatever the mode
        self.bs = cipher.spec.block_size
        self._pending = bytearray()
        self._pos = 0          # bytes already processed (block-aligned except for CTR)
        self._chain = self.p.iv
        self._done = False
        self._native = None
        if self.spec.mode == "cbc" and encrypt:
            from .backends.native import NativeStream

            self._native = NativeStream(self.spec.name, self.p.key, self.p.iv, True)

    def _run(self, p: modes.Params, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        arr = np.frombuffer(chunk, dtype=np.uint8)
        return _engine_for(p, self.device, len(chunk)).crypt(p, arr).tobytes()

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
        arr, _ = _host_array(data)
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
        arr, _ = _host_array(data)
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
        need = arr.nbytes + self._release_unit() - 1
        if mv.nbytes < need:
            raise InvalidArgument(f"buffer must be at least {need} bytes for this payload "
                                  f"(got {mv.nbytes})")
        out = self._update(arr)
        mv[:len(out)] = out
        return len(out)

    def _release_unit(self) -> int:
        """The n of update_into's len(data) + n - 1 rule: the most bytes update() can hold back,
        plus one."""
        mode = self.spec.mode
        if mode == "ctr":
            return 1
        if mode == "xts":
            return self.p.sector_size or 1
        return self.bs

    def _update(self, arr: np.ndarray) -> bytes:
        mode = self.spec.mode
        if mode == "ctr":
            return self._ctr_update(arr)
        if (mode == "ecb" or (mode == "cbc" and self._native is None)) and not self._pending \
                and not (self.p.padding and not self.p.encrypt) and arr.nbytes % self.bs == 0:
            return self._whole_blocks(arr)  # the common case: no copy into the pending buffer
        self._pending += arr.tobytes()
        if mode in ("ecb", "cbc"):
            return self._blocks(final=False)
        return self._xts(final=False)

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
        try:
            mode = self.spec.mode
            if mode == "ctr":
                return b""  # CTR releases every byte in update(); nothing is pending
            if mode in ("ecb", "cbc"):
                return self._blocks(final=True)
            return self._xts(final=True)
        finally:
            if self._native is not None:
                self._native.close()
            self._pending = bytearray()

    # -- modes -------------------------------------------------------------------------------
    def _ctr_update(self, arr: np.ndarray) -> bytes:
        """CTR outputs every byte at once: a piece starting inside a block is prefixed with the
        bytes of that block already used, so it runs from the block's counter."""
        n = arr.nbytes
        if not n:
            return b""
        skip = self._pos % self.bs
        iv = modes.ctr_at(self.p.iv, self._pos // self.bs).to_bytes(self.bs, "big")
        p = dataclasses.replace(self.p, iv=iv)
        if skip:
            arr = np.concatenate([np.zeros(skip, dtype=np.uint8), arr])
        out = _engine_for(p, self.device, arr.nbytes).crypt(p, arr)
        self._pos += n
        return out[skip:].tobytes()

    def _whole_blocks(self, arr: np.ndarray) -> bytes:
        p = self.p
        if self.spec.mode == "cbc":
            p = dataclasses.replace(p, iv=self._chain)
            self._chain = arr[-self.bs:].tobytes() if arr.nbytes else self._chain
        if not arr.nbytes:
            return b""
        return _engine_for(p, self.device, arr.nbytes).crypt(p, arr).tobytes()

    def _blocks(self, final: bool) -> bytes:
        bs, p = self.bs, self.p
        hold = bs if (p.padding and not p.encrypt) else 0  # keep the padding block for finalize
        n = len(self._pending)
        take = (max(0, n - hold) // bs) * bs if not final else n
        if final:
            if p.padding and p.encrypt:
                chunk = modes.pkcs7_pad(bytes(self._pending), bs)
            else:
                if n % bs:
                    raise InvalidLength(f"{self.spec.name}: {n} trailing bytes are not a whole block"
                                        + ("" if p.padding else " (use PKCS#7 padding)"))
                chunk = bytes(self._pending)
        else:
            chunk = bytes(self._pending[:take])
        del self._pending[:len(chunk) if final else take]
        if not chunk:
            out = b""
        elif self._native is not None:
            out = self._native.update(chunk)
        elif self.spec.mode == "cbc":
            out = self._run(dataclasses.replace(p, iv=self._chain), chunk)
            self._chain = chunk[-bs:]
        else:
            out = self._run(p, chunk)
        if final and p.padding and not p.encrypt:
            out = modes.pkcs7_unpad(out, bs)
        return out

    def _xts(self, final: bool) -> bytes:
        p = self.p
        if p.sector_size is None:  # one data unit: the whole message, at finalize
            if not final:
                return b""
            data = bytes(self._pending)
            modes.check_length(p, len(data))
            return self._run(p, data)
        s = p.sector_size
        n = len(self._pending)
        take = n if final else (n // s) * s
        chunk = bytes(self._pending[:take])
        del self._pending[:take]
        if not chunk:
            return b""
        q = dataclasses.replace(p, start_sector=p.start_sector + self._pos // s)
        modes.check_length(q, len(chunk))
        self._pos += take
        return self._run(q, chunk)


__all__ = ["encrypt", "decrypt", "Cipher", "CipherContext", "devices", "available_ciphers"]
