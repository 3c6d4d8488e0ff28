"""ciphergrid.bench with a fake engine: schema, correctness gate, statistics, report, JSON."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest

import ciphergrid
from ciphergrid import bench, registry
from ciphergrid.testing import oracle
from ciphergrid.bench import energy, methodology, records, suites, sysinfo, verify
from ciphergrid.errors import DeviceError
from conftest import absent_spec

pytest.importorskip("cryptography")

HOST = {"cpu_model": "Fake CPU", "cpu_logical": 2, "cpu_usable": 2, "memory_bytes": 8 << 30,
        "os": "Linux", "python": "3.x", "packages": {"numpy": np.__version__},
        "openssl": {"cli": "OpenSSL 3.0.0"}, "nvidia": None, "cuda": None}


# ------------------------------------------------------------------------- the fake engine
@dataclass
class FakeDevice:
    spec: str
    runtime: str
    name: str
    kind: str
    compute_units: int
    memory: int
    clock_mhz: int | None
    vendor: str
    extra: dict = field(default_factory=dict)


GPU = FakeDevice(absent_spec("opencl", 2), "opencl", "Fake GPU", "gpu", 4, 1 << 30, 1000, "FakeVendor")
NATIVE = FakeDevice("native", "native", "OpenSSL threads", "cpu", 2, 8 << 30, None, "openssl")


class FakeEngine:
    calls: list = []

    def __init__(self, dev):
        self.device = dev

    def time_kernel(self, name, nbytes, *, repeats, encrypt=True):
        FakeEngine.calls.append((name, nbytes, repeats))
        # 10 GB/s, with a spread of +-10% so that min/max differ from the median
        return [nbytes / 1e10 * (0.9 + 0.2 * i / max(repeats - 1, 1)) for i in range(repeats)]

    def kernel_resources(self, name, *, encrypt=True):
        return {"registers_per_item": 32, "local_mem_bytes": 4096, "private_mem_bytes": 0,
                "work_group_size": 256, "occupancy": 0.5, "sm_count": 4,
                "max_threads_per_sm": 2048}

    def sm_clock_mhz(self):
        return 1500.0


def oracle_crypt(data, *, cipher, key, iv, encrypt=True, device=None):
    spec = registry.lookup(cipher)
    return np.frombuffer(oracle.crypt(spec, key, iv, bytes(data), encrypt), np.uint8).copy()


def make_api(wrong_on: str | None = None, speed_fails: bool = False):
    """wrong_on: a device spec whose encrypt output has one byte flipped."""

    def crypt(encrypt):
        def fn(data, *, cipher, key, iv, device):
            out = oracle_crypt(data, cipher=cipher, key=key, iv=iv, encrypt=encrypt)
            if device == wrong_on:
                out[len(out) // 2] ^= 1
            return out
        return fn

    def get_engine(spec):
        dev = {d.spec: d for d in (GPU, NATIVE)}[spec]
        if dev.runtime == "native":
            raise DeviceError("no kernels on native")
        return FakeEngine(dev)

    def speed(name, size, *, threads=1, seconds=0.5, encrypt=True):
        if speed_fails:
            raise ciphergrid.errors.UnsupportedCipher(name)
        return 1e9 * threads

    def load_vectors(name):
        raise ImportError("no vectors module in this test")

    return methodology.Api(devices=lambda: [GPU, NATIVE], get_engine=get_engine,
                           encrypt=crypt(True), decrypt=crypt(False), speed=speed,
                           load_vectors=load_vectors)


def parse(argv):
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    return p.parse_args(argv)


def run_bench(tmp_path, argv, api):
    path = tmp_path / "r.json"
    code = bench.main(parse(argv + ["--json", str(path)]), api=api, host=HOST)
    return code, path


# ------------------------------------------------------------------------- tests
def test_quick_run_schema_and_json_roundtrip(tmp_path):
    code, path = run_bench(tmp_path, ["--quick"], make_api())
    assert code == 0
    doc = json.loads(path.read_text())
    assert records.validate(doc) == []
    assert doc["schema"] == "ciphergrid.bench" and doc["schema_version"] == records.SCHEMA_VERSION
    run = doc["run"]
    assert run["command"].startswith("ciphergrid bench ciphers") and "--quick" in run["command"]
    assert run["date"] and run["devices"][0]["spec"] == GPU.spec
    assert "area" in run["definitions"] and run["counts"]["failed"] == 0
    res = records.load(path)
    kinds = {(r.cipher, r.device, r.kind) for r in res.records}
    for c in ("aes-128-ctr", "aes-128-ecb"):
        assert (c, GPU.spec, "kernel") in kinds and (c, GPU.spec, "e2e") in kinds
        assert (c, "native", "e2e") in kinds and (c, "native", "kernel") not in kinds
        assert (c, "openssl", "openssl-1core") in kinds and (c, "openssl", "openssl-allcores") in kinds
    assert ("copy", GPU.spec, "kernel") in kinds
    assert {r.size for r in res.records} == {16, 1024, 16384, 1 << 20}
    for r in res.records:
        assert r.status == "ok", r.error
        assert r.median_s and r.min_s <= r.median_s <= r.max_s and r.repeats == len(r.times_s)
        if r.cipher != "copy" and r.device != "openssl":
            assert r.verification["status"] == "passed" and r.verification["oracle_bytes"] > 0
    k = next(r for r in res.records if r.kind == "kernel" and r.cipher == "aes-128-ctr"
             and r.size == 1 << 20)
    assert k.timer == "device-events" and k.sm_clock_mhz == 1500.0 and k.clock_source == "measured"
    assert k.area == pytest.approx(2.0)                          # 4 SMs x occupancy 0.5
    mbps = k.throughput_bps / 1e6
    assert k.area_time == pytest.approx(2.0 / mbps * 1e6)
    assert k.gbps_per_sm_ghz == pytest.approx(k.gbps / (4 * 1.5))
    o = next(r for r in res.records if r.kind == "openssl-allcores")
    assert o.threads == 2 and o.gbps == pytest.approx(2.0)


def test_wrong_output_fails_row_loudly_without_timing(tmp_path, capsys):
    code, path = run_bench(tmp_path, ["--quick", "--no-openssl"], make_api(wrong_on=GPU.spec))
    assert code == 1
    assert "FAILED" in capsys.readouterr().err
    res = records.load(path)
    gpu = [r for r in res.records if r.device == GPU.spec and r.cipher != "copy"]
    assert gpu and all(r.status == "failed" for r in gpu)
    for r in gpu:
        assert r.times_s == [] and r.median_s is None and r.throughput_bps is None
        assert r.verification["status"] == "failed" and "differs" in r.error
    # the other device was still verified and timed
    assert all(r.status == "ok" for r in res.records if r.device == "native")
    assert res.run["exit_code"] == 1 and res.run["counts"]["failed"] == len(gpu)


def test_failed_rows_never_call_the_timer(monkeypatch):
    FakeEngine.calls = []
    runner = methodology.Runner(make_api(wrong_on=GPU.spec), methodology.QUICK, HOST)
    spec = registry.lookup("aes-128-ctr")
    rec = runner.run_row(methodology.Row("kernel", spec.name, spec, 1024, True, GPU))
    assert rec.status == "failed" and FakeEngine.calls == []


def test_median_min_max():
    r = records.Record(cipher="x", algorithm=None, key_bits=None, mode=None, direction="encrypt",
                       device="d", device_name="d", device_kind="gpu", runtime="opencl",
                       kind="kernel", size=1000)
    r.set_times([4.0, 1.0, 3.0, 2.0, 10.0])
    assert (r.median_s, r.min_s, r.max_s) == (3.0, 1.0, 10.0)
    assert r.throughput_bps == pytest.approx(1000 / 3.0)
    assert r.throughput_min_bps == pytest.approx(100.0) and r.throughput_max_bps == pytest.approx(1000.0)
    r.set_times([2.0, 4.0])
    assert r.median_s == 3.0
    with pytest.raises(ValueError):
        r.set_times([])
    r.set_times([1e-3])
    r.set_energy(energy.Reading("rapl", "cpu-packages", 2.0, 0.5))   # 4 W
    assert r.avg_power_w == pytest.approx(4.0)
    assert r.mb_per_j == pytest.approx(1.0 / 4.0)                    # 1 MB/s over 4 W


def test_repeats_adapt_to_size():
    p = methodology.QUICK
    assert p.repeats_for(1e-6) == p.max_repeats
    assert p.repeats_for(10.0) == p.min_repeats
    assert methodology.Policy(**{**p.__dict__, "fixed": 7}).repeats_for(1e-6) == 7


def test_selection_and_sizes():
    assert methodology.parse_sizes("16,1Ki,64K,1Mi,1G") == [16, 1024, 65536, 1 << 20, 1 << 30]
    with pytest.raises(ciphergrid.errors.InvalidArgument):
        methodology.parse_size("12XB")
    assert methodology.select_ciphers(None, None, True) == ["aes-128-ctr", "aes-128-ecb"]
    assert methodology.select_ciphers(["aes-256"], ["xts,ctr"], False) == ["aes-256-ctr", "aes-256-xts"]
    with pytest.raises(ciphergrid.errors.UnsupportedCipher):
        methodology.select_ciphers(["nope"], None, False)
    api = make_api()
    assert methodology.select_devices(api, ["gpu"]) == [GPU]
    assert methodology.select_devices(api, ["openssl"]) == []
    with pytest.raises(ciphergrid.errors.DeviceNotFound):
        methodology.select_devices(api, [absent_spec("cuda")])


def test_skips_are_recorded_with_reason(tmp_path):
    code, path = run_bench(tmp_path, ["--cipher", "aes-128-ecb", "--sizes", "8,32",
                                      "--device", "native", "--no-openssl"], make_api())
    assert code == 0
    res = records.load(path)
    by_size = {r.size: r for r in res.records}
    assert by_size[8].status == "skipped" and "whole" in by_size[8].error
    assert by_size[32].status == "ok"


def test_openssl_without_cipher_is_skipped(tmp_path):
    code, path = run_bench(tmp_path, ["--quick", "--device", "openssl", "--sizes", "1Ki"],
                           make_api(speed_fails=True))
    assert code == 0
    res = records.load(path)
    assert res.records and all(r.status == "skipped" and r.device == "openssl" for r in res.records)


def test_default_api_resolves_monkeypatched_modules(monkeypatch, tmp_path):
    """The real entry points are looked up at call time: monkeypatching them is enough."""
    engine_mod = types.ModuleType("ciphergrid.bench.kernels")
    engine_mod.engine = lambda spec: FakeEngine(GPU)
    openssl_mod = types.ModuleType("ciphergrid.bench.evp_speed")
    openssl_mod.speed = lambda name, size, *, threads=1, seconds=0.5, encrypt=True: 5e8
    vec_mod = types.ModuleType("ciphergrid.vectors")
    V = types.SimpleNamespace
    # NIST SP 800-38A F.5.1 CTR-AES128.Encrypt, block #1
    vec_mod.load = lambda name: [V(
        cipher=name, key=bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"),
        iv=bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
        plaintext=bytes.fromhex("6bc1bee22e409f96e93d7e117393172a"),
        ciphertext=bytes.fromhex("874d6191b620e3261bef6864990db6ce"),
        encrypt_ok=True, decrypt_ok=True, sector_size=None, start_sector=None, source="sp800-38a")]
    monkeypatch.setitem(sys.modules, "ciphergrid.bench.kernels", engine_mod)
    monkeypatch.setitem(sys.modules, "ciphergrid.bench.evp_speed", openssl_mod)
    monkeypatch.setitem(sys.modules, "ciphergrid.vectors", vec_mod)
    monkeypatch.setattr(ciphergrid, "devices", lambda: [GPU], raising=False)
    monkeypatch.setattr(ciphergrid, "encrypt", lambda d, **kw: oracle_crypt(d, **kw, encrypt=True),
                        raising=False)
    monkeypatch.setattr(ciphergrid, "decrypt", lambda d, **kw: oracle_crypt(d, **kw, encrypt=False),
                        raising=False)
    path = tmp_path / "r.json"
    code = bench.main(parse(["--cipher", "aes-128-ctr", "--sizes", "64", "--json", str(path)]),
                      host=HOST)
    assert code == 0
    res = records.load(path)
    ctr = [r for r in res.records if r.cipher == "aes-128-ctr" and r.device == GPU.spec]
    assert ctr and all(r.verification["kat_vectors"] == 1 for r in ctr)
    assert any(r.device == "openssl" and r.gbps == pytest.approx(0.5) for r in res.records)


def test_wrong_known_answer_fails():
    api = make_api()
    V = types.SimpleNamespace
    api.load_vectors = lambda name: [V(key=b"\0" * 16, iv=b"\0" * 16, plaintext=b"\0" * 16,
                                       ciphertext=b"\1" * 16, encrypt_ok=True, decrypt_ok=True,
                                       sector_size=None, source="bogus")]
    gate = verify.Gate(api)
    with pytest.raises(verify.VerificationFailed, match="known answer"):
        gate.check(registry.lookup("aes-128-ctr"), GPU.spec, 1024, True)


def test_report_names_device_date_command_and_writes_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    code, path = run_bench(tmp_path, ["--quick"], make_api())
    out = tmp_path / "rep"
    args = argparse.ArgumentParser()
    bench.add_report_arguments(args)
    assert bench.report_main(args.parse_args([str(path), "--out", str(out)])) == 0
    md = (out / "report.md").read_text()
    run = json.loads(path.read_text())["run"]
    assert "Fake GPU" in md and run["date"] in md and run["command"] in md
    for section in ("Throughput vs size", "Devices vs OpenSSL", "Energy efficiency",
                    "area-time product", "By throughput per area"):
        assert section in md
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "throughput_aes-128-ctr_encrypt.png" in pngs and "vs_openssl.png" in pngs
    assert "throughput_per_area.png" in pngs
    for p in out.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_load_rejects_invalid(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"schema": "ciphergrid.bench", "schema_version": 1, "run": {},
                             "records": [{"cipher": "x"}]}))
    with pytest.raises(ciphergrid.errors.InvalidArgument):
        records.load(p)


def test_rapl_meter_reads_powercap(tmp_path):
    z = tmp_path / "intel-rapl:0"
    z.mkdir()
    (tmp_path / "intel-rapl:0:0").mkdir()          # a sub-zone: not counted twice
    (z / "energy_uj").write_text("1000000\n")
    (z / "max_energy_range_uj").write_text("262143328850\n")
    m = energy.rapl_meter(str(tmp_path))
    assert isinstance(m, energy.RaplMeter) and len(m.zones) == 1
    m.start()
    (z / "energy_uj").write_text("3000000\n")
    import time
    time.sleep(energy.MIN_WINDOW_S + 0.01)
    r = m.stop()
    assert r.method == "rapl" and r.joules == pytest.approx(2.0) and r.avg_power_w > 0
    empty = energy.rapl_meter(str(tmp_path / "none"))
    assert empty.stop().method == "unavailable"


def test_no_nvml_means_unavailable_not_estimated():
    nv_gpu = FakeDevice(absent_spec("cuda"), "cuda", "Fake NVIDIA", "gpu", 1, 1 << 30, 1000, "NVIDIA Corporation")
    m = energy.meter_for(nv_gpu)
    if isinstance(m, (energy.NvmlCounterMeter, energy.NvmlSampledMeter)):
        pytest.skip("a real NVIDIA GPU is present")
    m.start()
    r = m.stop()
    assert r.method == "unavailable" and r.joules is None and r.note


def test_suite_registry_and_sysinfo():
    assert "ciphers" in suites.names()
    with pytest.raises(ciphergrid.errors.InvalidArgument):
        suites.get("nope")
    args = parse([])
    assert args.suite == "ciphers"
    info = sysinfo.collect()
    assert info["cpu_logical"] and info["python"] and "numpy" in info["packages"]
    json.dumps(info)


def test_progress_only_on_a_tty():
    import io

    from ciphergrid.bench.progress import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    plain = io.StringIO()
    with Progress(2, stream=plain) as p:
        assert not p.enabled
        p.row(f"aes-128-ctr enc {GPU.spec} kernel 1 MiB")
        p.advance()
        p.log("FAILED  something")
    assert plain.getvalue() == "FAILED  something\n"
    tty = Tty()
    with Progress(2, stream=tty) as p:
        assert p.enabled
        p.row("row one")
        p.advance()
        p.log("FAILED  loud")
        p.advance()
    assert "FAILED  loud" in tty.getvalue()


def test_checkpoint_keeps_rows_when_the_run_dies(tmp_path, monkeypatch):
    """The --json file is rewritten while the suite runs: a crash leaves a loadable partial file."""
    monkeypatch.setattr(bench, "CHECKPOINT_S", 0.0)
    api = make_api()
    calls = {"n": 0}
    real = api.speed

    def dying_speed(*a, **kw):
        calls["n"] += 1
        if calls["n"] > 4:
            raise SystemExit("simulated crash")
        return real(*a, **kw)

    api.speed = dying_speed
    path = tmp_path / "r.json"
    with pytest.raises(SystemExit):
        bench.main(parse(["--quick", "--device", "native", "--json", str(path)]), api=api, host=HOST)
    res = records.load(path)
    assert res.run["complete"] is False and res.run["devices"][0]["spec"] == "native"
    assert len(res.records) >= 8 and all(r.status == "ok" for r in res.records)


def test_files_suite_verifies_and_times_every_path(tmp_path, capsys):
    """`bench files` on a tiny file: cat, cp, openssl enc, ciphergrid (native) on a file, a
    redirection and a pipe; every ciphergrid row verified against openssl enc before timing."""
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command")
    argv = ["files", "--files-sizes", "1Mi", "--repeats", "1", "--dir", str(tmp_path), "--device", "native"]
    path = tmp_path / "r.json"
    code = bench.main(parse(argv + ["--json", str(path)]), host=HOST)
    assert code == 0
    res = records.load(path)
    got = {(r.cipher, r.device, r.implementation.split()[0]) for r in res.records}
    assert got == {("cat", "-", "file"), ("cp", "-", "file"), ("openssl-enc", "-", "file"),
                   ("aes-128-ctr", "native", "file"), ("cat", "-", "redirect"),
                   ("aes-128-ctr", "auto", "redirect"), ("cat", "-", "pipe"),
                   ("aes-128-ctr", "auto", "pipe")}
    for r in res.records:
        assert r.status == "ok" and r.kind == "file" and r.median_s > 0, r.error
        if r.cipher == "aes-128-ctr":
            assert r.verification["status"] == "passed"
    assert "x cat" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # its work folder is gone


def test_aead_suite_verifies_then_times_kernels_and_api(tmp_path, capsys):
    """`bench aead` on an OpenCL CPU device, tiny shapes: a kernel row (verified by the known
    answers and pyca first) and an API row per shape and direction, OpenSSL's rows where it has
    the AEAD; an API row of at least 1 MiB paired with the copy strawman (its ratio in
    vs_copy)."""
    from conftest import all_devices

    cpu = next((d for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
    if cpu is None:
        pytest.skip("no OpenCL CPU device (or none selected by CIPHERGRID_TEST_DEVICES)")
    argv = ["aead", "--aead-cipher", "chacha20-poly1305", "--aead-shapes", "1x4Ki,16x64Ki",
            "--repeats", "1", "--device", cpu.spec, "--direction", "both"]
    path = tmp_path / "r.json"
    assert bench.main(parse(argv + ["--json", str(path)]), host=HOST) == 0
    res = records.load(path)
    got = sorted((r.kind, r.direction, r.messages, r.size) for r in res.records)
    big = 16 << 16
    assert got == [("e2e", d, n, s) for d in ("decrypt", "encrypt") for n, s in ((1, 4096), (16, big))] \
        + [("kernel", "encrypt", 1, 4096), ("kernel", "encrypt", 16, big)] \
        + [("openssl-allcores", d, n, s) for d in ("decrypt", "encrypt")
           for n, s in ((1, 4096), (16, big))]
    for r in res.records:
        assert r.status == "ok" and r.median_s > 0, r.error
        if r.kind == "kernel":
            assert r.verification["status"] == "passed"
        paired = r.kind == "e2e" and r.size == big
        assert (r.vs_copy is not None) == paired, (r.kind, r.size, r.vs_copy)
        if paired:
            assert 0 < r.vs_copy < 100 and "copy strawman" in r.note
    out = capsys.readouterr().out
    assert "Mmsg/s" in out and "x copy" in out


def test_api_suite_checks_then_times_each_call(tmp_path, capsys, monkeypatch):
    """`bench api` without a CUDA device: the per-call rows on the devices present (one-shot and a
    reused context on host data; their output checked against the oracle first), no resident
    rows; a wrong output fails its rows, untimed."""
    from conftest import all_devices

    cpu = next((d for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
    devs = [cpu.spec] if cpu is not None else []
    argv = ["api", "--cipher", "aes-128-ctr,aes-128-cbc,seed-xts", "--api-calls", "3", "--repeats", "1",
            "--device", "native"] + [x for d in devs for x in ("--device", d)]
    path = tmp_path / "r.json"
    assert bench.main(parse(argv + ["--json", str(path)]), host=HOST) == 0
    res = records.load(path)
    got = sorted((r.cipher, r.device, r.implementation, r.direction) for r in res.records)
    want = sorted((c, d, i, "decrypt" if c.endswith("cbc") else "encrypt")
                  for c in ("aes-128-ctr", "aes-128-cbc", "seed-xts") for d in ["native"] + devs
                  for i in ("one-shot", "context"))
    assert got == want
    for r in res.records:
        assert r.kind == "call" and r.status == "ok" and r.size == 4096 and r.median_s > 0, r.error
        assert r.verification["status"] == "passed"
    assert "us/call" in capsys.readouterr().out
    # a wrong output is caught before anything is timed
    import ciphergrid

    real = ciphergrid.encrypt
    monkeypatch.setattr(ciphergrid, "encrypt", lambda *a, **k: (real(*a, **k), k["out"].__setitem__(0, 0))[0])
    assert bench.main(parse(["api", "--cipher", "aes-128-ctr", "--api-calls", "2", "--repeats", "1",
                             "--device", "native", "--json", str(path)]), host=HOST) == 1
    res = records.load(path)
    assert [r.status for r in res.records] == ["failed", "failed"]
    assert all("differs" in r.error and not r.times_s for r in res.records)


def test_scheduler_suite_rows(tmp_path, capsys):
    """`bench scheduler --quick` on the engines present: the host's copy, each engine alone, the
    scheduled run and the fenced one, each checked first; the scheduled rows say the shares."""
    from conftest import all_devices

    cpu = next((d.spec for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)
    together = "native" + (f",{cpu}" if cpu else "")
    path = tmp_path / "r.json"
    assert bench.main(parse(["scheduler", "--quick", "--repeats", "1", "--sched-devices", together,
                             "--json", str(path)]), host=HOST) == 0
    res = records.load(path)
    got = [(r.cipher, r.device, r.implementation) for r in res.records]
    assert got[0] == ("copy", "host", got[0][2]) and got[0][2].startswith("memcpy-")
    assert got[1:] == [("aes-128-ctr", d, None) for d in together.split(",")] + [
        ("aes-128-ctr", together, "scheduled"), ("aes-128-ctr", together, "scheduled-fenced")]
    for r in res.records:
        assert r.status == "ok" and r.median_s > 0, r.error
    assert all("shares over" in r.note for r in res.records
               if (r.implementation or "").startswith("scheduled"))
    assert "x copy" in capsys.readouterr().out


def test_gpus_suite_without_cuda_says_so(tmp_path, capsys):
    """`bench gpus` (several GPUs, GPU-resident data) on a machine without a CUDA GPU: nothing
    measured, said plainly, no failure; with one it runs in the GPU suite (scripts/gpu-suite.sh)."""
    from conftest import all_devices

    if any(d.runtime == "cuda" for d in all_devices()):
        pytest.skip("a CUDA GPU is present: the GPU suite runs bench gpus")
    path = tmp_path / "r.json"
    assert bench.main(parse(["gpus", "--quick", "--json", str(path)]), host=HOST) == 0
    assert "no CUDA GPU present" in capsys.readouterr().err


def test_mpi_suite_rows(tmp_path):
    """`bench mpi --quick`: one process, then 2 ranks; the MPI output checked against the one
    process's before it is timed; the note says the workers' shares and the manager's cost."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install 'ciphergrid[mpi]')")
    path = tmp_path / "r.json"
    assert bench.main(parse(["mpi", "--quick", "--repeats", "1", "--mpi-ranks", "2",
                             "--mpi-dir", str(tmp_path), "--json", str(path)]), host=HOST) == 0
    res = records.load(path)
    assert [r.implementation for r in res.records] == ["one-process", "mpi-2-ranks"]
    assert all(r.status == "ok" for r in res.records), [r.error for r in res.records]
    assert "manager's work" in res.records[1].note and res.records[1].verification["status"] == "passed"


