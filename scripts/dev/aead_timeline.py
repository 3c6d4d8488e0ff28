"""Where the time of an AEAD batch host -> host goes in pieces (transfer/batches.py): per piece
the host time of prepare (host work, uploads enqueued), enqueue (launches), collect (downloads
enqueued) and finish (waiting for the piece's downloads), their sums and the share of the wall
time; ``--null`` runs the same calls on a device that does nothing (the host's own cost, on any
machine).  Usage: python3 scripts/dev/aead_timeline.py NAME [--shape 65536x16Ki] [--device cuda:0]
[--repeats 3] [--null]"""
import argparse
import time

from aead_e2e_probe import setup  # (scripts/dev/: the same batch and call)

from ciphergrid.transfer import batches


class _Timed:
    """A driver whose jobs log each call's host time."""

    def __init__(self, drv, log):
        self.drv, self.log = drv, log

    def __getattr__(self, name):   # (piece_bytes, slice_bytes, kernel_queues: the driver's)
        return getattr(self.drv, name)

    def run(self, batch):
        return self.drv.run(batch)

    def prepare(self, batch, queue=None, **slicing):
        t0 = time.perf_counter()
        job = self.drv.prepare(batch, queue, **slicing)
        row = {"start": t0, "prepare": time.perf_counter() - t0}
        self.log.append(row)
        return _TimedJob(job, row)


class _TimedJob:
    def __init__(self, job, row):
        self.job, self.row = job, row

    def __getattr__(self, name):
        fn = getattr(self.job, name)

        def call(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.row[name] = self.row.get(name, 0.0) + time.perf_counter() - t0
        return call


def null_backend():
    """A 'GPU' whose operations do nothing: the host's own cost of the pieces."""
    from types import SimpleNamespace

    import numpy as np

    from ciphergrid.backends.base import Backend

    class Buf:
        def __init__(self, n):
            self.nbytes = self.size = int(n)

        def __getitem__(self, sl):
            return Buf(sl.stop - sl.start)

    class Null(Backend):
        local_size = 256
        default_queue = None

        def __init__(self):
            self.info = SimpleNamespace(spec="null", kind="gpu", compute_units=132, extra={})

        def build(self, source, key, *, local_size=None, **kw):
            return SimpleNamespace(local_size=local_size)

        def cached_program(self, key):
            return None

        def alloc(self, n):
            return Buf(n)

        def pinned(self, n):
            return np.empty(n, np.uint8)

        def view(self, buf, o, n):
            return Buf(n)

        def zero(self, buf, queue=None, *, wait=True):
            pass

        def queue(self):
            return object()

        def after(self, q, evs):
            pass

        def upload(self, *a, **kw):
            return None

        def download(self, *a, **kw):
            return None

        def launch(self, *a, **kw):
            return None

        def resident_items(self, prg, name):
            return 132 * 2048

        def marker(self, queue=None):
            return None

        def wait(self, ev):
            pass

        def finish(self, queue=None):
            pass

        def register_host(self, ptr, nbytes, readonly=False):
            return False

    return Null()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--null", action="store_true", help="a device that does nothing: host cost")
    a = ap.parse_args()
    batch, call, n = setup(a.name, a.shape, a.device)
    if a.null:
        from ciphergrid import aeads
        from ciphergrid.engines import device_aead

        nb = null_backend()
        drv = device_aead.build(nb, aeads.lookup(a.name), a.name)

        def call():
            return batches.run(nb, drv, batch)
    log = []
    real_run = batches.run

    span = {}

    def traced(backend, driver, b, **kw):
        span["in"] = time.perf_counter()
        try:
            return real_run(backend, _Timed(driver, log), b, **kw)
        finally:
            span["out"] = time.perf_counter()

    batches.run = traced
    call()
    for _ in range(a.repeats):
        log.clear()
        t = time.perf_counter()
        call()
        t_end = time.perf_counter()
        wall = t_end - t
        if not log:
            print(f"{a.name} {a.shape}: {n / wall / 1e9:.2f} GB/s in one job (not in pieces: "
                  "a GPU and a batch of 2+ pieces take transfer/batches.py)")
            return
        s = {k: sum(r.get(k, 0.0) for r in log) for k in ("prepare", "enqueue", "collect", "finish")}
        host = s["prepare"] + s["enqueue"] + s["collect"]
        print(f"{a.name} {a.shape}: {n / wall / 1e9:.2f} GB/s, wall {wall * 1e3:.1f} ms, {len(log)} "
              f"pieces; host per piece {host / len(log) * 1e3:.3f} ms (prepare "
              f"{s['prepare'] / len(log) * 1e3:.3f}, enqueue {s['enqueue'] / len(log) * 1e3:.3f}, "
              f"collect {s['collect'] / len(log) * 1e3:.3f}); waiting in finish {s['finish'] * 1e3:.1f} ms "
              f"in all; host busy {host / wall:.2f} of the wall; the API before the pieces "
              f"{(span.get('in', t) - t) * 1e3:.2f} ms, after {(t_end - span.get('out', t_end)) * 1e3:.2f} ms, "
              f"first piece prepared {(log[0]['start'] + log[0]['prepare'] - t) * 1e3:.2f} ms in",
              flush=True)


if __name__ == "__main__":
    main()
