#!/usr/bin/env python3
"""Development probe for kernel work on a GPU machine (docs/benchmarks.md says what it showed).

    python3 scripts/kernel_probe.py ptx DEVICE OUTDIR IMPL...
        write the runtime's compiled program (NVIDIA OpenCL: PTX) of aes-128-ctr per
        implementation, to compare offline with scripts/sass.py
    python3 scripts/kernel_probe.py run DEVICE IMPL [MiB]
        one device-resident aes-128-ctr run of IMPL, for a profiler (ncu -k regex:cg_ctr ...)
    python3 scripts/kernel_probe.py time DEVICE VARIANT...
        check against pyca, then time (256 MiB, 15 runs, median) aes-128-ctr implementations or
        variants of them written BASE[,regs=N][,local=N][,NAME=VALUE...] (NAME=VALUE: a define),
        e.g. ct-ptx,regs=200,local=64 - try a setting before it becomes an implementation
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import ciphergrid  # noqa: E402  (ICD set-up)
from ciphergrid.engine import build_cipher_program, get_engine  # noqa: E402
from ciphergrid.registry import lookup  # noqa: E402

SPEC = lookup("aes-128-ctr")


def variant(text: str) -> str:
    """Register variant ``text`` as an implementation of AES (in this process only)."""
    base, *kv = text.split(",")
    impls = SPEC.cipher.implementations
    if not kv:
        return base
    im = {**impls[base], "defines": dict(impls[base].get("defines", {}))}
    for item in kv:
        k, v = item.split("=", 1)
        if k == "regs":
            im["max_registers"] = int(v)
        elif k == "local":
            im["local_size"] = int(v)
            if "CG_LOCAL_SIZE" in im["defines"]:
                im["defines"]["CG_LOCAL_SIZE"] = int(v)
        else:
            im["defines"][k] = int(v)
    impls[text] = im
    return text


def correct(dev: str, impl: str) -> bool:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    rng = np.random.default_rng(3)
    for n in (16 * 4096 * 33 + 7, 5 << 20):
        key, iv = bytes(rng.integers(0, 256, 16, np.uint8)), bytes(rng.integers(0, 256, 16, np.uint8))
        data = bytes(rng.integers(0, 256, n, np.uint8))
        ref = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(data)
        if ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=dev, implementation=impl) != ref:
            return False
    return True


what, dev = sys.argv[1], sys.argv[2]
e = get_engine(dev)
if what == "ptx":
    os.makedirs(sys.argv[3], exist_ok=True)
    for impl in sys.argv[4:]:
        prg = build_cipher_program(e.backend, SPEC, variant(impl)).native
        for i, binary in enumerate(prg.binaries):
            path = os.path.join(sys.argv[3], f"{dev.replace(':', '-')}-{impl.replace('+', 'p')}-{i}.ptx")
            with open(path, "wb") as f:
                f.write(binary)
            print(path, len(binary))
elif what == "run":
    impl = variant(sys.argv[3])
    mib = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    t = e.time_kernel("aes-128-ctr", mib << 20, repeats=3, impl=impl)
    print(impl, [f"{(mib << 20) / x / 1e9:.1f} GB/s" for x in t])
else:
    n = 256 << 20
    for text in sys.argv[3:]:
        impl = variant(text)
        try:
            ok = correct(dev, impl)
            t = sorted(e.time_kernel("aes-128-ctr", n, repeats=15, impl=impl))
        except Exception as ex:  # a variant that does not build or launch
            print(f"{dev} {text:<34} failed: {type(ex).__name__}: {str(ex)[:200]}")
            continue
        clk = e.sm_clock_mhz() or 0
        r = e.kernel_resources("aes-128-ctr", impl=impl)
        gbs = n / t[len(t) // 2] / 1e9
        per = gbs / e.device.compute_units / (clk / 1000) if clk else float("nan")
        print(f"{dev} {text:<34} {'ok' if ok else 'WRONG'} {gbs:7.1f} GB/s {per:6.3f} /SM/GHz "
              f"regs {r.get('registers_per_item')} spill {r.get('private_mem_bytes')} "
              f"occupancy {r.get('occupancy')} SM {clk} MHz")
