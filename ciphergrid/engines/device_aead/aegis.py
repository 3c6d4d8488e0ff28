"""AEGIS-128L (draft-irtf-cfrg-aegis-aead-18) on a device: the driver of aeads/aegis.py.

AEGIS is serial within a message, so the device kernel runs one message per work-item and gets
its speed from batches (kernels/aegis128l.cl: the design, the knobs and why it is not
constant-time).  OpenSSL has no AEGIS: there is no ``openssl`` engine entry.
"""

from __future__ import annotations

import numpy as np

from ...backends.base import defines_prefix, program_source
from ...errors import DeviceError
from .driver import DeviceAEAD
from .job import Job, _nbytes, flat, texts

#: bytes past the end of the text and AAD buffers that the kernel's word loads may read
_PAD = 8


def _padded_size(n: int) -> int:
    """Bytes of a device buffer for ``n`` bytes of text or AAD: up to a multiple of 4, at least
    _PAD more (zeroed before the upload)."""
    return (n + _PAD + 3) // 4 * 4


class AegisJob(Job):
    """A batch on the device (device_aead.job.Job): one launch of ``prg`` (None: the driver's) per
    slice."""

    ranges = True

    def __init__(self, drv: "AegisDriver", batch, prg=None, queue=None, **slicing):
        self.d = drv
        self.prg = prg
        self.tag_width = batch.tag_length
        super().__init__(drv.backend, batch, queue, **slicing)

    def setup(self) -> None:
        batch, b = self.batch, self.b
        self.tag_words = batch.tag_length // 4
        aad = np.ascontiguousarray(batch.aad, dtype=np.uint8).reshape(-1)
        src = flat(texts(batch.src))
        n = _nbytes(src)
        # the texts first, straight from the caller's buffers (page-locked by
        # transfer/batches.py for large batches), into a device buffer with the zeroed slack the
        # word loads read; then the metadata in one upload, the AAD with the same slack
        text = self.upload(src, _padded_size(n) - n, zero_pad=True,
                           texts_in=True)
        self.buf = self.stage({
            "keys": np.ascontiguousarray(batch.keys, dtype=np.uint8),
            "key_index": np.ascontiguousarray(batch.key_index, dtype=np.int32),
            "nonces": np.ascontiguousarray(batch.nonces, dtype=np.uint8),
            "aad": aad,
            "aad_off": np.ascontiguousarray(batch.aad_off, dtype=np.int64),
            "off": np.ascontiguousarray(batch.off, dtype=np.int64),
        }, pads={"aad": _padded_size(aad.nbytes) - aad.nbytes}, secret=("keys",))
        self.secret = [self.buf["keys"]]
        self.buf["src"] = text
        self.buf["dst"] = self.texts_out = b.alloc(_padded_size(n))
        self.buf["tags"] = self.tags_out = b.alloc(self.m * batch.tag_length)

    def launch(self, queue, lo, hi) -> None:
        bf = self.buf
        first, end = lo.msg, hi.msg   # (whole messages: no cut_align)
        self.b.launch(self.prg or self.d.prg, "aegis128l_batch", end - first,
                      [bf["keys"], bf["key_index"], bf["nonces"], bf["aad"], bf["aad_off"],
                       bf["src"], bf["dst"], bf["off"], bf["tags"], np.uint32(first),
                       np.uint32(end),
                       np.uint32(0 if self.batch.encrypt else 1), np.uint32(self.tag_words),
                       np.uint32(self.d.stride)], queue, record=False)


def source(defines: dict) -> str:
    """The kernel source: aes.cl first, for its T-table AES_T0 (AES_ROUNDS: aes.cl needs one; its
    own functions go unused), then aegis128l.cl."""
    return defines_prefix({"AES_ROUNDS": 10, **defines}) + program_source("aes.cl", "aegis128l.cl")


def byte_misaligned(off) -> bool:
    """Whether a text starts at an offset that is not a multiple of 4 (the direct kernel would
    store its blocks byte by byte)."""
    return bool(np.any(np.asarray(off, dtype=np.int64)[:-1] & 3))


#: CUDA's limit on static work-group (shared) memory per work-group
_LOCAL_LIMIT = 48 * 1024


def local_bytes(group: int, stage: int, tile_blocks: int, copies: int, tables: int,
                table_local: bool) -> int:
    """Work-group memory of the kernel with these knobs (bytes)."""
    n = 4 * 256 * copies * tables if table_local else 0
    if stage:
        n += group * 4 * (8 * tile_blocks + 1) + 16 * group
    return n


#: GPUs, stage None: batches of texts this long on average take the pipelined staging (its
#: coalesced copies win over the direct kernel's per-message accesses for longer texts, lose
#: for short ones: docs/benchmarks.md, 'Figures moved from code comments')
STAGE2_MIN_MEAN = 1024


