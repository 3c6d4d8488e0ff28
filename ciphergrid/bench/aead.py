"""``ciphergrid bench aead``: the AEADs, the same methodology as the block ciphers.

Shapes (``--aead-shapes``, COUNTxSIZE): one large message (``1x1Gi``: parallel within the message
for GCM and ChaCha20-Poly1305), batches of sealed-file chunks (``65536x16Ki`` = 1 GiB: enough
messages to fill a GPU with the serial AEADs, one message per work-item), and many
small records (``1Mix4Ki``, ``1Mix256``).  For every AEAD name and shape:

* on every OpenCL/CUDA device, ``kind="kernel"``: the batch uploaded once, the kernels alone timed
  with device events (``DeviceAEAD.prepare`` then ``Job.enqueue``), GB/s per SM per GHz and
  messages/s; verified first: the AEAD's known answers on that device (the selftest's batches)
  and the timed job's first messages against the reference (pyca where it has the AEAD);
* ``kind="e2e"``: the public API (``encrypt_batch``, or ``encrypt`` for one message; with
  ``--direction decrypt`` or ``both`` also ``decrypt_batch`` / ``decrypt`` of the API's own
  ciphertext, checked first) host → host, wall clock, on every device and on OpenSSL where it
  has the AEAD (``device="native"``: all cores, the messages of a batch spread over threads); on
  an OpenCL/CUDA device beside the copy strawman of as many bytes (the block ciphers' pipeline,
  as ``bench pipeline`` runs it), the two timed alternately, call by call: ``vs_copy`` is the
  median ratio of the pairs (column "x copy").
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .. import aeads
from ..aeads.base import Batch
from ..settings import parse_bytes
from . import suites
from .records import Record
from .report import ratio_text

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


#: the longest text or AAD pyca's one-shot AEAD classes take
PYCA_ONE_SHOT_MAX = 2**31 - 1


def _reference(name: str, kind: str, key: bytes, nonce: bytes, aad: bytes, pt) -> bytes:
    """ciphertext || tag of one message by pyca: its one-shot class, or for a message past its
    one-shot limit GCM's streaming encryptor (ChaCha20-Poly1305 has none: OpenSSL through the
    native engine)."""
    from cryptography.hazmat.primitives.ciphers import aead as pyca

    if max(len(pt), len(aad)) <= PYCA_ONE_SHOT_MAX:
        return (pyca.AESGCM if kind == "AESGCM" else pyca.ChaCha20Poly1305)(key).encrypt(nonce, pt, aad)
    if kind == "AESGCM":
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        enc = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
        enc.authenticate_additional_data(aad)
        view, step = memoryview(pt), 1 << 30
        parts = [enc.update(view[a:a + step]) for a in range(0, len(view), step)]
        parts.append(enc.finalize())
        return b"".join(parts) + enc.tag
    import ciphergrid

    return bytes(ciphergrid.encrypt(pt, name, key=key, nonce=nonce, aad=aad, device="native"))


def _reference_check(name: str, batch: Batch, tags: np.ndarray) -> str | None:
    """The first messages of a run against pyca (where it has the AEAD); None when they agree."""
    a = aeads.lookup(name)
    kind = a.openssl.get(name)
    if kind is None:
        return None
    for i in range(min(3, batch.count)):
        key, nonce, aad, pt = batch.message(i)
        want = _reference(name, kind, key, nonce, aad, pt)
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


def _record(name, dev, kind, count, size, impl, encrypt: bool = True) -> Record:
    return Record(cipher=name, algorithm=aeads.lookup(name).family, key_bits=8 * aeads.lookup(name).names[name],
                  mode="aead", direction="encrypt" if encrypt else "decrypt", device=dev.spec, device_name=dev.name,
                  device_kind=dev.kind, runtime=dev.runtime, kind=kind, size=count * size,
                  implementation=impl, messages=count)


def _selection(args, api) -> tuple[list, list, list, int]:
    """(AEAD names, devices, shapes, repeats) the arguments ask for: the OpenCL/CUDA devices
    (``--device`` keeps those named by spec or kind), the quick shapes without a GPU among them."""
    wanted = sum((c.split(",") for c in (args.aead_cipher or [])), []) or aeads.names()
    devs = [d for d in api.devices() if d.runtime in ("opencl", "cuda")]
    if args.device:
        keep = set(sum((d.split(",") for d in args.device), []))
        devs = [d for d in devs if d.spec in keep or d.kind in keep]
    # the GiB shapes are for GPUs: without one, the default is the quick set (minutes, not hours)
    quick = args.quick or not any(d.kind == "gpu" for d in devs)
    shapes = _shapes(args.aead_shapes or (QUICK_SHAPES if quick else DEFAULT_SHAPES))
    return wanted, devs, shapes, args.repeats or (3 if args.quick else 10)


def run(args, ctx: suites.Context) -> dict:
    from . import sysinfo

    wanted, devs, shapes, repeats = _selection(args, ctx.api)
    impls = args.aead_impls or ["fast"]
    rng = np.random.default_rng()
    rows = []
    # the kernel rows encrypt (the kernels are the same both ways); the API rows take --direction
    directions = suites.directions(args)
    total = len(wanted) * len(shapes) * (len(devs) * len(impls) + (
        0 if args.aead_no_e2e else (len(devs) + 1) * len(directions)))
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
                if spec.capability("openssl") is not None and not getattr(args, "no_openssl", False):
                    from ..route import engine as get_engine

                    targets.append(get_engine("native").info)
                for dev in targets:
                    copy = (_copy_strawman(ctx, dev, batch)
                            if dev.runtime != "native" and not getattr(args, "no_copy", False)
                            else None)
                    for encrypt in directions:
                        rec = _record(name, dev, "e2e" if dev.runtime != "native" else "openssl-allcores",
                                      count, size, None, encrypt)
                        rows.append(_time_api(rec, name, batch, dev.spec, max(3, repeats // 2), ctx,
                                              copy, encrypt))
                        ctx.add(rec)
                        bar.advance(1)
    _print_table(rows)
    return {"devices": [sysinfo.device_info(d) for d in devs],
            "options": {"aeads": wanted, "shapes": [f"{c}x{s}" for c, s in shapes], "implementations": impls,
                        "e2e_directions": ["encrypt" if e else "decrypt" for e in directions]}}


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


def _copy_strawman(ctx, dev, batch):
    """``copy()``: the copy-only strawman (:func:`pipeline.copy_strawman`) over as many bytes as
    ``batch``'s texts, host -> host; None where it cannot run (``dev`` has no pipeline)."""
    from .pipeline import copy_strawman

    n = int(batch.off[-1])
    if n < 1 << 20:
        return None
    try:
        src = np.ascontiguousarray(batch.src[:n])   # (the batch's texts: the copy only reads them)
        return copy_strawman(ctx.api, dev, src, np.zeros(n, dtype=np.uint8))
    except Exception as e:  # the row is still timed, without the comparison
        ctx.log(f"no copy strawman on {dev.spec}: {type(e).__name__}: {e}"[:300])
        return None


