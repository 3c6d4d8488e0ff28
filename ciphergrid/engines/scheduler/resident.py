"""A GPU-resident message over several CUDA GPUs (``Resident``): the home GPU runs its ranges
where the data are, another copies its range over the peer link in pieces, runs them and copies
them back, overlapped on streams of its own.
"""

from __future__ import annotations

from .units import Bytes

#: GPU-resident data: the smallest range (a range costs a few launches and a synchronization),
#: and the pieces a range on another GPU is copied in, run and copied back in (overlapped)
RESIDENT_GRAIN = 256 << 20
PEER_PIECE = 64 << 20
PEER_SLOTS = 3
#: GPU-resident data: the tail's share (each range costs a synchronization of its GPU: a few
#: large ranges and a short tail beat many small ranges; docs/benchmarks.md, 'Figures moved
#: from code comments')
RESIDENT_TAIL = 0.05


class _DeviceWindow:
    """GPU-resident bytes as ``chain_at`` reads them: a slice comes back as host bytes."""

    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, sl):
        import cupy

        return cupy.asnumpy(self.arr[sl])


class Resident(Bytes):
    """A GPU-resident message (CuPy arrays on the *home* GPU) over several CUDA engines: the home
    engine runs its ranges where the data are; another GPU copies its range over the peer link in
    PEER_PIECE pieces, runs them and copies them back, the three overlapped on streams of its
    own.  Everything is finished when the run returns (ordered after the caller's stream: that
    stream is waited for first)."""

    def __init__(self, session, req, first_block, unit, src, dst):
        #: a piece copied to another GPU (a range is whole pieces: its cuts are on this grid)
        self.step = max(unit, PEER_PIECE // unit * unit)
        super().__init__(session, req, first_block, unit, src, dst)
        self.home = src.device.id

    def _grain_bytes(self) -> int:
        return self.step * max(1, RESIDENT_GRAIN // PEER_PIECE)

    def _chain_every(self) -> int:
        return self.step

    def tail_share(self) -> float:
        return RESIDENT_TAIL

    def _overlap(self) -> bool:
        a0, b0 = self.src.data.ptr, self.src.data.ptr + self.n
        a1, b1 = self.dst.data.ptr, self.dst.data.ptr + self.dst.nbytes
        return a0 < b1 and a1 < b0

    def _readable(self):
        return _DeviceWindow(self.src)

    def _is_home(self, eng) -> bool:
        return eng.backend.dev.id == self.home

    def path(self, eng) -> str:
        return "resident" if self._is_home(eng) else f"peer:cuda:{self.home}"

    def buffer(self, eng, a: int, b: int):
        import cupy

        with eng.backend.dev:
            return cupy.empty(b - a, dtype=cupy.uint8)


    def _at(self, a: int):
        """(first block, chain) of the message's byte ``a`` for the members' sessions."""
        chain = self.chains.get(a) if self.chains is not None else None
        return self.first + a // self.req.block_size, chain

    def run(self, eng, a: int, b: int, out) -> None:
        import cupy

        sess = self.s._member(eng)
        s_in, s_k, s_out = eng.backend.side_streams()
        dev = eng.backend.dev
        if self._is_home(eng):
            target = self.dst[a:b] if out is None else out
            with dev, s_k:
                sess.crypt_resident(self.src[a:b], target, *self._at(a), wait=True)
            return
        # another GPU: pieces copied in, run, copied out (into out, or straight into dst)
        enable_peer(dev.id, self.home)
        step = self.step
        with dev:
            ring = [(cupy.empty(step, dtype=cupy.uint8), cupy.empty(step, dtype=cupy.uint8))
                    for _ in range(PEER_SLOTS)]
            freed = [None] * PEER_SLOTS   # the event after which a ring slot may be reused
            for k, p in enumerate(range(a, b, step)):
                q = min(b, p + step)
                bin_, bout = ring[k % PEER_SLOTS]
                if freed[k % PEER_SLOTS] is not None:
                    s_in.wait_event(freed[k % PEER_SLOTS])
                peer_copy(bin_[: q - p], self.src[p:q], s_in)
                got = s_in.record()
                s_k.wait_event(got)
                with s_k:
                    sess.crypt_resident(bin_[: q - p], bout[: q - p], *self._at(p), wait=False)
                ran = s_k.record()
                s_out.wait_event(ran)
                target = self.dst[p:q] if out is None else out[p - a:q - a]
                peer_copy(target, bout[: q - p], s_out)
                freed[k % PEER_SLOTS] = s_out.record()
            s_out.synchronize()

    def commit(self, a: int, b: int, out) -> None:
        import cupy

        with cupy.cuda.Device(self.home):
            s = cupy.cuda.Stream(non_blocking=True)
            peer_copy(self.dst[a:b], out, s)
            s.synchronize()


def peer_copy(dst, src, stream) -> None:
    """``dst[:] = src`` (contiguous CuPy uint8 arrays, on the same GPU or two) queued on ``stream``."""
    import cupy

    cupy.cuda.runtime.memcpyPeerAsync(dst.data.ptr, dst.device.id, src.data.ptr, src.device.id,
                                      src.nbytes, stream.ptr)


def enable_peer(dev: int, peer: int) -> None:
    """Let GPU ``dev`` read and write GPU ``peer``'s memory directly (NVLink or PCIe peer to peer)
    where the two can; else peer copies go through the host (slower, still right)."""
    import cupy

    rt = cupy.cuda.runtime
    for a, b in ((dev, peer), (peer, dev)):
        if not rt.deviceCanAccessPeer(a, b):
            continue
        with cupy.cuda.Device(a):
            try:
                rt.deviceEnablePeerAccess(b)
            except rt.CUDARuntimeError as e:   # (already enabled: fine)
                if "PeerAccessAlreadyEnabled" not in str(e):
                    raise
