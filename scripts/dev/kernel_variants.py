"""Time AES kernel implementations on one device (device-resident AES-128-CTR by default, 256 MiB,
15 runs, median), each checked against pyca/cryptography first.  Used to choose the default
implementation and to try settings before they become implementations.

    python3 scripts/dev/kernel_variants.py DEVICE [--only IMPL_OR_VARIANT ...] [--quick] [--sass IMPL ...]
    python3 scripts/dev/kernel_variants.py DEVICE --only IMPL ... --ptx DIR   # the runtime's compiled
        program (NVIDIA OpenCL: PTX), to compare offline with scripts/dev/sass.py
    python3 scripts/dev/kernel_variants.py DEVICE --only IMPL --run [MiB]     # one short run, for a
        profiler: ncu -k regex:cg_ctr python3 scripts/dev/kernel_variants.py cuda:0 --only ct --run 64

A variant is BASE[,regs=N][,local=N][,NAME=VALUE...]: implementation BASE with a register cap, a
work-group size or extra defines, e.g. ct,regs=168,local=128,CG_CTR_GROUP=4.  --sass counts the SASS opcodes of
the kernel per implementation (needs nvcc + cuobjdump; scripts/dev/sass.py does it without a GPU).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import ciphergrid  # noqa: E402  (ICD set-up)
from ciphergrid.program import build_program as build_cipher_program, program_source_for as cipher_program_source  # noqa: E402
from ciphergrid.bench.kernels import engine as get_engine  # noqa: E402
from ciphergrid.registry import lookup  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("device")
ap.add_argument("--name", default="aes-128-ctr")
ap.add_argument("--size", type=int, default=256 << 20)
ap.add_argument("--only", nargs="*", help="implementations or variants (default: every implementation)")
ap.add_argument("--sass", nargs="*", default=[], help="implementations whose SASS to count")
ap.add_argument("--quick", action="store_true",
                help="check correctness on --name only (not every AES name) before timing")
ap.add_argument("--ptx", metavar="DIR", help="write the compiled programs of --only to DIR, and stop")
ap.add_argument("--run", nargs="?", type=int, const=256, metavar="MiB",
                help="one device-resident run of each --only (for a profiler), and stop")
a = ap.parse_args()

spec = lookup(a.name)
e = get_engine(a.device)


def variant(text: str) -> str:
    """Register variant ``text`` as an implementation of the cipher (in this process only)."""
    base, *kv = text.split(",")
    impls = spec.algorithm.implementations
    if not kv:
        return base
    im = {**impls[base], "defines": dict(impls[base].get("defines", {}))}
    for item in kv:
        k, v = item.split("=", 1)
        if k == "regs":
            im["max_registers"] = int(v)
        elif k == "local":
            im["local_size"] = int(v)
        else:
            im["defines"][k] = int(v)
    impls[text] = im
    return text


def correct(impl) -> bool:
    """Only correct code is timed: every AES name, both directions, odd sizes, vs the oracle
    (ciphergrid.testing.oracle: pyca)."""
    import numpy as np
    from ciphergrid.testing import oracle

    rng = np.random.default_rng(7)
    for name in [a.name] if a.quick else ciphergrid.available_ciphers():
        s = lookup(name)
        for n in (48, 3000 * 16 + 5):
            n = n // 16 * 16 if s.mode.name in ("ecb", "cbc") else n
            key = bytes(rng.integers(0, 256, s.key_len, dtype=np.uint8))
            iv = bytes(rng.integers(0, 256, s.iv_len, dtype=np.uint8)) if s.iv_len else None
            data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
            for enc in (True, False):
                ref = oracle.crypt(s, key, iv, data, enc)
                f = ciphergrid.encrypt if enc else ciphergrid.decrypt
                if f(data, name, key, iv, device=a.device, implementation=impl) != ref:
                    print(f"{impl}: WRONG OUTPUT {name} n={n} enc={enc}")
                    return False
    return True


impls = [variant(t) for t in (a.only or list(spec.algorithm.implementations))]
if a.ptx:
    os.makedirs(a.ptx, exist_ok=True)
    for impl in impls:
        for i, binary in enumerate(build_cipher_program(e.backend, spec, impl).native.binaries):
            path = os.path.join(a.ptx, f"{a.device.replace(':', '-')}-{impl.replace('+', 'p')}-{i}.ptx")
            with open(path, "wb") as f:
                f.write(binary)
            print(path, len(binary))
    sys.exit(0)
if a.run:
    for impl in impls:
        t = e.time_kernel(a.name, a.run << 20, repeats=3, impl=impl)
        print(impl, [f"{(a.run << 20) / x / 1e9:.1f} GB/s" for x in t])
    sys.exit(0)

rows = []
for impl in impls:
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
    rows.append((gbs, impl, per, r.get("registers_per_item"), r.get("local_mem_bytes"),
                 r.get("private_mem_bytes"), r.get("occupancy"), clk))
for gbs, impl, per, regs, lmem, priv, occ, clk in sorted(rows, reverse=True):
    print(f"{a.device} {a.name} {impl:<30} {gbs:7.1f} GB/s {per:6.3f} GB/s/SM/GHz regs {regs} smem {lmem} "
          f"spill {priv} occupancy {occ} SM {clk} MHz")

kern = {"ctr": "cg_ctr", "ecb": "cg_ecb_enc", "xts": "cg_xts_enc", "cbc": "cg_cbc_dec"}[spec.mode.name]
for impl in a.sass:
    src = cipher_program_source(spec, variant(impl))
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
