"""AEAD batches host -> host in pieces and slices (transfer/batches.py) against the copy
strawman (Pipeline.copy of as many bytes, its tuned chunk and depth), timed in pairs: the copy
just before each API call, the median of the per-pair ratios (copy time / call time), as
`bench aead` reports ``vs_copy``.
Usage: python3 scripts/dev/aead_slices_probe.py NAME[,NAME...] PIECE:SLICE:DEPTH:HEAD:TAIL[:FIRST][,...] [ROUNDS] [both]
(SLICE 0: whole pieces; DEPTH: batches.DEPTH, counted in pieces of 64 MiB: 2 x max(2, DEPTH x
64 MiB / PIECE) pieces in flight; HEAD, TAIL: halvings of the piece size at the start and the end
of a batch; FIRST: device_aead.job.FIRST_SLICES, slices whose texts go up before a piece's
metadata, default 1; "both": decryption too)"""
import statistics
import sys
import time

import numpy as np

import ciphergrid
from aead_e2e_probe import setup, use_sliced
from ciphergrid.route import engine
from ciphergrid.transfer import chunking
from ciphergrid.transfer.autotune import autotune
from ciphergrid.transfer.driver import Pipeline

names, variants = sys.argv[1].split(","), sys.argv[2].split(",")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
both = len(sys.argv) > 4 and sys.argv[4] == "both"
eng = engine("cuda:0")
b = eng.backend
calls, n_bytes = {}, 0
for name in names:
    batch, call, nb = setup(name, "65536x16Ki", "cuda:0")
    n_bytes = max(n_bytes, nb)
    calls[(name, "encrypt")] = call
    if both:
        r = call()
        tags, sealed = np.array(r.tags, copy=True), np.array(r.data, copy=True)
        plain = np.zeros_like(sealed)

        def dec(name=name, batch=batch, tags=tags, sealed=sealed, plain=plain):
            return ciphergrid.decrypt_batch(sealed, name, offsets=batch.off, key=batch.keys[0].tobytes(),
                                            nonces=batch.nonces, tags=tags, device="cuda:0", out=plain)
        assert np.asarray(dec().ok).all() and np.array_equal(plain, batch.src)
        calls[(name, "decrypt")] = dec
src, dst = np.full(n_bytes, 3, np.uint8), np.zeros(n_bytes, np.uint8)
st = chunking.resolve(b.info, None, None, nbytes=n_bytes, tune=lambda: autotune(b))
pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
print(f"copy strawman: {st.chunk_bytes >> 20} MiB chunks, depth {st.depth}", flush=True)


res = {}
for _ in range(rounds):
    for (name, direction), call in calls.items():
        drv = eng.aead_driver(name)
        for v in variants:
            use_sliced(drv, v)
            call()
            t0 = time.perf_counter(); pipe.copy(src, dst); tc = time.perf_counter() - t0
            t0 = time.perf_counter(); call(); ta = time.perf_counter() - t0
            res.setdefault((name, direction, v), []).append((tc, ta))
for (name, direction, v), pairs in res.items():
    r = [c / a for c, a in pairs]
    print(f"{name} {direction} {v}: vs copy median {statistics.median(r):.3f} "
          f"(min {min(r):.3f}, max {max(r):.3f}, {len(r)} pairs); best call "
          f"{n_bytes / min(a for _, a in pairs) / 1e9:.2f} GB/s, best copy "
          f"{n_bytes / min(c for c, _ in pairs) / 1e9:.2f}", flush=True)
