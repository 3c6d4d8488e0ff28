"""``ciphergrid bench aead``: the AEADs, the same methodology as the block ciphers.

Shapes (``--aead-shapes``, COUNTxSIZE): one large message (``1x1Gi``: parallel within the message
for GCM and ChaCha20-Poly1305), batches of sealed-file chunks (``65536x16Ki`` = 1 GiB: enough
messages to fill a GPU with the serial AEADs, one message per work-item), and many
small records (``1Mix4Ki``, ``1Mix256``).  For every AEAD name and shape:

* on every OpenCL/CUDA device, ``kind="kernel"``: the batch uploaded once, the kernels alone timed
  with device events (``DeviceAEAD.prepare`` then ``Job.enqueue``), GB/s per SM per GHz and
  messages/s; verified first: the AEAD's known answers on that device (the selftest's batches)
  and the timed job's first messages against the reference (pyca where it has the AEAD);
* ``kind="e2e"``: the public API (``encrypt_batch``, or ``encrypt`` for one message) host → host,
  wall clock, on every device and on OpenSSL where it has the AEAD (``device="native"``: all
  cores, the messages of a batch spread over threads).
"""

from __future__ import annotations

import time

import numpy as np

from .. import aeads
from ..aeads.base import Batch
from ..settings import parse_bytes
from . import suites
from .records import Record

DEFAULT_SHAPES = "1x1Gi,65536x16Ki,1Mix4Ki,1Mix256"
QUICK_SHAPES = "1x1Mi,64x16Ki,256x256"


def add_arguments(p) -> None:
    p.add_argument("--aead-cipher", action="append", metavar="NAME",
                   help="AEAD names (default: all); repeatable, comma-separated")
    p.add_argument("--aead-shapes", metavar="LIST",
                   help=f"COUNTxSIZE,... (default {DEFAULT_SHAPES}; --quick or no GPU: {QUICK_SHAPES})")
    p.add_argument("--aead-impls", nargs="*", help="device implementations (default: fast)")
    p.add_argument("--aead-no-e2e", action="store_true", help="kernels only")


def _shapes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        c, _, s = part.strip().lower().partition("x")
        out.append((parse_bytes(c, "--aead-shapes"), parse_bytes(s, "--aead-shapes")))
    return out


def make_batch(name: str, count: int, size: int, rng, encrypt: bool = True) -> Batch:
    """``count`` random messages of ``size`` bytes under one random key, distinct nonces, 16
    bytes of AAD each."""
    a = aeads.lookup(name)
    kl, nl = a.names[name], a.default_nonce_length
    src = rng.integers(0, 256, count * size, dtype=np.uint8)
    off = np.arange(count + 1, dtype=np.int64) * size
    nonces = rng.integers(0, 256, (count, nl), dtype=np.uint8)
    nonces[:, :4] = np.arange(count, dtype="<u4").view(np.uint8).reshape(count, 4)  # distinct
    aad = rng.integers(0, 256, 16 * count, dtype=np.uint8)
    return Batch(name, encrypt, a.default_tag_length, rng.integers(0, 256, (1, kl), dtype=np.uint8),
                 np.zeros(count, dtype=np.int32), nonces, aad,
                 np.arange(count + 1, dtype=np.int64) * 16, src, off, np.empty_like(src))


def _reference_check(name: str, batch: Batch, tags: np.ndarray) -> str | None:
    """The first messages of a run against pyca (where it has the AEAD); None when they agree."""
    a = aeads.lookup(name)
    kind = a.openssl.get(name)
    if kind is None:
        return None
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    for i in range(min(3, batch.count)):
        key, nonce, aad, pt = batch.message(i)
        want = (pyca.AESGCM if kind == "AESGCM" else pyca.ChaCha20Poly1305)(key).encrypt(nonce, pt, aad)
        got = batch.dst[batch.off[i]:batch.off[i + 1]].tobytes() + tags[i].tobytes()
        if got != want:
            return f"message {i} differs from pyca/cryptography"
    return None


def _known_answers(name: str, dev) -> str | None:
    from ..selftest import _aead_rows

    for row in _aead_rows(dev, "device"):
        if row[1] == name and row[3]:
            return f"{row[3]} known-answer vectors fail on {dev.spec}"
    return None


def _record(name, dev, kind, count, size, impl) -> Record:
    return Record(cipher=name, algorithm=aeads.lookup(name).family, key_bits=8 * aeads.lookup(name).names[name],
                  mode="aead", direction="encrypt", device=dev.spec, device_name=dev.name,
                  device_kind=dev.kind, runtime=dev.runtime, kind=kind, size=count * size,
                  implementation=impl, messages=count)


