"""``ciphergrid bench api``: what a user's call costs against the kernel it runs.

For every block cipher·mode (default implementation; ``--cipher``/``--mode`` filter), in the
direction its kernel runs in parallel (CBC: decryption):

* on every CUDA device, GPU-resident data of ``--api-size`` bytes (default 1 GiB), paired call
  by call: ``kind="kernel"``, the mode kernel alone (device events around one launch, the keys
  already on the device: ``bench ablation``'s figure), and ``kind="api"``,
  ``ciphergrid.encrypt(x, name, key=..., iv=..., out=y)`` with a fresh key every call, device
  events recorded before the call and after it, so the host time inside the call counts
  (``vs_kernel``: the median over the pairs of kernel time / API time; goal >= 0.97; the note
  gives the median of API - kernel; from five more calls, the host time from a call's start
  to its first launch, the device time until that launch (the GPU idling on the host's work)
  and from it to the call's end (to set beside the kernel row); and kernel / API for four
  calls queued back to back, where a call's host work overlaps the kernels queued before it);
* on every device (CUDA: resident arrays; every device, OpenSSL too: host arrays),
  ``kind="call"`` (``implementation`` "one-shot" or "context") on ``--api-call-size`` bytes
  (default 4 KiB): the wall time per call of the one-shot API with a fresh key each call, and of
  ``update_into`` through one reused ``Cipher(...).encryptor()``; ``--api-calls`` calls back to
  back, then the device synchronized, divided by the count (goals 0.15 ms and 0.05 ms);
* the AEADs that split one message over the device (GCM, ChaCha20-Poly1305; ``--api-aead-size``,
  default 256 MiB, GPU-resident): ``kind="api"`` for one message through ``ciphergrid.encrypt``
  beside ``kind="kernel"`` for the same bytes as 16 KiB messages (``bench aead``'s kernel row);
  ``vs_kernel`` = the batch kernel's time / the one message's (goal >= 0.9).

Every API output is checked before it is timed: the first 64 KiB against the oracle
(``testing/oracle``: pyca/OpenSSL, or the cipher composed with the modes), AEAD messages against
pyca and the batch's tags.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .. import registry
from ..settings import bytes_option
from . import suites
from .records import Record

#: where a user's call meets its goal: every cipher at its kernel's speed
GOALS = {"api_vs_kernel": 0.97, "one_shot_s": 0.15e-3, "context_s": 0.05e-3, "aead_vs_kernel": 0.9}
#: AEADs whose kernels split one message over the device
ONE_MESSAGE_AEADS = ("aes-128-gcm", "chacha20-poly1305")
CHECK_BYTES = 64 << 10


def add_arguments(p) -> None:
    p.add_argument("--api-size", type=bytes_option("--api-size"), default=1 << 30,
                   metavar="BYTES", help="GPU-resident bytes per API row (default 1Gi; --quick 1Mi)")
    p.add_argument("--api-call-size", type=bytes_option("--api-call-size"),
                   default=4096, metavar="BYTES", help="bytes per call of the per-call rows (4Ki)")
    p.add_argument("--api-calls", type=int, default=2000, metavar="N",
                   help="calls per per-call row (default 2000; --quick 50)")
    p.add_argument("--api-aead-size", type=bytes_option("--api-aead-size"),
                   default=256 << 20, metavar="BYTES",
                   help="bytes of the one-message AEAD rows (default 256Mi; 0: none)")


def _names(args) -> list[str]:
    from .methodology import select_ciphers

    if args.quick and not args.cipher:
        return ["aes-128-ctr"]
    return select_ciphers(args.cipher, args.mode, False)


def _record(name, dev, kind, size, encrypt, impl=None) -> Record:
    spec = registry.lookup(name)
    return Record(cipher=name, algorithm=spec.algorithm.name, key_bits=8 * spec.key_size,
                  mode=spec.mode.name, direction="encrypt" if encrypt else "decrypt",
                  device=dev.spec, device_name=dev.name, device_kind=dev.kind,
                  runtime=dev.runtime, kind=kind, size=size, implementation=impl)


def _inputs(name: str, rng, encrypt: bool, size: int):
    """A fresh (key, iv, options) for ``name`` (XTS in sectors: a context releases whole ones)."""
    from ..testing.oracle import random_inputs

    return random_inputs(name, rng.bytes, min(4096, size))


def _check(api, name, out_prefix: bytes, data_prefix: bytes, key, iv, encrypt, opts) -> str | None:
    from ..testing import oracle

    want = oracle.crypt(name, key, iv, data_prefix, encrypt, **opts)
    return None if want == out_prefix else f"the API's output differs from {oracle.source(name)}"


def run(args, ctx: suites.Context) -> dict:
    from . import sysinfo

    names = _names(args)
    devs = _devices(ctx.api, args.device)
    size = min(args.api_size, 1 << 20) if args.quick else args.api_size
    calls = min(args.api_calls, 50) if args.quick else args.api_calls
    repeats = args.repeats or (3 if args.quick else 20)
    rng = np.random.default_rng()
    cuda = [d for d in devs if d.runtime == "cuda"]
    rows = []
    total = len(names) * (2 * len(cuda) + 2 * len(devs)) + 2 * len(ONE_MESSAGE_AEADS) * len(cuda)
    with ctx.progress(total) as bar:
        for name in names:
            spec = registry.lookup(name)
            encrypt = spec.mode.parallel(True)
            for dev in cuda:
                for rec in _resident_pair(ctx, name, dev, size, encrypt, repeats, rng):
                    rows.append(rec)
                    ctx.add(rec)
                    bar.advance(1)
            for dev in devs:
                if not _runs(name, dev):
                    bar.advance(2)
                    continue
                for rec in _per_call(ctx, name, dev, args.api_call_size, encrypt, calls, rng):
                    rows.append(rec)
                    ctx.add(rec)
                    bar.advance(1)
        if args.api_aead_size and not args.quick:
            for name in ONE_MESSAGE_AEADS:
                for dev in cuda:
                    for rec in _aead_pair(ctx, name, dev, args.api_aead_size, repeats, rng):
                        rows.append(rec)
                        ctx.add(rec)
                        bar.advance(1)
    _print_table(rows)
    return {"devices": [sysinfo.device_info(d) for d in devs],
            "options": {"ciphers": names, "size": size, "call_size": args.api_call_size,
                        "calls": calls, "aead_size": args.api_aead_size, "goals": GOALS}}


def _runs(name: str, dev) -> bool:
    """Whether ``dev`` runs ``name`` (OpenSSL lacks CLEFIA, MISTY1, HIGHT, PRESENT and CTR for
    the 64-bit ciphers)."""
    spec = registry.lookup(name)
    kind = "openssl" if dev.runtime == "native" else "device"
    return spec.capability(kind, spec.mode.parallel(True)) is not None


def _fail(rec: Record, ctx, detail: str) -> Record:
    ctx.log(f"FAILED api {rec.cipher} {rec.kind} on {rec.device}: {detail[:300]}")
    return rec.fail(detail)


def _resident_pair(ctx, name, dev, size, encrypt, repeats, rng):
    """The kernel and the API on the same GPU-resident arrays, alternated call by call."""
    import cupy

    from ..testing import oracle

    spec = registry.lookup(name)
    size = max(spec.block_size, size // 4096 * 4096)
    kern = _record(name, dev, "kernel", size, encrypt)
    api = _record(name, dev, "api", size, encrypt)
    eng = ctx.api.get_engine(dev.spec)
    b = eng.backend
    call = ctx.api.encrypt if encrypt else ctx.api.decrypt
    try:
        with cupy.cuda.Device(int(dev.spec.split(":")[1])):
            x = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
            y = cupy.empty_like(x)
            key, iv, opts = _inputs(name, rng, encrypt, size)
            call(x, name, key=key, iv=iv, device=dev.spec, out=y, **opts)
            cupy.cuda.get_current_stream().synchronize()
            n = min(size, CHECK_BYTES)
            bad = _check(ctx.api, name, cupy.asnumpy(y[:n]).tobytes(), cupy.asnumpy(x[:n]).tobytes(),
                         key, iv, encrypt, opts)
            if bad:
                return [_fail(kern, ctx, bad), _fail(api, ctx, bad)]
            ok = {"status": "passed", "oracle": oracle.source(spec)}
            kern.verification = api.verification = ok
            kernel_run = eng.kernel_runner(name, x, y, encrypt=encrypt,
                                           sector_size=opts.get("sector_size"))
            s = cupy.cuda.get_current_stream()
            kt, at = [], []
            for i in range(repeats + 1):
                e0 = b.marker()       # (the runner launches on the backend's queue)
                kernel_run()
                e1 = b.marker()
                b.finish()
                key, iv, opts = _inputs(name, rng, encrypt, size)   # a fresh key every call
                a0, a1 = cupy.cuda.Event(), cupy.cuda.Event()
                a0.record(s)
                call(x, name, key=key, iv=iv, device=dev.spec, out=y, **opts)
                a1.record(s)
                a1.synchronize()
                if i:  # (the first pair warms up)
                    kt.append(b.elapsed(e0, e1))
                    at.append(cupy.cuda.get_elapsed_time(a0, a1) * 1e-3)
            queued = _back_to_back(b, kernel_run, lambda k, v, o: call(x, name, key=k, iv=v,
                                                                       device=dev.spec, out=y,
                                                                       **o),
                                   [_inputs(name, rng, encrypt, size) for _ in range(4)], s)
            kernel_run.close()
            host, idle, rest = _api_split(b, lambda k, v, o: call(x, name, key=k, iv=v,
                                                                  device=dev.spec, out=y, **o),
                                          [_inputs(name, rng, encrypt, size) for _ in range(5)], s)
    except Exception as e:  # one failing row must not end the run
        detail = f"{type(e).__name__}: {e}"
        return [_fail(kern, ctx, detail), _fail(api, ctx, detail)]
    clk = eng.sm_clock_mhz()
    for rec, times in ((kern, kt), (api, at)):
        rec.timer, rec.sm_count = "device-events", dev.compute_units
        if clk:
            rec.sm_clock_mhz, rec.clock_source = clk, "measured"
        rec.set_times(times)
    api.vs_kernel = round(statistics.median(k / a for k, a in zip(kt, at)), 4)
    api.note = (f"vs_kernel: median of {len(kt)} pairs (kernel, API) alternated; a fresh key per "
                f"call; API - kernel {1e6 * statistics.median(a - k for k, a in zip(kt, at)):.0f} "
                f"us; five more calls (medians): host time to the first launch {1e6 * host:.0f} us, "
                f"device idle until it {1e6 * idle:.0f} us, first launch to the end "
                f"{1e6 * rest:.0f} us (kernel row {1e6 * statistics.median(kt):.0f}); "
                f"4 calls queued back to back (fresh keys): kernel / API {queued:.4f} (median of "
                f"3 rounds)")
    return [kern, api]


def _back_to_back(b, kernel_run, call, inputs, s, rounds: int = 3) -> float:
    """The median over ``rounds`` of (len(inputs) kernel launches back to back) / (one API call
    per ``inputs`` entry queued back to back on CuPy stream ``s``, a fresh key each), device
    events around each run: the API's rate where its host work overlaps the kernels before it."""
    import cupy

    ratios = []
    for _ in range(rounds):
        e0 = b.marker()
        for _ in inputs:
            kernel_run()
        e1 = b.marker()
        b.finish()
        a0, a1 = cupy.cuda.Event(), cupy.cuda.Event()
        a0.record(s)
        for key, iv, opts in inputs:
            call(key, iv, opts)
        a1.record(s)
        a1.synchronize()
        ratios.append(b.elapsed(e0, e1) / (cupy.cuda.get_elapsed_time(a0, a1) * 1e-3))
    return statistics.median(ratios)


