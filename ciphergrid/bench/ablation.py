"""``ciphergrid bench ablation``: the practice ablation of seed 000's Table 2, for GPU AES.

Each implementation of the cipher's ``implementations`` (ciphers/aes.py) adds one optimisation to
the previous one: baseline, byte permutes, replicated tables, keys in registers, persistent grid,
multiply-add table index, high-multiply top byte; then alternatives that did not pay (two tables,
two blocks per work-item), the default ("fast"), CTR's steps on top of it (counter sub-tiles that
share rounds 1 and 2, then the last round by byte permutes, and their alternatives: the "ctr" names
of kernels/aes.cl's AES_CTR_SLOTS) and the bitsliced constant-time kernels, again one step at a time
("ct-c", then "ct" with the S-box spelled out in PTX: kernels/aes_bs.cl).  For each,
on every GPU device: the output is checked against the oracle first (``ciphergrid.testing.oracle``:
pyca/cryptography; only correct code is timed), then the device-resident time of the cipher over
``--ablation-size`` bytes (median of repeats, device events), GB/s per SM per GHz, registers per
work-item, shared and spilled memory, occupancy, area and area-time product.
"""

from __future__ import annotations

import numpy as np

from .. import registry
from ..settings import bytes_option
from ..testing import oracle
from . import suites
from .preflight import opt, size_text
from .records import Record


def add_arguments(p) -> None:
    p.add_argument("--ablation-cipher", default="aes-128-ctr", help="cipher of the ablation")
    p.add_argument("--ablation-size", type=bytes_option("--ablation-size"),
                   default=256 << 20, metavar="BYTES", help="bytes per run (default 256Mi)")
    p.add_argument("--ablation-impls", nargs="*", help="implementations (default: all)")


def _correct(api, name: str, dev: str, impl: str) -> str | None:
    """None when the implementation gives the oracle's bytes (``ciphergrid.testing.oracle``:
    pyca/cryptography, i.e. OpenSSL), else what went wrong."""
    spec = registry.lookup(name)
    source = oracle.source(spec)
    rng = np.random.default_rng()
    for n in (16, 48 * 16 + 5, 1 << 20):
        n = n // 16 * 16 if spec.mode.whole_blocks else n
        key = bytes(rng.integers(0, 256, spec.key_len, dtype=np.uint8))
        if spec.mode.key_count == 2:
            key = key[: spec.key_size] + bytes(b ^ 1 for b in key[: spec.key_size])
        iv = bytes(rng.integers(0, 256, spec.iv_len, dtype=np.uint8)) if spec.iv_len else None
        data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
        ref_ct = oracle.crypt(spec, key, iv, data, True)
        if spec.mode.parallel(True):
            got = api.encrypt(data, name, key, iv, device=dev, implementation=impl)
            if got != ref_ct:
                return f"encryption of {n} bytes differs from {source}"
        got = api.decrypt(ref_ct, name, key, iv, device=dev, implementation=impl)
        if got != data:
            return f"decryption of {n} bytes differs from {source}"
    return None


def measure(api, eng, dev, name: str, impl: str, size: int, repeats: int, log) -> Record:
    """One implementation of cipher ``name`` on device ``dev`` (engine ``eng``): checked against
    the oracle, then timed device-resident over ``size`` bytes; its resources and area-time
    product.  A wrong or failing implementation gives a failed row (``log`` says why)."""
    spec = registry.lookup(name)
    rec = Record(cipher=name, algorithm=spec.algorithm.name, key_bits=8 * spec.key_size,
                 mode=spec.mode.name, direction="encrypt", device=dev.spec,
                 device_name=dev.name, device_kind=dev.kind, runtime=dev.runtime,
                 kind="kernel", size=size, implementation=impl,
                 verification={"status": "not-run"})
    problem = _correct(api, name, dev.spec, impl)
    if problem:
        log(f"FAILED ablation {impl} on {dev.spec}: {problem}")
        return rec.fail(problem)
    rec.verification = {"status": "passed", "oracle": oracle.source(spec)}
    try:
        times = eng.time_kernel(name, size, repeats=repeats, impl=impl,
                                sector_size=4096 if "sector_size" in spec.mode.options else None)
    except Exception as e:  # one implementation failing must not end the run
        rec.status, rec.error = "failed", f"{type(e).__name__}: {e}"[:300]
        log(f"FAILED ablation {impl} on {dev.spec}: {rec.error}")
        return rec
    clk = eng.sm_clock_mhz()
    rec.timer, rec.sm_count = "device-events", dev.compute_units
    if clk:
        rec.sm_clock_mhz, rec.clock_source = clk, "measured"
    elif dev.clock_mhz:
        rec.sm_clock_mhz, rec.clock_source = float(dev.clock_mhz), "nominal"
    res = eng.kernel_resources(name, impl=impl)
    res["implementation"] = impl
    rec.set_resources(res)
    rec.set_times(times)
    return rec


