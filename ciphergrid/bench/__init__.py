"""``ciphergrid bench [suite]`` and ``ciphergrid report RESULTS.json``.

The CLI wires these in::

    p = sub.add_parser("bench");  bench.add_arguments(p);         -> bench.main(args)
    p = sub.add_parser("report"); bench.add_report_arguments(p);  -> bench.report_main(args)

``main`` returns 0 when every row was verified and timed (or skipped for a stated reason), 1 when a
row failed (wrong output or a device error; the row carries no timing), 130 when interrupted (the
rows measured so far are still written).  Usage errors raise ciphergrid.errors.Error subclasses.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from datetime import datetime, timezone

from . import preflight, records, suites, sysinfo
from .progress import Progress
from .records import Record, Results, load, save

__all__ = ["add_arguments", "main", "add_report_arguments", "report_main",
           "Record", "Results", "load", "save"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    names = suites.names()
    parser.add_argument("suite", nargs="?", default=suites.DEFAULT, choices=names, metavar="SUITE",
                        help=f"what to benchmark: {', '.join(names)} (default: {suites.DEFAULT})")
    parser.add_argument("--cipher", action="append", metavar="NAME",
                        help="cipher name or prefix (aes-128-ctr, aes-256, aes); repeatable, "
                             "comma-separated; default: all (--quick: aes-128 ctr and ecb)")
    parser.add_argument("--mode", action="append", metavar="MODE",
                        help="keep only these modes (ecb, cbc, ctr, xts); repeatable, comma-separated")
    parser.add_argument("--device", action="append", metavar="SPEC",
                        help="device spec (cuda:0, opencl:0:0, native), gpu, cpu, all, or openssl "
                             "(the baseline only); repeatable; default: all")
    parser.add_argument("--sizes", metavar="LIST",
                        help="comma-separated sizes, binary suffixes allowed (16,1Ki,64Ki,1Mi,1Gi); "
                             "default 16,64,256,1024,8192,16384,64Ki,1Mi,16Mi,256Mi,1Gi")
    parser.add_argument("--direction", choices=("encrypt", "decrypt", "both"), default="encrypt",
                        help="the directions timed (the aead suite: its API rows; its kernel rows "
                             "encrypt)")
    parser.add_argument("--quick", action="store_true",
                        help="CI smoke run: sizes 16,1Ki,16Ki,1Mi, aes-128-ctr/ecb, few repeats")
    parser.add_argument("--repeats", type=int, metavar="N",
                        help="exactly N timed repeats per row (default: adapted to the size)")
    parser.add_argument("--no-openssl", action="store_true", help="skip the OpenSSL baseline")
    parser.add_argument("--no-copy", action="store_true", help="skip the copy-only strawman kernel")
    parser.add_argument("--json", metavar="PATH", help="write the results here (schema: "
                                                       "docs/bench-schema.md)")
    for s in suites._SUITES.values():
        if s.add_arguments is not None:
            s.add_arguments(parser)
    parser.set_defaults(_bench_parser=parser)


def command_line(args: argparse.Namespace) -> str:
    """The canonical command that reproduces this run (from the parsed options)."""
    parts = ["ciphergrid", "bench", getattr(args, "suite", suites.DEFAULT)]
    parser = getattr(args, "_bench_parser", None)
    for a in (parser._actions if parser is not None else []):
        if not a.option_strings or a.dest == "help":
            continue
        v = getattr(args, a.dest, None)
        if v is None or v is False or v == a.default:
            continue
        flag = a.option_strings[-1] if a.option_strings[-1].startswith("--") else a.option_strings[0]
        if v is True:
            parts.append(flag)
        else:
            for item in v if isinstance(v, list) else [v]:
                parts += [flag, str(item)]
    return shlex.join(parts)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


#: seconds between checkpoints of the --json file while a suite runs
CHECKPOINT_S = 5.0


def main(args: argparse.Namespace, *, api=None, host: dict | None = None) -> int:
    """Run the chosen suite; write --json; print a summary on stdout; return the exit code.
    The library's calls run in this process (its engines are what the records name), also
    where ``CIPHERGRID_SERVICE`` names a service; ``bench service`` connects to one itself."""
    from ..service import in_process

    with in_process():
        return _main(args, api, host)


def _main(args: argparse.Namespace, api, host: dict | None) -> int:
    from . import methodology

    suite = suites.get(getattr(args, "suite", None) or suites.DEFAULT)
    api = api or methodology.Api()
    preflight.check_devices(api, args)   # (before anything starts: a device not present is exit 2)
    announce(suite, args, api)
    started, t0 = _now(), time.perf_counter()
    host = host if host is not None else sysinfo.collect()
    path = getattr(args, "json", None)
    recs: list[Record] = []
    parts: dict = {}
    state = {"interrupted": False, "last": time.monotonic()}

    def results(complete: bool) -> Results:
        counts = {s: sum(r.status == s for r in recs) for s in records.STATUSES}
        failed = counts["failed"] + int(parts.get("failed", 0))  # (rows a suite keeps itself)
        code = 130 if state["interrupted"] else (1 if failed else 0)
        run = {
            "suite": suite.name, "command": command_line(args), "argv": list(sys.argv),
            "date": started, "finished": _now(), "duration_s": round(time.perf_counter() - t0, 3),
            "complete": complete, "interrupted": state["interrupted"], "exit_code": code,
            "counts": counts, "host": host, "definitions": definitions(),
            "devices": parts.get("devices", ctx.header.get("devices", [])),
            "options": parts.get("options", ctx.header.get("options", {})),
        }
        return Results(run=run, records=list(recs))

    def add(rec: Record) -> None:
        recs.append(rec)
        if path and time.monotonic() - state["last"] >= CHECKPOINT_S:
            save(results(complete=False), path)  # a crash keeps what was measured
            state["last"] = time.monotonic()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    ctx = suites.Context(api=api, records=recs, host=host,
                         progress=lambda n: Progress(n, name=f"bench {suite.name}"), log=log, add=add)
    from ..request import weak_use_allowed

    try:
        # random keys of every cipher, TDEA included: measured, not refused, pyca's deprecation unsaid
        with weak_use_allowed(), preflight.tdea_warnings_quiet():
            parts = suite.run(args, ctx) or {}
    except KeyboardInterrupt:
        state["interrupted"] = True
        log("interrupted" + (f" after {len(recs)} rows" if recs else ""))
    final = results(complete=not state["interrupted"])
    if recs or not (parts or state["interrupted"]):  # (a suite keeping its own files said)
        print_summary(final, sys.stdout)
    if path:
        save(final, path)
        print(f"results written to {path}", file=sys.stdout)
    failed = final.run["counts"]["failed"]
    if failed:
        log(f"{failed} row(s) FAILED: see above (no timing was recorded for them)")
    return final.run["exit_code"]


def announce(suite, args, api, out=None) -> str:
    """Say before the suite starts what it will do and roughly how long (its estimate from the
    sizes and a first measured rate), on stderr; returns the line."""
    out = out if out is not None else sys.stderr
    line = f"bench {suite.name}: "
    if suite.estimate is not None:
        import warnings

        from ..request import weak_use_allowed

        rate = preflight.host_rate()
        with weak_use_allowed(), warnings.catch_warnings():   # (its plan: said when it runs)
            warnings.simplefilter("ignore")
            what, seconds = suite.estimate(args, rate, api)
        line += (f"{what}; {preflight.duration_text(seconds)} (estimated from its sizes and "
                 f"{rate / 1e9:.2f} GB/s measured on one core; the time left is said as it runs)")
    else:
        line += "the time left is said once its first step ran"
    print(line, file=out, flush=True)
    return line


def definitions() -> dict:
    return {
        "units": {"size": "bytes", "times_s": "seconds per operation of `size` bytes",
                  "throughput_bps": "bytes/s", "gbps": "GB/s, 1 GB = 1e9 bytes",
                  "mb_per_j": "MB/J, 1 MB = 1e6 bytes", "energy_j": "J", "avg_power_w": "W",
                  "gbps_per_sm_ghz": "GB/s per SM (compute unit) per GHz of SM clock"},
        "area": records.AREA_DEFINITION,
        "area_unit": records.AREA_UNIT,
        "area_time": records.AREA_TIME_DEFINITION,
        "area_time_unit": records.AREA_TIME_UNIT,
        "throughput_per_area_unit": "MB/s per SM",
        "kernel": "device-resident data, timed by device events (bench.kernels: time_kernel)",
        "e2e": "host array to host array through ciphergrid.encrypt/decrypt, wall clock",
        "openssl": "ciphergrid.bench.evp_speed.speed on 1 and on all usable cores",
        "statistic": "median of the repeats, with min and max; warm-up runs excluded",
        "energy": "energy counter (or integrated power samples) over the timed window; "
                  "mb_per_j = throughput / (energy / window); null when not measured",
    }


#: the columns of the summary table ("what" only where a suite names its rows' path or phase);
#: a row that did not run says why in place of its figures
SUMMARY_HEAD = ("cipher", "dir", "what", "device", "kind", "size", "GB/s", "min-max", "MB/J")


def print_summary(results: Results, out) -> None:
    """One row per record under a header naming the columns: dir the direction, what the path or
    phase the suite names (its rows' labels), GB/s the median of the repeats, min-max their
    range, MB/J where energy was measured."""
    recs = results.records
    if not recs:
        print("no rows", file=out)
        return
    named = any(r.implementation for r in recs)
    head = [h for h in SUMMARY_HEAD[:6] if named or h != "what"]
    rows, why = [], []
    for r in recs:
        d = {"encrypt": "enc", "decrypt": "dec"}.get(r.direction, r.direction or "-")
        rows.append((r.cipher, d) + ((r.implementation or "-",) if named else ())
                    + (r.device, r.kind, preflight.size_text(r.size)))
        if r.status == "ok":
            why.append((f"{r.gbps:.4g}", f"{r.throughput_min_bps / 1e9:.3g}-"
                                         f"{r.throughput_max_bps / 1e9:.3g}",
                        f"{r.mb_per_j:.3g}" if r.mb_per_j else "-"))
        else:
            why.append(f"{r.status.upper()}: {r.error}")
    k = len(head)
    figures = [w for w in why if isinstance(w, tuple)]
    width = [max(len(x[i]) for x in rows + [head]) for i in range(k)]
    width += [max(len(x[i]) for x in figures + [SUMMARY_HEAD[6:]]) for i in range(3)]
    # numbers right-aligned, names left-aligned; MB/J only when some row measured energy
    cols = 3 if any(w[2] != "-" for w in figures) else 2

    def line(names, rest) -> str:
        left = "  ".join(c.ljust(width[i]) for i, c in enumerate(names))
        if isinstance(rest, str):
            return f"{left}  {rest}"
        return (left + "  " + "  ".join(c.rjust(width[k + i]) for i, c in enumerate(rest[:cols]))
                ).rstrip()

    print(line(head, SUMMARY_HEAD[6:]), file=out)
    for names, rest in zip(rows, why):
        print(line(names, rest), file=out)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS.json", help="output of ciphergrid bench --json")
    parser.add_argument("--out", metavar="DIR",
                        help="directory for report.md and the PNG plots (default: RESULTS-report)")


def report_main(args: argparse.Namespace) -> int:
    from . import report, study_report

    if study_report.is_study(args.results):  # (bench study's merged file)
        doc = study_report.load_study(args.results)
        out = args.out or report.default_out_dir(args.results)
        for p in study_report.write(doc, out):
            print(p)
        return 0
    results = load(args.results)
    out = args.out or report.default_out_dir(args.results)
    written = report.write_report(results, out)
    for p in written:
        print(p)
    return 0
