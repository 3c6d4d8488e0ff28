"""The pipeline's streams (``Pipeline.stream``): a file or pipe read to its end, its chunks run
through a job, the results written; between two mapped regular files, the pipeline's array path
over the mappings.  The file side is :mod:`ciphergrid.transfer.files`.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import DeviceError, InvalidArgument
from . import files
from .jobs import Chunk
from .pinning import pins_of


class PipelineStreams:
    """``Pipeline``'s stream methods (a base class of it: they use its slots, staging, workers
    and ``_run``)."""

    def _stream_mapped(self, job, inp: np.ndarray, out: np.ndarray, progress, opts) -> int:
        """:meth:`stream` between two mapped regular files (the whole input is known);
        ``opts.mapped_lock`` says which of them to page-lock."""
        n = inp.nbytes
        req = job.req
        if req is None:
            self.copy(inp, out, progress=progress)
            return n
        req.check_length(n)
        if not req.mode.device_runs(req, n):
            raise DeviceError(f"{req.spec.name}: these data units need stealing in every unit, "
                              "which the device kernels do not do (the router sends it to OpenSSL)")
        layout = req.mode.layout(req, n)
        tail = None
        if layout is not None and layout.tail_start < n:  # stealing: the host does the last unit
            tail = req.mode.tail(req, layout, inp[layout.tail_start:].tobytes())
        how = opts.mapped_lock
        lock = (how in ("both", "in"), how in ("both", "out"))
        self.crypt(job.kp, inp, out, layout, req=req, progress=progress, lock=lock)
        if tail:
            out[layout.tail_start: layout.tail_start + len(tail)] = np.frombuffer(tail, np.uint8)
            if progress is not None:
                progress(len(tail))
        return n

    def stream(self, job, src, dst, *, progress=None) -> int:
        """Read ``src`` to its end, run it through ``job``, write ``dst``; returns bytes written.

        ``src``/``dst``: binary file objects or file descriptors.  Regular files are read and
        written at offsets by several threads (preadv/pwrite); pipes in order by one (the file
        side: :mod:`ciphergrid.transfer.files`).  ``job`` is a :class:`CopyJob` or a
        :class:`CipherJob` of a streamable mode (Mode.streams: CTR, ECB and CBC without padding,
        XTS with a sector size).
        """
        req = job.req
        if req is not None and not req.mode.streams(req):
            raise InvalidArgument(f"{req.spec.name} with these options needs the whole message "
                                  "(padding, or one XTS data unit): it does not stream")
        opts = self._opts()
        bs = job.bs
        align = (req.sector_size if req is not None else None) or bs
        cap = max(align, self.chunk_bytes // align * align)
        ends = files.ends(src, dst)
        fd_in, fd_out, size = ends.fd_in, ends.fd_out, ends.size
        reg_in, base_in, reg_out, base_out = ends.reg_in, ends.base_in, ends.reg_out, ends.base_out
        nchunks = -(-size // cap) if size is not None else None
        # A regular output of known size is mapped: the device's results go straight into the
        # page cache (D2H into the mapping when it can be page-locked, else one parallel copy
        # from the pinned slot), with no write() - writes to one file serialise in the kernel.
        out_map = out = out_pins = None
        how = opts.stream_mmap
        if size and reg_out and how != "0":
            out_map, out = files.map_output(fd_out, base_out, size, how)
        if out is not None and reg_in and self.transfer == "register" and how not in ("0", "out"):
            # Both ends are mapped files: the device reads the input's pages and writes the
            # output's directly (both page-locked chunk by chunk, the output's pages faulted in by
            # several threads first), as for arrays in memory: no read(), no staging copy.
            in_map, inp = files.map_input(fd_in, base_in, size)
            if in_map is not None:
                try:
                    done = self._stream_mapped(job, inp, out, progress, opts)
                    del inp
                finally:
                    files.close_map(in_map)
                    del out
                    files.close_map(out_map)
                files.seek_to(dst, fd_out, base_out + done)
                return done
        if out is not None and self.transfer == "register":
            out_pins = pins_of(self.b).view(self.b, out, self.pin_grain or max(cap, opts.pin_grain))
        behind = req is not None and req.mode.reads_behind(req)  # CBC decryption
        state = {"chain": req.iv if behind else None, "done": False, "total": 0}
        self._ensure(cap, job.scratch_bytes(cap // bs))

        def produce(i: int):
            if nchunks is not None and i >= nchunks:
                return None
            if nchunks is None and state["done"]:
                return None
            lo = i * cap
            want = cap if size is None else min(cap, size - lo)
            k = self._staging.take()
            buf = self._staging[k]
            try:
                m = files.read_full(fd_in, memoryview(buf)[:want],
                                    None if size is None else base_in + lo)
            except BaseException:
                self._staging.put(k)
                raise
            if size is not None and m != want:
                self._staging.put(k)
                raise InvalidArgument(f"the input changed size while it was read ({size} bytes "
                                      f"announced, {lo + m} found)")
            last = (i == nchunks - 1) if nchunks is not None else m < cap
            if size is None and last:
                state["done"] = True
            if m == 0:
                self._staging.put(k)
                if last and req is not None:
                    req.check_length(lo)
                return None
            ch = Chunk(i, lo, m, lo // bs, -(-m // bs), last=last)
            ch.bufs.append(k)
            if req is not None and req.mode.whole_blocks and m % bs:
                self._staging.put(k)
                ch.bufs = []
                req.check_length(lo + m)  # raises: a partial block at the end
            if behind:
                if size is None:  # in order (one reader)
                    ch.chain = state["chain"]
                    state["chain"] = bytes(buf[m - bs: m])
                else:
                    ch.chain = req.iv if lo == 0 else os.pread(fd_in, bs, base_in + lo - bs)
                    if len(ch.chain) != bs:
                        raise InvalidArgument("the input changed while it was read")
            elif req is not None and lo == 0:
                ch.chain = req.mode.chain_at(req, None, 0)  # (CBC encryption: the IV)
            if last and req is not None:
                n = lo + m
                req.check_length(n)
                lay = req.mode.layout(req, n)
                if lay is not None and lay.tail_start < n:
                    t = lay.tail_start - lo
                    ch.extra = req.mode.tail(req, lay, bytes(buf[t:m]))
                    ch.nblocks = lay.kernel_blocks - ch.first_block
                    ch.nbytes = ch.nblocks * bs
            ch.src = ch.dst = buf[: ch.nbytes]
            if out is not None:
                hi = lo + ch.nbytes
                if self.transfer == "any" or (out_pins is not None and out_pins.acquire(lo, hi)):
                    ch.dst = out[lo:hi]
                    ch.dst_pins = out_pins
                else:
                    ch.copy_out = True
            return ch

        def finish(ch: Chunk) -> None:
            buf = self._staging[ch.bufs[0]]
            if out is not None:
                lo, hi = ch.lo, ch.lo + ch.nbytes
                if ch.copy_out:
                    np.copyto(out[lo:hi], buf[: ch.nbytes])
                if ch.extra:
                    out[hi: hi + len(ch.extra)] = np.frombuffer(ch.extra, np.uint8)
                return
            if ch.extra:
                buf[ch.nbytes: ch.nbytes + len(ch.extra)] = np.frombuffer(ch.extra, np.uint8)
            total = ch.nbytes + len(ch.extra)
            files.write_all(fd_out, memoryview(buf)[:total], base_out + ch.lo if reg_out else None)

        t = self.threads
        nprep = t if size is not None else 1
        nfin = t if reg_out else 1
        written = 0

        def count(k: int) -> None:
            nonlocal written
            written += k
            if progress is not None:
                progress(k)

        try:
            self._run(job, produce, finish, permits=self.depth + nprep + nfin, nprep=nprep,
                      nfin=nfin, cap=cap, progress=count, abort_wait=0.5)
        finally:
            if out_pins is not None:
                pins_of(self.b).done(out_pins, opts.pin_cache)
            if out_map is not None:
                del out
                files.close_map(out_map)
        if reg_out:
            files.seek_to(dst, fd_out, base_out + written)
        return written
