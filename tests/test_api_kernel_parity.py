"""A GPU-resident one-shot call (``ciphergrid.encrypt/decrypt`` of CuPy arrays with ``out=``, a
fresh key) makes the device run exactly what `bench api`'s kernel row times (bench/kernels.py's
KernelRunner): the same kernels, in the same order, with the same work-items and scalar
arguments, over the caller's own arrays; besides them only its key schedules' upload into a
buffer of the backend's key ring before (XTS: the tweak key's before, the data key's after the
tweak launch, and the segment tweaks' scratch), and their zeroing after, queued without a wait.
No copy of the data, no chunking, no event, no host wait.

Recorded on a CUDA-like backend whose operations do nothing (the data is never touched, so a
1 GiB call costs no memory) with a stand-in for CuPy's arrays and stream: no GPU needed."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import ciphergrid
from ciphergrid import api, registry
from ciphergrid.backends.base import Backend, DeviceInfo, Program
from ciphergrid.bench.kernels import KernelRunner
from ciphergrid.engines import device as device_engine
from ciphergrid.testing import oracle
from conftest import absent_spec

SIZE = 1 << 30
#: the named rows of issue 50 and one of every mode (CBC in the bench's direction: decryption)
NAMES = ["present-80-ecb", "present-80-ctr", "hight-ctr", "des-ecb", "clefia-128-xts",
         "aes-128-ctr", "des-ede3-cbc", "aes-256-xts"]


class _Ptr:
    def __init__(self, ptr: int):
        self.ptr = ptr


class _Device:
    id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeArray:
    """What the GPU-resident path reads of a CuPy uint8 array: its size, address and device."""

    ndim = 1
    dtype = np.dtype(np.uint8)
    flags = types.SimpleNamespace(c_contiguous=True)
    device = _Device()
    _next = 1 << 20

    def __init__(self, nbytes: int, ptr: int | None = None, log: list | None = None):
        if ptr is None:
            ptr = FakeArray._next
            FakeArray._next += -(-max(nbytes, 1) // 256) * 256 + 256
        self.nbytes = self.size = int(nbytes)
        self.data = _Ptr(ptr)
        self.log = log

    def _note(self, *op):
        if self.log is not None:
            self.log.append(op)

    def copy(self):
        self._note("copy", self.nbytes)
        return FakeArray(self.nbytes, log=self.log)

    def __getitem__(self, s):
        a, b, _ = s.indices(self.nbytes)
        return FakeArray(b - a, self.data.ptr + a, self.log)

    def __setitem__(self, s, value):
        self._note("copy into", s)

    def reshape(self, *shape):
        return self

    def view(self, *dtype):
        return self


def fake_cupy(log: list):
    """A module standing in for CuPy: its arrays, its current stream, its allocations (every one
    of the data's size or a copy is logged)."""
    class Stream:
        def synchronize(self):
            log.append(("synchronize",))

    stream = Stream()
    m = types.ModuleType("cupy")
    m.ndarray = FakeArray
    m.uint8 = np.uint8
    m.cuda = types.SimpleNamespace(get_current_stream=lambda: stream, Device=lambda i=0: _Device())

    def alloc(what):
        def made(n, *a, **k):
            n = n.nbytes if isinstance(n, FakeArray) else n
            log.append((what, n))
            return FakeArray(n, log=log)
        return made

    m.empty, m.empty_like, m.zeros = alloc("cupy.empty"), alloc("cupy.empty_like"), alloc("cupy.zeros")
    m.asnumpy = lambda a: (log.append(("asnumpy", a.nbytes)), np.zeros(a.nbytes, np.uint8))[1]
    m.asarray = lambda a: (log.append(("asarray", len(a))), FakeArray(len(a), log=log))[1]
    return m


class RecordingBackend(Backend):
    """A CUDA device (pageable uploads copied at once, as cudaMemcpyAsync does) whose operations
    do nothing but append to ``log``; a launch as (kernel, work-items, arguments: the caller's
    arrays by name, other buffers as "buffer", scalars as ints, whether it waits for events)."""

    upload_copies_pageable = True

    def __init__(self, spec: str, log: list, names: dict):
        self.info = DeviceInfo(spec, "cuda", "recording", "gpu", 132, 1 << 36,
                               extra={"max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
                                      "regs_per_sm": 65536, "smem_per_sm": 228 << 10})
        self._programs: dict = {}
        self.log, self.names = log, names
        self._default = object()
        self.dev = _Device()

    def cached_program(self, key):
        p = self._programs.get(key)
        if p is None:
            p = self._programs[key] = Program(None, lambda native, name: name)
        return p

    def kernel_resources(self, program, name):
        return {"registers_per_item": 64}

    def _arg(self, a):
        if isinstance(a, FakeArray):
            return self.names.get(a.data.ptr, "buffer")
        return int(a) if isinstance(a, np.generic) else a

    def alloc(self, nbytes):
        self.log.append(("alloc", nbytes))
        return FakeArray(nbytes)

    def view(self, buf, offset, nbytes):
        return buf[offset: offset + nbytes]

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        self.log.append(("upload", host.nbytes))
        return object() if record else None

    def download(self, host, buf, queue=None, *, offset=0, wait_for=None, record=True):
        self.log.append(("download", host.nbytes))
        return object() if record else None

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        self.log.append(("launch", name, int(items), tuple(self._arg(a) for a in args),
                         bool(wait_for)))
        return object() if record else None

    def zero(self, buf, queue=None, *, wait=True):
        self.log.append(("zero", buf.nbytes) + (("wait",) if wait else ()))

    def marker(self, queue=None):
        self.log.append(("event",))
        return object()

    def wait(self, event):
        self.log.append(("wait",))

    def finish(self, queue=None):
        self.log.append(("wait",))

    def after(self, queue, events):
        self.log.append(("after",))

    @property
    def default_queue(self):
        return self._default


@pytest.fixture
def recorded(monkeypatch):
    """(run(name): the operations of the kernel row and of the API call of ``name`` over 1 GiB
    with the same key and IV, each as a list)."""
    log: list = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(log))
    x, y = FakeArray(SIZE, log=log), FakeArray(SIZE, log=log)
    b = RecordingBackend(absent_spec("cuda"), log, {x.data.ptr: "x", y.data.ptr: "y"})
    monkeypatch.setattr(device_engine, "_backend", lambda info: b)
    eng = device_engine.DeviceEngine(b.info)

    class Plan:   # (route's plan for the resident path: the call on this engine)
        def __init__(self, req):
            self.req = req

        def run(self, src, dst, wait=True, stats=None):
            eng.crypt_resident(self.req, src, dst, wait, stats=stats)

    monkeypatch.setattr(api, "route", lambda req, *a, **k: Plan(req))

    def run(name):
        spec = registry.lookup(name)
        encrypt = spec.mode.parallel(True)   # (as bench api: CBC decrypting)
        inputs = oracle.random_inputs(name, np.random.default_rng(5).bytes, 4096)
        monkeypatch.setattr(oracle, "random_inputs", lambda *a, **k: inputs)
        key, iv, opts = inputs
        kernel = KernelRunner(b, name, x, y, encrypt, None, opts.get("sector_size"))
        log.clear()
        kernel()
        kernel_ops = list(log)
        kernel.close()
        log.clear()
        call = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
        got = call(x, name, key=key, iv=iv, device="cuda", out=y, allow_weak=True, **opts)
        assert got is y
        return kernel_ops, list(log)

    return run


