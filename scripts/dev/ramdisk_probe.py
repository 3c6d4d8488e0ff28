#!/usr/bin/env python3
"""How fast can this machine fill and read files on a RAM disk, and how fast does the CLI stream one?

    python3 scripts/dev/ramdisk_probe.py DIR [--size 8Gi] [--device cuda:0] [--cli]

Prints, for DIR (a tmpfs such as /dev/shm): the rate of writing a new file with write() from one
thread, of filling a new file through a shared mapping from 1 and from N threads (page faults in
parallel), of posix_fallocate, of reading it back with N threads; with --cli, the wall time of
`ciphergrid encrypt` (aes-128-ctr) from a file in DIR to a new file in DIR, and the in-process
streaming rate (ciphergrid.transfer.runs.stream_crypt, start-up excluded), for each output
strategy of CIPHERGRID_STREAM_MMAP (TransferSettings.stream_mmap).  Files are removed afterwards.  A development probe: docs/benchmarks.md
records what it showed.
"""

from __future__ import annotations

import argparse
import dataclasses
import mmap
import os
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

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
    from ciphergrid import registry, settings
    from ciphergrid.request import make_request
    from ciphergrid.route import engine as get_engine
    from ciphergrid.transfer import runs

    key, iv = bytes(range(16)), bytes(16)
    env0 = dict(os.environ)
    p = make_request(registry.lookup("aes-128-ctr"), key, iv, True)
    eng = get_engine(a.device)
    for how in a.modes.split(","):
        opts = dataclasses.replace(settings.transfer(), stream_mmap=how)
        for what in ("copy", "aes-128-ctr", "aes-128-ctr"):
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                t0 = time.perf_counter()
                if what == "copy":
                    runs.stream_copy(eng.backend, fi, fo, settings=opts)
                else:
                    runs.stream_crypt(eng.backend, p, fi, fo, nbytes=size, settings=opts)
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


PHASES = r"""
import os, sys, time
T0 = float(os.environ["CG_T0"])
m = [("interpreter", time.time() - T0)]
def mark(w):
    m.append((w, time.time() - T0))
from ciphergrid import cli
mark("import")
import ciphergrid.route as E, ciphergrid.transfer.runs as R, ciphergrid.transfer.driver as D
import ciphergrid.transfer.files as F
g, s, e = E.route, R.stream_crypt, D.Pipeline._ensure
def g2(*a, **k):
    mark("engine<"); r = g(*a, **k); mark("engine>"); return r
def s2(*a, **k):
    mark("stream<"); r = s(*a, **k); mark("stream>"); return r
def e2(self, *a, **k):
    t = time.time(); r = e(self, *a, **k); m.append(("slots-took", time.time() - t)); return r
E.route, R.stream_crypt, D.Pipeline._ensure = g2, s2, e2
w = F.Prefault.wait
def w2(self):
    mark("pfwait<"); w(self); mark("pfwait>")
F.Prefault.wait = w2
if os.environ.get("CG_PF_THREADS"):  # the CLI's prefault threads (default: up to 16)
    pf = F.prefault_output
    F.prefault_output = lambda f, n, threads=None: pf(f, n, int(os.environ["CG_PF_THREADS"]))
rc = cli.main(sys.argv[1:])
mark("main-returned")
print(" ".join(f"{w}={t:.3f}" for w, t in m), file=sys.stderr)
sys.exit(rc)
"""


def phases(a, size: int, src: str, dst: str, runs: int = 2) -> None:
    """Where a CLI process's time goes: the wall time of `ciphergrid encrypt` split at marks
    (interpreter up, imports, engine = CUDA context + kernel, the stream, main returned; the rest
    to the wall time is the process's exit)."""
    key, iv = bytes(range(16)), bytes(16)
    for _ in range(runs):
        env = {**os.environ, "CG_T0": repr(time.time())}
        t0 = time.time()
        r = subprocess.run([sys.executable, "-c", PHASES, "encrypt", "-c", "aes-128-ctr", "-K",
                            key.hex(), "--iv", iv.hex(), "--in", src, "--out", dst, "-d", a.device,
                            "--quiet"], env=env, capture_output=True, text=True)
        t = time.time() - t0
        print(f"CLI phases: wall {t:.3f} s ({size / t / 1e9:.2f} GB/s) rc {r.returncode}:",
              r.stderr.strip()[-400:], flush=True)
        if os.path.exists(dst):
            os.unlink(dst)


