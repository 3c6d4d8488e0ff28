"""AEAD batches host -> host (encrypt_batch / decrypt_batch, out= reused, distinct nonces) against
the copy strawman (Pipeline.copy of as many bytes, as `bench pipeline` runs it), alternating in one
process, best of 3 per round.
Usage: python3 scripts/aead_vs_copy.py NAME[,NAME...] [ROUNDS] [SHAPE, default 65536x16Ki]"""
import statistics
import sys
import time
import numpy as np
import ciphergrid
from aead_e2e_probe import setup
from ciphergrid.route import engine
from ciphergrid.transfer import chunking
from ciphergrid.transfer.autotune import autotune
from ciphergrid.transfer.driver import Pipeline
names = sys.argv[1].split(",")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
shape = sys.argv[3] if len(sys.argv) > 3 else "65536x16Ki"
b = engine("cuda:0").backend
sets = {}
for n in names:
    batch, call, nb = setup(n, shape, "cuda:0")
    r = call()
    ct, tags = r.data.copy(), r.tags.copy()
    pt = np.zeros_like(ct)
    key = batch.keys[0].tobytes()
    def dec(n=n, batch=batch, ct=ct, tags=tags, pt=pt, key=key):
        return ciphergrid.decrypt_batch(n, ct, offsets=batch.off, key=key, nonces=batch.nonces,
                                        tags=tags, device="cuda:0", out=pt)
    assert dec().ok.all() and np.array_equal(pt, batch.src)
    sets[n] = (call, dec, nb, batch)
N = max(v[2] for v in sets.values())
src = np.empty(N, np.uint8); src[:] = 3; dst = np.zeros(N, np.uint8)
st = chunking.resolve(b.info, None, None, nbytes=N, tune=lambda: autotune(b))
pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
cp = lambda: pipe.copy(src, dst)
cp(); assert np.array_equal(src, dst)
res = {"copy": []}
def best(fn, k=3):
    ts = []
    for _ in range(k):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return min(ts)
for r in range(rounds):
    c = N / best(cp) / 1e9
    res["copy"].append(c)
    line = f"round {r}: copy {c:.2f}"
    for n, (enc, dec, nb, _) in sets.items():
        e = nb / best(enc) / 1e9; d = nb / best(dec) / 1e9
        res.setdefault(n + " enc", []).append(e); res.setdefault(n + " dec", []).append(d)
        line += f" | {n} enc {e:.2f} ({e / c:.3f}) dec {d:.2f} ({d / c:.3f})"
    print(line, flush=True)
cm = statistics.median(res["copy"])
print(f"median copy {cm:.2f} GB/s")
for k, v in res.items():
    if k != "copy":
        rat = [x / c for x, c in zip(v, res["copy"])]
        print(f"  {k}: median {statistics.median(v):.2f} GB/s, per-round ratio to copy median {statistics.median(rat):.3f} (min {min(rat):.3f}, max {max(rat):.3f})")