def test_service_suite_rows(tmp_path, capsys):
    """`bench service`: a service of its own (started and stopped by the suite), each phase a row
    checked against pyca response by response: round trips, one client, N clients, two equal
    clients (shares in the note), 1 MiB beside a stream job, remote clients over TLS on loopback,
    an AEAD batch (through the service and in process), a soak (the server's use before and
    after); the service is gone afterwards."""
    pytest.importorskip("msgpack")
    from ciphergrid.bench import preflight, service

    path = tmp_path / "r.json"
    argv = ["service", "--quick", "--device", "native", "--svc-clients", "3", "--svc-seconds", "0.5",
            "--svc-soak-seconds", "0.5", "--svc-sizes", "4Ki,64Ki",
            "--json", str(path)]
    assert bench.main(parse(argv), host=HOST) == 0
    res = records.load(path)
    assert [r.implementation for r in res.records] == [
        "round trip 4 KiB", "1 client", "3 clients", "2 equal clients", "1 MiB under load",
        "remote TLS, 1 connection", "remote TLS, 2 connections", "AEAD batch", "soak"]
    for r in res.records:
        assert r.status == "ok" and r.median_s > 0, r.error
        assert r.verification["oracle"].startswith("pyca")
    assert "each client's share" in res.records[3].note and "x one client" in res.records[2].note
    latency = res.records[4].resources   # (the other job sized from its measured rate)
    assert latency["other_job_bytes"] >= service.MIN_BIG and latency["other_job_sized_from_gbps"] > 0
    assert f"beside a {preflight.size_text(latency['other_job_bytes'])} stream job" in res.records[4].note
    assert "x one connection" in res.records[6].note
    assert "in this process" in res.records[7].note and res.records[7].cipher == "aes-128-gcm"
    soak = res.records[8]
    assert soak.resources["server_after"]["fds"] is not None and "descriptors" in soak.note
    assert "phase" in capsys.readouterr().out


