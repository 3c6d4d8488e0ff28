"""The one normaliser of the caller's buffers: bytes-likes, numpy arrays, host DLPack tensors,
GPU arrays (CuPy, anything with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``), and the
``out=`` buffers, into flat uint8 views (no copy where possible), with a function that gives a
result back in the caller's form."""

from __future__ import annotations

import ctypes
import sys

from .errors import InvalidArgument
from ._lazy import numpy_for

np = numpy_for(__name__)

_BYTES_LIKE = "bytes-like (bytes, bytearray, memoryview)"


def bytes_like(value, name: str, *, optional: bool = False) -> bytes | None:
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


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


def _buffer_api():
    get, rel = ctypes.pythonapi.PyObject_GetBuffer, ctypes.pythonapi.PyBuffer_Release
    get.argtypes = (ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int)
    get.restype = ctypes.c_int
    rel.argtypes = (ctypes.POINTER(_PyBuffer),)
    rel.restype = None
    return get, rel


_PYBUF_ND = 0x8  # shape, no strides: the exporter must be C-contiguous (or refuses)
_get_buffer, _release_buffer = _buffer_api()


def address(buf) -> int:
    """The address of the first byte of a numpy array or of any C-contiguous object with the
    buffer protocol (a memoryview of a bytearray or of a read-only mapping): what the host engines
    hand to libcrypto.  The caller keeps ``buf`` alive while the address is used."""
    ct = getattr(buf, "ctypes", None)
    if ct is not None:
        return ct.data
    view = _PyBuffer()
    try:
        if _get_buffer(buf, ctypes.byref(view), _PYBUF_ND) != 0:
            raise TypeError
    except (TypeError, BufferError):
        raise InvalidArgument(f"not a contiguous buffer: {type(buf).__name__}") from None
    try:
        return int(view.buf or 0)
    finally:
        _release_buffer(ctypes.byref(view))


def as_u8(data) -> np.ndarray:
    """A flat uint8 view of a numpy array (any shape and dtype: its raw bytes in C order) or of
    any object with the buffer protocol (bytes, bytearray, memoryview, array.array, mmap...);
    made without a copy when the data is contiguous, else from a contiguous copy.  InvalidArgument
    for anything else."""
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return data.reshape(-1).view(np.uint8)
    try:
        mv = memoryview(data)
    except TypeError:
        raise InvalidArgument(
            f"data must be bytes-like or a numpy array, not {type(data).__name__}") from None
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return np.frombuffer(mv, dtype=np.uint8)


def host_array(data):
    """(contiguous flat uint8 view of host ``data``, function giving an output back in the
    caller's form).

    The view is made without a copy when possible (:func:`as_u8`).  The function takes a flat
    uint8 output array and its ``same_length`` flag: bytes-like data gets ``bytes``; a numpy
    array (or a host DLPack tensor, taken through numpy) gets a numpy array of the input's shape
    and dtype when the output has the input's length, and the flat uint8 array when padding
    changed it.
    """
    if isinstance(data, np.ndarray):
        shape, dtype = data.shape, data.dtype

        def wrap(out: np.ndarray, same_length: bool = True):
            if not same_length or (dtype == np.uint8 and len(shape) == 1):
                return out
            return out.view(dtype).reshape(shape)

        return as_u8(data), wrap
    if isinstance(data, (bytes, bytearray, memoryview)):
        return as_u8(data), lambda out, same_length=True: out.tobytes()
    if hasattr(data, "__dlpack__"):  # a host tensor (PyTorch CPU...): zero-copy through DLPack
        return host_array(np.from_dlpack(data))
    raise InvalidArgument(f"data must be bytes, bytearray, memoryview or a numpy array, not {type(data).__name__}")


def _same(out, same_length: bool = True):
    return out


def gpu_array(data):
    """(CuPy uint8 view, wrap-back function) for a GPU-resident array, or None for host data.

    Takes CuPy arrays and anything with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``
    (PyTorch, JAX...); host DLPack tensors (device type 1) are left to the host path.
    """
    if isinstance(data, (np.ndarray, bytes, bytearray, memoryview)):
        return None
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(data) is cupy.ndarray and data.ndim == 1 and data.dtype == np.uint8:
        if not data.flags.c_contiguous:
            raise InvalidArgument("GPU-resident data must be contiguous")
        return data, _same  # (the common case, on every one-shot call: no new views)
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

    def wrap(out_u8, same_length: bool = True):
        # an output of another length (an AEAD's) stays flat uint8, in the caller's framework
        res = out_u8.view(dtype).reshape(shape) if same_length else out_u8
        if isinstance(data, cupy.ndarray):
            return res
        if type(data).__module__.split(".")[0] == "torch":
            import torch

            return torch.from_dlpack(res)
        return res

    return flat, wrap


def out_array(out, n: int) -> np.ndarray:
    """A writable contiguous flat uint8 view of the caller's ``out`` buffer (a numpy array of any
    shape and dtype, or any writable object with the buffer protocol) of ``n`` bytes;
    InvalidArgument for anything else."""
    why = None
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous:
            why = "a non-contiguous array"
        else:
            arr = out.reshape(-1).view(np.uint8)
    else:
        try:
            mv = memoryview(out)
        except TypeError:
            why = type(out).__name__
        else:
            if not mv.c_contiguous:
                why = "a non-contiguous buffer"
            else:
                arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv,
                                    dtype=np.uint8)
    if why is None and not arr.flags.writeable:
        why = "a read-only buffer"
    if why is None and arr.nbytes != n:
        why = f"{arr.nbytes} bytes"
    if why is not None:
        raise InvalidArgument(f"out must be a writable contiguous buffer of {n} bytes, got {why}")
    return arr


def output(out, n: int, src: np.ndarray) -> np.ndarray:
    """Where a call's ``n`` output bytes go: the caller's ``out`` (``out_array``; it may be
    ``src`` itself, else must not overlap it), or a new array."""
    if out is None:
        return np.empty(n, dtype=np.uint8)
    dst = out_array(out, n)
    check_no_overlap(src, dst)
    return dst


def gpu_output(out, n: int, src):
    """Where a call's ``n`` output bytes of GPU-resident data go: the caller's ``out`` (a GPU
    array of ``n`` bytes, else InvalidArgument), or a new CuPy array on ``src``'s device."""
    if out is not None:
        res = gpu_array(out)
        if res is None or res[0].nbytes != n:
            raise InvalidArgument(f"out must be a GPU array of the output's size ({n} bytes)")
        return res[0]
    import cupy

    with src.device:
        return cupy.empty(n, dtype=cupy.uint8)


def cupy_only(data, out) -> bool:
    """Whether the caller's GPU data are CuPy arrays (in, and ``out`` when given): their users
    read them in CuPy's stream order, so a call may return as soon as its work is queued there."""
    cupy = sys.modules.get("cupy")
    return (cupy is not None and type(data) is cupy.ndarray
            and (out is None or type(out) is cupy.ndarray))


def check_no_overlap(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst`` may be ``src`` itself (in place) but must not otherwise overlap it."""
    if np.may_share_memory(dst, src) and dst.ctypes.data != src.ctypes.data:
        raise InvalidArgument("out overlaps the input without being the input itself")