def run(args, ctx: suites.Context) -> dict:
    from . import sysinfo

    name = args.ablation_cipher
    spec = registry.lookup(name)
    impls = args.ablation_impls or list(spec.algorithm.implementations)
    devs = _devices(ctx.api, args.device)
    if not devs:
        from ..errors import DeviceNotFound

        raise DeviceNotFound("bench ablation times kernels on OpenCL or CUDA devices: none "
                             + ("among --device" if args.device else "present"))
    size = args.ablation_size
    repeats = args.repeats or (3 if args.quick else 15)
    if args.quick:
        size = min(size, 1 << 20)
    rows = []
    with ctx.progress(len(devs) * len(impls)) as bar:
        for dev in devs:
            eng = ctx.api.get_engine(dev.spec)
            for impl in impls:
                rec = measure(ctx.api, eng, dev, name, impl, size, repeats, ctx.log)
                rows.append(rec)
                ctx.add(rec)
                bar.advance(1)
    _print_table(rows)
    return {"devices": [sysinfo.device_info(d) for d in devs],
            "options": {"cipher": name, "size": size, "implementations": impls}}


def _print_table(rows) -> None:
    print(f"{'device':<11} {'implementation':<22} {'GB/s':>7} {'GB/s/SM/GHz':>11} {'regs':>5} "
          f"{'smem':>6} {'spill':>5} {'occ':>5} {'A*T':>8}")
    for r in rows:
        res = r.resources or {}
        impl = r.implementation
        if r.status != "ok":
            print(f"{r.device:<11} {impl:<22} {'FAILED':>7}  {r.error}")
            continue
        occ = res.get("occupancy")
        print(f"{r.device:<11} {impl:<22} {r.gbps:7.1f} {opt(r.gbps_per_sm_ghz):>11} "
              f"{res.get('registers_per_item') or '-':>5} {res.get('local_mem_bytes') or 0:>6} "
              f"{res.get('private_mem_bytes') or 0:>5} {opt(occ, '{}'):>5} "
              f"{opt(r.area_time):>8}")


def _devices(api, device_args) -> list:
    devs = [d for d in api.devices() if d.runtime in ("opencl", "cuda")]
    if device_args:
        wanted = set(sum((d.split(",") for d in device_args), []))
        devs = [d for d in devs if d.spec in wanted]
    return devs


def estimate(args, rate: float, api) -> tuple[str, float]:
    """Each implementation checked, then timed ``repeats`` times over the size, on each device;
    an OpenCL CPU device's kernels taken as ``CPU_SLOWDOWN`` times one core's pyca rate, a GPU's
    as ``GPU_SPEEDUP`` times it, each implementation's build ``BUILD_S``."""
    impls = args.ablation_impls or list(registry.lookup(args.ablation_cipher).algorithm.implementations)
    devs = _devices(api, args.device)
    size = min(args.ablation_size, 1 << 20) if args.quick else args.ablation_size
    repeats = args.repeats or (3 if args.quick else 15)
    seconds = sum(len(impls) * (BUILD_S + (repeats + 2) * size
                                / (rate * (GPU_SPEEDUP if d.kind == "gpu" else 1 / CPU_SLOWDOWN)))
                  for d in devs)
    return (f"{len(impls)} implementations x {len(devs)} device(s) x {repeats} repeats of "
            f"{size_text(size)}", seconds)


#: the estimate's rates against one core's pyca AES-128-CTR, and each build's seconds
CPU_SLOWDOWN, GPU_SPEEDUP, BUILD_S = 5.0, 20.0, 2.0

suites.register("ablation", run, help="the practice ablation of the AES kernels (seed 000 Table 2)",
                add_arguments=add_arguments, estimate=estimate)
