"""AES-GCM (NIST SP 800-38D) on a device: the driver of aeads/gcm.py.

The device driver (``GCMDriver``) of kernels/gcm.cl, compiled after the AES block functions:
kernels/aes.cl ("fast": T-tables, GHASH with 8-bit (batches of one key) or 4-bit tables of
H-multiples in work-group memory) or kernels/aes_bs.cl ("ct", constant time: bitsliced AES and a
GHASH multiply without any table indexed by data).

A batch runs in six launches, whatever its number of messages (kernels/gcm.cl explains them):
``gcm_hkey`` (per key: H = E(K, 0), H^(2^j)), ``gcm_hpow`` (per key: H^1..H^W and the multiply
table of H^W), ``gcm_j0`` (per message: J0), ``gcm_ctr`` (the key stream over every message,
E(K, J0) included), ``gcm_ghash`` (tiles of W x R blocks of every message, in parallel) and
``gcm_tag`` (per message: the XOR of its tiles plus E(K, J0)).  The host only sums lengths
(numpy) and picks W and R for the batch.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...algorithms.aes import CIPHER as AES_CIPHER
from ...backends.base import defines_prefix, program_source
from ...errors import DeviceError, InvalidArgument
from .driver import DeviceAEAD, coarse_index, layout_key
from .job import Job, _nbytes, flat, texts

U32 = np.uint32
U64 = np.uint64
LOCAL_SIZE = 256          # work-items per work-group (GCM_LS); smaller where the device allows less
MIN_W = 8                 # the fast GHASH kernel's smallest tile width (GCM_MIN_W)
_HINT_SHIFT = 8            # gcm.cl GCM_HINT_SHIFT: counter blocks per entry of the message index
MAX_RLOG = 8              # runs of up to 2^8 blocks per lane
_PAD = 32                 # bytes past the end of the buffers gcm_load reads (whole aligned words)
_MAX_NF = 8192            # the most lane factors (gcm.cl gcm_hpow, knob gh) per batch
_MAX_TF = 1 << 16         # the most tile factors (knob tf) per batch
_TF_BIT = 1 << 31         # gcm.cl GCM_TFBIT: nf counts tile factors
#: cost of one general (bit-serial) multiply in table multiplies, per implementation
_GEN_COST = {False: 4.0, True: 2.5}
#: the same for gcm_ghash_pos (knob gh)
_POS_GEN_COST = {False: 7.0, True: 5.0}


def _ceil_div(a, b):
    return -(-a // b)


def _bitlen(n: int) -> int:
    return int(n).bit_length()


def choose_tiles(nb: np.ndarray, ls: int, ct: bool, target: int, gen: float | None = None,
                 wmin: int | None = None, memo: dict | None = None) -> tuple[int, int]:
    """(log2 W, log2 R) for these messages (see _choose_tiles); with ``memo`` (a driver's
    ``tiles``) remembered for batches whose block counts have the same count, sum, least and
    greatest value (the pieces of a large batch: the choice is only a cost estimate, any choice
    gives the same bytes)."""
    if memo is None:
        return _choose_tiles(nb, ls, ct, target, gen, wmin)
    key = (int(nb.shape[0]), int(nb.sum()), int(nb.min()), int(nb.max()), ls, ct, target, gen, wmin)
    got = memo.get(key)
    if got is None:
        got = _choose_tiles(nb, ls, ct, target, gen, wmin)
        _remember(memo, key, got)
    return got


#: tile choices a driver remembers (its ``tiles``): more, and it forgets them all
_TILES_KEPT = 256


def _remember(memo: dict, key, got) -> None:
    if len(memo) > _TILES_KEPT:
        memo.clear()
    memo[key] = got


def _choose_tiles(nb: np.ndarray, ls: int, ct: bool, target: int, gen: float | None = None,
                  wmin: int | None = None) -> tuple[int, int]:
    """(log2 W, log2 R) for GHASH tiles of W lanes x R blocks over messages of nb stream blocks:
    the least estimated time, work / min(lanes, target) (target: work-items the device runs at
    once).  Work per tile: W lanes x (R table multiplies + one general multiply), plus the tile's
    own power and reduction.  gen: the price of a general multiply in table multiplies
    (default _GEN_COST); wmin: log2 of the least W (default 0 for ct, log2 MIN_W for fast)."""
    g = _GEN_COST[ct] if gen is None else gen
    best = None
    if wmin is None:
        wmin = 0 if ct else _bitlen(MIN_W) - 1
    wmax = _bitlen(ls) - 1
    total = float(nb.sum())
    for tlog in range(wmin, wmax + MAX_RLOG + 1):
        tiles_m = (nb + ((1 << tlog) - 1)) >> tlog
        tiles = float(tiles_m.sum())
        ubits = _bitlen(int(tiles_m.max()) - 1)
        for wlog in range(max(wmin, tlog - MAX_RLOG), min(wmax, tlog) + 1):
            rlog = tlog - wlog
            w, r = 1 << wlog, 1 << rlog
            lanes = tiles * w
            work = lanes * (r + g) + tiles * (g * ubits / 2 + wlog + 1)
            t = work / min(lanes, float(target), max(total, 1.0))
            if best is None or t < best[0] - 1e-9:
                best = (t, wlog, rlog)
    return best[1], best[2]


class GCMDriver(DeviceAEAD):
    """kernels/gcm.cl for one key size and implementation on one device."""

    #: a long message's slices cut on 16 KiB from its start: the counter passes' tiles (8 KiB
    #: fast, 16 KiB ct, from a message at offset 0) stay whole
    slice_align = 16 << 10

    def __init__(self, backend, aead, name, ct: bool = False, gh: int = 0, grp: int = 6,
                 ctr: int = 0, ls: int = 0, roll: int = 0, pf: int = 0, mad: int = 0,
                 regs: int = 0, hd: int = 0, tw: int = 0, tr: int = 0, tf: int = 0):
        """Knobs (integers, scripts/dev/aead_knobs.py; the library's choice: ``implementations``):

        * ``gh``, the GHASH kernel for batches of one key: 0 gcm_ghash; 1 gcm_ghash_pos (fast:
          8-bit + 4-bit positional tables; ct: 4-bit positional tables of M^1..M^(grp-1) indexed
          by the stream); 2 (fast) 4-bit positional tables; 3 (fast) the 8-bit tables of bytes
          0..7 for both halves of a block (gcm.cl gcm_mulx64);
        * ``grp`` (ct, gh=1): the group size, 2..6;
        * ``ctr``, the counter pass for batches of one key, gcm_ctr_one in text-block space (the
          E(K, J0) blocks after the text): 3 (fast) tiles of 16 x 32 text blocks per sub-group of
          32 work-items, so that messages of 8 KiB (or multiples) are whole tiles whose counters
          and addresses come from registers; 4 (ct) tiles of 32 x 32 text blocks, 16 KiB
          messages whole tiles, the counters bitsliced directly (gcm_bs_ctr).  (No passes in
          counter-block space and no fused kernels: slower everywhere, docs/ciphers/aes-gcm.md);
        * ``ls``: the work-group size (0: LOCAL_SIZE; a power of two >= MIN_W);
        * ``roll``: 1 the 4-bit positional multiply (gh=2, ct gh=1) rolled over the bytes of
          each word (fewer registers);
        * ``pf`` (gcm_ghash_pos, gh >= 1): 1 (fast) chunks of 4 Horner steps, 2 (fast) of 8, 1 (ct)
          whole groups: where all the chunk's blocks are full aligned text blocks, their loads
          issued together from one base address, no per-block stream branches;
        * ``mad`` (fast, gh=3): 1 the 8-bit positional lookups addressed in bytes by one byte
          permute and one multiply-add (the FMA pipe) each;
        * ``hd`` (gcm_ghash_pos, gh >= 1): 1 floor(nb / (W R)) tiles per message (at
          least one), its first tile's lanes taking the nb mod W R head blocks as extra steps,
          instead of ceil(nb / (W R)) tiles with the head alone in the first (a 16 KiB message
          with 16 bytes of AAD: 1026 blocks, 8 + 1 tiles of 128 at W = 1: one lane in 9 idle);
          2 also the tile choice by whole waves of the resident grid (``pos_tiles``);
        * ``tf`` (gcm_ghash_pos, gh >= 1): 1 where there are too many lane factors
          (over _MAX_NF: one long message), tile factors H^(W R u) from gcm_hpow (one multiply by
          lane 0 per tile instead of a square-and-multiply over the bits of u);
        * ``tw``, ``tr`` (gcm_ghash_pos, gh >= 1; both or neither): the tiles forced to
          W = tw lanes x R = tr blocks (powers of two, W <= ls, R <= 256; 0: chosen per batch);
        * ``regs``: a cap on registers per work-item for every kernel of the program (CUDA
          CG_MAX_REGS, NVIDIA OpenCL -cl-nv-maxrregcount; 0: none).

        Batches of several keys always run gcm_ghash and gcm_ctr."""
        super().__init__(backend, aead, name, ct=ct, gh=gh, grp=grp, ctr=ctr, ls=ls, roll=roll,
                         pf=pf, mad=mad, regs=regs, hd=hd, tw=tw, tr=tr, tf=tf)
        self.ct = bool(ct)
        self.tiles: dict = {}   # this driver's tile choices (choose_tiles, pos_tiles)
        gh, grp, ctr, roll, pf = int(gh), int(grp), int(ctr), int(roll), int(pf)
        mad, regs, hd, tw, tr = int(mad), int(regs), int(hd), int(tw), int(tr)
        tf = int(tf)
        if gh not in ((0, 1) if self.ct else (0, 1, 2, 3)) or not 2 <= grp <= 6 \
                or ctr not in ((0, 4) if self.ct else (0, 3)) or roll not in (0, 1) \
                or not (regs == 0 or 32 <= regs <= 255) \
                or pf not in ((0, 1) if self.ct else (0, 1, 2)) or (pf and not gh) \
                or mad not in (0, 1) or (mad and (self.ct or gh != 3)) \
                or hd not in (0, 1, 2) or (hd and not gh) \
                or tf not in (0, 1) or (tf and not gh) \
                or (tw or tr) and (not gh or tw < 1 or tr < 1 or tw & (tw - 1) or tr & (tr - 1)
                                   or tr > 1 << MAX_RLOG):
            raise InvalidArgument(f"{name}: knobs gh={gh} grp={grp} ctr={ctr} pf={pf} mad={mad} "
                                  f"out of range (ctr: 0 or 3, ct 0 or 4; pf, hd, tf need gh; "
                                  f"mad=1 fast gh=3; tw, tr: both, powers of two, gh)")
        self.gh, self.grp, self.ctr, self.hd, self.tw, self.tr = gh, grp, ctr, hd, tw, tr
        self.tf = tf
        self.key_len = aead.names[name]
        im = AES_CIPHER.implementation("ct" if self.ct else "fast")
        self.layout = im.key_layout
        self.ls = min(int(ls) or LOCAL_SIZE, backend.local_size)
        if tw > self.ls:
            raise InvalidArgument(f"{name}: knob tw={tw} over the work-group size {self.ls}")
        if self.ls & (self.ls - 1) or self.ls < MIN_W:
            raise DeviceError(f"{name}: work-groups of {self.ls} work-items (need a power of two "
                              f">= {MIN_W})")
        defines = {**AES_CIPHER.defines(self.key_len), **im.defines, "CG_BATCH": im.batch,
                   "GCM_LS": self.ls, "GCM_CT": int(self.ct), "GCM_MIN_W": MIN_W,
                   "GCM_GH": gh, "GCM_GRP": grp, "GCM_CTR": ctr,
                   "GCM_POS_ROLL": roll, "GCM_PF": pf, "GCM_MAD": mad, "GCM_HD": min(hd, 1)}
        if regs:
            defines["CG_MAX_REGS"] = regs
        key = ("aead", "gcm", self.key_len, "ct" if self.ct else "fast", self.ls, gh, grp, ctr,
               roll, pf, mad, regs, min(hd, 1))
        prg = backend.cached_program(key)
        if prg is None:
            src = defines_prefix(defines) + program_source(im.file, "gcm.cl")
            prg = backend.build(src, key=key, local_size=self.ls, max_registers=regs or None)
        if backend.group_size(prg) != self.ls:
            raise DeviceError(f"{name}: the kernels need work-groups of {self.ls} work-items; "
                              f"{backend.info} allows {backend.group_size(prg)}")
        self.prg = prg
        self.tb = 128 if self.ct else 16
        # entries of the positional tables in the key material (gcm.cl GCM_TBP) and the
        # work-group memory copy (GCM_PTAB)
        self.ptab = (grp - 1) * 512 if self.ct else {1: 2304, 2: 512, 3: 2048}.get(gh, 512)
        self.tbp = self.ptab + (128 if self.ct else 0)

    def pos_tiles(self, nb: np.ndarray, target: int) -> tuple[int, int]:
        """(log2 W, log2 R) of gcm_ghash_pos for messages of nb stream blocks (target: its
        resident work-items): the knobs tw, tr where given; else choose_tiles, or with hd=2 the
        least estimated time counted in whole waves, W >= 4 (a warp's loads in whole 64-byte
        runs): the grid is persistent, so a launch of G work-groups of which Gr fit at once
        takes ceil(G / Gr) rounds, each as long as its longest lane (R steps, or the first
        tile's steps with the head), its general multiply (the lane factor) and, without lane
        factors (more than _MAX_NF), lane 0's square-and-multiply of the tile power; on a tie
        the wider W."""
        if self.tw:
            return _bitlen(self.tw) - 1, _bitlen(self.tr) - 1
        g = _POS_GEN_COST[self.ct]
        if self.hd != 2:
            return choose_tiles(nb, self.ls, self.ct, target, gen=g, wmin=0, memo=self.tiles)
        key = ("hd2", int(nb.shape[0]), int(nb.sum()), int(nb.min()), int(nb.max()), self.ls,
               self.ct, target)
        got = self.tiles.get(key)
        if got is not None:
            return got
        ls = self.ls
        resident = max(1, target // ls)
        wmax = _bitlen(ls) - 1
        wmin = min(2, wmax)
        best = None
        for tlog in range(wmin, wmax + MAX_RLOG + 1):
            tiles_m = self.tile_counts(nb, tlog)
            fmax = int((nb - ((tiles_m - 1) << tlog)).max())   # blocks of a first tile
            tiles, max_tiles = int(tiles_m.sum()), int(tiles_m.max())
            ubits = _bitlen(max_tiles - 1)
            for wlog in range(min(wmax, tlog), max(wmin, tlog - MAX_RLOG) - 1, -1):
                rlog = tlog - wlog
                steps = max(1 << rlog if max_tiles > 1 else 0, _ceil_div(fmax, 1 << wlog))
                rounds = _ceil_div(_ceil_div(tiles << wlog, ls), resident)
                tail = wlog + 1
                if (max_tiles << wlog) > _MAX_NF:
                    tail += g if self.tf and max_tiles <= _MAX_TF else g * ubits / 2
                t = rounds * (steps + g + tail)
                if best is None or t < best[0] - 1e-9:
                    best = (t, wlog, rlog)
        got = (best[1], best[2])
        _remember(self.tiles, key, got)
        return got

    def factors(self, max_tiles: int, wlog: int, rlog: int, pos: bool) -> int:
        """gcm_hpow's factor entries, its and gcm_ghash_pos's argument nf: W x max_tiles lane
        factors where at most _MAX_NF; else, with tf (gcm_ghash_pos), max_tiles tile factors
        flagged by _TF_BIT where at most _MAX_TF (and the powers W R u below 2^32: gcm_hpow_n);
        else 0 (no factors)."""
        if not pos:
            return 0
        if (max_tiles << wlog) <= _MAX_NF:
            return max_tiles << wlog
        if self.tf and max_tiles <= _MAX_TF and (max_tiles << (wlog + rlog)) < 1 << 32:
            return max_tiles | _TF_BIT
        return 0

    def tile_counts(self, nb: np.ndarray, tlog: int, pos: bool = True) -> np.ndarray:
        """GHASH tiles of 2^tlog blocks per message: ceil(nb / 2^tlog), or with hd (and
        gcm_ghash_pos) floor, at least 1 (the first tile takes the head)."""
        if self.hd and pos:
            return np.maximum(nb >> tlog, 1)
        return (nb + ((1 << tlog) - 1)) >> tlog

    def derive_shape(self, off, aad_off, pos: bool) -> "GCMShape":
        """The layout-only host work of a job (DeviceAEAD.shape): its lengths checked, the
        counter and GHASH blocks, the counter kernel's coarse index, the GHASH tiles (``pos``:
        gcm_ghash_pos, batches of one key) and the sizes of the key powers."""
        b, ls = self.backend, self.ls
        tlen = np.diff(off).astype(np.int64)
        alen = np.diff(aad_off).astype(np.int64)
        if (tlen < 0).any() or (alen < 0).any():
            raise InvalidArgument("message offsets must not decrease")
        if int(tlen.max()) > self.aead.max_message:
            raise InvalidArgument(f"{self.name} encrypts at most {self.aead.max_message} bytes "
                                  f"per message")
        if int(alen.max()) > self.aead.max_aad:
            raise InvalidArgument(f"{self.name} takes at most {self.aead.max_aad} bytes of AAD")
        m = tlen.shape[0]
        nc = (tlen + 15) // 16
        na = (alen + 15) // 16
        nb = na + nc + 1
        cb_off = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(nc + 1, out=cb_off[1:])
        # the counter kernel's coarse index (gcm.cl gcm_find_hinted): the message holding every
        # 2^8-th counter block
        cb_hint = coarse_index(cb_off, _HINT_SHIFT)
        if pos:
            # gcm_ghash_pos: any W; a general multiply costs ~20 clocks (SM) against ~3 (fast)
            # or ~4 (ct) per table step
            wlog, rlog = self.pos_tiles(nb, b.resident_items(self.prg, "gcm_ghash_pos"))
        else:
            wlog, rlog = choose_tiles(nb, ls, self.ct, b.resident_items(self.prg, "gcm_ghash"),
                                      memo=self.tiles)
        tlog = wlog + rlog
        tiles_m = self.tile_counts(nb, tlog, pos)
        tile_off = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(tiles_m, out=tile_off[1:])
        max_tiles = int(tiles_m.max())
        np2 = max(wlog + 1, tlog + _bitlen(max_tiles - 1))
        if pos and self.ct:
            np2 = max(np2, _bitlen(self.grp << wlog))     # M^G = H^(G W)
        # lane factors H^(W - l + W R u) (gcm.cl gcm_hpow): one multiply per lane and tile instead
        # of a square-and-multiply per tile, where there are few
        nf = self.factors(max_tiles, wlog, rlog, pos)
        if nf and not nf & _TF_BIT:
            np2 = max(np2, _bitlen((1 << wlog) + ((max_tiles - 1) << tlog)))
        tb = self.tbp + (nf & ~_TF_BIT) if pos else self.tb
        return GCMShape(nb=nb, na=na, cb_off=cb_off, cb_hint=cb_hint, tile_off=tile_off,
                        ntiles=int(tile_off[-1]), wlog=wlog, rlog=rlog, np2=np2, nf=nf, tb=tb,
                        hs=np2 + (1 << wlog) + tb,
                        plog=min(_bitlen(max_tiles - 1), _bitlen(ls) - 1))

    def prepare(self, batch, queue=None, **slicing) -> "GCMJob":
        return GCMJob(self, batch, queue, **slicing)


class GCMShape(NamedTuple):
    """What a batch's message layout alone decides for a GCM job (GCMDriver.derive_shape)."""

    nb: np.ndarray          # GHASH blocks per message: AAD, text, the length block
    na: np.ndarray          # AAD blocks per message
    cb_off: np.ndarray      # (m + 1,) counter blocks before each message (J0 first in each)
    cb_hint: np.ndarray     # the counter kernel's coarse message index
    tile_off: np.ndarray    # (m + 1,) GHASH tiles before each message
    ntiles: int
    wlog: int               # log2 W, log2 R: a tile is W lanes of R blocks
    rlog: int
    np2: int                # H^(2^j) for j < np2
    nf: int                 # gcm_hpow's factor entries (and _TF_BIT)
    tb: int                 # table entries per key
    hs: int                 # 16-byte entries of each key's powers and tables
    plog: int               # gcm_tag: log2 work-items per message


#: the staged arrays that the message layout alone decides (Job.stage's ``layout``)
_LAYOUT = ("off", "aad_off", "cb_off", "cb_hint", "tile_off")


class GCMJob(Job):
    """A batch on the device (job.Job); its kernels take any range of the texts (slices),
    cut between messages or inside one on a 16-byte block."""

    ranges = True
    cut_align = 16
    tags_apart = True
    texts_in_place = True     # (gcm_ctr_out writes within each message; gcm_load reads _PAD past)

    def __init__(self, drv: GCMDriver, batch, queue=None, **slicing):
        self.d = drv
        m = batch.count
        if batch.name != drv.name:
            raise InvalidArgument(f"a batch of {batch.name} given to the {drv.name} driver")
        if m:
            drv.aead.check(drv.name, int(batch.keys.shape[1]), int(batch.nonces.shape[1]),
                           batch.tag_length)
        elif batch.tag_length not in drv.aead.tag_lengths:
            drv.aead.check(drv.name, drv.key_len, drv.aead.default_nonce_length, batch.tag_length)
        super().__init__(drv.backend, batch, queue, **slicing)

    def setup(self) -> None:
        drv, batch, b, m = self.d, self.batch, self.b, self.m
        # the texts first: the copy engine starts while the host checks and works out the
        # metadata (a failure below aborts the job: its queue drains, nothing is launched)
        src = flat(texts(batch.src))
        pad = _PAD if isinstance(src, np.ndarray) else self.text_pad()
        self.bufs = {"src": self.upload(src, pad, texts_in=True)}
        self.nkeys = int(batch.keys.shape[0])
        # positional GHASH tables, and the counter pass of one key: batches of one key only
        self.pos = bool(drv.gh) and self.nkeys == 1
        self.ctr_one = bool(drv.ctr) and self.nkeys == 1
        sh = drv.shape(batch, self.pos, small=self.resident)
        self.cb_off, self.tile_off, self.ntiles = sh.cb_off, sh.tile_off, sh.ntiles
        self.nb, self.na = sh.nb, sh.na      # (stream and AAD blocks: cuts in a message)
        self.wlog, self.rlog, self.np2, self.nf = sh.wlog, sh.rlog, sh.np2, sh.nf
        self.tb, self.hs, self.plog = sh.tb, sh.hs, sh.plog
        cb_off, cb_hint, tile_off = sh.cb_off, sh.cb_hint, sh.tile_off
        self.nlen = int(batch.nonces.shape[1])

        # round keys of the distinct keys, on the host (AES.expand), zeroed once the job ends
        words = [AES_CIPHER.expand(bytes(k), False, layout=drv.layout) for k in batch.keys]
        self.ks = int(words[0].size)
        ktab = np.concatenate(words).astype("<u4")
        for w in words:
            w.fill(0)
        # H powers, J0s, E(K, J0)s, partial sums (key material, wiped at once); the tags apart
        # (downloaded after the wipe is enqueued: Job.collect) but in a resident job's scratch
        # (its tag is copied before the wipe: Job.settle)
        work = {"hk": self.nkeys * self.hs * 16, "j0": m * 16, "ej0": m * 16,
                "tile_sum": self.ntiles * 16, **({"tags": m * 16} if self.resident else {})}
        try:
            # the metadata in one upload; AAD and nonces padded for the kernels' whole-word loads
            # (gcm_load)
            B = self.stage({
                "ktab": ktab,
                "aad": np.ascontiguousarray(batch.aad, dtype=np.uint8).reshape(-1),
                "off": np.ascontiguousarray(batch.off, dtype=np.int64),
                "aad_off": np.ascontiguousarray(batch.aad_off, dtype=np.int64),
                "cb_off": cb_off,
                "cb_hint": cb_hint,
                "tile_off": tile_off,
                "key_index": np.ascontiguousarray(batch.key_index, dtype=np.int32),
                "nonces": np.ascontiguousarray(batch.nonces, dtype=np.uint8).reshape(-1),
            }, pads={"aad": _PAD, "nonces": _PAD}, secret=("ktab",),
                layout=(drv, layout_key(batch, self.pos), _LAYOUT), scratch=work)
        finally:
            ktab.fill(0)
        B["src"] = self.bufs["src"]
        self.bufs = B
        B["dst"] = self.output_texts(_nbytes(src), pad)
        if "tags" not in B:
            B["tags"] = b.alloc(m * 16)
        self.texts_out, self.tags_out = B["dst"], B["tags"]

    def text_pad(self) -> int:
        """Bytes the kernels read past the end of device-resident texts: gcm_load's 16-byte
        loads stay inside the 16-byte block of a message's last byte when the message starts
        on a multiple of 16 bytes (one message: at 0; a sealed message's chunks: every one), so
        up to the last block's end; else _PAD."""
        off = self.batch.off
        if self.m == 1 or not (np.asarray(off[:-1]) & 15).any():
            return (-int(off[-1])) % 16
        return _PAD

    def _tiles_before(self, c) -> int:
        """GHASH tiles whose stream blocks all lie before the cut ``c``: every tile of the
        messages before it, and of its message the tiles before byte c.rel of the text (tile k of
        N ends at stream block nb - W R (N - 1 - k); the last, with the length block, never)."""
        t = int(self.tile_off[c.msg])
        if c.rel:
            i = c.msg
            n = int(self.tile_off[i + 1]) - t
            left = int(self.nb[i]) - int(self.na[i]) - c.rel // 16    # stream blocks after c
            t += max(0, n - _ceil_div(left, 1 << (self.wlog + self.rlog)))
        return t

    def launch(self, queue, lo, hi, texts: bool = True, tags: bool = True) -> None:
        """The kernels for the texts between the cuts ``lo`` and ``hi`` (gcm.cl: slices): with
        ``texts`` the key streams of their blocks (and E(K, J0) of the messages whose J0 they
        hold), with ``tags`` the GHASH tiles they complete and the tags of the messages they
        complete; the key's H powers and every message's J0 with the first slice's texts (J0
        needs only the nonces and H: one launch per job, not one per slice)."""
        d, b, B = self.d, self.b, self.bufs
        prg, ls = d.prg, d.ls
        w = 1 << self.wlog
        first, end = lo.msg, hi.msg                  # tags of messages [first, end)
        n = end - first
        mhi = min(self.m, end + 1)                   # (message searches: [first, mhi))
        cb_off = self.cb_off
        ends = [U32(first), U32(mhi)]

        def items(name, n):
            return max(1, min(int(n), b.resident_items(prg, name)))

        prologue = []
        if lo.index == 0 and texts:
            prologue = [
                ("gcm_hkey", items("gcm_hkey", self.nkeys),
                 [B["ktab"], U32(self.ks), B["hk"], U32(self.hs), U32(self.np2), U32(self.nkeys)]),
                ("gcm_hpow", items("gcm_hpow", self.nkeys * (w + self.tb)),
                 [B["hk"], U32(self.hs), U32(self.np2), U32(self.wlog), U32(self.nkeys),
                  U32(self.pos), U32(self.rlog), U32(self.nf)]),
                ("gcm_j0", items("gcm_j0", self.m),
                 [B["nonces"], U32(self.nlen), B["key_index"], B["hk"], U32(self.hs), B["j0"],
                  U32(0), U32(self.m)])]
        # (a slice inside one long message completes no tag, some none of its tiles: no launch
        # without work)
        steps = []
        # the counter blocks (J0 first in each message) or text blocks between the cuts
        glo = int(cb_off[first]) + (1 + lo.rel // 16 if lo.rel else 0)
        ghi = int(cb_off[end]) + (1 + hi.rel // 16 if hi.rel else 0)
        if texts and ghi > glo:
            if self.ctr_one:
                xlo = int(cb_off[first]) - first + lo.rel // 16
                xhi = int(cb_off[end]) - end + hi.rel // 16
                per_item = 32 if d.ct else 16          # gcm.cl: 32 bitsliced blocks; GCM_CTR_T
                # (one tile more: the slice's first tile may start before it, gcm.cl)
                steps.append(("gcm_ctr_one", min(
                    _ceil_div(xhi - xlo + n, per_item * ls) * ls + (ls if xlo else 0),
                    max(ls, b.resident_items(prg, "gcm_ctr_one") // ls * ls)),
                    [B["src"], B["dst"], B["off"], B["cb_off"], B["cb_hint"], B["ktab"], B["j0"],
                     B["ej0"], *ends, U64(xlo), U64(xhi), U32(first), U32(end)]))
            else:
                steps.append(("gcm_ctr", items("gcm_ctr", _ceil_div(ghi - glo, 32 if d.ct else 1)),
                              [B["src"], B["dst"], B["off"], B["cb_off"], B["cb_hint"],
                               B["key_index"], B["ktab"], U32(self.ks), B["j0"], B["ej0"], *ends,
                               U64(glo), U64(ghi)]))
        # the GHASH tiles between the cuts
        tlo, thi = (self._tiles_before(lo), self._tiles_before(hi)) if tags else (0, 0)
        if thi > tlo:
            ghash_txt = B["dst"] if self.batch.encrypt else B["src"]
            tiles = [U64(tlo), U64(thi)]
            if self.pos:
                gh_name = "gcm_ghash_pos"
                ghash = [B["aad"], ghash_txt, B["aad_off"], B["off"], B["tile_off"], B["hk"],
                         U32(self.np2), U32(self.wlog), U32(self.rlog), B["tile_sum"], *ends,
                         *tiles, U32(self.nf)]
            else:
                gh_name = "gcm_ghash"
                ghash = [B["aad"], ghash_txt, B["aad_off"], B["off"], B["tile_off"],
                         B["key_index"], B["hk"], U32(self.hs), U32(self.np2), U32(self.wlog),
                         U32(self.rlog), B["tile_sum"], *ends, *tiles, U32(self.nkeys == 1)]
            groups = _ceil_div(thi - tlo, ls // w)
            steps.append((gh_name, min(groups * ls,
                                       max(ls, b.resident_items(prg, gh_name) // ls * ls)), ghash))
        seq = steps if self.batch.encrypt else steps[::-1]
        if prologue and self.batch.encrypt and self.nlen == 12:
            # J0 of a 12-byte nonce needs no H and the key stream none of H's powers: the key
            # stream is launched before them (the device starts the bulk one host launch after
            # the upload), H's powers before GHASH, which needs them
            k = 1 if seq and seq[0][0].startswith("gcm_ctr") else 0
            seq = prologue[2:] + seq[:k] + prologue[:2] + seq[k:]
        else:
            seq = prologue + seq
        for name, count, args in seq:
            b.launch(prg, name, count, args, queue, record=False)
        if n and tags:
            mpg = ls >> self.plog
            tag_items = min(_ceil_div(n, mpg) * ls,
                            max(ls, b.resident_items(prg, "gcm_tag") // ls * ls))
            b.launch(prg, "gcm_tag", tag_items,
                     [B["tile_sum"], B["tile_off"], B["ej0"], B["tags"], U32(first), U32(end),
                      U32(self.plog)], queue, record=False)
