"""One GPU-resident AEAD message through the public API against its kernels: where the API's
time goes around the kernel (issue 50's "one GPU-resident message >= 0.9 x the 16 KiB-batch
kernel").

    python3 scripts/dev/aead_resident_probe.py [--device cuda:0] [--cipher NAME,...]
        [--size 256Mi] [--repeats 20] [--profile 50]
    python3 scripts/dev/aead_resident_probe.py --null [--cipher NAME,...] [--size 1Mi]

Per cipher, on CUDA (device events on CuPy's current stream, medians; a fresh key and nonce
each call, no AAD, as ``bench api``'s AEAD row):

* ``api``: ``ciphergrid.encrypt(x, name, key=, nonce=, out=y)``, events around the call;
* ``resident job``: the kernels of the API's own job (DeviceEngine.aead_resident's: in place on
  x and y, the layout kept on the device), ``Job.enqueue`` alone between events;
* ``one-message kernel``: ``prepare(batch)`` of one message (``bench aead --aead-shapes 1xN``'s
  figure), and ``16 KiB-batch kernel``: the same bytes as 16 KiB messages (``bench api``'s
  denominator) -- both ``Job.enqueue`` alone, the texts already on the device;
* the call in phases, each step of DeviceEngine.aead_resident run here in turn with an event
  after it and the host's clock around it: ``route`` (route_message), ``prepare`` (the job's
  host work and its one upload), ``enqueue`` (the launches), ``settle`` (the tag copy, the key
  wipe); the event gaps say how long the device waited for the host (route + prepare is all
  host: the device has nothing before the first upload) and how long the kernels ran;
* ``--profile N``: cProfile of N API calls (the host's side), the top functions by own time.

The API's ratio to the batch kernel is the issue's figure; the API against the resident job
says what the path around the kernels costs.  ``--null`` runs DeviceEngine.aead_resident on a
backend whose operations do nothing (no GPU needed): the host's own time per call.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time

import numpy as np

import ciphergrid
from ciphergrid import aead as aead_api
from ciphergrid import aeads
from ciphergrid.aeads.base import Batch
from ciphergrid.backends.base import Backend, DeviceInfo, Program
from ciphergrid.engines.device import DeviceEngine

CHUNK = 16 << 10


def _size(text: str) -> int:
    units = {"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30}
    t = text.strip().lower()
    for u, f in units.items():
        if t.endswith(u):
            return int(float(t[:-2]) * f)
    return int(t)


def _med(xs) -> float:
    return statistics.median(xs) if xs else float("nan")


def _gbs(n: int, s: float) -> str:
    return f"{n / s / 1e9:8.1f} GB/s" if s == s and s > 0 else "     -"


# --------------------------------------------------------------------------- CUDA

def _kernel_times(eng, name: str, count: int, size: int, repeats: int, rng) -> list[float]:
    """``Job.enqueue`` alone of a host batch of ``count`` x ``size`` already uploaded."""
    from ciphergrid.bench.aead import make_batch, time_job

    job = eng.aead_driver(name).prepare(make_batch(name, count, size, rng))
    try:
        return time_job(eng.backend, job, repeats)
    finally:
        job.finish()


def _cuda(args, name: str, rng) -> None:
    import cupy
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    from ciphergrid.route import engine

    a = aeads.lookup(name)
    kl, nl, tl = a.names[name], a.default_nonce_length, a.default_tag_length
    n = args.size // CHUNK * CHUNK
    eng = engine(args.device)
    b = eng.backend
    drv = eng.aead_driver(name)
    one = _kernel_times(eng, name, 1, n, args.repeats, rng)
    batch = _kernel_times(eng, name, n // CHUNK, CHUNK, args.repeats, rng)
    with b.dev:
        s = cupy.cuda.get_current_stream()
        x = cupy.asarray(rng.integers(0, 256, n, dtype=np.uint8))
        y = cupy.empty(n + tl, dtype=cupy.uint8)

        def fresh():
            return rng.bytes(kl), rng.bytes(nl)

        key, nonce = fresh()
        ciphergrid.encrypt(x, name, key=key, nonce=nonce, out=y)
        m = min(n, 1 << 20)
        cls = pyca.AESGCM if "gcm" in name else pyca.ChaCha20Poly1305
        got = cupy.asnumpy(y[:m]).tobytes()
        want = cls(key).encrypt(nonce, cupy.asnumpy(x).tobytes(), None)
        if got != want[:m] or cupy.asnumpy(y[n:]).tobytes() != want[n:]:
            print(f"{name}: FAILED: the API's output differs from pyca")
            return
        # the API, events around each call
        api = []
        for i in range(args.repeats + 1):
            key, nonce = fresh()
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record(s)
            ciphergrid.encrypt(x, name, key=key, nonce=nonce, out=y)
            e1.record(s)
            e1.synchronize()
            if i:
                api.append(cupy.cuda.get_elapsed_time(e0, e1) * 1e-3)
        # the phases of the API's own steps (DeviceEngine.aead_resident's), an event after each
        phases = {k: [] for k in ("route", "prepare", "enqueue", "settle")}
        host = {k: [] for k in phases}
        job_k = []
        spec = aeads.spec(name)
        for i in range(args.repeats + 1):
            key, nonce = fresh()
            ev = [cupy.cuda.Event() for _ in range(5)]
            ev[0].record(s)
            t = [time.perf_counter()]
            aead_api.route_message(spec, True, n, nl, tl, f"cuda:{b.index}", "resident")
            t.append(time.perf_counter())
            ev[1].record(s)
            bt = Batch(name, True, tl, np.frombuffer(key, np.uint8).reshape(1, -1).copy(),
                       np.zeros(1, np.int32), np.frombuffer(nonce, np.uint8).reshape(1, -1),
                       np.zeros(0, np.uint8), np.zeros(2, np.int64), x,
                       np.array([0, n], np.int64), y[:n])
            job = drv.prepare(bt, s, resident=True)
            t.append(time.perf_counter())
            ev[2].record(s)
            job.enqueue()
            t.append(time.perf_counter())
            ev[3].record(s)
            job.settle(tag_to=(y, n))
            t.append(time.perf_counter())
            ev[4].record(s)
            ev[4].synchronize()
            bt.wipe()
            if i:
                for j, k in enumerate(phases):
                    phases[k].append(cupy.cuda.get_elapsed_time(ev[j], ev[j + 1]) * 1e-3)
                    host[k].append(t[j + 1] - t[j])
        # the resident job's kernels alone, on the same arrays (its enqueue run again)
        key, nonce = fresh()
        bt = Batch(name, True, tl, np.frombuffer(key, np.uint8).reshape(1, -1).copy(),
                   np.zeros(1, np.int32), np.frombuffer(nonce, np.uint8).reshape(1, -1),
                   np.zeros(0, np.uint8), np.zeros(2, np.int64), x, np.array([0, n], np.int64),
                   y[:n])
        job = drv.prepare(bt, s, resident=True)
        job.enqueue()
        for _ in range(args.repeats):
            k0, k1 = cupy.cuda.Event(), cupy.cuda.Event()
            k0.record(s)
            job.enqueue()
            k1.record(s)
            k1.synchronize()
            job_k.append(cupy.cuda.get_elapsed_time(k0, k1) * 1e-3)
        job.settle(tag_to=(y, n))
        s.synchronize()
        bt.wipe()
    kb, ko, kj, ka = _med(batch), _med(one), _med(job_k), _med(api)
    print(f"\n{name}, {n} bytes on {eng.info.spec} ({eng.info.name}), medians of {args.repeats}")
    print(f"  16 KiB-batch kernel  {kb * 1e3:9.3f} ms {_gbs(n, kb)}")
    print(f"  one-message kernel   {ko * 1e3:9.3f} ms {_gbs(n, ko)}")
    print(f"  resident job kernels {kj * 1e3:9.3f} ms {_gbs(n, kj)}")
    print(f"  api (events)         {ka * 1e3:9.3f} ms {_gbs(n, ka)}   x batch kernel "
          f"{kb / ka:.3f}   x one-message {ko / ka:.3f}   x resident job {kj / ka:.3f}")
    print("  phases (device gap after the step / the host's time in it), ms:")
    for k in phases:
        print(f"    {k:<8} device {_med(phases[k]) * 1e3:8.3f}   host {_med(host[k]) * 1e3:8.3f}")
    if args.profile:
        _profile(lambda: ciphergrid.encrypt(x, name, key=fresh()[0], nonce=fresh()[1], out=y),
                 args.profile, lambda: s.synchronize())


def _profile(call, count: int, sync) -> None:
    call()
    sync()
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    for _ in range(count):
        call()
        sync()
    pr.disable()
    per = (time.perf_counter() - t0) / count
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(22)
    print(f"  cProfile of {count} calls ({per * 1e6:.0f} us each under the profiler, the wait "
          f"for the device included):")
    print("\n".join("    " + line for line in out.getvalue().splitlines()[4:]))


# --------------------------------------------------------------------------- no device

class _Arr:
    """A device array that is nothing: its size, views, an id of its device."""

    __cuda_array_interface__ = None   # (texts() passes it as it is)

    class device:
        id = 0

    def __init__(self, nbytes: int):
        self.nbytes = self.size = nbytes

    def reshape(self, *shape):
        return self

    def __getitem__(self, s):
        a, z, _ = s.indices(self.nbytes)
        return _Arr(max(0, z - a))


class NullBackend(Backend):
    """A device whose allocations, copies and launches do nothing."""

    upload_copies_pageable = True

    def __init__(self):
        self.info = DeviceInfo("null:0", "null", "null", "gpu", 132, 1 << 36)
        self._programs: dict = {}
        self.local_size = 256
        self._default = object()

    def cached_program(self, key):
        p = self._programs.get(key)
        if p is None:
            p = self._programs[key] = Program(None, lambda native, name: name)
        return p

    def resident_items(self, program, name):
        return 132 * 2048

    def alloc(self, nbytes):
        return _Arr(int(nbytes))

    def view(self, buf, offset, nbytes):
        return _Arr(int(nbytes))

    def in_place(self, arr, pad=0, apart=None):
        return isinstance(arr, _Arr)

    def upload(self, *a, **k):
        return None

    def download(self, *a, **k):
        return None

    def launch(self, program, name, items, args, queue=None, **k):
        program.kernel(name)

    def zero(self, *a, **k):
        return None

    def finish(self, queue=None):
        return None

    def marker(self, queue=None):
        return object()

    def wait(self, event):
        return None

    @property
    def default_queue(self):
        return self._default


def _null(args, name: str, rng) -> None:
    a = aeads.lookup(name)
    kl, nl, tl = a.names[name], a.default_nonce_length, a.default_tag_length
    n = args.size
    eng = DeviceEngine.__new__(DeviceEngine)
    eng.info, eng.backend = DeviceInfo("null:0", "null", "null", "gpu", 132, 1 << 36), NullBackend()
    x, y = _Arr(n), _Arr(n + tl)

    def call():
        eng.aead_resident(name, True, rng.bytes(kl), rng.bytes(nl), b"", tl, x, y, n)

    for _ in range(50):
        call()
    best = []
    for _ in range(7):
        t0 = time.thread_time()
        for _ in range(200):
            call()
        best.append((time.thread_time() - t0) / 200)
    spec = aeads.spec(name)
    t0 = time.thread_time()
    for _ in range(200):
        aead_api.route_message(spec, True, n, nl, tl, "auto", "resident")
    route = (time.thread_time() - t0) / 200
    print(f"{name}: DeviceEngine.aead_resident on a null device: {min(best) * 1e6:.1f} us of "
          f"host CPU per call (best of 7 x 200); route_message: {route * 1e6:.1f} us")
    if args.profile:
        _profile(call, args.profile, lambda: None)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--cipher", default="aes-128-gcm,chacha20-poly1305")
    p.add_argument("--size", default=None, help="bytes of the message (256Mi; --null: 1Mi)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--profile", type=int, default=50, help="API calls under cProfile (0: none)")
    p.add_argument("--null", action="store_true",
                   help="the host's own time per call on a device that does nothing")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    args.size = _size(args.size or ("1Mi" if args.null else "256Mi"))
    rng = np.random.default_rng(args.seed)
    for name in args.cipher.split(","):
        (_null if args.null else _cuda)(args, name.strip(), rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
