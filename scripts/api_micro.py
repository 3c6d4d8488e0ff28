"""Microseconds of each host step of a device-resident one-shot call (CUDA), each timed over 500
repetitions, then a profile of the whole call: where the API's per-call time goes.
Usage: python3 scripts/api_micro.py [NAME] [--profile]"""
import cProfile
import pstats
import sys
import time

import cupy
import numpy as np

import ciphergrid
from ciphergrid import api, buffers, route
from ciphergrid.backends.cuda import _Event
from ciphergrid.program import KeyedProgram


def t(label, fn, n=500):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    print(f"{label:<34} {(time.perf_counter() - t0) / n * 1e6:8.1f} us")


name = next((a for a in sys.argv[1:] if not a.startswith("-")), "aes-128-ctr")
spec = ciphergrid.registry.lookup(name)
x = cupy.zeros(1 << 20, dtype=cupy.uint8)
y = cupy.empty_like(x)
key, iv = bytes(range(spec.key_len)), (bytes(16) if spec.iv_len else None)
req = api._request(name, key, iv, True, None, None, None, False, None)
eng = route.engine("cuda:0")
b = eng.backend
alg = req.spec.algorithm
words = alg.expand(key[: spec.key_size], False)
host = words.view(np.uint8)
buf = b.alloc(host.nbytes)
s = cupy.cuda.get_current_stream()
t("request", lambda: api._request(name, key, iv, True, None, None, None, False, None))
t("buffers.gpu_array", lambda: buffers.gpu_array(x))
t("route (resident)", lambda: route.route(req, "auto", 1 << 30, path="resident", resident_device="cuda:0"))
t("expand", lambda: alg.expand(key[: spec.key_size], False))
t("alloc 176 B", lambda: b.alloc(176))
t("upload 176 B (no event)", lambda: b.upload(buf, host, s, record=False))
t("_Event (create + record)", lambda: _Event(s))
t("zero 176 B (no wait)", lambda: b.zero(buf, s, wait=False))
t("with b.dev", lambda: b.dev.__enter__() and b.dev.__exit__(None, None, None))
t("get_current_stream", cupy.cuda.get_current_stream)
t("stream.synchronize (idle)", s.synchronize)
t("KeyedProgram(queue=s) + close", lambda: KeyedProgram(b, req, queue=s).close(), 200)
kp = KeyedProgram(b, req, queue=s)
t("enqueue 64 KiB blocks (launch)", lambda: kp.enqueue(x, y, 4096, 0, s))
kp.close()
t("encrypt 1 MiB resident one-shot", lambda: ciphergrid.encrypt(x, name, key, iv, out=y), 200)
t("encrypt 16 B resident one-shot", lambda: ciphergrid.encrypt(x[:16], name, key, iv, out=y[:16]), 200)
if "--profile" in sys.argv:
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        ciphergrid.encrypt(x, name, key, iv, out=y)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)

# the floor: the same work in bare CuPy calls (key schedule, key buffer, upload, launch, wipe, wait)
from ciphergrid.modes.base import U64  # noqa: E402

kp = KeyedProgram(b, req, queue=s)
kern = kp.prg.kernel(req.mode.kernel(True))
local = b.group_size(kp.prg)
grid = -(-req.mode.items(kp, req.mode.kernel(True), 65536) // local)
kp.close()


def floor():
    w = alg.expand(key[: spec.key_size], False)
    h = w.view(np.uint8)
    kb = cupy.empty(h.nbytes, dtype=cupy.uint8)
    cupy.cuda.runtime.memcpyAsync(kb.data.ptr, h.ctypes.data, h.nbytes, 1, s.ptr)
    w.fill(0)
    kern((grid,), (local,), (x, y, kb, U64(0), U64(0), U64(65536)), stream=s)
    cupy.cuda.runtime.memsetAsync(kb.data.ptr, 0, h.nbytes, s.ptr)
    s.synchronize()


if req.mode.name == "ctr":
    t("floor: bare CuPy one-shot, 1 MiB", floor, 200)
