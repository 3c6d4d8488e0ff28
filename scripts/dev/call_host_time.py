"""The host's own time per call on the device path, on any machine, and the device operations
each call makes.

Against a backend whose operations do nothing (what a CUDA call pays besides CuPy's own
calls; CPU time of this thread, the best of 7 rounds, in us): a one-shot call's request
("request"), its plan (``route(req, "auto", 4096)``, which every one-shot call asks: "route"),
the request and its keyed program (key schedules, their 'upload': "+keyed"), all
of that with the launch arguments and the wipe ("one-shot"), and a context piece ("piece": what
``CipherContext.update_into`` does on a GPU-resident piece past the API's checks: the split
request, CBC's chaining value, the launch arguments).  "ops" counts the device operations of
one one-shot call and of one context piece in the steady state (L launches, U uploads, D
downloads, A allocations, Z zeroings, E events recorded, W host waits).

``--opencl``: the same calls on the OpenCL CPU device (PoCL) over device buffers, each call
finished before the next (its wall time, median of 200 calls, and this thread's CPU time, the
least of them, us).

``--api``: the public API's GPU-resident one-shot call (``ciphergrid.encrypt/decrypt`` of CuPy
arrays with ``out=``, ``device="cuda"``, a fresh key each call, route and all) on that null device
with a stand-in for CuPy, this thread's CPU time from the call to its first launch (least and
median of 300 calls), of the whole call (least), and of a fresh ``Cipher``'s context to its first
launch (the Cipher made, ``encryptor()``, ``update_into``; least); "ops" of a one-shot call in the
steady state (its second).  ``--all``: every block
cipher·mode (default: NAMES); ``--size N``: calls of N bytes (default 4096; XTS in data units of
4096 bytes either way), e.g. 1073741824 for the calls `bench api`'s resident rows time.

    python3 scripts/dev/call_host_time.py [--opencl | --api [--size N]] [--all | NAME ...]

To compare two trees, run it from each with that tree first on the path (``cd TREE &&
PYTHONPATH=TREE python3 .../call_host_time.py``), alternating.  A tree without
``program.DeviceChain`` is measured as its API ran CBC decryption contexts then: the piece's
last input block copied to the host behind an event, read at the next piece.
"""

from __future__ import annotations

import inspect
import statistics
import sys
import time
import warnings
from collections import Counter

import numpy as np

from ciphergrid.backends.base import Backend, DeviceInfo, Program
from ciphergrid.program import KeyedProgram
from ciphergrid.registry import lookup
from ciphergrid.request import make_request
from ciphergrid.route import route
from ciphergrid.testing.oracle import random_inputs

try:
    from ciphergrid.program import DeviceChain
except ImportError:   # (an older tree: its contexts read CBC's chain back to the host)
    DeviceChain = None
#: launches without an event where the tree's enqueue takes ``record`` (older: the program's)
NO_EVENT = {"record": False} if "record" in inspect.signature(KeyedProgram.enqueue).parameters \
    else {}
#: a one-shot's program told its launch's size where the tree's takes it (as DeviceEngine's)
FIRST = "first_bytes" in inspect.signature(KeyedProgram.__init__).parameters

NAMES = ["aes-128-ctr", "aes-256-ctr", "aes-128-cbc", "aes-128-xts", "camellia-128-ctr",
         "camellia-128-xts", "camellia-256-xts", "seed-ctr", "seed-xts", "clefia-128-ctr",
         "clefia-192-ctr", "clefia-256-ctr", "clefia-256-xts", "cast5-ctr", "misty1-ctr",
         "hight-ctr", "present-80-ctr", "des-ede3-cbc"]
SIZE = 4096
OPS = (("launch", "L"), ("upload", "U"), ("download", "D"), ("alloc", "A"), ("zero", "Z"),
       ("event", "E"), ("wait", "W"))


class _Buf:
    def __init__(self, n: int):
        self.nbytes = n


