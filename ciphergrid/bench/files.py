"""``ciphergrid bench files``: encrypting a file against copying it, on the same filesystem.

For each size (``--files-sizes``, default 256 MiB and 1 GiB, bounded by the free space) and each
folder (``--dir``, default the temporary folder, plus ``/dev/shm`` when it is another filesystem),
one input of random bytes is written and read once (warm page cache), then these commands run,
each ``--repeats`` times (default 3) and interleaved (each repeat runs every command once, in an
order rotated by one per repeat: a slow spell of a shared machine falls on all of them), wall
clock of the whole command, the output deleted between runs and no fsync on either side:

* ``cat in > out`` (the ceiling: one thread, the filesystem's read and write), ``cp in out``,
  ``openssl enc -aes-128-ctr`` (one core);
* ``ciphergrid encrypt --no-sync --in in --out out`` on each engine present (``native``: OpenSSL
  on every core; each GPU; ``auto``), start-up included — what a user waits for (``--no-sync``:
  no fsync on either side; ciphergrid syncs a new output before naming it by default);
* redirections: ``ciphergrid ... < in > out`` against ``cat < in > out``;
* pipes: ``cat in | ciphergrid ... | cat > out`` against ``cat in | cat | cat > out``.

Every ciphergrid output is compared with ``openssl enc``'s once before it is timed (the
"verified before timed" rule); a mismatch fails the row.  Rows are ``kind="file"``: ``cipher`` is
``aes-128-ctr`` or the baseline's name (``cat``, ``cp``, ``openssl-enc``), ``device`` the engine
(``-`` for the baselines), ``implementation`` the path (``file``, ``redirect``, ``pipe``) and the
folder, ``note`` the same with the folder's filesystem; the table printed last gives GB/s and the ratio to the matching ``cat``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from ..settings import parse_bytes
from . import suites
from .preflight import fs_type, room, size_text
from .records import Record
from .report import ratio_text

CIPHER = "aes-128-ctr"
KEY = "000102030405060708090a0b0c0d0e0f"
IV = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"


def add_arguments(p) -> None:
    p.add_argument("--files-sizes", metavar="LIST", default="256Mi,1Gi",
                   help="file sizes of `bench files` (default 256Mi,1Gi)")
    p.add_argument("--dir", action="append", metavar="DIR",
                   help="folder(s) of `bench files` (default: the temporary folder and /dev/shm); "
                        "`bench seal`: its folder (default /dev/shm)")


def _fs_type(path: str) -> str:
    """The folder's file system as the mount table names it (``ext4``: statfs's magic number
    would say ``ext2/ext3``)."""
    return fs_type(path)


def _folders(args) -> list[str]:
    if args.dir:
        return args.dir
    out = [tempfile.gettempdir()]
    if os.path.isdir("/dev/shm") and os.stat("/dev/shm").st_dev != os.stat(out[0]).st_dev:
        out.append("/dev/shm")
    return out


def _engines(args, ctx) -> list[str]:
    if args.device:
        return sum((d.split(",") for d in args.device), [])
    out = ["auto", "native"]
    out += [d.spec for d in ctx.api.devices() if d.kind == "gpu"]
    return out


def _cg() -> str:
    # --no-sync: no fsync on either side, as cat and openssl enc (the default syncs the output
    # before naming it: the disk's write speed, not the path's)
    return (f"{shlex.quote(sys.executable)} -m ciphergrid encrypt -q --no-sync --cipher {CIPHER} "
            f"--key-file {{key}} --iv {IV}")


def _time(cmd: str, out: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        if os.path.exists(out):
            os.unlink(out)
        t = time.perf_counter()
        p = subprocess.run(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            raise RuntimeError(f"{cmd!r} failed ({p.returncode}): {p.stderr.decode().strip()[-300:]}")
        times.append(dt)
    return times


def run(args, ctx: suites.Context) -> dict:
    sizes = [parse_bytes(s, "--files-sizes") for s in args.files_sizes.split(",") if s.strip()]
    if args.quick:
        sizes = [min(s, 16 << 20) for s in sizes[:1]]
    repeats = args.repeats or (1 if args.quick else 3)
    engines = _engines(args, ctx)
    openssl = shutil.which("openssl")
    rows = []
    folders = _folders(args)
    with ctx.progress(len(folders) * len(sizes)) as bar:
        for folder in folders:
            fs = _fs_type(folder)
            for size in sizes:
                allowed, bound = room(folder)
                if allowed < 3 * size + (64 << 20):
                    bar.log(f"bench files: {size_text(size)} in {folder} skipped: three copies of "
                            f"it do not fit {bound}")
                    bar.advance(1)
                    continue
                rows += _one(ctx, folder, fs, size, repeats, engines, openssl)
                bar.advance(1)
    _print_table(rows)
    return {"devices": [], "options": {"cipher": CIPHER, "sizes": sizes, "folders": folders,
                                       "engines": engines, "repeats": repeats}}


def _one(ctx, folder, fs, size, repeats, engines, openssl) -> list[Record]:
    work = tempfile.mkdtemp(prefix="cg-bench-files-", dir=folder)
    rows = []
    try:
        src, out, ref = (os.path.join(work, n) for n in ("in", "out", "ref"))
        key = os.path.join(work, "key")
        with open(key, "w") as f:
            f.write(KEY)
        with open(src, "wb") as f:
            left = size
            while left:
                n = min(left, 64 << 20)
                f.write(os.urandom(n))
                left -= n
        subprocess.run(f"cat {shlex.quote(src)} > /dev/null", shell=True, check=True)
        q = {k: shlex.quote(v) for k, v in (("src", src), ("out", out), ("ref", ref))}
        if openssl:
            subprocess.run(f"{openssl} enc -aes-128-ctr -K {KEY} -iv {IV} -in {q['src']} "
                           f"-out {q['ref']}", shell=True, check=True)
        cg = _cg().format(key=shlex.quote(key))
        note = f"{folder} ({fs})"
        cases = [("cat", "-", "file", f"cat {q['src']} > {q['out']}", False),
                 ("cp", "-", "file", f"cp {q['src']} {q['out']}", False)]
        if openssl:
            cases.append(("openssl-enc", "-", "file", f"{openssl} enc -aes-128-ctr -K {KEY} -iv {IV} "
                          f"-in {q['src']} -out {q['out']}", False))
        for eng in engines:
            cases.append((CIPHER, eng, "file", f"{cg} -d {eng} --in {q['src']} --out {q['out']}", True))
        cases.append(("cat", "-", "redirect", f"cat < {q['src']} > {q['out']}", False))
        cases.append((CIPHER, "auto", "redirect", f"{cg} < {q['src']} > {q['out']}", True))
        cases.append(("cat", "-", "pipe", f"cat {q['src']} | cat | cat > {q['out']}", False))
        cases.append((CIPHER, "auto", "pipe", f"cat {q['src']} | {cg} | cat > {q['out']}", True))
        recs = []
        for name, eng, path, cmd, check in cases:
            rec = Record(cipher=name, algorithm="aes" if check else None, key_bits=128 if check else None,
                         mode="ctr" if check else None, direction="encrypt", device=eng,
                         device_name=eng, device_kind="cpu" if eng in ("-", "native") else "?",
                         runtime="shell", kind="file", size=size, timer="wall-clock",
                         implementation=f"{path} in {folder}",
                         note=f"{path}; {note}", verification={"status": "not-applicable"})
            try:
                if check:
                    _time(cmd, out, 1)
                    if openssl:
                        same = subprocess.run(["cmp", "-s", out, ref]).returncode == 0
                        if not same:
                            raise RuntimeError("output differs from openssl enc")
                        rec.verification = {"status": "passed", "oracle": "openssl enc"}
                    else:
                        rec.verification = {"status": "not-run", "detail": "no openssl command"}
            except (RuntimeError, OSError) as e:
                _failed(ctx, rec, check, e)
            recs.append((rec, cmd, check))
        # interleaved: each repeat runs every case once, so that a slow spell of a shared machine
        # falls on all of them and not on one case's repeats; in an order rotated by one case per
        # repeat, so that no case always follows the same one (the kernel's state after a 4 GiB
        # file was written and deleted falls on whichever command comes next)
        times = {id(rec): [] for rec, _, _ in recs}
        for r in range(repeats):
            k = r % len(recs)
            for rec, cmd, check in recs[k:] + recs[:k]:
                if rec.status == "failed":
                    continue
                try:
                    times[id(rec)] += _time(cmd, out, 1)
                except (RuntimeError, OSError) as e:
                    _failed(ctx, rec, check, e)
        for rec, _, _ in recs:
            if rec.status != "failed":
                rec.set_times(times[id(rec)])
            rows.append(rec)
            ctx.add(rec)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _failed(ctx, rec, check: bool, e: Exception) -> None:
    rec.status, rec.error = "failed", str(e)
    if check:
        rec.verification = {"status": "failed", "detail": str(e)}
    ctx.log(f"FAILED bench files {rec.cipher} {rec.device} {rec.note.split(';')[0]}: {e}")


def _print_table(rows) -> None:
    print(f"{'folder':<24} {'size':>9} {'path':<8} {'command':<20} {'device':<9} {'s':>7} "
          f"{'GB/s':>6} {'x cat':>6}")
    cat = {}
    for r in rows:
        if r.cipher == "cat" and r.status == "ok":
            cat[(r.note.split("; ", 1)[1], r.size, r.note.split(";")[0])] = r.median_s
    for r in rows:
        path, where = r.note.split("; ", 1)
        if r.status != "ok":
            print(f"{where[:24]:<24} {size_text(r.size):>9} {path:<8} {r.cipher:<20} {r.device:<9} FAILED {r.error}")
            continue
        base = cat.get((where, r.size, path))
        ratio = f"{ratio_text(base / r.median_s, ''):>6}" if base else "     -"
        print(f"{where[:24]:<24} {size_text(r.size):>9} {path:<8} {r.cipher:<20} {r.device:<9} "
              f"{r.median_s:7.3f} {r.gbps:6.2f} {ratio}")


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Per folder and size: the input written, then its commands once checked and ``repeats``
    times, each START_S of start-up plus its bytes at ``rate`` (three passes for a pipe)."""
    sizes = [parse_bytes(s, "--files-sizes") for s in args.files_sizes.split(",") if s.strip()]
    if args.quick:
        sizes = [min(s, 16 << 20) for s in sizes[:1]]
    repeats = args.repeats or (1 if args.quick else 3)
    engines = (sum((d.split(",") for d in args.device), []) if args.device
               else ["auto", "native"] + [d.spec for d in api.devices() if d.kind == "gpu"])
    folders = _folders(args)
    cases = 3 + len(engines) + 4
    seconds = len(folders) * sum(cases * (repeats + 1) * (START_S + 2 * size / rate) + size / rate
                                 for size in sizes)
    return (f"{len(folders)} folder(s) x {len(sizes)} size(s) ({', '.join(size_text(x) for x in sizes)})"
            f" x {cases} commands x {repeats} repeats", seconds)


#: the estimate's start-up of one command (a Python process importing ciphergrid)
START_S = 0.4

suites.register("files", run, help="encrypting files, redirections and pipes against cat/cp/openssl enc",
                add_arguments=add_arguments, estimate=estimate)
