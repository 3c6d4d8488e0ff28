"""Profile the device-resident API call (CUDA): where the host time of ciphergrid.encrypt goes,
per cipher, in both orders.  Usage: python3 scripts/api_profile.py [NAME ...]"""
import cProfile
import pstats
import statistics
import sys
import time

import cupy

import ciphergrid

names = sys.argv[1:] or ["aes-128-ecb", "aes-128-ctr", "aes-128-ecb"]
n = 1 << 30
x = cupy.random.randint(0, 256, n, dtype=cupy.uint8)
y = cupy.empty_like(x)
for name in names:
    spec = ciphergrid.registry.lookup(name)
    key = bytes(range(spec.key_len))
    iv = bytes(range(16)) if spec.iv_len else None
    for _ in range(3):
        ciphergrid.encrypt(x, name, key, iv, device="cuda:0", out=y)
    cupy.cuda.Device().synchronize()
    ts = []
    for _ in range(20):
        t0 = time.perf_counter()
        ciphergrid.encrypt(x, name, key, iv, device="cuda:0", out=y)
        ts.append(time.perf_counter() - t0)
    print(f"{name}: wall median {statistics.median(ts) * 1e3:.3f} ms min {min(ts) * 1e3:.3f}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20):
        ciphergrid.encrypt(x, name, key, iv, device="cuda:0", out=y)
    pr.disable()
    st = pstats.Stats(pr)
    st.sort_stats("tottime").print_stats(12)