class NullBackend(Backend):
    """A CUDA-like device whose allocations, copies and launches do nothing (counted)."""

    upload_copies_pageable = True

    def __init__(self):
        self.info = DeviceInfo("cuda:99", "cuda", "null", "gpu", 132, 1 << 34)
        self._programs: dict = {}
        self.local_size = 256
        self._default = object()
        self.count: Counter = Counter()

    def cached_program(self, key):
        p = self._programs.get(key)
        if p is None:
            p = self._programs[key] = Program(None, lambda native, name: name)
        return p

    def resident_items(self, program, name):
        return 132 * 2048

    def alloc(self, nbytes):
        self.count["alloc"] += 1
        return _Buf(nbytes)

    def view(self, buf, offset, nbytes):
        return _Buf(nbytes)

    def _event(self, record):
        if record:
            self.count["event"] += 1
            return object()
        return None

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        self.count["upload"] += 1
        return self._event(record)

    def download(self, host, buf, queue=None, *, offset=0, wait_for=None, record=True):
        self.count["download"] += 1
        return self._event(record)

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        program.kernel(name)
        self.count["launch"] += 1
        return self._event(record)

    def zero(self, buf, queue=None, *, wait=True):
        self.count["zero"] += 1
        self.count["wait"] += bool(wait)

    def wait(self, event):
        self.count["wait"] += 1

    def finish(self, queue=None):
        self.count["wait"] += 1

    def marker(self, queue=None):
        self.count["event"] += 1
        return object()

    def after(self, queue, events):
        self.count["wait"] += 1

    @property
    def default_queue(self):
        return self._default


class CountingBackend:
    """A real backend with its operations counted (the instance's methods wrapped)."""

    def __init__(self, b):
        self.count: Counter = Counter()
        for name in ("launch", "upload", "download", "alloc", "zero", "marker", "wait", "finish"):
            fn = getattr(b, name)

            def wrapped(*a, _fn=fn, _name=name, **k):
                key = {"marker": "event", "finish": "wait"}.get(_name, _name)
                self.count[key] += 1
                if _name == "zero" and k.get("wait", True):
                    self.count["wait"] += 1
                return _fn(*a, **k)

            setattr(b, name, wrapped)


def ops(count: Counter) -> str:
    return " ".join(f"{count[k]}{c}" for k, c in OPS if count[k])


def best_us(fn, n: int = 100, rounds: int = 7) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.thread_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time_ns() - t) / n / 1000)
    return best


class Calls:
    """A cipher·mode's one-shot call and context piece on backend ``b`` over ``src``/``dst``
    (SIZE bytes), as the GPU-resident paths make them (engines/device.py: resident, api.py:
    CipherContext._update_gpu)."""

    def __init__(self, b, name: str, rng, src, dst, host_block=None):
        self.b, self.name, self.src, self.dst = b, name, src, dst
        self.spec = spec = lookup(name)
        self.enc = spec.mode.parallel(True)          # (as bench api: CBC decrypting)
        self.inputs = [random_inputs(name, rng.bytes, SIZE) for _ in range(64)]
        self.i = 0
        self.kp = KeyedProgram(b, self.request())     # (as a session's)
        self.pos = 0
        self.chain = None
        self.host_block = host_block   # (old trees: where CBC's chain lands on the host)

    def request(self):
        key, iv, opts = self.inputs[self.i % 64]
        self.i += 1
        return make_request(self.spec, key, iv, self.enc, opts.get("padding"),
                            opts.get("sector_size"), opts.get("start_sector"), None, True)

    def _launch(self, kp, req, chain=None):
        lay = req.mode.layout(req, SIZE)
        if lay is not None:
            kp.enqueue(self.src, self.dst, lay.kernel_blocks, 0, layout=lay, req=req, **NO_EVENT)
        else:
            kp.enqueue(self.src, self.dst, SIZE // req.block_size, 0, req=req, **NO_EVENT,
                       chain=chain if chain is not None else req.mode.chain_at(req, None, 0))

    def one_shot(self):
        req = self.request()
        k = KeyedProgram(self.b, req, record=False, **({"first_bytes": SIZE} if FIRST else {}))
        self._launch(k, req)
        k.close(False)

    def piece(self):
        """The context's next SIZE-byte piece."""
        kp, bs = self.kp, self.spec.block_size
        first = self.pos // bs
        self.pos += SIZE
        base = kp.req
        if base.mode.carries and DeviceChain is not None:
            if self.chain is None:
                self.chain = DeviceChain(self.b, bs, base.iv)
            self._launch(kp, base, self.chain)
            return
        chain = None
        if base.mode.carries:      # the old way: the last input block to the host, an event
            chain = self.chain.tobytes() if self.chain is not None else base.iv
            if self.chain is not None:
                self.b.wait(self._ev)
            self.chain = self.host_block
            self.b.download(self.host_block, self.src, record=False)
            self._ev = self.b.marker()
        req = base.at(first, chain) if first else base
        self._launch(kp, req, chain)


