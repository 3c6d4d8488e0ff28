"""The benchmark's hooks into a device engine: a mode kernel alone, timed by device events.

``engine(spec)`` is what the benchmark's ``Api.get_engine`` gives: the engine of ``spec``
(``route.engine``) with these hooks beside it (``KernelEngine``): ``time_kernel`` (device-resident
seconds per launch), ``kernel_runner`` (one launch over the caller's device buffers),
``kernel_resources`` (registers, local memory, occupancy of a kernel) and ``sm_clock_mhz`` (an
NVIDIA GPU's clock through NVML).  Every other attribute is the engine's own.
"""

from __future__ import annotations

import numpy as np

from ..program import KeyedProgram, build_copy_program, build_program

U64 = np.uint64


def engine(spec: str):
    """The engine of device spec ``spec`` with the benchmark's hooks (``KernelEngine``)."""
    from ..route import engine as _engine

    return KernelEngine(_engine(spec))


class KernelEngine:
    """A device engine (``engines.device.DeviceEngine``; the OpenSSL engine has no kernels) and
    the benchmark's hooks on it; attributes it does not define are the engine's."""

    def __init__(self, eng):
        self.engine = eng

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def __repr__(self) -> str:
        return f"KernelEngine({self.engine!r})"

    def time_kernel(self, name: str, nbytes: int, *, repeats: int, encrypt: bool = True,
                    impl: str | None = None, sector_size: int | None = None) -> list[float]:
        """Device-resident seconds for ``repeats`` runs over ``nbytes`` of random data.

        XTS over more than 16 MiB needs ``sector_size`` (IEEE 1619 caps a data unit at 2^20 blocks).
        """
        b = self.engine.backend
        nbytes = max(16, nbytes // 16 * 16)
        host = np.random.default_rng().integers(0, 256, nbytes, dtype=np.uint8)
        src, dst = b.alloc(nbytes), b.alloc(nbytes)
        b.wait(b.upload(src, host))
        run = self.kernel_runner(name, src, dst, encrypt=encrypt, impl=impl, sector_size=sector_size)
        try:
            run()
            b.finish()
            times = []
            for _ in range(repeats):
                start = b.marker()
                run()
                end = b.marker()
                b.finish()
                times.append(b.elapsed(start, end))
            return times
        finally:
            run.close()

    def kernel_runner(self, name: str, src, dst, *, encrypt: bool = True, impl: str | None = None,
                      sector_size: int | None = None) -> "KernelRunner":
        """One launch of ``name``'s mode kernel over the device buffers ``src`` -> ``dst`` (of
        equal size, whole blocks), the keys (random) uploaded once: the kernel alone, as the
        benchmarks time it (``name`` "copy": the copy kernel).  A serial mode runs in its parallel
        direction.  Call it to enqueue one launch on the default queue; ``close()`` wipes the keys."""
        return KernelRunner(self.engine.backend, name, src, dst, encrypt, impl, sector_size)

    def kernel_resources(self, name: str, *, encrypt: bool = True, impl: str | None = None) -> dict:
        """What the kernel of ``name`` (``"copy"``: the copy kernel) takes of the device:
        registers, local and private memory, work-group size, occupancy, SMs."""
        from ..registry import lookup

        b, info = self.engine.backend, self.engine.info
        if name == "copy":
            res = b.kernel_resources(build_copy_program(b), "cg_copy")
        else:
            spec = lookup(name)
            kern = spec.mode.kernel(encrypt and spec.mode.parallel(True))
            res = b.kernel_resources(build_program(b, spec, impl), kern)
        res.setdefault("sm_count", info.compute_units)
        res.setdefault("occupancy", None)
        res.setdefault("max_threads_per_sm", info.extra.get("max_threads_per_sm"))
        return res

    def sm_clock_mhz(self) -> float | None:
        return sm_clock_mhz(self.engine.info)


def sm_clock_mhz(info) -> float | None:
    """Current SM clock of an NVIDIA GPU through NVML (None when not readable)."""
    if info.kind != "gpu" or "nvidia" not in (info.vendor + info.platform + info.name).lower():
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        idx = int(info.spec.split(":")[-1]) if info.runtime == "cuda" else 0
        h = pynvml.nvmlDeviceGetHandleByIndex(idx)
        return float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


class KernelRunner:
    """See :meth:`KernelEngine.kernel_runner`."""

    def __init__(self, b, name, src, dst, encrypt, impl, sector_size):
        from ..registry import lookup
        from ..request import make_request
        from ..testing.oracle import random_inputs

        self.b, self.src, self.dst, self.kp = b, src, dst, None
        nbytes = int(getattr(src, "nbytes", None) or src.size)   # (a CuPy array, an OpenCL buffer)
        if name == "copy":
            self.prg = build_copy_program(b)
            self.nblocks = nbytes // 16
            return
        spec = lookup(name)
        mode = spec.mode
        key, iv, opts = random_inputs(spec, np.random.default_rng().bytes, sector_size)
        sector = opts.get("sector_size")
        enc = encrypt and mode.parallel(True)  # (a serial mode is timed in its parallel direction)
        req = make_request(spec, key, iv, enc, impl=impl, sector_size=sector)
        req.check_length(nbytes)
        self.kp = KeyedProgram(b, req)
        self.layout = mode.layout(req, nbytes)
        self.nblocks = self.layout.kernel_blocks if self.layout is not None else nbytes // spec.block_size
        self.scratch = b.alloc(self.layout.scratch_bytes(self.nblocks)) if self.layout is not None else None
        self.chain = mode.chain_at(req, None, 0)

    def __call__(self):
        if self.kp is None:
            return self.b.launch(self.prg, "cg_copy", self.nblocks, [self.src, self.dst, U64(self.nblocks)])
        return self.kp.enqueue(self.src, self.dst, self.nblocks, 0, chain=self.chain,
                               layout=self.layout, scratch=self.scratch)

    def close(self) -> None:
        if self.kp is not None:
            self.kp.close()
