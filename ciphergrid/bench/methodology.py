"""The uniform methodology of the "ciphers" suite: rows = device x cipher x direction x size x kind.

For every row, in this order:

1. skip it (recorded, with the reason) when the size does not suit the mode or exceeds 1/4 of the
   device's or the host's memory;
2. verify: the device's output for this cipher·direction at this size (capped) must equal the
   oracle's and the known answers (bench.verify); a wrong result marks the row failed, loudly, and
   it is never timed;
3. warm up (excluded): one untimed run that also estimates the time of one operation;
4. time ``repeats`` runs, the count adapted to the size (target seconds per row, within bounds):
   ``kernel`` rows by device events (bench.kernels: time_kernel, device-resident data), ``e2e``
   rows by the wall clock around ciphergrid.encrypt/decrypt (host array in, host array out),
   OpenSSL rows by ``ciphergrid.bench.evp_speed.speed`` on one core and on all usable cores;
5. record median, min and max; energy over the timed window; resource use and the area-time
   product; the SM clock during the run.

The copy-only strawman kernel ("copy", Barenghi et al. Table 2, last row) is timed on every device
that has kernels: it bounds what any cipher can reach there.
"""

from __future__ import annotations

import importlib
import math
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .. import registry
from ..errors import DeviceError, DeviceNotFound, Error, InvalidArgument, UnsupportedCipher
from . import energy, suites, sysinfo
from .records import Record
from .verify import Gate, Unverifiable, VerificationFailed, random_iv, random_key

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
#: the openssl speed sizes and up to 1 GiB
DEFAULT_SIZES = [16, 64, 256, 1024, 8192, 16384, 64 * KiB, MiB, 16 * MiB, 256 * MiB, GiB]
QUICK_SIZES = [16, 1024, 16384, MiB]
QUICK_CIPHERS = ["aes-128"]
QUICK_MODES = ["ctr", "ecb"]
COPY = "copy"
#: the device spec of ciphergrid's OpenSSL engine (checks the OpenSSL baseline's output)
NATIVE = "native"
#: IEEE 1619: one XTS data unit (one tweak) covers at most 2^20 blocks
XTS_MAX_BLOCKS = 1 << 20


def _serial_note(spec, encrypt: bool) -> str | None:
    """For a cipher·mode a device runs only serially (CBC encryption): what its rows measure."""
    if spec is None or spec.capability("device", encrypt) != "serial":
        return None
    where = "OpenSSL runs it" if spec.capability("openssl", encrypt) else "one work-item runs it"
    return f"{spec.mode.name.upper()} {'encryption' if encrypt else 'decryption'} is serial: {where}"


# ------------------------------------------------------------------------- engine entry points
def _lazy(module: str, attr: str):
    def call(*a, **kw):
        fn = getattr(importlib.import_module(module), attr, None)
        if fn is None:
            raise ImportError(f"{module}.{attr} is not available")
        return fn(*a, **kw)

    call.__name__ = f"{module}.{attr}"
    return call


def _evp_speed():
    """evp_speed.speed, resolved at call time, with its buffers kept between this Api's calls
    (the repeats and thread counts of one size)."""
    held = []

    def call(*a, **kw):
        mod = importlib.import_module("ciphergrid.bench.evp_speed")
        make = getattr(mod, "SpeedBuffers", None)
        if make is not None:
            if not held:
                held.append(make())
            kw.setdefault("buffers", held[0])
        return mod.speed(*a, **kw)

    call.__name__ = "ciphergrid.bench.evp_speed.speed"
    return call


@dataclass
class Api:
    """The engine entry points the bench calls; each defaults to the real one, resolved at call
    time (so monkeypatching ``ciphergrid.encrypt`` etc. works), and can be injected for tests."""

    devices: Any = field(default_factory=lambda: _lazy("ciphergrid", "devices"))
    get_engine: Any = field(default_factory=lambda: _lazy("ciphergrid.bench.kernels", "engine"))
    encrypt: Any = field(default_factory=lambda: _lazy("ciphergrid", "encrypt"))
    decrypt: Any = field(default_factory=lambda: _lazy("ciphergrid", "decrypt"))
    speed: Any = field(default_factory=_evp_speed)
    load_vectors: Any = field(default_factory=lambda: _lazy("ciphergrid.vectors", "load"))


