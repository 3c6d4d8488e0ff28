"""A scheduled run's units of work (the protocol ``Run`` deals: ``n`` units, ``weight(a, b)``,
``cut(a, b, nbytes)``, ``path(eng)``, ``tail_share()``, ``grain``, ``buffer``, ``run``,
``commit``) over the request family's work (request.py): a message's bytes (``Bytes``: ranges on
the mode's grain, each a ``BlockRange`` run through the engine's session of the request) and an
AEAD batch's messages (``Messages``: ranges of whole messages, each a ``MessageRange`` sealed or
opened by the engine).
"""

from __future__ import annotations

import numpy as np

from ...request import BlockRange, MessageRange

#: the share of the bytes handed out as a self-scheduled tail (the rest: by expected speed)
TAIL = 0.15
#: the smallest piece of the tail, and the grain ranges are cut on (bytes; rounded to the unit):
#: a GPU's range is a pipeline of its own, efficient from a few MiB on
GRAIN = 4 << 20


class Bytes:
    """A message's bytes as a run's units: ranges cut on the mode's grain, each run through the
    engine's session of the request (``Request.at``), written into ``out``."""

    def __init__(self, session, req, first_block: int, unit: int, src, dst):
        # req: the message from block first_block on (the members' sessions hold the whole one)
        self.s, self.req, self.first = session, req, first_block
        self.src, self.dst = src.reshape(-1), dst.reshape(-1)
        self.n = self.src.nbytes
        self.grain = max(unit, self._grain_bytes() // unit * unit)
        self.name, self.encrypt = req.spec.name, req.encrypt
        self.in_place = self._overlap()
        self.chains = None
        if req.mode.reads_behind(req):
            # CBC decryption: the ciphertext block before every possible cut, read before any
            # range runs (an in-place run overwrites it)
            bs = req.block_size
            self.chains = {a: req.mode.chain_at(req, self._readable(), a // bs)
                           for a in range(0, self.n, self._chain_every())}

    def _grain_bytes(self) -> int:
        return GRAIN

    def _chain_every(self) -> int:
        """Bytes between the cuts a range may start at (the chaining values read up front)."""
        return self.grain

    def tail_share(self) -> float:
        return TAIL

    def _overlap(self) -> bool:
        return bool(np.may_share_memory(self.src, self.dst))

    def _readable(self):
        """The input as the mode's ``chain_at`` reads it (slices of host bytes)."""
        return self.src

    def path(self, eng) -> str:
        """Where the data lives for ``eng`` (the key of the speeds it is expected to run at)."""
        return "array"

    def weight(self, a: int, b: int) -> int:
        return b - a

    def cut(self, a: int, b: int, nbytes: int) -> int:
        """A cut in (a, b] about ``nbytes`` after a, on the grain (at least one grain)."""
        p = a + max(self.grain, nbytes // self.grain * self.grain)
        return b if b - p < self.grain else p

    def buffer(self, eng, a: int, b: int):
        """Where ``eng`` writes range [a, b) when the run is fenced (committed later)."""
        return np.empty(b - a, dtype=np.uint8)

    def run(self, eng, a: int, b: int, out) -> None:
        out = self.dst[a:b] if out is None else out
        chain = self.chains.get(a) if self.chains is not None else None
        bs = self.req.block_size
        work = BlockRange(self.first + a // bs, -(-(b - a) // bs), chain)
        work.run(self.s._member(eng), self.src[a:b], out)

    def commit(self, a: int, b: int, out) -> None:
        self.dst[a:b] = out


class Messages:
    """An AEAD batch's messages as a run's units (``MessageRange``: whole messages), each
    sealed or opened by the engine itself; the tags (encryption) or the verified mask
    (decryption) gathered in message order."""

    def __init__(self, batch, tags_in, impl):
        self.b, self.tags_in, self.impl = batch, tags_in, impl
        self.grain = GRAIN
        self.n = batch.count
        self.name, self.encrypt = batch.name, batch.encrypt
        self.off = np.asarray(batch.off, dtype=np.int64)
        self.in_place = bool(np.may_share_memory(batch.src, batch.dst))
        self.result = (np.empty((self.n, batch.tag_length), dtype=np.uint8) if batch.encrypt
                       else np.zeros(self.n, dtype=bool))

    def weight(self, a: int, b: int) -> int:
        return int(self.off[b] - self.off[a]) + 64 * (b - a)   # (a message's own work, too)

    def cut(self, a: int, b: int, nbytes: int) -> int:
        """The message boundary in (a, b] about ``nbytes`` after message a (one message at
        least; what is left past it, if under GRAIN, goes too)."""
        target = self.off[a] + max(nbytes, 1)
        p = int(np.searchsorted(self.off, target, side="left"))
        p = min(b, max(a + 1, p))
        return b if self.weight(p, b) < GRAIN else p

    def path(self, eng) -> str:
        return "array"

    def tail_share(self) -> float:
        return TAIL

    def buffer(self, eng, a: int, b: int):
        return np.empty(int(self.off[b] - self.off[a]), dtype=np.uint8)

    def run(self, eng, a: int, b: int, out) -> None:
        tags = None if self.encrypt else self.tags_in[a:b]
        self.result[a:b] = MessageRange(self.b, a, b).run(eng, self.impl, tags, out)

    def commit(self, a: int, b: int, out) -> None:
        self.b.dst[int(self.off[a]):int(self.off[b])] = out
