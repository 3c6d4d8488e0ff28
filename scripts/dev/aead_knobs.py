"""Time an AEAD driver's knobs on one device, kernel only (device events), checked first against
the default driver's output.  Usage:
  python3 scripts/dev/aead_knobs.py --device cuda:0 --shape 65536x16Ki NAME 'k=v,k=v' ['k=v' ...]
(an empty string: the defaults).  Prints GB/s and GB/s per SM per GHz per setting."""
import argparse
import statistics

import numpy as np

from ciphergrid import aeads
from ciphergrid.bench.aead import _shapes, make_batch, time_job
from ciphergrid.engines import device_aead
from ciphergrid.bench.kernels import sm_clock_mhz
from ciphergrid.route import engine


def parse(opt: str) -> dict:
    out = {}
    for kv in filter(None, opt.split(",")):
        k, v = kv.split("=")
        out[k] = None if v == "None" else int(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("options", nargs="*", default=[""])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--shape", default="65536x16Ki")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    eng = engine(a.device)
    b = eng.backend
    rng = np.random.default_rng(1)
    ((count, size),) = _shapes(a.shape)
    batch = make_batch(a.name, count, size, rng)
    ref = None
    clk = sm_clock_mhz(eng.info) or eng.info.clock_mhz or 0
    for opt in a.options:
        kw = parse(opt)
        try:
            aead = aeads.lookup(a.name)
            drv = device_aead.driver_class(aead.implementation("fast"))(b, aead, a.name, **kw)
            job = drv.prepare(batch)
            ts = time_job(b, job, a.repeats)
            tags = job.finish()
            out = (batch.dst.copy(), tags.copy())
            same = "" if ref is None else ("same" if np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1]) else "DIFFERENT OUTPUT")
            ref = ref or out
            t = statistics.median(ts)
            gbps = count * size / t / 1e9
            per = gbps / (eng.info.compute_units * clk / 1000) if clk else float("nan")
            print(f"{a.name} {a.shape} {opt or 'defaults':<40} {gbps:8.1f} GB/s {per:7.3f} /SM/GHz {same}", flush=True)
        except Exception as e:
            print(f"{a.name} {a.shape} {opt or 'defaults':<40} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main()
