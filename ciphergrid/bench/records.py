"""Benchmark results: one :class:`Record` per cipher·mode·direction·device·size·kind, a run header,
and JSON load/save with a schema version and a validator (no jsonschema dependency).

The schema is documented in docs/bench-schema.md; bump :data:`SCHEMA_VERSION` on any change that
breaks a reader (renaming or removing a field, changing a unit), not when adding a field.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import InvalidArgument

SCHEMA = "ciphergrid.bench"
SCHEMA_VERSION = 1

#: what a row measured
KINDS = ("kernel", "e2e", "openssl-1core", "openssl-allcores", "file", "api", "call")
STATUSES = ("ok", "failed", "skipped")
VERIFICATION = ("passed", "failed", "not-applicable", "reference", "not-run")
ENERGY_METHODS = ("nvml-counter", "nvml-sampled", "rapl", "unavailable")

#: significant digits kept in times_s (median_s/min_s/max_s come from the unrounded values)
TIME_DIGITS = 5

#: decimal units, as in Barenghi et al. (MB/s, MB/J) and openssl speed
MB = 1e6
GB = 1e9

#: the resource-use ("area") definition used for the area-time product; also written into the JSON
AREA_DEFINITION = (
    "area = sm_count x occupancy: the number of SMs (compute units) the kernel's resident "
    "work-items would fill completely, i.e. the fraction of the device's thread slots that one "
    "resident wave of the kernel occupies (occupancy, 0..1, limited by registers, local memory "
    "and work-group size) times the number of SMs. Unit: SM-equivalents. Null when the runtime "
    "does not report occupancy or SM count (e.g. the OpenSSL baseline)."
)
AREA_UNIT = "SM"
AREA_TIME_DEFINITION = (
    "area_time = area x (1 / throughput), as Barenghi et al. (area-time product = occupied area "
    "times the reciprocal of the throughput); throughput in MB/s (1 MB = 1e6 bytes), reported "
    "in SM-microseconds per MB. Lower is better."
)
AREA_TIME_UNIT = "SM*us/MB"


@dataclass
class Record:
    # what
    cipher: str                       # "aes-128-ctr"; "copy" for the copy-only strawman kernel
    algorithm: str | None             # "aes"
    key_bits: int | None              # 128 (one block-cipher key; xts takes two)
    mode: str | None                  # "ctr"
    direction: str                    # "encrypt" | "decrypt"
    device: str                       # device spec ("cuda:0", "opencl:0:0", "native") or "openssl"
    device_name: str
    device_kind: str                  # "gpu" | "cpu"
    runtime: str                      # "opencl" | "cuda" | "native"
    kind: str                         # one of KINDS
    size: int                         # bytes per operation
    threads: int | None = None        # OpenSSL rows: threads used
    implementation: str | None = None  # kernel implementation (ablation rows; None = default)
    messages: int | None = None       # AEAD rows: messages per operation (size = all of them)
    # outcome
    status: str = "ok"                # one of STATUSES
    error: str | None = None
    verification: dict = field(default_factory=dict)
    # timing (seconds per operation of `size` bytes)
    repeats: int | None = None
    warmup: int | None = None         # warm-up runs, excluded from times_s
    timer: str | None = None          # "device-events" | "wall-clock" | "openssl-speed"
    times_s: list[float] = field(default_factory=list)
    median_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    throughput_bps: float | None = None       # size / median_s
    throughput_min_bps: float | None = None   # size / max_s
    throughput_max_bps: float | None = None   # size / min_s
    gbps: float | None = None                 # throughput_bps / 1e9
    # normalisation
    sm_count: int | None = None
    sm_clock_mhz: float | None = None
    clock_source: str | None = None   # "measured" (NVML during the run) | "nominal" (device info)
    gbps_per_sm_ghz: float | None = None
    # resource use ("area") of the kernel
    resources: dict | None = None
    area: float | None = None                 # SM-equivalents (AREA_DEFINITION)
    area_time: float | None = None            # SM*us/MB (AREA_TIME_DEFINITION)
    throughput_per_area: float | None = None  # MB/s per SM-equivalent
    # energy over the timed window
    energy_method: str = "unavailable"
    energy_scope: str | None = None   # "gpu-board" | "cpu-packages"
    energy_j: float | None = None
    energy_window_s: float | None = None
    avg_power_w: float | None = None
    mb_per_j: float | None = None
    energy_note: str | None = None
    note: str | None = None           # anything a reader must know about this row
    vs_copy: float | None = None      # AEAD e2e rows: median ratio to the copy strawman, paired
    vs_kernel: float | None = None    # api rows: the kernel's time / the API call's (bench api)
    timestamp: str | None = None

    # ---------------------------------------------------------------- derived fields
    def set_times(self, times: list[float]) -> None:
        """Store per-operation times and derive median/min/max and throughputs."""
        times = [float(t) for t in times]
        if not times or any(not math.isfinite(t) or t <= 0 for t in times):
            raise ValueError(f"bad timing sample: {times!r}")
        self.times_s = [float(f"{t:.{TIME_DIGITS}g}") for t in times]
        self.repeats = len(times)
        self.median_s = statistics.median(times)
        self.min_s = min(times)
        self.max_s = max(times)
        self.throughput_bps = self.size / self.median_s
        self.throughput_min_bps = self.size / self.max_s
        self.throughput_max_bps = self.size / self.min_s
        self.gbps = self.throughput_bps / GB
        self._derive()

    def fail(self, detail: str) -> "Record":
        """Mark the row failed (wrong output or an error): no timing, the reason kept."""
        self.status, self.error = "failed", detail[:300]
        self.verification = {"status": "failed", "detail": self.error}
        return self

    def set_resources(self, res: dict | None) -> None:
        self.resources = dict(res) if res else None
        if res and res.get("sm_count") and not self.sm_count:
            self.sm_count = int(res["sm_count"])
        self._derive()

    def set_energy(self, reading) -> None:
        """Take an :class:`energy.Reading`; MB/J = throughput (MB/s) / average power (W)."""
        self.energy_method = reading.method
        self.energy_scope = reading.scope
        self.energy_j = reading.joules
        self.energy_window_s = reading.window_s
        self.energy_note = reading.note
        self.avg_power_w = reading.avg_power_w
        self._derive()

    def _derive(self) -> None:
        tp = self.throughput_bps
        if tp and self.sm_count and self.sm_clock_mhz:
            self.gbps_per_sm_ghz = tp / GB / (self.sm_count * self.sm_clock_mhz / 1000.0)
        res = self.resources or {}
        occ, sms = res.get("occupancy"), res.get("sm_count") or self.sm_count
        if occ is not None and sms:
            self.area = float(sms) * float(occ)
        if tp and self.area:
            mbps = tp / MB
            self.area_time = self.area / mbps * 1e6
            self.throughput_per_area = mbps / self.area
        if tp and self.avg_power_w:
            self.mb_per_j = tp / MB / self.avg_power_w

    # ---------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def key(self) -> tuple:
        """The identity of a row: unique within a run."""
        return (self.cipher, self.direction, self.device, self.size, self.kind)


@dataclass
class Results:
    run: dict
    records: list[Record]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "run": self.run,
            "records": [r.to_dict() for r in self.records],
        }

    @property
    def failed(self) -> list[Record]:
        return [r for r in self.records if r.status == "failed"]


def save(results: Results, path: str | os.PathLike) -> None:
    """Write the results as JSON (atomically: a temporary file renamed into place)."""
    doc = results.to_dict()
    problems = validate(doc)
    if problems:
        raise InvalidArgument("refusing to write invalid results: " + "; ".join(problems[:5]))
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    # the header indented, then one record per line (grep-friendly, and compact for long times_s)
    dump = lambda o, **kw: json.dumps(o, allow_nan=False, default=_json_default, **kw)  # noqa: E731
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k in ("schema", "schema_version", "run"):
            f.write(f" {dump(k)}: {dump(doc[k], indent=1).replace(chr(10), chr(10) + ' ')},\n")
        f.write(' "records": [\n')
        f.write(",\n".join("  " + dump(r, separators=(",", ":")) for r in doc["records"]))
        f.write("\n ]\n}\n")
    os.replace(tmp, path)


def _json_default(o: Any):
    # numpy scalars and the like
    for conv in (int, float, str):
        try:
            return conv(o)
        except (TypeError, ValueError):
            continue
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load(path: str | os.PathLike) -> Results:
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise InvalidArgument(f"{path}: not JSON: {e}") from None
    problems = validate(doc)
    if problems:
        raise InvalidArgument(f"{path}: not ciphergrid bench results: " + "; ".join(problems[:5]))
    return Results(run=doc["run"], records=[Record.from_dict(r) for r in doc["records"]])


# -------------------------------------------------------------------- validation
_RUN_REQUIRED = {
    "suite": str, "command": str, "argv": list, "date": str, "host": dict, "devices": list,
    "options": dict, "definitions": dict, "counts": dict, "exit_code": int,
}
_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
_OPT_STR = (str, type(None))
_OPT_INT = (int, type(None))
_REC_TYPES: dict[str, tuple] = {
    "cipher": (str,), "algorithm": _OPT_STR, "key_bits": _OPT_INT, "mode": _OPT_STR,
    "direction": (str,), "device": (str,), "device_name": (str,), "device_kind": (str,),
    "runtime": (str,), "kind": (str,), "size": (int,), "threads": _OPT_INT, "status": (str,),
    "error": _OPT_STR, "implementation": _OPT_STR, "messages": _OPT_INT, "verification": (dict,), "repeats": _OPT_INT, "warmup": _OPT_INT,
    "timer": _OPT_STR, "times_s": (list,), "median_s": _OPT_NUM, "min_s": _OPT_NUM,
    "max_s": _OPT_NUM, "throughput_bps": _OPT_NUM, "throughput_min_bps": _OPT_NUM,
    "throughput_max_bps": _OPT_NUM, "gbps": _OPT_NUM, "sm_count": _OPT_INT,
    "sm_clock_mhz": _OPT_NUM, "clock_source": _OPT_STR, "gbps_per_sm_ghz": _OPT_NUM,
    "resources": (dict, type(None)), "area": _OPT_NUM, "area_time": _OPT_NUM,
    "throughput_per_area": _OPT_NUM, "energy_method": (str,), "energy_scope": _OPT_STR,
    "energy_j": _OPT_NUM, "energy_window_s": _OPT_NUM, "avg_power_w": _OPT_NUM,
    "mb_per_j": _OPT_NUM, "energy_note": _OPT_STR, "note": _OPT_STR, "timestamp": _OPT_STR,
}


def validate(doc: Any) -> list[str]:
    """Return the list of schema problems of a results document (empty when it is valid)."""
    p: list[str] = []
    if not isinstance(doc, dict):
        return ["top level is not an object"]
    if doc.get("schema") != SCHEMA:
        p.append(f"schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    if doc.get("schema_version") != SCHEMA_VERSION:
        p.append(f"schema_version is {doc.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    run = doc.get("run")
    if not isinstance(run, dict):
        p.append("run header missing")
    else:
        for k, t in _RUN_REQUIRED.items():
            if not isinstance(run.get(k), t):
                p.append(f"run.{k} missing or not {t.__name__}")
    recs = doc.get("records")
    if not isinstance(recs, list):
        return p + ["records missing"]
    seen = set()
    for i, r in enumerate(recs):
        if not isinstance(r, dict):
            p.append(f"records[{i}] is not an object")
            continue
        for k, t in _REC_TYPES.items():
            v = r.get(k)
            if k not in r or isinstance(v, bool) and bool not in t or not isinstance(v, t):
                p.append(f"records[{i}].{k} missing or of type {type(v).__name__}")
        for k, allowed in (("kind", KINDS), ("status", STATUSES),
                           ("energy_method", ENERGY_METHODS),
                           ("direction", ("encrypt", "decrypt"))):
            if r.get(k) not in allowed:
                p.append(f"records[{i}].{k} = {r.get(k)!r} not in {allowed}")
        ver = r.get("verification") or {}
        if ver.get("status") not in VERIFICATION:
            p.append(f"records[{i}].verification.status = {ver.get('status')!r}")
        if r.get("status") == "ok":
            if not r.get("times_s") or not isinstance(r.get("median_s"), _NUM):
                p.append(f"records[{i}] is ok but has no timings")
            if ver.get("status") == "failed":
                p.append(f"records[{i}] is ok but failed verification")
        elif r.get("times_s") or r.get("median_s") is not None:
            p.append(f"records[{i}] is {r.get('status')} but carries timings")
        key = (r.get("cipher"), r.get("direction"), r.get("device"), r.get("size"), r.get("kind"),
               r.get("implementation"), r.get("messages"))   # (1 x 4 MiB, 256 x 16 KiB: two rows)
        if key in seen:
            p.append(f"records[{i}] duplicates {key}")
        seen.add(key)
    return p
