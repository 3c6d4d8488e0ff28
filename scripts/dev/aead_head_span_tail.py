"""Where an AEAD batch's host -> host time goes against the copy strawman, in three parts: the
head (the API call's start -> its first upload starts on the device), the span (the first
upload's start -> the last download's end, device events) and the tail (the last download's
end -> the call returns).  Only the first upload and each download record an event (two
events in all per call that count), so the timing is close to an untouched call's.  The copy
strawman (Pipeline.copy of as many bytes, its tuned chunk and depth) runs just before each
API call, as `bench aead` pairs them; the ratio is the median of the per-pair ratios.

Usage: python3 scripts/dev/aead_head_span_tail.py NAME[,NAME...] [--rounds 10] [--shape 65536x16Ki]
[--decrypt] [--variants PIECE:SLICE:DEPTH:HEAD:TAIL[:FIRST],...]
(variants as scripts/dev/aead_slices_probe.py: the driver's piece and slice bytes, batches.DEPTH
and RAMP, device_aead.job.FIRST_SLICES)"""
import argparse
import statistics
import time

import numpy as np

import ciphergrid
from aead_e2e_probe import setup, use_sliced  # (scripts/dev/: the same batch and call)
from ciphergrid.backends import cuda as cu
from ciphergrid.route import engine
from ciphergrid.transfer import chunking
from ciphergrid.transfer.autotune import autotune
from ciphergrid.transfer.driver import Pipeline


class Marks:
    """The backend's upload and download wrapped: an event before the first upload of a call
    (it completes when its queue reaches the upload) and after every download (the last one
    kept), with the host time of the first upload's enqueue."""

    def __init__(self, backend):
        self.cp = cu.cp()
        self.on = False
        self.first = self.last = None
        self.host_first = 0.0
        for name in ("upload", "download"):
            setattr(backend, name, self._wrap(backend, name, getattr(backend, name)))

    def _wrap(self, backend, name, fn):
        def call(*a, **kw):
            if not self.on:
                return fn(*a, **kw)
            q = kw.get("queue", a[2] if len(a) > 2 else None) or backend.default_queue
            if name == "upload" and self.first is None:
                self.host_first = time.perf_counter()
                self.first = self.cp.cuda.Event()
                self.first.record(q)
            r = fn(*a, **kw)
            if name == "download":
                self.last = self.cp.cuda.Event()
                self.last.record(q)
            return r
        return call

    def time(self, call, side) -> tuple:
        """(wall, head, span, tail, host time of the first upload's enqueue) in ms."""
        self.first = self.last = None
        self.on = True
        ev0 = self.cp.cuda.Event()
        t0 = time.perf_counter()
        ev0.record(side)
        call()
        wall = (time.perf_counter() - t0) * 1e3
        self.on = False
        self.last.synchronize()
        h = self.cp.cuda.get_elapsed_time(ev0, self.first)
        e = self.cp.cuda.get_elapsed_time(ev0, self.last)
        return wall, h, e - h, wall - e, (self.host_first - t0) * 1e3


def use(name: str, variant: str | None) -> None:
    if variant is not None:
        use_sliced(engine("cuda:0").aead_driver(name), variant)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--decrypt", action="store_true", help="decryption too")
    ap.add_argument("--variants", help="PIECE:SLICE:DEPTH:HEAD:TAIL[:FIRST],...")
    a = ap.parse_args()
    variants = a.variants.split(",") if a.variants else [None]
    b = engine("cuda:0").backend
    marks = Marks(b)
    calls, nmax = [], 0
    for name in a.names.split(","):
        batch, call, n = setup(name, a.shape, "cuda:0")
        nmax = max(nmax, n)
        todo = [("enc", call)]
        if a.decrypt:
            r = call()
            ct, tags, pt = r.data.copy(), r.tags.copy(), np.zeros(n, np.uint8)

            def dec(name=name, batch=batch, ct=ct, tags=tags, pt=pt):
                return ciphergrid.decrypt_batch(ct, name, offsets=batch.off, tags=tags,
                                                key=batch.keys[0].tobytes(), nonces=batch.nonces,
                                                device="cuda:0", out=pt)
            todo.append(("dec", dec))
        for direction, fn in todo:
            for v in variants:
                calls.append((f"{name} {direction}" + (f" {v}" if v else ""), fn, name, v))
    src, dst = np.full(nmax, 3, np.uint8), np.zeros(nmax, np.uint8)
    st = chunking.resolve(b.info, None, None, nbytes=nmax, tune=lambda: autotune(b))
    pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
    print(f"copy strawman: {st.chunk_bytes >> 20} MiB chunks, depth {st.depth}", flush=True)
    side = cu.cp().cuda.Stream(non_blocking=True)
    for _, fn, name, v in calls:
        use(name, v)
        fn()
        fn()
    rows: dict = {}
    for _ in range(a.rounds):
        for label, fn, name, v in calls:
            use(name, v)
            c = marks.time(lambda: pipe.copy(src, dst), side)
            t = marks.time(fn, side)
            rows.setdefault("copy", []).append(c)
            rows.setdefault(label, []).append(t + (c[0] / t[0],))
    for label, rs in rows.items():
        med = [statistics.median(r[i] for r in rs) for i in range(5)]
        ratio = f"  x copy {statistics.median(r[5] for r in rs):.3f}" if label != "copy" else ""
        print(f"{label:40s} wall {med[0]:6.2f} ms: head {med[1]:.2f} (first upload enqueued at "
              f"{med[4]:.2f}), span {med[2]:6.2f}, tail {med[3]:.2f}{ratio}", flush=True)


if __name__ == "__main__":
    main()