def _api_call(name, batch, device, encrypt: bool):
    """``call()``: the public API on ``batch`` host -> host into a reused output (faulted in):
    encryption, or decryption of what one encryption by the same API gave (checked first:
    every tag verifies and the plaintext comes back)."""
    from ..aead import crypt, decrypt_batch, encrypt_batch, message_request

    key = batch.keys[0].tobytes()
    one = batch.count == 1
    out = np.zeros(batch.src.nbytes + (batch.tag_length if one else 0), dtype=np.uint8)
    nonce, aad = batch.nonces[0].tobytes(), batch.aad[:16].tobytes()
    if one:
        def enc():
            return crypt(message_request(name, True, key, nonce, aad), batch.src, device, out)
    else:  # (distinct nonces: the repeated-nonce check runs, as for any caller)
        def enc():
            return encrypt_batch(batch.src, name, offsets=batch.off, key=key, nonces=batch.nonces,
                                 aad=None, device=device, out=out)
    if encrypt:
        return enc
    r = enc()
    sealed = out   # (encryption's output, not written again)
    tags = None if one else np.array(r.tags, copy=True)
    plain = np.zeros(batch.src.nbytes, dtype=np.uint8)
    if one:
        def dec():
            return crypt(message_request(name, False, key, nonce, aad), sealed, device, plain)
    else:
        def dec():
            return decrypt_batch(sealed, name, offsets=batch.off, key=key, nonces=batch.nonces,
                                 tags=tags, device=device, out=plain)
    got = dec()
    if (not one and not np.asarray(got.ok).all()) or not np.array_equal(plain, batch.src):
        raise RuntimeError("decryption of the API's own ciphertext did not give the plaintext back")
    return dec


