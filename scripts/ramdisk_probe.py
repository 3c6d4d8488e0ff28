#!/usr/bin/env python3
"""How fast can this machine fill and read files on a RAM disk, and how fast does the CLI stream one?

    python3 scripts/ramdisk_probe.py DIR [--size 8Gi] [--device cuda:0] [--cli]

Prints, for DIR (a tmpfs such as /dev/shm): the rate of writing a new file with write() from one
thread, of filling a new file through a shared mapping from 1 and from N threads (page faults in
parallel), of posix_fallocate, of reading it back with N threads; with --cli, the wall time of
`ciphergrid encrypt` (aes-128-ctr) from a file in DIR to a new file in DIR, and the in-process
streaming rate (ciphergrid.pipeline.stream_crypt, start-up excluded), for each output strategy of
CIPHERGRID_STREAM_MMAP.  Files are removed afterwards.  A development probe: docs/benchmarks.md
records what it showed.
"""

from __future__ import annotations

import argparse
import mmap
import os
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

GiB, MiB = 1 << 30, 1 << 20


def parse(s: str) -> int:
    units = {"Gi": GiB, "Mi": MiB, "": 1}
    for u in ("Gi", "Mi", ""):
        if s.endswith(u) and s[: len(s) - len(u)].isdigit():
            return int(s[: len(s) - len(u)]) * units[u]
    raise SystemExit(f"bad size {s}")


def rate(n: int, t: float) -> str:
    return f"{n / t / 1e9:6.2f} GB/s ({t:.2f} s)"


def fill_mapped(path: str, size: int, threads: int) -> float:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    t0 = time.perf_counter()
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    a = np.frombuffer(m, np.uint8)
    step = -(-size // threads)

    def work(i):
        a[i * step: (i + 1) * step] = 0x5A

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    del a
    m.close()
    os.close(fd)
    return dt


def cli(a, size: int, src: str, dst: str) -> None:
    import ciphergrid  # noqa: F401  (the ICD set-up)
    from ciphergrid import modes, pipeline, registry
    from ciphergrid.engine import get_engine

    key, iv = bytes(range(16)), bytes(16)
    env0 = dict(os.environ)
    p = modes.check(registry.lookup("aes-128-ctr"), key, iv, True)
    eng = get_engine(a.device)
    for how in a.modes.split(","):
        os.environ["CIPHERGRID_STREAM_MMAP"] = how
        for what in ("copy", "aes-128-ctr", "aes-128-ctr"):
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                t0 = time.perf_counter()
                if what == "copy":
                    pipeline.stream_copy(eng.backend, fi, fo)
                else:
                    pipeline.stream_crypt(eng.backend, p, fi, fo, nbytes=size)
                fo.flush()
                t = time.perf_counter() - t0
            print(f"in process, {what:<11} STREAM_MMAP={how:<8}  ", rate(size, t))
            os.unlink(dst)
        env = {**env0, "CIPHERGRID_STREAM_MMAP": how}
        for _ in range(2):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr",
                                "-K", key.hex(), "--iv", iv.hex(), "--in", src, "--out", dst,
                                "-d", a.device, "--quiet"], env=env, capture_output=True, text=True)
            t = time.perf_counter() - t0
            print(f"CLI process (start-up included), STREAM_MMAP={how:<8}", rate(size, t),
                  "rc", r.returncode, r.stderr.strip()[-300:])
            if os.path.exists(dst):
                os.unlink(dst)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--size", default="8Gi")
    ap.add_argument("--threads", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--modes", default="1,populate,0", help="CIPHERGRID_STREAM_MMAP values to try")
    ap.add_argument("--quick", action="store_true", help="only the CLI part (skip the fill/read probes)")
    a = ap.parse_args()
    size = parse(a.size)
    d = a.dir
    src, dst = os.path.join(d, "cg-probe-in"), os.path.join(d, "cg-probe-out")
    print(f"== {d}: {a.size}, {a.threads} threads")
    try:
        if a.quick:
            fill_mapped(src, size, a.threads)
            return cli(a, size, src, dst)
        buf = np.full(64 * MiB, 0xA5, np.uint8)
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        t0 = time.perf_counter()
        for _ in range(size // buf.nbytes):
            os.write(fd, buf)
        os.close(fd)
        print("write() new file, 1 thread     ", rate(size, time.perf_counter() - t0))
        os.unlink(dst)
        for th in (1, a.threads):
            print(f"mmap fill new file, {th:2d} threads ", rate(size, fill_mapped(dst, size, th)))
            os.unlink(dst)
        fd = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        t0 = time.perf_counter()
        os.posix_fallocate(fd, 0, size)
        print("posix_fallocate                ", rate(size, time.perf_counter() - t0))
        os.close(fd)
        os.unlink(dst)
        fill_mapped(src, size, a.threads)
        step = size // a.threads
        bufs = [np.empty(64 * MiB, np.uint8) for _ in range(a.threads)]
        fd = os.open(src, os.O_RDONLY)

        def rd(i):
            off, end = i * step, (i + 1) * step
            while off < end:
                off += os.preadv(fd, [bufs[i][: min(64 * MiB, end - off)]], off)

        t0 = time.perf_counter()
        ts = [threading.Thread(target=rd, args=(i,)) for i in range(a.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print(f"pread existing file, {a.threads:2d} threads", rate(size, time.perf_counter() - t0))
        os.close(fd)
        if a.cli:
            cli(a, size, src, dst)
    finally:
        for f in (src, dst):
            if os.path.exists(f):
                os.unlink(f)


if __name__ == "__main__":
    main()
