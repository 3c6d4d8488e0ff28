"""Where the public API loses time against the kernel, device-resident (CUDA): per cipher, the
kernel alone (events around one enqueue), the API call (wall clock and events), and the API's
phases.  Usage: python3 scripts/api_overhead.py [--size 1Gi] [--repeats 15] [NAME ...]"""
import argparse
import statistics
import time

import numpy as np

import ciphergrid
from ciphergrid.program import KeyedProgram
from ciphergrid.request import make_request
from ciphergrid.settings import parse_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=["aes-128-ctr", "aes-128-ecb"])
    ap.add_argument("--size", default="1Gi")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--host-size", default="4Gi", help="host -> host API run (0: none)")
    a = ap.parse_args()
    import cupy

    n = parse_bytes(a.size, "--size")
    from ciphergrid.route import engine as get_engine

    eng = get_engine(a.device)
    x = cupy.random.randint(0, 256, n, dtype=cupy.uint8)
    y = cupy.empty_like(x)
    for name in a.names:
        spec = ciphergrid.registry.lookup(name)
        key = bytes(range(spec.key_len))
        iv = bytes(range(16)) if spec.iv_len else None
        kt = eng.time_kernel(name, n, repeats=a.repeats)
        k = statistics.median(kt)
        # the API, wall clock
        ciphergrid.encrypt(x, name, key, iv, device=a.device, out=y)
        cupy.cuda.Device().synchronize()
        wall, ev = [], []
        for _ in range(a.repeats):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            t0 = time.perf_counter()
            s.record()
            ciphergrid.encrypt(x, name, key, iv, device=a.device, out=y)
            e.record()
            e.synchronize()
            wall.append(time.perf_counter() - t0)
            ev.append(cupy.cuda.get_elapsed_time(s, e) * 1e-3)
        w, evm = statistics.median(wall), statistics.median(ev)
        print(f"{name}: kernel {n / k / 1e9:.1f} GB/s ({k * 1e3:.3f} ms); API wall {n / w / 1e9:.1f} GB/s "
              f"({w * 1e3:.3f} ms, {w / k:.3f}x); API events {n / evm / 1e9:.1f} GB/s ({evm * 1e3:.3f} ms)")
        # one-shot calls back to back on the stream (each call its own key set-up), as a GPU
        # program issues them: wall clock from the first call to the end of the last one
        streamed = []
        for _ in range(3):
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(a.repeats):
                ciphergrid.encrypt(x, name, key, iv, device=a.device, out=y)
            cupy.cuda.get_current_stream().synchronize()
            streamed.append((time.perf_counter() - t0) / a.repeats)
        st = statistics.median(streamed)
        # the kernel alone the same way: one keyed program, launches back to back on the stream
        s = cupy.cuda.get_current_stream()
        kp = KeyedProgram(eng.backend, make_request(spec, key, iv, True), queue=s, record=False)
        kstream = []
        for _ in range(3):
            s.synchronize()
            t0 = time.perf_counter()
            for _ in range(a.repeats):
                kp.enqueue(x, y, n // spec.block_size, 0, s)
            s.synchronize()
            kstream.append((time.perf_counter() - t0) / a.repeats)
        kp.close()
        ks = statistics.median(kstream)
        print(f"   {a.repeats} calls back to back: API {n / st / 1e9:.1f} GB/s ({st * 1e3:.3f} ms per call), "
              f"kernel launches {n / ks / 1e9:.1f} GB/s ({ks * 1e3:.3f} ms): API / kernel {ks / st:.3f}")
        # phases of the resident path
        p = make_request(spec, key, iv, True)
        b = eng.backend
        ph = {"keyed": [], "enqueue": [], "finish": [], "close": []}
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            kp = KeyedProgram(b, p, queue=cupy.cuda.get_current_stream())
            t1 = time.perf_counter()
            kp.enqueue(x, y, n // 16, 0, cupy.cuda.get_current_stream(), chain=iv)
            t2 = time.perf_counter()
            cupy.cuda.get_current_stream().synchronize()
            t3 = time.perf_counter()
            kp.close()
            t4 = time.perf_counter()
            for k_, v in zip(ph, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                ph[k_].append(v)
        print("   phases (ms): " + ", ".join(f"{k_} {statistics.median(v) * 1e3:.3f}" for k_, v in ph.items()))
    hn = parse_bytes(a.host_size, "--host-size")
    if hn:
        del x, y
        src = np.empty(hn, np.uint8)
        src[:] = 7
        dst = np.empty_like(src)
        for name in a.names:
            spec = ciphergrid.registry.lookup(name)
            key, iv = bytes(range(spec.key_len)), (bytes(range(16)) if spec.iv_len else None)
            ciphergrid.encrypt(src, name, key, iv, device=a.device, out=dst)  # registers, tunes
            ts = []
            for _ in range(max(3, a.repeats // 3)):
                t0 = time.perf_counter()
                ciphergrid.encrypt(src, name, key, iv, device=a.device, out=dst)
                ts.append(time.perf_counter() - t0)
            print(f"{name}: host -> host API {hn / statistics.median(ts) / 1e9:.2f} GB/s at {a.host_size} "
                  f"(best {hn / min(ts) / 1e9:.2f})")


if __name__ == "__main__":
    main()
