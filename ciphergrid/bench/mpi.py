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
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ..settings import bytes_option, mpiexec_path
from ..errors import InvalidArgument
from . import suites
from .preflight import room, size_text
from .records import Record


def add_arguments(p) -> None:
    p.add_argument("--mpi-size", type=bytes_option("--mpi-size"), default=1 << 30,
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
    allowed, bound = room(folder)   # (the input, one process's output, each rank count's)
    fit = int(allowed * 0.8) // (len(ranks) + 2) // (1 << 20) << 20
    if fit < size:
        if fit < 1 << 20:
            shutil.rmtree(folder, ignore_errors=True)
            raise InvalidArgument(f"bench mpi: {len(ranks) + 2} files of {size_text(size)} do not fit "
                                  f"{bound}: give --mpi-dir or a smaller --mpi-size")
        ctx.log(f"bench mpi: the file is cut to {size_text(fit)} (from {size_text(size)}): "
                f"{len(ranks) + 2} files of it must fit {bound}")
        size = fit
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
    costs = [float(m.group(1)) * 1e-6 for r in rows if r.note
             for m in [re.search(r"manager's work (\d+(?:\.\d+)?) us per range", r.note)] if m]
    if costs:
        print(f"\nweak scaling modelled with this run's manager cost ({max(costs) * 1e6:.0f} us per "
              f"range) and GPU nodes of {MODEL['node_bps'] / 1e9:g} GB/s, ranges dealt one at a "
              "time (the scheduler's dealer answers fewer: the manager's load is an upper bound; "
              "docs/mpi.md):")
        print(model_table(manager_s=max(costs)))
    return {"devices": [], "options": {"ciphers": names, "size": size, "ranks": ranks,
                                       "device": device, "repeats": repeats}}


# ------------------------------------------------------------------------- weak scaling, modelled
#: the model's defaults (docs/mpi.md, "Weak scaling"): measured where a figure exists
MODEL = {
    "range_bytes": 64 << 20,      # --mpi-range's default
    "node_bps": 37e9,             # one GPU node host -> host (docs/study.md, host -> host)
    "manager_s": 27e-6,           # the manager's work per range (the slowest `bench mpi` figure)
    "poll_s": 1e-3,               # its polling's worst delay (mpi.POLL_MAX_S)
    "latency_s": 5e-6,            # one MPI message (assumed: an InfiniBand-class interconnect)
    "per_node_bytes": 64 << 30,   # each node's share of the job (weak scaling: fixed per node)
    "in_flight": 2,               # ranges a worker holds (the model's dealing: one range at a
                                  # time, the next one queued; the scheduler's dealer hands a
                                  # rank its share whole instead, docs/mpi.md)
}


def weak_scaling(nodes: int, fs_bps: float | None, **kw) -> dict:
    """The modelled efficiency of ``nodes`` worker nodes, each with ``per_node_bytes`` of the job,
    against ``nodes`` times one node alone (1.0: no loss).  Factors:

    * the manager: each range costs it ``manager_s``; ``nodes`` workers finishing a range every
      ``t = range_bytes / node_bps`` keep it busy ``U = nodes * manager_s / t``, and a message
      waits ``manager_s * U / (2 (1 - U))`` on average (M/D/1);
    * a range's answer: its message there and the next range back (``2 latency_s``), the
      polling's delay, the manager's work and wait; a worker holding ``in_flight`` >= 2 ranges
      idles only for what exceeds the range's own time;
    * the file system: ``nodes`` read and write at their rate; ``fs_bps`` (None: each node's
      own storage, or a file system that grows with them: no shared limit) caps the sum of
      reads and writes;
    * the tail: the last ranges end unevenly (half a range on average).
    A rank's start (Python, imports, MPI: docs/mpi.md, "Weak scaling") is paid by one node
    alone too: it is not a loss of the scaling (mpiexec's launch over many nodes is assumed
    to take as long).
    """
    m = {**MODEL, **kw}
    t = m["range_bytes"] / m["node_bps"]
    u = nodes * m["manager_s"] / t
    if u >= 1:
        return {"nodes": nodes, "efficiency": 0.0, "manager_busy": u, "limit": "manager"}
    wait = m["manager_s"] * u / (2 * (1 - u))
    answer = 2 * m["latency_s"] + m["poll_s"] + m["manager_s"] + wait
    idle = max(0.0, answer - t) if m["in_flight"] >= 2 else answer
    e_range = t / (t + idle)
    demand = 2 * nodes * m["node_bps"] * e_range
    e_fs = 1.0 if fs_bps is None else min(1.0, fs_bps / demand)
    job = m["per_node_bytes"] / m["node_bps"]
    e_tail = job / (job + t / 2)
    e = e_range * e_fs * e_tail
    limit = min((("ranges", e_range), ("file system", e_fs), ("tail", e_tail)),
                key=lambda x: x[1])[0]
    return {"nodes": nodes, "efficiency": e, "aggregate_bps": nodes * m["node_bps"] * e,
            "manager_busy": u, "range_s": t, "answer_s": answer, "e_range": e_range,
            "e_fs": e_fs, "e_tail": e_tail, "limit": limit}


def model_table(nodes=(2, 4, 8, 16, 32, 64), fs=(None, 1e12, 200e9), **kw) -> str:
    """Markdown: the modelled efficiency (and aggregate GB/s) per node count and file system."""
    def name(f):
        return "no shared limit" if f is None else f"shared FS {f / 1e9:g} GB/s"

    head = "| nodes | " + " | ".join(name(f) for f in fs) + " | manager busy |"
    lines = [head, "|" + "---|" * (len(fs) + 2)]
    for n in nodes:
        cells = []
        for f in fs:
            r = weak_scaling(n, f, **kw)
            cells.append(f"{r['efficiency']:.3f} ({r.get('aggregate_bps', 0) / 1e9:,.0f} GB/s, "
                         f"{r['limit']})")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {r['manager_busy']:.2%} |")
    return "\n".join(lines)


def _same(a: str, b: str) -> bool:
    with open(a, "rb") as f, open(b, "rb") as g:
        while True:
            x, y = f.read(1 << 24), g.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


def estimate(args, rate: float, api=None) -> tuple[str, float]:
    """Per cipher: one process and each rank count, ``repeats`` + 1 runs each of START_S plus
    the file at ``rate``."""
    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.mpi_size, 16 << 20) if args.quick else args.mpi_size
    ranks = [int(r) for r in args.mpi_ranks.split(",") if r.strip()]
    repeats = args.repeats or 3
    runs = len(names) * (len(ranks) + 1) * (repeats + 1)
    return (f"{len(names)} cipher(s) x a {size_text(size)} file in one process and over "
            f"{args.mpi_ranks} ranks x {repeats} repeats", runs * (START_S + size / rate) + size / rate)


#: the estimate's start-up of one run (mpiexec and its Python processes)
START_S = 1.5

suites.register("mpi", run, add_arguments=add_arguments, estimate=estimate,
                help="one file over 1..N MPI ranks against one process")
