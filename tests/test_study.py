"""``ciphergrid bench study``: the seeds' studies (docs/study.md).

One quick study on the OpenCL CPU device (PoCL) for the whole module: its parts, files, report and
plots; resuming, re-running one part, regenerating the report from study.json; the derived figures
(rankings with scipy's coefficients, energy gains and the goal's verdict) on made-up rows.
"""

from __future__ import annotations

import argparse
import json
import os

import pytest

from ciphergrid import bench
from ciphergrid.bench import records, study, study_report
from ciphergrid.bench.records import Record, Results
from conftest import absent_spec


def parse(argv):
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    return p.parse_args(argv)


def _cpu():
    from conftest import all_devices

    cpu = next((d for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
    if cpu is None:
        pytest.skip("no OpenCL CPU device (or none selected by CIPHERGRID_TEST_DEVICES)")
    return cpu


@pytest.fixture(scope="module")
def quick_study(tmp_path_factory):
    cpu = _cpu()
    folder = tmp_path_factory.mktemp("study")
    code = bench.main(parse(["study", "--quick", "--study-dir", str(folder), "--device", cpu.spec]))
    return code, folder, cpu


def test_quick_study_measures_every_part_checked_first(quick_study):
    code, folder, cpu = quick_study
    assert code == 0
    for part in study.MEASURED:
        res = records.load(folder / f"part-{part}.json")  # (each part is a bench results file)
        assert res.run["complete"] and res.run["part"] == part
        assert res.records and all(r.status == "ok" for r in res.records), \
            [(r.cipher, r.error) for r in res.records if r.status != "ok"]
        for r in res.records:
            assert r.verification["status"] in ("passed", "reference", "not-applicable"), r.cipher
            assert r.median_s > 0
    pr = records.load(folder / "part-practices.json").records
    assert [r.implementation for r in pr] == study.QUICK_PRACTICES + [None, "copy host -> host"]
    assert [r.cipher for r in pr[-2:]] == ["copy", "copy"] and pr[-2].kind == "kernel"
    ci = records.load(folder / "part-ciphers.json").records
    got = {(r.cipher, r.implementation, r.kind) for r in ci if r.size == 256 << 10}
    for name in study.QUICK_CIPHERS:
        ref = study.reference_impl(__import__("ciphergrid").registry.lookup(name))
        assert {(name, i, k) for i in (ref, "fast") for k in ("kernel", "e2e")} <= got
    assert any(r.messages for r in ci)           # the AEAD rows
    assert {r.size for r in ci if r.implementation == "fast"} == {16 << 10, 256 << 10}
    en = records.load(folder / "part-energy.json").records
    assert {r.kind for r in en} == {"openssl-allcores"}  # (OpenSSL has both quick ciphers)


def test_study_json_report_and_plots(quick_study, tmp_path):
    _, folder, cpu = quick_study
    doc = json.loads((folder / "study.json").read_text())
    assert doc["schema"] == "ciphergrid.study" and set(doc["parts"]) == set(study.MEASURED)
    md = (folder / "study.md").read_text()
    for title in ("## 1. Practices", "## 2. All ciphers", "## 3. Energy", "## 4. Reference against"):
        assert title in md
    assert cpu.spec in md and ("not measurable here" in md or "Goal" in md)
    pngs = sorted(p.name for p in folder.glob("*.png"))
    slug = cpu.spec.replace(":", "-")
    assert {f"practices_{slug}.png", f"sizes_{slug}.png", f"ranks_{slug}.png"} <= set(pngs)
    for p in folder.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the report again from study.json alone, elsewhere: the same text
    p = argparse.ArgumentParser()
    bench.add_report_arguments(p)
    out = tmp_path / "again"
    assert bench.report_main(p.parse_args([str(folder / "study.json"), "--out", str(out)])) == 0
    assert (out / "study.md").read_text() == md


def test_resume_runs_only_missing_parts_and_part_reruns_one(quick_study, monkeypatch):
    _, folder, cpu = quick_study
    ran = []
    for name in study.MEASURED:
        monkeypatch.setitem(study.RUNNERS, name, lambda part, args, devs, n=name: ran.append(n) or {})
    stamp = {p: os.stat(folder / f"part-{p}.json").st_mtime_ns for p in study.MEASURED}
    assert bench.main(parse(["study", "--study-dir", str(folder), "--device", cpu.spec])) == 0
    assert ran == []                                 # every part complete: only the report
    assert bench.main(parse(["study", "--part", "ranks", "--study-dir", str(folder),
                             "--device", cpu.spec])) == 0
    assert ran == []
    assert {p: os.stat(folder / f"part-{p}.json").st_mtime_ns for p in study.MEASURED} == stamp
    # an interrupted part is incomplete: the next run without --part measures it again
    doc = json.loads((folder / "part-energy.json").read_text())
    doc["run"]["complete"] = False
    (folder / "part-energy.json").write_text(json.dumps(doc))
    assert bench.main(parse(["study", "--study-dir", str(folder), "--device", cpu.spec])) == 0
    assert ran == ["energy"]


def test_study_refuses_json(tmp_path):
    from ciphergrid.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="--study-dir"):
        study.run(parse(["study", "--json", str(tmp_path / "x.json")]), None)


# ------------------------------------------------------------------------- derived figures
#: devices of the made-up rows (specs that name no device here)
FAKE_GPU, FAKE_CPU = absent_spec("cuda"), absent_spec("opencl", 2)


def _rec(cipher, impl, mbps, *, device=FAKE_GPU, kind="kernel", occ=None, sms=132, kind_dev="gpu",
         mbj=None, threads=None):
    from ciphergrid import registry

    spec = registry.lookup(cipher)
    r = Record(cipher=cipher, algorithm=spec.algorithm.name, key_bits=8 * spec.key_size,
               mode="ctr", direction="encrypt", device=device, device_name=device,
               device_kind=kind_dev, runtime="cuda" if kind_dev == "gpu" else "native", kind=kind,
               size=1 << 20, implementation=impl, threads=threads,
               verification={"status": "passed"})
    r.set_times([(1 << 20) / (mbps * 1e6)])
    if occ is not None:
        r.set_resources({"occupancy": occ, "sm_count": sms})
    if mbj:
        r.avg_power_w = r.throughput_bps / 1e6 / mbj
        r._derive()
    return r


def _results(recs):
    return Results(run={}, records=recs)


def test_ranks_coefficients_and_disagreements():
    recs = []
    speeds = {"aes-128-ctr": (100, 1000), "camellia-128-ctr": (50, 600), "seed-ctr": (40, 200),
              "hight-ctr": (30, 700)}
    for name, (ref, fast) in speeds.items():
        recs += [_rec(name, study.reference_impl(__import__("ciphergrid").registry.lookup(name)), ref,
                      occ=0.5), _rec(name, "fast", fast, occ=0.25)]
    (e,) = study_report.ranks(_results(recs))
    rows = {x["algorithm"]: x for x in e["rows"]}
    assert rows["aes"]["ratio"] == pytest.approx(10)
    assert rows["hight"]["throughput_rank_reference"] == 4 and rows["hight"]["throughput_rank_optimized"] == 2
    assert rows["aes"]["per_area_ratio"] == pytest.approx(20)
    t = e["throughput"]
    assert t["n"] == 4 and t["spearman"] == pytest.approx(0.4) and t["kendall"] == pytest.approx(1 / 3)
    assert len(t["disagreements"]) == 3 and any(d.startswith("hight: #4 as reference, #2") for d in t["disagreements"])
    assert "spearman" in e["per_area"]
    # a CPU device without occupancy: throughput only
    cpu = [_rec(r.cipher, r.implementation, r.throughput_bps / 1e6, device=FAKE_CPU,
                kind_dev="cpu") for r in recs]
    (c,) = study_report.ranks(_results(cpu))
    assert "spearman" in c["throughput"] and "no occupancy" in c["per_area"]["note"]


def test_energy_gain_geomean_and_verdicts():
    recs = []
    for name, gpu, cpu in (("aes-128-ctr", 2000, 500), ("camellia-128-ctr", 3000, 100),
                           ("seed-ctr", 1000, 10)):
        recs += [_rec(name, "fast", 40000, kind="e2e", mbj=gpu),
                 _rec(name, None, 900, device="openssl", kind="openssl-allcores", kind_dev="cpu",
                      mbj=cpu, threads=16)]
    e = study_report.energy(_results(recs))
    s = e["summary"]
    assert s["measured"] == 2 and "aes-128-ctr" not in s["ciphers_without_cpu_instructions"]
    assert s["geomean_gain"] == pytest.approx((30 * 100) ** 0.5)
    assert s["mean_gain"] == pytest.approx(65) and s["verdict"] == "met"
    rows = {r["cipher"]: r for r in e["rows"]}
    assert rows["aes-128-ctr"]["energy_gain"] == pytest.approx(4) and rows["aes-128-ctr"]["cpu_instructions"]
    # the CPU's energy unreadable: no gain claimed, throughput only
    for r in recs:
        if r.kind.startswith("openssl"):
            r.mb_per_j, r.energy_note = None, "no RAPL powercap interface"
    s = study_report.energy(_results(recs))["summary"]
    assert s["verdict"].startswith("not measurable here: no RAPL") and "geomean_gain" not in s
    assert s["geomean_throughput_gain"] == pytest.approx(40000 / 900)


# ------------------------------------------------------------------------- the committed study
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
RUN = os.path.join(DOCS, "study", "h200-2026-11-29")


def test_committed_study_regenerates_from_its_json(tmp_path):
    """docs/study/h200-2026-11-29/study.md is what its study.json gives, and every figure in
    the tables of docs/study.md is one of that report's."""
    import re

    doc = study_report.load_study(os.path.join(RUN, "study.json"))
    study_report.write(doc, str(tmp_path))
    report = (tmp_path / "study.md").read_text()
    with open(os.path.join(RUN, "study.md"), encoding="utf-8") as f:
        assert f.read() == report
    with open(os.path.join(DOCS, "study.md"), encoding="utf-8") as f:
        tables = [ln for ln in f if ln.startswith("| ") and not ln.startswith("| part")]
    figures = set(re.findall(r"\d[\d,]*\.?\d*x?", report))
    for line in tables:
        for cell in line.split("|")[2:]:
            for number in re.findall(r"\d[\d,]*\.\d+x?|\d{1,3}(?:,\d{3})+", cell):
                assert number in figures, (number, line)
