"""Smoke check: every registered cipher name, odd lengths, both directions, against pyca, on one
device (argv[1]); then device-resident AES-128-CTR throughput.  Used by scripts/gpu-suite.sh."""
import os, time, sys
import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes as M
import ciphergrid
dev=sys.argv[1] if len(sys.argv)>1 else "opencl:0:0"
rng=np.random.default_rng(1)
def ref(name,key,iv,data,enc):
    mode=name.split('-')[2]
    m={'ecb':lambda: M.ECB(),'cbc':lambda: M.CBC(iv),'ctr':lambda: M.CTR(iv),'xts':lambda: M.XTS(iv)}[mode]()
    c=Cipher(algorithms.AES(key),m); x=c.encryptor() if enc else c.decryptor(); return x.update(data)+x.finalize()
bad=0
for name in ciphergrid.available_ciphers():
    spec=ciphergrid.registry.lookup(name)
    for n in (16, 17, 48, 100000, 3000*16+5):
        if spec.mode in ('ecb','cbc'): n=n//16*16
        key=bytes(rng.integers(0,256,spec.key_len,dtype=np.uint8)); iv=bytes(rng.integers(0,256,spec.iv_len,dtype=np.uint8)) if spec.iv_len else None
        data=bytes(rng.integers(0,256,n,dtype=np.uint8))
        for enc in (True,False):
            f=ciphergrid.encrypt if enc else ciphergrid.decrypt
            got=f(data,name,key,iv,device=dev)
            exp=ref(name,key,iv,data,enc)
            if got!=exp: print("MISMATCH",name,n,enc); bad+=1
print("done", bad)

from ciphergrid.engine import get_engine
e = get_engine(dev)
if e.device.runtime != "native":
    for name in ("copy", "aes-128-ctr", "aes-128-ecb", "aes-256-xts"):
        for size in (256 << 20,):
            t = sorted(e.time_kernel(name, size, repeats=10))
            med = t[len(t) // 2]
            clk = e.sm_clock_mhz()
            print(f"{dev} {name} {size>>20} MiB: {size/med/1e9:.1f} GB/s (min {t[0]*1e3:.2f} ms) SM clock {clk} MHz"
                  + (f" -> {size/med/1e9/e.device.compute_units/(clk/1000):.3f} GB/s/SM/GHz" if clk else ""))
    print(e.kernel_resources("aes-128-ctr"))
sys.exit(1 if bad else 0)
