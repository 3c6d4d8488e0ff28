"""Energy over a timed window: NVML for NVIDIA GPUs, RAPL for the CPU packages, else "unavailable".

Nothing is ever estimated silently: a meter that cannot read says so (method "unavailable" and a
note), and the record's energy fields stay null.

    meter = meter_for(device_info)        # or rapl_meter() for OpenSSL rows
    meter.start(); ...timed work...; reading = meter.stop()

MB/J is then throughput (MB/s) / average power (W) over the window (Barenghi et al., Table 4).
"""

from __future__ import annotations

import glob
import os
import threading
import time
from dataclasses import dataclass

#: a window shorter than this is not trusted for counters that update every few ms
MIN_WINDOW_S = 0.05
#: power sampling period for GPUs without a total-energy counter
SAMPLE_PERIOD_S = 0.01

RAPL_ROOT = "/sys/class/powercap"


@dataclass
class Reading:
    method: str                     # "nvml-counter" | "nvml-sampled" | "rapl" | "unavailable"
    scope: str | None               # "gpu-board" | "cpu-packages" | None
    joules: float | None
    window_s: float | None
    note: str | None = None

    @property
    def avg_power_w(self) -> float | None:
        if self.joules is None or not self.window_s:
            return None
        return self.joules / self.window_s


class Meter:
    """No energy reading: every window is 'unavailable' with the reason in the note."""

    method = "unavailable"
    scope: str | None = None

    def __init__(self, note: str = "no energy counter for this device"):
        self.note = note
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> Reading:
        return Reading("unavailable", None, None, time.perf_counter() - self._t0, self.note)

    def _short(self, joules: float | None, window: float) -> Reading:
        if joules is None:
            return Reading("unavailable", None, None, window, self.note)
        if window < MIN_WINDOW_S:
            return Reading(self.method, self.scope, None, window,
                           f"window {window * 1e3:.1f} ms shorter than {MIN_WINDOW_S * 1e3:.0f} ms: "
                           "not measured")
        if joules <= 0:
            return Reading(self.method, self.scope, None, window, "counter did not advance")
        return Reading(self.method, self.scope, joules, window, self.note)


# ------------------------------------------------------------------------- RAPL
def rapl_zones(root: str = RAPL_ROOT) -> list[str]:
    """Top-level RAPL package zones (intel-rapl:N, not the sub-zones intel-rapl:N:M)."""
    zones = []
    for z in sorted(glob.glob(os.path.join(root, "intel-rapl:*"))):
        if os.path.basename(z).count(":") == 1:
            zones.append(z)
    return zones


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


class RaplMeter(Meter):
    method = "rapl"
    scope = "cpu-packages"

    def __init__(self, zones: list[str]):
        super().__init__(note=None)
        self.zones = zones
        self._e0: list[int | None] = []

    def _read(self) -> list[int | None]:
        return [_read_int(os.path.join(z, "energy_uj")) for z in self.zones]

    def start(self) -> None:
        self._e0 = self._read()
        self._t0 = time.perf_counter()

    def stop(self) -> Reading:
        window = time.perf_counter() - self._t0
        e1 = self._read()
        total = 0
        for z, a, b in zip(self.zones, self._e0, e1):
            if a is None or b is None:
                self.note = f"{z}/energy_uj became unreadable"
                return self._short(None, window)
            if b < a:  # the counter wrapped
                b += _read_int(os.path.join(z, "max_energy_range_uj")) or 0
            total += b - a
        return self._short(total / 1e6, window)


def rapl_meter(root: str = RAPL_ROOT) -> Meter:
    zones = [z for z in rapl_zones(root) if _read_int(os.path.join(z, "energy_uj")) is not None]
    if not zones:
        why = ("RAPL energy_uj not readable (needs root on Linux >= 5.10)"
               if rapl_zones(root) else "no RAPL powercap interface")
        return Meter(note=why)
    return RaplMeter(zones)


def rapl_status(root: str = RAPL_ROOT) -> str:
    m = rapl_meter(root)
    return "readable" if isinstance(m, RaplMeter) else f"unavailable: {m.note}"


# ------------------------------------------------------------------------- NVML
_nvml = None
_nvml_error: str | None = None
_nvml_lock = threading.Lock()


def nvml():
    """The initialised pynvml module, or None (reason in :data:`_nvml_error`)."""
    global _nvml, _nvml_error
    with _nvml_lock:
        if _nvml is None and _nvml_error is None:
            try:
                import pynvml  # package nvidia-ml-py

                pynvml.nvmlInit()
                _nvml = pynvml
            except Exception as e:  # ImportError, NVMLError (no driver), OSError (no libnvidia-ml)
                _nvml_error = f"NVML unavailable: {type(e).__name__}: {e}"
        return _nvml


