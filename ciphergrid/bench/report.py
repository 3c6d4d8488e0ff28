"""``ciphergrid report RESULTS.json --out DIR``: Markdown tables and PNG plots.

Writes DIR/report.md (naming device, date and command from the run header) and
DIR/*.png: throughput vs size per cipher, GPU vs OpenSSL, MB/J, ranking by throughput per area.
Sustained figures (comparisons, rankings) use each series' largest verified size.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from .records import Record, Results

# ------------------------------------------------------------------------- helpers


def default_out_dir(results_path: str) -> str:
    base, _ = os.path.splitext(os.fspath(results_path))
    return base + "-report"


def human_size(n: int) -> str:
    """Bytes in the largest binary unit that gives a number >= 1 (``1.20 GiB``)."""
    from .preflight import size_text

    return size_text(n)


def _g(x, fmt="{:.3g}") -> str:
    return "–" if x is None else fmt.format(x)


def ratio_text(x, suffix: str = "x") -> str:
    """A speed ratio (a speedup, "x copy", "x cat"): two decimals from 0.1 up, two significant
    digits below ("0.0042x": a small ratio is never "0.00x"), "<0.000001x" for less; "–" for
    None."""
    if x is None:
        return "–"
    if x == 0:
        return f"0{suffix}"
    if x >= 0.1:
        return f"{x:.2f}{suffix}"
    if x < 1e-6:
        return f"<0.000001{suffix}"
    import math

    decimals = min(7, 1 - math.floor(math.log10(x)))
    return f"{x:.{decimals}f}{suffix}"


def _openssl_text(version: str | None) -> str | None:
    """``openssl version`` once: "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan
    2026)" says the same version twice; the library is named only where it differs."""
    m = re.fullmatch(r"(.*?) \(Library: (.*)\)", version or "")
    return m.group(1) if m and m.group(1).strip() == m.group(2).strip() else version


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


def series_label(r: Record) -> str:
    if r.device == "openssl":
        return f"OpenSSL {'1 core' if r.kind == 'openssl-1core' else f'{r.threads} cores'}"
    return f"{r.device} {r.kind}"


def _ok(results: Results) -> list[Record]:
    return [r for r in results.records if r.status == "ok" and r.throughput_bps]


def sustained(results: Results, *, strawman: bool = False) -> list[Record]:
    """Per cipher·direction·device·kind, the ok record with the largest size (without the
    copy-only strawman unless asked)."""
    best: dict[tuple, Record] = {}
    for r in _ok(results):
        if r.cipher == "copy" and not strawman:
            continue
        k = (r.cipher, r.direction, r.device, r.kind)
        if k not in best or r.size > best[k].size:
            best[k] = r
    return list(best.values())


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