def _parallel(fn, pieces, threads: int) -> float:
    """Run fn(lo, hi) over pieces on `threads` threads; wall seconds."""
    it = iter(pieces)
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                nxt = next(it, None)
            if nxt is None:
                return
            fn(*nxt)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def breakdown(a, size: int, src: str, dst: str) -> None:
    """Where the time of a mapped-file run goes: fault-in, page-locking (pieces x threads),
    unlocking, and the device run between two locked mappings."""
    import ciphergrid  # noqa: F401
    from ciphergrid import registry, settings
    from ciphergrid.program import KeyedProgram
    from ciphergrid.request import make_request
    from ciphergrid.route import engine as get_engine
    from ciphergrid.transfer import driver, pinning, runs

    b = get_engine(a.device).backend
    fd = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    t0 = time.perf_counter()
    os.posix_fallocate(fd, 0, size)
    print("posix_fallocate output        ", rate(size, time.perf_counter() - t0))
    om = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    out = np.frombuffer(om, np.uint8)
    ofs = os.open(src, os.O_RDONLY)
    im = mmap.mmap(ofs, size, mmap.MAP_SHARED, mmap.PROT_READ)
    inp = np.frombuffer(im, np.uint8)
    obase, ibase = out.ctypes.data, inp.ctypes.data

    def pieces(base, g):
        return [(base + o, base + min(size, o + g)) for o in range(0, size, g)]

    t = _parallel(lambda lo, hi: pinning._populate_write(lo, hi - lo), pieces(obase, 64 * MiB), a.threads)
    print(f"populate output (after fallocate), 64 MiB x {a.threads} threads", rate(size, t))
    fd2 = os.open(dst + "2", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd2, size)
    m2 = mmap.mmap(fd2, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    b2 = np.frombuffer(m2, np.uint8).ctypes.data
    t = _parallel(lambda lo, hi: pinning._populate_write(lo, hi - lo), pieces(b2, 64 * MiB), a.threads)
    print(f"populate a new file after ftruncate, 64 MiB x {a.threads} threads", rate(size, t))
    m2.close()
    os.close(fd2)
    os.unlink(dst + "2")
    for name, base, ro in (("output", obase, False), ("input (read-only)", ibase, True)):
        for g, th in ((64 * MiB, 1), (64 * MiB, 8), (1 * GiB, 8), (size, 1)):
            ps = pieces(base, g)
            t = _parallel(lambda lo, hi: b.register_host(lo, hi - lo, readonly=ro), ps, th)
            tu = _parallel(lambda lo, hi: b.unregister_host(lo), ps, th)
            print(f"lock {name:<18} {g >> 20:6d} MiB pieces x {th:2d} threads", rate(size, t),
                  " unlock", rate(size, tu))
    p = make_request(registry.lookup("aes-128-ctr"), bytes(range(16)), bytes(16), True)
    with KeyedProgram(b, p) as kp, runs.pipeline_for(b) as pipe:
        t0 = time.perf_counter()
        with pinning.pinned(b, inp), pinning.pinned(b, out):
            t1 = time.perf_counter()
            for _ in range(2):
                t2 = time.perf_counter()
                pipe.crypt(kp, inp, out)
                print("device run between the locked mappings", rate(size, time.perf_counter() - t2))
            t3 = time.perf_counter()
        print("  (locking both whole:", rate(size, t1 - t0), "; unlocking:", rate(size, time.perf_counter() - t3), ")")
    del inp, out
    im.close()
    om.close()
    os.close(ofs)
    os.close(fd)
    os.unlink(dst)
    # the file stream itself (a new output file each time), under each setting
    base = settings.transfer()
    for change in ({}, {"pin_grain": 256 * MiB}, {"host_threads": 16}, {"mapped_lock": "in"},
                   {"mapped_lock": "in", "host_threads": 16}, {"mapped_lock": "out"},
                   {"mapped_lock": "none", "host_threads": 16},
                   {"stream_mmap": "out", "host_threads": 16}):
        with KeyedProgram(b, p) as kp:
            pipe2 = driver.Pipeline(b, settings=dataclasses.replace(base, **change))
            with open(src, "rb") as fi, open(dst, "w+b") as fo:
                t0 = time.perf_counter()
                pipe2.stream(driver.CipherJob(kp), fi, fo)
                t = time.perf_counter() - t0
            st = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in pipe2.stats.items()
                  if k not in ("cap", "transfer")}
            pipe2.close()
        print(f"stream {change or 'defaults'}", rate(size, t), st)
        os.unlink(dst)
    return


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--size", default="8Gi")
    ap.add_argument("--threads", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--modes", default="1,populate,0", help="CIPHERGRID_STREAM_MMAP values to try")
    ap.add_argument("--phases", action="store_true",
                    help="only the CLI process, its wall time split into phases")
    ap.add_argument("--quick", action="store_true", help="only the CLI part (skip the fill/read probes)")
    ap.add_argument("--breakdown", action="store_true",
                    help="only where a mapped-file run's time goes (fault-in, locking, device)")
    a = ap.parse_args()
    size = parse(a.size)
    d = a.dir
    src, dst = os.path.join(d, "cg-probe-in"), os.path.join(d, "cg-probe-out")
    print(f"== {d}: {a.size}, {a.threads} threads")
    try:
        if a.quick or a.breakdown or a.phases:
            fill_mapped(src, size, a.threads)
            if a.phases:
                return phases(a, size, src, dst)
            if a.breakdown:
                breakdown(a, size, src, dst)
            return cli(a, size, src, dst) if a.cli else None
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