def nvml_handle(dev):
    """NVML handle of a DeviceInfo that is an NVIDIA GPU, or None.

    Matching, most reliable first: a PCI bus id in dev.extra ("pci_bus_id"); an explicit
    dev.extra["nvml_index"]; the only NVIDIA GPU present; the device index of the spec
    ("cuda:N" -> N, "opencl:P:D" -> D), which assumes CUDA_DEVICE_ORDER=PCI_BUS_ID.
    """
    if getattr(dev, "kind", None) != "gpu" or "nvidia" not in str(getattr(dev, "vendor", "")).lower():
        return None
    nv = nvml()
    if nv is None:
        return None
    extra = getattr(dev, "extra", None) or {}
    try:
        if extra.get("pci_bus_id"):
            return nv.nvmlDeviceGetHandleByPciBusId(str(extra["pci_bus_id"]))
        if extra.get("nvml_index") is not None:
            return nv.nvmlDeviceGetHandleByIndex(int(extra["nvml_index"]))
        if nv.nvmlDeviceGetCount() == 1:
            return nv.nvmlDeviceGetHandleByIndex(0)
        idx = int(str(dev.spec).rsplit(":", 1)[-1])
        return nv.nvmlDeviceGetHandleByIndex(idx)
    except Exception:
        return None


class NvmlCounterMeter(Meter):
    """nvmlDeviceGetTotalEnergyConsumption (mJ since driver load) before and after (Volta+)."""

    method = "nvml-counter"
    scope = "gpu-board"

    def __init__(self, nv, handle):
        super().__init__(note=None)
        self.nv, self.handle = nv, handle
        self._e0 = 0

    def start(self) -> None:
        self._e0 = self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        self._t0 = time.perf_counter()

    def stop(self) -> Reading:
        window = time.perf_counter() - self._t0
        try:
            e1 = self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as e:
            self.note = f"NVML energy read failed: {e}"
            return self._short(None, window)
        return self._short((e1 - self._e0) / 1e3, window)


class NvmlSampledMeter(Meter):
    """Integrates nvmlDeviceGetPowerUsage (mW) sampled every SAMPLE_PERIOD_S in a thread."""

    method = "nvml-sampled"
    scope = "gpu-board"

    def __init__(self, nv, handle):
        super().__init__(note=f"power sampled every {SAMPLE_PERIOD_S * 1e3:.0f} ms and integrated")
        self.nv, self.handle = nv, handle
        self._stop = threading.Event()
        self._samples: list[tuple[float, float]] = []
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while True:
            try:
                self._samples.append((time.perf_counter(),
                                      self.nv.nvmlDeviceGetPowerUsage(self.handle) / 1e3))
            except Exception:
                pass
            if self._stop.wait(SAMPLE_PERIOD_S):
                break

    def start(self) -> None:
        self._samples, self._stop = [], threading.Event()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> Reading:
        window = time.perf_counter() - self._t0
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        s = self._samples
        if len(s) < 2:
            self.note = "too few power samples"
            return self._short(None, window)
        joules = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(s, s[1:]))
        # scale the integral over the sampled span to the whole window
        span = s[-1][0] - s[0][0]
        if span > 0:
            joules *= window / span
        return self._short(joules, window)


def nvml_meter(dev) -> Meter:
    handle = nvml_handle(dev)
    if handle is None:
        return Meter(note=_nvml_error or "no NVML handle for this device")
    nv = _nvml
    try:
        nv.nvmlDeviceGetTotalEnergyConsumption(handle)
        return NvmlCounterMeter(nv, handle)
    except Exception:
        pass
    try:
        nv.nvmlDeviceGetPowerUsage(handle)
        return NvmlSampledMeter(nv, handle)
    except Exception as e:
        return Meter(note=f"NVML reads no energy or power for this GPU: {e}")


def meter_for(dev) -> Meter:
    """The meter for a DeviceInfo: NVML for NVIDIA GPUs, RAPL for CPU devices, else none."""
    kind = getattr(dev, "kind", None)
    if kind == "gpu":
        if "nvidia" in str(getattr(dev, "vendor", "")).lower():
            return nvml_meter(dev)
        return Meter(note=f"no energy counter read for {getattr(dev, 'vendor', '?')} GPUs")
    if kind == "cpu":
        return rapl_meter()
    return Meter()
