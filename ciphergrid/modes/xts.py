"""XTS (IEEE 1619-2018, NIST SP 800-38E) over 128-bit block ciphers.

The key is data key || tweak key.  Without ``sector_size`` the message is one data unit whose
tweak is ``iv`` (OpenSSL's semantics); with ``sector_size=S`` it is a run of S-byte units, unit i
taking the tweak LE128(start_sector + i) (dm-crypt ``plain64``).  Tweak of block j of unit u:
E_K2(tweak_u) * x^j in GF(2^128).  A unit whose length is not a multiple of 16 ends with
ciphertext stealing, done on the host for the message's last unit; the device kernels take the
rest, so units that are not whole blocks (odd sector sizes) run on an engine that steals per unit.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from ..errors import InvalidArgument, InvalidIVSize, InvalidKey, InvalidLength
from . import gf128
from .base import U32, U64, MASK64, Mode, replace
from .._lazy import numpy_for

np = numpy_for(__name__)

#: IEEE 1619-2018 and NIST SP 800-38E: at most 2^20 blocks in one data unit
MAX_UNIT_BLOCKS = 1 << 20
#: blocks per tweak segment of the XTS kernels (modes.cl)
SEGMENT_BLOCKS = 128


@dataclass(frozen=True)
class XtsLayout:
    """How a message of ``n`` bytes is laid out in data units, for the kernels and the host tail."""

    bpu: int            # blocks per full unit
    spu: int            # tweak segments per unit
    kernel_blocks: int  # blocks the device handles (all but a stolen tail)
    tail_unit: int      # unit holding the stolen tail (-1: no stealing)
    tail_block: int     # first block (in the unit) handled by the host
    tail_start: int     # byte offset in the message where the host tail starts

    def segments(self, first_block: int, nblocks: int) -> tuple[int, int]:
        """(first segment, number of segments) that blocks [first_block, +nblocks) touch."""
        def seg(b):
            u, j = divmod(b, self.bpu)
            return u * self.spu + j // SEGMENT_BLOCKS
        first = seg(first_block)
        return first, seg(first_block + nblocks - 1) - first + 1

    def scratch_bytes(self, chunk_blocks: int) -> int:
        """Bytes of segment tweaks a launch of up to ``chunk_blocks`` blocks needs."""
        if self.spu == 1:
            nseg = chunk_blocks // self.bpu + 2
        else:
            nseg = chunk_blocks // SEGMENT_BLOCKS + 2 * (chunk_blocks // self.bpu) + 4
        return 16 * nseg


_apow_lock = threading.Lock()


def _apow_buffer(backend):
    """x^(128 s) for every segment s of a unit, on the device (uploaded once per backend)."""
    buf = getattr(backend, "_cg_apow", None)
    if buf is not None:
        return buf
    with _apow_lock:
        buf = getattr(backend, "_cg_apow", None)
        if buf is None:
            table = np.frombuffer(gf128.pow_table(SEGMENT_BLOCKS, MAX_UNIT_BLOCKS // SEGMENT_BLOCKS),
                                  dtype=np.uint8)
            buf = backend.alloc(table.nbytes)
            backend.wait(backend.upload(buf, table))
            backend._cg_apow = buf
        return buf


class XTSMode(Mode):
    name = "xts"
    key_count = 2
    options = ("sector_size", "start_sector")

    def available_for(self, algorithm) -> bool:
        return algorithm.block_size == 16

    def validate(self, spec, iv, encrypt, sector_size, start_sector):
        if sector_size is None:
            if start_sector is not None:
                raise InvalidArgument("start_sector needs sector_size")
            return super().validate(spec, iv, encrypt, None, None)
        sector_size = int(sector_size)
        if sector_size < 16 or sector_size // 16 > MAX_UNIT_BLOCKS:
            raise InvalidArgument(
                f"sector_size must be between 16 and {16 * MAX_UNIT_BLOCKS} bytes, got {sector_size}")
        start_sector = int(start_sector or 0)
        if not 0 <= start_sector < 1 << 128:
            raise InvalidArgument("start_sector must be in [0, 2^128)")
        if iv is not None:
            raise InvalidIVSize("XTS with sector_size takes no iv: the tweak is the sector number")
        return None, sector_size, start_sector

    def check_key(self, spec, key, encrypt):
        if encrypt and key[: spec.key_size] == key[spec.key_size:]:
            raise InvalidKey("XTS keys must differ: key1 == key2 is refused (as OpenSSL does)")

    def check_length(self, req, n):
        if n:
            unit = req.sector_size or n
            last = n % unit or unit
            if last < 16:
                raise InvalidLength(f"XTS needs at least 16 bytes in each data unit, got {last}")
            if unit > 16 * MAX_UNIT_BLOCKS:
                raise InvalidLength(
                    f"an XTS data unit holds at most 2^20 blocks (16 MiB), got {n} bytes; "
                    "use sector_size to cut the data into units")
        elif req.sector_size is None:
            raise InvalidLength("XTS needs at least 16 bytes, got 0")

    def streams(self, req) -> bool:
        return bool(req.sector_size)  # one data unit needs all of itself (stealing at its end)

    def device_runs(self, req, n):
        """Units that are not whole blocks need stealing in every unit: not on the device (one
        unit is fine: its tail is stolen on the host)."""
        return req.sector_size is None or req.sector_size % 16 == 0 or n <= req.sector_size

    def kernel(self, encrypt):
        return "cg_xts_enc" if encrypt else "cg_xts_dec"

    def schedules(self, req):
        ks = req.spec.key_size
        return [(req.key[:ks], not req.encrypt), (req.key[ks:], False)]

    def xts_iv(self, req) -> bytes:
        """The 16-byte tweak of unit 0 (sector mode: LE128(start_sector))."""
        return req.iv if req.iv is not None else req.start_sector.to_bytes(16, "little")

    def tweak_input(self, req) -> int:
        """:meth:`xts_iv` as the little-endian number it stands for."""
        return req.start_sector if req.iv is None else int.from_bytes(req.iv, "little")

    def layout(self, req, n: int) -> XtsLayout:
        return _layout(req.sector_size, n)

    #: 64 segment tweaks (up to 8192 blocks of one unit, 64 units of 128 blocks or fewer)
    scratch_reserve = 16 * 64

    def scratch_bytes(self, req, layout, nblocks):
        return layout.scratch_bytes(nblocks)

    def held_back(self, req):
        return (req.sector_size or 1) - 1  # whole units; one unit: all at finalize, from update nothing

    def releasable(self, req, pending, final):
        if final:
            return pending
        s = req.sector_size
        return pending // s * s if s else 0  # whole data units (one unit: all at the end)

    def unit_tweak(self, req, u: int) -> int:
        """T_u = E_K2(iv + u) as an integer (little-endian)."""
        ks = req.spec.key_size
        t_in = ((int.from_bytes(self.xts_iv(req), "little") + u) & gf128.MASK128).to_bytes(16, "little")
        enc = req.spec.algorithm.reference_ecb(req.key[ks:], t_in, True)
        return int.from_bytes(enc, "little")

    def tail(self, req, lay: XtsLayout, tail: bytes) -> bytes:
        """Ciphertext stealing of the last full block and the partial block of a unit, on the host.

        ``tail`` is the message from ``lay.tail_start`` (16 + r bytes, 0 < r < 16)."""
        alg = req.spec.algorithm
        ks = req.spec.key_size
        k1 = req.key[:ks]
        t = self.unit_tweak(req, lay.tail_unit)
        t_a = gf128.mul(t, gf128.pow_x(lay.tail_block))
        t_b = gf128.mulx(t_a)
        r = len(tail) - 16

        def xex(block: bytes, tw: int) -> bytes:
            tb = tw.to_bytes(16, "little")
            x = bytes(a ^ b for a, b in zip(block, tb))
            y = alg.reference_ecb(k1, x, req.encrypt)
            return bytes(a ^ b for a, b in zip(y, tb))

        if req.encrypt:
            cc = xex(tail[:16], t_a)
            pp = tail[16:] + cc[r:]
            return xex(pp, t_b) + cc[:r]
        pp = xex(tail[:16], t_b)
        cc = tail[16:] + pp[r:]
        return xex(cc, t_a) + pp[:r]

    def split_unit(self, req) -> int | None:
        """A data unit (ciphertext stealing needs a unit's end); one unit: not split."""
        return req.sector_size if req.sector_size and req.sector_size % 16 == 0 else None

    def at(self, req, first_block: int, chain: bytes | None = None):
        if first_block == 0:
            return req
        bpu = (req.sector_size or 0) // 16
        if not req.sector_size or req.sector_size % 16 or first_block % bpu:
            raise ValueError("an XTS message splits only at data-unit boundaries")
        return replace(req, start_sector=req.start_sector + first_block // bpu)

    def prepare(self, kp) -> None:
        kp.apow = _apow_buffer(kp.b)
        if kp.first is not None and kp.first[0] is not None:
            base, nseg, spu = kp.first[2]   # (the segment tweaks of the first launch, in the reserve)
            kp.tweaks = _Window(kp._upload_queue, kp._scratch[1], base, 0, nseg, spu)

    def first_launch(self, req, n: int):
        """What one launch over the ``n`` bytes from block 0 needs (KeyedProgram.first): where
        its segment tweaks are worked out on the host -- OpenSSL has the cipher (libcrypto's
        low-level calls, else pyca) or the cipher's ``host_encrypt`` does (a block costs less
        than a tweak launch) -- (the tweaks, the data key's schedule alone, (tweak input,
        segments, segments per unit)): every host copy of the tweaks is zeroed once uploaded.
        Otherwise (None, the tweak key's schedule alone, None): the tweak launch goes first and
        the data key is expanded after it, before the data launch (``_launch``)."""
        alg = req.spec.algorithm
        lay = _layout(req.sector_size, n)
        nseg = lay.segments(0, lay.kernel_blocks)[1] if lay.kernel_blocks else 0
        if not nseg:
            return None
        if 16 * nseg > self.scratch_reserve:
            return _TWEAK_KEY_FIRST
        spu = lay.spu
        t_in = self.xts_iv(req)
        iv = int.from_bytes(t_in, "little")
        units = -(-nseg // spu)
        if units > 1:
            t_in = b"".join(((iv + u) & gf128.MASK128).to_bytes(16, "little") for u in range(units))
        key2 = req.key[req.spec.key_size:]
        native = _HOST_BLOCKS.get(alg.name)
        enc = native(alg, key2, t_in) if native is not None else alg.host_encrypt(key2, t_in)
        if enc is None:
            if alg.openssl_provider is None:
                return _TWEAK_KEY_FIRST
            try:
                enc = alg.reference_ecb(key2, t_in, True)
            except Exception:   # (no provider for it here: the device computes them)
                return _TWEAK_KEY_FIRST
        if spu == 1:
            return enc if isinstance(enc, bytearray) else bytearray(enc), (0,), (iv, nseg, spu)
        head = bytearray(16 * nseg)
        g = 0
        for u in range(units):   # (segment s of unit u: T_u x^(128 s))
            t = int.from_bytes(enc[16 * u: 16 * u + 16], "little")
            for sidx in range(min(spu, nseg - g)):
                if sidx:
                    t = _times_x128(t)
                head[16 * g: 16 * g + 16] = t.to_bytes(16, "little")
                g += 1
        if isinstance(enc, bytearray):
            enc[:] = bytes(len(enc))
        return head, (0,), (iv, nseg, spu)

    def enqueue(self, kp, req, in_buf, out_buf, first_block, nblocks, queue=None, *, chain=None,
                layout=None, scratch=None, wait_for=None, record=True):
        """The segment tweaks (cg_xts_seg), then the data (cg_xts_enc/dec).  With ``scratch``
        (the pipeline's): the launch's own segments into it.  Without: the program's tweak window
        on ``queue`` (``KeyedProgram.tweaks``), which a later launch of the same program reads
        without a tweak launch while it covers that launch's units; a miss computes the launch's
        units, and when the program has launched on that queue before (a context's next piece),
        WINDOW_SEGMENTS segments of units ahead."""
        first_seg, nseg = layout.segments(first_block, nblocks)
        iv = self.tweak_input(req)
        if scratch is None:
            with kp.lock:   # (the window and the launches that use it, in one queue's order)
                scratch, seg_arg, fill = _window(kp, queue, iv, first_seg, nseg, layout.spu)
                return self._launch(kp, req, in_buf, out_buf, first_block, first_seg, nblocks,
                                    layout, queue, scratch, seg_arg, fill, wait_for, record)
        return self._launch(kp, req, in_buf, out_buf, first_block, first_seg, nblocks, layout,
                            queue, scratch, first_seg, (first_seg, first_seg + nseg, iv),
                            wait_for, record)

    def _launch(self, kp, req, in_buf, out_buf, first_block, first_seg, nblocks, layout, queue,
                scratch, seg_arg, fill, wait_for, record):
        """cg_xts_seg over ``fill`` = (lo, hi, base) when not None, then the data kernel reading
        the segment tweaks in ``scratch`` (its first holding segment ``seg_arg``)."""
        b = kp.b
        opencl = b.info.runtime == "opencl"
        if fill is not None:
            lo, hi, base = fill
            ev = b.launch(kp.prg, "cg_xts_seg", self.items(kp, "cg_xts_seg", hi - lo),
                          [scratch, kp.schedule(1, queue), kp.apow,
                           *_seg_args(lo, hi - lo, layout.spu),
                           U64(base & MASK64), U64(base >> 64)], queue, wait_for=wait_for,
                          record=opencl)
            wait_for = [ev] if opencl else None   # (a CUDA stream runs them in order)
        a = _unit_args(first_block, first_seg, nblocks, layout.bpu, layout.spu)
        if seg_arg != first_seg:
            a = (a[0], U64(seg_arg), *a[2:])
        name = self.kernel(req.encrypt)
        return b.launch(kp.prg, name, self.items(kp, name, nblocks),
                        [in_buf, out_buf, kp.schedule(0, queue), scratch, *a], queue,
                        wait_for=wait_for, record=record)


#: KeyedProgram.first of a one-shot whose tweaks the device computes: the tweak key's schedule
#: uploaded first, the data key's expanded after the tweak launch
_TWEAK_KEY_FIRST = (None, (1,), None)

#: segments a context's tweak window computes ahead (16 bytes each; 512 units of 4 KiB)
WINDOW_SEGMENTS = 1024


@dataclass
class _Window:
    """Segment tweaks on the device: ``buf[k]`` is segment ``lo + k`` of the units numbered from
    the tweak input ``base`` (segment s: unit s // spu of ``spu`` segments each)."""

    queue: object
    buf: object
    base: int
    lo: int
    hi: int
    spu: int


def _window(kp, queue, iv: int, first_seg: int, nseg: int, spu: int):
    """(buffer, cg_xts_enc's first_seg argument, None or the (lo, hi, base) cg_xts_seg must
    fill first) for segments [first_seg, first_seg + nseg) of the units from tweak input ``iv``."""
    q = queue or kp.b.default_queue
    w = kp.tweaks
    if w is not None and w.queue is q and w.spu == spu:
        d = ((iv - w.base) & gf128.MASK128) * spu    # (the launch's unit 0 in the window's numbering)
        if w.lo <= d + first_seg and d + first_seg + nseg <= w.hi:
            return w.buf, (w.lo - d) & MASK64, None
    lo, hi = first_seg, first_seg + nseg
    if w is not None and w.queue is q:   # launched again on this queue: units ahead as well
        lo = first_seg // spu * spu
        hi = max(hi, lo + -(-WINDOW_SEGMENTS // spu) * spu)
    buf = kp.scratch(16 * (hi - lo), q)
    kp.tweaks = _Window(q, buf, iv, lo, hi, spu)
    return buf, lo, (lo, hi, iv)


class _HostBlock:
    """Blocks of one cipher encrypted on the host by libcrypto's low-level calls (its key setup
    and block function: a microsecond or two, where pyca's objects take several), used where
    they agree with the cipher's reference on a probe key of each size (checked once); else
    None, and the reference runs."""

    #: bytes for the call's key structure (AES_KEY, CAMELLIA_KEY, SEED_KEY_SCHEDULE fit)
    STATE = 512

    def __init__(self, set_key: str, encrypt: str, with_bits: bool):
        self.names, self.with_bits = (set_key, encrypt), with_bits
        self.fns = None
        self.sizes: dict = {}     # key size -> whether the calls agree with the reference
        self.lock = threading.Lock()

    def __call__(self, alg, key: bytes, blocks: bytes) -> bytearray | None:
        ok = self.sizes.get(len(key))
        if ok is None:
            with self.lock:
                ok = self.sizes.get(len(key))
                if ok is None:
                    ok = self.sizes[len(key)] = self._check(alg, len(key))
        return self._run(key, blocks) if ok else None

    def _run(self, key: bytes, blocks: bytes) -> bytearray:
        import ctypes

        set_key, encrypt = self.fns
        n = len(blocks)
        buf = ctypes.create_string_buffer(self.STATE + n)   # (the key structure, then the blocks)
        ks = ctypes.addressof(buf)
        try:
            if self.with_bits:
                set_key(key, 8 * len(key), ks)
            else:
                set_key(key, ks)
            for i in range(0, n, 16):
                encrypt(blocks[i: i + 16], ks + self.STATE + i, ks)
            out = bytearray(n)
            ctypes.memmove((ctypes.c_char * n).from_buffer(out), ks + self.STATE, n)
            return out
        finally:
            ctypes.memset(ks, 0, self.STATE + n)

    def _check(self, alg, size: int) -> bool:
        import ctypes

        from .._libcrypto import load

        if self.fns is None:
            found = []

            def declare(lib) -> None:
                sk, enc = (getattr(lib, n) for n in self.names)
                sk.restype = ctypes.c_int if self.with_bits else None
                sk.argtypes = ((ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p) if self.with_bits
                               else (ctypes.c_char_p, ctypes.c_void_p))
                enc.restype, enc.argtypes = None, (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)
                found.append((sk, enc))

            try:
                if load(declare) is None:
                    return False
            except Exception:   # (no library, no such call: the reference runs)
                return False
            self.fns = found[-1]
        probe_key = bytes(range(7, 7 + size))
        probe = bytes(range(100, 132))
        try:
            return self._run(probe_key, probe) == alg.reference_ecb(probe_key, probe, True)
        except Exception:
            return False


#: the host block calls by cipher (XTS one-shots' tweaks; the others use their reference)
_HOST_BLOCKS = {"aes": _HostBlock("AES_set_encrypt_key", "AES_encrypt", True),
                "camellia": _HostBlock("Camellia_set_key", "Camellia_encrypt", True),
                "seed": _HostBlock("SEED_set_key", "SEED_encrypt", False)}


def _times_x128(t: int) -> int:
    """t * x^128 = t * (x^7 + x^2 + x + 1) in GF(2^128), folded twice."""
    r = t ^ (t << 1) ^ (t << 2) ^ (t << 7)
    hi = r >> 128
    return (r & gf128.MASK128) ^ hi ^ (hi << 1) ^ (hi << 2) ^ (hi << 7)


XTS = XTSMode()


@functools.lru_cache(maxsize=64)
def _layout(sector_size, n: int) -> XtsLayout:
    """The layout of an n-byte message in units of ``sector_size`` (XtsLayout is immutable:
    the calls of one shape share it)."""
    unit = sector_size or n
    bpu = max(1, unit // 16)
    spu = -(-bpu // SEGMENT_BLOCKS)
    last_len = n % unit or unit
    if last_len % 16:
        tail_unit = (n - 1) // unit
        m = last_len // 16
        tail_start = tail_unit * unit + 16 * (m - 1)
        return XtsLayout(bpu, spu, n // 16 - 1, tail_unit, m - 1, tail_start)
    return XtsLayout(bpu, spu, n // 16, -1, 0, n)


@functools.lru_cache(maxsize=256)
def _seg_args(first_seg: int, nseg: int, spu: int) -> tuple:
    """cg_xts_seg's scalar arguments before the tweak (made once per shape)."""
    return (U64(first_seg), U64(nseg), U64(spu))


@functools.lru_cache(maxsize=256)
def _unit_args(first_block: int, first_seg: int, nblocks: int, bpu: int, spu: int) -> tuple:
    """The XTS kernels' scalar arguments after the scratch buffer (the same for every call of
    one shape: each numpy scalar made once)."""
    log2 = bpu.bit_length() - 1 if bpu & (bpu - 1) == 0 else 64
    return (U64(first_block), U64(first_seg), U64(nblocks), U64(bpu), U64(spu), U32(log2))
