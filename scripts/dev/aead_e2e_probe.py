"""Where an AEAD batch's host -> host time goes on a GPU (transfer/batches.py): the API's
encrypt_batch timed for several piece sizes and depths, one piece's phases, and a profile of one
call.  Usage: python3 scripts/dev/aead_e2e_probe.py NAME [--shape 65536x16Ki] [--variants PIECE:DEPTH[:HEAD[:TAIL[:KQ]]],...]
(HEAD, TAIL: halvings of the piece size at the start and the end of a batch; KQ: kernel queues)"""
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
        return ciphergrid.encrypt_batch(batch.src, name, offsets=batch.off, key=key,
                                        nonces=batch.nonces, device=device, out=out)

    return batch, call, int(batch.off[-1])


def use_sliced(drv, variant: str) -> None:
    """Set ``drv``'s pieces to ``variant``, PIECE:SLICE:DEPTH:HEAD:TAIL[:FIRST] (SLICE 0: whole
    pieces; DEPTH: batches.DEPTH; HEAD, TAIL: batches.RAMP; FIRST: device_aead.job.FIRST_SLICES,
    default 1): the sliced probes' (aead_slices_probe.py, aead_head_span_tail.py) variants."""
    from ciphergrid.engines.device_aead import job as base

    p, s, d, h, t, *first = variant.split(":")
    base.FIRST_SLICES = int(first[0]) if first else 1
    drv.piece_bytes = parse_bytes(p, "piece")
    drv.slice_bytes = parse_bytes(s, "slice") or None
    batches.DEPTH, batches.RAMP = int(d), (int(h), int(t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--variants", default="64Mi:4:2:2,64Mi:4:0:2,64Mi:4:0:3,64Mi:4:1:3")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-check", action="store_true",
                    help="skip the API's repeated-nonce check (what it costs)")
    ap.add_argument("--phases", action="store_true", help="also the pieces in turn, timed")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    if a.no_check:
        from ciphergrid.request import weak_use_allowed

        _weak = weak_use_allowed()   # (held: a dropped generator would leave the block)
        _weak.__enter__()
    batch, call, n = setup(a.name, a.shape, a.device)
    # every variant and the copy strawman once per round, best of 3 each (one process: the
    # machine's drift hits all alike); the ratio to copy is per round
    from ciphergrid.route import engine as get_engine
    from ciphergrid.transfer import chunking
    from ciphergrid.transfer.autotune import autotune
    from ciphergrid.transfer.driver import Pipeline

    b = get_engine(a.device).backend
    src, dst = np.full(n, 3, np.uint8), np.zeros(n, np.uint8)
    st = chunking.resolve(b.info, None, None, nbytes=n, tune=lambda: autotune(b))
    pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
    variants = {}
    for v in a.variants.split(","):
        p, d, *r = v.split(":")
        variants[v] = (parse_bytes(p, "piece"), int(d),
                       (int(r[0]), int(r[1] if len(r) > 1 else r[0])) if r else batches.RAMP,
                       int(r[2]) if len(r) > 2 else 1)

    drv = get_engine(a.device).aead_driver(a.name)   # (the API's cached driver)

    def use(v):
        pb, batches.DEPTH, batches.RAMP, kq = variants[v]
        drv.piece_bytes, drv.kernel_queues = pb, kq

    def best(fn, k=3):
        ts = []
        for _ in range(k):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    ref = None
    for v in variants:
        use(v)
        r = call()
        if ref is None:
            ref = (r.tags.copy(), r.data.copy())
        assert r.tags.tobytes() == ref[0].tobytes() and np.array_equal(r.data, ref[1]), v
    res = {v: [] for v in variants}
    for rnd in range(a.rounds):
        c = n / best(lambda: pipe.copy(src, dst)) / 1e9
        line = f"round {rnd}: copy {c:.2f}"
        for v in variants:
            use(v)
            g = n / best(call) / 1e9
            res[v].append((g, g / c))
            line += f" | {v} {g:.2f} ({g / c:.3f})"
        print(line, flush=True)
    for v, rows in res.items():
        rat = sorted(x[1] for x in rows)
        print(f"{a.name} {a.shape} piece:depth:head:tail {v}: median "
              f"{statistics.median(x[0] for x in rows):.2f} GB/s, ratio to copy median "
              f"{statistics.median(rat):.3f} (min {rat[0]:.3f}, max {rat[-1]:.3f})", flush=True)
    if not a.phases:
        return
    # the pieces one after the other on one queue, each phase timed: what overlapping hides
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