def _seal_rows(tmp_path, extra=()):
    """`bench seal` on 1 MiB (native, one repeat) with the random-access file of 32 MiB: its
    records, every one ok or skipped for a stated reason."""
    pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
    path = tmp_path / "r.json"
    argv = ["seal", "--seal-sizes", "1Mi", "--repeats", "1", "--device", "native", "--dir",
            str(tmp_path), "--seal-big", "32Mi", "--seal-ranges", "5", "--json", str(path), *extra]
    assert bench.main(parse(argv), host=HOST) == 0
    assert not list(tmp_path.glob("cg-bench-seal-*"))   # (the folder, the service's socket gone)
    return records.load(path).records


def test_seal_suite_rows(tmp_path):
    """`bench seal`: cat, seal and open in process and through the bench's own service, pyca's
    stream and age's, each output checked before it is timed, the ratios noted; the MPI rows
    skipped with the reason while seal/open take no --mpi; the random-access rows read ranges
    of zeros."""
    import shutil

    from ciphergrid.bench import seal

    rows = _seal_rows(tmp_path)
    got = [(r.device, r.implementation, r.status) for r in rows]
    age = "ok" if shutil.which("age") and shutil.which("age-keygen") else "skipped"
    mpi = seal.mpi_support()
    timed = [("-", "copy", "ok"), ("native", "seal", "ok"), ("native", "open", "ok"),
             ("native", "seal (--service)", "ok"), ("native", "open (--service)", "ok"),
             ("pyca", "seal", "ok"), ("pyca", "open", "ok")]
    ages = [("age", "seal (age -e)", age), ("age", "open (age -d)", age)]
    mpis = [("native", "seal (mpiexec -n 2 --mpi)", "skipped"),
            ("native", "open (mpiexec -n 2 --mpi)", "skipped")] if mpi else []
    # (the timed rows first, then the skipped ones: an MPI command that runs is timed, so it
    # is left out of this exact list)
    assert [g for g in got if "mpiexec" not in g[1] or mpi] == (
        timed + (ages if age == "ok" else []) + mpis + (ages if age != "ok" else []) + [
            ("native", "seal (the random-access file)", "ok"),
            ("native", "open 1 MiB at a random offset (API)", "ok"),
            ("native", "open 1 MiB at a random offset (CLI)", "ok")])
    for r in rows:
        if r.status == "ok":
            assert r.median_s > 0
            assert r.verification["status"] == ("not-applicable" if r.device == "-" else "passed"), r
        else:
            assert r.error and r.verification["status"] == "not-run" and not r.times_s
    assert rows[3].direction == "encrypt" and rows[4].direction == "decrypt"
    for r in rows[1:5]:
        assert "x cat" in r.note and "x pyca's single-core stream" in r.note
        assert ("x age" in r.note) == (age == "ok"), r.note
    if age == "ok":
        aged = next(r for r in rows if r.implementation == "seal (age -e)")
        assert aged.verification["oracle"].startswith("age -d") and "x age" not in aged.note
    if mpi is not None:
        assert [r.error for r in rows if "mpiexec" in r.implementation] == [mpi, mpi]
    else:   # (seal/open take --mpi and mpiexec is on PATH: the rows run and check)
        assert [(r.status, r.verification["status"]) for r in rows
                if "mpiexec" in r.implementation] == [("ok", "passed")] * 2
    assert "start-up" in rows[-1].note


