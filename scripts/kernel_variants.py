"""Time every AES kernel implementation on one device (device-resident AES-128-CTR, 256 MiB) and,
with --sass, count the SASS instructions of the CTR kernel per opcode (needs nvcc + cuobjdump).
Used to choose the default implementation and to feed `ciphergrid bench ablation`."""
import argparse
import collections
import os
import re
import subprocess
import tempfile

import ciphergrid
from ciphergrid.backends.base import defines_prefix, program_source
from ciphergrid.engine import get_engine
from ciphergrid.registry import lookup

ap = argparse.ArgumentParser()
ap.add_argument("device")
ap.add_argument("--name", default="aes-128-ctr")
ap.add_argument("--size", type=int, default=256 << 20)
ap.add_argument("--only", nargs="*")
ap.add_argument("--sass", nargs="*", default=[], help="implementations whose SASS to count")
a = ap.parse_args()

spec = lookup(a.name)
e = get_engine(a.device)
rows = []


def correct(impl) -> bool:
    """Only correct code is timed: every AES name, both directions, odd sizes, vs pyca."""
    import numpy as np
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes as M

    rng = np.random.default_rng(7)
    for name in ciphergrid.available_ciphers():
        s = lookup(name)
        for n in (48, 3000 * 16 + 5):
            n = n // 16 * 16 if s.mode in ("ecb", "cbc") else n
            key = bytes(rng.integers(0, 256, s.key_len, dtype=np.uint8))
            iv = bytes(rng.integers(0, 256, s.iv_len, dtype=np.uint8)) if s.iv_len else None
            data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
            m = {"ecb": M.ECB, "cbc": M.CBC, "ctr": M.CTR, "xts": M.XTS}[s.mode]
            c = Cipher(algorithms.AES(key), m(iv) if iv else m())
            for enc in (True, False):
                ref = (c.encryptor() if enc else c.decryptor()).update(data)
                f = ciphergrid.encrypt if enc else ciphergrid.decrypt
                if f(data, name, key, iv, device=a.device, implementation=impl) != ref:
                    print(f"{impl}: WRONG OUTPUT {name} n={n} enc={enc}")
                    return False
    return True


for impl in a.only or list(spec.cipher.implementations):
    if not correct(impl):
        continue
    try:
        t = sorted(e.time_kernel(a.name, a.size, repeats=15, impl=impl))
    except Exception as ex:
        print(f"{impl}: failed {type(ex).__name__}: {str(ex)[:300]}")
        continue
    med = t[len(t) // 2]
    clk = e.sm_clock_mhz() or 0
    r = e.kernel_resources(a.name, impl=impl)
    gbs = a.size / med / 1e9
    per = gbs / e.device.compute_units / (clk / 1000) if clk else float("nan")
    rows.append((gbs, impl, per, r.get("registers_per_item"), r.get("local_mem_bytes"), r.get("private_mem_bytes"), clk))
for gbs, impl, per, regs, lmem, priv, clk in sorted(rows, reverse=True):
    print(f"{a.device} {a.name} {impl:<22} {gbs:7.1f} GB/s {per:6.3f} GB/s/SM/GHz regs {regs} smem {lmem} spill {priv} SM {clk} MHz")

kern = {"ctr": "cg_ctr", "ecb": "cg_ecb_enc", "xts": "cg_xts_enc", "cbc": "cg_cbc_dec"}[spec.mode]
for impl in a.sass:
    im = spec.cipher.implementation(impl)
    d = {**spec.cipher.defines(spec.key_size), **im.get("defines", {}), "CG_BATCH": im.get("batch", 1)}
    src = defines_prefix(d) + program_source(im["file"], "modes.cl")
    with tempfile.TemporaryDirectory() as tmp:
        cu = os.path.join(tmp, "k.cu")
        open(cu, "w").write(src)
        cub = os.path.join(tmp, "k.cubin")
        r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", cub, cu], capture_output=True, text=True)
        if r.returncode:
            print("nvcc failed", r.stderr[-2000:])
            continue
        sass = subprocess.run(["cuobjdump", "-sass", "-fun", kern, cub], capture_output=True, text=True).stdout
    ops = collections.Counter(re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass))
    total = sum(ops.values())
    print(f"SASS {impl} {kern}: {total} instructions; " + ", ".join(f"{k} {v}" for k, v in ops.most_common(14)))
