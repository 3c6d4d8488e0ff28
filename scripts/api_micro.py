"""Microseconds of each host step of a device-resident one-shot call (CUDA), each timed over 500
repetitions: where the API's per-call time goes.  Usage: python3 scripts/api_micro.py"""
import time

import cupy
import numpy as np

import ciphergrid
from ciphergrid import api, buffers, route
from ciphergrid.program import KeyedProgram


def t(label, fn, n=500):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    print(f"{label:<34} {(time.perf_counter() - t0) / n * 1e6:8.1f} us")


x = cupy.zeros(1 << 20, dtype=cupy.uint8)
y = cupy.empty_like(x)
key, iv = bytes(range(16)), bytes(16)
req = api._request("aes-128-ctr", key, iv, True, None, None, None, False, None)
eng = route.engine("cuda:0")
b = eng.backend
alg = req.spec.algorithm
words = alg.expand(key, False)
host = words.view(np.uint8)
buf = b.alloc(host.nbytes)
t("request", lambda: api._request("aes-128-ctr", key, iv, True, None, None, None, False, None))
t("buffers.gpu_array", lambda: buffers.gpu_array(x))
t("route (resident)", lambda: route.route(req, "auto", 1 << 30, path="resident", resident_device="cuda:0"))
t("expand", lambda: alg.expand(key, False))
t("alloc 176 B", lambda: b.alloc(176))
t("upload 176 B (no event)", lambda: b.upload(buf, host, record=False))
t("upload 176 B + event", lambda: b.upload(buf, host))
t("marker", lambda: b.marker())
t("KeyedProgram + close", lambda: KeyedProgram(b, req).close(), 200)
t("event wait on current stream", lambda: (lambda e: (e.record(cupy.cuda.get_current_stream()), b.default_queue.wait_event(e)))(cupy.cuda.Event(disable_timing=True)))
t("Device().synchronize()", lambda: cupy.cuda.Device().synchronize())
kp = KeyedProgram(b, req)
t("enqueue 64 KiB blocks (launch)", lambda: kp.enqueue(x, y, 4096, 0))
b.finish()
t("finish (idle)", lambda: b.finish())
t("with b.dev", lambda: b.dev.__enter__() and b.dev.__exit__(None, None, None))
t("encrypt 1 MiB resident one-shot", lambda: ciphergrid.encrypt(x, "aes-128-ctr", key, iv, out=y), 200)