# ------------------------------------------------------------------------- repeat policy
@dataclass(frozen=True)
class Policy:
    target_s: float        # aim for this much timed time per row
    min_repeats: int
    max_repeats: int
    openssl_seconds: float  # seconds per openssl.speed call
    openssl_repeats: int
    fixed: int | None = None  # --repeats N: exactly N everywhere

    def repeats_for(self, one_s: float) -> int:
        if self.fixed:
            return self.fixed
        n = math.ceil(self.target_s / max(one_s, 1e-9))
        return max(self.min_repeats, min(self.max_repeats, n))


#: max_repeats bounds the JSON (times_s is stored) and a probe that underestimates; the target time
#: bounds the rest.  A window of 1000 runs of >= 50 us also lets the energy counters read (MIN_WINDOW_S).
FULL = Policy(target_s=0.25, min_repeats=5, max_repeats=1000, openssl_seconds=0.1, openssl_repeats=5)
#: wall-clock seconds an OpenSSL row aims at, set-up included (see Runner.time_openssl)
OPENSSL_ROW_S = 1.5
OPENSSL_MIN_REPEATS = 3
QUICK = Policy(target_s=0.02, min_repeats=3, max_repeats=10, openssl_seconds=0.03, openssl_repeats=3)


# ------------------------------------------------------------------------- option parsing
_SUFFIX = {"": 1, "b": 1, "k": KiB, "ki": KiB, "kib": KiB, "kb": KiB, "m": MiB, "mi": MiB,
           "mib": MiB, "mb": MiB, "g": GiB, "gi": GiB, "gib": GiB, "gb": GiB}


def parse_size(s: str) -> int:
    """'16' -> 16, '64Ki' / '64K' / '64KiB' -> 65536, '1G' -> 2**30 (binary multiples)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", s)
    if not m or m.group(2).lower() not in _SUFFIX or int(m.group(1)) <= 0:
        raise InvalidArgument(f"bad size {s!r}: expected e.g. 16, 1024, 64Ki, 16Mi, 1Gi")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def parse_sizes(text: str | None) -> list[int] | None:
    if not text:
        return None
    return sorted({parse_size(t) for t in text.split(",") if t.strip()})


def _tokens(values) -> list[str]:
    """--cipher a,b --cipher c -> [a, b, c]."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [t.strip().lower() for v in values for t in v.split(",") if t.strip()]


def select_ciphers(cipher_args, mode_args, quick: bool) -> list[str]:
    """Names from --cipher (exact names or prefixes: "aes", "aes-128") filtered by --mode."""
    known = registry.names()
    wanted, modes = _tokens(cipher_args), _tokens(mode_args)
    if quick and not wanted:
        wanted, modes = QUICK_CIPHERS, modes or QUICK_MODES
    known_modes = {n.rsplit("-", 1)[-1] for n in known}
    bad = [m for m in modes if m not in known_modes]
    if bad:
        raise InvalidArgument(f"unknown mode {bad[0]!r}; expected one of {', '.join(sorted(known_modes))}")
    out: list[str] = []
    for w in wanted or [""]:
        match = [n for n in known if not w or n == w or n.startswith(w + "-")]
        if not match:
            registry.lookup(w)  # raises UnsupportedCipher listing the names
        out += [n for n in match if n not in out]
    if modes:
        out = [n for n in out if n.rsplit("-", 1)[-1] in modes]
    if not out:
        raise InvalidArgument("no registered cipher matches the --cipher/--mode selection")
    return out


def select_devices(api: Api, device_args) -> list:
    """The ciphergrid devices to bench.

    Tokens: a device spec ("cuda:0", "opencl:0:0", "native"), "all", "gpu", "cpu", or "openssl"
    (the OpenSSL baseline only).  The baseline runs with any selection unless --no-openssl.
    """
    try:
        present = list(api.devices())
    except ImportError as e:
        raise DeviceError(f"the ciphergrid engine is not available: {e}") from None
    tokens = _tokens(device_args)
    if not tokens or "all" in tokens:
        return present
    chosen = []
    for t in tokens:
        if t == "openssl":
            continue
        if t in ("gpu", "cpu"):
            match = [d for d in present if d.kind == t]
        else:
            match = [d for d in present if d.spec.lower() == t]
            if not match:
                raise DeviceNotFound(
                    f"no device {t!r}; present: {', '.join(d.spec for d in present) or 'none'}")
        chosen += [d for d in match if d not in chosen]
    return chosen