def _api_split(b, call, inputs, s) -> tuple[float, float, float]:
    """Where one API call's time goes, medians over one call per ``inputs`` entry (apart from
    the timed pairs: the backend's launch wrapped): (host seconds from the call's start to its
    first kernel launch, device seconds from an event recorded on CuPy stream ``s`` before the
    call to one recorded just before that launch -- the device idling on the host and the key
    upload --, device seconds from there to an event after the call -- the kernels and the
    keys' zeroing, to set beside the kernel row).  NaN where no call launched."""
    import cupy

    had = b.__dict__.get("launch")
    real = b.launch
    first: list = []

    def spy(*a, **k):
        if not first:
            ev = cupy.cuda.Event()
            ev.record(s)
            first.extend((time.perf_counter(), ev))
        return real(*a, **k)

    b.launch = spy
    host, idle, rest = [], [], []
    try:
        for key, iv, opts in inputs:
            first.clear()
            a0, a1 = cupy.cuda.Event(), cupy.cuda.Event()
            a0.record(s)
            t0 = time.perf_counter()
            call(key, iv, opts)
            a1.record(s)
            a1.synchronize()
            if first:
                host.append(first[0] - t0)
                idle.append(cupy.cuda.get_elapsed_time(a0, first[1]) * 1e-3)
                rest.append(cupy.cuda.get_elapsed_time(first[1], a1) * 1e-3)
    finally:
        if had is None:
            del b.launch
        else:
            b.launch = had
    nan = float("nan")
    return tuple(statistics.median(v) if v else nan for v in (host, idle, rest))


