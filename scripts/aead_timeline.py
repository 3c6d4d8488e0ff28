"""Where the time of an AEAD batch host -> host goes in pieces (transfer/batches.py): every piece's
host timestamps (start, prepared = uploads done, enqueued, finished = downloads done) per thread,
and per phase the sum over pieces and the share of the wall time.
Usage: python3 scripts/aead_timeline.py NAME [--shape 65536x16Ki] [--device cuda:0] [--repeats 3]"""
import argparse
import threading
import time

from aead_e2e_probe import setup  # (scripts/: the same batch and call)

from ciphergrid.transfer import batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile-prepare", action="store_true",
                    help="also: cProfile of 8 pieces' prepare() in turn, one thread")
    a = ap.parse_args()
    batch, call, n = setup(a.name, a.shape, a.device)
    log = []
    lock = threading.Lock()
    real_run = batches.run

    def traced(backend, make_driver, b, **kw):
        def make(view):
            drv = make_driver(view)

            def run(piece):
                t0 = time.perf_counter()
                job = drv.prepare(piece)
                t1 = time.perf_counter()
                job.enqueue()
                t2 = time.perf_counter()
                tags = job.finish()
                t3 = time.perf_counter()
                with lock:
                    log.append((threading.get_ident(), t0, t1, t2, t3))
                return tags
            drv.run = run
            return drv
        return real_run(backend, make, b, **kw)

    batches.run = traced
    call()
    for _ in range(a.repeats):
        log.clear()
        t = time.perf_counter()
        call()
        wall = time.perf_counter() - t
        if not log:
            print(f"{a.name} {a.shape}: {n / wall / 1e9:.2f} GB/s in one job (not in pieces: "
                  "a GPU and a batch of 2+ pieces take transfer/batches.py)")
            return
        first = min(e[1] for e in log)
        prep = sum(e[2] - e[1] for e in log)
        enq = sum(e[3] - e[2] for e in log)
        fin = sum(e[4] - e[3] for e in log)
        busy = prep + enq + fin
        threads = sorted({e[0] for e in log})
        print(f"{a.name} {a.shape}: {n / wall / 1e9:.2f} GB/s, wall {wall * 1e3:.1f} ms, {len(log)} pieces "
              f"on {len(threads)} threads; sums: prepare+upload {prep * 1e3:.1f} ms, enqueue "
              f"{enq * 1e3:.1f}, kernels+download {fin * 1e3:.1f} (threads busy {busy / wall / len(threads):.2f}); "
              f"first piece starts {(first - t) * 1e3:.1f} ms in")
    if a.profile_prepare:
        profile_prepare(a.name, batch, a.device)
    for tid in threads:
        row = [e for e in log if e[0] == tid]
        print("  thread " + " | ".join(f"{(e[1] - first) * 1e3:.1f}:{(e[2] - e[1]) * 1e3:.1f}/"
                                        f"{(e[3] - e[2]) * 1e3:.2f}/{(e[4] - e[3]) * 1e3:.1f}" for e in row))


def profile_prepare(name, batch, device):
    """The host work of one piece's prepare(), in turn on one thread (no GIL contention)."""
    import cProfile
    import pstats

    from ciphergrid.route import engine

    drv = engine(device).aead_driver(name)
    bounds = batches.cuts(batch.off, batches.PIECE_BYTES)
    pieces = [batches.piece(batch, bounds[k], bounds[k + 1]) for k in range(min(8, len(bounds) - 1))]
    drv.prepare(pieces[0]).finish()
    pr = cProfile.Profile()
    t = time.perf_counter()
    for p in pieces:
        pr.enable()
        job = drv.prepare(p)
        pr.disable()
        job.enqueue()
        job.finish()
    print(f"  {len(pieces)} pieces in turn: {(time.perf_counter() - t) * 1e3 / len(pieces):.2f} ms each")
    pstats.Stats(pr).sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