# ------------------------------------------------------------------------- the plan
@dataclass
class Row:
    kind: str                 # records.KINDS
    cipher: str               # name, or COPY
    spec: Any                 # registry.CipherSpec, None for COPY
    size: int
    encrypt: bool
    device: Any = None        # DeviceInfo, None for OpenSSL rows
    threads: int | None = None
    skip: str | None = None
    note: str | None = None
    impl: str | None = None   # a kernel implementation by name (None: the default, "fast")

    @property
    def label(self) -> str:
        where = self.device.spec if self.device is not None else f"openssl x{self.threads}"
        d = "enc" if self.encrypt else "dec"
        what = f"{self.cipher}[{self.impl}]" if self.impl else self.cipher
        return f"{what} {d} {where} {self.kind} {human_size(self.size)}"


def human_size(n: int) -> str:
    """Bytes in the largest binary unit that gives a number >= 1 (``1.20 GiB``)."""
    from .preflight import size_text

    return size_text(n)


def _size_problem(spec, size: int) -> str | None:
    """Why one message of ``size`` bytes does not suit the cipher·mode (None: it does)."""
    if spec is None:
        return None
    from ..request import make_request

    key = bytes(range(spec.key_len))  # (distinct halves for XTS)
    req = make_request(spec, key, bytes(spec.iv_len) if spec.iv_len else None, True)
    try:
        req.check_length(size)
    except Error as e:
        return str(e)
    return None


def _memory_problem(size: int, dev, host_mem: int | None) -> str | None:
    mem = getattr(dev, "memory", None) if dev is not None else None
    if mem and size > mem // 4:
        return f"larger than 1/4 of the device memory ({mem / GiB:.1f} GiB)"
    if host_mem and size > host_mem // 4:
        return f"larger than 1/4 of the host memory ({host_mem / GiB:.1f} GiB)"
    return None


def plan(ciphers: list[str], sizes: list[int], devices: list, *, directions=(True,),
         openssl_threads: list[int] = (1,), copy: bool = True, host_mem: int | None = None) -> list[Row]:
    specs = [(n, registry.lookup(n)) for n in ciphers]
    rows: list[Row] = []
    for dev in devices:
        kernels = dev.runtime != "native"
        for size in sizes:
            if copy and kernels:
                rows.append(Row("kernel", COPY, None, size, True, dev))
        for name, spec in specs:
            for enc in directions:
                for size in sizes:
                    for kind in (("kernel", "e2e") if kernels else ("e2e",)):
                        rows.append(Row(kind, name, spec, size, enc, dev))
    for name, spec in specs:
        for enc in directions:
            for size in sizes:
                for t in openssl_threads:
                    kind = "openssl-1core" if t == 1 else "openssl-allcores"
                    rows.append(Row(kind, name, spec, size, enc, None, threads=t))
    return settle(rows, host_mem)


def settle(rows: list[Row], host_mem: int | None) -> list[Row]:
    """Mark the rows that cannot run (the size does not suit the mode, or the memory is too
    small; a serial cipher·direction has no kernel row) and note what a serial e2e row measures."""
    for r in rows:
        r.skip = _size_problem(r.spec, r.size) or _memory_problem(r.size, r.device, host_mem)
        serial = _serial_note(r.spec, r.encrypt)
        if serial and r.kind == "kernel":
            r.skip = r.skip or f"no parallel kernel: {serial}"
        elif serial and r.kind == "e2e" and r.device.runtime != "native":
            r.note = serial
    return rows


