"""``ciphergrid bench pipeline``: host-to-host throughput of the streaming pipeline against the bus.

For each device and each size (default 1 MiB, 2 MiB, ... 8 GiB) one run measures, with the same
chunk size and depth:

* ``<cipher>`` e2e: a host array through :mod:`ciphergrid.transfer` into a host array (H2D, mode
  kernel and D2H overlapped on three queues); verified before it is timed: the whole output
  against OpenSSL where it has the cipher, else windows (first, chunk seams, middle, last) against
  the oracle's plain-Python model;
* ``copy`` e2e: the copy-only strawman kernel through the same pipeline (Barenghi et al., Table 2,
  last row): what any cipher can reach end to end;
* ``bus-h2d``, ``bus-d2h``: pure copies host->device alone, device->host alone, from page-locked
  host memory, as large as possible (up to 1 GiB per copy), waited for as the pipeline waits;
  ``bus-duplex``: both at once on two queues (the size moved EACH way per second, i.e. directly
  comparable with an end-to-end rate; the bus total is twice that);
* host CPU time (user + system of the whole process, ``time.process_time``) per GB over the timed
  repeats of the e2e rows: what the offload costs the host.

Then, per series, the plateau (the best rate over the sizes) and the smallest size reaching 90% of
it (Barenghi et al. saw ~10 MiB), and the goal ratios: copy / duplex (>= 0.90), cipher / copy
(>= 0.95), CPU <= 0.05 core-s/GB.

Host arrays are ordinary, pre-touched numpy arrays (``--pinned``: page-locked ones from
``transfer.staging.host_buffer``), allocated once at the largest size and sliced, as a streaming program
reuses its buffers.  XTS runs in sector mode (``--sector-size``, default 4096: one data unit is at
most 16 MiB).  ``--retune`` re-runs the chunk/depth auto-tuning first (and writes the cache).

Rows use the common record format (records.Record): kind "e2e", cipher = the cipher name, "copy",
"bus-h2d", "bus-d2h" or "bus-duplex"; ``note`` and ``resources`` carry chunk, depth, transfer mode
and the host CPU per GB.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from datetime import datetime, timezone

import numpy as np

from .. import registry
from ..request import make_request
from ..errors import DeviceError, Error, InvalidArgument
from ..settings import parse_bytes
from ..transfer import chunking
from ..transfer.autotune import autotune
from ..transfer.driver import Pipeline
from ..transfer.pinning import pinned
from ..transfer.staging import TRANSFERS, host_buffer
from . import suites, sysinfo
from .records import Record

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
DEFAULT_SIZES = [MiB << k for k in range(14)]          # 1 MiB .. 8 GiB
QUICK_SIZES = [64 * KiB, 256 * KiB, MiB, 4 * MiB]
DEFAULT_CIPHERS = ["aes-128-ctr"]
BUS = ("bus-h2d", "bus-d2h", "bus-duplex")
#: largest single copy of the bus-ceiling rows
BUS_PIECE = 1 << 30
GOALS = {"copy_vs_duplex": 0.90, "cipher_vs_copy": 0.95, "cpu_s_per_gb": 0.05}


class _Policy:
    def __init__(self, quick: bool, fixed: int | None):
        self.target_s = 0.02 if quick else 0.4
        self.min_repeats = 2 if quick else 3
        self.max_repeats = 5 if quick else 40
        self.fixed = fixed

    def repeats(self, one_s: float) -> int:
        if self.fixed:
            return self.fixed
        return max(self.min_repeats, min(self.max_repeats, math.ceil(self.target_s / max(one_s, 1e-6))))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("pipeline suite")
    for flags, kw in (
        (("--chunk-size",), dict(metavar="BYTES", help="pipeline chunk size (e.g. 16Mi); "
                                                        "default: tuned / CIPHERGRID_CHUNK_SIZE")),
        (("--depth",), dict(type=int, metavar="N", help="pipeline depth (slots in flight); "
                                                          "default: tuned / CIPHERGRID_DEPTH")),
        (("--retune",), dict(action="store_true", help="pipeline: re-run the chunk/depth "
                                                          "auto-tuning first (writes the cache)")),
        (("--pinned",), dict(action="store_true", help="pipeline: page-locked host arrays "
                                                          "instead of ordinary numpy arrays")),
        (("--transfer",), dict(choices=TRANSFERS, default="auto",
                               help="pipeline: how host memory reaches the device")),
        (("--sector-size",), dict(type=int, default=4096, metavar="BYTES",
                                  help="pipeline: XTS data-unit size (default 4096)")),
    ):
        try:
            g.add_argument(*flags, **kw)
        except argparse.ArgumentError:  # another suite defines it already: share it
            pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def human(n: int) -> str:
    """Bytes in the largest binary unit that gives a number >= 1 (``1.20 GiB``)."""
    from .preflight import size_text

    return size_text(n)


def _devices(ctx, tokens) -> list:
    from .methodology import select_devices

    devs = [d for d in select_devices(ctx.api, tokens) if d.runtime != "native"]
    if not tokens:
        gpus = [d for d in devs if d.kind == "gpu"]
        devs = gpus or devs[:1]
    return devs


def _ciphers(args, quick: bool) -> list[str]:
    from .methodology import select_ciphers

    if not getattr(args, "cipher", None) and not getattr(args, "mode", None):
        return list(DEFAULT_CIPHERS)
    names = select_ciphers(args.cipher, args.mode, quick)
    return [n for n in names if not n.endswith("-cbc")] + [n for n in names if n.endswith("-cbc")]


# ------------------------------------------------------------------------------- references
def _check(spec, req, key, iv, data: np.ndarray, got: np.ndarray, encrypt: bool, sector: int | None,
           chunk: int, ref: np.ndarray) -> tuple[int | None, str]:
    """Compare the pipeline's output ``got`` with a reference; returns (the first wrong byte or None,
    what was compared).  OpenSSL (every core) checks the whole output where it has the cipher;
    otherwise the oracle (a plain-Python model for the ciphers OpenSSL lacks) checks windows of
    verify.REFERENCE_CAP bytes: the first, one across every seam of the first chunks, the middle
    and the last, each run from its own block (``Request.at``, the mode's state there)."""
    try:
        from ..engines import openssl

        openssl.crypt(spec.name, key, iv, data, encrypt, threads=os.cpu_count(),
                      sector_size=sector, start_sector=0 if sector else None, out=ref)
        bad = None if np.array_equal(got, ref) else int(np.argmax(got != ref))
        return bad, f"whole output vs OpenSSL ({getattr(openssl, 'BACKEND_NAME', 'native')})"
    except Exception:
        pass
    from ..testing import oracle
    from .verify import REFERENCE_CAP

    n, bs = data.nbytes, spec.block_size
    unit = sector or bs                      # windows start on data units (XTS) or blocks
    w = max(unit, REFERENCE_CAP // unit * unit)
    starts = {0, n // 2, n - w} | {c - w // 2 for c in range(chunk, min(n, 4 * chunk + 1), chunk)}
    starts = sorted({min(max(0, s // unit * unit), max(0, n - w)) for s in starts})
    for a in starts:
        b_ = min(n, a + w)
        sub = req.at(a // bs, spec.mode.chain_at(req, data, a // bs))
        try:
            want = oracle.crypt(spec, key, sub.iv, data[a:b_].tobytes(), encrypt, sector_size=sector,
                                start_sector=sub.start_sector if sector else None)
        except oracle.Unavailable:
            raise DeviceError(f"no oracle for {spec.name}") from None
        want = np.frombuffer(want, np.uint8)
        if not np.array_equal(got[a:b_], want):
            return a + int(np.argmax(got[a:b_] != want)), "windows"
    return None, (f"{len(starts)} windows of {human(w)} (first, chunk seams, middle, last) vs "
                  f"{oracle.source(spec)}")


# ------------------------------------------------------------------------------- timers
def _timed(fn, policy: _Policy):
    """Warm-up (excluded), then repeats: (wall times, process CPU seconds over the repeats)."""
    t0 = time.perf_counter()
    fn()
    n = policy.repeats(time.perf_counter() - t0)
    times = []
    c0 = time.process_time()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times, time.process_time() - c0


def _bus(pipe, which: str, src: np.ndarray, dst: np.ndarray, dev_a, dev_b, chunk: int,
         pin_src, pin_dst):
    """Chunked pure copies on the pipeline's up/down queues (cut where a registration ends);
    returns a callable."""
    b = pipe.b
    n = src.nbytes
    ups = [r for lo in range(0, n, chunk) for r in pin_src.split(lo, min(n, lo + chunk))]
    downs = [r for lo in range(0, n, chunk) for r in pin_dst.split(lo, min(n, lo + chunk))]

    def run():
        t0 = time.perf_counter()
        up = down = None
        for i in range(max(len(ups), len(downs))):
            if which != "bus-d2h" and i < len(ups):
                lo, hi = ups[i]
                up = b.upload(dev_a, src[lo:hi], pipe.q_up)
            if which != "bus-h2d" and i < len(downs):
                lo, hi = downs[i]
                down = b.download(dst[lo:hi], dev_b, pipe.q_down)
        for ev in (up, down):
            if ev is not None:  # (the pipeline's own end-of-run wait: same latency for both)
                pipe._wait_last(ev, n, t0)
    return run


# ------------------------------------------------------------------------------- the suite
def run_pipeline(args, ctx: suites.Context) -> dict:
    quick = bool(getattr(args, "quick", False))
    from .methodology import parse_sizes

    sizes = parse_sizes(getattr(args, "sizes", None)) or (QUICK_SIZES if quick else DEFAULT_SIZES)
    fixed = getattr(args, "repeats", None)
    if fixed is not None and fixed < 1:
        raise InvalidArgument("--repeats must be at least 1")
    policy = _Policy(quick, fixed)
    ciphers = _ciphers(args, quick)
    directions = suites.directions(args)
    devices = _devices(ctx, getattr(args, "device", None))
    if not devices:
        raise DeviceError("no OpenCL or CUDA device to run the pipeline on (see `ciphergrid devices`)")
    copy_row = not getattr(args, "no_copy", False)
    sector = int(getattr(args, "sector_size", None) or 4096)
    add = ctx.add or ctx.records.append
    host_mem = int(ctx.host.get("memory_bytes") or 0)
    summaries = []
    for dev in devices:
        summaries.append(_run_device(args, ctx, dev, sizes, ciphers, directions, policy, copy_row,
                                     sector, add, host_mem, quick))
    return {
        "devices": [sysinfo.device_info(d) for d in devices],
        "options": {"ciphers": ciphers, "sizes": sizes, "devices": [d.spec for d in devices],
                    "quick": quick, "sector_size": sector, "pinned": bool(getattr(args, "pinned", False)),
                    "transfer": getattr(args, "transfer", "auto"), "goals": GOALS,
                    "policy": {"target_s": policy.target_s, "min_repeats": policy.min_repeats,
                               "max_repeats": policy.max_repeats, "fixed": policy.fixed},
                    "pipeline": summaries},
    }


def copy_strawman(api, dev, src: np.ndarray, dst: np.ndarray):
    """``copy()``: the copy-only strawman through the block ciphers' pipeline on ``dev`` (as this
    suite runs it: its tuned chunk size and depth), ``src`` into ``dst`` host -> host, checked
    once; raises where it cannot run (``dev`` has no pipeline) or copies wrong bytes."""
    from ..transfer import chunking
    from ..transfer.autotune import autotune
    from ..transfer.driver import Pipeline

    b = api.get_engine(dev.spec).backend
    st = chunking.resolve(b.info, None, None, nbytes=src.nbytes, tune=lambda: autotune(b))
    pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth, transfer="auto")
    pipe.copy(src, dst)
    if not np.array_equal(src, dst):
        raise DeviceError("the copy pipeline returned wrong bytes")
    return lambda: pipe.copy(src, dst)


def _record(dev, name: str, spec, encrypt: bool, size: int) -> Record:
    return Record(cipher=name, algorithm=spec.algorithm.name if spec else None,
                  key_bits=8 * spec.key_size if spec else None, mode=spec.mode.name if spec else None,
                  direction="encrypt" if encrypt else "decrypt", device=dev.spec,
                  device_name=dev.name, device_kind=dev.kind, runtime=dev.runtime, kind="e2e",
                  size=size, timestamp=_now(), verification={"status": "not-run"})


def _run_device(args, ctx, dev, sizes, ciphers, directions, policy, copy_row, sector, add,
                host_mem, quick) -> dict:
    from ..program import KeyedProgram

    eng = ctx.api.get_engine(dev.spec)
    b = eng.backend
    if getattr(args, "retune", False):
        ctx.log(f"tuning the pipeline on {dev.spec} ...")
        res = autotune(b, quick=quick or dev.kind != "gpu", log=ctx.log)
        ctx.log(f"tuned: chunk {human(res['chunk_bytes'])}, depth {res['depth']} "
                f"({res['gbps']:.2f} GB/s copy) -> {res.get('path')}")
    chunk_arg = parse_bytes(args.chunk_size) if getattr(args, "chunk_size", None) else None
    st = chunking.resolve(dev, chunk_arg, getattr(args, "depth", None), nbytes=max(sizes),
                          tune=lambda: autotune(b))
    pipe = Pipeline(b, chunk_bytes=st.chunk_bytes, depth=st.depth,
                    transfer=getattr(args, "transfer", "auto"))
    pinned_host = bool(getattr(args, "pinned", False))
    runnable = [s for s in sizes if not host_mem or 3 * s <= host_mem // 2]
    for s in sizes:
        if s not in runnable:
            for name in ["copy", *ciphers, *BUS]:
                rec = _record(dev, name, registry.lookup(name) if name in ciphers else None, True, s)
                rec.status, rec.error = "skipped", "three host buffers of this size exceed half the host memory"
                add(rec)
    if not runnable:
        return {}
    top = max(runnable)
    ctx.log(f"pipeline on {dev.spec} ({dev.name}): chunk {human(pipe.chunk_bytes)}, depth {pipe.depth}, "
            f"transfer {pipe.transfer}{' (pinned host arrays)' if pinned_host else ''}, "
            f"settings from {st.source}; sizes {human(min(runnable))} .. {human(top)}")
    # host arrays, allocated once and touched (a streaming program reuses its buffers)
    if pinned_host:
        src, dst = host_buffer(b, top), host_buffer(b, top)
    else:
        src, dst = np.empty(top, np.uint8), np.empty(top, np.uint8)
    block = np.frombuffer(np.random.default_rng(7).bytes(min(top, 16 * MiB)), np.uint8)
    for lo in range(0, top, block.nbytes):
        src[lo: lo + block.nbytes] = block[: top - lo]
    dst.fill(0)
    ref = np.empty(top, np.uint8)
    bus_src = bus_dst = None
    if pipe.transfer == "staging":  # the bus ceilings need page-locked memory: pinned buffers
        bus_src, bus_dst = host_buffer(b, top), host_buffer(b, top)
        bus_src[:] = src
    chunk = pipe.chunk_bytes
    # the bus ceilings: copies as large as the device buffers allow (up to 1 GiB each way)
    bus_piece = max(chunk, min(top, BUS_PIECE, (dev.memory or 8 * BUS_PIECE) // 8))
    dev_a, dev_b = b.alloc(bus_piece), b.alloc(bus_piece)
    rng = np.random.default_rng()
    keys = {}
    for name in ciphers:
        spec = registry.lookup(name)
        while True:
            key = rng.bytes(spec.key_len)
            if spec.mode.key_count == 1 or key[: spec.key_size] != key[spec.key_size:]:
                break
        iv = rng.bytes(spec.iv_len) if spec.iv_len and "sector_size" not in spec.mode.options else None
        keys[name] = (spec, key, iv)
    series: dict[str, dict[int, float]] = {}
    cpu: dict[str, dict[int, float]] = {}

    def keep(rec: Record, times, cpu_s, note: str, label: str, extra: dict | None = None):
        rec.timer = "wall-clock"
        rec.warmup = 1
        rec.set_times(times)
        rec.sm_count = dev.compute_units or None
        per_gb = cpu_s / (rec.size * len(times) / 1e9) if cpu_s is not None else None
        res = {"chunk_bytes": pipe.chunk_bytes, "depth": pipe.depth, "transfer": pipe.transfer,
               "pinned_host": pinned_host, **(extra or {})}
        if per_gb is not None:
            res["host_cpu_s_per_gb"] = round(per_gb, 5)
            note += f"; host CPU {per_gb:.4f} core-s/GB"
        rec.resources = res
        rec.note = note
        series.setdefault(label, {})[rec.size] = rec.gbps
        if per_gb is not None:
            cpu.setdefault(label, {})[rec.size] = per_gb
        add(rec)

    base_note = (f"pipeline chunk {human(pipe.chunk_bytes)}, depth {pipe.depth}, transfer "
                 f"{pipe.transfer}{', pinned host arrays' if pinned_host else ''}")
    total_rows = len(runnable) * (len(ciphers) * len(directions) + copy_row + len(BUS))
    with ctx.progress(total_rows) as prog:
        for size in runnable:
            s_in, s_out = src[:size], dst[:size]
            # -- the strawman
            if copy_row:
                rec = _record(dev, "copy", None, True, size)
                prog.row(f"copy {dev.spec} {human(size)}")
                try:
                    pipe.copy(s_in, s_out)
                    ok = np.array_equal(s_in, s_out)
                    rec.verification = {"status": "passed" if ok else "failed",
                                        "detail": "output == input"}
                    if not ok:
                        raise DeviceError("the copy pipeline returned wrong bytes")
                    times, c = _timed(lambda: pipe.copy(s_in, s_out), policy)
                    keep(rec, times, c, base_note + "; copy-only strawman kernel", "copy")
                except Exception as e:
                    _fail(rec, e, add, prog)
                prog.advance()
            # -- the ciphers
            for name in ciphers:
                spec, key, iv = keys[name]
                for enc in directions:
                    label = name if len(directions) == 1 else f"{name}-{'enc' if enc else 'dec'}"
                    rec = _record(dev, name, spec, enc, size)
                    prog.row(f"{label} {dev.spec} {human(size)}")
                    if size % spec.block_size:
                        rec.status, rec.error = "skipped", f"{size} is not whole blocks"
                        add(rec)
                        prog.advance()
                        continue
                    if not spec.mode.parallel(enc):
                        rec.status, rec.error = "skipped", (f"{spec.mode.name.upper()} encryption is "
                                                            "serial: no pipeline run")
                        add(rec)
                        prog.advance()
                        continue
                    try:
                        sec = sector if "sector_size" in spec.mode.options else None
                        p = make_request(spec, key, iv, enc, None, sec, 0 if sec else None)
                        layout = spec.mode.layout(p, size)
                        with KeyedProgram(b, p) as kp:
                            run = lambda: pipe.crypt(kp, s_in, s_out, layout)  # noqa: E731
                            run()
                            bad, what = _check(spec, p, key, iv, s_in, s_out, enc, sec,
                                               pipe.chunk_bytes, ref[:size])
                            rec.verification = {"status": "passed" if bad is None else "failed",
                                                "detail": what}
                            if bad is not None:
                                raise DeviceError(f"WRONG OUTPUT at byte {bad} (chunk "
                                                  f"{bad // pipe.chunk_bytes}), not timed")
                            times, c = _timed(run, policy)
                        note = base_note + (f"; XTS sector {sec}" if sec else "")
                        keep(rec, times, c, note, label)
                    except Exception as e:
                        _fail(rec, e, add, prog)
                    prog.advance()
            # -- the bus
            if bus_src is not None:
                h_src, h_dst = bus_src[:size], bus_dst[:size]
            else:
                h_src, h_dst = s_in, s_out
            for name in BUS:
                rec = _record(dev, name, None, True, size)
                prog.row(f"{name} {dev.spec} {human(size)}")
                rec.verification = {"status": "not-applicable", "detail": "pure copies"}
                try:
                    ps, pd = pinned(b, h_src), pinned(b, h_dst)
                    with ps, pd:
                        times, _ = _timed(_bus(pipe, name, h_src, h_dst, dev_a, dev_b, bus_piece,
                                               ps, pd), policy)
                    what = {"bus-h2d": "host->device alone", "bus-d2h": "device->host alone",
                            "bus-duplex": "both directions at once on two queues; rate = bytes "
                                          "EACH way per second (bus total = 2x)"}[name]
                    keep(rec, times, None, f"{what}; page-locked host memory, copies of "
                                           f"{human(min(size, bus_piece))}", name)
                except Exception as e:
                    _fail(rec, e, add, prog)
                prog.advance()
    summary = _summary(dev, pipe, st, series, cpu, ciphers, directions, runnable)
    _print_table(summary, series, cpu, runnable)
    return summary


def _fail(rec: Record, e: BaseException, add, prog) -> None:
    rec.status = "failed"
    rec.error = f"{type(e).__name__}: {e}" if not isinstance(e, Error) else str(e)
    if rec.verification.get("status") == "passed":
        rec.verification = {"status": "not-run"}
    rec.times_s, rec.median_s = [], None
    add(rec)
    prog.log(f"FAILED  {rec.cipher} {rec.device} {human(rec.size)}: {rec.error}")


def plateau(points: dict[int, float]) -> tuple[float | None, int | None]:
    """(best rate, smallest size reaching 90% of it)."""
    if not points:
        return None, None
    best = max(points.values())
    size90 = min((s for s, v in points.items() if v >= 0.9 * best), default=None)
    return best, size90


def _summary(dev, pipe, st, series, cpu, ciphers, directions, sizes) -> dict:
    out = {"device": dev.spec, "name": dev.name, "chunk_bytes": pipe.chunk_bytes,
           "depth": pipe.depth, "transfer": pipe.transfer, "settings_source": st.source,
           "series": {}}
    for label, pts in series.items():
        best, s90 = plateau(pts)
        c = cpu.get(label, {})
        big = max(c) if c else None
        out["series"][label] = {"plateau_gbps": best, "size_90": s90,
                                "cpu_s_per_gb_at_largest": c.get(big) if big else None}
    dup = out["series"].get("bus-duplex", {}).get("plateau_gbps")
    cp_ = out["series"].get("copy", {}).get("plateau_gbps")
    goals = {}
    if dup and cp_:
        goals["copy_vs_duplex"] = round(cp_ / dup, 4)
    for label in series:
        if label in ("copy", *BUS):
            continue
        v = out["series"][label]["plateau_gbps"]
        if v and cp_:
            goals[f"{label}_vs_copy"] = round(v / cp_, 4)
        c = out["series"][label]["cpu_s_per_gb_at_largest"]
        if c is not None:
            goals[f"{label}_cpu_s_per_gb"] = round(c, 5)
    out["goals"] = goals
    return out


def _print_table(summary: dict, series, cpu, sizes) -> None:
    labels = [l for l in series if l not in BUS and l != "copy"]
    cols = labels + (["copy"] if "copy" in series else []) + [b for b in BUS if b in series]
    print(f"\npipeline on {summary['device']} ({summary['name']}): chunk "
          f"{human(summary['chunk_bytes'])}, depth {summary['depth']}, transfer "
          f"{summary['transfer']} (settings: {summary['settings_source']})")
    head = ["size"] + [c.replace("bus-", "") + " GB/s" for c in cols] + \
        [f"cpu s/GB {c}" for c in labels + (["copy"] if "copy" in cpu else [])]
    rows = []
    for s in sizes:
        r = [human(s)]
        for c in cols:
            v = series.get(c, {}).get(s)
            r.append(f"{v:.2f}" if v is not None else "-")
        for c in labels + (["copy"] if "copy" in cpu else []):
            v = cpu.get(c, {}).get(s)
            r.append(f"{v:.4f}" if v is not None else "-")
        rows.append(r)
    plat = ["plateau"] + [f"{summary['series'][c]['plateau_gbps']:.2f}" if c in summary["series"]
                          and summary["series"][c]["plateau_gbps"] else "-" for c in cols]
    s90 = ["90% at"] + [human(summary["series"][c]["size_90"]) if c in summary["series"]
                        and summary["series"][c]["size_90"] else "-" for c in cols]
    rows += [plat + [""] * (len(head) - len(plat)), s90 + [""] * (len(head) - len(s90))]
    w = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).rjust(w[i]) for i, c in enumerate(r)))
    g = summary["goals"]
    parts = []
    if "copy_vs_duplex" in g:
        parts.append(f"copy/duplex {g['copy_vs_duplex']:.3f} (goal >= {GOALS['copy_vs_duplex']})")
    for k, v in g.items():
        if k.endswith("_vs_copy"):
            parts.append(f"{k[:-8]}/copy {v:.3f} (goal >= {GOALS['cipher_vs_copy']})")
        elif k.endswith("_cpu_s_per_gb"):
            parts.append(f"{k[:-13]} CPU {v:.4f} core-s/GB (goal <= {GOALS['cpu_s_per_gb']})")
    if parts:
        print("goals: " + "; ".join(parts))
    print("(duplex = bytes each way per second while both directions run; the bus total is twice that)\n",
          flush=True)


suites.register("pipeline", run_pipeline, add_arguments=add_arguments,
                help="host-to-host pipeline throughput vs the copy strawman and the bus ceilings")