def _per_call(ctx, name, dev, size, encrypt, calls, rng):
    """Wall time per call on ``size`` bytes: the one-shot API (fresh keys) and a reused context."""
    import ciphergrid

    spec = registry.lookup(name)
    size = max(spec.block_size, size // spec.block_size * spec.block_size)
    resident = dev.runtime == "cuda"
    one = _record(name, dev, "call", size, encrypt, "one-shot")
    ctxr = _record(name, dev, "call", size, encrypt, "context")
    call = ctx.api.encrypt if encrypt else ctx.api.decrypt
    try:
        if resident:
            import cupy

            cupy.cuda.Device(int(dev.spec.split(":")[1])).use()
            x = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
            sync = cupy.cuda.get_current_stream().synchronize
        else:
            x = np.frombuffer(rng.bytes(size), dtype=np.uint8)
            sync = lambda: None  # noqa: E731 (host data: every call is finished when it returns)
        # (update_into's buffer: + n - 1, n the block or, XTS with sectors, the sector size)
        yy = (cupy if resident else np).empty(2 * size + 16, dtype=np.uint8)
        y = yy[:size]
        inputs = [_inputs(name, rng, encrypt, size) for _ in range(64)]
        key, iv, opts = inputs[0]
        call(x, name, key=key, iv=iv, device=dev.spec, out=y, **opts)
        sync()
        host = (lambda a: cupy.asnumpy(a).tobytes()) if resident else (lambda a: bytes(a))
        bad = _check(ctx.api, name, host(y), host(x), key, iv, encrypt, opts)
        if bad:
            return [_fail(one, ctx, bad), _fail(ctxr, ctx, bad)]

        def one_shot():
            for i in range(calls):
                key, iv, opts = inputs[i % 64]
                call(x, name, key=key, iv=iv, device=dev.spec, out=y, **opts)
            sync()

        c = ciphergrid.Cipher(name, key, iv, device=dev.spec, **opts)
        cc = c.encryptor() if encrypt else c.decryptor()

        def context():
            for _ in range(calls):
                cc.update_into(x, yy)
            sync()

    except Exception as e:
        detail = f"{type(e).__name__}: {e}"
        return [_fail(one, ctx, detail), _fail(ctxr, ctx, detail)]
    for rec, fn in ((one, one_shot), (ctxr, context)):
        try:
            fn()   # warm-up
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) / calls)
        except Exception as e:
            _fail(rec, ctx, f"{type(e).__name__}: {e}")
            continue
        rec.timer = "wall-clock"
        rec.verification = {"status": "passed", "oracle": "the one-shot call's output, checked first"}
        rec.set_times(times)
        rec.note = f"{calls} calls back to back, then a synchronize; per call"
    c.close()
    return [one, ctxr]