def null_row(b, name: str, rng) -> str:
    c = Calls(b, name, rng, _Buf(SIZE), _Buf(SIZE), np.zeros(16, np.uint8))
    b.count.clear()
    c.one_shot()
    one = ops(b.count)
    for _ in range(3):
        c.piece()
    b.count.clear()
    c.piece()
    piece = ops(b.count)
    req = c.request()
    return (f"{name:18s} {best_us(c.request):8.1f}"
            f" {best_us(lambda: route(req, 'auto', SIZE)):6.1f}"
            f" {best_us(lambda: KeyedProgram(b, c.request(), record=False)):8.1f}"
            f" {best_us(c.one_shot):9.1f} {best_us(c.piece):9.1f}   {one:>14s} | {piece}")


def _median_us(fn, b, n: int = 200) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        b.finish()
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.thread_time_ns() - c0)
    return statistics.median(wall) / 1000, min(cpu) / 1000


def opencl_row(b, counting, name: str, rng) -> str:
    data = np.frombuffer(rng.bytes(SIZE), dtype=np.uint8)
    src, dst = b.alloc(SIZE), b.alloc(SIZE)
    b.wait(b.upload(src, data))
    c = Calls(b, name, rng, src, dst, b.pinned(16))
    for _ in range(3):          # (compiled, window made)
        c.one_shot()
        c.piece()
    b.finish()
    counting.count.clear()
    c.one_shot()
    one = ops(counting.count)
    counting.count.clear()
    c.piece()
    piece = ops(counting.count)
    ow, oc = _median_us(c.one_shot, b)
    pw, pc = _median_us(c.piece, b)
    c.kp.close()
    return (f"{name:18s} {ow:9.1f} {oc:9.1f} {pw:9.1f} {pc:9.1f}   {one:>14s} | {piece}")


# -- through the public API: ``ciphergrid.encrypt/decrypt(..., device=..., out=...)`` ----------

class _FakeArray:
    """What the GPU-resident path reads of a CuPy uint8 array (a stand-in: no GPU)."""

    ndim = 1
    dtype = np.dtype(np.uint8)

    class flags:
        c_contiguous = True

    class device:
        id = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    device = device()

    class _Ptr:
        def __init__(self, ptr):
            self.ptr = ptr

    def __init__(self, nbytes: int, ptr: int = 1 << 20):
        self.nbytes = self.size = nbytes
        self.data = self._Ptr(ptr)

    def __getitem__(self, s):
        a, b, _ = s.indices(self.nbytes)
        return _FakeArray(b - a, self.data.ptr + a)


def _fake_cupy():
    import types

    m = types.ModuleType("cupy")
    m.ndarray = _FakeArray
    m.uint8 = np.uint8
    stream = types.SimpleNamespace(synchronize=lambda: None)
    m.cuda = types.SimpleNamespace(get_current_stream=lambda: stream,
                                   Device=lambda i=0: _FakeArray.device)
    return m


class FirstLaunch:
    """Wraps ``b.launch``: the thread's CPU clock at a call's first launch."""

    def __init__(self, b):
        self.at = None
        real = b.launch

        def launch(*a, **k):
            if self.at is None:
                self.at = time.thread_time_ns()
            return real(*a, **k)

        b.launch = launch