def test_seal_suite_without_age(tmp_path, monkeypatch):
    """Without age (or age-keygen) on PATH the age rows are skipped, saying so, and the run
    still succeeds; no ratio to age is noted."""
    import shutil

    from ciphergrid.bench import seal

    which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name == "age" else which(name, *a, **k))
    monkeypatch.setattr(seal, "_random_access", lambda *a, **k: [])
    monkeypatch.setattr(seal, "mpi_support", lambda: "--mpi not supported for seal/open yet")
    rows = _seal_rows(tmp_path)
    aged = [r for r in rows if r.cipher == "age"]
    assert [(r.implementation, r.status) for r in aged] == [("seal (age -e)", "skipped"),
                                                            ("open (age -d)", "skipped")]
    assert all(r.error == "age not on PATH (Debian: apt-get install age)" for r in aged)
    assert not any("x age" in (r.note or "") for r in rows)
    assert [r.status for r in rows if r.cipher == seal.SCHEME and r.device == "native"
            and "mpiexec" not in r.implementation] == ["ok"] * 4


def test_seal_service_starts_and_stops(tmp_path):
    """bench seal's own service answers on its socket and is gone, socket and all, on leaving;
    one that cannot start (a socket path past the limit) says why instead."""
    from ciphergrid.bench import seal

    logged = []
    with seal.served(str(tmp_path), logged.append) as (sock, why):
        assert why is None
        with ciphergrid.connect(sock) as c:
            pid = c.status()["pid"]
    assert not os.path.exists(sock) and not logged and not list(tmp_path.iterdir())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    with seal.served(str(deep), logged.append) as (sock, why):
        assert sock is None and why.startswith("the benchmark's service did not start")


