"""Smoke check: every registered cipher name, odd lengths, both directions, against the oracle
(ciphergrid.testing.oracle: pyca), on one device (argv[1]); then device-resident AES-128-CTR
throughput.  Used by scripts/gpu-suite.sh.  Random keys of every name (2-key TDEA among them):
run as the self-test runs, inside request.weak_use_allowed()."""
import os, time, sys
import numpy as np
import ciphergrid
from ciphergrid.request import weak_use_allowed
from ciphergrid.testing import oracle
_weak = weak_use_allowed()   # (held: the block lasts for the whole script)
_weak.__enter__()
dev=sys.argv[1] if len(sys.argv)>1 else "cpu"
rng=np.random.default_rng(1)
bad=0
t_start=time.perf_counter()
# every block-cipher name (AEADs: tests/test_aead.py), its default implementation and its
# constant-time one where it has one (the ablation ladder's steps: tests/test_implementations.py;
# on a GPU each (name, implementation) is a compile, and AES alone has a dozen implementations)
for name in ciphergrid.registry.names():
  spec=ciphergrid.registry.lookup(name)
  for impl in [None] + [i for i in ("ct",) if i in spec.algorithm.implementations]:
    t0=time.perf_counter(); bad0=bad
    for n in (17, 3000*16+5):
        if spec.mode.name in ('ecb','cbc'): n=n//16*16
        key=bytes(rng.integers(0,256,spec.key_len,dtype=np.uint8)); iv=bytes(rng.integers(0,256,spec.iv_len,dtype=np.uint8)) if spec.iv_len else None
        data=bytes(rng.integers(0,256,n,dtype=np.uint8))
        for enc in (True,False):
            f=ciphergrid.encrypt if enc else ciphergrid.decrypt
            got=f(data,name,key,iv,device=dev,implementation=impl)
            exp=oracle.crypt(name,key,iv,data,enc)
            if got!=exp: print("MISMATCH",impl,name,n,enc); bad+=1
    print(f"{name} [{impl}]: {'ok' if bad==bad0 else 'MISMATCH'} ({time.perf_counter()-t0:.1f} s)", flush=True)
print(f"done {bad} ({time.perf_counter()-t_start:.0f} s)")

from ciphergrid.bench.kernels import engine as get_engine
e = get_engine(dev)
if e.device.runtime != "native":
    impls = [None] + [i for i in ciphergrid.registry.lookup("aes-128-ctr").algorithm.implementations
                      if i != "fast"]
    rows = [("copy", None)] + [("aes-128-ctr", i) for i in impls] + [
        (n, i) for n in ("aes-128-ecb", "aes-256-ctr", "aes-256-xts") for i in (None, "ct")]
    for name, impl in rows:
        size = (16 if name.endswith("xts") else 256) << 20   # (an XTS data unit: 2^20 blocks)
        try:
            kw = {} if name == "copy" else {"impl": impl}
            t = sorted(e.time_kernel(name, size, repeats=10, **kw))
        except Exception as ex:  # an implementation that does not exist yet
            print(f"{dev} {name} [{impl}]: skipped ({type(ex).__name__}: {str(ex)[:200]})")
            continue
        med = t[len(t) // 2]
        clk = e.sm_clock_mhz()
        res = {} if name == "copy" else e.kernel_resources(name, impl=impl)
        print(f"{dev} {name} [{impl or 'fast'}] {size>>20} MiB: {size/med/1e9:.1f} GB/s (min {t[0]*1e3:.3f} ms)"
              f" SM {clk} MHz regs {res.get('registers_per_item')} lmem {res.get('local_mem_bytes')}"
              f" priv {res.get('private_mem_bytes')} occ {res.get('occupancy')}"
              + (f" -> {size/med/1e9/e.device.compute_units/(clk/1000):.3f} GB/s/SM/GHz" if clk else ""))
sys.exit(1 if bad else 0)
