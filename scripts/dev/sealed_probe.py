"""A sealed message (C2SP chunked encryption, formats/cobblestone.py) host -> host through one
device, beside the copy strawman and an AES-GCM batch of the same chunks (issue 49).

    .venv/bin/python scripts/dev/sealed_probe.py [--device SPEC] [--size BYTES] [--repeats N]
                                                  [--json FILE]

Prints, for seal and open of one message of ``--size`` bytes (default 1 GiB on a GPU, 16 MiB on
a CPU device): the wall time (median of the repeats, each paired with a copy strawman run), the
ratio to the copy strawman, the calling thread's CPU time (the host's work: not a CPU device's
own threads), and the phases of the device work: AEAD jobs
(Job constructions, i.e. device jobs per call), their host work (Job.__init__: tables, uploads
enqueued), their launches (enqueue), their downloads enqueued (collect) and the host's waits
(finish), measured by wrapping those methods.  The same for ``aead.encrypt_batch`` /
``decrypt_batch`` of the same 16 KiB chunks (contiguous texts, tags apart): the rate a sealed
message should reach.  Every output is checked once before it is timed (the sealed message is
opened by OpenSSL, ``device="native"``).  About 30 s on a GPU at 1 GiB.  With ``--files DIR``:
`cat` beside `ciphergrid seal` / `open` of one file in DIR on the device and on ``auto``.

With ``--resident`` (a CUDA device; nothing else is run): a GPU-resident sealed message of
``--size`` bytes (default 1 GiB; a CuPy array, ``ciphergrid.cobblestone.encrypt`` / ``decrypt``
with ``out=``) against the AES-128-GCM 16 KiB-batch kernel on as many bytes (bench/aead.py
``make_batch`` + ``time_job``, as ``bench api``'s AEAD row): device seconds between CUDA events
around each call on the current stream (median of the repeats, a fresh key or salt each), the
calls' wall and thread CPU time, the phases above (and the resident jobs' ``settle``), and the
ratios kernel / call.  The sealed message is checked against OpenSSL's (``device="native"``,
same salt) and opened back first.  Under 30 s on a GPU at 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import ciphergrid  # noqa: E402
from ciphergrid import aead  # noqa: E402
from ciphergrid.engines.device_aead import job as jobmod  # noqa: E402
from ciphergrid.formats import cobblestone as cb  # noqa: E402

PHASES = defaultdict(float)
COUNTS = defaultdict(int)
DEPTH = [0]   # (a phase inside another, finish's collect: counted in the outer one only)


def _wrap(cls, name: str, phase: str) -> None:
    f = getattr(cls, name)

    def timed(self, *a, **k):
        DEPTH[0] += 1
        t = time.perf_counter()
        try:
            return f(self, *a, **k)
        finally:
            DEPTH[0] -= 1
            if DEPTH[0] == 0:
                PHASES[phase] += time.perf_counter() - t
                COUNTS[phase] += 1

    setattr(cls, name, timed)


def instrument() -> None:
    _wrap(jobmod.Job, "__init__", "job host work")
    _wrap(jobmod.Job, "enqueue", "launches")
    _wrap(jobmod.Job, "collect", "downloads enqueued")
    _wrap(jobmod.Job, "finish", "waits (finish)")
    _wrap(jobmod.Job, "settle", "settle (resident)")
    from ciphergrid.engines.device_aead import gcm

    _wrap(gcm.GCMJob, "launch", "launches")   # (a resident sealing launches apart: rows.py)


def measure(fn, copy, repeats: int) -> dict:
    """fn and copy paired ``repeats`` times: medians and the phases of fn's last run."""
    rows = []
    for _ in range(repeats):
        t = time.perf_counter()
        copy()
        c = time.perf_counter() - t
        PHASES.clear()
        COUNTS.clear()
        c0 = time.thread_time()
        t = time.perf_counter()
        fn()
        a = time.perf_counter() - t
        rows.append((c, a, time.thread_time() - c0, dict(PHASES), dict(COUNTS)))
    mid = sorted(rows, key=lambda r: r[1])[len(rows) // 2]
    return {"s": statistics.median(r[1] for r in rows),
            "copy_s": statistics.median(r[0] for r in rows),
            "vs_copy": statistics.median(r[0] / r[1] for r in rows),
            "cpu_s": statistics.median(r[2] for r in rows),
            "phases_s": {k: round(v, 6) for k, v in mid[3].items()},
            "jobs": mid[4].get("job host work", 0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="a device spec (default: the first GPU, "
                    "else the first OpenCL device)")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--files", metavar="DIR", default=None,
                    help="also `cat` beside `ciphergrid seal` / `open` of a file of --file-size "
                    "bytes in DIR (a RAM disk: /dev/shm) on the device and with --device auto")
    ap.add_argument("--file-size", type=int, default=1 << 30)
    ap.add_argument("--resident", action="store_true",
                    help="only a GPU-resident sealed message against the 16 KiB-batch kernel")
    args = ap.parse_args()
    devs = ciphergrid.devices()
    if args.device is None:
        dev = next((d for d in devs if d.kind == "gpu"), None) or next(
            d for d in devs if d.spec != "native")
    else:
        dev = next(d for d in devs if d.spec == args.device)
    spec = dev.spec
    n = args.size or ((1 << 30) if dev.kind == "gpu" else (16 << 20))
    if args.resident:
        res = resident(dev, n if args.size else 1 << 30, args.repeats)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
        return 0
    from ciphergrid.bench.methodology import Api
    from ciphergrid.bench.pipeline import copy_strawman

    x = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    key = os.urandom(16)
    sch = cb.scheme(False)
    sealed = np.empty(cb.sealed_length(n) - cb.HEADER, dtype=np.uint8)
    back = np.empty(n, dtype=np.uint8)
    copy = copy_strawman(Api(), dev, x, np.empty_like(x))
    instrument()

    s = cb.Sealer(sch, key, b"probe", device=spec)
    head = s.header()
    s.seal(x, True, out=sealed)
    if cb.decrypt(head + sealed.tobytes(), key, b"probe", device="native") != x.tobytes():
        raise SystemExit(f"the sealed message on {spec} does not open to its input")
    cb.Opener(sch, key, b"probe", head, device=spec).open(sealed, 0, True, out=back)
    if not np.array_equal(back, x):
        raise SystemExit(f"the sealed message opened on {spec} is not its input")

    def seal():   # (the same salt: ``head`` stays the header of what is in ``sealed``)
        cb.Sealer(sch, key, b"probe", salt=s.salt, device=spec).seal(x, True, out=sealed)

    def open_():
        cb.Opener(sch, key, b"probe", head, device=spec).open(sealed, 0, True, out=back)

    # the same chunks as one AES-GCM batch (texts contiguous, tags apart)
    m = n // cb.CHUNK + 1
    off = np.minimum(np.arange(m + 1, dtype=np.int64) * cb.CHUNK, n)
    non = cb.nonces(s.base, 0, m)
    ct = np.empty_like(x)
    r = aead.encrypt_batch(x, sch.aead, key=s.key, nonces=non, offsets=off, device=spec, out=ct)
    tags = r.tags.copy()

    def batch_seal():
        aead.encrypt_batch(x, sch.aead, key=s.key, nonces=non, offsets=off, device=spec, out=ct)

    def batch_open():
        aead.decrypt_batch(ct, sch.aead, key=s.key, nonces=non, offsets=off, tags=tags,
                           device=spec, out=back)

    res = {"device": spec, "device_name": dev.name, "size": n,
           "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "seal": measure(seal, copy, args.repeats),
           "open": measure(open_, copy, args.repeats),
           "batch_seal": measure(batch_seal, copy, args.repeats),
           "batch_open": measure(batch_open, copy, args.repeats)}
    for k in ("seal", "open", "batch_seal", "batch_open"):
        v = res[k]
        print(f"{k:10s} {n / v['s'] / 1e9:7.2f} GB/s  {v['vs_copy']:.3f} x copy "
              f"({n / v['copy_s'] / 1e9:.2f} GB/s)  thread cpu {v['cpu_s'] * 1e3:7.1f} ms "
              f"({v['cpu_s'] * 1e6 / (n // cb.CHUNK + 1):.2f} us/chunk)  "
              f"jobs {v['jobs']}  phases {v['phases_s']}")
    if args.files:
        res["files"] = files(Path(args.files), args.file_size, spec, args.repeats)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


def resident(dev, n: int, repeats: int) -> dict:
    """A GPU-resident sealed message of ``n`` bytes against the 16 KiB-batch kernel (see the
    module docstring)."""
    import cupy

    from ciphergrid import cobblestone
    from ciphergrid.bench.aead import make_batch, time_job
    from ciphergrid.route import engine

    if dev.runtime != "cuda":
        raise SystemExit(f"--resident needs a CUDA device, not {dev.spec}")
    rng = np.random.default_rng(2)
    n = max(cb.CHUNK, n // cb.CHUNK * cb.CHUNK)
    eng = engine(dev.spec)
    batch = make_batch("aes-128-gcm", n // cb.CHUNK, cb.CHUNK, rng)
    job = eng.aead_driver("aes-128-gcm").prepare(batch)
    kt = time_job(eng.backend, job, repeats)
    job.finish()
    instrument()
    res = {"device": dev.spec, "device_name": dev.name, "size": n,
           "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "kernel_s": statistics.median(kt)}
    with cupy.cuda.Device(int(dev.spec.split(":")[1])):
        x = cupy.asarray(batch.src)
        y = cupy.empty(cb.sealed_length(n), dtype=cupy.uint8)
        z = cupy.empty(n, dtype=cupy.uint8)
        key, salt = os.urandom(16), os.urandom(cb.SALT)
        cobblestone.encrypt(x, key, b"probe", salt=salt, out=y)
        if cupy.asnumpy(y).tobytes() != cb.encrypt(batch.src, key, b"probe", salt=salt,
                                                    device="native"):
            raise SystemExit(f"the GPU-resident sealed message on {dev.spec} is not OpenSSL's")
        cobblestone.decrypt(y, key, b"probe", out=z)
        if not bool((z == x).all()):
            raise SystemExit(f"the GPU-resident sealed message on {dev.spec} does not open back")
        s = cupy.cuda.get_current_stream()

        def timed(fn) -> dict:
            rows = []
            for i in range(repeats + 1):
                PHASES.clear()
                COUNTS.clear()
                s.synchronize()
                e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                c0, t = time.thread_time(), time.perf_counter()
                e0.record(s)
                fn()
                e1.record(s)
                cpu = time.thread_time() - c0   # (the call's host work, not the wait below)
                e1.synchronize()
                wall = time.perf_counter() - t
                if i:   # (the first: warm-up)
                    rows.append((cupy.cuda.get_elapsed_time(e0, e1) * 1e-3, wall, cpu,
                                 dict(PHASES)))
            mid = sorted(rows, key=lambda r: r[0])[len(rows) // 2]
            dev_s = statistics.median(r[0] for r in rows)
            return {"s": dev_s, "wall_s": statistics.median(r[1] for r in rows),
                    "cpu_s": statistics.median(r[2] for r in rows),
                    "vs_kernel": res["kernel_s"] / dev_s,
                    "phases_s": {k: round(v, 6) for k, v in mid[3].items()}}

        # (open first: the timed seals overwrite ``y`` under fresh keys)
        res["open"] = timed(lambda: cobblestone.decrypt(y, key, b"probe", out=z))
        res["seal"] = timed(lambda: cobblestone.encrypt(x, os.urandom(16), b"probe", out=y))
    print(f"kernel     {n / res['kernel_s'] / 1e9:7.2f} GB/s  (AES-128-GCM "
          f"{n // cb.CHUNK} x 16 KiB, {res['kernel_s'] * 1e3:.2f} ms)")
    for k in ("seal", "open"):
        v = res[k]
        print(f"resident {k:4s} {n / v['s'] / 1e9:7.2f} GB/s  {v['vs_kernel']:.3f} x kernel  "
              f"wall {v['wall_s'] * 1e3:.2f} ms  thread cpu {v['cpu_s'] * 1e3:.2f} ms  "
              f"phases {v['phases_s']}")
    return res


def files(folder: Path, size: int, spec: str, repeats: int) -> dict:
    """Seconds (best of ``repeats``) of `cat`, and of `ciphergrid seal` / `open` on ``spec``
    and on ``auto``, of one file of ``size`` random bytes in ``folder``; each output checked."""
    import shutil
    import subprocess
    import tempfile

    d = Path(tempfile.mkdtemp(dir=folder, prefix="sealed-probe-"))
    cg = [sys.executable, "-m", "ciphergrid"]
    out = {"size": size}
    try:
        src = d / "m"
        with open(src, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(-(-size // len(block))):
                f.write(block)
            f.truncate(size)
        (d / "k").write_text(os.urandom(16).hex() + "\n")

        def best(cmd, shell=False) -> float:
            t_best = None
            for _ in range(repeats):
                t = time.perf_counter()
                subprocess.run(cmd, shell=shell, check=True, capture_output=True, timeout=120)
                t = time.perf_counter() - t
                t_best = t if t_best is None else min(t_best, t)
            return t_best

        out["cat_s"] = best(f"cat {src} > {d / 'c'}", shell=True)
        for dev in (spec, "auto"):
            common = ["--key-file", str(d / "k"), "--context", "probe", "--no-sync", "--device", dev]
            out[f"seal_{dev}_s"] = best(cg + ["seal", *common, "--in", str(src), "--out",
                                              str(d / "s")])
            out[f"open_{dev}_s"] = best(cg + ["open", *common, "--in", str(d / "s"), "--out",
                                              str(d / "o")])
            if (d / "o").read_bytes() != src.read_bytes():
                raise SystemExit(f"open on {dev} did not give the file back")
        for k, v in out.items():
            if k.endswith("_s") and k != "cat_s":
                print(f"file {k[:-2]:24s} {v:7.3f} s  {out['cat_s'] / v:.2f} x cat "
                      f"({size / v / 1e9:.2f} GB/s)")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
