"""Where an AEAD's device time goes: every launch of one Job.enqueue timed with device events,
summed per kernel name (median of repeats).  Usage:
  python3 scripts/dev/aead_profile.py --device cuda:0 --shape 1x1Gi aes-128-gcm [--impl ct] [--opt 'k=v,k=v']
(--opt: the driver's knobs, as scripts/dev/aead_knobs.py takes them, e.g. 'gh=1' or 'ct=1,gh=1,ctr=4')"""
import argparse
import statistics
from collections import defaultdict

import numpy as np

from ciphergrid import aeads
from ciphergrid.bench.aead import _shapes, make_batch
from ciphergrid.route import engine

from aead_knobs import parse  # (scripts/dev/: the knob strings of aead_knobs.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--shape", default="1x1Gi")
    ap.add_argument("--impl", default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--opt", default="", help="driver knobs k=v,k=v (scripts/dev/aead_knobs.py)")
    a = ap.parse_args()
    eng = engine(a.device)
    b = eng.backend
    ((count, size),) = _shapes(a.shape)
    batch = make_batch(a.name, count, size, np.random.default_rng(1))
    if a.opt:
        from ciphergrid.engines import device_aead

        drv = device_aead.build(b, aeads.lookup(a.name), a.name, a.impl, **parse(a.opt))
    else:
        drv = eng.aead_driver(a.name, a.impl)
    job = drv.prepare(batch)
    job.enqueue()
    b.finish()
    launch = b.launch
    spans = defaultdict(list)
    current = {}

    def timed(program, name, items, args, queue=None, **kw):
        s = b.marker(queue)
        ev = launch(program, name, items, args, queue, **kw)
        current.setdefault(name, []).append((s, b.marker(queue)))
        return ev

    b.launch = timed
    try:
        for _ in range(a.repeats):
            current.clear()
            job.enqueue()
            b.finish()
            for name, pairs in current.items():
                spans[name].append(sum(b.elapsed(s, e) for s, e in pairs))
    finally:
        b.launch = launch
    job.finish()
    total = sum(statistics.median(v) for v in spans.values())
    print(f"{a.name} {a.shape} impl={a.impl or 'fast'} {a.opt}: {count * size / total / 1e9:.1f} GB/s over the launches")
    for name, v in sorted(spans.items(), key=lambda kv: -statistics.median(kv[1])):
        t = statistics.median(v)
        print(f"  {name:<24} {t * 1e3:9.3f} ms  {100 * t / total:5.1f} %")


if __name__ == "__main__":
    main()
