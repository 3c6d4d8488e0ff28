"""ChaCha20-Poly1305 (RFC 8439) on a device: the driver of aeads/chacha20_poly1305.py.

The kernels (kernels/chacha20_poly1305.cl) run a whole batch in a fixed number of launches:
``chacha_xor`` (every ChaCha20 block of every message, the Poly1305 keys from block 0),
``chacha_powers`` (the powers of r each message needs), ``chacha_poly`` (Poly1305 striped over
``ceil(n / poly_blocks)`` work-items per message of n 16-byte blocks, in segments of
2^SEG_LOG work-items: a long message's segments need only their own blocks) and one or more
``chacha_psum`` levels (sums of the shares, ``fanin`` per work-item; the last writes the tags).
The host only turns the lengths into prefix sums (numpy); it never loops over the data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...backends.base import defines_prefix, program_source
from .driver import DeviceAEAD, coarse_index, layout_key
from .job import Job, span, texts

U32 = np.uint32
U64 = np.uint64
_FILE = "chacha20_poly1305.cl"


def _prefix(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(counts.shape[0] + 1, dtype=np.uint64)
    np.cumsum(counts, out=out[1:])
    return out


#: items per entry of the coarse message indexes (chacha_find_hinted): ChaCha20 blocks, Poly1305 items
_BLK_HINT_SHIFT = 6
_POLY_HINT_SHIFT = 2
#: log2 of the Poly1305 work-items per segment of a long message (kernels: CHACHA_SEG_LOG): 512
#: x poly_blocks 128 = 1 MiB of input per segment; a message up to a segment is striped whole
SEG_LOG = 9


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of each (non-negative, < 2^53) value of an integer array."""
    _, e = np.frexp(np.asarray(x, dtype=np.float64))
    return e.astype(np.uint64)


class ChaChaShape(NamedTuple):
    """What a batch's message layout alone decides for a ChaCha20-Poly1305 job
    (ChaChaDriver.derive_shape)."""

    off: np.ndarray         # (m + 1,) uint64: the texts' offsets
    aad_off: np.ndarray     # (m + 1,) uint64: the AADs' offsets
    na: np.ndarray          # AAD blocks per message
    seg: np.uint64          # Poly1305 blocks per segment of a long message
    blk_off: np.ndarray     # (m + 1,) ChaCha20 blocks before each message (its key block first)
    blk_hint: np.ndarray    # chacha_xor's coarse message index
    poly_off: np.ndarray    # (m + 1,) Poly1305 work-items before each message
    poly_hint: np.ndarray   # chacha_poly's coarse message index
    pow_off: np.ndarray     # (m + 1,) powers of r before each message
    levels: tuple           # the sum levels' prefix sums (the last: one share per message)


