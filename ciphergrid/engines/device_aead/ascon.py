"""Ascon-AEAD128 (NIST SP 800-232, August 2025) on a device: the driver of aeads/ascon.py.

One message is a sponge, serial from its first block to its tag, so one work-item computes one
message and the speed comes from batches (``parallel_message = False``).  On GPUs the kernel
(kernels/ascon.cl) reads and writes each message directly, several 16-byte blocks at a time,
loaded one step ahead (the staged variant, texts through work-group memory for coalesced
accesses, is a knob); see the kernel's header for the design and its knobs.

There is no key schedule: the 16-byte keys are uploaded as they are (a table of the batch's
distinct keys, one index per message) and zeroed on the device when the job finishes.
"""

from __future__ import annotations

import numpy as np

from ...backends.base import defines_prefix, program_source
from ...errors import DeviceError, InvalidArgument
from .driver import DeviceAEAD
from .job import Job, span, texts

U32 = np.uint32
U64 = np.uint64


class AsconDriver(DeviceAEAD):
    """The ``ascon_aead128`` kernel on one device.  Options: ``wg`` (messages per work-group,
    the work-group size), ``tile`` (bytes of each message staged per step, a multiple of 16),
    ``stage`` (True: texts staged through work-group memory; False/None: direct, each work-item
    loads and stores its own message: faster than staged at every message length, on GPUs and
    on PoCL) and ``ahead`` (direct: blocks per step, 1, 2 or 4, loaded and stored together;
    None: 4 on GPUs, 1 on CPUs, where PoCL runs ahead=1 faster).  Figures: docs/benchmarks.md,
    'Figures moved from code comments'.  Large host batches take transfer/batches.py's default
    pieces, on the serial AEADs' kernel queues (DeviceAEAD)."""

    def __init__(self, backend, aead, name, wg: int = 64, tile: int = 128, stage=None,
                 ahead=None):
        gpu = getattr(backend.info, "kind", "gpu") != "cpu"
        if stage is None:
            stage = False
        if ahead is None:
            ahead = 4 if gpu else 1
        super().__init__(backend, aead, name, wg=wg, tile=tile, stage=stage, ahead=ahead)
        if tile % 16 or tile <= 0:
            raise InvalidArgument(f"ascon tile must be a positive multiple of 16, got {tile}")
        if int(ahead) not in (1, 2, 4):
            raise InvalidArgument(f"ascon ahead must be 1, 2 or 4 blocks, got {ahead}")
        self.wg = int(wg)
        self.tile = int(tile)
        self.stage = bool(stage)
        self.ahead = int(ahead)
        key = ("aead", "ascon-aead128", self.wg, self.tile, self.stage, self.ahead)
        prg = backend.cached_program(key)
        if prg is None:
            src = defines_prefix({"ASCON_WG": self.wg, "ASCON_TILE": self.tile,
                                  "ASCON_STAGE": int(self.stage), "ASCON_AHEAD": self.ahead})
            prg = backend.build(src + program_source(None, "ascon.cl"), key=key,
                                local_size=self.wg)
        self.prg = prg
        if backend.group_size(prg) != self.wg:
            raise DeviceError(f"ascon-aead128 needs work-groups of {self.wg} work-items; "
                              f"{backend.info} allows {backend.group_size(prg)}")

    def prepare(self, batch, queue=None, **slicing) -> "AsconJob":
        if batch.count and batch.nonces.shape[1] != 16:
            raise InvalidArgument("ascon-aead128 takes a 16-byte nonce")
        if batch.keys.size and batch.keys.shape[1] != 16:
            raise InvalidArgument("ascon-aead128 takes a 16-byte key")
        if batch.tag_length != 16:
            raise InvalidArgument("ascon-aead128 takes a 16-byte tag")
        return AsconJob(self, batch, queue, **slicing)


class AsconJob(Job):
    """A batch on the device (device_aead.job.Job): one launch per slice (re-runnable: src and dst
    are different buffers); the key table is wiped on the device when the job ends."""

    ranges = True

    def __init__(self, drv: AsconDriver, batch, queue=None, **slicing):
        self.drv = drv
        super().__init__(drv.backend, batch, queue, **slicing)

    def setup(self) -> None:
        batch, b, m = self.batch, self.b, self.m
        self.total = int(batch.off[-1])
        # whole 32-bit words are loaded: 3 bytes (rounded to a word) past the last message
        self.src = self.upload(texts(span(batch.src, 0, self.total)), 8, texts_in=True)
        self.dst = self.texts_out = b.alloc(self.total + 8)
        d = self.stage({
            "off": np.ascontiguousarray(batch.off, dtype=np.int64),
            "keys": np.ascontiguousarray(batch.keys, dtype=np.uint8),
            "key_index": np.ascontiguousarray(batch.key_index, dtype=np.int32),
            "nonces": np.ascontiguousarray(batch.nonces, dtype=np.uint8),
            "aad": np.ascontiguousarray(batch.aad, dtype=np.uint8).reshape(-1),
            "aad_off": np.ascontiguousarray(batch.aad_off, dtype=np.int64),
        }, pads={"aad": 8}, secret=("keys",))
        self.dev = d
        self.secret = [d["keys"]]
        self.tags_out = b.alloc(16 * m)

    def launch(self, queue, lo, hi) -> None:
        d, dev = self.drv, self.dev
        first, end = lo.msg, hi.msg   # (whole messages: no cut_align)
        items = -(-(end - first) // d.wg) * d.wg
        d.backend.launch(d.prg, "ascon_aead128", items,
                         [self.src, self.dst, dev["off"], dev["keys"], dev["key_index"],
                          dev["nonces"], dev["aad"], dev["aad_off"], self.tags_out, U64(first),
                          U64(end), U32(0 if self.batch.encrypt else 1)], queue, record=False)
