"""Where an AEAD batch's host -> host time goes on a GPU (transfer/batches.py): the API's
encrypt_batch timed for several piece sizes and depths, one piece's phases, and a profile of one
call.  Usage: python3 scripts/aead_e2e_probe.py NAME [--shape 65536x16Ki] [--variants PIECE:DEPTH[:RAMP],...]"""
import argparse
import cProfile
import pstats
import statistics
import time

import numpy as np

import ciphergrid
from ciphergrid.bench.aead import _shapes, make_batch
from ciphergrid.settings import parse_bytes
from ciphergrid.transfer import batches


def setup(name: str, shape: str, device: str):
    """(batch, call, text bytes): a batch of SHAPE random messages of ``name`` under one key and
    ``call()``, its encrypt_batch host -> host into a reused output."""
    ((count, size),) = _shapes(shape)
    batch = make_batch(name, count, size, np.random.default_rng(1))
    key = batch.keys[0].tobytes()
    out = np.zeros(batch.src.nbytes, dtype=np.uint8)

    def call():  # (distinct nonces: the API's repeated-nonce check runs, as for any caller)
        return ciphergrid.encrypt_batch(name, batch.src, offsets=batch.off, key=key,
                                        nonces=batch.nonces, device=device, out=out)

    return batch, call, int(batch.off[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--variants", default="64Mi:4,32Mi:4,32Mi:8,128Mi:4,16Mi:8,64Mi:1")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    batch, call, n = setup(a.name, a.shape, a.device)
    ref = None
    for v in a.variants.split(","):
        p, d, *r = v.split(":")
        batches.PIECE_BYTES, batches.DEPTH = parse_bytes(p, "piece"), int(d)
        batches.RAMP = int(r[0]) if r else 2
        r = call()
        if ref is None:
            ref = r.tags.copy()
        assert r.tags.tobytes() == ref.tobytes(), v
        ts = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            call()
            ts.append(time.perf_counter() - t0)
        print(f"{a.name} {a.shape} piece {p} depth {d} ramp {batches.RAMP}: {n / statistics.median(ts) / 1e9:.2f} GB/s "
              f"(best {n / min(ts) / 1e9:.2f})", flush=True)
    # the pieces one after the other on one queue, each phase timed: what overlapping hides
    from ciphergrid.route import engine as get_engine

    eng = get_engine(a.device)
    drv = eng.aead_driver(a.name)
    bounds = batches.cuts(batch.off, 64 << 20)
    ph = {"prepare (host + upload)": 0.0, "enqueue": 0.0, "finish (kernels + download)": 0.0}
    t_all = time.perf_counter()
    for k in range(len(bounds) - 1):
        sub = batches.piece(batch, bounds[k], bounds[k + 1])
        t0 = time.perf_counter()
        job = drv.prepare(sub)
        t1 = time.perf_counter()
        job.enqueue()
        t2 = time.perf_counter()
        job.finish()
        t3 = time.perf_counter()
        for key, dt in zip(ph, (t1 - t0, t2 - t1, t3 - t2)):
            ph[key] += dt
    t_all = time.perf_counter() - t_all
    print(f"   {len(bounds) - 1} pieces of 64 MiB in turn, one queue: {n / t_all / 1e9:.2f} GB/s; "
          + ", ".join(f"{k_} {v * 1e3:.1f} ms" for k_, v in ph.items()), flush=True)
    if a.profile:
        batches.PIECE_BYTES, batches.DEPTH = 64 << 20, 4
        pr = cProfile.Profile()
        pr.enable()
        call()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
