#!/usr/bin/env python3
"""Every open GPU goal of the issues, measured in one call (`scripts/gpu-suite.sh goals`).

Stages, each a bounded subprocess whose JSON lands in OUT (a stage that fails or runs out of time
leaves its goals "unmeasured", never guessed):

  api        ciphergrid bench api: every block cipher·mode through the API against its kernel
             (1 GiB GPU-resident, fresh key per call), 4 KiB per call one-shot and through a
             context, one GPU-resident AEAD message against the 16 KiB-batch kernel
  aead       ciphergrid bench aead host -> host: one 4 GiB message and a 64Ki x 16 KiB batch of
             AES-128-GCM and ChaCha20-Poly1305, each paired call by call with the copy strawman
  scheduler  ciphergrid bench scheduler: the GPU alone, OpenSSL alone, both (device list), with
             the host's memory copy on every core; AES-128-CTR 4 GiB, an AES-128-GCM batch
  sealed     a sealed message (Cobblestone-128) of 1 GiB host -> host through the GPU, paired
             call by call with the copy strawman of as many bytes on the same GPU; a GPU-resident
             sealed message of 1 GiB (CuPy arrays) against the AES-128-GCM 16 KiB-batch kernel
             (scripts/dev/sealed_probe.py --resident)
  files      a 4 GiB file on /dev/shm: cat, ciphergrid encrypt in process, through a warm
             service, ciphergrid seal/open (--device auto) in process and through the service,
             all --no-sync, best of 2
  service    ciphergrid bench service on the GPU: the 4 KiB round trip, 1 and 64 clients
  kernel     ciphergrid bench ablation: the AES-128-CTR kernel of the default ("fast") and of each
             CTR variant of ciphers/aes.py (KERNEL_IMPLS), 256 MiB GPU-resident, side by side
             (each checked against OpenSSL before it is timed)

Then one table: goal, figure, the goal's bound, met / missed / unmeasured.
Usage: goals.py [--out DIR] [--stages api,aead,...] [--small] (--small: CPU-sized smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
#: the whole run's end (time.monotonic()); stages get what is left of it
DEADLINE = [float("inf")]
CG = [PY, "-m", "ciphergrid"]
STAGES = ("kernel", "api", "aead", "scheduler", "sealed", "files", "service")
#: the kernel stage's implementations of AES (ciphers/aes.py): the default first, then the CTR steps
KERNEL_IMPLS = ("fast", "+dp4a-index", "+ctr-subtiles", "+last-round-permutes", "+64-registers",
                "+40-registers", "alt-ctr-2-at-once")


def log(msg: str) -> None:
    print(f"[goals {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_stage(name: str, cmd: list[str], limit: float, out: Path) -> bool:
    limit = min(limit, DEADLINE[0] - time.monotonic())
    if limit < 20:
        log(f"{name}: skipped, the run's time is spent")
        return False
    log(f"{name}: {' '.join(cmd)} (at most {limit:.0f} s)")
    t = time.perf_counter()
    with open(out / f"{name}.txt", "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            rc = "timeout"
    log(f"{name}: rc={rc} in {time.perf_counter() - t:.0f} s")
    return rc == 0


def records(path: Path) -> list[dict]:
    try:
        return [r for r in json.loads(path.read_text())["records"] if r.get("status") == "ok"]
    except (OSError, ValueError, KeyError):
        return []


def cuda_spec() -> str | None:
    r = subprocess.run(CG + ["devices"], capture_output=True, text=True)
    for line in r.stdout.splitlines()[1:]:
        if line.split()[:2][1:] == ["cuda"]:
            return line.split()[0]
    return None


class Table:
    def __init__(self):
        self.rows = []

    def add(self, issue, goal, figure, bound, met, note=""):
        self.rows.append({"issue": issue, "goal": goal, "figure": figure, "bound": bound,
                          "verdict": "unmeasured" if met is None else ("met" if met else "missed"),
                          "note": note})

    def unmeasured(self, issue, goal, bound, why):
        self.add(issue, goal, "-", bound, None, why)

    def print(self):
        w = [max(len(str(r[k])) for r in self.rows + [dict(issue="issue", goal="goal", figure="figure",
                                                            bound="goal", verdict="verdict")])
             for k in ("issue", "goal", "figure", "bound", "verdict")]
        head = ("issue", "goal", "figure", "bound", "verdict")
        print("| " + " | ".join(h.ljust(x) for h, x in zip(head, w)) + " | note |")
        print("|" + "|".join("-" * (x + 2) for x in w) + "|---|")
        for r in self.rows:
            print("| " + " | ".join(str(r[k]).ljust(x) for k, x in zip(head, w)) + f" | {r['note']} |")


# ------------------------------------------------------------------------------- the stages
def stage_kernel(cuda, out, small):
    cmd = CG + ["bench", "ablation", "--ablation-cipher", "aes-128-ctr", "--device", cuda,
                "--ablation-size", "16Mi" if small else "256Mi", "--repeats", "3" if small else "5",
                "--ablation-impls", *KERNEL_IMPLS, "--json", str(out / "kernel.json")]
    run_stage("kernel", cmd, 120 if small else 60, out)


def judge_kernel(t, out, cuda):
    """Each implementation's GB/s per SM·GHz against the stretch goal, and against the default's
    in the same run."""
    by = {r.get("implementation"): r for r in records(out / "kernel.json") if r.get("gbps_per_sm_ghz")}
    base = by.get("fast")
    for impl in KERNEL_IMPLS:
        goal = f"stretch: AES-128-CTR kernel, {impl}{' (the default)' if impl == 'fast' else ''}"
        r = by.get(impl)
        if r is None:
            t.unmeasured(50, goal, ">= 2.2 GB/s per SM·GHz", "failed or not run (kernel.txt)")
            continue
        res = r.get("resources") or {}
        note = f"{res.get('registers_per_item') or '-'} regs, occupancy {res.get('occupancy') or '-'}"
        if base and impl != "fast":
            note = f"{r['gbps_per_sm_ghz'] / base['gbps_per_sm_ghz']:.3f} x fast; " + note
        t.add(50, f"{goal}, {r['size'] >> 20} MiB", f"{r['gbps_per_sm_ghz']:.3f} GB/s per SM·GHz "
              f"({r['gbps']:.1f} GB/s at {r.get('sm_clock_mhz')} MHz)", ">= 2.2",
              r["gbps_per_sm_ghz"] >= 2.2, note)


def stage_api(cuda, out, small):
    cmd = CG + ["bench", "api", "--device", cuda, "--repeats", "3" if small else "5",
                "--api-calls", "50" if small else "400", "--json", str(out / "api.json")]
    if small:
        cmd += ["--api-size", "1Mi", "--api-aead-size", "4Mi", "--cipher", "aes-128-ctr,camellia-128-xts"]
    run_stage("api", cmd, 90 if small else 150, out)


def judge_api(t, out, cuda):
    rows = records(out / "api.json")
    if not rows:
        for g, b in (("every block cipher·mode: API / kernel at 1 GiB", ">= 0.97"),
                     ("4 KiB one-shot per call", "<= 0.15 ms"), ("4 KiB through a context", "<= 0.05 ms"),
                     ("one resident AEAD message / 16 KiB-batch kernel", ">= 0.9")):
            t.unmeasured(50, g, b, "the api stage gave no rows")
        return
    blocks = [r for r in rows if r["kind"] == "api" and r.get("messages") in (None, 1)
              and r.get("mode") and r.get("vs_kernel") is not None and "gcm" not in r["cipher"]
              and "poly1305" not in r["cipher"]]
    if blocks:
        worst = min(blocks, key=lambda r: r["vs_kernel"])
        below = [r for r in blocks if r["vs_kernel"] < 0.97]
        t.add(50, f"API / kernel at {blocks[0]['size'] >> 20} MiB, {len(blocks)} cipher·modes",
              f"min {worst['vs_kernel']:.3f} ({worst['cipher']}), median "
              f"{statistics.median(r['vs_kernel'] for r in blocks):.3f}", ">= 0.97 each", not below,
              f"{len(below)} below: " + ", ".join(f"{r['cipher']} {r['vs_kernel']:.3f}" for r in below[:8]))
    for impl, bound in (("one-shot", 0.15e-3), ("context", 0.05e-3)):
        calls = [r for r in rows if r["kind"] == "call" and r.get("implementation") == impl
                 and r["device"] == cuda]
        if calls:
            worst = max(calls, key=lambda r: r["median_s"])
            over = [r for r in calls if r["median_s"] > bound]
            t.add(50, f"4 KiB per call, {impl}, {len(calls)} cipher·modes on {cuda}",
                  f"max {worst['median_s'] * 1e3:.3f} ms ({worst['cipher']})", f"<= {bound * 1e3:.2f} ms",
                  not over, f"{len(over)} over: " + ", ".join(f"{r['cipher']} {r['median_s'] * 1e3:.3f}"
                                                          for r in over[:8]))
        else:
            t.unmeasured(50, f"4 KiB per call, {impl}", f"<= {bound * 1e3:.2f} ms", "no rows")
    aead = [r for r in rows if r["kind"] == "api" and r.get("vs_kernel") is not None
            and ("gcm" in r["cipher"] or "poly1305" in r["cipher"])]
    for r in aead:
        t.add(50, f"one resident {r['cipher']} message ({r['size'] >> 20} MiB{', ' + r['implementation'] if r.get('implementation') else ''}) / 16 KiB-batch kernel",
              f"{r['vs_kernel']:.3f} ({r['gbps']:.1f} GB/s)", ">= 0.9", r["vs_kernel"] >= 0.9)
    if not aead:
        t.unmeasured(50, "one resident AEAD message / 16 KiB-batch kernel", ">= 0.9", "no rows")
    k = [r for r in rows if r["kind"] == "kernel" and r["cipher"] == "aes-128-ctr" and r.get("gbps_per_sm_ghz")]
    if k:
        r = k[0]
        t.add(50, "stretch: AES-128-CTR kernel per SM·GHz", f"{r['gbps_per_sm_ghz']:.2f} GB/s "
              f"({r['gbps']:.1f} GB/s at {r.get('sm_clock_mhz')} MHz)", ">= 2.2", r["gbps_per_sm_ghz"] >= 2.2)


def stage_aead(cuda, out, small):
    shapes = "1x8Mi,64x16Ki" if small else "1x4Gi,65536x16Ki"
    cmd = CG + ["bench", "aead", "--device", cuda, "--aead-cipher", "aes-128-gcm,chacha20-poly1305",
                "--aead-shapes", shapes, "--direction", "encrypt", "--no-openssl",
                "--repeats", "3" if small else "5", "--json", str(out / "aead.json")]
    run_stage("aead", cmd, 90 if small else 80, out)


def judge_aead(t, out, cuda):
    rows = [r for r in records(out / "aead.json") if r["kind"] == "e2e" and r.get("vs_copy")]
    one = [r for r in rows if r.get("messages") == 1]
    for r in one:
        t.add(50, f"one {r['cipher']} message of {r['size'] >> 20} MiB host -> host / copy strawman",
              f"{r['vs_copy']:.3f} ({r['gbps']:.2f} GB/s)", ">= 0.9", r["vs_copy"] >= 0.9)
    for r in rows:
        if (r.get("messages") or 1) > 1:
            t.add(47, f"{r['cipher']} batch {r['messages']} x {r['size'] // r['messages'] >> 10} KiB "
                      "host -> host / copy (compare with the first run)",
                  f"{r['vs_copy']:.3f} ({r['gbps']:.1f} GB/s)", "within 2 % of before", None,
                  "the verdict is the comparison of two runs (docs/benchmarks.md)")
    if not one:
        t.unmeasured(50, "one AEAD message host -> host / copy strawman", ">= 0.9", "the aead stage gave no rows")


def stage_scheduler(cuda, out, small):
    cmd = CG + ["bench", "scheduler", "--sched-size", "16Mi" if small else "4Gi", "--repeats", "3",
                "--sched-devices", f"{cuda},native", "--cipher", "aes-128-ctr,aes-128-gcm",
                "--json", str(out / "scheduler.json")]
    if small:
        cmd += ["--sched-aead-shape", "256x16Ki"]
    run_stage("scheduler", cmd, 90 if small else 90, out)


def judge_scheduler(t, out, cuda):
    rows = records(out / "scheduler.json")
    copy = [r for r in rows if r["cipher"] == "copy" and r["device"] == "host"]
    host_copy = max((r["throughput_bps"] for r in copy), default=None)
    for name in ("aes-128-ctr", "aes-128-gcm"):
        mine = [r for r in rows if r["cipher"] == name and r["kind"] == "e2e"]
        alone = [r for r in mine if "," not in r["device"] and not r.get("implementation")]
        both = [r for r in mine if "," in r["device"] and r.get("implementation") == "scheduled"]
        if not alone or not both:
            t.unmeasured(50, f"{name}: GPU + OpenSSL together", "min(1.3 x faster alone, 0.9 x host copy)",
                         "the scheduler stage gave no rows")
            continue
        fast = max(r["throughput_bps"] for r in alone)
        bound = min(1.3 * fast, 0.9 * host_copy) if host_copy else 1.3 * fast
        got = both[0]["throughput_bps"]
        # where memory cannot carry both, the scheduler may pick the faster alone (within 3 %)
        met = got >= bound or (got >= 0.97 * fast and host_copy and 0.9 * host_copy < 1.3 * fast
                               and got >= 0.97 * min(fast, 0.9 * host_copy))
        t.add(50, f"{name} host -> host, {both[0]['device']} ({both[0]['size'] >> 20} MiB"
              f"{', batch' if both[0].get('messages') else ''})",
              f"{got / 1e9:.2f} GB/s (alone best {fast / 1e9:.2f}; host copy "
              f"{host_copy / 1e9 if host_copy else float('nan'):.2f})",
              f">= {bound / 1e9:.2f} GB/s", met, (both[0].get("note") or "")[:120])


SEALED_SNIPPET = r"""
import json, os, statistics, sys, time
import numpy as np
import ciphergrid
from ciphergrid.formats import cobblestone as cb
from ciphergrid.bench.methodology import Api
from ciphergrid.bench.pipeline import copy_strawman
spec, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dev = next(d for d in ciphergrid.devices() if d.spec == spec)
x = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
key = os.urandom(16)
s = cb.Sealer(cb.scheme(False), key, b"goals", device=spec)
buf = np.empty(cb.sealed_length(n) - cb.HEADER, dtype=np.uint8)
s.seal(x, True, out=buf)
head = s.header()
got = cb.decrypt(head + buf.tobytes(), key, b"goals", device="native")
assert got == x.tobytes(), "the GPU's sealed message does not open to its input"
copy = copy_strawman(Api(), dev, x, np.empty_like(x))
pairs = []
for _ in range(5):
    t = time.perf_counter(); copy(); c = time.perf_counter() - t
    s = cb.Sealer(cb.scheme(False), key, b"goals", device=spec)
    t = time.perf_counter(); s.seal(x, True, out=buf); a = time.perf_counter() - t
    pairs.append((c, a))
