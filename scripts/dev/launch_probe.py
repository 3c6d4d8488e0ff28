"""Which launch of an AEAD's job kills the process on a device (a compiler that aborts at the
first launch of a kernel, e.g. PoCL's work-group generation): each run stops after launch N.
Usage: python3 scripts/dev/launch_probe.py DEVICE NAME [COUNTxSIZE [IMPLEMENTATION]]"""
import os
import subprocess
import sys

CHILD = r"""
import os, sys
import numpy as np
from ciphergrid.bench.aead import _shapes, make_batch
from ciphergrid.route import engine
dev, name, shape, limit, impl = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
eng = engine(dev)
b = eng.backend
((c, s),) = _shapes(shape)
job = eng.aead_driver(name, None if impl == "-" else impl).prepare(make_batch(name, c, s, np.random.default_rng(1)))
launch, n = b.launch, [0]
def counted(program, kname, items, args, queue=None, **kw):
    n[0] += 1
    print(f"launch {n[0]}: {kname}", flush=True)
    ev = launch(program, kname, items, args, queue, **kw)
    b.finish()
    if n[0] >= limit:
        os._exit(0)
    return ev
b.launch = counted
job.enqueue()
b.finish()
print("all launches done", flush=True)
"""

dev, name = sys.argv[1], sys.argv[2]
shape = sys.argv[3] if len(sys.argv) > 3 else "4x4Ki"
impl = sys.argv[4] if len(sys.argv) > 4 else "-"
for limit in range(1, 12):
    r = subprocess.run([sys.executable, "-c", CHILD, dev, name, shape, str(limit), impl],
                       capture_output=True, text=True, env=dict(os.environ))
    last = (r.stdout.strip().splitlines() or ["(nothing)"])[-1]
    print(f"limit {limit}: exit {r.returncode}, last: {last}", flush=True)
    if r.returncode != 0 or "all launches done" in r.stdout:
        if r.returncode != 0:
            print("  stderr:", (r.stderr.strip().splitlines() or [""])[-1][:300])
        break
