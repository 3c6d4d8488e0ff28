"""Probe the host file path of the OpenSSL engine on one folder: the piece stream (threads x
piece size) against a mapped variant (input and output mapped, each thread enciphering its range
from one mapping into the other), and cat.  Usage: files_probe.py DIR SIZE_MiB"""
import mmap
import os
import subprocess
import sys
import threading
import time

from ciphergrid import registry
from ciphergrid.engines.openssl import OpenSSLEngine, run
from ciphergrid.request import make_request
import numpy as np

d, size = sys.argv[1], int(sys.argv[2]) << 20
src, dst = os.path.join(d, "probe.in"), os.path.join(d, "probe.out")
with open(src, "wb") as f:
    for _ in range(size >> 26):
        f.write(os.urandom(64 << 20))
subprocess.run(f"cat {src} > /dev/null", shell=True)
req = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
eng = OpenSSLEngine()


def timed(label, fn, reps=2):
    best = 1e9
    for _ in range(reps):
        if os.path.exists(dst):
            os.unlink(dst)
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    print(f"{label:<40} {best:6.3f} s {size / best / 1e9:6.2f} GB/s", flush=True)


timed("cat", lambda: subprocess.run(f"cat {src} > {dst}", shell=True))


def pieces(th, piece):
    def go():
        fi = os.open(src, os.O_RDONLY)
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        eng.stream(req, fi, fo, chunk_bytes=piece, depth=th)
        os.close(fi), os.close(fo)
    return go


for th in (2, 4, 8, 16):
    for piece in (1 << 20, 4 << 20, 16 << 20):
        timed(f"pieces threads {th} piece {piece >> 20} MiB", pieces(th, piece))


def mapped(th, fall):
    def go():
        fi = os.open(src, os.O_RDONLY)
        fo = os.open(dst, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        if fall:
            os.posix_fallocate(fo, 0, size)
        else:
            os.ftruncate(fo, size)
        mi = mmap.mmap(fi, size, mmap.MAP_SHARED, mmap.PROT_READ)
        mo = mmap.mmap(fo, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        views = [np.frombuffer(mi, np.uint8), np.frombuffer(mo, np.uint8)]
        step = 16 << 20
        nxt = [0]
        lock = threading.Lock()

        def work():
            while True:
                with lock:
                    k = nxt[0]
                    nxt[0] += 1
                lo = k * step
                if lo >= size:
                    return
                n = min(step, size - lo)
                a, b = views
                run(req.at(lo // 16, None) if lo else req, a[lo:lo + n], b[lo:lo + n], threads=1)
        ts = [threading.Thread(target=work) for _ in range(th)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        views.clear()
        mi.close(), mo.close()
        os.close(fi), os.close(fo)
    return go


for th in (2, 4, 8, 16):
    for fall in (0, 1):
        timed(f"mapped threads {th} fallocate {fall}", mapped(th, fall))
os.unlink(src)
if os.path.exists(dst):
    os.unlink(dst)