class AegisDriver(DeviceAEAD):
    """The AEGIS-128L kernel on one device; options are the kernel's knobs (integers):
    ``group`` (messages per work-group, capped by the device); ``stage`` (0: each work-item
    loads and stores its own message, 16 bytes at a time, one block ahead; None (the default):
    0, and on GPUs 2 for a batch with a text at an offset that is not a multiple of 4 or with
    texts of STAGE2_MIN_MEAN bytes or more on average; 1: the work-group
    stages tiles of ``tile_blocks`` blocks per message through work-group memory; 2: the same
    with the next tile's loads issued before the tile is computed);
    ``copies`` and ``tables`` (the T-table in work-group memory: ``copies`` per-bank copies of
    T0, or with ``tables=2`` of T0 and T1 = T0 rotated, one rotation per column instead of three);
    ``mulhi`` (NVIDIA: the top byte by a high multiply on the FMA pipe); ``unroll`` (stage 0:
    blocks per iteration of the block loop; 2 saves the register moves that carry the state
    around the loop, for more registers); ``min_blocks`` (CUDA:
    launch bounds for that many work-groups per SM, 0: none); ``table_local`` (None: in
    work-group memory on GPUs, the constant table on CPU devices)."""

    def __init__(self, backend, aead, name, group: int = 128, stage: int | None = None, tile_blocks: int = 1,
                 copies: int = 32, tables: int = 1, mulhi: int = 1, unroll: int = 1,
                 min_blocks: int = 0, table_local: bool | None = None, **options):
        super().__init__(backend, aead, name, group=group, stage=stage, tile_blocks=tile_blocks,
                         copies=copies, tables=tables, mulhi=mulhi, unroll=unroll, min_blocks=min_blocks,
                         table_local=table_local, **options)
        if table_local is None:
            table_local = backend.info.kind != "cpu"
        table_local = bool(table_local)
        group = min(int(group), int(backend.local_size))
        copies = min(int(copies), group)
        if copies < 1 or copies & (copies - 1):
            raise DeviceError("aegis: copies must be a power of two")
        if int(tables) not in (1, 2):
            raise DeviceError("aegis: tables must be 1 or 2")
        if not table_local:
            copies, tables = 1, 1
        cpu = backend.info.kind == "cpu"
        #: stage None: the direct kernel, and on GPUs the pipelined staging for batches with a
        #: text at an offset that is not a multiple of 4 (byte stores would cost the direct one)
        self.auto = stage is None
        stage = 0 if stage is None else int(stage)
        if stage not in (0, 1, 2):
            raise DeviceError("aegis: stage must be 0, 1 or 2")
        self.group = group
        #: the table's bytes per entry, a kernel argument (not a define) so that the compiler
        #: makes a lookup address one multiply-add
        self.stride = 4 * copies * int(tables)
        self._defines = {"AEGIS_GROUP": group, "AEGIS_TILE_BLOCKS": int(tile_blocks),
                         "AEGIS_COPIES": copies, "AEGIS_TABLES": int(tables),
                         "AEGIS_MULHI": int(bool(mulhi)), "AEGIS_UNROLL": max(1, int(unroll)),
                         "AEGIS_TABLE_LOCAL": int(table_local), "CG_LOCAL_SIZE": group}
        if int(min_blocks) > 0:
            self._defines["CG_MIN_BLOCKS"] = int(min_blocks)
        self._cpu = cpu
        self._programs: dict = {}
        self.prg = self._program(stage)
        #: the pipelined staging for batches with a text at an offset that is not a multiple of
        #: 4 or of long texts (None: self.prg for every batch); built now, so that a first such
        #: batch does not wait for it
        self.staged_prg = None
        if self.auto and not cpu:
            try:
                self.staged_prg = self._program(2)
            except DeviceError:       # its tile does not fit beside the table: the direct one
                self.staged_prg = None

    def _program(self, stage: int):
        """The program of one memory-access kernel (built once)."""
        if stage == 2 and self._cpu:
            # PoCL 3.0's optimizer miscomputes the pipelined staging (docs/ciphers/aegis-128l.md);
            # a CPU has no load latency for it to hide
            stage = 1
        if stage in self._programs:
            return self._programs[stage]
        d = self._defines
        need = local_bytes(self.group, stage, d["AEGIS_TILE_BLOCKS"], d["AEGIS_COPIES"],
                           d["AEGIS_TABLES"], bool(d["AEGIS_TABLE_LOCAL"]))
        if need > _LOCAL_LIMIT:
            raise DeviceError(f"aegis: {need} bytes of work-group memory (at most {_LOCAL_LIMIT})")
        defines = {**d, "AEGIS_STAGE": stage}
        key = ("aead", "aegis-128l", tuple(sorted(defines.items())))
        backend = self.backend
        prg = backend.cached_program(key)
        if prg is None:
            prg = backend.build(source(defines), key=key, local_size=self.group)
        if backend.group_size(prg) != self.group:
            raise DeviceError(f"aegis-128l needs work-groups of {self.group} work-items; "
                              f"{backend.info} gives {backend.group_size(prg)}")
        self._programs[stage] = prg
        return prg

    def prepare(self, batch, queue=None, **slicing) -> Job:
        if batch.nonces.shape[1:] != (16,) and batch.count:
            raise DeviceError("aegis-128l: nonces of 16 bytes")
        if batch.tag_length not in (16, 32):
            raise DeviceError("aegis-128l: tags of 16 or 32 bytes")
        prg = None
        if self.staged_prg is not None and batch.count and (
                byte_misaligned(batch.off) or int(batch.off[-1]) >= STAGE2_MIN_MEAN * batch.count):
            prg = self.staged_prg
        return AegisJob(self, batch, prg, queue, **slicing)