# ------------------------------------------------------------------------- measuring
@dataclass
class Measurement:
    times: list[float]
    warmup: int
    timer: str
    reading: energy.Reading
    sm_clock_mhz: float | None = None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Runner:
    def __init__(self, api: Api, policy: Policy, host: dict, *, gate: Gate | None = None):
        self.api, self.policy, self.host = api, policy, host
        self.gate = gate or Gate(api)
        self._engines: dict[str, Any] = {}
        self._meters: dict[str, energy.Meter] = {}
        self._resources: dict[tuple, dict | None] = {}
        self._rng = np.random.default_rng()

    # -- per device caches
    def engine(self, dev):
        if dev.spec not in self._engines:
            try:
                self._engines[dev.spec] = self.api.get_engine(dev.spec)
            except (Error, ImportError) as e:
                self._engines[dev.spec] = e
        eng = self._engines[dev.spec]
        if isinstance(eng, Exception):
            raise eng if isinstance(eng, Error) else DeviceError(f"no engine: {eng}")
        return eng

    def meter(self, dev) -> energy.Meter:
        key = dev.spec if dev is not None else "openssl"
        if key not in self._meters:
            self._meters[key] = energy.meter_for(dev) if dev is not None else energy.rapl_meter()
        return self._meters[key]

    def resources(self, dev, name: str, encrypt: bool, impl: str | None = None) -> dict | None:
        k = (dev.spec, name, encrypt, impl)
        if k not in self._resources:
            try:
                kw = {"impl": impl} if impl else {}
                res = self.engine(dev).kernel_resources(name, encrypt=encrypt, **kw)
                self._resources[k] = dict(res) if res else None
            except Exception:
                self._resources[k] = None
        return self._resources[k]

    def sm_clock(self, dev) -> float | None:
        try:
            eng = self.engine(dev)
            v = eng.sm_clock_mhz()
            return float(v) if v else None
        except Exception:
            return sysinfo.sm_clock_mhz(dev)

    # -- the three timers
    def time_kernel(self, row: Row) -> Measurement:
        eng = self.engine(row.device)
        kw = dict(encrypt=row.encrypt, impl=row.impl) if row.impl else dict(encrypt=row.encrypt)
        probe = eng.time_kernel(row.cipher, row.size, repeats=1, **kw)
        n = self.policy.repeats_for(min(probe))
        meter = self.meter(row.device)
        meter.start()
        times = eng.time_kernel(row.cipher, row.size, repeats=n, **kw)
        reading = meter.stop()
        if len(times) != n:
            raise DeviceError(f"time_kernel returned {len(times)} times for {n} repeats")
        return Measurement(list(times), 1, "device-events", reading, self.sm_clock(row.device))

    def time_e2e(self, row: Row) -> Measurement:
        """Host array in, host array out: one ciphergrid.encrypt/decrypt call per repeat, into an
        output array the caller allocated once (``out=``, as an application streaming buffers
        does), so a row measures the engine and the bus, not the kernel's filling of fresh pages."""
        spec, dev = row.spec, row.device
        fn = self.api.encrypt if row.encrypt else self.api.decrypt
        data = self._rng.integers(0, 256, row.size, dtype=np.uint8)
        out = np.zeros(row.size, dtype=np.uint8)
        key, iv = random_key(spec), random_iv(spec)
        kw = {"implementation": row.impl} if row.impl else {}

        def once():
            try:
                fn(data, cipher=row.cipher, key=key, iv=iv, device=dev.spec, out=out, **kw)
            except TypeError:  # an injected API without out=
                fn(data, cipher=row.cipher, key=key, iv=iv, device=dev.spec, **kw)

        t0 = time.perf_counter()
        once()  # warm-up, excluded
        n = self.policy.repeats_for(time.perf_counter() - t0)
        times = []
        meter = self.meter(dev)
        meter.start()
        for _ in range(n):
            t0 = time.perf_counter()
            once()
            times.append(time.perf_counter() - t0)
        reading = meter.stop()
        clock = self.sm_clock(dev) if dev.runtime != "native" else None
        return Measurement(times, 1, "wall-clock", reading, clock)

    def time_openssl(self, row: Row) -> Measurement:
        """openssl.speed warms every context up before its timed loop (like time_kernel), so each
        call is one timed repeat.  A call also pays its set-up (a buffer per thread), so the
        repeat count drops to OPENSSL_MIN_REPEATS when one call takes long (large sizes, many threads)."""
        p = self.policy
        kw = dict(threads=row.threads, encrypt=row.encrypt, seconds=p.openssl_seconds)
        meter = self.meter(None)
        meter.start()
        t0 = time.perf_counter()
        rates = [float(self.api.speed(row.cipher, row.size, **kw))]
        first = time.perf_counter() - t0
        n = p.fixed or max(min(p.openssl_repeats, int(OPENSSL_ROW_S / first)), OPENSSL_MIN_REPEATS)
        rates += [float(self.api.speed(row.cipher, row.size, **kw)) for _ in range(n - 1)]
        reading = meter.stop()
        if any(r <= 0 for r in rates):
            raise DeviceError(f"openssl.speed returned a non-positive rate: {rates}")
        return Measurement([row.size / r for r in rates], 0, "openssl-speed", reading)

    # -- one row
    def record_for(self, row: Row) -> Record:
        spec, dev = row.spec, row.device
        if dev is None:
            where = dict(device="openssl", device_name=f"OpenSSL on {self.host.get('cpu_model')}",
                         device_kind="cpu", runtime="native")
        else:
            where = dict(device=dev.spec, device_name=dev.name, device_kind=dev.kind,
                         runtime=dev.runtime)
        return Record(cipher=row.cipher, algorithm=spec.algorithm.name if spec else None,
                      key_bits=8 * spec.key_size if spec else None, mode=spec.mode.name if spec else None,
                      direction="encrypt" if row.encrypt else "decrypt", kind=row.kind,
                      size=row.size, threads=row.threads, timestamp=_now(), implementation=row.impl,
                      verification={"status": "not-run"}, note=row.note, **where)

    def run_row(self, row: Row) -> Record:
        rec = self.record_for(row)
        if row.skip:
            rec.status, rec.error = "skipped", row.skip
            return rec
        try:
            if row.kind.startswith("openssl"):
                rec.verification = self.gate.check(row.spec, NATIVE, row.size, row.encrypt)
                rec.verification["detail"] = (
                    "checked through ciphergrid's native device: the libcrypto EVP cipher that "
                    "openssl.speed drives")
                m = self.time_openssl(row)
            else:
                if row.spec is None:
                    rec.verification = {"status": "not-applicable",
                                        "detail": "copy-only strawman kernel: nothing to check"}
                else:
                    rec.verification = self.gate.check(row.spec, row.device.spec, row.size,
                                                       row.encrypt, impl=row.impl)
                m = self.time_kernel(row) if row.kind == "kernel" else self.time_e2e(row)
        except VerificationFailed as e:
            rec.status, rec.error = "failed", f"WRONG OUTPUT, not timed: {e}"
            rec.verification = {"status": "failed", "detail": str(e)}
            return rec
        except Unverifiable as e:
            rec.status, rec.error = "skipped", str(e)
            return rec
        except (ImportError, UnsupportedCipher) as e:
            if not row.kind.startswith("openssl"):
                rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"
            else:
                rec.status, rec.error = "skipped", f"no OpenSSL baseline: {e}"
            return rec
        except Error as e:
            rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"
            return rec
        except Exception as e:  # a bug or a driver failure: this row fails, the run goes on
            rec.status, rec.error = "failed", f"unexpected {type(e).__name__}: {e}"
            return rec
        self._fill(rec, row, m)
        return rec

    def _fill(self, rec: Record, row: Row, m: Measurement) -> None:
        rec.warmup, rec.timer = m.warmup, m.timer
        if row.kind == "e2e":
            rec.note = "; ".join(filter(None, (rec.note, "host to host into an output array "
                                                          "allocated once (out=)")))
        dev = row.device
        if dev is not None:
            rec.sm_count = dev.compute_units or None
            if m.sm_clock_mhz:
                rec.sm_clock_mhz, rec.clock_source = m.sm_clock_mhz, "measured"
            elif dev.clock_mhz:
                rec.sm_clock_mhz, rec.clock_source = float(dev.clock_mhz), "nominal"
            if dev.runtime != "native":
                rec.set_resources(self.resources(dev, row.cipher, row.encrypt, row.impl))
        rec.set_times(m.times)
        rec.set_energy(m.reading)


