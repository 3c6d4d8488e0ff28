"""The host's own time per call on the device path, on any machine: a one-shot call's request
("request"), the request and its keyed program (key schedules, their 'upload': "+keyed"), all of
that with the launch arguments and the wipe ("one-shot"), and a context piece's split request and
launch arguments ("piece"), against a backend whose operations do nothing (what a CUDA
call pays besides CuPy's own calls).  CPU time of this thread, the best of 7 rounds, in us.

    python3 scripts/dev/call_host_time.py [NAME ...]

To compare two trees, run it from each with that tree first on the path (``cd TREE &&
PYTHONPATH=TREE python3 .../call_host_time.py``), alternating.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from ciphergrid.backends.base import Backend, DeviceInfo, Program
from ciphergrid.program import KeyedProgram
from ciphergrid.registry import lookup
from ciphergrid.request import make_request
from ciphergrid.testing.oracle import random_inputs

NAMES = ["aes-128-ctr", "aes-256-ctr", "aes-128-cbc", "aes-128-xts", "camellia-128-ctr",
         "camellia-128-xts", "camellia-256-xts", "seed-ctr", "seed-xts", "clefia-128-ctr",
         "clefia-192-ctr", "clefia-256-ctr", "clefia-256-xts", "cast5-ctr", "misty1-ctr",
         "hight-ctr", "present-80-ctr", "des-ede3-cbc"]
SIZE = 4096


class _Buf:
    def __init__(self, n: int):
        self.nbytes = n


class NullBackend(Backend):
    """A CUDA-like device whose allocations, copies and launches do nothing."""

    upload_copies_pageable = True

    def __init__(self):
        self.info = DeviceInfo("cuda:99", "cuda", "null", "gpu", 132, 1 << 34)
        self._programs: dict = {}
        self.local_size = 256
        self._default = object()

    def cached_program(self, key):
        p = self._programs.get(key)
        if p is None:
            p = self._programs[key] = Program(None, lambda native, name: name)
        return p

    def resident_items(self, program, name):
        return 132 * 2048

    def alloc(self, nbytes):
        return _Buf(nbytes)

    def view(self, buf, offset, nbytes):
        return _Buf(nbytes)

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        return None

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        program.kernel(name)
        return None

    def zero(self, buf, queue=None, *, wait=True):
        pass

    def wait(self, event):
        pass

    def finish(self, queue=None):
        pass

    def marker(self, queue=None):
        return None

    @property
    def default_queue(self):
        return self._default


def best_us(fn, n: int = 100, rounds: int = 7) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.thread_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time_ns() - t) / n / 1000)
    return best


def _launch(kp, req, src, dst, first_block: int, chain=None):
    lay = req.mode.layout(req, SIZE)
    if lay is not None:
        kp.enqueue(src, dst, lay.kernel_blocks, first_block, layout=lay, req=req)
    else:
        kp.enqueue(src, dst, SIZE // req.block_size, first_block,
                   chain=req.mode.chain_at(req, None, 0) if not first_block else chain, req=req)


def row(b, name: str, rng) -> str:
    spec = lookup(name)
    enc = spec.mode.parallel(True)          # (as bench api: CBC decrypting)
    inputs = [random_inputs(name, rng.bytes, SIZE) for _ in range(64)]
    count = [0]

    def request():
        key, iv, opts = inputs[count[0] % 64]
        count[0] += 1
        return make_request(spec, key, iv, enc, opts.get("padding"), opts.get("sector_size"),
                            opts.get("start_sector"), None, True)

    src, dst = _Buf(SIZE), _Buf(SIZE)
    kp = KeyedProgram(b, request(), record=False)

    def one_shot():
        req = request()
        k = KeyedProgram(b, req, record=False)
        _launch(k, req, src, dst, 0)
        k.close(False)

    def piece():          # a context's later piece: its request from block f on, the launch
        count[0] += 1
        first = 256 * (count[0] % 50 + 1)
        chain = bytes(16) if spec.mode.carries else None
        req = kp.req.at(first, chain)
        _launch(kp, req, src, dst, first, chain)

    return (f"{name:18s} {best_us(request):8.1f} {best_us(lambda: KeyedProgram(b, request(), record=False)):8.1f}"
            f" {best_us(one_shot):9.1f} {best_us(piece):9.1f}")


def main(argv: list[str]) -> None:
    warnings.simplefilter("ignore")
    b = NullBackend()
    rng = np.random.default_rng(1)
    print(f"{'cipher':18s} {'request':>8s} {'+keyed':>8s} {'one-shot':>9s} {'piece':>9s}   (us of CPU)")
    for name in argv or NAMES:
        print(row(b, name, rng), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