def _aead_pair(ctx, name, dev, size, repeats, rng):
    """One GPU-resident message through ``ciphergrid.encrypt`` against the batch kernel on the
    same bytes as 16 KiB messages."""
    import cupy

    from cryptography.hazmat.primitives.ciphers import aead as pyca

    from .. import aeads
    from .aead import make_batch, time_job

    a = aeads.lookup(name)
    chunk = 16 << 10
    size = size // chunk * chunk
    rec_k = Record(cipher=name, algorithm=a.family, key_bits=8 * a.names[name], mode="aead",
                   direction="encrypt", device=dev.spec, device_name=dev.name, device_kind=dev.kind,
                   runtime=dev.runtime, kind="kernel", size=size, messages=size // chunk)
    rec_a = Record(cipher=name, algorithm=a.family, key_bits=8 * a.names[name], mode="aead",
                   direction="encrypt", device=dev.spec, device_name=dev.name, device_kind=dev.kind,
                   runtime=dev.runtime, kind="api", size=size, messages=1)
    eng = ctx.api.get_engine(dev.spec)
    try:
        batch = make_batch(name, size // chunk, chunk, rng)
        job = eng.aead_driver(name).prepare(batch)
        kt = time_job(eng.backend, job, repeats)
        job.finish()
        with cupy.cuda.Device(int(dev.spec.split(":")[1])):
            x = cupy.asarray(batch.src)
            y = cupy.empty(size + a.default_tag_length, dtype=cupy.uint8)
            key, nonce = rng.bytes(a.names[name]), rng.bytes(a.default_nonce_length)
            ctx.api.encrypt(x, name, key=key, nonce=nonce, out=y)
            cls = pyca.AESGCM if name.endswith("gcm") else pyca.ChaCha20Poly1305
            n = 1 << 20   # the whole message against pyca once (a GiB in pyca is seconds)
            want = cls(key).encrypt(nonce, batch.src[:n].tobytes(), None) if size <= n else None
            got = cupy.asnumpy(y)
            if want is None:
                want = cls(key).encrypt(nonce, batch.src.tobytes(), None)
            if got.tobytes() != want:
                return [_fail(rec_k, ctx, "one message differs from pyca"),
                        _fail(rec_a, ctx, "one message differs from pyca")]
            s = cupy.cuda.get_current_stream()
            at = []
            for i in range(repeats + 1):
                key, nonce = rng.bytes(a.names[name]), rng.bytes(a.default_nonce_length)
                e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                e0.record(s)
                ctx.api.encrypt(x, name, key=key, nonce=nonce, out=y)
                e1.record(s)
                e1.synchronize()
                if i:
                    at.append(cupy.cuda.get_elapsed_time(e0, e1) * 1e-3)
    except Exception as e:
        detail = f"{type(e).__name__}: {e}"
        return [_fail(rec_k, ctx, detail), _fail(rec_a, ctx, detail)]
    clk = eng.sm_clock_mhz()
    for rec, times in ((rec_k, kt), (rec_a, at)):
        rec.timer, rec.sm_count = "device-events", dev.compute_units
        rec.verification = {"status": "passed", "oracle": "pyca/cryptography"}
        if clk:
            rec.sm_clock_mhz, rec.clock_source = clk, "measured"
        rec.set_times(times)
    rec_a.vs_kernel = round(statistics.median(kt) / statistics.median(at), 4)
    rec_a.note = "vs_kernel: the 16 KiB-message batch kernel's median time / this message's"
    return [rec_k, rec_a]


def _print_table(rows) -> None:
    print(f"{'cipher':<20} {'dir':<4} {'device':<11} {'kind':<6} {'impl':<9} {'bytes':>10} "
          f"{'GB/s':>8} {'GB/s/SM/GHz':>11} {'us/call':>8} {'x kernel':>8}")
    for r in rows:
        head = (f"{r.cipher:<20} {r.direction[:3]:<4} {r.device:<11} {r.kind:<6} "
                f"{r.implementation or '':<9} {r.size:>10}")
        if r.status != "ok":
            print(f"{head} FAILED {r.error}")
            continue
        per_call = f"{r.median_s * 1e6:8.1f}" if r.kind == "call" else f"{'':>8}"
        gbs = f"{r.gbps_per_sm_ghz:11.3f}" if r.gbps_per_sm_ghz else f"{'':>11}"
        vs = f"{r.vs_kernel:8.3f}" if r.vs_kernel is not None else f"{'':>8}"
        print(f"{head} {r.gbps:8.2f} {gbs} {per_call} {vs}")


def _devices(api, device_args) -> list:
    devs = api.devices()
    if device_args:
        keep = set(sum((d.split(",") for d in device_args), []))
        devs = [d for d in devs if d.spec in keep or d.kind in keep or d.runtime in keep]
    return list(devs)


#: the estimate's seconds per call of 4 KiB (OpenSSL's engine, a GPU, an OpenCL CPU device), per
#: build of a cipher's kernels, and the bytes/s of a GPU-resident row against one core's pyca rate
CALL_S = {"native": 5e-5, "gpu": 2e-4, "cpu": 1e-3}
BUILD_S, GPU_SPEEDUP = 3.0, 20.0


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Per cipher and device: its per-call rows (4 x --api-calls calls each, a build first on a
    device that compiles kernels), on CUDA its resident pair and the AEAD rows."""
    names = _names(args)
    devs = _devices(api, args.device)
    calls = min(args.api_calls, 50) if args.quick else args.api_calls
    size = min(args.api_size, 1 << 20) if args.quick else args.api_size
    repeats = args.repeats or (3 if args.quick else 20)
    per_name = 0.0
    for d in devs:
        cost = CALL_S["native" if d.runtime == "native" else d.kind if d.kind in CALL_S else "cpu"]
        per_name += 8 * calls * cost + (0 if d.runtime == "native" else BUILD_S)
        if d.runtime == "cuda":
            per_name += 2 * (repeats + 1) * size / (rate * GPU_SPEEDUP)
    return (f"{len(names)} cipher(s) x {len(devs)} device(s): {calls} calls per row"
            + (", GPU-resident rows" if any(d.runtime == "cuda" for d in devs) else ""),
            len(names) * per_name)


suites.register("api", run, help="the public API against the kernel it runs: GPU-resident 1 GiB, "
                                 "4 KiB per call, one long AEAD message", add_arguments=add_arguments,
                estimate=estimate)