# ------------------------------------------------------------------------- the suite
def run_ciphers(args, ctx: suites.Context) -> dict:
    quick = bool(getattr(args, "quick", False))
    policy = QUICK if quick else FULL
    if getattr(args, "repeats", None):
        if args.repeats < 1:
            raise InvalidArgument("--repeats must be at least 1")
        policy = Policy(**{**policy.__dict__, "fixed": int(args.repeats)})
    ciphers = select_ciphers(getattr(args, "cipher", None), getattr(args, "mode", None), quick)
    sizes = parse_sizes(getattr(args, "sizes", None)) or (QUICK_SIZES if quick else DEFAULT_SIZES)
    devices = select_devices(ctx.api, getattr(args, "device", None))
    direction = getattr(args, "direction", None) or "encrypt"
    directions = suites.directions(args)
    threads = []
    if not getattr(args, "no_openssl", False):
        cores = int(ctx.host.get("cpu_usable") or 1)
        threads = [1] + ([cores] if cores > 1 else [])
    rows = plan(ciphers, sizes, devices, directions=directions, openssl_threads=threads,
                copy=not getattr(args, "no_copy", False), host_mem=ctx.host.get("memory_bytes"))
    runner = Runner(ctx.api, policy, ctx.host)
    header = {
        "devices": [sysinfo.device_info(d) for d in devices],
        "options": {"ciphers": ciphers, "sizes": sizes, "devices": [d.spec for d in devices],
                    "openssl_threads": threads, "directions": [direction],
                    "copy": not getattr(args, "no_copy", False), "quick": quick,
                    "policy": dict(policy.__dict__), "oracle_cap_bytes": runner.gate.cap},
    }
    ctx.header.update(header)
    with ctx.progress(len(rows)) as prog:
        for row in rows:
            prog.row(row.label)
            rec = runner.run_row(row)
            ctx.add(rec)
            if rec.status == "failed":
                prog.log(f"FAILED  {row.label}: {rec.error}")
            prog.advance()
    return header


