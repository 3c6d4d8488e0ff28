"""``ciphergrid bench scheduler``: one request over several engines against each engine alone.

For each cipher (``--cipher``, default aes-128-ctr) and size (``--sched-size``, default 1 GiB;
``--quick`` 8 MiB), host arrays in, host arrays out, wall clock, median of ``--repeats``:

* ``kind="e2e"`` on each engine alone (``device=SPEC``), then on all of them together
  (``--sched-devices``, default ``all``; ``implementation`` "scheduled"), and together with
  every range fenced (``implementation`` "scheduled-fenced": each range into its worker's
  buffer, copied into the output when committed, as CIPHERGRID_SCHED_FENCE=copy does: what that
  costs; through the engine, not the public call);
* the host's memory bandwidth measured beside them: a copy of the same bytes on every core
  (``cipher`` "copy", ``device`` "host", ``implementation`` "memcpy-N-threads");
* each GPU's copy-only strawman through its pipeline (host -> GPU -> host, no cipher;
  ``implementation`` "pipeline-copy"), and on a host of several GPUs every GPU's at once, each
  an equal slice ("pipeline-copy-N-gpus-at-once");
* the scheduled rows' notes say each engine's share of the bytes, its ranges, the failures and
  the rework (``SchedulerStats``), and the scheduler's choice: together, or one engine alone
  where together was slower (engines/scheduler/speeds.py); every output is checked against the
  oracle first.  A size the scheduler judges (``speeds.JUDGE_MIN_BYTES`` or more) runs untimed
  first as often as its learning takes (together once, each engine alone once), so that the
  timed calls run as it chose;
* a verdict per set and cipher after the table: together against the faster engine alone (the
  ratio), the goal, and the choice.

The goals: scheduled >= min(1.3 x the fastest engine alone, 0.9 x the host's copy) for AES-128-CTR
host -> host (one job over every device), or, where the host's memory cannot carry both, the
faster alone chosen and said, never more than 3 % below it; on several GPUs >= 0.9 x the lower
of the host's copy and the sum of the GPUs' copy strawman (the table's first line).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .. import aeads, registry
from ..settings import bytes_option, parse_bytes
from . import suites
from .preflight import size_text
from .records import Record


def add_arguments(p) -> None:
    p.add_argument("--sched-size", type=bytes_option("--sched-size"), default=1 << 30,
                   metavar="BYTES", help="bytes per call (default 1Gi; --quick 8Mi)")
    p.add_argument("--sched-aead-shape", default="1Mix4Ki", metavar="COUNTxSIZE",
                   help="the AEAD batches' messages (--cipher aes-128-gcm ...; default 1Mix4Ki; "
                        "--quick 256x16Ki)")
    p.add_argument("--sched-devices", action="append", metavar="SPEC",
                   help="the engines scheduled together: all (the default), or a list such as "
                        "cuda:0,native; again for another set (each set's engines are also timed "
                        "alone, once)")


def _record(name, spec_dev, info, kind, size, impl, encrypt=True) -> Record:
    spec = registry.lookup(name) if name != "copy" else None
    return Record(cipher=name, algorithm=spec.algorithm.name if spec else None,
                  key_bits=8 * spec.key_size if spec else None, mode=spec.mode.name if spec else None,
                  direction="encrypt" if encrypt else "decrypt", device=spec_dev,
                  device_name=info.name if info else "host memory",
                  device_kind=info.kind if info else "cpu", runtime=info.runtime if info else "native",
                  kind=kind, size=size, implementation=impl)


def host_copy(src: np.ndarray, dst: np.ndarray, threads: int) -> None:
    """``dst[:] = src`` in ``threads`` slices at once (numpy's copy releases the interpreter)."""
    n = src.nbytes
    step = -(-n // threads)
    parts = [threading.Thread(target=np.copyto, args=(dst[a:a + step], src[a:a + step]))
             for a in range(0, n, step)]
    for t in parts:
        t.start()
    for t in parts:
        t.join()


def run(args, ctx: suites.Context) -> dict:
    from ..api import _request
    from ..engines.composite import SchedulerStats
    from ..engines.scheduler import speeds
    from ..route import for_request
    from ..runtime import current
    from ..testing import oracle
    from . import sysinfo

    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.sched_size, 8 << 20) if args.quick else args.sched_size
    size = _fit(size, ctx.log)
    repeats = args.repeats or (3 if args.quick else 5)
    sets = args.sched_devices or ["all"]
    rng = np.random.default_rng()
    threads = os.cpu_count() or 1
    rows = []
    choices: dict = {}   # id of a scheduled row -> the scheduler's choice after its runs
    src = rng.integers(0, 256, size, dtype=np.uint8)
    dst = np.empty_like(src)
    dst.fill(0)   # (faulted in before anything is timed)

    def timed(fn) -> list[float]:
        return suites.wall_times(fn, repeats)

    rec = _record("copy", "host", None, "e2e", size, f"memcpy-{threads}-threads")
    rec.timer, rec.verification = "wall-clock", {"status": "not-applicable"}
    rec.set_times(timed(lambda: host_copy(src, dst, threads)))
    rows.append(rec)
    ctx.add(rec)
    from ..devices import member_specs

    singles = []
    for dev in dict.fromkeys(d for t in sets for d in member_specs(t)):
        try:
            singles.append((dev, ctx.api.get_engine(dev).info))
        except Exception:
            continue   # ("all" names "cpu" where there may be none)
    gpus = [(dev, info) for dev, info in singles if info.kind == "gpu"]
    for r in _copy_rows(ctx, gpus, src, dst, threads, timed):
        rows.append(r)
        ctx.add(r)

    def learning(dev: str, nbytes: int) -> int:
        """Untimed calls the scheduler takes to learn a set's choice at this size."""
        return 1 + len(member_specs(dev)) if nbytes >= speeds.JUDGE_MIN_BYTES else 0

    def chose(r, name: str, since: int) -> None:
        said = speeds.latest_verdict(current(), name, True, since)
        choices[id(r)] = said or (
            f"not judged (jobs under {size_text(speeds.JUDGE_MIN_BYTES)} run together)"
            if r.size < speeds.JUDGE_MIN_BYTES else
            "not judged (no job of it was scheduled over several engines)")
        r.note = "; ".join(x for x in (r.note, f"choice: {choices[id(r)]}") if x)

    with ctx.progress(len(names) * (len(singles) + 2 * len(sets))) as bar:
        for name in names:
            if aeads.is_aead(name):
                shape = "256x16Ki" if args.quick else args.sched_aead_shape
                for dev, info, impl in ([(d, i, None) for d, i in singles]
                                        + [(t, None, "scheduled") for t in sets]):
                    since = speeds.clock(current())
                    r = _aead_row(ctx, name, shape, dev, info, impl, repeats, rng, timed,
                                  learning)
                    if info is None:
                        r.device_name, r.device_kind, r.runtime = dev, "composite", "composite"
                        if r.status == "ok":
                            chose(r, name, since)
                    rows.append(r)
                    ctx.add(r)
                    bar.advance(1)
                bar.advance(len(sets))
                continue
            spec = registry.lookup(name)
            key = rng.bytes(spec.key_len)
            iv = rng.bytes(spec.iv_len) if spec.iv_len else None
            want = oracle.crypt(name, key, iv, src[: 1 << 20].tobytes(), True)
            cases = [(dev, info, None) for dev, info in singles]
            cases += [(t, None, how) for t in sets for how in ("scheduled", "scheduled-fenced")]
            for dev, info, impl in cases:
                held = [SchedulerStats()]

                def call():
                    if impl != "scheduled-fenced":   # (the public call, as users make it)
                        ctx.api.encrypt(src, name, key, iv, device=dev, out=dst, stats=held[0])
                        return
                    req = _request(name, key, iv, True, None, None, None, False, None, True)
                    eng = for_request(dev, req, size)
                    eng.fence = "copy"
                    eng.crypt(req, src, dst, stats=held[0])

                r = _record(name, dev, info, "e2e", size, impl)
                if info is None:
                    r.device_name, r.device_kind, r.runtime = dev, "composite", "composite"

                def check():
                    if dst[: 1 << 20].tobytes() != want[: 1 << 20]:
                        raise AssertionError(f"the output differs from {oracle.source(spec)}")
                    held[0] = SchedulerStats()    # (what the timed calls do)

                learn = learning(dev, size) if impl == "scheduled" else 0
                since = speeds.clock(current())
                if _measure(ctx, r, call, check, oracle.source(spec), timed, learn):
                    stats = held[0]
                    if impl:
                        share = ", ".join(f"{s} {v:.1%} ({stats.engines[s].ranges} ranges)"
                                          for s, v in stats.share().items())
                        r.note = (f"shares over {repeats + 1 + learn} calls: {share}; rework "
                                  f"{stats.rework_bytes} bytes; failures: {len(stats.failures)}")
                    if impl == "scheduled":
                        chose(r, name, since)
                rows.append(r)
                ctx.add(r)
                bar.advance(1)
    _print_table(rows)
    verdicts = _verdicts(rows, choices)
    _print_verdicts(verdicts)
    return {"devices": [sysinfo.device_info(info) for _, info in singles],
            "options": {"ciphers": names, "size": size, "together": sets, "repeats": repeats,
                        "copy_threads": threads},
            "verdicts": verdicts}


def _copy_rows(ctx, gpus, src, dst, threads, timed):
    """The copy-only strawman through each GPU's pipeline (host -> GPU -> host, no cipher), then
    through every GPU at once (each an equal slice): what the buses carry."""
    from ..transfer import runs

    def one(dev, a, b):
        runs.copy(ctx.api.get_engine(dev).backend, src[a:b], dst[a:b])

    n = src.nbytes
    cases = [([dev], info.name, "pipeline-copy") for dev, info in gpus]
    if len(gpus) > 1:
        cases.append(([d for d, _ in gpus], "every GPU", f"pipeline-copy-{len(gpus)}-gpus-at-once"))
    for devs, dname, impl in cases:
        r = _record("copy", ",".join(devs), None, "e2e", n, impl)
        r.device_name, r.device_kind, r.runtime = dname, "gpu", "composite" if len(devs) > 1 else "cuda"
        r.timer, r.verification = "wall-clock", {"status": "not-applicable"}
        step = -(-n // len(devs)) // 4096 * 4096 or n

        def call(devs=devs, step=step):
            parts = [threading.Thread(target=one, args=(d, k * step, min(n, (k + 1) * step)))
                     for k, d in enumerate(devs)]
            for t in parts:
                t.start()
            for t in parts:
                t.join()

        try:
            r.set_times(timed(call))
        except Exception as e:
            r.fail(f"{type(e).__name__}: {e}")
        yield r


def _aead_row(ctx, name, shape, dev, info, impl, repeats, rng, timed, learning=None) -> Record:
    """One AEAD batch row: ``encrypt_batch`` of COUNT x SIZE messages in one buffer (counter
    nonces), its first messages checked against pyca first; a scheduled row first runs
    ``learning(dev, bytes)`` more times untimed (the scheduler's learning)."""
    import ciphergrid
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    count, _, msize = shape.lower().partition("x")
    count, msize = parse_bytes(count, "--sched-aead-shape"), parse_bytes(msize, "--sched-aead-shape")
    a = aeads.lookup(name)
    r = Record(cipher=name, algorithm=a.family, key_bits=8 * a.names[name], mode="aead",
               direction="encrypt", device=dev, device_name=info.name if info else dev,
               device_kind=info.kind if info else "composite",
               runtime=info.runtime if info else "composite", kind="e2e", size=count * msize,
               implementation=impl, messages=count)
    src = rng.integers(0, 256, count * msize, dtype=np.uint8)
    off = np.arange(count + 1, dtype=np.int64) * msize
    nonces = np.zeros((count, a.default_nonce_length), dtype=np.uint8)
    nonces[:, -8:] = np.arange(count, dtype=">u8").view(np.uint8).reshape(count, 8)
    key = rng.bytes(a.names[name])
    out = np.empty_like(src)
    holder = {}

    def call():
        holder["r"] = ciphergrid.encrypt_batch(src, name, key=key, nonces=nonces, offsets=off,
                                               device=dev, out=out)

    def check():
        cls = pyca.AESGCM if name.endswith("gcm") else pyca.ChaCha20Poly1305
        for i in range(min(3, count)):
            want = cls(key).encrypt(nonces[i].tobytes(), src[off[i]:off[i + 1]].tobytes(), None)
            if holder["r"].messages[i] != want:
                raise AssertionError("a message differs from pyca/cryptography")

    learn = learning(dev, count * msize) if impl and learning is not None else 0
    _measure(ctx, r, call, check, "pyca/cryptography", timed, learn)
    return r


def _measure(ctx, r: Record, call, check, oracle_name: str, timed, learn: int = 0) -> bool:
    """Run ``call`` once, ``check`` its output (raises when wrong), run it ``learn`` more times
    untimed (the scheduler's learning), then time it into row ``r``; any failure fails the row
    alone (no timing).  Returns whether the row was timed."""
    try:
        call()
        check()
        for _ in range(learn):
            call()
        r.verification = {"status": "passed", "oracle": oracle_name}
        r.timer = "wall-clock"
        r.set_times(timed(call))
        return True
    except Exception as e:  # one failing row must not end the run
        r.fail(f"{type(e).__name__}: {e}")
        ctx.log(f"FAILED scheduler {r.cipher} on {r.device}: {r.error}")
        return False


def _print_table(rows) -> None:
    copy = next((r for r in rows if r.cipher == "copy" and r.status == "ok"), None)
    alone = [r for r in rows if r.status == "ok" and r.implementation == "pipeline-copy"]
    if copy is not None and len(alone) > 1:
        # several GPUs: the goal's ceiling is the lower of the host's copy and the sum of each
        # GPU's copy strawman alone
        total = sum(r.gbps for r in alone)
        print(f"ceiling: min(host memcpy {copy.gbps:.1f}, sum of the GPUs' copy strawman "
              f"{total:.1f}) = {min(copy.gbps, total):.1f} GB/s")
    print(f"{'cipher':<16} {'device':<22} {'how':<18} {'GB/s':>8} {'x copy':>7}  note")
    for r in rows:
        head = f"{r.cipher:<16} {r.device:<22} {r.implementation or 'alone':<18}"
        if r.status != "ok":
            print(f"{head} FAILED {r.error}")
            continue
        vs = f"{r.gbps / copy.gbps:7.3f}" if copy else f"{'':>7}"
        print(f"{head} {r.gbps:8.2f} {vs}  {r.note or ''}")


def _verdicts(rows, choices: dict) -> list[dict]:
    """Per scheduled row: together against the faster of its engines alone (same cipher), the
    goal (min(1.3 x the faster alone, 0.9 x the host's copy)) and whether it was met -- at or
    above the goal, or the faster alone chosen and within 3 % of it -- and the choice."""
    from ..devices import member_specs

    copy = next((r for r in rows if r.cipher == "copy" and r.implementation
                 and r.implementation.startswith("memcpy") and r.status == "ok"), None)
    out = []
    for r in rows:
        if r.implementation != "scheduled" or r.status != "ok":
            continue
        alone = [a for a in rows if a.cipher == r.cipher and a.implementation is None
                 and a.status == "ok" and a.device in member_specs(r.device)]
        if not alone:
            continue
        best = max(alone, key=lambda a: a.gbps)
        goal = 1.3 * best.gbps if copy is None else min(1.3 * best.gbps, 0.9 * copy.gbps)
        choice = choices.get(id(r), "")
        ratio = r.gbps / best.gbps
        met = "met" if r.gbps >= goal else (
            "met (the faster alone)" if " alone: " in choice and ratio >= 0.97 else "missed")
        out.append({"cipher": r.cipher, "together": r.device, "gbps": r.gbps,
                    "faster_alone": best.device, "faster_alone_gbps": best.gbps,
                    "ratio": ratio, "goal_gbps": goal, "verdict": met, "choice": choice})
    return out


def _print_verdicts(verdicts) -> None:
    if not verdicts:
        return
    print("verdict: together >= min(1.3 x the faster alone, 0.9 x the host's copy), or the "
          "faster alone chosen and within 3 % of it")
    print(f"{'cipher':<18} {'together':<18} {'GB/s':>8}  {'faster alone':<22} {'ratio':>6} "
          f"{'goal':>7}  {'verdict':<22} choice")
    for v in verdicts:
        fa = f"{v['faster_alone']} {v['faster_alone_gbps']:.2f}"
        print(f"{v['cipher']:<18} {v['together']:<18} {v['gbps']:8.2f}  {fa:<22} "
              f"{v['ratio']:6.3f} {v['goal_gbps']:7.2f}  {v['verdict']:<22} {v['choice']}")


def _fit(size: int, log) -> int:
    """The arrays' bytes: ``size``, or the whole MiB of which four arrays fit half the memory
    available (the input, the output, the oracle's and a device's copies), with a line saying so."""
    from .preflight import mem_available

    mem = mem_available()
    if mem is None or 4 * size <= mem // 2:
        return size
    fit = max(1 << 20, mem // 8 >> 20 << 20)
    log(f"bench scheduler: --sched-size cut to {size_text(fit)} (from {size_text(size)}): four "
        f"arrays of it must fit half the memory available ({size_text(mem)})")
    return fit


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Per cipher: each engine alone and each set twice, ``repeats`` + 2 runs of the size at
    ``rate`` per core used; the host's copy first."""
    from ..devices import member_specs

    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.sched_size, 8 << 20) if args.quick else args.sched_size
    repeats = args.repeats or (3 if args.quick else 5)
    sets = args.sched_devices or ["all"]
    singles = list(dict.fromkeys(d for t in sets for d in member_specs(t)))
    from ..engines.scheduler.speeds import JUDGE_MIN_BYTES

    rows = len(names) * (len(singles) + 2 * len(sets))
    learn = len(names) * len(sets) * (1 + len(singles)) if size >= JUDGE_MIN_BYTES else 0
    return (f"{len(names)} cipher(s) x ({len(singles)} engines alone, {len(sets)} set(s) scheduled) "
            f"x {repeats} repeats of {size_text(size)}",
            rows * (0.5 + (repeats + 2) * size / rate) + (2 * repeats + learn) * size / rate)


suites.register("scheduler", run, help="one request over several engines against each alone and "
                                       "the host's copy", add_arguments=add_arguments,
                estimate=estimate)
