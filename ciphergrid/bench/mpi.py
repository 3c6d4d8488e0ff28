"""``ciphergrid bench mpi``: one file over 1..N MPI ranks against one process (docs/mpi.md).

A file of ``--mpi-size`` bytes (default 1 GiB; ``--quick`` 16 MiB) in ``--mpi-dir`` (default
/dev/shm where present, else the temporary folder), for each cipher (``--cipher``, default
aes-128-ctr): ``ciphergrid encrypt --in F --out G`` in one process (``implementation``
"one-process"), then ``mpiexec -n R ciphergrid encrypt ... --mpi`` for each R of ``--mpi-ranks``
(default 2,3; ``implementation`` "mpi-R-ranks": R - 1 workers), wall time of the whole command,
median of ``--repeats``; ``--device`` is each process's (default native).  Every output is
compared with the one-process output first.  A row's note: each worker's share and the
manager's own work per range (its part of the job's time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from ..settings import mpiexec_path, parse_bytes
from . import suites
from .records import Record


def add_arguments(p) -> None:
    p.add_argument("--mpi-size", type=lambda s: parse_bytes(s, "--mpi-size"), default=1 << 30,
                   metavar="BYTES", help="the file's bytes (default 1Gi; --quick 16Mi)")
    p.add_argument("--mpi-ranks", default="2,3", metavar="R,R...", help="rank counts (default 2,3)")
    p.add_argument("--mpi-dir", metavar="DIR", help="where the files go (default /dev/shm)")
    p.add_argument("--mpi-range-bytes", metavar="BYTES", help="--mpi-range of the runs (default 64Mi)")


def run(args, ctx: suites.Context) -> dict:
    import numpy as np

    from .. import registry

    mpiexec = mpiexec_path()
    if mpiexec is None:
        ctx.log("bench mpi: no mpiexec (pip install 'ciphergrid[mpi]'): nothing measured")
        return {"devices": [], "options": {}}
    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.mpi_size, 16 << 20) if args.quick else args.mpi_size
    ranks = [int(r) for r in args.mpi_ranks.split(",") if r.strip()]
    repeats = args.repeats or 3
    device = (args.device or ["native"])[0]
    base = args.mpi_dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    folder = tempfile.mkdtemp(prefix="cg-bench-mpi-", dir=base)
    rows = []
    try:
        src, keyf = os.path.join(folder, "in"), os.path.join(folder, "k")
        np.random.default_rng().integers(0, 256, size, dtype=np.uint8).tofile(src)
        with ctx.progress(len(names) * (len(ranks) + 1)) as bar:
            for name in names:
                spec = registry.lookup(name)
                with open(keyf, "w") as f:
                    f.write(os.urandom(spec.key_len).hex())
                base_args = ["encrypt", "-c", name, "--key-file", keyf, "--in", src, "-q",
                             "--device", device]
                if spec.iv_len:
                    base_args += ["--iv", os.urandom(spec.iv_len).hex()]
                want = os.path.join(folder, "want")
                cases = [(None, want)] + [(r, os.path.join(folder, f"out{r}")) for r in ranks]
                for r, out in cases:
                    cmd = [sys.executable, "-m", "ciphergrid", *base_args, "--out", out, "--service", "off"]
                    if r is not None:
                        cmd = [mpiexec, "-n", str(r), *cmd, "--mpi", "-v"]
                        if args.mpi_range_bytes:
                            cmd += ["--mpi-range", args.mpi_range_bytes]
                    rec = Record(cipher=name, algorithm=spec.algorithm.name, key_bits=8 * spec.key_size,
                                 mode=spec.mode.name, direction="encrypt",
                                 device=f"mpi:{r}" if r else device,
                                 device_name=f"{r} ranks on {device}" if r else device,
                                 device_kind="cpu" if device in ("native", "cpu") else "gpu",
                                 runtime="mpi" if r else "native", kind="e2e", size=size,
                                 implementation=f"mpi-{r}-ranks" if r else "one-process",
                                 timer="wall-clock")
                    try:
                        times, note = [], ""
                        for i in range(repeats + 1):
                            t0 = time.perf_counter()
                            p = subprocess.run(cmd, capture_output=True, timeout=1800)
                            dt = time.perf_counter() - t0
                            if p.returncode:
                                raise RuntimeError(p.stderr.decode(errors="replace").strip()[-300:])
                            if i == 0 and r is not None:
                                if _same(out, want) is False:
                                    raise AssertionError("the MPI output differs from one process's")
                                note = p.stderr.decode(errors="replace").strip().splitlines()[-1]
                            if i:
                                times.append(dt)
                        rec.verification = {"status": "passed", "oracle": "one process (ciphergrid)"} \
                            if r else {"status": "not-applicable"}
                        rec.set_times(times)
                        rec.note = note.partition(": ")[2] if note else None
                    except Exception as e:
                        rec.fail(f"{type(e).__name__}: {e}")
                    rows.append(rec)
                    ctx.add(rec)
                    bar.advance(1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{'cipher':<14} {'how':<14} {'GB/s':>7}  note")
    for r in rows:
        print(f"{r.cipher:<14} {r.implementation:<14} "
              + (f"{r.gbps:7.2f}  {r.note or ''}" if r.status == "ok" else f"FAILED {r.error}"))
    return {"devices": [], "options": {"ciphers": names, "size": size, "ranks": ranks,
                                       "device": device, "repeats": repeats}}


def _same(a: str, b: str) -> bool:
    with open(a, "rb") as f, open(b, "rb") as g:
        while True:
            x, y = f.read(1 << 24), g.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


suites.register("mpi", run, add_arguments=add_arguments,
                help="one file over 1..N MPI ranks against one process")
