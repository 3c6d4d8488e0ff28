"""The device's side of an AEAD batch host -> host on CUDA, against the copy strawman: every upload,
kernel, memset and download bracketed by CUDA events on its stream, printed as a timeline (host
time of the call that enqueued it, device start and end, ms from the API call) with the busy time
and gaps of each engine (H2D copies, kernels, D2H copies).  Shows when the first upload starts,
whether a copy engine idles between pieces, and how long the tail after the last upload is.
Usage: python3 scripts/dev/aead_device_timeline.py NAME[,NAME] [--shape 65536x16Ki] [--decrypt] [--all]
[--ramp HEAD:TAIL] [--piece BYTES] [--no-check]"""
import argparse
import time

import numpy as np

import ciphergrid
from aead_e2e_probe import setup  # (scripts/dev/: the same batch and call)
from ciphergrid.backends import cuda as cu
from ciphergrid.route import engine
from ciphergrid.transfer import chunking
from ciphergrid.transfer.autotune import autotune
from ciphergrid.transfer.driver import Pipeline


class Recorder:
    def __init__(self, backend):
        self.b = backend
        self.rows = []
        self.on = False
        self.host = {}     # operation -> host seconds of each call
        for name in ("upload", "download", "launch", "zero"):
            setattr(backend, name, self._wrap(name, getattr(backend, name)))

    def _wrap(self, name, fn):
        cp = cu.cp()

        def call(*a, **kw):
            if not self.on:
                return fn(*a, **kw)
            if name == "launch":
                q = kw.get("queue", a[4] if len(a) > 4 else None)
                label = f"k:{a[1]}"
                n = 0
            elif name == "zero":
                q = kw.get("queue", a[1] if len(a) > 1 else None)
                label, n = "memset", a[0].nbytes
            else:
                q = kw.get("queue", a[2] if len(a) > 2 else None)
                host = a[1] if name == "upload" else a[0]
                label, n = ("H2D" if name == "upload" else "D2H"), host.nbytes
            s = q or self.b.default_queue
            t = time.perf_counter()
            e0 = cp.cuda.Event()
            e0.record(s)
            th = time.perf_counter()
            r = fn(*a, **kw)
            th = time.perf_counter() - th
            e1 = cp.cuda.Event()
            e1.record(s)
            self.rows.append((t, e0, e1, s.ptr, label, n))
            key = label if label.startswith("k:") or label == "memset" else f"{label} {n >> 20} MiB"
            self.host.setdefault(key, []).append(th)
            return r
        return call

    def report(self, t0, ev0, wall, title, verbose):
        rows = []
        for t, e0, e1, s, label, n in self.rows:
            e1.synchronize()
            a = cu.cp().cuda.get_elapsed_time(ev0, e0)
            b = cu.cp().cuda.get_elapsed_time(ev0, e1)
            rows.append(((t - t0) * 1e3, a, b, s, label, n))
        streams = {s: i for i, s in enumerate(dict.fromkeys(r[3] for r in rows))}
        if verbose:
            for h, a, b, s, label, n in rows:
                print(f"  host {h:7.3f}  dev {a:7.3f} .. {b:7.3f}  q{streams[s]} {label} "
                      f"{n / 2**20:.2f} MiB" if n else
                      f"  host {h:7.3f}  dev {a:7.3f} .. {b:7.3f}  q{streams[s]} {label}")
        cls = {"H2D": [], "D2H": [], "k": []}
        for h, a, b, s, label, n in rows:
            key = "k" if label.startswith("k:") or label == "memset" else label
            cls[key].append((a, b, n))
        out = [f"{title}: wall {wall * 1e3:.2f} ms"]
        for key, spans in cls.items():
            if not spans:
                continue
            spans.sort()
            busy, end, gaps = 0.0, spans[0][0], 0.0
            for a, b, _ in spans:
                if a > end:
                    gaps += a - end
                busy += max(0.0, b - max(a, end))
                end = max(end, b)
            nb = sum(n for _, _, n in spans)
            rate = f", {nb / busy / 1e6:.1f} GB/s while busy" if nb and busy else ""
            out.append(f"{key} {spans[0][0]:.2f}..{end:.2f} busy {busy:.2f} gaps {gaps:.2f}{rate}")
        print("  " + " | ".join(out), flush=True)
        if verbose:
            busy = sum(sum(v) for v in self.host.values())
            print(f"  host time inside the backend's calls {busy * 1e3:.2f} ms: " + ", ".join(
                f"{k} {len(v)} x {sum(v) / len(v) * 1e6:.0f} us" for k, v in self.host.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--decrypt", action="store_true")
    ap.add_argument("--all", action="store_true", help="print every operation")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ramp", help="HEAD:TAIL halvings of the piece size (batches.RAMP)")
    ap.add_argument("--piece", help="bytes of text per piece (the driver's piece_bytes), e.g. 32Mi")
    ap.add_argument("--no-check", action="store_true", help="skip the repeated-nonce check")
    a = ap.parse_args()
    if a.ramp:
        from ciphergrid.transfer import batches

        batches.RAMP = tuple(int(x) for x in a.ramp.split(":"))
    if a.no_check:
        from ciphergrid.request import weak_use_allowed

        _weak = weak_use_allowed()   # (held: a dropped generator would leave the block)
        _weak.__enter__()
    b = engine("cuda:0").backend
    rec = Recorder(b)
    cp = cu.cp()
    calls = []
    nmax = 0
    for name in a.names.split(","):
        batch, call, n = setup(name, a.shape, "cuda:0")
        nmax = max(nmax, n)
        if a.decrypt:
            r = call()
            ct, tags = r.data.copy(), r.tags.copy()
            pt = np.zeros_like(ct)
            key = batch.keys[0].tobytes()

            def call(name=name, batch=batch, ct=ct, tags=tags, pt=pt, key=key):
                return ciphergrid.decrypt_batch(ct, name, offsets=batch.off, key=key,
                                                nonces=batch.nonces, tags=tags, device="cuda:0",
                                                out=pt)
        if a.piece:
            from ciphergrid.settings import parse_bytes

            engine("cuda:0").aead_driver(name).piece_bytes = parse_bytes(a.piece, "piece")
        calls.append((name, call, n))
    src = np.full(nmax, 3, np.uint8)
    dst = np.zeros(nmax, np.uint8)
    st = chunking.resolve(b.info, None, None, nbytes=nmax, tune=lambda: autotune(b))
    pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
    calls.insert(0, ("copy", lambda: pipe.copy(src, dst), nmax))
    side = cp.cuda.Stream(non_blocking=True)
    for name, call, n in calls:
        call()
        call()
        for r in range(a.repeats):
            rec.rows = []
            rec.host = {}
            rec.on = True
            ev0 = cp.cuda.Event()
            t0 = time.perf_counter()
            ev0.record(side)
            call()
            wall = time.perf_counter() - t0
            rec.on = False
            rec.report(t0, ev0, wall, f"{name} {n / wall / 1e9:.2f} GB/s",
                       a.all and r == a.repeats - 1)


if __name__ == "__main__":
    main()
