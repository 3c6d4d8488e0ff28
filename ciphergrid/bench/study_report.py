"""The study's JSON, report and plots (``ciphergrid bench study``; docs/study.md).

:func:`build` merges the part files of a study folder into ``study.json`` (schema
``ciphergrid.study``: each part's ``ciphergrid.bench`` document under ``parts``), then writes
``study.md`` and the PNGs from that file alone: every number of the report is either a row of a
part or derived here from rows (:func:`derive`: the rankings and their coefficients, the energy
gains and their means), so ``ciphergrid report study.json`` regenerates it anywhere.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import defaultdict

from .. import registry
from .records import Record, Results, load
from .report import human_size

SCHEMA = "ciphergrid.study"
SCHEMA_VERSION = 1
PART_ORDER = ("practices", "ciphers", "energy")
#: seed 000 (Barenghi et al.): the FPGA's energy gain over the CPU, geometric mean over the
#: ciphers without CPU instructions (the text beside its Table 4; arithmetic mean 79x)
SEED_GAIN_GEOMEAN = 22.78
SEED_GAIN_MEAN = 79.0


# ------------------------------------------------------------------------- files
def merge(folder: str) -> dict:
    """The study document of ``folder``'s part files (the parts present; none: no parts)."""
    parts = {}
    for name in PART_ORDER:
        path = os.path.join(folder, f"part-{name}.json")
        if os.path.exists(path):
            parts[name] = load(path).to_dict()
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "parts": parts}