res = {"size": n, "seal_s": statistics.median(a for _, a in pairs),
       "copy_s": statistics.median(c for c, _ in pairs),
       "vs_copy": statistics.median(c / a for c, a in pairs)}
json.dump(res, open(out, "w"))
print(res)
"""


def stage_sealed(cuda, out, small):
    n = (16 << 20) if small else (1 << 30)
    run_stage("sealed", [PY, "-c", SEALED_SNIPPET, cuda, str(n), str(out / "sealed.json")],
              90 if small else 60, out)
    probe = Path(__file__).resolve().parent / "sealed_probe.py"
    run_stage("sealed_resident", [PY, str(probe), "--resident", "--device", cuda, "--size", str(n),
                                  "--repeats", "5", "--json", str(out / "sealed_resident.json")],
              60, out)


def judge_sealed(t, out, cuda):
    try:
        res = json.loads((out / "sealed.json").read_text())
    except (OSError, ValueError):
        t.unmeasured(49, "a sealed message host -> host through the GPU / copy strawman", ">= 0.95",
                     "the sealed stage gave no figure (sealed.txt)")
        judge_sealed_resident(t, out)
        return
    t.add(49, f"a sealed message of {res['size'] >> 20} MiB host -> host through {cuda} / copy strawman",
          f"{res['vs_copy']:.3f} ({res['size'] / res['seal_s'] / 1e9:.2f} GB/s; copy "
          f"{res['size'] / res['copy_s'] / 1e9:.2f})", ">= 0.95", res["vs_copy"] >= 0.95)
    judge_sealed_resident(t, out)


def judge_sealed_resident(t, out):
    """The GPU-resident sealed message's seal and open against the 16 KiB-batch kernel (device
    seconds between events around each call; sealed_probe.py --resident)."""
    goal = "a GPU-resident sealed message / the 16 KiB-batch kernel"
    try:
        res = json.loads((out / "sealed_resident.json").read_text())
    except (OSError, ValueError):
        t.unmeasured(49, goal, ">= 0.9", "the sealed_resident stage gave no figure "
                     "(sealed_resident.txt)")
        return
    n = res["size"]
    for k in ("seal", "open"):
        v = res[k]
        t.add(49, f"{goal}, {k} of {n >> 20} MiB",
              f"{v['vs_kernel']:.3f} ({n / v['s'] / 1e9:.1f} GB/s; kernel "
              f"{n / res['kernel_s'] / 1e9:.1f})", ">= 0.9", v["vs_kernel"] >= 0.9)


def best_of(cmd, n=2, shell=False, env=None) -> float | None:
    best = None
    for _ in range(n):
        if time.monotonic() > DEADLINE[0] - 10:
            log("the run's time is spent: no more commands")
            return best
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, shell=shell, env=env, capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            log(f"timed out (60 s): {cmd if isinstance(cmd, str) else ' '.join(cmd)}")
            return None
        dt = time.perf_counter() - t
        if r.returncode != 0:
            log(f"failed ({r.returncode}): {cmd if isinstance(cmd, str) else ' '.join(cmd)}: "
                f"{r.stderr.decode(errors='replace').strip()[-300:]}")
            return None
        best = dt if best is None else min(best, dt)
    return best


def stage_files(cuda, out, small):
    """cat, encrypt (in process, warm service), seal/open of one file on /dev/shm."""
    size = (64 << 20) if small else (4 << 30)
    d = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None, prefix="goals-"))
    res = {"size": size, "cuda": cuda}
    sock = d / "svc.sock"
    server = None
    try:
        src, dst = d / "in", d / "out"
        with open(src, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(size >> 20):
                f.write(block)
        (d / "k").write_text(os.urandom(16).hex() + "\n")
        key = str(d / "k")
        res["cat_s"] = best_of(f"cat {src} > {dst}", shell=True)
        enc = CG + ["encrypt", "-c", "aes-128-ctr", "--key-file", key, "--iv", "00" * 16,
                    "--in", str(src), "--out", str(dst), "--no-sync", "-q", "--device", "auto"]
        res["encrypt_s"] = best_of(enc + ["--service", "off"])
        server = subprocess.Popen(CG + ["serve", "--socket", str(sock)], stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.1)
        subprocess.run(enc + ["--service", str(sock)], capture_output=True, timeout=60)  # warm-up
        res["encrypt_service_s"] = best_of(enc + ["--service", str(sock)])
        seal = CG + ["seal", "--key-file", key, "--context", "goals", "--in", str(src),
                     "--out", str(d / "sealed"), "--no-sync", "--device", "auto"]
        res["seal_s"] = best_of(seal)
        opn = CG + ["open", "--key-file", key, "--context", "goals", "--in", str(d / "sealed"),
                    "--out", str(dst), "--no-sync", "--device", "auto"]
        res["open_s"] = best_of(opn)
        res["seal_service_s"] = best_of(seal + ["--service", str(sock)])
        res["open_service_s"] = best_of(opn + ["--service", str(sock)])
        res["startup_s"] = best_of(CG + ["encrypt", "-c", "aes-128-ctr", "--key-file", key, "--iv",
                                         "00" * 16, "--in", "/dev/null", "--out", str(d / "empty"),
                                         "--no-sync", "-q", "--service", "off"])
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(d, ignore_errors=True)
        (out / "files.json").write_text(json.dumps(res, indent=1))
    log(f"files: {res}")


def judge_files(t, out, cuda):
    try:
        res = json.loads((out / "files.json").read_text())
    except (OSError, ValueError):
        res = {}
    cat = res.get("cat_s")
    size = res.get("size", 0)
    for key, issue, what in (("encrypt_s", 49, "ciphergrid encrypt aes-128-ctr file -> file, in process"),
                             ("encrypt_service_s", 50, "ciphergrid encrypt file -> file through a warm service"),
                             ("seal_s", 49, "ciphergrid seal file -> file (--device auto)"),
                             ("open_s", 49, "ciphergrid open file -> file (--device auto)"),
                             ("seal_service_s", 49, "ciphergrid seal file -> file through a warm service"),
                             ("open_service_s", 49, "ciphergrid open file -> file through a warm service")):
        got = res.get(key)
        if not cat or not got:
            t.unmeasured(issue, what, ">= 0.9 x cat", "not run or failed (files.txt)")
            continue
        t.add(issue, f"{what}, {size >> 20} MiB on /dev/shm", f"{cat / got:.2f} x cat ({size / got / 1e9:.2f} "
              f"GB/s; cat {size / cat / 1e9:.2f})", ">= 0.9 x cat", cat / got >= 0.9,
              f"start-up {res.get('startup_s') or 0:.2f} s included")


def stage_service(cuda, out, small):
    cmd = CG + ["bench", "service", "--device", cuda, "--svc-clients", "8" if small else "64",
                "--svc-seconds", "1" if small else "3", "--svc-soak-seconds", "0",
                "--svc-big", "64Mi" if small else "16Gi", "--svc-batch", "256" if small else "4096",
                "--json", str(out / "service.json")]
    run_stage("service", cmd, 120 if small else 75, out)


def judge_service(t, out, cuda):
    rows = records(out / "service.json")
    by = {r.get("implementation"): r for r in rows}
    rt = next((r for k, r in by.items() if k and k.startswith("round trip")), None)
    if rt:
        t.add(50, "4 KiB round trip through the service", f"{rt['median_s'] * 1e3:.3f} ms", "<= 0.3 ms",
              rt["median_s"] <= 0.3e-3, (rt.get("note") or "")[:80])
    else:
        t.unmeasured(50, "4 KiB round trip through the service", "<= 0.3 ms", "no row")
    one = by.get("1 client")
    many = next((r for k, r in by.items() if k and k.endswith("clients") and k != "2 equal clients"
                 and not k.startswith("1 ")), None)
    if one and many:
        ratio = many["throughput_bps"] / one["throughput_bps"]
        t.add(50, f"{many['implementation']} on {cuda} / 1 client", f"{ratio:.2f} "
              f"({many['throughput_bps'] / 1e9:.2f} vs {one['throughput_bps'] / 1e9:.2f} GB/s)",
              ">= 0.9", ratio >= 0.9)
    else:
        t.unmeasured(50, "64 clients / 1 client", ">= 0.9", "no rows")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--small", action="store_true", help="CPU-sized: a smoke run of the script")
    ap.add_argument("--device", help="the GPU (default: the first CUDA device)")
    ap.add_argument("--budget", type=float, default=520, help="seconds for every stage together")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cuda = a.device or cuda_spec()
    t0 = time.perf_counter()
    DEADLINE[0] = time.monotonic() + a.budget
    t = Table()
    if cuda is None:
        log("no CUDA device: every goal unmeasured")
    stages = [s for s in a.stages.split(",") if s]
    for s in stages:
        if cuda is not None:
            globals()[f"stage_{s}"](cuda, out, a.small)
        globals()[f"judge_{s}"](t, out, cuda)
    print()
    print(f"## goals ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cuda or 'no GPU'}, "
          f"{time.perf_counter() - t0:.0f} s)")
    t.print()
    (out / "goals.json").write_text(json.dumps(t.rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