#: the estimate's seconds per row beyond its timed time (set-up, check), per build of a cipher's
#: kernels on a device, and a device's bytes/s against one core's pyca rate (CPU, GPU)
ROW_S, BUILD_S, DEVICE_SPEEDUP = 0.05, 3.0, {"cpu": 0.5, "gpu": 20.0}


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Its rows (the plan) each the policy's timed time or its repeats over the size, whichever
    is longer, plus ROW_S; OpenSSL's rows their fixed seconds; a build per cipher and device."""
    quick = bool(getattr(args, "quick", False))
    policy = QUICK if quick else FULL
    ciphers = select_ciphers(getattr(args, "cipher", None), getattr(args, "mode", None), quick)
    sizes = parse_sizes(getattr(args, "sizes", None)) or (QUICK_SIZES if quick else DEFAULT_SIZES)
    devices = select_devices(api, getattr(args, "device", None))
    threads = [] if getattr(args, "no_openssl", False) else [1, 2]
    rows = [r for r in plan(ciphers, sizes, devices, directions=suites.directions(args),
                            openssl_threads=threads, copy=not getattr(args, "no_copy", False))
            if not r.skip]
    seconds = len(ciphers) * sum(BUILD_S for d in devices if d.runtime != "native")
    for r in rows:
        if r.device is None:
            seconds += OPENSSL_ROW_S if not quick else policy.openssl_seconds * policy.openssl_repeats
            continue
        speed = rate * (1.0 if r.device.runtime == "native" else DEVICE_SPEEDUP.get(r.device.kind, 1.0))
        reps = policy.fixed or policy.min_repeats
        seconds += ROW_S + max(policy.target_s, (reps + 2) * r.size / speed)
    return (f"{len(rows)} rows: {len(ciphers)} cipher(s) x {len(sizes)} size(s) on "
            f"{len(devices)} device(s) and OpenSSL", seconds)


suites.register("ciphers", run_ciphers, estimate=estimate,
                help="every cipher·mode on every device and OpenSSL, kernel-only and end to end")