class ChaChaJob(Job):
    """A batch's buffers on one device (see ChaChaDriver.prepare); its kernels take any range
    of the texts (Job.ranges: slices), cut between messages or inside one on a ChaCha20 block."""

    ranges = True
    cut_align = 64
    tags_apart = True
    texts_in_place = True     # (its kernels read and write within the texts)

    def __init__(self, drv: "ChaChaDriver", batch, queue=None, **slicing):
        self.drv = drv
        super().__init__(drv.backend, batch, queue, **slicing)

    def setup(self) -> None:
        drv, batch, b, m = self.drv, self.batch, self.b, self.m
        total = int(batch.off[-1])
        # the texts first: the copy engine starts while the host works out the metadata
        self.src = self.upload(texts(span(batch.src, 0, total)), texts_in=True)
        sh = drv.shape(batch, small=self.resident)
        off, aad_off = sh.off, sh.aad_off
        self.na, self.seg, self.blk_off = sh.na, sh.seg, sh.blk_off
        self.poly_off, self.pow_off, self.levels = sh.poly_off, sh.pow_off, sh.levels
        key_words = np.ascontiguousarray(batch.keys, dtype=np.uint8).view("<u4").astype(U32)
        meta = {
            "keys": key_words,
            "aad": np.ascontiguousarray(batch.aad[:int(aad_off[-1])], dtype=np.uint8),
            "off": off, "aad_off": aad_off,
            "blk": self.blk_off, "blk_hint": sh.blk_hint,
            "poly": self.poly_off, "poly_hint": sh.poly_hint,
            "pow": self.pow_off,
            "key_index": np.ascontiguousarray(batch.key_index, dtype=U32),
            "nonces": np.ascontiguousarray(batch.nonces, dtype=np.uint8).view("<u4").astype(U32),
        }
        for k, lv in enumerate(self.levels):
            meta[f"level{k}"] = lv
        names = ("off", "aad_off", "blk", "blk_hint", "poly", "poly_hint", "pow",
                 *(f"level{k}" for k in range(len(self.levels))))
        self.n_items = int(self.poly_off[-1])
        sizes = [self.n_items] + [int(lv[-1]) for lv in self.levels[:-1]]
        # Poly1305 keys, powers of r and shares (key material, wiped at once); the tags apart
        # (downloaded after the wipe is enqueued: Job.collect) but in a resident job's scratch
        # (its tag is copied before the wipe: Job.settle)
        work = {"polykey": 32 * m, "powers": 20 * int(self.pow_off[-1]),
                **{f"sums{k}": 20 * n for k, n in enumerate(sizes)},
                **({"tags": 16 * m} if self.resident else {})}
        dev = self.stage(meta, secret=("keys",), layout=(drv, layout_key(batch), names),
                         scratch=work)
        key_words.fill(0)   # (the staging copy is wiped when the job ends)
        self.dev = dev
        self.keys = dev["keys"]
        self.level_bufs = [dev[f"level{k}"] for k in range(len(self.levels))]
        self.dst = self.texts_out = self.output_texts(total)
        self.polykey, self.powers = dev["polykey"], dev["powers"]
        self.tags_out = dev["tags"] if "tags" in dev else b.alloc(16 * m)
        self.sums = [dev[f"sums{k}"] for k in range(len(sizes))]

    def _items(self, c) -> tuple[int, int, int]:
        """(ChaCha20 blocks, messages whose block 0 (the Poly1305 key) is, Poly1305 work-items
        whose input blocks all are) before the cut ``c``: a message's blocks 1.. and segments
        before byte c.rel of its text."""
        i, r = c.msg, c.rel
        blk, poly = int(self.blk_off[i]), int(self.poly_off[i])
        if not r:
            return blk, i, poly
        whole = (int(self.na[i]) + r // 16) // int(self.seg)      # segments before the cut
        return blk + 1 + r // 64, i + 1, poly + (whole << SEG_LOG)

    def launch(self, queue, lo, hi, texts: bool = True, tags: bool = True) -> None:
        """With ``texts`` the ChaCha20 blocks between the cuts ``lo`` and ``hi`` (and the
        Poly1305 keys of the messages whose block 0 they hold), with ``tags`` the powers of r,
        the Poly1305 shares and the sums of the messages the range completes (Job.launch)."""
        b, prg, m, d = self.b, self.drv.prg, U32(self.m), self.dev
        encrypt = self.batch.encrypt
        first, end = lo.msg, hi.msg                 # the messages the slice completes
        (blo, klo, plo), (bhi, khi, phi) = self._items(lo), self._items(hi)

        def run(name, lo, hi, args):   # (items [lo, hi))
            if hi > lo:
                b.launch(prg, name, hi - lo, args + [U64(lo), U64(hi)], queue, record=False)

        if texts:
            run("chacha_xor", blo, bhi,
                [self.src, self.dst, d["off"], d["blk"], d["blk_hint"], U32(_BLK_HINT_SHIFT),
                 self.keys, d["key_index"], d["nonces"], self.polykey, m])
        if not tags:
            return
        if khi > klo:
            b.launch(prg, "chacha_powers", khi - klo,
                     [self.polykey, d["poly"], d["pow"], self.powers, U32(klo), U32(khi)], queue,
                     record=False)
        # Poly1305 over the ciphertext: the output when encrypting, the input when decrypting
        text = self.dst if encrypt else self.src
        run("chacha_poly", plo, phi,
            [text, d["aad"], d["off"], d["aad_off"], d["poly"], d["poly_hint"],
             U32(_POLY_HINT_SHIFT), d["pow"], self.powers, self.sums[0], m, U64(self.n_items)])
        in_off = d["poly"]
        for k, lv in enumerate(self.levels):
            last = k == len(self.levels) - 1
            out = self.tags_out if last else self.sums[k + 1]
            run("chacha_psum", int(lv[first]), int(lv[end]),
                [self.sums[k], U64(self.sums_items(k)), in_off, out, self.level_bufs[k],
                 self.polykey, self.tags_out, U32(last), m, U64(int(lv[-1]))])
            in_off = self.level_bufs[k]

    def sums_items(self, k: int) -> int:
        return self.n_items if k == 0 else int(self.levels[k - 1][-1])


class ChaChaDriver(DeviceAEAD):
    """The ChaCha20-Poly1305 kernels on one device.

    ``slice_align``: a long message's slices are cut on 16 KiB from its start (whole ChaCha20
    blocks; its Poly1305 segments run in the slice holding all their blocks).

    Options (Kernel.options / knobs): ``poly_blocks`` 16-byte Poly1305 blocks per work-item
    (a message of n blocks gets ceil(n / poly_blocks) work-items; default 128 = 2 KiB: with
    longer serial chains per work-item a slice of short messages leaves the GPU mostly empty,
    and batches of long messages gain nothing from them; scripts/dev/aead_knobs.py,
    docs/benchmarks.md 0k), ``fanin`` shares summed per work-item and
    level (default 64)."""

    slice_align = 16 << 10

    def __init__(self, backend, aead, name, poly_blocks: int = 128, fanin: int = 64, **options):
        super().__init__(backend, aead, name, **options)
        self.poly_blocks = int(poly_blocks)
        self.fanin = int(fanin)
        if self.poly_blocks < 1 or self.fanin < 2:
            raise ValueError("poly_blocks >= 1 and fanin >= 2")
        defines = {"CHACHA_POLY_BLOCKS": self.poly_blocks, "CHACHA_FANIN": self.fanin,
                   "CHACHA_SEG_LOG": SEG_LOG}
        key = ("aead", "chacha20-poly1305", self.poly_blocks, self.fanin, SEG_LOG)
        self.prg = backend.cached_program(key) or backend.build(
            defines_prefix(defines) + program_source(None, _FILE), key=key)

    def derive_shape(self, off, aad_off) -> ChaChaShape:
        """The layout-only host work of a job (DeviceAEAD.shape): the ChaCha20 blocks, the
        Poly1305 work-items, powers and sum levels, and the kernels' coarse indexes."""
        # (copies, always: the shape is kept and made read-only, the caller's arrays not)
        off = np.array(off, dtype=np.uint64)
        aad_off = np.array(aad_off, dtype=np.uint64)
        m = off.shape[0] - 1
        lens = np.diff(off)
        alens = np.diff(aad_off)
        # ChaCha20: block 0 (the Poly1305 key) + ceil(len / 64) blocks per message
        blk_off = _prefix(1 + (lens + 63) // 64)
        # Poly1305: n blocks in segments of S = SI C blocks, the last 1 to S: SI work-items per
        # segment before it, ceil(its blocks / C) for it (one segment: ceil(n / C)); the powers
        # r^(2^k) up to the largest exponent (kernels: chacha_poly)
        na = (alens + 15) // 16
        n = na + (lens + 15) // 16 + 1
        c = np.uint64(self.poly_blocks)
        seg = np.uint64(self.poly_blocks << SEG_LOG)
        if int(n.max()) <= int(seg):   # (every message one segment: a batch's usual case,
            w = (n + c - np.uint64(1)) // c  # without the segments' arithmetic)
            bits = _bit_length(w)
        else:
            full = (n - np.uint64(1)) // seg
            w = (full << np.uint64(SEG_LOG)) + (n - full * seg + c - np.uint64(1)) // c
            bits = np.where(full > 0, _bit_length(n), _bit_length(w))
        poly_off = _prefix(w)
        # the sum levels: while a message has more than fanin shares, fanin per work-item
        levels = []
        cnt, fan = w, np.uint64(self.fanin)
        while cnt.max() > fan:
            cnt = (cnt + fan - 1) // fan
            levels.append(_prefix(cnt))
        levels.append(np.arange(m + 1, dtype=np.uint64))
        return ChaChaShape(off=off, aad_off=aad_off, na=na, seg=seg, blk_off=blk_off,
                           blk_hint=coarse_index(blk_off, _BLK_HINT_SHIFT), poly_off=poly_off,
                           poly_hint=coarse_index(poly_off, _POLY_HINT_SHIFT),
                           pow_off=_prefix(1 + bits), levels=tuple(levels))

    def prepare(self, batch, queue=None, **slicing) -> ChaChaJob:
        return ChaChaJob(self, batch, queue, **slicing)
