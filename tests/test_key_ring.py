"""The key ring (program.KeyRing): a backend's keyed programs upload their key schedules into
buffers reused from program to program instead of one allocation each, and no key stays in a
buffer after its program: a buffer goes back to the ring only once its zeroing is queued, is
taken again only behind that zeroing (the same queue, or any once the queue was waited for), and
one whose zeroing failed is never reused."""

from __future__ import annotations

import numpy as np

import ciphergrid
from ciphergrid.backends.base import Backend, DeviceInfo, Program
from ciphergrid.program import KeyedProgram, key_ring
from ciphergrid.registry import lookup
from ciphergrid.request import make_request
from conftest import absent_spec


class Buf:
    def __init__(self, n: int):
        self.nbytes = n
        self.data = bytearray(n)


class Recording(Backend):
    """A CUDA-like device: buffers are host bytes, uploads copy at once, zeroing clears them;
    every operation is logged as (name, buffer id, queue)."""

    upload_copies_pageable = True
    view_align = 256

    def __init__(self):
        self.info = DeviceInfo(absent_spec("cuda"), "cuda", "recording", "gpu", 1, 1 << 30)
        self.log: list = []
        self._default = object()
        self._programs: dict = {}
        self.fail_zero = False

    def cached_program(self, key):
        return self._programs.setdefault(key, Program(None, lambda native, name: name))

    def alloc(self, nbytes):
        b = Buf(nbytes)
        self.log.append(("alloc", id(b), None))
        return b

    def upload(self, buf, host, queue=None, *, offset=0, wait_for=None, record=True):
        data = np.asarray(host).view(np.uint8).tobytes()
        buf.data[offset: offset + len(data)] = data
        self.log.append(("upload", id(buf), queue))

    def zero(self, buf, queue=None, *, wait=True):
        if self.fail_zero:
            raise RuntimeError("zeroing failed")
        buf.data[:] = bytes(buf.nbytes)
        self.log.append(("zero", id(buf), queue))

    def view(self, buf, offset, nbytes):
        return (buf, offset, nbytes)

    def wait(self, event):
        pass

    def finish(self, queue=None):
        self.log.append(("finish", None, queue))

    def launch(self, program, name, items, args, queue=None, *, wait_for=None, record=True):
        self.log.append(("launch", name, queue))

    @property
    def default_queue(self):
        return self._default


def _req(name="aes-128-ctr", key=bytes(range(16))):
    spec = lookup(name)
    return make_request(spec, key, bytes(16), True)


def _key_buffer(kp):
    return kp.rk[0]


def test_reused_on_the_same_queue_behind_its_zeroing():
    b = Recording()
    s, t = object(), object()
    kp = KeyedProgram(b, _req(), queue=s, record=False)
    buf = _key_buffer(kp)
    assert any(buf.data) and buf.nbytes >= 176
    kp.close(False)                       # (queued on s, not waited for)
    assert not any(buf.data)              # zeroed before it went back
    assert b.log[-1] == ("zero", id(buf), s)
    again = KeyedProgram(b, _req(key=bytes(16 * [7])), queue=s, record=False)
    assert _key_buffer(again) is buf      # the same queue: behind the zeroing
    other = KeyedProgram(b, _req(), queue=t, record=False)
    assert _key_buffer(other) is not buf  # another queue: not before the zeroing has run
    assert [op[0] for op in b.log].count("alloc") == 2
    again.close(False)
    other.close(False)


def test_any_queue_once_waited_for():
    b = Recording()
    kp = KeyedProgram(b, _req(), queue=object(), record=False)
    buf = _key_buffer(kp)
    kp.close(True)
    assert b.log[-1][0] == "finish" and not any(buf.data)
    assert _key_buffer(KeyedProgram(b, _req(), queue=object(), record=False)) is buf


def test_a_buffer_whose_zeroing_failed_is_never_reused():
    b = Recording()
    s = object()
    kp = KeyedProgram(b, _req(), queue=s, record=False)
    buf = _key_buffer(kp)
    b.fail_zero = True
    kp.close(False)
    b.fail_zero = False
    assert key_ring(b).free == []
    assert _key_buffer(KeyedProgram(b, _req(), queue=s, record=False)) is not buf


def test_xts_schedules_share_one_buffer_and_the_ring_is_bounded():
    b = Recording()
    s = object()
    progs = [KeyedProgram(b, _req("aes-128-xts", bytes(range(32))), queue=s, record=False)
             for _ in range(12)]
    assert len({id(p._slots[0][0]) for p in progs}) == 12
    bufs = [p._slots[0][0] for p in progs]
    for p in progs:
        assert len(p._slots) == 1 and p.rk[0] is not None
        p.close(False)
    ring = key_ring(b)
    assert [buf for _, buf, *_ in ring.free] == bufs[-ring.SLOTS:]   # the latest given back


def test_one_shots_through_the_ring_match_openssl(cpu_device):
    """Calls on the OpenCL CPU device, each with its own key, reusing the ring's buffers: each
    output is OpenSSL's."""
    rng = np.random.default_rng(50)
    data = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    for name in ("aes-128-ctr", "aes-256-xts", "camellia-128-cbc"):
        for _ in range(3):
            key = rng.bytes(lookup(name).key_lens[0])
            iv = rng.bytes(16)
            want = ciphergrid.encrypt(data, name, key, iv, device="native")
            assert ciphergrid.encrypt(data, name, key, iv, device=cpu_device) == want
            assert ciphergrid.decrypt(want, name, key, iv, device=cpu_device) == data


