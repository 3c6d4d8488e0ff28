"""``ciphergrid bench seal``: sealed files (C2SP chunked encryption, Cobblestone-128) against a copy.

In a folder (``--dir``, default /dev/shm where present: a RAM disk, so the files' speed is the
path's, not a disk's), for each size of ``--seal-sizes`` (default 256 MiB and 1 GiB; ``--quick``
16 MiB), one file of random bytes, then these commands, each ``--repeats`` times (default 3)
interleaved, wall clock of the whole command (start-up included), no fsync:

* ``cat in > out``: the ceiling;
* ``ciphergrid seal`` and ``ciphergrid open`` on each ``--device`` (default ``auto``), in the
  command's own process (``--service off``);
* the same through a service (``--service SOCKET``): ``ciphergrid serve`` started by the bench on
  a socket in its folder, stopped at the end;
* ``mpiexec -n 2 ciphergrid seal|open --mpi`` where both commands take ``--mpi`` (their
  ``--help`` says so) and an ``mpiexec`` is found (this Python's environment's, else PATH's);
  else a skipped row saying why;
* the same format through pyca/cryptography's ``cryptography.cobblestone`` streamed in 1 MiB
  pieces in one Python process: a single-core streaming tool, the ratio against it;
* ``age -e -r RECIPIENT`` and ``age -d -i IDENTITY`` (X25519 and ChaCha20-Poly1305 in 64 KiB
  chunks, single-core) with a throwaway identity made by ``age-keygen`` in the folder, the ratio
  against it; without ``age`` and ``age-keygen`` on PATH, skipped rows saying so.

Each output is checked once before it is timed: the sealed file opens with pyca and gives the
input back; the opened file equals the input; age's encrypted file decrypts with ``age -d`` to
the input.

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

from ..settings import bytes_option, mpiexec_path, parse_bytes
from . import suites
from .files import _time
from .preflight import room, size_text, sparse_zeros
from .records import Record

SCHEME = "cobblestone-128"
PIECE = 1 << 20
#: the rows' devices that run on the CPU: the copy ("-"), pyca's stream, age, native
CPU_ROWS = ("-", "pyca", "age", "native")
#: the ranks of the MPI rows
MPI_RANKS = 2
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
                  device_name=device, device_kind="cpu" if device in CPU_ROWS else "gpu",
                  runtime="native", kind="file", size=size, implementation=path, timer="wall-clock",
                  note=note, verification={"status": "not-applicable"})


def _skipped(rec: Record, why: str) -> Record:
    rec.status, rec.error, rec.verification = "skipped", why, {"status": "not-run"}
    return rec


def _cg(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "ciphergrid", *args])


def mpi_support() -> str | None:
    """None where ``ciphergrid seal`` and ``open`` take ``--mpi`` and an ``mpiexec`` is found
    (settings.mpiexec_path: this Python's environment's, else PATH's); else why the MPI rows are
    skipped."""
    for verb in ("seal", "open"):
        p = subprocess.run(shlex.split(_cg(verb, "--help")), capture_output=True, text=True)
        if "--mpi" not in p.stdout:
            return "--mpi not supported for seal/open yet"
    if mpiexec_path() is None:
        return "no mpiexec (pip install 'ciphergrid[mpi]')"
    return None


class Age:
    """A throwaway age identity in ``folder`` (age-keygen) and the commands that use it; ``why``
    says why there is none (age or age-keygen not on PATH, age-keygen failed)."""

    def __init__(self, folder: str):
        self.why = self.identity = self.recipient = None
        tools = {t: shutil.which(t) for t in ("age", "age-keygen")}
        missing = [t for t, v in tools.items() if not v]
        if missing:
            self.why = f"{' and '.join(missing)} not on PATH (Debian: apt-get install age)"
            return
        self.age, keygen = tools["age"], tools["age-keygen"]
        self.identity = os.path.join(folder, "age-identity")
        p = subprocess.run([keygen, "-o", self.identity], capture_output=True, text=True)
        q = subprocess.run([keygen, "-y", self.identity], capture_output=True, text=True) if not p.returncode else p
        if p.returncode or q.returncode or not q.stdout.strip().startswith("age1"):
            self.why = f"age-keygen failed ({q.returncode}): {q.stderr.strip()[-200:]}"
            return
        self.recipient = q.stdout.strip()

    def encrypt(self, src: str, out: str) -> str:
        return shlex.join([self.age, "-e", "-r", self.recipient, "-o", out, src])

    def decrypt(self, src: str, out: str) -> str:
        return shlex.join([self.age, "-d", "-i", self.identity, "-o", out, src])

    def check(self, src: str, out: str) -> None:
        """age's encrypted ``out`` decrypts with ``age -d`` to ``src``."""
        p = subprocess.Popen([self.age, "-d", "-i", self.identity, out], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        same = True
        with open(src, "rb") as f:
            while piece := p.stdout.read(PIECE * 16):
                same = same and piece == f.read(len(piece))
            same = same and not f.read(1)
        err = p.stderr.read().decode(errors="replace").strip()[-200:]
        if p.wait():
            raise AssertionError(f"age's output does not decrypt with age -d ({p.returncode}): {err}")
        if not same:
            raise AssertionError("age's output decrypts with age -d to other bytes than the input")


def served(folder: str, log):
    """The socket of a service started in ``folder`` and stopped on leaving; ``(None, why)``
    where it did not start (bench/service.py's ``served``, its log lines named bench seal's)."""
    from .service import served as start

    return start(folder, lambda line: log(f"bench seal: {line}"))


def _served_check(cmd: str) -> None:
    """The command with -v says the service ran its chunks (not this process)."""
    p = subprocess.run(cmd + " -v", shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise RuntimeError(f"{cmd!r} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
    if "by the service at" not in p.stderr:
        raise AssertionError(f"the service did not run the chunks: {p.stderr.strip()[-200:]}")


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
        if rec.status == "failed":
            ctx.log(f"FAILED {rec.cipher} {rec.implementation} on {rec.device}: {rec.error}")
        elif rec.status == "skipped":
            ctx.log(f"skipped {rec.cipher} {rec.implementation} on {rec.device}: {rec.error}")

    key = os.urandom(16)
    kf = os.path.join(folder, "k")
    with open(kf, "w") as f:
        f.write(key.hex())
    age = Age(folder)
    no_mpi = mpi_support()
    bar = ctx.progress(len(sizes) + 1)
    try:
        bar.__enter__()
        with served(folder, ctx.log) as (sock, no_service):
            for size in sizes:
                _one_size(ctx, bar, add, rows, folder, size, key, kf, devices, repeats, age, sock,
                          no_service, no_mpi, np)
        big = args.seal_big or ((64 << 20) if quick else (16 << 30))
        for rec in _random_access(bar, folder, kf, key, big, args.seal_ranges, devices[0]):
            add(rec)
        bar.advance(1)
    finally:
        bar.__exit__(None, None, None)
        shutil.rmtree(folder, ignore_errors=True)
    _print(rows)
    return {"devices": [], "options": {"sizes": sizes, "devices": devices, "folder": base,
                                       "repeats": repeats, "age": age.why is None}}


def _one_size(ctx, bar, add, rows, folder, size, key, kf, devices, repeats, age, sock, no_service,
              no_mpi, np) -> None:
    """One size's rows: its commands checked, then timed interleaved; the ratios noted."""
    allowed, bound = room(folder)
    files = 3 + (age.why is None)   # (the input, the sealed and age references, an output)
    if files * size + (16 << 20) > allowed:
        bar.log(f"bench seal: {size_text(size)} skipped: {files} files of it do not fit {bound}")
        bar.advance(1)
        return
    src, sealed, aged, out = (os.path.join(folder, x) for x in ("in", "in.cg", "in.age", "out"))
    np.random.default_rng().integers(0, 256, size, dtype=np.uint8).tofile(src)

    def ours(path: str):
        return lambda: _check(path, key, src, out)

    cases, skipped = [("cat", "-", "copy", f"cat {shlex.quote(src)} > {shlex.quote(out)}", None)], []
    for dev in devices:
        common = ["--key-file", kf, "--no-sync", "--device", dev]
        cases += [(SCHEME, dev, "seal", _cg("seal", *common, "--service", "off", "--in", src, "--out", out),
                   ours("seal")),
                  (SCHEME, dev, "open", _cg("open", *common, "--service", "off", "--in", sealed, "--out", out),
                   ours("open"))]
        for path, inp in (("seal", src), ("open", sealed)):
            what = f"{path} (--service)"
            if no_service:   # (failed, not skipped: the bench's own service must start)
                skipped.append(_record(SCHEME, dev, what, size, "").fail(no_service))
                continue
            cmd = _cg(path, *common, "--service", sock, "--in", inp, "--out", out)
            cases.append((SCHEME, dev, what, cmd,
                          lambda cmd=cmd, path=path: (_served_check(cmd), _check(path, key, src, out))))
        for path, inp in (("seal", src), ("open", sealed)):
            what = f"{path} (mpiexec -n {MPI_RANKS} --mpi)"
            if no_mpi:
                skipped.append(_skipped(_record(SCHEME, dev, what, size, ""), no_mpi))
                continue
            cmd = shlex.join([mpiexec_path(), "-n", str(MPI_RANKS)]) + " " + _cg(
                path, "--mpi", *common, "--in", inp, "--out", out)
            cases.append((SCHEME, dev, what, cmd, ours(path)))
    for cls, path in (("Encryptor", "seal"), ("Decryptor", "open")):
        code = PYCA_STREAM.format(cls=cls, piece=PIECE)
        cases.append((SCHEME, "pyca", path, shlex.join([sys.executable, "-c", code, key.hex(),
                                                         src if path == "seal" else sealed, out]),
                      ours(path)))
    for path, flag in (("seal", "-e"), ("open", "-d")):
        what = f"{path} (age {flag})"
        if age.why:
            skipped.append(_skipped(_record("age", "age", what, size, ""), age.why))
        elif path == "seal":
            cases.append(("age", "age", what, age.encrypt(src, out), lambda: age.check(src, out)))
        else:
            cases.append(("age", "age", what, age.decrypt(aged, out), ours("open")))
    _seal_reference(key, src, sealed)
    if age.why is None:
        subprocess.run(shlex.split(age.encrypt(src, aged)), check=True, capture_output=True)
    recs, cmds = [], []
    for name, dev, path, cmd, check in cases:
        rec = _record(name, dev, path, size, f"{path} in {folder}")
        try:
            _time(cmd, out, 1)   # (warm-up, and the output checked before it is timed)
            if check:
                check()
                rec.verification = {"status": "passed", "oracle": (
                    "age -d (decrypts to the input)" if name == "age" and path.startswith("seal")
                    else "pyca/cryptography cryptography.cobblestone")}
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
    for rec in skipped:
        add(rec)
    _versus(rows, size, "pyca", "pyca's single-core stream")
    _versus(rows, size, "age", "age")
    for p in (src, sealed, aged, out):
        if os.path.exists(p):
            os.unlink(p)
    bar.advance(1)


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


def _versus(rows: list[Record], size: int, device: str, label: str) -> None:
    """Each ciphergrid row's ratio to ``device``'s row (pyca's stream, age) of the same direction
    and size: "N x LABEL"."""
    other = {r.direction: r.median_s for r in rows
             if r.device == device and r.size == size and r.status == "ok"}
    for r in rows:
        if r.size == size and r.status == "ok" and r.cipher == SCHEME and r.device not in ("pyca", "age") \
                and other.get(r.direction):
            r.note += f"; {other[r.direction] / r.median_s:.2f} x {label}"


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
                                       "--service", "off", "--in", zeros, "--out", sealed)),
                       capture_output=True)
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
            print(f"{what:<52} {r.device:<8} {size:>10} {r.status.upper()} {r.error}")
            continue
        print(f"{what:<52} {r.device:<8} {size:>10} {r.gbps:7.3f} {r.median_s * 1e3:9.2f}  {r.note}")


def estimate(args, rate: float, api=None) -> tuple[str, float]:
    """Each size's commands (cat; seal and open per device, in process and through the service;
    pyca's two; age's two where age is on PATH) once checked and ``repeats`` times, each START_S
    of start-up plus its bytes at ``rate`` per core used; the input written and sealed by pyca
    (and age) first; the random-access file sealed, its ranges read."""
    quick = bool(args.quick)
    sizes = [16 << 20] if quick else [parse_bytes(s, "--seal-sizes") for s in args.seal_sizes.split(",") if s.strip()]
    devices = [t for a in (args.device or ["auto"]) for t in a.split(",") if t] or ["auto"]
    repeats = args.repeats or (1 if quick else 3)
    big = args.seal_big or ((64 << 20) if quick else (16 << 30))
    timed = 4 * len(devices) + 2 + (2 if shutil.which("age") and shutil.which("age-keygen") else 0)
    runs = (1 + timed) * (repeats + 1)
    seconds = sum(runs * START_S + (repeats + 1) * size * timed / rate
                  + 4 * size / rate for size in sizes)
    seconds += big / rate + (max(3, args.seal_ranges // 5) * 2 + 2) * START_S
    return (f"{len(sizes)} size(s) ({', '.join(size_text(x) for x in sizes)}) x "
            f"{1 + timed} commands x {repeats} repeats, then random access in a "
            f"{size_text(big)} sealed file (the folder's room allowing)", seconds)


#: the estimate's start-up of one command (a Python process importing ciphergrid)
START_S = 0.4


suites.register("seal", run, add_arguments=add_arguments, estimate=estimate,
                help="sealed files (Cobblestone), in process and through a service, against "
                     "cat, pyca's single-core stream and age; random access")