def api_setup():
    """A null CUDA device at spec cuda:0 in the current runtime, CuPy stood in for."""
    from ciphergrid.runtime import current

    sys.modules["cupy"] = _fake_cupy()
    b = NullBackend()
    b.info = DeviceInfo("cuda:0", "cuda", "null", "gpu", 132, 1 << 34)
    b.dev = _FakeArray.device
    b.group_size = lambda prg: 256
    rt = current()
    rt.devices.by_runtime["cuda"] = (b.info,)
    rt.devices.by_runtime.setdefault("opencl", ())
    rt.devices.gpu_nodes = True
    rt.backends["cuda:0"] = b
    return b


def api_row(b, first: FirstLaunch, name: str, rng, device: str, n: int = 300,
            size: int = SIZE) -> str:
    import ciphergrid

    spec = lookup(name)
    enc = spec.mode.parallel(True)
    call = ciphergrid.encrypt if enc else ciphergrid.decrypt
    inputs = [random_inputs(name, rng.bytes, SIZE) for _ in range(64)]
    x, y = _FakeArray(size, 1 << 20), _FakeArray(size, (1 << 20) + max(size, SIZE))
    key, iv, opts = inputs[0]
    for _ in range(2):    # (the second call's: in the steady state, nothing made for the first)
        b.count.clear()
        call(x, name, key=key, iv=iv, device=device, out=y, allow_weak=True, **opts)
    one = ops(b.count)
    to_first, whole = [], []
    for i in range(n):
        key, iv, opts = inputs[i % 64]
        first.at = None
        t = time.thread_time_ns()
        call(x, name, key=key, iv=iv, device=device, out=y, allow_weak=True, **opts)
        whole.append(time.thread_time_ns() - t)
        to_first.append(first.at - t)

    def ctx():
        key, iv, opts = inputs[ctx.i % 64]
        ctx.i += 1
        c = ciphergrid.Cipher(name, key, iv, device=device, allow_weak=True, **opts)
        e = c.encryptor() if enc else c.decryptor()
        first.at = None
        e.update_into(x, y)
        return first.at, c
    ctx.i = 0
    c_first = []
    for i in range(n):
        t = time.thread_time_ns()
        at, c = ctx()
        c_first.append(at - t)
        c.close()
    return (f"{name:18s} {min(to_first) / 1000:9.1f} {statistics.median(to_first) / 1000:9.1f}"
            f" {min(whole) / 1000:9.1f} {min(c_first) / 1000:9.1f}   {one}")


def main(argv: list[str]) -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(1)
    opencl = "--opencl" in argv
    names = [a for i, a in enumerate(argv)
             if not a.startswith("--") and (i == 0 or argv[i - 1] != "--size")] or NAMES
    if "--all" in argv:
        from ciphergrid.registry import names as all_names

        names = all_names()
    if "--api" in argv:
        b = api_setup()
        first = FirstLaunch(b)
        print(f"{'cipher':18s} {'to 1st':>9s} {'median':>9s} {'call':>9s} {'ctx 1st':>9s}"
              f"   ops one-shot   (us of CPU: one-shot to its first launch, least and median of"
              f" 300; the whole call, least; a fresh Cipher's context to its first launch, least)")
        size = int(argv[argv.index("--size") + 1]) if "--size" in argv else SIZE
        for name in names:
            print(api_row(b, first, name, rng, "cuda", size=size), flush=True)
        return
    if opencl:
        from ciphergrid.route import engine

        b = engine("cpu").backend
        counting = CountingBackend(b)
        print(f"{'cipher':18s} {'one wall':>9s} {'one cpu':>9s} {'pc wall':>9s} {'pc cpu':>9s}"
              f"   {'ops one-shot':>14s} | piece   (us, {b.info.spec}: wall median, cpu least of 200)")
        for name in names:
            print(opencl_row(b, counting, name, rng), flush=True)
        return
    b = NullBackend()
    print(f"{'cipher':18s} {'request':>8s} {'route':>6s} {'+keyed':>8s} {'one-shot':>9s}"
          f" {'piece':>9s}"
          f"   {'ops one-shot':>14s} | piece   (us of CPU)")
    for name in names:
        print(null_row(b, name, rng), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