@pytest.mark.parametrize("name", NAMES)
def test_api_launches_what_the_kernel_row_times(recorded, name):
    kernel, call = recorded(name)
    launches = [op for op in call if op[0] == "launch"]
    assert launches == [op for op in kernel if op[0] == "launch"] == kernel
    assert launches[-1][3][:2] == ("x", "y")   # (the caller's arrays, no copy between)
    rest = [op for op in call if op[0] != "launch"]
    allocs = [op for op in rest if op[0] == "alloc"]
    zeros = [op for op in rest if op[0] == "zero"]
    uploads = [op for op in rest if op[0] == "upload"]
    xts = registry.lookup(name).mode.name == "xts"
    # the key schedules in key-ring buffers (the kernel row's, given back: no allocation), one
    # upload; XTS: the tweak key's, and the data key's after the tweak launch (a second ring
    # buffer: its first use allocates it), and the segment tweaks' scratch (a ring buffer too,
    # allocated where the ring holds none as large); each buffer zeroed after the launches
    scratch = [a for a in allocs if a[1] > 1 << 16]
    assert len(scratch) <= xts and all(a[1] < SIZE // 64 for a in scratch)
    assert len(allocs) - len(scratch) <= xts
    assert len(uploads) == 1 + xts
    assert len(zeros) == len(uploads) + xts
    assert len(rest) == len(allocs) + len(uploads) + len(zeros)   # no copy, event, wait or sync
    first = call.index(launches[0])
    last = len(call) - 1 - [op[0] for op in call[::-1]].index("launch")
    between = [op[0] for op in call[first:last] if op[0] != "launch"]
    assert between == (["alloc"] * (len(allocs) - len(scratch)) + ["upload"]) * xts
    assert [op[0] for op in call[last + 1:]] == ["zero"] * len(zeros)


def _clocked_cupy(monkeypatch, clock: list):
    """The CuPy stand-in with events that read ``clock[0]`` (seconds) when recorded."""
    class Event:
        def record(self, stream=None):
            self.t = clock[0]

        def synchronize(self):
            pass

    m = fake_cupy([])
    m.cuda.Event = Event
    m.cuda.get_elapsed_time = lambda a, b: (b.t - a.t) * 1e3
    monkeypatch.setitem(sys.modules, "cupy", m)


def test_bench_api_split_at_the_first_launch(monkeypatch):
    """bench api's note: a call's host time to its first launch, the device time until that
    launch and from it to the end (a call with no launch left out), the backend's own launch
    back in place afterwards."""
    from ciphergrid.bench import api as bench_api

    clock = [0.0]
    _clocked_cupy(monkeypatch, clock)
    log: list = []
    b = RecordingBackend(absent_spec("cuda"), log, {})
    real = b.launch
    prg = b.cached_program(("p",))

    def call(key, iv, opts):
        if key:
            clock[0] += 3.0          # (before the first launch)
            b.launch(prg, "k", 1, [])
            clock[0] += 5.0
            b.launch(prg, "k", 1, [])
            clock[0] += 7.0

    host, idle, rest = bench_api._api_split(b, call, [(b"k", None, {}), (b"", None, {})] * 2,
                                            object())
    assert 0 <= host < 0.5
    assert (idle, rest) == (pytest.approx(3.0), pytest.approx(12.0))
    assert b.launch == real and "launch" not in vars(b)
    assert [op[0] for op in log] == ["launch"] * 4


def test_bench_back_to_back_ratio(monkeypatch):
    """bench api's note: kernel / API over calls queued back to back, each round's kernel
    launches and API calls between events, one call per input with its own key."""
    from ciphergrid.bench import api as bench_api

    clock = [0.0]
    _clocked_cupy(monkeypatch, clock)
    log: list = []
    b = RecordingBackend(absent_spec("cuda"), log, {})
    b.marker = lambda queue=None: clock[0]
    b.elapsed = lambda e0, e1: e1 - e0
    b.finish = lambda queue=None: None
    keys = []

    def kernel_run():
        clock[0] += 2.0

    def call(key, iv, opts):
        keys.append(key)
        clock[0] += 2.5

    inputs = [(bytes([i]) * 16, None, {}) for i in range(4)]
    assert bench_api._back_to_back(b, kernel_run, call, inputs, object()) == pytest.approx(0.8)
    assert keys == [k for k, _, _ in inputs] * 3
