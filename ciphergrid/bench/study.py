"""``ciphergrid bench study``: the seeds' studies in one command (docs/study.md).

Seed 000's tables (a practice ablation with the copy strawman as the I/O ceiling; all nine ISO
block ciphers' throughput and area-time product; their energy against the CPU) and seed 004's
question (written twice, reference and optimized: do the two rank the algorithms alike?),
measured on the GPU (CUDA where present) and on the CPU (PoCL) of this host, the same way for
every cipher, every output checked before it is timed.  Four parts (``--part``, repeatable):

* ``practices``: AES-128-CTR through each implementation of ``ciphers/aes.py`` (one optimisation
  per step, then the alternatives that did not pay, the default and the constant-time kernels;
  :func:`ablation.measure`), then the ceilings: the copy-only kernel (device memory) and the copy
  host -> host through the pipeline (on a GPU: the bus);
* ``ciphers``: every ISO block cipher in CTR, its ``reference`` (AES: ``baseline``) and ``fast``
  implementations, device-resident (``kernel``) and host -> host (``e2e``) at the table's size,
  ``fast`` over a range of sizes too (the plots); every AEAD's implementations on a batch of
  16 KiB messages (the sealed-file shape), its kernels and its public API;
* ``energy``: MB/J of each ISO cipher's ``fast`` kernel, device-resident and host -> host, with
  the GPU board's energy (NVML), against the CPU on every core of this host with its packages'
  energy (RAPL where readable): OpenSSL where it has the cipher (its CTR, else its ECB), our
  kernels on the CPU (PoCL, reference and fast) where it does not (:func:`_cpu_rows`);
* ``ranks``: nothing to measure; the rankings of the ``ciphers`` part (``study_report``).

Each measuring part writes ``DIR/part-NAME.json`` (a ``ciphergrid.bench`` results file: ``ciphergrid
report`` reads it alone too) as it goes; every run then merges the parts present into
``DIR/study.json`` (schema ``ciphergrid.study``) and writes ``DIR/study.md`` and the PNGs from it
(``study_report``), so a part is re-run alone and the report follows.  Without ``--part`` the
measuring parts that have no complete file yet are run: an interrupted study resumes.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from .. import aeads, registry
from ..errors import InvalidArgument
from ..settings import bytes_option
from . import _now, ablation, aead as aead_bench, command_line, definitions, suites, sysinfo
from .methodology import COPY, Policy, Row, Runner, settle
from .records import Record, Results, load, save

PARTS = ("practices", "ciphers", "energy", "ranks")
MEASURED = PARTS[:3]
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

#: the ISO/IEC 18033-3 / 29192-2 block ciphers, each in CTR under its smallest standard key
#: (TDEA: three keys, as ISO/IEC 18033-3 has it)
CIPHERS = ["aes-128-ctr", "des-ede3-ctr", "cast5-ctr", "seed-ctr", "camellia-128-ctr",
           "misty1-ctr", "hight-ctr", "present-80-ctr", "clefia-128-ctr"]
QUICK_CIPHERS = ["aes-128-ctr", "camellia-128-ctr"]
#: one name per AEAD algorithm
AEADS = ["aes-128-gcm", "chacha20-poly1305", "ascon-aead128", "aegis-128l"]
QUICK_AEADS = ["chacha20-poly1305"]
#: the practice ablation's cipher, and --quick's steps (the two ends)
PRACTICE_CIPHER = "aes-128-ctr"
QUICK_PRACTICES = ["baseline", "fast"]
OPTIMIZED = "fast"

#: repeats of the rows (methodology's policy); energy rows aim at 2 s windows: NVML's and RAPL's
#: counters step every few to few tens of ms
TABLE = Policy(target_s=0.3, min_repeats=5, max_repeats=200, openssl_seconds=0.1, openssl_repeats=3)
ENERGY = Policy(target_s=2.0, min_repeats=3, max_repeats=2000, openssl_seconds=0.7, openssl_repeats=3)
QUICK = Policy(target_s=0.02, min_repeats=3, max_repeats=10, openssl_seconds=0.03, openssl_repeats=3)
#: the OpenSSL rows' buffer per thread: openssl speed's largest default (in cache: the CPU's best)
OPENSSL_SIZE = 16 * KiB


@dataclass(frozen=True)
class Sizes:
    table: int        # the tables' size (bytes per call)
    sweep: tuple      # the throughput-against-size plots (fast implementations)
    energy: int       # the energy rows
    aead: tuple       # (messages, bytes each) of the AEAD rows


def sizes_for(dev, args) -> Sizes:
    if args.quick:
        return Sizes(256 * KiB, (16 * KiB, 256 * KiB), 1 * MiB, (16, 16 * KiB))
    table = args.study_size
    if dev.kind == "gpu":
        return Sizes(table or 256 * MiB, (64 * KiB, MiB, 16 * MiB, 256 * MiB), GiB, (16384, 16 * KiB))
    return Sizes(table or 16 * MiB, (64 * KiB, MiB, 16 * MiB), 64 * MiB, (1024, 16 * KiB))


def add_arguments(p) -> None:
    p.add_argument("--part", action="append", choices=PARTS, metavar="PART",
                   help=f"study parts to run ({', '.join(PARTS)}); repeatable (default: the "
                        "measuring parts without a complete file in --study-dir)")
    p.add_argument("--study-dir", default="ciphergrid-study", metavar="DIR",
                   help="where the parts, study.json, study.md and the plots go "
                        "(default ./ciphergrid-study)")
    p.add_argument("--study-size", type=bytes_option("--study-size"), metavar="BYTES",
                   help="bytes per call of the tables' rows (default 256Mi on a GPU, 16Mi on a CPU)")


def reference_impl(spec) -> str:
    """The plain implementation of a block cipher ("reference"; AES's first step: "baseline")."""
    impls = spec.algorithm.implementations
    return "reference" if "reference" in impls else next(iter(impls))


# ------------------------------------------------------------------------- devices
def platforms(api, device_args) -> list:
    """The study's devices: one GPU (CUDA where present, else an OpenCL GPU) and the CPU's
    OpenCL device (PoCL), as --device narrows them."""
    devs = [d for d in api.devices() if d.runtime in ("opencl", "cuda")]
    tokens = {t.strip().lower() for a in device_args or [] for t in a.split(",") if t.strip()}
    if tokens and "all" not in tokens:
        devs = [d for d in devs if d.spec.lower() in tokens or d.kind in tokens]
    gpus = [d for d in devs if d.kind == "gpu"]
    gpu = next((d for d in gpus if d.runtime == "cuda"), gpus[0] if gpus else None)
    cpu = next((d for d in devs if d.kind == "cpu"), None)
    return [d for d in (gpu, cpu) if d is not None]


# ------------------------------------------------------------------------- the parts
class Part:
    """One measuring part's rows, checkpointed to its file as they come."""

    CHECKPOINT_S = 5.0

    def __init__(self, name: str, folder: str, args, ctx, devices: list):
        self.name, self.ctx = name, ctx
        self.path = os.path.join(folder, f"part-{name}.json")
        self.records: list[Record] = []
        self.t0, self.last = time.perf_counter(), time.monotonic()
        self.run = {"suite": "study", "part": name, "command": _command(args, name),
                    "argv": list(sys.argv), "date": _now(), "host": ctx.host,
                    "devices": [sysinfo.device_info(d) for d in devices],
                    "options": {"quick": bool(args.quick), "study_size": args.study_size}}

    def add(self, rec: Record) -> None:
        self.records.append(rec)
        if rec.status == "failed":
            self.ctx.log(f"FAILED {rec.cipher} [{rec.implementation}] {rec.kind} on {rec.device}: "
                         f"{rec.error}")
        if time.monotonic() - self.last >= self.CHECKPOINT_S:
            self.save(complete=False)
            self.last = time.monotonic()

    def save(self, complete: bool, **options) -> None:
        counts = {s: sum(r.status == s for r in self.records) for s in ("ok", "failed", "skipped")}
        self.run["options"].update(options)
        run = dict(self.run, finished=_now(), complete=complete, interrupted=not complete,
                   duration_s=round(time.perf_counter() - self.t0, 3), counts=counts,
                   exit_code=0 if complete and not counts["failed"] else 1,
                   definitions=definitions())
        save(Results(run=run, records=list(self.records)), self.path)


def _command(args, part: str) -> str:
    """The command that measures this part again (bench's canonical command, --part its own)."""
    import argparse

    return command_line(argparse.Namespace(**{**vars(args), "part": [part]}))


def _runner(ctx, policy: Policy) -> Runner:
    return Runner(ctx.api, policy, ctx.host)


def _run_rows(part: Part, runner: Runner, rows: list[Row], prog) -> None:
    for row in settle(rows, part.ctx.host.get("memory_bytes")):
        prog.row(row.label)
        part.add(runner.run_row(row))
        prog.advance()


def run_practices(part: Part, args, devices: list) -> dict:
    """Seed 000 Table 2: AES-128-CTR, one implementation per step, then the ceilings."""
    spec = registry.lookup(PRACTICE_CIPHER)
    steps = QUICK_PRACTICES if args.quick else list(spec.algorithm.implementations)
    runner = _runner(part.ctx, QUICK if args.quick else TABLE)
    repeats = 3 if args.quick else 10
    with part.ctx.progress(len(devices) * (len(steps) + 2)) as prog:
        for dev in devices:
            size = sizes_for(dev, args).table
            eng = part.ctx.api.get_engine(dev.spec)
            for impl in steps:
                prog.row(f"{PRACTICE_CIPHER}[{impl}] {dev.spec}")
                part.add(ablation.measure(part.ctx.api, eng, dev, PRACTICE_CIPHER, impl, size,
                                          repeats, part.ctx.log))
                prog.advance()
            _run_rows(part, runner, [Row("kernel", COPY, None, size, True, dev)], prog)
            prog.row(f"copy host -> host {dev.spec}")
            part.add(_host_copy(part.ctx, dev, size, repeats))
            prog.advance()
    return {"cipher": PRACTICE_CIPHER, "steps": steps}


def _host_copy(ctx, dev, size: int, repeats: int) -> Record:
    """The I/O ceiling host -> host: the copy-only strawman through the pipeline that the
    device's e2e rows take (on a GPU the bus both ways at once; on a CPU device host memory)."""
    from .pipeline import copy_strawman

    rec = Record(cipher=COPY, algorithm=None, key_bits=None, mode=None, direction="encrypt",
                 device=dev.spec, device_name=dev.name, device_kind=dev.kind, runtime=dev.runtime,
                 kind="e2e", size=size, timer="wall-clock", implementation="copy host -> host",
                 verification={"status": "not-applicable", "detail": "a copy: checked equal once"},
                 note="the copy-only kernel through the pipeline (its chunks and queues), host "
                      "array to host array")
    src = np.random.default_rng().integers(0, 256, size, dtype=np.uint8)
    try:
        copy = copy_strawman(ctx.api, dev, src, np.zeros(size, dtype=np.uint8))
        rec.set_times(suites.wall_times(copy, repeats))
    except Exception as e:  # the ceiling missing must not end the study
        rec.fail(f"{type(e).__name__}: {e}")
    return rec


def run_ciphers(part: Part, args, devices: list) -> dict:
    """Seed 000 Table 3 and seed 004's two implementations: every ISO cipher, reference and
    optimized, kernel and e2e; the AEADs on batches."""
    ciphers = QUICK_CIPHERS if args.quick else CIPHERS
    names = QUICK_AEADS if args.quick else AEADS
    runner = _runner(part.ctx, QUICK if args.quick else TABLE)
    rows: list[Row] = []
    for dev in devices:
        sz = sizes_for(dev, args)
        for name in ciphers:
            spec = registry.lookup(name)
            for impl in (reference_impl(spec), OPTIMIZED):
                rows += [Row(kind, name, spec, sz.table, True, dev, impl=impl) for kind in ("kernel", "e2e")]
            rows += [Row(kind, name, spec, s, True, dev, impl=OPTIMIZED)
                     for s in sz.sweep if s != sz.table for kind in ("kernel", "e2e")]
    aead_rows = sum(len(aeads.lookup(n).implementations) + 1 for n in names) * len(devices)
    with part.ctx.progress(len(rows) + aead_rows) as prog:
        _run_rows(part, runner, rows, prog)
        rng = np.random.default_rng()
        repeats = 3 if args.quick else 10
        for dev in devices:
            count, size = sizes_for(dev, args).aead
            eng = part.ctx.api.get_engine(dev.spec)
            for name in names:
                batch = aead_bench.make_batch(name, count, size, rng)
                problem = aead_bench._known_answers(name, dev)
                for impl in aeads.lookup(name).implementations:
                    prog.row(f"{name}[{impl}] kernel {dev.spec}")
                    rec = aead_bench._record(name, dev, "kernel", count, size, impl)
                    part.add(aead_bench._time_kernel(rec, eng, batch, impl, repeats, problem, part.ctx))
                    prog.advance()
                prog.row(f"{name} e2e {dev.spec}")
                rec = aead_bench._record(name, dev, "e2e", count, size, None)
                part.add(aead_bench._time_api(rec, name, batch, dev.spec, repeats, part.ctx))
                prog.advance()
    return {"ciphers": ciphers, "aeads": names}


def run_energy(part: Part, args, devices: list) -> dict:
    """Seed 000 Table 4: MB/J of the fast kernels on the GPU (board) against the CPU on every
    core (packages): OpenSSL where it has the cipher, PoCL where it does not."""
    ciphers = QUICK_CIPHERS if args.quick else CIPHERS
    runner = _runner(part.ctx, QUICK if args.quick else ENERGY)
    cores = int(part.ctx.host.get("cpu_usable") or os.cpu_count() or 1)
    gpu = next((d for d in devices if d.kind == "gpu"), None)
    cpu = next((d for d in devices if d.kind == "cpu"), None)
    from ..engines.openssl.contexts import has_evp

    rows: list[Row] = []
    for name in ciphers:
        spec = registry.lookup(name)
        if gpu is not None:
            size = sizes_for(gpu, args).energy
            rows += [Row(kind, name, spec, size, True, gpu, impl=OPTIMIZED) for kind in ("kernel", "e2e")]
        rows += _cpu_rows(name, spec, cpu, cores, args, has_evp)
    with part.ctx.progress(len(rows)) as prog:
        _run_rows(part, runner, rows, prog)
    from .energy import rapl_status

    return {"ciphers": ciphers, "openssl_threads": cores, "openssl_size": OPENSSL_SIZE,
            "rapl": rapl_status()}


def _cpu_rows(name: str, spec, cpu, cores: int, args, has_evp) -> list[Row]:
    """The CPU's candidates for cipher ``name`` on every core (the report keeps the fastest):
    OpenSSL's CTR; where OpenSSL has no CTR for the cipher, its ECB (the same block-cipher work
    per byte); where it has neither, both our kernels through PoCL (on a CPU the plain one is
    often the faster: the study's rankings say why)."""
    if has_evp(name):
        return [Row("openssl-allcores", name, spec, OPENSSL_SIZE, True, None, threads=cores)]
    ecb = name.rsplit("-", 1)[0] + "-ecb"
    if ecb in registry.names() and has_evp(ecb):
        return [Row("openssl-allcores", ecb, registry.lookup(ecb), OPENSSL_SIZE, True, None,
                    threads=cores, note=f"OpenSSL has no {name}: its ECB, the same block-cipher "
                                        "work per byte")]
    if cpu is None:
        return []
    size = sizes_for(cpu, args).energy
    return [Row("e2e", name, spec, size, True, cpu, impl=impl)
            for impl in dict.fromkeys((reference_impl(spec), OPTIMIZED))]


RUNNERS = {"practices": run_practices, "ciphers": run_ciphers, "energy": run_energy}


# ------------------------------------------------------------------------- the suite
def complete(path: str) -> bool:
    try:
        return bool(load(path).run.get("complete"))
    except Exception:
        return False


def run(args, ctx: suites.Context) -> dict:
    from . import study_report

    if getattr(args, "json", None):
        raise InvalidArgument("bench study writes its files under --study-dir, not --json")
    folder = args.study_dir
    os.makedirs(folder, exist_ok=True)
    devices = platforms(ctx.api, args.device)
    if not devices:
        raise InvalidArgument("bench study needs an OpenCL or CUDA device; none is present"
                              + (" among --device" if args.device else ""))
    asked = list(dict.fromkeys(args.part or []))
    parts = [p for p in asked if p in MEASURED] if asked else [
        p for p in MEASURED if not complete(os.path.join(folder, f"part-{p}.json"))]
    if not asked and not parts:
        ctx.log(f"every part in {folder} is complete: the report is rebuilt "
                "(--part NAME measures a part again)")
    failed = 0
    for name in parts:
        ctx.log(f"== study part {name} on {', '.join(d.spec for d in devices)}")
        part = Part(name, folder, args, ctx, devices)
        try:
            options = RUNNERS[name](part, args, devices)
        except KeyboardInterrupt:
            part.save(complete=False)
            ctx.log(f"interrupted: {part.path} keeps {len(part.records)} rows; run again to resume")
            raise
        part.save(complete=True, **options)
        failed += sum(r.status == "failed" for r in part.records)
        ctx.log(f"   {len(part.records)} rows -> {part.path}")
    written = study_report.build(folder)
    for p in written:
        print(p)
    return {"devices": [sysinfo.device_info(d) for d in devices],
            "options": {"parts": parts, "study_dir": folder}, "failed": failed}


suites.register("study", run, add_arguments=add_arguments,
                help="the seeds' studies: practices, all ciphers, energy, rankings (docs/study.md)")
