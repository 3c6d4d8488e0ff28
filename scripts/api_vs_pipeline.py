"""The host-data API against `bench pipeline`, in one process on the same arrays, alternating:
ciphergrid.encrypt(numpy, "aes-128-ctr", out=...) against Pipeline.crypt with a prepared
KeyedProgram (what `bench pipeline` times), best of 3 per round, the order alternating.
Usage: python3 scripts/api_vs_pipeline.py [BYTES] [ROUNDS]  (DEV=cuda:0 by default)"""
import os
import statistics
import sys
import time
import numpy as np
import ciphergrid
from ciphergrid.route import engine
from ciphergrid.program import KeyedProgram
from ciphergrid.request import make_request
from ciphergrid.transfer import chunking
from ciphergrid.transfer.autotune import autotune
from ciphergrid.transfer.driver import Pipeline
from ciphergrid import registry

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4 << 30
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
name = "aes-128-ctr"
eng = engine(os.environ.get("DEV", "cuda:0")); b = eng.backend
spec = registry.lookup(name)
key, iv = bytes(range(16)), bytes(range(16))
src = np.empty(N, np.uint8); blk = np.frombuffer(np.random.default_rng(7).bytes(16 << 20), np.uint8)
for lo in range(0, N, blk.nbytes): src[lo:lo + blk.nbytes] = blk[:N - lo]
dst = np.zeros(N, np.uint8); ref = np.empty(N, np.uint8)
st = chunking.resolve(b.info, None, None, nbytes=N, tune=lambda: autotune(b))
pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
print("pipeline", pipe, "from", st.source, flush=True)
p = make_request(spec, key, iv, True, None, None, None)
layout = spec.mode.layout(p, N)
kp = KeyedProgram(b, p)
run_b = lambda: pipe.crypt(kp, src, dst, layout)
run_a = lambda: ciphergrid.encrypt(src, name, key, iv, device=os.environ.get("DEV", "cuda:0"), out=ref)
run_a(); run_b()
assert np.array_equal(ref, dst), "API and pipeline differ"
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
e = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
m = 64 << 20
assert e.update(src[:m].tobytes()) == dst[:m].tobytes(), "not AES-CTR"
A, B = [], []
for r in range(ROUNDS):
    for lab, fn, acc in (("api", run_a, A), ("pipe", run_b, B)) if r % 2 == 0 else (("pipe", run_b, B), ("api", run_a, A)):
        ts = []
        for _ in range(3):
            t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
        acc.append(N / min(ts) / 1e9)
    print(f"round {r}: api {A[-1]:.2f} pipe {B[-1]:.2f} ratio {A[-1]/B[-1]:.3f}", flush=True)
ra = [a / bb for a, bb in zip(A, B)]
print(f"api median {statistics.median(A):.2f} GB/s, pipeline median {statistics.median(B):.2f}; "
      f"per-round ratio median {statistics.median(ra):.3f} (min {min(ra):.3f} max {max(ra):.3f})")
kp.close(); pipe.close()
