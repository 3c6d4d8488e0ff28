"""ChaCha20-Poly1305 (RFC 8439): the declaration and the device driver.

The kernels (kernels/chacha20_poly1305.cl) run a whole batch in a fixed number of launches:
``chacha_xor`` (every ChaCha20 block of every message, the Poly1305 keys from block 0),
``chacha_powers`` (the powers of r each message needs), ``chacha_poly`` (Poly1305 striped over
``ceil(n / poly_blocks)`` work-items per message of n 16-byte blocks) and one or more
``chacha_psum`` levels (sums of the shares, ``fanin`` per work-item; the last writes the tags).
The host only turns the lengths into prefix sums (numpy); it never loops over the data.
"""

from __future__ import annotations

import numpy as np

from ..backends.base import defines_prefix, program_source
from .base import AEAD, DeviceAEAD, Job, Kernel, texts
from .plan import ABS, HINT, PREFIX, ROWS, Holder, PieceMeta, Plan

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


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of each (non-negative, < 2^53) value of an integer array."""
    _, e = np.frexp(np.asarray(x, dtype=np.float64))
    return e.astype(np.uint64)


class ChaChaPlan(Plan):
    """The pieces of one batch (aeads/plan.py): the lengths' prefix sums and every per-message
    array worked out and uploaded once (``ensure``, from the first piece's setup, after its
    texts' upload is enqueued); each piece's arrays made on the device (PieceMeta)."""

    def __init__(self, drv, batch, bounds):
        super().__init__(drv, batch, bounds)
        self.meta = None
        self.hold = Holder(drv.backend)

    def prepare(self, piece, a: int, b: int, queue=None) -> "ChaChaJob":
        return ChaChaJob(self.driver, piece, queue, plan=self, rng=(a, b))

    def ensure(self, queue) -> None:
        if self.meta is not None:
            return
        drv, batch = self.driver, self.batch
        m = batch.count
        off = np.ascontiguousarray(batch.off, dtype=np.uint64)
        aad_off = np.ascontiguousarray(batch.aad_off, dtype=np.uint64)
        lens = np.diff(off)
        alens = np.diff(aad_off)
        # ChaCha20: block 0 (the Poly1305 key) + ceil(len / 64) blocks per message
        self.blk = _prefix(1 + (lens + 63) // 64)
        # Poly1305: n blocks, w = ceil(n / C) work-items per message
        n = (alens + 15) // 16 + (lens + 15) // 16 + 1
        c = np.uint64(drv.poly_blocks)
        w = (n + c - 1) // c
        self.poly = _prefix(w)
        self.pow = _prefix(1 + _bit_length(w))
        # the sum levels: while a message has more than fanin shares, fanin per work-item (a
        # piece whose messages need fewer passes its sums through the extra levels)
        self.levels = []
        cnt, fan = w, np.uint64(drv.fanin)
        while m and cnt.max() > fan:
            cnt = (cnt + fan - 1) // fan
            self.levels.append(_prefix(cnt))
        self.levels.append(np.arange(m + 1, dtype=np.uint64))
        key_words = np.ascontiguousarray(batch.keys, dtype=np.uint8).view("<u4").astype(U32)
        arrays = {
            "keys": key_words,
            "aad": np.ascontiguousarray(batch.aad[:int(aad_off[-1])], dtype=np.uint8),
            "off": off, "aad_off": aad_off, "blk": self.blk, "poly": self.poly, "pow": self.pow,
            "key_index": np.ascontiguousarray(batch.key_index, dtype=U32),
            "nonces": np.ascontiguousarray(batch.nonces, dtype=np.uint8).view("<u4").astype(U32),
        }
        ops = [("off", PREFIX, "off", 0), ("aad_off", ABS, "aad_off", 0),
               ("blk", PREFIX, "blk", 0), ("blk_hint", HINT, "blk", _BLK_HINT_SHIFT),
               ("poly", PREFIX, "poly", 0), ("poly_hint", HINT, "poly", _POLY_HINT_SHIFT),
               ("pow", PREFIX, "pow", 0), ("key_index", ROWS, "key_index", 4),
               ("nonces", ROWS, "nonces", 12)]
        for k, lv in enumerate(self.levels):
            arrays[f"level{k}"] = lv
            ops.append((f"level{k}", PREFIX, f"level{k}", 0))
        try:
            self.meta = PieceMeta(drv.backend, queue, self.hold, arrays, ops, self.bounds,
                                  secret=("keys",), shared=("keys", "aad"))
        finally:
            key_words.fill(0)   # (the staging copy is wiped when the batch ends)
        self.hold.secret.append(self.meta.whole["keys"])

    def release(self) -> None:
        self.hold.wipe()


class ChaChaJob(Job):
    """Messages [a, b) of a plan's batch (``plan``, ``rng``), or a batch of its own (its own
    plan of one piece)."""

    def __init__(self, drv: "ChaChaDriver", batch, queue=None, plan: ChaChaPlan | None = None,
                 rng: tuple | None = None):
        self.drv = drv
        self.own = plan is None
        self.plan = ChaChaPlan(drv, batch, [0, batch.count]) if plan is None else plan
        self.rng = (0, batch.count) if rng is None else rng
        super().__init__(drv.backend, batch, queue)

    def setup(self) -> None:
        batch, b, m, P = self.batch, self.b, self.m, self.plan
        total = int(batch.off[-1])
        # the texts first: the copy engine starts while the host works out the metadata
        self.src = self.upload(texts(batch.src[:total]))
        P.ensure(self.queue)
        a, e = self.rng
        self._meta, dev = P.meta.piece(a, e)
        self._hold.append(self._meta)
        self.dev = dev
        self.keys = dev["keys"]
        self.level_bufs = [dev[f"level{k}"] for k in range(len(P.levels))]
        self.dst = self.texts_out = b.alloc(total)
        self.nblk = int(P.blk[e]) - int(P.blk[a])
        self.n_items = int(P.poly[e]) - int(P.poly[a])
        self.level_items = [int(lv[e]) - int(lv[a]) for lv in P.levels]
        sizes = [self.n_items] + self.level_items[:-1]
        # Poly1305 keys, powers of r and shares (key material, wiped at once); the tags apart
        # (downloaded after the wipe is enqueued: Job.collect)
        work, v = self.scratch({"polykey": 32 * m,
                                "powers": 20 * (int(P.pow[e]) - int(P.pow[a])),
                                **{f"sums{k}": 20 * n for k, n in enumerate(sizes)}})
        self.polykey, self.powers = v["polykey"], v["powers"]
        self.tags_out = b.alloc(16 * m)
        self.sums = [v[f"sums{k}"] for k in range(len(sizes))]
        self.secret = [work] + (P.hold.secret if self.own else [])

    def release(self) -> None:
        super().release()
        if self.own:   # (its key material on the device is zeroed with the job's: collect)
            self.plan.hold.wipe(device=False)

    def launch(self, queue) -> None:
        b, prg, m, d = self.b, self.drv.prg, U32(self.m), self.dev
        encrypt = self.batch.encrypt
        self.plan.meta.fill(self._meta, *self.rng, queue)
        nblk = self.nblk
        b.launch(prg, "chacha_xor", nblk,
                 [self.src, self.dst, d["off"], d["blk"], d["blk_hint"], U32(_BLK_HINT_SHIFT),
                  self.keys, d["key_index"],
                  d["nonces"], self.polykey, m, U64(nblk)], queue, record=False)
        b.launch(prg, "chacha_powers", self.m,
                 [self.polykey, d["poly"], d["pow"], self.powers, m], queue, record=False)
        # Poly1305 over the ciphertext: the output when encrypting, the input when decrypting
        text = self.dst if encrypt else self.src
        b.launch(prg, "chacha_poly", self.n_items,
                 [text, d["aad"], d["off"], d["aad_off"], d["poly"], d["poly_hint"],
                  U32(_POLY_HINT_SHIFT), d["pow"],
                  self.powers, self.sums[0], m, U64(self.n_items)], queue, record=False)
        in_off = d["poly"]
        for k, items in enumerate(self.level_items):
            last = k == len(self.level_items) - 1
            out = self.tags_out if last else self.sums[k + 1]
            b.launch(prg, "chacha_psum", items,
                     [self.sums[k], U64(self.sums_items(k)), in_off, out,
                      self.level_bufs[k], self.polykey, self.tags_out, U32(last), m, U64(items)],
                     queue, record=False)
            in_off = self.level_bufs[k]

    def sums_items(self, k: int) -> int:
        return self.n_items if k == 0 else self.level_items[k - 1]


class ChaChaDriver(DeviceAEAD):
    """The ChaCha20-Poly1305 kernels on one device.

    Options (Kernel.options / knobs): ``poly_blocks`` 16-byte Poly1305 blocks per work-item
    (a message of n blocks gets ceil(n / poly_blocks) work-items; default 256 = 4 KiB),
    ``fanin`` shares summed per work-item and level (default 64)."""

    def __init__(self, backend, aead, name, poly_blocks: int = 256, fanin: int = 64, **options):
        super().__init__(backend, aead, name, **options)
        self.poly_blocks = int(poly_blocks)
        self.fanin = int(fanin)
        if self.poly_blocks < 1 or self.fanin < 2:
            raise ValueError("poly_blocks >= 1 and fanin >= 2")
        defines = {"CHACHA_POLY_BLOCKS": self.poly_blocks, "CHACHA_FANIN": self.fanin}
        key = ("aead", "chacha20-poly1305", self.poly_blocks, self.fanin)
        self.prg = backend.cached_program(key) or backend.build(
            defines_prefix(defines) + program_source(None, _FILE), key=key)

    def prepare(self, batch, queue=None) -> ChaChaJob:
        return ChaChaJob(self, batch, queue)

    def plan(self, batch, bounds) -> ChaChaPlan:
        return ChaChaPlan(self, batch, bounds)


class ChaCha20Poly1305(AEAD):
    family = "chacha20-poly1305"
    names = {"chacha20-poly1305": 32}
    nonce_lengths = (12,)
    default_nonce_length = 12
    tag_lengths = (16,)
    default_tag_length = 16
    #: the 32-bit block counter: 2^32 - 1 blocks of 64 bytes (RFC 8439 §2.8)
    max_message = (1 << 38) - 64
    #: the AAD length is a 64-bit field (le64 in the Poly1305 input)
    max_aad = (1 << 64) - 1
    parallel_message = True
    implementations = {"fast": Kernel(ChaChaDriver, constant_time=True)}
    openssl = {"chacha20-poly1305": "ChaCha20Poly1305"}


CIPHER = ChaCha20Poly1305()
