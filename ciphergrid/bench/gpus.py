"""``ciphergrid bench gpus``: several GPUs of one host, GPU-resident data (the scheduler on several
GPUs).

On every CUDA GPU present, ``--gpus-size`` bytes (default 1 GiB; ``--quick`` 64 MiB) of
GPU-resident data per GPU, through the public API (``ciphergrid.encrypt(x, ..., out=y)``, a
fresh key every call), wall clock, median of ``--repeats``:

* ``resident-alone``: each GPU alone on its own data;
* ``resident-N-gpus-at-once``: every GPU at once, each on its own data (one thread per GPU,
  started together; the row's time is the slowest GPU's); its note compares it with N x the
  mean of the GPUs alone;
* ``peer-copy A->B``: the peer links, a copy of the same bytes from the first GPU to each other
  one and back, then to (and from) all of them at once (``cipher`` "copy"; whether the two can
  reach each other directly is in the note);
* ``scheduled``: one array of N x ``--gpus-size`` bytes on the first GPU with ``device="all"``:
  its ranges run there and on the other GPUs through peer copies (``engines/composite.py``);
  the whole output checked against the oracle first; the note says each GPU's share and the
  ceiling: the first GPU alone plus the slower of the copies out of it and into it, at once.

Host -> host over every GPU (and the CPU) is ``bench scheduler``.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from .. import registry
from ..settings import bytes_option
from . import suites
from .preflight import size_text
from .records import Record


def add_arguments(p) -> None:
    p.add_argument("--gpus-size", type=bytes_option("--gpus-size"), default=1 << 30,
                   metavar="BYTES", help="GPU-resident bytes per GPU (default 1Gi; --quick 64Mi)")


def _row(name, dev, info, size, impl, kind="api") -> Record:
    spec = registry.lookup(name) if name != "copy" else None
    return Record(cipher=name, algorithm=spec.algorithm.name if spec else None,
                  key_bits=8 * spec.key_size if spec else None, mode=spec.mode.name if spec else None,
                  direction="encrypt", device=dev, device_name=info.name if info else dev,
                  device_kind="gpu", runtime="cuda" if info else "composite", kind=kind, size=size,
                  implementation=impl, timer="wall-clock")


def run(args, ctx: suites.Context) -> dict:
    import ciphergrid
    from ..testing import oracle
    from . import sysinfo

    gpus = [d for d in ciphergrid.devices() if d.runtime == "cuda" and d.kind == "gpu"]
    if not gpus:
        ctx.log("bench gpus: no CUDA GPU present (nothing measured)")
        return {"devices": [], "options": {}}
    import cupy
    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.gpus_size, 64 << 20) if args.quick else args.gpus_size
    repeats = args.repeats or (3 if args.quick else 10)
    rng = np.random.default_rng()
    ids = [int(d.spec.split(":")[1]) for d in gpus]
    n = len(gpus)
    rows = []

    def keep(r):
        rows.append(r)
        ctx.add(r)

    data = {}
    for i in ids:
        with cupy.cuda.Device(i):
            data[i] = (cupy.asarray(rng.integers(0, 256, size, dtype=np.uint8)),
                       cupy.empty(size, dtype=cupy.uint8))

    def sync_all():
        for i in ids:
            cupy.cuda.Device(i).synchronize()

    with ctx.progress(len(names) * (n + 2) + 2 * n + 2) as bar:
        for name in names:
            spec = registry.lookup(name)
            inputs = lambda: (rng.bytes(spec.key_len), rng.bytes(spec.iv_len) if spec.iv_len else None)

            def call(i, key_iv=None):
                key, iv = key_iv or inputs()
                with cupy.cuda.Device(i):
                    ciphergrid.encrypt(data[i][0], name, key, iv, device=f"cuda:{i}", out=data[i][1])
                    cupy.cuda.get_current_stream().synchronize()

            alone = {}
            for d, i in zip(gpus, ids):
                r = _row(name, d.spec, d, size, "resident-alone")
                try:
                    key, iv = inputs()
                    call(i, (key, iv))
                    want = oracle.crypt(name, key, iv, cupy.asnumpy(data[i][0][: 1 << 20]).tobytes(), True)
                    if cupy.asnumpy(data[i][1][: 1 << 20]).tobytes() != want:
                        raise AssertionError(f"the output differs from {oracle.source(spec)}")
                    r.verification = {"status": "passed", "oracle": oracle.source(spec)}
                    r.set_times(suites.wall_times(lambda: call(i), repeats))
                    alone[i] = r.gbps
                except Exception as e:
                    r.fail(f"{type(e).__name__}: {e}")
                keep(r)
                bar.advance(1)

            if n > 1:   # every GPU at once, each on its own data
                r = _row(name, "all", None, n * size, f"resident-{n}-gpus-at-once")
                r.device_name = ", ".join(d.spec for d in gpus)
                try:
                    r.verification = {"status": "passed", "oracle": oracle.source(spec),
                                      "note": "each GPU's output checked in its resident-alone row"}
                    r.set_times(_at_once(ids, call, repeats))
                    if len(alone) == n:
                        mean = sum(alone.values()) / n
                        r.note = (f"{r.gbps / mean:.2f} x one GPU alone (mean {mean:.1f} GB/s); goal "
                                  f">= {0.9 * n:.1f} x")
                except Exception as e:
                    r.fail(f"{type(e).__name__}: {e}")
                keep(r)
            bar.advance(1)

            if n > 1:   # one array on the first GPU over every GPU (peer copies)
                keep(_split_row(ctx, name, spec, gpus, ids, size * n, repeats, rng, alone, rows))
            bar.advance(1)

        if n > 1:
            for r in _peer_rows(ids, gpus, size, repeats, sync_all):
                keep(r)
                bar.advance(1)
    _print_table(rows)
    return {"devices": [sysinfo.device_info(d) for d in gpus],
            "options": {"ciphers": names, "size_per_gpu": size, "repeats": repeats,
                        "peer_access": _peer_matrix(ids)}}


def _at_once(ids, call, repeats: int) -> list[float]:
    """Seconds per round of every GPU running ``call(i)`` at once: one thread per GPU, kept for
    every round (a fresh thread would pay its first CUDA calls inside the timing), released
    together by a barrier; a round ends when the slowest is done.  The first round is a warm-up."""
    rounds = repeats + 1
    gate = threading.Barrier(len(ids) + 1)
    ends = {i: [] for i in ids}
    errors = []

    def work(i):
        for _ in range(rounds):
            gate.wait()
            try:
                if not errors:
                    call(i)
            except Exception as e:
                errors.append(e)
            ends[i].append(time.perf_counter())

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in ids]
    for t in threads:
        t.start()
    starts = []
    for _ in range(rounds):
        gate.wait()
        starts.append(time.perf_counter())
        while any(len(ends[i]) < len(starts) for i in ids):   # (the round's end, then the next)
            time.sleep(0.0002)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [max(ends[i][k] for i in ids) - starts[k] for k in range(1, rounds)]


def _peer_matrix(ids) -> dict:
    import cupy

    return {f"{a}->{b}": bool(cupy.cuda.runtime.deviceCanAccessPeer(a, b))
            for a in ids for b in ids if a != b}


def _peer_rows(ids, gpus, size, repeats, sync_all):
    """Copies between the first GPU and each other one, each way, then with all at once."""
    import cupy

    from ..engines.scheduler.resident import enable_peer as _enable_peer, peer_copy as _copy

    home = ids[0]
    bufs = {}
    for i in ids:
        with cupy.cuda.Device(i):
            bufs[i] = (cupy.empty(size, dtype=cupy.uint8), cupy.empty(size, dtype=cupy.uint8))
    for i in ids[1:]:
        _enable_peer(i, home)
    streams = {}
    for i in ids:
        with cupy.cuda.Device(i):
            streams[i] = cupy.cuda.Stream(non_blocking=True)
    access = _peer_matrix(ids)

    def copies(pairs):
        def fn():
            for a, b in pairs:   # (queued on the reading side's stream)
                _copy(bufs[b][1], bufs[a][0], streams[b])
            for a, b in pairs:
                streams[b].synchronize()
        return fn

    cases = [([(home, i)], f"peer-copy cuda:{home}->cuda:{i}") for i in ids[1:]]
    cases += [([(i, home)], f"peer-copy cuda:{i}->cuda:{home}") for i in ids[1:]]
    if len(ids) > 2:
        cases.append(([(home, i) for i in ids[1:]], f"peer-copy cuda:{home}->others at once"))
        cases.append(([(i, home) for i in ids[1:]], f"peer-copy others->cuda:{home} at once"))
    cases.append(([(home, i) for i in ids[1:]] + [(i, home) for i in ids[1:]],
                  f"peer-copy cuda:{home}<->others both ways at once"))
    for pairs, impl in cases:
        total = size * len(pairs)
        r = _row("copy", f"cuda:{home}", gpus[0], total, impl, kind="e2e")
        r.verification = {"status": "not-applicable"}
        r.note = "direct peer access: " + ", ".join(
            f"{a}->{b} {'yes' if access[f'{a}->{b}'] else 'no (through the host)'}" for a, b in pairs)
        try:
            sync_all()
            r.set_times(suites.wall_times(copies(pairs), repeats))
        except Exception as e:
            r.fail(f"{type(e).__name__}: {e}")
        yield r


def _split_row(ctx, name, spec, gpus, ids, total, repeats, rng, alone, rows) -> Record:
    """One array of ``total`` bytes on the first GPU, ``device="all"`` (every GPU): checked whole
    against the oracle, then timed; the note: each GPU's share, the rework, against the first
    GPU alone."""
    import cupy

    import ciphergrid
    from ..engines.composite import SchedulerStats
    from ..testing import oracle

    home = ids[0]
    r = _row(name, "all", None, total, "scheduled")
    r.device_name = f"resident on cuda:{home}, over " + ", ".join(d.spec for d in gpus)
    held = [SchedulerStats()]
    try:
        with cupy.cuda.Device(home):
            src = cupy.asarray(rng.integers(0, 256, total, dtype=np.uint8))
            dst = cupy.empty_like(src)
        key, iv = rng.bytes(spec.key_len), rng.bytes(spec.iv_len) if spec.iv_len else None

        def call():
            with cupy.cuda.Device(home):
                ciphergrid.encrypt(src, name, key, iv, device="all", out=dst, stats=held[0])

        call()
        want = oracle.crypt(name, key, iv, cupy.asnumpy(src).tobytes(), True)
        if cupy.asnumpy(dst).tobytes() != want:
            raise AssertionError(f"the output differs from {oracle.source(spec)}")
        r.verification = {"status": "passed", "oracle": oracle.source(spec), "bytes_checked": total}
        held[0] = SchedulerStats()
        r.set_times(suites.wall_times(call, repeats))
        st = held[0]
        share = ", ".join(f"{s} {v:.1%} ({st.engines[s].ranges} ranges)" for s, v in st.share().items())
        first = alone.get(home)
        r.note = (f"shares over {repeats + 1} calls: {share}; rework {st.rework_bytes} bytes"
                  + (f"; {r.gbps / first:.2f} x cuda:{home} alone" if first else ""))
    except Exception as e:
        r.fail(f"{type(e).__name__}: {e}")
        ctx.log(f"FAILED gpus {name} scheduled: {r.error}")
    return r


def _print_table(rows) -> None:
    print(f"{'cipher':<14} {'device':<8} {'how':<40} {'GB/s':>8}  note")
    for r in rows:
        head = f"{r.cipher:<14} {r.device:<8} {r.implementation or '':<40}"
        if r.status != "ok":
            print(f"{head} FAILED {r.error}")
            continue
        print(f"{head} {r.gbps:8.2f}  {r.note or ''}")
    # the split's ceiling: the first GPU alone, plus what the peer links carry both ways at once
    # (a byte run elsewhere crosses them twice: out and back)
    both = next((r for r in rows if r.status == "ok" and "both ways" in (r.implementation or "")), None)
    for r in rows:
        if r.status == "ok" and r.implementation == "scheduled" and both is not None:
            first = next((x for x in rows if x.status == "ok" and x.cipher == r.cipher
                          and x.implementation == "resident-alone"), None)
            if first is not None:
                ceiling = first.gbps + both.gbps / 2
                print(f"{r.cipher}: scheduled {r.gbps:.1f} GB/s; ceiling {first.device} alone "
                      f"{first.gbps:.1f} + peer links {both.gbps / 2:.1f} = {ceiling:.1f} GB/s "
                      f"({r.gbps / ceiling:.2f} of it)")


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Nothing without a CUDA GPU; else per cipher each GPU alone and all at once, ``repeats``
    + 1 runs of the size at GPU_SPEEDUP x ``rate``, the peer links and the scheduled array."""
    gpus = [d for d in api.devices() if d.runtime == "cuda" and d.kind == "gpu"]
    if not gpus:
        return "no CUDA GPU present: nothing to measure", 0.0
    names = [c for part in (args.cipher or ["aes-128-ctr"]) for c in part.split(",") if c]
    size = min(args.gpus_size, 64 << 20) if args.quick else args.gpus_size
    repeats = args.repeats or (3 if args.quick else 10)
    rows = len(names) * (len(gpus) + 2) + 2 * len(gpus) + 2
    return (f"{len(names)} cipher(s) on {len(gpus)} GPU(s), {size_text(size)} each",
            rows * (2.0 + (repeats + 1) * size * len(gpus) / (GPU_SPEEDUP * rate)))


#: the estimate's bytes/s of a GPU against one core's pyca rate
GPU_SPEEDUP = 20.0

suites.register("gpus", run, add_arguments=add_arguments, estimate=estimate,
                help="several GPUs of one host: GPU-resident data on each at once, "
                                  "the peer links, one array over every GPU")