# ------------------------------------------------------------------------- issue 46
def _absent_cuda_spec() -> str:
    """A CUDA spec beyond the CUDA devices present (never one that exists here)."""
    n = sum(1 for d in ciphergrid.devices() if d.runtime == "cuda")
    return f"cuda:{n}"


@pytest.mark.parametrize("suite", suites.names())
def test_every_suite_refuses_an_absent_device(suite, capsys):
    """`ciphergrid bench SUITE --device <absent>`: one line and exit 2 before anything starts (no
    plan line, no table, no service, no file)."""
    import time

    from ciphergrid.cli import main

    absent = _absent_cuda_spec()
    t0 = time.monotonic()
    assert main(["bench", suite, "--quick", "--device", absent]) == 2
    assert time.monotonic() - t0 < 30
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and absent in err, err
    if suite == "scheduler":
        assert main(["bench", suite, "--quick", "--sched-devices", f"native,{absent}"]) == 2


def test_gpu_token_without_a_gpu_is_refused():
    from ciphergrid.bench import preflight

    api = methodology.Api(devices=lambda: [NATIVE])
    with pytest.raises(ciphergrid.errors.DeviceNotFound, match="no GPU"):
        preflight.check_devices(api, parse(["api", "--device", "gpu"]))
    preflight.check_devices(api, parse(["api", "--device", "native,auto", "--device", "openssl"]))
    preflight.check_devices(make_api(), parse(["api", "--device", GPU.spec, "--device", "gpu"]))


