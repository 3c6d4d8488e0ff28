"""Host-side limits of the file path (issue: the 20 GiB RAM-disk file): host memcpy bandwidth with
1-16 threads, then, for a file of SIZE_GiB on a RAM disk cut into NPROCS slices, each slice mapped
and page-locked (cudaHostRegister) by its own process (own CUDA context) at once: the aggregate
locking rate (does it serialise per process or per machine?), H2D and duplex copy rates from the
locked mappings, and unlocking.  A development probe (needs CuPy); docs/benchmarks.md §4b.

    python3 scripts/lock_probe.py /tmp/cgram/f 16 1 2 4 8
    python3 scripts/lock_probe.py --mixed      # host memcpy and duplex DMA at the same time
"""
import mmap
import multiprocessing as mp
import os
import sys
import time

import numpy as np

GiB = 1 << 30


def worker(path, lo, hi, bar, q):
    import cupy as cp
    cp.cuda.runtime.free(0)
    fd = os.open(path, os.O_RDWR)
    m = mmap.mmap(fd, hi - lo, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=lo)
    a = np.frombuffer(m, np.uint8)
    ptr = a.ctypes.data
    n = hi - lo
    d = cp.empty(256 << 20, cp.uint8)
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    bar.wait()
    t0 = time.perf_counter()
    cp.cuda.runtime.hostRegister(ptr, n, 0)
    t1 = time.perf_counter()
    bar.wait()
    # H2D of the whole slice then D2H+H2D duplex
    t2 = time.perf_counter()
    for o in range(0, n, 256 << 20):
        k = min(256 << 20, n - o)
        cp.cuda.runtime.memcpyAsync(d.data.ptr, ptr + o, k, 1, s1.ptr)
    s1.synchronize()
    t3 = time.perf_counter()
    bar.wait()
    t4 = time.perf_counter()
    half = n // 2
    for o in range(0, half, 128 << 20):
        k = min(128 << 20, half - o)
        cp.cuda.runtime.memcpyAsync(d.data.ptr, ptr + o, k, 1, s1.ptr)
        cp.cuda.runtime.memcpyAsync(ptr + half + o, d.data.ptr + (128 << 20), k, 2, s2.ptr)
    s1.synchronize(); s2.synchronize()
    t5 = time.perf_counter()
    bar.wait()
    t6 = time.perf_counter()
    cp.cuda.runtime.hostUnregister(ptr)
    t7 = time.perf_counter()
    q.put((t0, t1, t2, t3, t4, t5, t6, t7, n))
    del a
    m.close()


def memcpy_rates():
    """Copy bandwidth between two 4 GiB host buffers with 1-16 threads (numpy releases the GIL)."""
    import threading
    n = 4 << 30
    a = np.ones(n, np.uint8)
    b = np.empty(n, np.uint8)
    b[:] = 1
    for th in (1, 4, 8, 16):
        step = n // th

        def w(i):
            np.copyto(b[i * step:(i + 1) * step], a[i * step:(i + 1) * step])
        best = 0.0
        for _ in range(3):
            ts = [threading.Thread(target=w, args=(i,)) for i in range(th)]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            best = max(best, n / (time.perf_counter() - t0) / 1e9)
        print(f"memcpy {th:2d} threads: {best:6.1f} GB/s copied ({2 * best:.0f} GB/s of traffic)", flush=True)


def mixed_rates(seconds: float = 1.5):
    """Host memory traffic under the file path's mixed load: duplex DMA between page-locked host
    buffers and the GPU (no CPU) while 0/4/8/16 threads memcpy between two other buffers.  Does
    the DMA take memory bandwidth from the copies, and how much traffic does the host reach?"""
    import threading
    import cupy as cp
    import cupyx
    n = 1 << 30
    up, down = cupyx.empty_pinned((n,), np.uint8), cupyx.empty_pinned((n,), np.uint8)
    up[:] = 1
    down[:] = 1
    d_up, d_down = cp.empty(n, cp.uint8), cp.empty(n, cp.uint8)
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    m = 4 << 30
    a, b = np.ones(m, np.uint8), np.empty(m, np.uint8)
    b[:] = 1
    piece = 64 << 20
    for th in (0, 4, 8, 16):
        stop = threading.Event()
        done = [0] * max(th, 1)

        def w(i):
            k = i * (m // th)
            while not stop.is_set():
                np.copyto(b[k: k + piece], a[k: k + piece])
                done[i] += piece
                k += piece
                if k + piece > (i + 1) * (m // th):
                    k = i * (m // th)
        ts = [threading.Thread(target=w, args=(i,)) for i in range(th)]
        for t in ts:
            t.start()
        time.sleep(0.2)
        c0, t0 = sum(done), time.perf_counter()
        e0, e1, e2 = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
        e0.record(s1)
        s2.wait_event(e0)
        rounds = 0
        while time.perf_counter() - t0 < seconds * 0.8:
            cp.cuda.runtime.memcpyAsync(d_up.data.ptr, up.ctypes.data, n, 1, s1.ptr)
            cp.cuda.runtime.memcpyAsync(down.ctypes.data, d_down.data.ptr, n, 2, s2.ptr)
            rounds += 1
            if rounds % 4 == 0:
                s1.synchronize()
        e1.record(s1)
        e2.record(s2)
        e1.synchronize()
        e2.synchronize()
        t1, c1 = time.perf_counter(), sum(done)
        stop.set()
        for t in ts:
            t.join()
        dma_s = max(cp.cuda.get_elapsed_time(e0, e1), cp.cuda.get_elapsed_time(e0, e2)) / 1e3
        dma = rounds * n / dma_s / 1e9
        cpy = (c1 - c0) / (t1 - t0) / 1e9
        print(f"mixed: {th:2d} memcpy threads {cpy:6.1f} GB/s copied  +  DMA {dma:5.1f} GB/s each way"
              f"  = {2 * cpy + 2 * dma:6.1f} GB/s of host memory traffic", flush=True)


def main():
    if sys.argv[1:] == ["--mixed"]:
        return mixed_rates()
    memcpy_rates()
    path, size = sys.argv[1], int(sys.argv[2]) * GiB
    if not os.path.exists(path) or os.path.getsize(path) != size:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, size)
        m = mmap.mmap(fd, size)
        np.frombuffer(m, np.uint8)[:] = 7
        m.close(); os.close(fd)
    ctx = mp.get_context("spawn")
    for np_ in map(int, sys.argv[3:]):
        bar, q = ctx.Barrier(np_), ctx.Queue()
        step = size // np_
        ps = [ctx.Process(target=worker, args=(path, i * step, (i + 1) * step, bar, q)) for i in range(np_)]
        for p in ps:
            p.start()
        r = [q.get() for _ in ps]
        for p in ps:
            p.join()
        def span(i, j):
            return max(x[j] for x in r) - min(x[i] for x in r)
        tot = sum(x[-1] for x in r)
        print(f"{np_} procs: lock {tot / span(0, 1) / 1e9:6.1f} GB/s  h2d {tot / span(2, 3) / 1e9:6.1f}"
              f"  duplex {tot / span(4, 5) / 1e9:6.1f} (each way {tot / 2 / span(4, 5) / 1e9:5.1f})"
              f"  unlock {tot / span(6, 7) / 1e9:6.1f}   per-proc lock s: "
              + " ".join(f"{x[1] - x[0]:.2f}" for x in r), flush=True)


if __name__ == "__main__":
    main()
