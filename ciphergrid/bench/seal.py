"""``ciphergrid bench seal``: sealed files (C2SP chunked encryption, Cobblestone-128) against a copy.

In a folder (``--dir``, default /dev/shm where present: a RAM disk, so the files' speed is the
path's, not a disk's), for each size of ``--seal-sizes`` (default 256 MiB and 1 GiB; ``--quick``
16 MiB), one file of random bytes, then these commands, each ``--repeats`` times (default 3)
interleaved, wall clock of the whole command (start-up included), no fsync:

* ``cat in > out``: the ceiling;
* ``ciphergrid seal`` and ``ciphergrid open`` on each ``--device`` (default ``auto``);
* the same format through pyca/cryptography's ``cryptography.cobblestone`` streamed in 1 MiB
  pieces in one Python process: a single-core streaming tool (as age is), the ratio against it.

Each output is checked once before it is timed: the sealed file opens with pyca and gives the
input back; the opened file equals the input.

Before a file is written it must fit the folder's room (preflight.room: its free space and, on a
RAM disk, half the memory available): a size that does not is skipped with a line saying so.

Random access: one sealed file of ``--seal-big`` bytes (default 16 GiB, cut to whole 64 MiB that
fit the folder's room, with a line saying so; ``--quick`` 64 MiB) of zeros (a sparse input: its
allocated blocks checked; where the folder cannot hold it sparse, its bytes count too), then 1 MiB at random offsets through
the API (``ciphergrid.cobblestone.decrypt_range`` over a ``mmap`` of the file: only the chunks
read are paged in) and through the command line (``ciphergrid open --offset --length``, its
start-up measured apart as the same command with ``--length 0``); every range checked (zeros).
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ..settings import bytes_option, parse_bytes
from . import suites
from .files import _time
from .preflight import room, size_text, sparse_zeros
from .records import Record

SCHEME = "cobblestone-128"
PIECE = 1 << 20
PYCA_STREAM = ("import sys\nfrom cryptography.cobblestone import Cobblestone128{cls} as C\n"
               "c = C(bytes.fromhex(sys.argv[1]), b'')\nsrc, dst = open(sys.argv[2], 'rb'), "
               "open(sys.argv[3], 'wb')\nwhile piece := src.read({piece}):\n"
               "    dst.write(c.update(piece))\ndst.write(c.finalize())\ndst.close()\n")


def add_arguments(p) -> None:
    p.add_argument("--seal-sizes", metavar="LIST", default="256Mi,1Gi",
                   help="file sizes of `bench seal` (default 256Mi,1Gi; --quick 16Mi)")
    p.add_argument("--seal-big", type=bytes_option("--seal-big"), metavar="BYTES",
                   help="the random-access file's message bytes (default 16Gi; --quick 64Mi)")
    p.add_argument("--seal-ranges", type=int, default=50, metavar="N",
                   help="1 MiB ranges read at random offsets (default 50)")


def _record(name: str, device: str, path: str, size: int, note: str) -> Record:
    return Record(cipher=name, algorithm="aes" if name == SCHEME else None, key_bits=128 if name == SCHEME else None,
                  mode="gcm" if name == SCHEME else None,
                  direction="decrypt" if path.startswith("open") else "encrypt", device=device,
                  device_name=device, device_kind="cpu" if device in ("-", "native", "pyca") else "gpu",
                  runtime="native", kind="file", size=size, implementation=path, timer="wall-clock",
                  note=note, verification={"status": "not-applicable"})


def _cg(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "ciphergrid", *args])


def run(args, ctx: suites.Context) -> dict:
    import numpy as np

    quick = bool(args.quick)
    sizes = [16 << 20] if quick else [parse_bytes(s, "--seal-sizes") for s in args.seal_sizes.split(",") if s.strip()]
    devices = [t for a in (args.device or ["auto"]) for t in a.split(",") if t] or ["auto"]
    repeats = args.repeats or (1 if quick else 3)
    base = (args.dir or [None])[0] if getattr(args, "dir", None) else (
        "/dev/shm" if os.path.isdir("/dev/shm") else None)
    folder = tempfile.mkdtemp(prefix="cg-bench-seal-", dir=base)
    rows: list[Record] = []

    def add(rec: Record) -> None:
        rows.append(rec)
        ctx.add(rec)
        if rec.status != "ok":
            ctx.log(f"FAILED {rec.cipher} {rec.implementation} on {rec.device}: {rec.error}")

    key = os.urandom(16)
    kf = os.path.join(folder, "k")
    with open(kf, "w") as f:
        f.write(key.hex())
    bar = ctx.progress(len(sizes) + 1)
    try:
        bar.__enter__()
        for size in sizes:
            allowed, bound = room(folder)
            if 3 * size + (16 << 20) > allowed:   # (the input, the sealed reference, an output)
                bar.log(f"bench seal: {size_text(size)} skipped: three files of it do not fit "
                        f"{bound}")
                bar.advance(1)
                continue
            src, sealed, out = (os.path.join(folder, x) for x in ("in", "in.cg", "out"))
            np.random.default_rng().integers(0, 256, size, dtype=np.uint8).tofile(src)
            q = {k: shlex.quote(v) for k, v in (("src", src), ("sealed", sealed), ("out", out))}
            cases = [("cat", "-", "copy", f"cat {q['src']} > {q['out']}", None)]
            for dev in devices:
                common = ["--key-file", kf, "--no-sync", "--device", dev]
                cases += [(SCHEME, dev, "seal", _cg("seal", *common, "--in", src, "--out", out), "seal"),
                          (SCHEME, dev, "open", _cg("open", *common, "--in", sealed, "--out", out), "open")]
            for cls, path in (("Encryptor", "seal"), ("Decryptor", "open")):
                code = PYCA_STREAM.format(cls=cls, piece=PIECE)
                cases.append((SCHEME, "pyca", path, shlex.join([sys.executable, "-c", code, key.hex(),
                                                                 src if path == "seal" else sealed,
                                                                 out]), path))
            _seal_reference(key, src, sealed)
            recs, cmds = [], []
            for name, dev, path, cmd, check in cases:
                rec = _record(name, dev, path, size, f"{path} in {folder}")
                try:
                    _time(cmd, out, 1)   # (warm-up, and the output checked before it is timed)
                    if check:
                        _check(check, key, src, out)
                        rec.verification = {"status": "passed", "oracle": "pyca/cryptography "
                                                                          "cryptography.cobblestone"}
                    recs.append(rec)
                    cmds.append(cmd)
                except Exception as e:
                    add(rec.fail(f"{type(e).__name__}: {e}"))
            times = {id(r): [] for r in recs}
            for i in range(repeats):   # (interleaved: a slow spell falls on all of them)
                k = i % max(1, len(recs))
                for rec, cmd in list(zip(recs, cmds))[k:] + list(zip(recs, cmds))[:k]:
                    times[id(rec)] += _time(cmd, out, 1)
            cat = None
            for rec in recs:
                rec.set_times(times[id(rec)])
                if rec.cipher == "cat":
                    cat = rec.median_s
                elif cat:
                    rec.note += f"; {cat / rec.median_s:.2f} x cat"
                add(rec)
            _versus_pyca(rows, size)
            for p in (src, sealed, out):
                if os.path.exists(p):
                    os.unlink(p)
            bar.advance(1)
        big = args.seal_big or ((64 << 20) if quick else (16 << 30))
        for rec in _random_access(bar, folder, kf, key, big, args.seal_ranges, devices[0]):
            add(rec)
        bar.advance(1)
    finally:
        bar.__exit__(None, None, None)
        shutil.rmtree(folder, ignore_errors=True)
    _print(rows)
    return {"devices": [], "options": {"sizes": sizes, "devices": devices, "folder": base,
                                       "repeats": repeats}}


def _seal_reference(key: bytes, src: str, sealed: str) -> None:
    """The file sealed by pyca (what `open` rows read)."""
    from cryptography.cobblestone import Cobblestone128Encryptor

    c = Cobblestone128Encryptor(key, b"")
    with open(src, "rb") as f, open(sealed, "wb") as g:
        while piece := f.read(PIECE * 64):
            g.write(c.update(piece))
        g.write(c.finalize())


def _check(path: str, key: bytes, src: str, out: str) -> None:
    """A seal's output opens with pyca to the input; an open's output is the input."""
    from cryptography.cobblestone import Cobblestone128Decryptor

    with open(src, "rb") as f, open(out, "rb") as g:
        if path == "open":
            while True:
                a, b = f.read(PIECE * 64), g.read(PIECE * 64)
                if a != b:
                    raise AssertionError("the opened file differs from the input")
                if not a:
                    return
        d = Cobblestone128Decryptor(key, b"")
        while True:
            piece = g.read(PIECE * 64)
            got = d.update(piece) if piece else d.finalize()
            if got != f.read(len(got)):
                raise AssertionError("the sealed file does not open with pyca to the input")
            if not piece:
                if f.read(1):
                    raise AssertionError("the sealed file opens short of the input")
                return


def _versus_pyca(rows: list[Record], size: int) -> None:
    """Each ciphergrid row's ratio to pyca's single-core stream of the same path and size."""
    pyca = {r.implementation: r.median_s for r in rows
            if r.device == "pyca" and r.size == size and r.status == "ok"}
    for r in rows:
        if r.size == size and r.status == "ok" and r.device not in ("pyca", "-") and pyca.get(r.implementation):
            r.note += f"; {pyca[r.implementation] / r.median_s:.2f} x pyca's single-core stream"


def big_fit(big: int, allowed: int, sparse: bool, sealed_length) -> int:
    """The random-access file's message bytes: ``big``, or the whole 64 MiB below it whose sealed
    file (and input, where it cannot be sparse) fit 0.8 of ``allowed``; 0: not even 64 MiB."""
    def need(n: int) -> int:
        return sealed_length(n) + (0 if sparse else n)

    if need(big) <= 0.8 * allowed:
        return big
    step = 64 << 20
    n = min(big, int(0.8 * allowed) // (1 if sparse else 2)) // step * step
    while n > 0 and need(n) > 0.8 * allowed:
        n -= step
    return n


def _random_access(bar, folder: str, kf: str, key: bytes, big: int, count: int, device: str) -> list[Record]:
    """1 MiB at random offsets of a sealed file of ``big`` zeros: the API's time, the CLI's."""
    import mmap

    from .. import cobblestone as cb

    zeros, sealed = os.path.join(folder, "zeros"), os.path.join(folder, "big.cg")
    sparse = sparse_zeros(zeros, 64 << 20)   # (can this folder hold the zeros sparse?)
    allowed, bound = room(folder)
    fit = big_fit(big, allowed, sparse, cb.sealed_length)
    if fit < big:
        if not fit:
            bar.log(f"bench seal: random access skipped: a sealed file of 64 MiB does not fit {bound}")
            os.unlink(zeros)
            return []
        bar.log(f"bench seal: the random-access file is cut to {size_text(fit)} (from "
                f"{size_text(big)}): {bound}" + ("" if sparse else "; its zeros cannot be sparse there"))
        big = fit
    sparse_zeros(zeros, big)   # (read at memory speed, no space where sparse)
    seal = _record(SCHEME, device, "seal (the random-access file)", big,
                   f"zeros, {'sparse' if sparse else 'allocated (not sparse)'} input, in {folder}")
    t0 = time.perf_counter()
    p = subprocess.run(shlex.split(_cg("seal", "--key-file", kf, "--no-sync", "--device", device,
                                       "--in", zeros, "--out", sealed)), capture_output=True)
    if p.returncode:
        return [seal.fail(p.stderr.decode(errors="replace")[-300:])]
    seal.set_times([time.perf_counter() - t0])
    os.unlink(zeros)
    n, rng = 1 << 20, random.Random()
    api = _record(SCHEME, device, "open 1 MiB at a random offset (API)", n,
                  f"of a {size_text(big)} sealed file: decrypt_range over a mmap")
    cli = _record(SCHEME, device, "open 1 MiB at a random offset (CLI)", n,
                  f"of a {size_text(big)} sealed file: ciphergrid open --offset --length")
    zero = bytes(n)
    with open(sealed, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            cb.decrypt_range(m, key, b"", 0, n, device=device)   # (warm-up)
            times = []
            for _ in range(count):
                off = rng.randrange(0, big - n)
                t0 = time.perf_counter()
                got = cb.decrypt_range(m, key, b"", off, n, device=device)
                times.append(time.perf_counter() - t0)
                if got != zero:
                    return [seal, api.fail(f"the range at {off} is not the zeros sealed")]
        finally:
            m.close()
    api.set_times(times)
    api.verification = seal.verification = {"status": "passed", "oracle": "the zeros sealed (its "
                                                                          "ranges open to them)"}
    api.note += f"; p90 {sorted(times)[int(0.9 * len(times))] * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms"
    start, times = [], []
    out = os.path.join(folder, "range")
    for _ in range(max(3, count // 5)):
        start += _time(_cg("open", "--key-file", kf, "--device", device, "--in", sealed,
                           "--offset", "0", "--length", "0", "--out", out), out, 1)
        off = rng.randrange(0, big - n)
        times += _time(_cg("open", "--key-file", kf, "--device", device, "--in", sealed,
                           "--offset", str(off), "--length", str(n), "--out", out), out, 1)
        with open(out, "rb") as g:
            if g.read() != zero:
                return [seal, api, cli.fail(f"the CLI's range at {off} is not the zeros sealed")]
    cli.set_times(times)
    cli.verification = {"status": "passed", "oracle": "the zeros sealed"}
    s = statistics.median(start)
    cli.note += (f"; start-up (the same command with --length 0: its imports, the key's "
                 f"commitment) {s * 1e3:.1f} ms: the range {(cli.median_s - s) * 1e3:+.1f} ms beyond it")
    return [seal, api, cli]


def _print(rows) -> None:
    print(f"{'what':<52} {'device':<8} {'size':>10} {'GB/s':>7} {'ms':>9}  note")
    for r in rows:
        what, size = f"{r.cipher} {r.implementation}", size_text(r.size)
        if r.status != "ok":
            print(f"{what:<52} {r.device:<8} {size:>10} FAILED {r.error}")
            continue
        print(f"{what:<52} {r.device:<8} {size:>10} {r.gbps:7.3f} {r.median_s * 1e3:9.2f}  {r.note}")


def estimate(args, rate: float, api=None) -> tuple[str, float]:
    """Each size's commands (cat, seal and open per device, pyca's two) once checked and
    ``repeats`` times, each START_S of start-up plus its bytes at ``rate`` per core used; the
    input written and sealed by pyca first; the random-access file sealed, its ranges read."""
    quick = bool(args.quick)
    sizes = [16 << 20] if quick else [parse_bytes(s, "--seal-sizes") for s in args.seal_sizes.split(",") if s.strip()]
    devices = [t for a in (args.device or ["auto"]) for t in a.split(",") if t] or ["auto"]
    repeats = args.repeats or (1 if quick else 3)
    big = args.seal_big or ((64 << 20) if quick else (16 << 30))
    runs = (1 + 2 * len(devices) + 2) * (repeats + 1)
    seconds = sum(runs * START_S + (repeats + 1) * size * (2 * len(devices) + 2) / rate
                  + 3 * size / rate for size in sizes)
    seconds += big / rate + (max(3, args.seal_ranges // 5) * 2 + 2) * START_S
    return (f"{len(sizes)} size(s) ({', '.join(size_text(x) for x in sizes)}) x "
            f"{1 + 2 * len(devices) + 2} commands x {repeats} repeats, then random access in a "
            f"{size_text(big)} sealed file (the folder's room allowing)", seconds)


#: the estimate's start-up of one command (a Python process importing ciphergrid)
START_S = 0.4


suites.register("seal", run, add_arguments=add_arguments, estimate=estimate,
                help="sealed files (Cobblestone) against cat and pyca's single-core stream; "
                     "random access")