def test_latency_job_is_sized_to_outlast_the_requests():
    """The other client's job: at its measured rate it lasts 10x the 1 MiB requests' time alone
    plus a second, in whole 64 MiB; a slow host gets a larger job, never a fixed 256 MiB."""
    from ciphergrid.bench import service

    alone = [0.004] * 20                       # a loaded 2-core VM: 4 ms per 1 MiB request
    for rate in (0.2e9, 1e9, 5e9):
        big = service.big_for(rate, alone)
        assert big % service.MIN_BIG == 0 and big >= service.MIN_BIG
        assert big / rate >= service.SLOWDOWN * sum(alone) + service.MARGIN_S
    assert service.big_for(1e9, alone) > 256 << 20
    assert service.big_for(1e3, [1e-6]) == service.MIN_BIG


def test_plan_line_and_time_left(capsys):
    """Before a suite starts: what it will do and roughly how long; after its first step: the
    time left at that pace."""
    import io

    from ciphergrid.bench.progress import Progress

    api = make_api()
    for name in suites.names():
        out = io.StringIO()
        line = bench.announce(suites.get(name), parse([name]), api, out=out)
        assert line.startswith(f"bench {name}: ") and out.getvalue() == line + "\n"
    long = bench.announce(suites.get("service"), parse(["service"]), api, out=io.StringIO())
    assert "a soak of 480 s" in long and "min (estimated from its sizes" in long
    quick = bench.announce(suites.get("service"), parse(["service", "--quick"]), api, out=io.StringIO())
    assert " s (estimated" in quick
    err = io.StringIO()
    p = Progress(10, stream=err, name="bench api")
    p._t0 -= 20.0
    p.advance()
    assert err.getvalue().startswith("bench api: 1 of 10 steps in 20.") and "~3 min left" in err.getvalue()


