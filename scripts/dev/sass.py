#!/usr/bin/env python3
"""Compile a cipher kernel for a GPU architecture *without a GPU* and report its resources and SASS.

    python3 scripts/dev/sass.py aes-128-ctr [--impl fast ct ...] [--arch sm_90] [--dump NAME]

Needs NVRTC, ptxas and cuobjdump, none of which need a GPU: the CUDA toolkit, or the PyPI wheels
(`pip install --target DIR nvidia-cuda-nvrtc nvidia-cuda-nvcc nvidia-cuda-cuobjdump
nvidia-cuda-nvdisasm`), found through $CUDA_TOOLS (a folder searched for libnvrtc.so*, ptxas and
cuobjdump; nvdisasm beside cuobjdump) or the PATH.
The source is the one the CUDA backend builds (portable.h + cipher file + modes.cl, same defines),
compiled by NVRTC to PTX and by ptxas to a cubin, as the driver would; per kernel it prints
registers, spills, shared memory and the SASS opcode counts of the mode kernel.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from ciphergrid import registry  # noqa: E402
from ciphergrid.program import program_source_for as cipher_program_source  # noqa: E402

KERNELS = {"ctr": "cg_ctr", "ecb": "cg_ecb_enc", "xts": "cg_xts_enc", "cbc": "cg_cbc_dec"}


def find(pattern: str) -> str | None:
    root = os.environ.get("CUDA_TOOLS")
    if root:
        hits = sorted(glob.glob(os.path.join(root, "**", pattern), recursive=True))
        hits = [h for h in hits if os.path.isfile(h)]
        if hits:
            return hits[-1]
    return shutil.which(pattern.rstrip("*"))


def nvrtc_ptx(src: str, arch: str, options: list[str]) -> str:
    lib = find("libnvrtc.so*")
    if not lib:
        sys.exit("libnvrtc not found: set CUDA_TOOLS (see the module doc)")
    for b in sorted(glob.glob(os.path.join(os.path.dirname(lib), "libnvrtc-builtins.so*"))):
        ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)  # NVRTC dlopens it by name: load it first
    nv = ctypes.CDLL(lib)
    prog = ctypes.c_void_p()
    if nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None):
        sys.exit("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture=compute_{arch.split('_')[1]}", "--std=c++14", *options]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetProgramLog(prog, log)
    if rc:
        sys.exit(f"NVRTC failed:\n{log.value.decode()[-4000:]}")
    nv.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    nv.nvrtcGetPTX(prog, ptx)
    return ptx.value.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="cipher name, e.g. aes-128-ctr")
    ap.add_argument("--impl", nargs="*", help="implementations (default: all of the cipher's)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--decrypt", action="store_true", help="the decryption kernel (ecb, xts)")
    ap.add_argument("--nvrtc-option", action="append", default=[], help="extra NVRTC option")
    ap.add_argument("--ptxas-option", action="append", default=[], help="extra ptxas option")
    ap.add_argument("--define", "-D", action="append", default=[], metavar="NAME=VALUE",
                    help="extra preprocessor definition (e.g. CG_MIN_BLOCKS=3)")
    ap.add_argument("--dump", metavar="IMPL", help="print the SASS of this implementation's kernel")
    a = ap.parse_args()
    spec = registry.lookup(a.name)
    cipher = spec.algorithm
    kern = KERNELS[spec.mode.name]
    if a.decrypt and spec.mode.name in ("ecb", "xts"):
        kern = kern.replace("_enc", "_dec")
    ptxas, cuobjdump = find("ptxas"), find("cuobjdump")
    if not ptxas or not cuobjdump:
        sys.exit("ptxas/cuobjdump not found: set CUDA_TOOLS (see the module doc)")
    for impl in a.impl or list(cipher.implementations):
        src = cipher_program_source(spec, impl, dict(x.split("=", 1) for x in a.define))
        ptx = nvrtc_ptx(src, a.arch, a.nvrtc_option)
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "k.ptx")
            cub = os.path.join(tmp, "k.cubin")
            open(p, "w").write(ptx)
            r = subprocess.run([ptxas, f"-arch={a.arch}", "-v", *a.ptxas_option, "-o", cub, p], capture_output=True, text=True)
            if r.returncode:
                print(f"{impl}: ptxas failed\n{r.stderr[-3000:]}")
                continue
            info = r.stderr
            m = re.search(rf"Compiling entry function '{kern}'.*?Used (\d+) registers[^\n]*", info, re.S)
            sp = re.search(rf"Compiling entry function '{kern}'.*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", info, re.S)
            env = {**os.environ, "PATH": os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", "")}
            sass = subprocess.run([cuobjdump, "-sass", "-fun", kern, cub], capture_output=True, text=True,
                                  env=env).stdout
        ops = collections.Counter(re.findall(r"/\*[0-9a-f]{4,5}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_.]+)?)", sass))
        base = collections.Counter()
        for k, v in ops.items():
            base[k.split(".")[0]] += v
        regs = m.group(1) if m else "?"
        spill = f"spill st/ld {sp.group(2)}/{sp.group(3)} B" if sp else ""
        print(f"{impl:<22} {kern}: regs {regs:>3} {spill}; {sum(base.values())} SASS: "
              + ", ".join(f"{k} {v}" for k, v in base.most_common(12)))
        if a.dump == impl:
            print(sass)


if __name__ == "__main__":
    main()
