"""The public Python API, in the idiom of pyca/cryptography.

    ciphergrid.encrypt(data, "aes-256-ctr", key=..., iv=..., device="auto")
    ctx = ciphergrid.Cipher("aes-128-cbc", key, iv).decryptor(); ctx.update(a) + ctx.update(b) + ctx.finalize()
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import modes
from .engine import get_engine
from .errors import AlreadyFinalized, InvalidArgument, InvalidLength
from .registry import lookup, names


def available_ciphers() -> list[str]:
    """Every cipher·mode name ciphergrid can run."""
    return names()


def devices():
    """Every device present (CUDA GPUs, OpenCL devices, the native OpenSSL engine)."""
    from .devices import devices as _devices

    return _devices()


def _as_array(data) -> tuple[np.ndarray, bool]:
    """A contiguous uint8 view of ``data`` (no copy when possible) and whether it was numpy."""
    if isinstance(data, np.ndarray):
        arr = np.ascontiguousarray(data).reshape(-1)
        if arr.dtype != np.uint8:
            arr = arr.view(np.uint8)
        return arr, True
    if isinstance(data, (bytes, bytearray, memoryview)):
        mv = memoryview(data)
        if not mv.c_contiguous:
            mv = memoryview(mv.tobytes())
        return np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, dtype=np.uint8), False
    if hasattr(data, "__dlpack__"):  # a host tensor (PyTorch CPU...): zero-copy through DLPack
        return _as_array(np.from_dlpack(data))[0], True
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
    spec = lookup(cipher)
    p = modes.check(spec, key, iv, encrypt, padding, sector_size, start_sector,
                    _impl(constant_time, implementation))
    gpu = _gpu_array(data)
    if gpu is not None:
        if padding:
            raise InvalidArgument("padding is not supported for GPU-resident data")
        return _crypt_resident(p, gpu[0], gpu[1], device, out)
    arr, was_numpy = _as_array(data)
    if out is not None and padding:
        raise InvalidArgument("out= cannot be used with padding (the length changes)")
    if encrypt and padding:
        arr = np.frombuffer(modes.pkcs7_pad(arr.tobytes(), spec.block_size), dtype=np.uint8)
    modes.check_length(p, arr.nbytes)
    if out is not None:
        _engine_for(p, device, arr.nbytes).crypt(p, arr, _out_array(out, arr.nbytes))
        return out
    out = _engine_for(p, device, arr.nbytes).crypt(p, arr)
    if not encrypt and padding:
        out = np.frombuffer(modes.pkcs7_unpad(out.tobytes(), spec.block_size), dtype=np.uint8)
    return out if was_numpy else out.tobytes()


def encrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None):
    """Encrypt ``data`` with ``cipher`` (an OpenSSL name such as "aes-256-xts").

    Returns bytes, or a numpy uint8 array when ``data`` is a numpy array.
    ``constant_time=True`` runs the bitsliced, table-free kernel (no secret-dependent memory
    access); ``implementation`` picks a kernel variant by name (see ``ciphergrid bench ablation``).
    ``out``: a writable buffer of the output's size (may be ``data`` itself) to write into instead
    of allocating; it is returned.  Reusing buffers avoids the page faults of fresh memory.
    GPU-resident ``data`` (a CuPy array, a PyTorch CUDA tensor, anything with a CUDA DLPack or
    ``__cuda_array_interface__``) is encrypted on its GPU without host copies and returned as the
    same type (``out=data`` encrypts in place).
    """
    return _crypt(True, data, cipher, key, iv, device, padding, sector_size, start_sector,
                  constant_time, implementation, out)


def decrypt(data, cipher: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
            padding: str | None = None, sector_size: int | None = None,
            start_sector: int | None = None, constant_time: bool = False,
            implementation: str | None = None, out=None):
    """Decrypt ``data``; the inverse of :func:`encrypt` with the same arguments."""
    return _crypt(False, data, cipher, key, iv, device, padding, sector_size, start_sector,
                  constant_time, implementation, out)


class Cipher:
    """A keyed cipher·mode; ``encryptor()`` and ``decryptor()`` give streaming contexts."""

    def __init__(self, name: str, key: bytes, iv: bytes | None = None, *, device: str = "auto",
                 padding: str | None = None, sector_size: int | None = None,
                 start_sector: int | None = None, constant_time: bool = False,
                 implementation: str | None = None):
        self.spec = lookup(name)
        impl = _impl(constant_time, implementation)
        # validate now, for both directions (XTS equal-key check happens per direction)
        modes.check(self.spec, key, iv, False, padding, sector_size, start_sector, impl)
        self._args = (key, iv, padding, sector_size, start_sector, impl)
        self.device = device

    def __repr__(self) -> str:  # never shows the key
        return f"Cipher({self.spec.name!r}, device={self.device!r})"

    def encryptor(self) -> "CipherContext":
        return CipherContext(self, True)

    def decryptor(self) -> "CipherContext":
        return CipherContext(self, False)


class CipherContext:
    """``update()`` any pieces, then ``finalize()``; the output equals the one-shot call's."""

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
        if self._done:
            raise AlreadyFinalized("update() after finalize()")
        arr, _ = _as_array(data)
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