def test_room_on_a_ram_disk_and_the_random_access_file(tmp_path, monkeypatch):
    """A RAM disk's room is half the memory available, not its free space; the random-access
    file is cut to whole 64 MiB that fit (its zeros counted where they cannot be sparse)."""
    import shutil as sh

    from ciphergrid.bench import preflight, seal

    monkeypatch.setattr(preflight, "fs_type", lambda p: "tmpfs")
    monkeypatch.setattr(preflight, "mem_available", lambda: 1 << 30)
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda p: sh._ntuple_diskusage(20 << 30, 4 << 30, 16 << 30))
    allowed, bound = preflight.room(str(tmp_path))
    assert allowed == 512 << 20 and "RAM disk" in bound
    monkeypatch.setattr(preflight, "fs_type", lambda p: "ext4")
    assert preflight.room(str(tmp_path))[0] == 16 << 30
    length = lambda n: n + n // 1000   # noqa: E731 (a sealed file a little longer than its message)
    assert seal.big_fit(16 << 30, 512 << 20, True, length) == 384 << 20
    assert seal.big_fit(16 << 30, 512 << 20, False, length) == 192 << 20
    assert seal.big_fit(64 << 20, 32 << 20, True, length) == 0
    assert seal.big_fit(64 << 20, 1 << 30, False, length) == 64 << 20
    f = tmp_path / "z"
    if preflight.sparse_zeros(str(f), 256 << 20):   # (a file system with holes keeps it sparse)
        assert preflight.allocated(str(f)) < 1 << 20 and f.stat().st_size == 256 << 20


def test_fs_type_from_the_mount_table(tmp_path):
    """`bench files` names the file system as /proc/mounts does (ext4, not statfs's ext2/ext3)."""
    from ciphergrid.bench import files, preflight

    with open("/proc/mounts") as f:
        root = [line.split()[2] for line in f if line.split()[1] == "/"]
    assert files._fs_type("/") == root[-1] != "ext2/ext3"
    if os.path.isdir("/dev/shm"):
        assert preflight.fs_type("/dev/shm") == "tmpfs" and preflight.is_ram_fs("/dev/shm")


def _ok(rec, seconds=0.01):
    rec.set_times([seconds, seconds])
    return rec