# ------------------------------------------------------------------------- markdown
def _header(results: Results) -> list[str]:
    run = results.run
    host = run.get("host", {})
    pk = host.get("packages", {})
    lines = ["# ciphergrid benchmark report", ""]
    lines.append(f"- **Date:** {run.get('date')} (finished {run.get('finished', '?')}, "
                 f"{_g(run.get('duration_s'), '{:.0f}')} s)")
    lines.append(f"- **Command:** `{run.get('command')}`")
    devs = run.get("devices") or []
    for d in devs:
        mem = f", {d['memory'] / (1 << 30):.1f} GiB" if d.get("memory") else ""
        clk = f", {d['clock_mhz']} MHz" if d.get("clock_mhz") else ""
        nv = d.get("nvml") or {}
        pl = f", power limit {nv['power_limit_w']:.0f} W" if nv.get("power_limit_w") else ""
        lines.append(f"- **Device:** {d.get('name')} (`{d.get('spec')}`, {d.get('runtime')}, "
                     f"{d.get('compute_units')} compute units{mem}{clk}{pl})")
    if not devs:
        lines.append("- **Device:** none but the OpenSSL baseline")
    ossl = (host.get("openssl") or {})
    lines.append(f"- **OpenSSL baseline:** {_openssl_text(ossl.get('cli')) or ossl.get('cryptography_linked')} on "
                 f"{host.get('cpu_model')} ({host.get('cpu_usable')} usable cores)")
    lines.append(f"- **Host:** {host.get('cpu_model')}, {host.get('cpu_logical')} logical CPUs, "
                 f"{_g((host.get('memory_bytes') or 0) / (1 << 30), '{:.1f}')} GiB, {host.get('os')}")
    nvidia = host.get("nvidia") or {}
    cuda = host.get("cuda") or {}
    src = host.get("ciphergrid") or {}
    versions = ([f"ciphergrid {src.get('version') or pk.get('ciphergrid') or ''} "
                 f"{(src.get('git_commit') or '')[:12]}"
                 f"{' (modified)' if src.get('git_dirty') else ''}".replace("  ", " ").strip()]
                + [f"Python {host.get('python')}"])
    versions += [f"{k} {v}" for k, v in sorted(pk.items()) if k != "ciphergrid"]  # (named first)
    if nvidia.get("driver"):
        versions.append(f"NVIDIA driver {nvidia['driver']}")
    if nvidia.get("cuda_driver"):
        versions.append(f"CUDA driver {nvidia['cuda_driver']}")
    if cuda.get("nvrtc"):
        versions.append(f"NVRTC {cuda['nvrtc']}")
    lines.append(f"- **Versions:** {', '.join(versions)}")
    c = run.get("counts", {})
    lines.append(f"- **Suite:** {run.get('suite')}; rows: {c.get('ok', 0)} ok, "
                 f"{c.get('failed', 0)} failed, {c.get('skipped', 0)} skipped"
                 + ("; **interrupted**" if run.get("interrupted") else ""))
    lines += ["", "Every timed row was first checked against the oracle (pyca/cryptography) and the "
              "known answers; rows that failed carry no timing. GB = 1e9 bytes, MB = 1e6 bytes. "
              "Kernel rows: device-resident, device events; e2e rows: host to host, wall clock.", ""]
    return lines


def _failures(results: Results) -> list[str]:
    bad = [r for r in results.records if r.status == "failed"]
    if not bad:
        return []
    rows = [[r.cipher, r.direction, r.device, r.kind, human_size(r.size), r.error or ""]
            for r in bad]
    return ["## Failures", ""] + _table(["cipher", "dir", "device", "kind", "size", "error"], rows)


def _throughput_tables(results: Results, plots: dict) -> list[str]:
    lines = ["## Throughput vs size", "", "GB/s, median of the repeats [min–max].", ""]
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in _ok(results):
        groups[(r.cipher, r.direction)].append(r)
    for (cipher, direction), recs in sorted(groups.items()):
        labels = sorted({series_label(r) for r in recs})
        sizes = sorted({r.size for r in recs})
        cell = {(series_label(r), r.size): r for r in recs}
        rows = []
        for s in sizes:
            row = [human_size(s)]
            for lab in labels:
                r = cell.get((lab, s))
                row.append("–" if r is None else
                           f"{r.gbps:.3g} [{r.throughput_min_bps / 1e9:.3g}–"
                           f"{r.throughput_max_bps / 1e9:.3g}]")
            rows.append(row)
        lines += [f"### {cipher} ({direction})", ""] + _table(["size"] + labels, rows)
        png = plots.get(("throughput", cipher, direction))
        if png:
            lines += [f"![{cipher} {direction} throughput vs size]({png})", ""]
    return lines


def _vs_openssl(results: Results, plots: dict) -> list[str]:
    sus = sustained(results)
    by_cipher: dict[tuple, list[Record]] = defaultdict(list)
    for r in sus:
        by_cipher[(r.cipher, r.direction)].append(r)
    rows = []
    for (cipher, direction), recs in sorted(by_cipher.items()):
        o1 = next((r for r in recs if r.kind == "openssl-1core"), None)
        on = next((r for r in recs if r.kind == "openssl-allcores"), None)
        base = on or o1
        for r in sorted(recs, key=lambda r: -r.throughput_bps):
            if r.device == "openssl":
                continue
            speedup = ratio_text(r.throughput_bps / base.throughput_bps) if base else "–"
            rows.append([cipher, direction, series_label(r), human_size(r.size), f"{r.gbps:.3g}",
                         _g(o1.gbps if o1 else None), _g(on.gbps if on else None), speedup])
    if not rows:
        return []
    lines = ["## Devices vs OpenSSL", "",
             "Each series at its largest verified size; speedup over OpenSSL on all cores "
             "(or one core when only that ran).", ""]
    lines += _table(["cipher", "dir", "series", "size", "GB/s", "OpenSSL 1 core GB/s",
                     "OpenSSL all cores GB/s", "speedup"], rows)
    if plots.get("vs_openssl"):
        lines += [f"![devices vs OpenSSL]({plots['vs_openssl']})", ""]
    return lines