def _time_api(rec, name, batch, device, repeats, ctx, copy=None, encrypt: bool = True) -> Record:
    """The public API host -> host, wall clock (``encrypt``: that direction).  With ``copy``
    (the copy strawman of as many bytes on the same device) the two run alternately, call by
    call, and ``vs_copy`` is the median of the per-pair ratios (copy time / API time): a slow
    period of the bus, which on a shared host lasts for several calls, then slows both sides of
    a pair, where separate runs of each would compare a slow period of one with a fast period of
    the other."""
    try:
        call = _api_call(name, batch, device, encrypt)
        times, pairs = [], []
        for i in range(repeats + 1):
            tc = None
            if copy is not None:
                t0 = time.perf_counter()
                copy()
                tc = time.perf_counter() - t0
            t0 = time.perf_counter()
            call()
            if i:
                times.append(time.perf_counter() - t0)
                if tc is not None:
                    pairs.append((tc, times[-1]))
        rec.timer = "wall-clock"
        rec.verification = {"status": "reference", "detail": "same API as the verified kernel rows"
                            + ("" if encrypt else "; its own ciphertext decrypted and compared first")}
        rec.set_times(times)
        if pairs:
            ratio = statistics.median(c / t for c, t in pairs)
            copy_gbps = int(batch.off[-1]) / statistics.median(c for c, _ in pairs) / 1e9
            rec.vs_copy = float(f"{ratio:.4g}")  # (4 digits: a ratio far below 1 is not 0)
            rec.note = (f"vs_copy: median of {len(pairs)} pairs, the copy strawman of as many "
                        f"bytes timed before each call (its median {copy_gbps:.2f} GB/s)")
    except Exception as e:
        rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"[:300]
        ctx.log(f"FAILED {rec.cipher} API on {rec.device}: {rec.error}")
    return rec


def _print_table(rows) -> None:
    print(f"{'cipher':<18} {'dir':<4} {'device':<11} {'kind':<16} {'shape':>12} {'GB/s':>8} {'GB/s/SM/GHz':>11} {'Mmsg/s':>8} {'x copy':>7}")
    for r in rows:
        shape = f"{r.messages}x{r.size // max(1, r.messages)}"
        if r.status != "ok":
            print(f"{r.cipher:<18} {r.direction[:3]:<4} {r.device:<11} {r.kind:<16} {shape:>12} FAILED {r.error}")
            continue
        mps = r.messages / r.median_s / 1e6
        print(f"{r.cipher:<18} {r.direction[:3]:<4} {r.device:<11} {r.kind:<16} {shape:>12} {r.gbps:8.2f} "
              f"{r.gbps_per_sm_ghz or float('nan'):11.3f} {mps:8.3f} "
              f"{'' if r.vs_copy is None else ratio_text(r.vs_copy, ''):>7}")


#: the estimate's seconds per row beyond its timed runs and per build of an AEAD's kernels on a
#: device, and a device's bytes/s against one core's pyca rate (CPU, GPU)
ROW_S, BUILD_S, DEVICE_SPEEDUP = 0.1, 3.0, {"cpu": 0.5, "gpu": 20.0}


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Per AEAD, shape and device: its kernel and API rows, ``repeats`` + 2 runs of the shape's
    bytes each at the device's rate, plus ROW_S; OpenSSL's rows at ``rate``; a build each."""
    wanted, devs, shapes, repeats = _selection(args, api)
    rows = (len(args.aead_impls or ["fast"]) + (0 if args.aead_no_e2e else len(suites.directions(args))))
    seconds = len(wanted) * len(devs) * BUILD_S
    for count, size in shapes:
        for d in devs:
            speed = rate * DEVICE_SPEEDUP.get(d.kind, 1.0)
            seconds += len(wanted) * rows * (ROW_S + (repeats + 2) * count * size / speed)
        if not args.aead_no_e2e:
            seconds += len(wanted) * len(suites.directions(args)) * (ROW_S + (repeats + 2) * count * size / rate)
    return (f"{len(wanted)} AEAD(s) x {len(shapes)} shape(s) on {len(devs)} device(s) and OpenSSL",
            seconds)


suites.register("aead", run, help="the AEADs: one large message, batches of chunks and records",
                add_arguments=add_arguments, estimate=estimate)