def test_summary_labels_each_row(capsys):
    """The summary table of files, ablation, seal, service: each row says its path or phase;
    seal's open rows are decryptions; sizes in the largest unit that gives >= 1."""
    from ciphergrid.bench import seal, service

    rows = [_ok(service._record("native", p, 1285632000)) for p in ("1 client", "4 clients", "soak")]
    rows += [_ok(seal._record(seal.SCHEME, "native", p, 16 << 20, "")) for p in ("seal", "open")]
    out = io.StringIO()
    bench.print_summary(records.Results(run={}, records=rows), out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:4] == ["cipher", "dir", "what", "device"]
    assert len(set(x.split("  native")[0] for x in lines[1:])) == 5, lines
    assert "1 client" in lines[1] and "1.20 GiB" in lines[1] and "KiB" not in lines[1]
    assert " dec  open " in lines[5] and " enc  seal " in lines[4]


def test_table_units():
    from ciphergrid.bench import ablation, preflight
    from ciphergrid.bench.methodology import human_size
    from ciphergrid.bench.report import human_size as report_size

    assert [preflight.size_text(n) for n in (16, 4096, 1255500 << 10, 3 << 29, 100 << 20, 1500)] == \
        ["16 B", "4 KiB", "1.20 GiB", "1.50 GiB", "100 MiB", "1.46 KiB"]
    assert human_size(1255500 << 10) == report_size(1255500 << 10) == "1.20 GiB"
    assert preflight.signed_ms(-0.063e-3) == "-0.063 ms" and preflight.signed_ms(0.12e-3) == "+0.120 ms"
    rec = _ok(records.Record(cipher="aes-128-ctr", algorithm="aes", key_bits=128, mode="ctr", direction="encrypt",
                     device=absent_spec("opencl", 2), device_name="x", device_kind="cpu", runtime="opencl",
                     kind="kernel", size=1 << 20, implementation="baseline"))
    buf = io.StringIO()
    real, sys.stdout = sys.stdout, buf
    try:
        ablation._print_table([rec])
    finally:
        sys.stdout = real
    row = buf.getvalue().splitlines()[1]
    assert "nan" not in row and row.split()[-1] == "-", row


def test_tdea_deprecation_unsaid_in_a_bench(monkeypatch, capsys):
    """A suite that touches pyca's TripleDES (its oracle) prints no CryptographyDeprecationWarning;
    other warnings still show."""
    import warnings

    def run(args, ctx):
        from cryptography.hazmat.primitives.ciphers import algorithms

        algorithms.TripleDES   # (pyca warns on this name)
        warnings.warn("another warning", UserWarning)
        return {}

    monkeypatch.setitem(suites._SUITES, "tdea", suites.Suite("tdea", run))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert bench.main(argparse.Namespace(suite="tdea", json=None), api=make_api(), host=HOST) == 0
    assert [str(w.message) for w in got] == ["another warning"]


def test_progress_bar_and_summary_share_units(monkeypatch):
    """The file progress bar counts bytes in binary units (MiB), as its summary line does."""
    from rich.progress import DownloadColumn

    from ciphergrid import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    with progress.Progress(3 << 20, verb="encrypted") as p:
        p.advance(3 << 20)
        col = next(c for c in p._p.columns if isinstance(c, DownloadColumn))
        assert col.binary_units and "3.0 MiB" in p.summary()


def test_scheduler_and_mpi_fit_memory(monkeypatch, tmp_path):
    """`bench scheduler`'s arrays are cut to what memory allows (a line says so); `bench mpi`'s
    files that cannot fit its folder are refused in one line before anything is written."""
    from ciphergrid.bench import mpi, preflight, scheduler
    from ciphergrid.settings import mpiexec_path

    said = []
    monkeypatch.setattr(preflight, "mem_available", lambda: 1 << 30)
    assert scheduler._fit(1 << 30, said.append) == 128 << 20 and "cut to 128 MiB" in said[0]
    assert scheduler._fit(64 << 20, said.append) == 64 << 20 and len(said) == 1
    if mpiexec_path() is None:
        return
    monkeypatch.setattr(mpi, "room", lambda folder: (2 << 20, "the free space of x"))
    with pytest.raises(ciphergrid.errors.InvalidArgument, match="do not fit the free space"):
        bench.main(parse(["mpi", "--quick", "--mpi-dir", str(tmp_path)]), api=make_api(), host=HOST)
    assert list(tmp_path.iterdir()) == []


def test_ablation_without_a_kernel_device_says_so():
    """`bench ablation --device native`: the native engine has no kernels: one line, exit 2,
    not an empty table."""
    with pytest.raises(ciphergrid.errors.DeviceNotFound, match="OpenCL or CUDA"):
        bench.main(parse(["ablation", "--quick", "--device", "native"]), api=make_api(), host=HOST)


@pytest.mark.parametrize("name,kind,key_len", [("aes-128-gcm", "AESGCM", 16),
                                               ("chacha20-poly1305", "ChaCha20Poly1305", 32)])
def test_aead_reference_past_pycas_one_shot_limit(monkeypatch, name, kind, key_len):
    """A message past pyca's one-shot limit (2^31 - 1 bytes) is still checked: GCM by pyca's
    streaming encryptor, ChaCha20-Poly1305 by OpenSSL (the 4 GiB message of the goals failed)."""
    import os

    from cryptography.hazmat.primitives.ciphers import aead as pyca

    from ciphergrid.bench import aead as bench_aead

    key, nonce, aad, pt = os.urandom(key_len), os.urandom(12), b"header", os.urandom(3 << 20 | 5)
    want = (pyca.AESGCM if kind == "AESGCM" else pyca.ChaCha20Poly1305)(key).encrypt(nonce, pt, aad)
    monkeypatch.setattr(bench_aead, "PYCA_ONE_SHOT_MAX", 1 << 20)
    assert bench_aead._reference(name, kind, key, nonce, aad, pt) == want
