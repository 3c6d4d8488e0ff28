"""The command line fuzzed for as long as asked (the generator and checks of
ciphergrid/testing/cli_fuzz.py, which tests/test_cli_fuzz.py runs with a fixed seed for ~20 s).

    python3 scripts/dev/fuzz_cli.py --seconds 600 [--seed S] [--stop] [--show N]

Every vector that broke the contract (an exit code outside 0, 2, 3, 4, 5; stderr other than
``ciphergrid:`` lines, no or several error lines, a traceback; files left in the output folder
after a failure) is printed with its argv, to be replayed with ``ciphergrid`` itself; exit 1
when there was one.  The runs are in this process, in a temporary folder removed at the end."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="how long to run (default 60)")
    ap.add_argument("--seed", type=int, default=None, help="the seed (default: a random one, printed)")
    ap.add_argument("--stop", action="store_true", help="stop at the first vector that breaks it")
    ap.add_argument("--show", type=int, default=5, help="how many broken vectors to print (default 5)")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**32)
    from ciphergrid.testing.cli_fuzz import fuzz

    folder = tempfile.mkdtemp(prefix="cg-fuzz-cli-")
    t0 = time.monotonic()
    try:
        n, bad = fuzz(seed, folder, seconds=a.seconds, stop_at_first=a.stop)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"seed {seed}: {n} vectors in {time.monotonic() - t0:.1f} s, {len(bad)} broke the contract")
    for res in bad[:a.show]:
        print("-" * 72)
        print(res.report())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