def _energy(results: Results, plots: dict) -> list[str]:
    lines = ["## Energy efficiency", ""]
    recs = [r for r in sustained(results) if r.mb_per_j]
    if not recs:
        methods = sorted({f"{r.device}: {r.energy_method}" + (f" ({r.energy_note})" if r.energy_note else "")
                          for r in _ok(results)})
        return lines + ["No energy was measured in this run; per device: "
                        + ("; ".join(methods) or "no rows") + ".", ""]
    rows = [[r.cipher, r.direction, series_label(r), human_size(r.size), f"{r.gbps:.3g}",
             _g(r.avg_power_w), f"{r.mb_per_j:.4g}", r.energy_method, r.energy_scope or ""]
            for r in sorted(recs, key=lambda r: -r.mb_per_j)]
    lines += ["MB/J = throughput (MB/s) / average power (W) over the timed window; "
              "scope says what the counter covers.", ""]
    lines += _table(["cipher", "dir", "series", "size", "GB/s", "W", "MB/J", "method", "scope"], rows)
    if plots.get("energy"):
        lines += [f"![MB/J]({plots['energy']})", ""]
    return lines


def _resources(results: Results) -> list[str]:
    recs = [r for r in sustained(results) if r.kind == "kernel" and (r.resources or r.area)]
    defs = results.run.get("definitions", {})
    lines = ["## Resource use and area-time product", "",
             f"Area: {defs.get('area', '')}", "", f"Area-time product: {defs.get('area_time', '')}", ""]
    if not recs:
        return lines + ["No kernel reported its resource use.", ""]
    rows = []
    for r in sorted(recs, key=lambda r: (r.cipher, r.device)):
        res = r.resources or {}
        rows.append([r.cipher, r.direction, r.device, human_size(r.size),
                     _g(res.get("registers_per_item"), "{}"), _g(res.get("local_mem_bytes"), "{}"),
                     _g(res.get("private_mem_bytes"), "{}"), _g(res.get("work_group_size"), "{}"),
                     _g(res.get("occupancy"), "{:.2f}"), _g(r.sm_count, "{}"), _g(r.area),
                     _g(r.area_time, "{:.4g}"), f"{r.gbps:.3g}", _g(r.gbps_per_sm_ghz, "{:.4g}"),
                     f"{_g(r.sm_clock_mhz, '{:.0f}')} ({r.clock_source or '–'})"])
    return lines + _table(["cipher", "dir", "device", "size", "regs/item", "local B", "private B",
                           "WG size", "occupancy", "SMs", f"area ({defs.get('area_unit', 'SM')})",
                           f"A×T ({defs.get('area_time_unit', '')})", "GB/s", "GB/s/SM/GHz",
                           "SM clock MHz"], rows)


def _rankings(results: Results, plots: dict) -> list[str]:
    sus = sustained(results)
    lines = ["## Rankings", "", "Each series at its largest verified size.", ""]
    for title, keep in (("By throughput, host to host (e2e and OpenSSL)", lambda r: r.kind != "kernel"),
                        ("By throughput, kernel only (device-resident data)",
                         lambda r: r.kind == "kernel")):
        ranked = sorted((r for r in sus if keep(r)), key=lambda r: -r.throughput_bps)
        if not ranked:
            continue
        rows = [[str(i + 1), r.cipher, r.direction, series_label(r), human_size(r.size),
                 f"{r.gbps:.4g}"] for i, r in enumerate(ranked)]
        lines += [f"### {title}", ""] + _table(["#", "cipher", "dir", "series", "size", "GB/s"], rows)
    lines += ["### By throughput per area", ""]
    pa = sorted((r for r in sus if r.throughput_per_area), key=lambda r: -r.throughput_per_area)
    if not pa:
        return lines + ["No series has an area (no kernel reported occupancy).", ""]
    rows = [[str(i + 1), r.cipher, r.direction, series_label(r), human_size(r.size),
             f"{r.throughput_per_area:.4g}", _g(r.area_time, "{:.4g}")] for i, r in enumerate(pa)]
    lines += _table(["#", "cipher", "dir", "series", "size", "MB/s per SM", "A×T (SM·µs/MB)"], rows)
    if plots.get("per_area"):
        lines += [f"![throughput per area]({plots['per_area']})", ""]
    return lines


