"""The service's protocol fuzzer for as long as you like (tests/test_service_fuzz.py runs it for a
few seconds with a fixed seed): a ``ciphergrid serve`` of its own on a temporary socket, mutated
requests of every op, frames that are not requests; every reply checked, the service's threads
and descriptors watched (ciphergrid/testing/service_fuzz.py).  Exit 0: nothing found; 1: the
problems are printed, each with the seed that finds it.

    python3 scripts/dev/fuzz_service.py --seconds 600 [--seed S] [--native-only]
"""
from __future__ import annotations

import argparse
import json
import random
import sys

from ciphergrid.testing import service_fuzz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60, help="how long to fuzz (default 60)")
    ap.add_argument("--seed", type=int, default=None, help="the cases' seed (default: a random one)")
    ap.add_argument("--max-cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--native-only", action="store_true",
                    help="the service without OpenCL or CUDA devices (OpenSSL alone)")
    ap.add_argument("--policy", default=None, help="the service's policy (TOML text; default: "
                    "max_jobs 4, max_memory 256Mi)")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    kw = {"policy": a.policy} if a.policy else {}
    if a.native_only:
        import os

        kw["env"] = {**os.environ, "CIPHERGRID_NO_OPENCL": "1", "CIPHERGRID_NO_CUDA": "1"}
    with service_fuzz.ServerProcess(**kw) as srv:
        fuzz = service_fuzz.Fuzzer(srv, seed)
        summary = fuzz.run(a.seconds, a.max_cases)
    print(json.dumps(summary))
    for p in fuzz.problems:
        print(f"seed {seed}: {p}", file=sys.stderr)
    return 1 if fuzz.problems else 0


if __name__ == "__main__":
    sys.exit(main())