def run(args, ctx: suites.Context) -> dict:
    from . import sysinfo

    wanted = sum((c.split(",") for c in (args.aead_cipher or [])), []) or aeads.names()
    devs = [d for d in ctx.api.devices() if d.runtime in ("opencl", "cuda")]
    if args.device:
        keep = set(sum((d.split(",") for d in args.device), []))
        devs = [d for d in devs if d.spec in keep or d.kind in keep]
    # the GiB shapes are for GPUs: without one, the default is the quick set (minutes, not hours)
    quick = args.quick or not any(d.kind == "gpu" for d in devs)
    shapes = _shapes(args.aead_shapes or (QUICK_SHAPES if quick else DEFAULT_SHAPES))
    repeats = args.repeats or (3 if args.quick else 10)
    impls = args.aead_impls or ["fast"]
    rng = np.random.default_rng()
    rows = []
    total = len(wanted) * len(shapes) * (len(devs) * len(impls) + (0 if args.aead_no_e2e else len(devs) + 1))
    with ctx.progress(total) as bar:
        for name in wanted:
            spec = aeads.spec(name)
            for count, size in shapes:
                batch = make_batch(name, count, size, rng)
                for dev in devs:
                    eng = ctx.api.get_engine(dev.spec)
                    problem = _known_answers(name, dev)
                    for impl in impls:
                        rec = _record(name, dev, "kernel", count, size, impl)
                        rows.append(_time_kernel(rec, eng, batch, impl, repeats, problem, ctx))
                        ctx.add(rec)
                        bar.advance(1)
                if args.aead_no_e2e:
                    continue
                targets = list(devs)
                if spec.capability("openssl") is not None:
                    from ..route import engine as get_engine

                    targets.append(get_engine("native").info)
                for dev in targets:
                    rec = _record(name, dev, "e2e" if dev.runtime != "native" else "openssl-allcores",
                                  count, size, None)
                    rows.append(_time_api(rec, name, batch, dev.spec, max(3, repeats // 2), ctx))
                    ctx.add(rec)
                    bar.advance(1)
    _print_table(rows)
    return {"devices": [sysinfo.device_info(d) for d in devs],
            "options": {"aeads": wanted, "shapes": [f"{c}x{s}" for c, s in shapes], "implementations": impls}}


def time_job(b, job, repeats: int) -> list[float]:
    """Device seconds of ``repeats`` runs of a prepared AEAD job (``Job.enqueue``) on backend
    ``b``, events around each, after one warm-up run."""
    job.enqueue()
    b.finish()
    times = []
    for _ in range(repeats):
        start = b.marker()
        job.enqueue()
        end = b.marker()
        b.finish()
        times.append(b.elapsed(start, end))
    return times


def _time_kernel(rec, eng, batch, impl, repeats, problem, ctx) -> Record:
    if problem:
        rec.status, rec.error = "failed", problem
        rec.verification = {"status": "failed", "detail": problem}
        ctx.log(f"FAILED {rec.cipher} on {rec.device}: {problem}")
        return rec
    try:
        drv = eng.aead_driver(batch.name, impl)
        b = eng.backend
        job = drv.prepare(batch)
        times = time_job(b, job, repeats)
        tags = job.finish()
        bad = _reference_check(batch.name, batch, tags)
        if bad:
            rec.status, rec.error = "failed", bad
            rec.verification = {"status": "failed", "detail": bad}
            return rec
        rec.verification = {"status": "passed", "oracle": "known answers (vectors/aead) + pyca where it has the AEAD"}
        rec.timer, rec.sm_count = "device-events", eng.info.compute_units
        clk = eng.sm_clock_mhz()
        if clk:
            rec.sm_clock_mhz, rec.clock_source = clk, "measured"
        elif eng.info.clock_mhz:
            rec.sm_clock_mhz, rec.clock_source = float(eng.info.clock_mhz), "nominal"
        rec.set_times(times)
    except Exception as e:  # one failing row must not end the run
        rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"[:300]
        ctx.log(f"FAILED {rec.cipher} kernel on {rec.device}: {rec.error}")
    return rec


def _time_api(rec, name, batch, device, repeats, ctx) -> Record:
    from ..aead import crypt, encrypt_batch

    key = batch.keys[0].tobytes()
    try:
        times = []
        one = batch.count == 1
        out = np.zeros(batch.src.nbytes + (batch.tag_length if one else 0), dtype=np.uint8)  # (faulted in)
        for i in range(repeats + 1):
            t0 = time.perf_counter()
            if one:
                crypt(True, batch.src, name, key, batch.nonces[0].tobytes(), batch.aad[:16].tobytes(),
                      None, device, False, None, out)
            else:  # (distinct nonces: the repeated-nonce check runs, as for any caller)
                encrypt_batch(name, batch.src, offsets=batch.off, key=key, nonces=batch.nonces,
                              aad=None, device=device, out=out)
            if i:
                times.append(time.perf_counter() - t0)
        rec.timer = "wall-clock"
        rec.verification = {"status": "reference", "detail": "same API as the verified kernel rows"}
        rec.set_times(times)
    except Exception as e:
        rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"[:300]
        ctx.log(f"FAILED {rec.cipher} API on {rec.device}: {rec.error}")
    return rec


def _print_table(rows) -> None:
    print(f"{'cipher':<18} {'device':<11} {'kind':<16} {'shape':>12} {'GB/s':>8} {'GB/s/SM/GHz':>11} {'Mmsg/s':>8}")
    for r in rows:
        shape = f"{r.messages}x{r.size // max(1, r.messages)}"
        if r.status != "ok":
            print(f"{r.cipher:<18} {r.device:<11} {r.kind:<16} {shape:>12} FAILED {r.error}")
            continue
        mps = r.messages / r.median_s / 1e6
        print(f"{r.cipher:<18} {r.device:<11} {r.kind:<16} {shape:>12} {r.gbps:8.2f} "
              f"{r.gbps_per_sm_ghz or float('nan'):11.3f} {mps:8.3f}")


suites.register("aead", run, help="the AEADs: one large message, batches of chunks and records",
                add_arguments=add_arguments)