def render_markdown(results: Results, plots: dict | None = None) -> str:
    plots = plots or {}
    lines = (_header(results) + _failures(results) + _throughput_tables(results, plots)
             + _vs_openssl(results, plots) + _energy(results, plots) + _resources(results)
             + _rankings(results, plots))
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------------- plots
def pyplot():
    """matplotlib's pyplot on the Agg backend: a dependency (the reports always have their
    plots); missing, a clear error before anything is written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        from ..errors import Error

        raise Error(f"the report's plots need matplotlib, a dependency of ciphergrid missing here "
                    f"({e}): pip install matplotlib") from None
    return plt


def make_plots(results: Results, out_dir: str) -> dict:
    """Write the PNGs; return {key: file name relative to out_dir}."""
    plt = pyplot()
    plots: dict = {}
    title_suffix = f"\n{results.run.get('date', '')}"

    def save(fig, name: str) -> str:
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        return name

    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in _ok(results):
        groups[(r.cipher, r.direction)].append(r)
    for (cipher, direction), recs in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series: dict[str, list[Record]] = defaultdict(list)
        for r in recs:
            series[series_label(r)].append(r)
        for lab, rs in sorted(series.items()):
            rs.sort(key=lambda r: r.size)
            x = [r.size for r in rs]
            ax.plot(x, [r.gbps for r in rs], marker="o", label=lab,
                    linestyle="--" if lab.startswith("OpenSSL") else "-")
            ax.fill_between(x, [r.throughput_min_bps / 1e9 for r in rs],
                            [r.throughput_max_bps / 1e9 for r in rs], alpha=0.15)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel("GB/s (median, band = min..max)")
        ax.set_title(f"{cipher} {direction}{title_suffix}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        plots[("throughput", cipher, direction)] = save(
            fig, f"throughput_{_slug(cipher)}_{direction}.png")

    sus = sustained(results)
    if sus:
        plots["vs_openssl"] = save(_bars(plt, sus, lambda r: r.gbps, "GB/s (largest size)",
                                         "devices vs OpenSSL" + title_suffix), "vs_openssl.png")
    en = [r for r in sustained(results) if r.mb_per_j]
    if en:
        plots["energy"] = save(_bars(plt, en, lambda r: r.mb_per_j, "MB/J",
                                     "energy efficiency" + title_suffix), "energy_mb_per_j.png")
    pa = [r for r in sustained(results) if r.throughput_per_area]
    if pa:
        plots["per_area"] = save(_bars(plt, pa, lambda r: r.throughput_per_area, "MB/s per SM",
                                       "throughput per area" + title_suffix), "throughput_per_area.png")
    return plots


def _bars(plt, recs: list[Record], value, xlabel: str, title: str):
    recs = sorted(recs, key=value)
    labels = [f"{r.cipher} {r.direction[:3]} · {series_label(r)}" for r in recs]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.3 * len(recs)))
    colors = ["tab:gray" if r.device == "openssl" else
              "tab:blue" if r.kind == "kernel" else "tab:orange" for r in recs]
    ax.barh(range(len(recs)), [value(r) for r in recs], color=colors)
    ax.set_yticks(range(len(recs)), labels, fontsize=7)
    ax.set_xscale("log")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=c, label=lab) for c, lab in
                       (("tab:blue", "kernel only"), ("tab:orange", "end to end"),
                        ("tab:gray", "OpenSSL"))], fontsize=7, loc="lower right")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return fig


# ------------------------------------------------------------------------- entry
def write_report(results: Results, out_dir: str) -> list[str]:
    """Write report.md and the plots into out_dir; return the paths written."""
    pyplot()   # (missing: the error before any file)
    os.makedirs(out_dir, exist_ok=True)
    plots = make_plots(results, out_dir)
    md = render_markdown(results, plots)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(md)
    pngs = [os.path.join(out_dir, v) for v in plots.values()]
    return [path] + pngs