def load_study(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != SCHEMA or doc.get("schema_version") != SCHEMA_VERSION:
        from ..errors import InvalidArgument

        raise InvalidArgument(f"{path}: not a {SCHEMA} v{SCHEMA_VERSION} file")
    return doc


def is_study(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(200)
    except OSError:
        return False
    return f'"{SCHEMA}"' in head


def _results(doc: dict) -> dict[str, Results]:
    return {name: Results(run=p["run"], records=[Record.from_dict(r) for r in p["records"]])
            for name, p in doc["parts"].items()}


def build(folder: str) -> list[str]:
    """Merge ``folder``'s parts into study.json; write study.md and the plots; the paths."""
    doc = merge(folder)
    path = os.path.join(folder, "study.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
    return [path] + write(doc, folder)


def write(doc: dict, out: str) -> list[str]:
    """study.md and the PNGs of a study document into ``out``; the paths written."""
    from .report import pyplot

    pyplot()   # (missing: the error before any file)
    os.makedirs(out, exist_ok=True)
    parts = _results(doc)
    derived = derive(parts)
    plots = make_plots(parts, derived, out)
    md = render(parts, derived, plots)
    path = os.path.join(out, "study.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(md)
    return [path] + [os.path.join(out, p) for p in plots.values()]


# ------------------------------------------------------------------------- derived figures
def _ok(res: Results | None):
    return [r for r in (res.records if res else []) if r.status == "ok"]


def _block(r: Record) -> bool:
    return r.messages is None and r.cipher != "copy"


def _mbps(r: Record | None) -> float | None:
    return r.throughput_bps / 1e6 if r is not None and r.throughput_bps else None


def _pairs(res: Results | None) -> dict[str, list[dict]]:
    """Per device: each block cipher's reference and fast kernel rows at the largest size both
    have."""
    rows: dict[tuple, dict[str, Record]] = defaultdict(dict)
    for r in _ok(res):
        if r.kind == "kernel" and _block(r) and r.implementation:
            rows[(r.device, r.cipher, r.size)][r.implementation] = r
    out: dict[str, dict[str, tuple]] = defaultdict(dict)
    for (dev, cipher, size), impls in rows.items():
        fast = impls.get("fast")
        ref = next((v for k, v in impls.items() if k != "fast"), None)
        if fast is None or ref is None:
            continue
        if cipher not in out[dev] or size > out[dev][cipher][0].size:
            out[dev][cipher] = (ref, fast)
    return {dev: [_pair_row(ref, fast) for ref, fast in by.values()] for dev, by in out.items()}


def technique(cipher: str, impl: str) -> str:
    """What a kernel is made of: "bitsliced" (32 blocks per work-item, the S-boxes as logic:
    no table) or "tables" (S-box or T-table lookups; ARX ciphers' plain kernels too)."""
    im = registry.lookup(cipher).algorithm.implementations.get(impl)
    return "bitsliced" if im is not None and im.batch >= 32 else "tables/plain"


def _pair_row(ref: Record, fast: Record) -> dict:
    row = {"algorithm": ref.algorithm, "cipher": ref.cipher, "size": ref.size,
           "fast_technique": technique(fast.cipher, "fast"),
           "reference_impl": ref.implementation, "reference_mbps": _mbps(ref),
           "optimized_mbps": _mbps(fast), "reference_per_area": ref.throughput_per_area,
           "optimized_per_area": fast.throughput_per_area}
    row["ratio"] = row["optimized_mbps"] / row["reference_mbps"]
    if ref.throughput_per_area and fast.throughput_per_area:
        row["per_area_ratio"] = fast.throughput_per_area / ref.throughput_per_area
    return row


def _rank(values: list[float]) -> list[float]:
    """1 = the largest; ties share their mean rank (scipy.stats.rankdata of the negatives)."""
    from scipy.stats import rankdata

    return [float(x) for x in rankdata([-v for v in values])]


def _coefficients(a: list[float], b: list[float]) -> dict:
    from scipy.stats import kendalltau, spearmanr

    if len(a) < 3:
        return {"n": len(a), "note": "fewer than 3 algorithms: no coefficient"}
    s, k = spearmanr(a, b), kendalltau(a, b)
    return {"n": len(a), "spearman": float(s.statistic), "spearman_p": float(s.pvalue),
            "kendall": float(k.statistic), "kendall_p": float(k.pvalue)}


def ranks(res: Results | None) -> list[dict]:
    """Seed 004's question per device: do the reference and the optimized kernels rank the
    algorithms alike, by throughput and (where the runtime reports occupancy) per area?"""
    out = []
    devices = {r.device: r for r in _ok(res)}
    for dev, rows in sorted(_pairs(res).items()):
        rows.sort(key=lambda x: -x["optimized_mbps"])
        entry = {"device": dev, "device_name": devices[dev].device_name,
                 "runtime": devices[dev].runtime, "rows": rows}
        for metric, ref_key, opt_key, ratio in (
                ("throughput", "reference_mbps", "optimized_mbps", "ratio"),
                ("per_area", "reference_per_area", "optimized_per_area", "per_area_ratio")):
            if not rows or not all(x.get(ref_key) and x.get(opt_key) for x in rows):
                entry[metric] = {"note": "not reported on this device (no occupancy: no area)"
                                 if metric == "per_area" else "no rows"}
                continue
            a, b = [x[ref_key] for x in rows], [x[opt_key] for x in rows]
            ra, rb = _rank(a), _rank(b)
            for x, i, j in zip(rows, ra, rb):
                x[f"{metric}_rank_reference"], x[f"{metric}_rank_optimized"] = i, j
            med = statistics.median(x[ratio] for x in rows)
            moved = [f"{x['algorithm']}: #{i:g} as reference, #{j:g} optimized "
                     f"(optimized/reference {x[ratio]:.2f}x, median {med:.2f}x)"
                     for x, i, j in zip(rows, ra, rb) if i != j]
            groups = {t: statistics.median(x[ratio] for x in rows if x["fast_technique"] == t)
                      for t in sorted({x["fast_technique"] for x in rows})}
            entry[metric] = dict(_coefficients(a, b), median_ratio=med, disagreements=moved,
                                 median_ratio_by_technique=groups)
        out.append(entry)
    return out


def energy(res: Results | None) -> dict:
    """Seed 000 Table 4: per cipher the GPU's MB/J (board) against the CPU's (packages) on
    every core, and the gains' means over the ciphers without CPU instructions."""
    by: dict[str, dict] = defaultdict(lambda: {"cpu": []})
    for r in _ok(res):   # (grouped by the cipher without its mode: OpenSSL's ECB stands for CTR)
        if not _block(r):
            continue
        d = by[r.cipher.rsplit("-", 1)[0]]
        if r.device_kind == "gpu":
            d["gpu_" + r.kind], d["name"] = r, r.cipher
        else:
            d["cpu"].append(r)
    rows, gains, without = [], [], []
    for base, d in by.items():
        cipher = d.get("name") or d["cpu"][0].cipher
        spec = registry.lookup(cipher)
        e2e, ker = d.get("gpu_e2e"), d.get("gpu_kernel")
        cpu = max(d["cpu"], key=lambda r: r.throughput_bps, default=None)   # the CPU's best
        row = {"cipher": cipher, "algorithm": spec.algorithm.name,
               "cpu_instructions": spec.algorithm.cpu_flag,
               "gpu_device": (e2e or ker).device_name if (e2e or ker) else None,
               "gpu_e2e_gbps": e2e.gbps if e2e else None, "gpu_e2e_mb_per_j": e2e.mb_per_j if e2e else None,
               "gpu_e2e_w": e2e.avg_power_w if e2e else None,
               "gpu_kernel_gbps": ker.gbps if ker else None,
               "gpu_kernel_mb_per_j": ker.mb_per_j if ker else None,
               "cpu_side": _cpu_side(cpu), "cpu_candidates": [_cpu_side(r) + f": {r.gbps:.4g} GB/s"
                                                              for r in d["cpu"]],
               "cpu_gbps": cpu.gbps if cpu else None, "cpu_mb_per_j": cpu.mb_per_j if cpu else None,
               "cpu_w": cpu.avg_power_w if cpu else None,
               "cpu_energy_note": (cpu.energy_note if cpu else None)}
        if row["gpu_e2e_gbps"] and row["cpu_gbps"]:
            row["throughput_gain"] = row["gpu_e2e_gbps"] / row["cpu_gbps"]
        if row["gpu_e2e_mb_per_j"] and row["cpu_mb_per_j"]:
            row["energy_gain"] = row["gpu_e2e_mb_per_j"] / row["cpu_mb_per_j"]
            if not spec.algorithm.cpu_flag:
                gains.append(row["energy_gain"])
        if not spec.algorithm.cpu_flag:
            without.append(cipher)
        rows.append(row)
    summary = {"ciphers_without_cpu_instructions": without, "measured": len(gains),
               "goal_geomean": SEED_GAIN_GEOMEAN}
    if gains:
        summary["geomean_gain"] = math.exp(sum(math.log(g) for g in gains) / len(gains))
        summary["mean_gain"] = sum(gains) / len(gains)
        complete = len(gains) == len(without)
        summary["verdict"] = ("met" if summary["geomean_gain"] >= SEED_GAIN_GEOMEAN else "missed") + (
            "" if complete else f" (over {len(gains)} of {len(without)} ciphers)")
    else:
        notes = {r["cpu_energy_note"] for r in rows if r["cpu_energy_note"]}
        summary["verdict"] = "not measurable here" + (f": {'; '.join(sorted(notes))}" if notes else "")
        tg = [r["throughput_gain"] for r in rows if r.get("throughput_gain") and not r["cpu_instructions"]]
        if tg:
            summary["geomean_throughput_gain"] = math.exp(sum(math.log(g) for g in tg) / len(tg))
    return {"rows": rows, "summary": summary}


def _cpu_side(r: Record | None) -> str | None:
    if r is None:
        return None
    if r.kind.startswith("openssl"):
        return f"OpenSSL {r.cipher}, {r.threads} threads, {human_size(r.size)} buffers"
    return f"PoCL {r.implementation} ({r.device})"


def derive(parts: dict[str, Results]) -> dict:
    return {"ranks": ranks(parts.get("ciphers")), "energy": energy(parts.get("energy"))}


# ------------------------------------------------------------------------- markdown
def _f(x, fmt="{:.3g}") -> str:
    return "–" if x is None else fmt.format(x)


def _mb(x) -> str:
    """MB/s with four significant figures at most, thousands whole."""
    return "–" if x is None else f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
            + ["| " + " | ".join(r) + " |" for r in rows] + [""])


def _res(r: Record, key: str):
    return (r.resources or {}).get(key)


def _devices(parts: dict[str, Results]) -> list[str]:
    seen = {}
    for res in parts.values():
        for d in res.run.get("devices", []):
            seen.setdefault(d["spec"], d)
    return [f"`{s}` {d.get('name')} ({d.get('compute_units')} compute units)" for s, d in seen.items()]


def _header(parts: dict[str, Results]) -> list[str]:
    lines = ["# ciphergrid study: the seeds' tables on this host", ""]
    if not parts:
        return lines + ["No part has been measured: run `ciphergrid bench study`.", ""]
    host = next(iter(parts.values())).run.get("host", {})
    lines += [f"- Host: {host.get('cpu_model')}, {host.get('cpu_usable')} usable cores; "
              f"{(host.get('openssl') or {}).get('cli') or 'no openssl command'}; "
              f"RAPL: {host.get('rapl')}",
              f"- Devices: {'; '.join(_devices(parts))}", "- Parts:"]
    for name, res in parts.items():
        run = res.run
        c = run.get("counts", {})
        lines.append(f"  - `{name}`: {run.get('date')}, {run.get('duration_s', 0):.0f} s, "
                     f"{c.get('ok', 0)} rows ok, {c.get('failed', 0)} failed, {c.get('skipped', 0)} "
                     f"skipped{'' if run.get('complete') else ' (INCOMPLETE: interrupted)'}; "
                     f"`{run.get('command')}`")
    lines += ["", "Every output was checked before it was timed (the oracle: pyca/cryptography, or "
              "the cipher's own reference and its known answers). MB/s: 1 MB = 10^6 bytes, the "
              "median of the repeats. Area = SMs × occupancy (docs/bench-schema.md); A×T in "
              "SM·µs/MB, lower is better.", ""]
    return lines


def _problems(parts: dict[str, Results]) -> list[str]:
    bad = [(n, r) for n, res in parts.items() for r in res.records if r.status != "ok"]
    if not bad:
        return []
    lines = ["## Rows not measured", ""]
    for n, r in bad:
        lines.append(f"- {n}: {r.cipher} [{r.implementation or 'default'}] {r.kind} on {r.device}, "
                     f"{human_size(r.size)}: {r.status}: {r.error}")
    return lines + [""]


def _practices(res: Results | None, plots: dict) -> list[str]:
    if res is None:
        return []
    lines = ["## 1. Practices (seed 000, Table 2): AES-128-CTR one step at a time", "",
             "Each implementation adds one practice to the one above it (`ciphergrid/algorithms/"
             "aes.py`); `alt-*` are steps that did not pay, `fast` the library's default, `ct-c` "
             "and `ct` the bitsliced constant-time kernels. The last rows are the ceilings: the "
             "copy-only kernel (device memory) and the copy-only kernel host → host through the "
             "pipeline the e2e rows take (on a GPU: the bus, both ways at once). \"vs the step "
             "before\": the `+` steps, each against the one before it.", ""]
    by: dict[str, list[Record]] = defaultdict(list)
    for r in res.records:
        by[r.device].append(r)
    for dev, recs in by.items():
        lines += [f"### {recs[0].device_name} (`{dev}`), {human_size(recs[0].size)} per call", ""]
        rows, prev, base = [], None, None
        for r in recs:
            name = r.implementation if r.cipher != "copy" else (
                "copy kernel (ceiling)" if r.kind == "kernel" else "copy host → host (ceiling)")
            if r.status != "ok":
                rows.append([name, r.status.upper(), "", "", "", "", "", "", "", (r.error or "")[:80]])
                continue
            mbps = _mbps(r)
            chain = r.cipher != "copy" and (r.implementation or "").startswith("+")
            step = mbps / prev if chain and prev else None
            base = base or mbps
            rows.append([name, _mb(mbps), _f(r.gbps_per_sm_ghz), _f(_res(r, "registers_per_item"), "{}"),
                         _f(_res(r, "occupancy"), "{:.2f}"), _f(r.area, "{:.1f}"), _f(r.area_time, "{:.4g}"),
                         _f(mbps / base if r.cipher != "copy" else None, "{:.2f}x"),
                         _f(step, "{:.2f}x"), ""])
            if r.cipher != "copy" and (chain or prev is None):
                prev = mbps
        lines += _table(["step", "MB/s", "GB/s per SM·GHz", "regs", "occupancy", "area (SM)",
                         "A×T", "vs baseline", "vs the step before", "note"], rows)
        if plots.get(f"practices {dev}"):
            lines += [f"![practices on {dev}]({plots[f'practices {dev}']})", ""]
    return lines


def _ciphers(res: Results | None, plots: dict) -> list[str]:
    if res is None:
        return []
    lines = ["## 2. All ciphers (seed 000, Table 3): reference and optimized, kernel and host → host",
             "", "Each ISO block cipher in CTR, its plain `reference` kernel (AES: `baseline`) and "
             "its `fast` one, device-resident (kernel, device events) and host → host through the "
             "public API (`ciphergrid.encrypt(..., implementation=, out=)`, wall clock).", ""]
    rows: dict[tuple, dict] = defaultdict(dict)
    for r in _ok(res):
        if _block(r):
            rows[(r.device, r.cipher, r.implementation, r.size)][r.kind] = r
    table_size: dict[str, int] = {}   # (the reference rows are at the table's size only)
    for (dev, cipher, impl, size) in rows:
        if impl != "fast":
            table_size[dev] = max(table_size.get(dev, 0), size)
    for dev in sorted({k[0] for k in rows}):
        size = table_size.get(dev) or max(k[3] for k in rows if k[0] == dev)
        any_rec = next(v for k, v in rows.items() if k[0] == dev)
        name = next(iter(any_rec.values())).device_name
        body = []
        for (d, cipher, impl, s), kinds in rows.items():
            if d != dev or s != size:
                continue
            k, e = kinds.get("kernel"), kinds.get("e2e")
            body.append([cipher, impl or "fast", _mb(_mbps(k)), _f(k.gbps_per_sm_ghz if k else None),
                         _f(_res(k, "registers_per_item") if k else None, "{}"),
                         _f(_res(k, "occupancy") if k else None, "{:.2f}"),
                         _f(k.area_time if k else None, "{:.4g}"), _mb(_mbps(e))])
        lines += [f"### {name} (`{dev}`), {human_size(size)} per call", ""]
        lines += _table(["cipher", "implementation", "kernel MB/s", "GB/s per SM·GHz", "regs",
                         "occupancy", "A×T", "host → host MB/s"], body)
        if plots.get(f"sizes {dev}"):
            lines += [f"![throughput against size on {dev}]({plots[f'sizes {dev}']})", ""]
    aead = [r for r in _ok(res) if r.messages]
    if aead:
        lines += ["### AEADs: batches of messages (the sealed-file shape)", ""]
        body = [[r.cipher, r.implementation or "(the API's)", r.kind, r.device,
                 f"{r.messages} × {human_size(r.size // r.messages)}", _mb(_mbps(r)),
                 _f(r.gbps_per_sm_ghz)] for r in aead]
        lines += _table(["AEAD", "implementation", "kind", "device", "messages", "MB/s",
                         "GB/s per SM·GHz"], body)
    return lines


def _energy(res: Results | None, derived: dict, plots: dict) -> list[str]:
    if res is None:
        return []
    e = derived["energy"]
    s = e["summary"]
    lines = ["## 3. Energy (seed 000, Table 4): the GPU against every core of the CPU", "",
             "Boundaries: the GPU's figures are its **board** (NVML's energy counter over the timed "
             "window; host → host includes the board's bus interface, not the host's CPU or "
             "memory); the CPU's are its **packages** (RAPL `package` zones: cores and uncore, "
             "not DRAM). The CPU side is OpenSSL on every core where OpenSSL has the cipher "
             "(`openssl speed`'s in-cache buffers: the CPU's best case; its ECB where it has "
             "no CTR for the cipher: the same block-cipher work), our kernels through PoCL on "
             "every core where it has neither (the faster of `reference` and `fast`).", ""]
    body = []
    for r in e["rows"]:
        body.append([r["cipher"], r["cpu_instructions"] or "none", _f(r["gpu_kernel_mb_per_j"], "{:.4g}"),
                     _f(r["gpu_e2e_gbps"]), _f(r["gpu_e2e_mb_per_j"], "{:.4g}"), r["cpu_side"] or "–",
                     _f(r["cpu_gbps"]), _f(r["cpu_mb_per_j"], "{:.4g}"),
                     _f(r.get("energy_gain"), "{:.3g}x"), _f(r.get("throughput_gain"), "{:.3g}x")])
    lines += _table(["cipher", "CPU instructions", "GPU kernel MB/J", "GPU host→host GB/s",
                     "GPU host→host MB/J", "CPU side (its fastest)", "CPU GB/s", "CPU MB/J",
                     "MB/J gain", "GB/s gain"], body)
    several = [r for r in e["rows"] if len(r["cpu_candidates"]) > 1]
    if several:
        lines += ["The CPU's candidates where there were several (the fastest is in the table):", ""]
        lines += [f"- {r['cipher']}: " + "; ".join(r["cpu_candidates"]) for r in several] + [""]
    if s.get("geomean_gain") is not None:
        lines += [f"Over the {s['measured']} ciphers without CPU instructions measured on both "
                  f"sides: geometric mean gain **{s['geomean_gain']:.2f}x** (arithmetic mean "
                  f"{s['mean_gain']:.2f}x); the seed's FPGA: {SEED_GAIN_GEOMEAN}x "
                  f"({SEED_GAIN_MEAN:g}x). Goal (≥ {SEED_GAIN_GEOMEAN}x): **{s['verdict']}**.", ""]
    else:
        tg = s.get("geomean_throughput_gain")
        lines += [f"Energy gain: **{s['verdict']}** (the CPU's energy could not be read, so no "
                  "MB/J gain is claimed)." + (f" Throughput only: geometric mean gain "
                                               f"{tg:.2f}x over the ciphers without CPU "
                                               "instructions." if tg else ""), ""]
    if plots.get("energy"):
        lines += [f"![energy]({plots['energy']})", ""]
    return lines


def _ranks(derived: dict, plots: dict) -> list[str]:
    entries = derived["ranks"]
    if not entries:
        return []
    lines = ["## 4. Reference against optimized (seed 004): the same ranking?", "",
             "Per algorithm the `fast` kernel against the `reference` one on the same device "
             "(kernel rows of part 2), and the two rankings (1 = fastest) side by side with "
             "Spearman's ρ and Kendall's τ (scipy.stats; p: the two-sided p-value of no "
             "association).", ""]
    for e in entries:
        lines += [f"### {e['device_name']} (`{e['device']}`)", ""]
        body = []
        for x in e["rows"]:
            body.append([x["algorithm"], x["fast_technique"], x["reference_impl"], _mb(x["reference_mbps"]),
                         _mb(x["optimized_mbps"]), f"{x['ratio']:.2f}x",
                         _f(x.get("per_area_ratio"), "{:.2f}x"),
                         _f(x.get("throughput_rank_reference"), "{:g}"),
                         _f(x.get("throughput_rank_optimized"), "{:g}"),
                         _f(x.get("per_area_rank_reference"), "{:g}"),
                         _f(x.get("per_area_rank_optimized"), "{:g}")])
        lines += _table(["algorithm", "fast kernel", "reference", "reference MB/s", "fast MB/s", "fast/reference",
                         "per area fast/ref", "rank ref", "rank fast", "rank/area ref",
                         "rank/area fast"], body)
        for metric, title in (("throughput", "By throughput"), ("per_area", "By throughput per area")):
            m = e.get(metric, {})
            if "spearman" in m:
                lines.append(f"- {title}: Spearman ρ = {m['spearman']:.3f} (p = {m['spearman_p']:.2g}), "
                             f"Kendall τ = {m['kendall']:.3f} (p = {m['kendall_p']:.2g}), "
                             f"n = {m['n']}; median fast/reference {m['median_ratio']:.2f}x ("
                             + ", ".join(f"{t} {v:.2f}x" for t, v in m["median_ratio_by_technique"].items())
                             + ").")
                for d in m["disagreements"]:
                    lines.append(f"  - {d}")
            else:
                lines.append(f"- {title}: {m.get('note', '–')}")
        lines.append("")
        key = f"ranks {e['device']}"
        if plots.get(key):
            lines += [f"![ranks on {e['device']}]({plots[key]})", ""]
    return lines


def render(parts: dict[str, Results], derived: dict, plots: dict | None = None) -> str:
    plots = plots or {}
    lines = (_header(parts) + _practices(parts.get("practices"), plots)
             + _ciphers(parts.get("ciphers"), plots) + _energy(parts.get("energy"), derived, plots)
             + _ranks(derived, plots) + _problems(parts))
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------------- plots
def make_plots(parts: dict[str, Results], derived: dict, out: str) -> dict:
    """The PNGs; {key: file name relative to ``out``}."""
    from .report import pyplot

    plt = pyplot()
    plots: dict[str, str] = {}

    def save(fig, key: str, name: str) -> None:
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
        plots[key] = name

    def slug(s: str) -> str:
        return "".join(c if c.isalnum() else "-" for c in s)

    pr = parts.get("practices")
    for dev in dict.fromkeys(r.device for r in _ok(pr)):
        recs = [r for r in _ok(pr) if r.device == dev]
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.32 * len(recs)))
        labels = [r.implementation if r.cipher != "copy" else
                  ("copy kernel" if r.kind == "kernel" else "copy host → host") for r in recs]
        ax.barh(range(len(recs)), [_mbps(r) for r in recs],
                color=["tab:gray" if r.cipher == "copy" else "tab:blue" for r in recs])
        ax.set_yticks(range(len(recs)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("MB/s (AES-128-CTR; gray: the ceilings)")
        ax.set_title(f"practices on {recs[0].device_name}", fontsize=10)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        save(fig, f"practices {dev}", f"practices_{slug(dev)}.png")

    ci = parts.get("ciphers")
    for dev in dict.fromkeys(r.device for r in _ok(ci)):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
        for ax, kind, title in zip(axes, ("kernel", "e2e"), ("device-resident", "host → host")):
            series: dict[str, list[Record]] = defaultdict(list)
            for r in _ok(ci):
                if r.device == dev and r.kind == kind and _block(r) and r.implementation == "fast":
                    series[r.cipher].append(r)
            for name, rs in series.items():
                rs.sort(key=lambda r: r.size)
                ax.plot([r.size for r in rs], [_mbps(r) for r in rs], marker="o", label=name)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("bytes per call")
            ax.set_title(title, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("MB/s (fast kernels)")
        axes[1].legend(fontsize=7)
        name = next(r.device_name for r in _ok(ci) if r.device == dev)
        fig.suptitle(f"throughput against size on {name}", fontsize=10)
        save(fig, f"sizes {dev}", f"sizes_{slug(dev)}.png")

    for e in derived["ranks"]:
        rows = e["rows"]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(6, 5))
        ax.scatter([x["reference_mbps"] for x in rows], [x["optimized_mbps"] for x in rows])
        for x in rows:
            ax.annotate(x["algorithm"], (x["reference_mbps"], x["optimized_mbps"]), fontsize=8,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("reference kernel MB/s")
        ax.set_ylabel("fast kernel MB/s")
        m = e.get("throughput", {})
        rho = f"Spearman ρ {m['spearman']:.2f}, Kendall τ {m['kendall']:.2f}" if "spearman" in m else ""
        ax.set_title(f"reference against optimized on {e['device_name']}\n{rho}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, f"ranks {e['device']}", f"ranks_{slug(e['device'])}.png")

    er = [r for r in derived["energy"]["rows"] if r["gpu_e2e_mb_per_j"] or r["cpu_mb_per_j"]
          or r["gpu_kernel_mb_per_j"]]
    if er:
        import numpy as np

        fig, ax = plt.subplots(figsize=(9, 4.5))
        x = np.arange(len(er))
        series = [(k, lab) for k, lab in (("gpu_kernel_mb_per_j", "GPU device-resident"),
                                          ("gpu_e2e_mb_per_j", "GPU host → host"),
                                          ("cpu_mb_per_j", "CPU, every core"))
                  if any(r[k] for r in er)]
        w = 0.8 / len(series)
        for i, (key, label) in enumerate(series):
            ax.bar(x + (i - (len(series) - 1) / 2) * w, [r[key] or 0 for r in er], w, label=label)
        ax.set_xticks(x, [r["algorithm"] for r in er], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("MB/J")
        cpu = "" if any(r["cpu_mb_per_j"] for r in er) else " (the CPU's: not measurable here)"
        ax.set_title(f"energy: GPU board against CPU packages{cpu}", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        save(fig, "energy", "energy.png")
    return plots
