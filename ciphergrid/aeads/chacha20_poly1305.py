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
from .base import AEAD, DeviceAEAD, Job, Kernel, coarse_index, texts

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
    """Bit length of each (positive, < 2^53) value of an integer array."""
    x = np.asarray(x, dtype=np.uint64)
    n = np.zeros(x.shape, dtype=np.uint64)
    v = x.copy()
    while v.any():
        nz = v != 0
        n[nz] += 1
        v >>= np.uint64(1)
    return n


class ChaChaJob(Job):
    """A batch's buffers on one device (see ChaChaDriver.prepare)."""

    def __init__(self, drv: "ChaChaDriver", batch):
        b = drv.backend
        self.drv, self.batch, self.b = drv, batch, b
        m = batch.count
        self.m = m
        lens = np.diff(batch.off).astype(np.uint64)
        alens = np.diff(batch.aad_off).astype(np.uint64)
        # ChaCha20: block 0 (the Poly1305 key) + ceil(len / 64) blocks per message
        self.blk_off = _prefix(1 + (lens + 63) // 64)
        # Poly1305: n blocks, w = ceil(n / C) work-items per message
        n = (alens + 15) // 16 + (lens + 15) // 16 + 1
        c = np.uint64(drv.poly_blocks)
        w = (n + c - 1) // c
        self.poly_off = _prefix(w)
        self.pow_off = _prefix(1 + _bit_length(w))
        # the sum levels: while a message has more than fanin shares, fanin per work-item
        self.levels = []
        cnt, fan = w, np.uint64(drv.fanin)
        while cnt.max() > fan:
            cnt = (cnt + fan - 1) // fan
            self.levels.append(_prefix(cnt))
        self.levels.append(np.arange(m + 1, dtype=np.uint64))

        def up(arr):
            arr = texts(arr, arr.dtype)
            buf = b.alloc(arr.nbytes)
            if arr.nbytes:
                b.upload(buf, arr.view(np.uint8).reshape(-1))
            return buf, arr

        self._keep = []   # host arrays the non-blocking uploads read

        def upk(arr):
            buf, a = up(arr)
            self._keep.append(a)
            return buf

        total = int(batch.off[-1])
        self.src = upk(batch.src[:total])
        self.dst = b.alloc(total)
        self.aad = upk(batch.aad[:int(batch.aad_off[-1])])
        self.off = upk(batch.off.astype(np.uint64))
        self.aad_off = upk(batch.aad_off.astype(np.uint64))
        self.blk_buf = upk(self.blk_off)
        self.blk_hint = upk(coarse_index(self.blk_off, _BLK_HINT_SHIFT))
        self.poly_buf = upk(self.poly_off)
        self.poly_hint = upk(coarse_index(self.poly_off, _POLY_HINT_SHIFT))
        self.pow_buf = upk(self.pow_off)
        self.level_bufs = [upk(lv) for lv in self.levels]
        key_words = np.ascontiguousarray(batch.keys, dtype=np.uint8).view("<u4").astype(U32)
        self.keys = upk(key_words)
        self.key_index = upk(batch.key_index.astype(U32))
        self.nonces = upk(np.ascontiguousarray(batch.nonces, dtype=np.uint8).view("<u4").astype(U32))
        self.polykey = b.alloc(32 * m)
        self.powers = b.alloc(20 * int(self.pow_off[-1]))
        self.n_items = int(self.poly_off[-1])
        sizes = [self.n_items] + [int(lv[-1]) for lv in self.levels[:-1]]
        self.sums = [b.alloc(20 * s) for s in sizes]
        self.tags = b.alloc(16 * m)
        b.finish()
        key_words.fill(0)   # the host copy of the key words
        self._keep.clear()
        self.queue = None

    def enqueue(self, queue=None) -> None:
        if self.m == 0:
            return
        b, prg, m = self.b, self.drv.prg, U32(self.m)
        self.queue = queue
        encrypt = self.batch.encrypt
        nblk = int(self.blk_off[-1])
        b.launch(prg, "chacha_xor", nblk,
                 [self.src, self.dst, self.off, self.blk_buf, self.blk_hint, U32(_BLK_HINT_SHIFT),
                  self.keys, self.key_index,
                  self.nonces, self.polykey, m, U64(nblk)], queue)
        b.launch(prg, "chacha_powers", self.m,
                 [self.polykey, self.poly_buf, self.pow_buf, self.powers, m], queue)
        # Poly1305 over the ciphertext: the output when encrypting, the input when decrypting
        text = self.dst if encrypt else self.src
        b.launch(prg, "chacha_poly", self.n_items,
                 [text, self.aad, self.off, self.aad_off, self.poly_buf, self.poly_hint,
                  U32(_POLY_HINT_SHIFT), self.pow_buf,
                  self.powers, self.sums[0], m, U64(self.n_items)], queue)
        in_off = self.poly_buf
        for k, lv in enumerate(self.levels):
            last = k == len(self.levels) - 1
            items = int(lv[-1])
            out = self.tags if last else self.sums[k + 1]
            b.launch(prg, "chacha_psum", items,
                     [self.sums[k], U64(int(self.sums_items(k))), in_off, out,
                      self.level_bufs[k], self.polykey, self.tags, U32(last), m, U64(items)],
                     queue)
            in_off = self.level_bufs[k]

    def sums_items(self, k: int) -> int:
        return self.n_items if k == 0 else int(self.levels[k - 1][-1])

    def finish(self) -> np.ndarray:
        b, m = self.b, self.m
        tags = np.zeros((m, 16), dtype=np.uint8)
        try:
            if m:
                b.finish(self.queue)
                total = int(self.batch.off[-1])
                if total:
                    b.download(self.batch.dst[:total], self.dst)
                b.download(tags.reshape(-1), self.tags)
                b.finish()
        finally:
            for buf in (self.keys, self.polykey, self.powers, *self.sums):
                b.zero(buf, wait=False)
            b.finish()
        return tags[:, :self.batch.tag_length]


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

    def prepare(self, batch) -> ChaChaJob:
        return ChaChaJob(self, batch)


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
