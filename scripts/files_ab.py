"""Two checkouts of ciphergrid against cat on files, redirections and pipes, interleaved.

    python3 scripts/files_ab.py BEFORE_DIR AFTER_DIR FOLDER SIZE_MIB [REPEATS]

BEFORE_DIR / AFTER_DIR: checkout roots (``git archive COMMIT | tar -x -C DIR`` for an old one;
compile both first, ``python3 -m compileall -q DIR/ciphergrid``, where PYTHONDONTWRITEBYTECODE is
set).  FOLDER holds the input and the output (e.g. /dev/shm, /tmp).  Each repeat runs every case
once (cat, before, after for the file, the redirection and the pipe), so that a slow spell of a
shared machine falls on all of them; printed: median and minimum wall seconds, median CPU seconds
of the whole command (all its processes), and the median's ratio to the matching cat.  AES-128-CTR,
``--no-sync -q``, warm page cache; the outputs are not checked here (``ciphergrid bench files``
checks them against ``openssl enc``).
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    before, after, folder, mib = sys.argv[1:5]
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 7
    work = tempfile.mkdtemp(prefix="cg-files-ab-", dir=folder)
    src, out, key = (os.path.join(work, n) for n in ("in", "out", "key"))
    with open(key, "w") as f:
        f.write("000102030405060708090a0b0c0d0e0f")
    with open(src, "wb") as f:
        for _ in range(int(mib)):
            f.write(os.urandom(1 << 20))
    cg = (f"{shlex.quote(sys.executable)} -m ciphergrid encrypt -q --no-sync --cipher aes-128-ctr "
          f"--key-file {shlex.quote(key)} --iv 000102030405060708090a0b0c0d0e0f")
    s, o = shlex.quote(src), shlex.quote(out)
    shapes = {"file": (f"cat {s} > {o}", f"{cg} --in {s} --out {o}"),
              "redirect": (f"cat < {s} > {o}", f"{cg} < {s} > {o}"),
              "pipe": (f"cat {s} | cat | cat > {o}", f"cat {s} | {cg} | cat > {o}")}
    cases = []
    for shape, (cat, ours) in shapes.items():
        cases += [(f"{shape} cat", cat, after), (f"{shape} before", ours, before),
                  (f"{shape} after", ours, after)]
    wall = {name: [] for name, _, _ in cases}
    cpu = {name: [] for name, _, _ in cases}
    try:
        subprocess.run(f"cat {s} > /dev/null", shell=True, check=True)
        for _ in range(repeats):
            for name, cmd, root in cases:
                if os.path.exists(out):
                    os.unlink(out)
                t = time.perf_counter()
                p = subprocess.Popen(["bash", "-c", cmd], cwd=root, stdin=subprocess.DEVNULL)
                _, status, usage = os.wait4(p.pid, 0)
                wall[name].append(time.perf_counter() - t)
                cpu[name].append(usage.ru_utime + usage.ru_stime)
                if status:
                    sys.exit(f"{name}: {cmd!r} failed ({status})")
    finally:
        for path in (src, out, key):
            if os.path.exists(path):
                os.unlink(path)
        os.rmdir(work)
    print(f"{folder}, {mib} MiB, {repeats} repeats interleaved; before {before}, after {after}")
    for name, _, _ in cases:
        med = statistics.median(wall[name])
        base = statistics.median(wall[name.split()[0] + " cat"])
        print(f"{name:16s} median {med:.3f} s  min {min(wall[name]):.3f}  "
              f"CPU {statistics.median(cpu[name]):.3f} s  x cat {base / med:.2f}")


if __name__ == "__main__":
    main()
