"""The one buffer normaliser (ciphergrid.buffers): flat uint8 views of the caller's data and
``out=`` buffers, without copies where the memory is contiguous."""

from __future__ import annotations

import array

import numpy as np
import pytest

from ciphergrid import buffers
from ciphergrid.errors import InvalidArgument


def test_as_u8_views_without_copy():
    data = bytearray(range(32))
    v = buffers.as_u8(data)
    assert v.dtype == np.uint8 and v.shape == (32,) and v.tobytes() == bytes(data)
    data[0] = 99
    assert v[0] == 99  # a view, not a copy
    a = np.arange(8, dtype=np.uint32).reshape(2, 4)
    v = buffers.as_u8(a)
    assert v.shape == (32,) and np.shares_memory(v, a) and v.tobytes() == a.tobytes()
    arr = array.array("I", range(4))  # any buffer-protocol object, any item format
    assert buffers.as_u8(arr).tobytes() == arr.tobytes()
    assert buffers.as_u8(memoryview(bytes(range(16))).cast("B", (4, 4))).tobytes() == bytes(range(16))


def test_as_u8_copies_non_contiguous():
    a = np.arange(32, dtype=np.uint8)[::2]
    assert buffers.as_u8(a).tobytes() == a.tobytes()
    mv = memoryview(bytes(range(32)))[::2]
    assert buffers.as_u8(mv).tobytes() == bytes(range(0, 32, 2))


@pytest.mark.parametrize("bad", ["text", 5, [1, 2, 3], None])
def test_as_u8_refuses_non_buffers(bad):
    with pytest.raises(InvalidArgument, match="bytes-like or a numpy array"):
        buffers.as_u8(bad)


def test_host_array_keeps_form():
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    flat, wrap = buffers.host_array(a)
    assert flat.dtype == np.uint8 and flat.size == 12 and np.shares_memory(flat, a)
    back = wrap(flat.copy())
    assert back.shape == (2, 3) and back.dtype == np.uint16
    flat, wrap = buffers.host_array(b"abcd")
    assert wrap(flat) == b"abcd"


def test_out_array():
    out = np.zeros((2, 4), dtype=np.uint32)
    v = buffers.out_array(out, 32)
    assert v.shape == (32,) and np.shares_memory(v, out)
    ba = bytearray(16)
    v = buffers.out_array(ba, 16)
    v[:] = 7
    assert ba == bytearray([7]) * 16
    for bad, why in [(bytearray(15), "got 15 bytes"), (bytes(16), "read-only"),
                     (np.zeros(32, np.uint8)[::2], "non-contiguous"),
                     (memoryview(bytearray(32))[::2], "non-contiguous"), ("x" * 16, "got str"),
                     (None, "got NoneType")]:
        with pytest.raises(InvalidArgument, match=f"writable contiguous buffer of 16 bytes, .*{why}"):
            buffers.out_array(bad, 16)
