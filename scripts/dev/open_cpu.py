"""`ciphergrid open` (or ``--seal``: `ciphergrid seal`) against pyca's single-core stream (the
script ``bench seal`` times: ciphergrid.bench.seal.PYCA_STREAM) in CPU time, user + system, on
one core (``taskset -c``), for an empty message, 1 MiB and 256 MiB (issue 49): each command run
``--runs`` times, alternated, after one warm-up, each into a new output file; the medians and
minimums, and pyca's CPU as a fraction of ours (of the medians, and of the minimums); the UTC
time and the load average before and after (other work on the machine shows in the spread).

    .venv/bin/python scripts/dev/open_cpu.py [--dir /dev/shm] [--runs 20] [--big-runs 8]
                                             [--cpu 0] [--root NAME=DIR ...] [--seal]

``--root NAME=DIR``: another checkout's ``ciphergrid`` (e.g. ``git archive REV ciphergrid | tar
-x -C DIR``) timed beside this one, through the same launcher (``console()`` as the installed
command runs it).  Bytecode is cached as a user's install has it (PYTHONDONTWRITEBYTECODE is
dropped from the children's environment).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ciphergrid.bench.seal import PIECE, PYCA_STREAM  # noqa: E402

LAUNCH = ("import sys\nsys.path.insert(0, {root!r})\nfrom ciphergrid.cli import console\n"
          "sys.argv = ['ciphergrid'] + sys.argv[1:]\nconsole()\n")
SIZES = (("empty", 0), ("1 MiB", 1 << 20), ("256 MiB", 256 << 20))


def _cpu(cmd: list[str], env: dict, out: str) -> float:
    if os.path.exists(out):   # (each command writes a new file: freeing the last one's pages,
        os.unlink(out)        # a truncation or a rename over it, is not what is compared)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _when() -> str:
    """The UTC time and the load average (1, 5, 15 minutes)."""
    import time

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average {load}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--big-runs", type=int, default=8)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--root", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--seal", action="store_true", help="time seal (pyca's encryptor) instead")
    a = ap.parse_args()
    from cryptography.cobblestone import Cobblestone128Encryptor

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pin = ["taskset", "-c", str(a.cpu)]
    roots = [("ours", str(ROOT))] + [tuple(r.split("=", 1)) for r in a.root]
    print(f"start {_when()}", flush=True)
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        key = os.urandom(16)
        kf = os.path.join(d, "k")
        Path(kf).write_text(key.hex() + "\n")
        verb, cls = ("seal", "Encryptor") if a.seal else ("open", "Decryptor")
        for label, size in SIZES:
            sealed, plain, out = (os.path.join(d, n) for n in ("in.cg", "in", "out"))
            enc = Cobblestone128Encryptor(key, b"")
            with open(sealed, "wb") as f, open(plain, "wb") as p:
                block = os.urandom(min(size, 1 << 20))
                for _ in range(size // (1 << 20) if size >= 1 << 20 else 1):
                    f.write(enc.update(block))
                    p.write(block)
                f.write(enc.finalize())
            src = plain if a.seal else sealed
            cmds = {name: pin + [sys.executable, "-c", LAUNCH.format(root=root), verb, "--key-file",
                                 kf, "--in", src, "--out", out, "--no-sync", "-q"]
                    for name, root in roots}
            cmds["pyca"] = pin + [sys.executable, "-c", PYCA_STREAM.format(cls=cls, piece=PIECE),
                                  key.hex(), src, out]
            times = {k: [] for k in cmds}
            for k, cmd in cmds.items():
                _cpu(cmd, env, out)
            runs = a.big_runs if size > (16 << 20) else a.runs
            for i in range(runs):
                order = list(cmds) if i % 2 else list(cmds)[::-1]
                for k in order:
                    times[k].append(_cpu(cmds[k], env, out))
            med = {k: statistics.median(v) for k, v in times.items()}
            low = {k: min(v) for k, v in times.items()}
            cells = "  ".join(f"{k} {1e3 * med[k]:.1f} / {1e3 * low[k]:.1f} ms" for k in med)
            ratios = "  ".join(f"pyca/{k} {med['pyca'] / med[k]:.2f} / {low['pyca'] / low[k]:.2f}"
                               for k, _ in roots)
            print(f"{verb} {label} ({runs} runs, median / min): {cells}  |  {ratios}", flush=True)
    print(f"end {_when()}", flush=True)


if __name__ == "__main__":
    main()
