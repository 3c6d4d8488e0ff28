"""Engines: run a validated mode (modes.Params) over host data on one device.

``DeviceEngine`` drives the generic kernels through a backend (OpenCL or CUDA);
``NativeEngine`` runs OpenSSL on the host's cores.  Both take and return numpy uint8 arrays.
``KeyedProgram`` holds one key schedule on one device and enqueues the mode kernel for any range
of blocks of a message: the pipeline builds on it.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import devices as _devices
from . import modes
from .backends.base import defines_prefix, program_source
from .errors import DeviceError, InvalidArgument
from .registry import lookup

U64 = np.uint64
U32 = np.uint32
_MASK64 = (1 << 64) - 1


def cipher_program_source(spec, impl: str | None = None, extra: dict | None = None) -> str:
    """The source of the mode kernels for a cipher, key size and implementation (``extra``:
    more defines, for the development scripts)."""
    cipher = spec.cipher
    im = cipher.implementation(impl)
    defines = {**cipher.defines(spec.key_size), **im.get("defines", {}), "CG_BATCH": im.get("batch", 1)}
    if im.get("max_registers"):
        defines["CG_MAX_REGS"] = im["max_registers"]
    if im.get("local_size"):
        defines["CG_LOCAL_SIZE"] = im["local_size"]  # launches use exactly this (KeyedProgram)
    defines.update(extra or {})
    return defines_prefix(defines) + program_source(im["file"], "modes.cl")


def build_cipher_program(backend, spec, impl: str | None = None):
    """Compile (once) the mode kernels for a cipher, key size and implementation."""
    im = spec.cipher.implementation(impl)
    return backend.build(cipher_program_source(spec, impl),
                         key=("modes", spec.cipher.name, spec.key_size, impl or "fast"),
                         local_size=im.get("local_size"), max_registers=im.get("max_registers"))


def launch_items(backend, program, name: str, nblocks: int, im: dict) -> int:
    """Work-items for a launch over ``nblocks``: one per batch of blocks, capped at what the device
    holds at once when the implementation uses a persistent grid."""
    items = -(-nblocks // im.get("batch", 1))
    if im.get("grid", "persistent") == "persistent":
        items = min(items, backend.resident_items(program, name))
    return items


def build_copy_program(backend):
    return backend.build(program_source(None, "copy.cl"), key=("copy",))


_apow_lock = threading.Lock()


def _apow_buffer(backend):
    with _apow_lock:
        buf = getattr(backend, "_cg_apow", None)
        if buf is None:
            table = np.frombuffer(modes.alpha_pow128_table(), dtype=np.uint8)
            buf = backend.alloc(table.nbytes)
            backend.wait(backend.upload(buf, table))
            backend._cg_apow = buf
        return buf


class KeyedProgram:
    """One key schedule of one cipher·mode on one device."""

    def __init__(self, backend, p: modes.Params):
        self.b = backend
        self.p = p
        spec = p.spec
        self.bs = spec.block_size
        self.impl = spec.cipher.implementation(p.impl)
        self.prg = build_cipher_program(backend, spec, p.impl)
        if self.impl.get("local_size") and backend.group_size(self.prg) != self.impl["local_size"]:
            # the kernels may rely on it (aes_bs.cl's counter tiles)
            raise DeviceError(f"{spec.cipher.name} implementation {p.impl or 'fast'!r} needs work-groups of "
                              f"{self.impl['local_size']} work-items; {backend.info} allows "
                              f"{backend.group_size(self.prg)}")
        ks = spec.key_size
        decrypt_sched = not p.encrypt and spec.mode != "ctr"
        self._bufs = []
        kl = {"layout": self.impl["key_layout"]} if self.impl.get("key_layout") else {}
        self.rk = self._upload_key(spec.cipher.expand(p.key[:ks], decrypt_sched, **kl))
        self.rk2 = None
        if spec.mode == "xts":
            self.rk2 = self._upload_key(spec.cipher.expand(p.key[ks:], False, **kl))
            self.apow = _apow_buffer(backend)
        self.kernel = {
            "ecb": "cg_ecb_enc" if p.encrypt else "cg_ecb_dec",
            "ctr": "cg_ctr",
            "cbc": "cg_cbc_dec",
            "xts": "cg_xts_enc" if p.encrypt else "cg_xts_dec",
        }[spec.mode]
        if spec.mode == "cbc" and p.encrypt:
            raise DeviceError("CBC encryption is serial: it runs on the native engine")

    def _upload_key(self, words: np.ndarray):
        host = words.view(np.uint8)
        buf = self.b.alloc(host.nbytes)
        self.b.wait(self.b.upload(buf, host))
        words.fill(0)
        self._bufs.append(buf)
        return buf

    def close(self) -> None:
        """Wipe the round keys on the device."""
        for buf in self._bufs:
            try:
                self.b.zero(buf)
            except Exception:
                pass
        self._bufs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- XTS helpers ---------------------------------------------------------------------------
    def xts_segments(self, lay: modes.XtsLayout, first_block: int, nblocks: int) -> tuple[int, int]:
        """(first segment, number of segments) that blocks [first_block, +nblocks) touch."""
        def seg(b):
            u, j = divmod(b, lay.bpu)
            return u * lay.spu + j // modes.XTS_SEGMENT_BLOCKS
        first = seg(first_block)
        return first, seg(first_block + nblocks - 1) - first + 1

    def enqueue(self, in_buf, out_buf, nblocks: int, first_block: int, queue=None, *,
                chain: bytes | None = None, layout: modes.XtsLayout | None = None,
                scratch=None, wait_for=None):
        """Enqueue the mode kernel on blocks [first_block, first_block + nblocks) of the message.

        ``in_buf``/``out_buf`` hold exactly those blocks.  CBC needs ``chain`` (the ciphertext
        block before first_block, or the IV); XTS needs ``layout`` and a ``scratch`` buffer of at
        least ``16 * segments`` bytes (allocated when None).
        """
        b, p, mode = self.b, self.p, self.p.spec.mode
        n = U64(nblocks)
        if mode == "ecb":
            args = [in_buf, out_buf, self.rk, n]
        elif mode == "ctr":
            c = modes.ctr_at(p.iv, first_block)
            if self.bs == 16:
                args = [in_buf, out_buf, self.rk, U64(c >> 64), U64(c & _MASK64), n]
            else:
                args = [in_buf, out_buf, self.rk, U64(0), U64(c), n]
        elif mode == "cbc":
            w = np.frombuffer(chain.ljust(16, b"\0"), dtype="<u4")
            args = [in_buf, out_buf, self.rk, U32(w[0]), U32(w[1]), U32(w[2]), U32(w[3]), n]
        else:  # xts
            first_seg, nseg = self.xts_segments(layout, first_block, nblocks)
            if scratch is None:
                scratch = b.alloc(16 * nseg)
            iv = int.from_bytes(p.xts_iv, "little")
            ev = b.launch(self.prg, "cg_xts_seg", launch_items(b, self.prg, "cg_xts_seg", nseg, self.impl),
                          [scratch, self.rk2, self.apow, U64(first_seg), U64(nseg), U64(layout.spu),
                           U64(iv & _MASK64), U64(iv >> 64)], queue, wait_for=wait_for)
            wait_for = [ev] if b.info.runtime == "opencl" else None
            bpu = layout.bpu
            log2 = bpu.bit_length() - 1 if bpu & (bpu - 1) == 0 else 64
            args = [in_buf, out_buf, self.rk, scratch, U64(first_block), U64(first_seg), n,
                    U64(bpu), U64(layout.spu), U32(log2)]
        items = launch_items(b, self.prg, self.kernel, nblocks, self.impl)
        return b.launch(self.prg, self.kernel, items, args, queue, wait_for=wait_for)


class DeviceEngine:
    """Runs modes on one OpenCL or CUDA device."""

    #: pipeline chunk size and depth; None: the device's tuned settings (ciphergrid.tuning:
    #: CIPHERGRID_CHUNK_SIZE / CIPHERGRID_DEPTH, the tuning cache, defaults)
    chunk_bytes: int | None = None
    depth: int | None = None

    def __init__(self, info):
        self.device = info
        self.backend = _devices.backend(info)

    # -- host data in, host data out --------------------------------------------------------------
    def crypt(self, p: modes.Params, data: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``data`` through the mode into a new array, or into ``out`` (same size; may be
        ``data`` itself for in-place operation, but must not otherwise overlap it)."""
        spec = p.spec
        n = data.nbytes
        if out is None:
            out = np.empty(n, dtype=np.uint8)
        elif out.nbytes != n or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise InvalidArgument(f"out must be a contiguous uint8 array of {n} bytes")
        elif (np.may_share_memory(out, data)
              and (out.ctypes.data != data.ctypes.data or data.dtype != np.uint8)):
            raise InvalidArgument("out overlaps the input without being the input itself")
        if (spec.mode == "cbc" and p.encrypt) or not modes.device_can_run(p, n):
            return NativeEngine().crypt(p, data, out)
        if n == 0:
            return out
        layout = modes.xts_layout(p, n) if spec.mode == "xts" else None
        tail = None
        if layout is not None and layout.tail_unit >= 0:  # read before an in-place run
            tail = data[layout.tail_start:].tobytes()
        with KeyedProgram(self.backend, p) as kp:
            self._run(kp, data, out, layout)
        if tail is not None:
            s = layout.tail_start
            out[s:] = np.frombuffer(modes.xts_tail(p, layout, tail), dtype=np.uint8)
        return out

    def _run(self, kp: KeyedProgram, data, out, layout) -> None:
        """Overlapped chunks: H2D, kernel and D2H on three queues (ciphergrid.pipeline)."""
        from .pipeline import run_chunks

        run_chunks(kp, data.reshape(-1).view(np.uint8), out, layout, chunk_bytes=self.chunk_bytes,
                   depth=self.depth)

    # -- GPU-resident data (CUDA backend): no host copies of the bulk data ---------------------------
    def crypt_resident(self, p: modes.Params, src, dst) -> None:
        """``src`` through the mode into ``dst``: contiguous CuPy uint8 arrays on this device of
        the same size (``dst`` may be ``src``).  Only the < 32-byte tails of CTR and XTS stealing
        pass through small temporary buffers."""
        import cupy

        b = self.backend
        if self.device.runtime != "cuda":
            raise DeviceError("GPU-resident arrays need a CUDA device")
        n = src.nbytes
        if n == 0:
            return
        spec, bs = p.spec, p.spec.block_size
        if (spec.mode == "cbc" and p.encrypt) or not modes.device_can_run(p, n):
            # serial (CBC encryption) or per-unit stealing: OpenSSL on the host
            host = NativeEngine().crypt(p, cupy.asnumpy(src))
            dst.set(host)
            return
        with b.dev:
            cupy.cuda.Device().synchronize()  # the producer may have used another stream
            if src.data.ptr % 16 or (spec.mode == "cbc" and dst.data.ptr == src.data.ptr):
                src = src.copy()  # unaligned view, or in-place CBC (block i reads block i-1)
            out = dst if dst.data.ptr % 16 == 0 else cupy.empty_like(dst)
            layout = modes.xts_layout(p, n) if spec.mode == "xts" else None
            tail = None
            if layout is not None and layout.tail_unit >= 0:
                tail = cupy.asnumpy(src[layout.tail_start:]).tobytes()
            with KeyedProgram(b, p) as kp:
                if layout is not None:
                    if layout.kernel_blocks:
                        kp.enqueue(src, out, layout.kernel_blocks, 0, layout=layout)
                else:
                    full = n // bs
                    if full:
                        kp.enqueue(src, out, full, 0, chain=p.iv)
                    if n % bs:  # CTR: the last partial block through a one-block buffer
                        t_in = cupy.zeros(16, dtype=cupy.uint8)
                        t_in[: n - full * bs] = src[full * bs:]
                        t_out = cupy.empty(16, dtype=cupy.uint8)
                        kp.enqueue(t_in, t_out, 1, full)
                        b.finish()
                        out[full * bs:] = t_out[: n - full * bs]
                b.finish()
            if tail is not None:
                s = layout.tail_start
                out[s:] = cupy.asarray(np.frombuffer(modes.xts_tail(p, layout, tail), dtype=np.uint8))
            if out is not dst:
                dst[...] = out
            cupy.cuda.Device().synchronize()

    # -- benchmarking hooks ------------------------------------------------------------------------
    def time_kernel(self, name: str, nbytes: int, *, repeats: int, encrypt: bool = True,
                    impl: str | None = None, sector_size: int | None = None) -> list[float]:
        """Device-resident seconds for ``repeats`` runs over ``nbytes`` of random data.

        XTS over more than 16 MiB needs ``sector_size`` (IEEE 1619 caps a data unit at 2^20 blocks).
        """
        b = self.backend
        nbytes = max(16, nbytes // 16 * 16)
        rng = np.random.default_rng()
        host = rng.integers(0, 256, nbytes, dtype=np.uint8)
        src, dst = b.alloc(nbytes), b.alloc(nbytes)
        b.wait(b.upload(src, host))
        nblocks = nbytes // 16
        if name == "copy":
            prg = build_copy_program(b)

            def run():
                return b.launch(prg, "cg_copy", nblocks, [src, dst, U64(nblocks)])
            kp = None
        else:
            spec = lookup(name)
            key = bytes(rng.integers(0, 256, spec.key_len, dtype=np.uint8))
            iv = bytes(rng.integers(0, 256, spec.iv_len, dtype=np.uint8)) if spec.iv_len else None
            if spec.mode == "xts":
                key = key[: spec.key_size] + bytes(x ^ 0x5A for x in key[: spec.key_size])
            enc = encrypt and not (spec.mode == "cbc")
            if spec.mode == "xts" and sector_size:
                iv = None
            p = modes.check(spec, key, iv, enc, impl=impl,
                            sector_size=sector_size if spec.mode == "xts" else None)
            modes.check_length(p, nbytes)
            kp = KeyedProgram(b, p)
            nblocks = nbytes // spec.block_size
            layout = modes.xts_layout(p, nbytes) if spec.mode == "xts" else None
            scratch = None
            if layout is not None:
                scratch = b.alloc(16 * kp.xts_segments(layout, 0, layout.kernel_blocks)[1])
                nblocks = layout.kernel_blocks

            def run():
                return kp.enqueue(src, dst, nblocks, 0, chain=iv, layout=layout, scratch=scratch)
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
            if kp is not None:
                kp.close()

    def kernel_resources(self, name: str, *, encrypt: bool = True, impl: str | None = None) -> dict:
        b = self.backend
        if name == "copy":
            res = b.kernel_resources(build_copy_program(b), "cg_copy")
        else:
            spec = lookup(name)
            kern = {"ecb": "cg_ecb_enc" if encrypt else "cg_ecb_dec", "ctr": "cg_ctr",
                    "cbc": "cg_cbc_dec", "xts": "cg_xts_enc" if encrypt else "cg_xts_dec"}[spec.mode]
            res = b.kernel_resources(build_cipher_program(b, spec, impl), kern)
        res.setdefault("sm_count", self.device.compute_units)
        res.setdefault("occupancy", None)
        res.setdefault("max_threads_per_sm", self.device.extra.get("max_threads_per_sm"))
        return res

    def sm_clock_mhz(self) -> float | None:
        return sm_clock_mhz(self.device)


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


class NativeEngine:
    """OpenSSL on every core of the host."""

    def __init__(self, info=None):
        self.device = info or _devices.resolve("native")

    def crypt(self, p: modes.Params, data: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        from .backends import native

        if out is None:
            out = np.empty(data.nbytes, dtype=np.uint8)
        if data.nbytes == 0:
            return out
        native.crypt(p.spec.name, p.key, p.iv, data, p.encrypt, threads=os.cpu_count(),
                     sector_size=p.sector_size, start_sector=p.start_sector, out=out)
        return out

    def time_kernel(self, name, nbytes, *, repeats, encrypt=True):
        raise DeviceError("the native engine has no device-resident kernel time")

    def kernel_resources(self, name, *, encrypt=True):
        return {}

    def sm_clock_mhz(self):
        return None


_engines: dict[str, object] = {}
_engines_lock = threading.Lock()


def get_engine(spec: str = "auto", cipher_name: str | None = None, nbytes: int | None = None):
    """The engine of a device spec (cached per device)."""
    info = _devices.resolve(spec, cipher_name, nbytes)
    with _engines_lock:
        e = _engines.get(info.spec)
        if e is None:
            e = _engines[info.spec] = NativeEngine(info) if info.runtime == "native" else DeviceEngine(info)
        return e