def test_the_smallest_buffer_that_holds_it_and_a_bound_on_bytes():
    b = Recording()
    ring = key_ring(b)
    ring.KEPT_BYTES = 1 << 16
    q = object()
    big, small = ring.take(1 << 15, q), ring.take(100, q)
    ring.give([big, small], q)
    assert ring.take(100, q) == small          # the smallest that holds it
    huge = ring.take(1 << 17, q)
    ring.give([huge], q)                       # larger than the ring keeps: let go
    assert [buf for _, buf, *_ in ring.free] == [big[0]]
    ring.give([ring.take(1 << 15, object()), ring.take(1 << 15, object())], None)
    assert sum(cap for cap, *_ in ring.free) <= ring.KEPT_BYTES   # the oldest let go


def test_a_programs_scratch_comes_from_the_ring_and_goes_back_wiped():
    b = Recording()
    s = object()
    kp = KeyedProgram(b, _req(), queue=s, record=False)
    scratch = kp.scratch(20000, s)
    scratch.data[:] = b"\x5a" * scratch.nbytes     # (what a launch leaves there)
    kp.close(False)
    assert not any(scratch.data)
    allocs = [op for op in b.log if op[0] == "alloc"]
    again = KeyedProgram(b, _req(), queue=s, record=False)
    assert again.scratch(20000, s) is scratch
    assert [op for op in b.log if op[0] == "alloc"] == allocs
    again.close(False)


def test_a_buffer_let_go_behind_another_queues_zeroing_waits_for_that_queue():
    """CuPy's pool gives freed memory back to the stream it was allocated on: a buffer let go
    while its zeroing is still queued on another stream is freed only once that one finished;
    one let go on its own stream, at once."""
    import weakref

    b = Recording()
    ring = key_ring(b)
    home, other = object(), object()
    first = ring.take(100, home)
    ring.give([first], None)                  # (waited for: any queue may take it)
    borrowed = ring.take(100, other)
    assert borrowed[0] is first[0]
    freed = []
    weakref.finalize(borrowed[0], lambda: freed.append(len(b.log)))
    ring.give([borrowed], other)              # (its zeroing queued on `other`)
    del first, borrowed
    own = [ring.take(1 << 12, home) for _ in range(ring.SLOTS)]
    start = len(b.log)
    ring.give(own, home)                      # the ring full: the oldest let go
    assert b.log[start:] == [("finish", None, other)] and freed == [start + 1]
    start = len(b.log)
    ring.give([ring.take(1 << 13, home)], home)   # the oldest let go on its own queue: no wait
    assert [op[0] for op in b.log[start:]] == ["alloc"] and len(ring.free) == ring.SLOTS


def test_a_program_that_fails_after_its_upload_wipes_its_keys(monkeypatch):
    """A keyed program failing in its set-up (a mode's prepare) zeroes what it uploaded and
    gives the buffer back, as close() does."""
    b = Recording()
    s = object()
    req = _req("aes-128-xts", bytes(range(32)))
    uploaded = []
    real_upload = b.upload

    def upload(buf, host, queue=None, **kw):
        uploaded.append(buf)
        return real_upload(buf, host, queue, **kw)

    def fails(kp):
        raise RuntimeError("prepare failed")

    monkeypatch.setattr(b, "upload", upload)
    monkeypatch.setattr(req.mode, "prepare", fails)
    try:
        KeyedProgram(b, req, queue=s, record=False)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the set-up's failure was not raised")
    assert uploaded and not any(any(buf.data) for buf in uploaded)
    assert [buf for _, buf, *_ in key_ring(b).free] == uploaded


def test_a_closed_program_launches_nothing():
    """Once closed, a program's buffer is the ring's and may hold another program's keys: a
    launch or a late schedule through the closed program is refused, never run with them."""
    import pytest

    from ciphergrid.errors import DeviceError

    b = Recording()
    s = object()
    kp = KeyedProgram(b, _req(), queue=s, record=False)
    buf = _key_buffer(kp)
    kp.close(False)
    other = KeyedProgram(b, _req(key=bytes(16 * [9])), queue=s, record=False)
    assert _key_buffer(other) is buf and any(buf.data)    # (the other's keys, there now)
    launches = len([op for op in b.log if op[0] == "launch"])
    with pytest.raises(DeviceError, match="after close"):
        kp.enqueue(Buf(64), Buf(64), 4, 0, s)
    with pytest.raises(DeviceError, match="after close"):
        kp.schedule(0, s)
    assert len([op for op in b.log if op[0] == "launch"]) == launches
    other.close(False)


def test_a_program_closed_while_its_thread_holds_the_ring_gives_back_without_waiting():
    """A program collected while its thread is inside the ring's take() (a Cipher's finalizer,
    run by an allocation there) gives its buffers back without waiting for the lock that thread
    holds; they are filed, and reused, at the next take."""
    import threading

    b = Recording()
    q = object()
    dying = KeyedProgram(b, _req(), queue=q, record=False)
    buf = _key_buffer(dying)
    ring = key_ring(b)
    done = threading.Event()

    def close_inside():   # (the finalizer's call, on the thread that holds the lock)
        assert ring.lock.locked()
        dying.close(False)
        done.set()

    class Finalizing(list):   # (the ring's free list: reading it runs the finalizer once)
        def __iter__(self):
            if not done.is_set():
                close_inside()
            return super().__iter__()

    ring.free = Finalizing(ring.free)
    t = threading.Thread(target=lambda: KeyedProgram(b, _req(), queue=q, record=False).close(False),
                         daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the ring's lock was waited for by the thread holding it"
    assert done.is_set() and not any(buf.data)
    again = KeyedProgram(b, _req(key=bytes(16 * [9])), queue=q, record=False)
    assert _key_buffer(again) is buf       # filed at the next take, behind its zeroing on q
    again.close(False)
