"""One pipeline, two job kinds: a block cipher's chunks (transfer/driver.py's Pipeline: arrays
and streams) and an AEAD batch's pieces (transfer/batches.py) run through the same scaffolding.
The device work of each is a schedule the GPU's speed depends on: the same transfers, the same
launches, on the same queues, waiting on the same events, in the same order.  These tests record
the backend's calls on the OpenCL CPU device (PoCL) and compare them with the schedule recorded
before the two stacks shared their scaffolding (``EXPECTED``), and check the bytes.

A trace is the list of calls made on the thread that drives the pipeline, in order, each with
its queue, buffers and events named by first appearance, and the multiset of the calls made on
other threads (the pipeline's workers' waits); page-locked staging (``pinned``) is left out:
how many staging buffers a threaded run takes depends on the host's timing."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

from ciphergrid import registry
from conftest import wrap_methods

#: the backend's methods a trace records
NAMES = ("alloc", "view", "queue", "upload", "download", "upload_rows", "download_rows",
         "launch", "marker", "after", "wait", "finish", "zero", "host_staging")
#: calls of the methods that return a device object (named in the trace by a letter and a number)
RETURNS = {"alloc": "B", "view": "B", "queue": "Q", "upload": "E", "download": "E",
           "launch": "E", "marker": "E"}


@pytest.fixture(scope="module")
def backend(cpu_backend):
    return cpu_backend


class Trace:
    """The backend's calls (the instance's methods wrapped) while it is on."""

    def __init__(self, b, monkeypatch):
        self.main = threading.get_ident()
        self.calls: list = []
        self.others: Counter = Counter()
        self.names: dict = {}
        self.keep: list = []     # (every named object stays alive: its id is not reused)
        self.lock = threading.Lock()
        self.counts: Counter = Counter()

        def on_call(name, a, k, call):
            got = call()
            with self.lock:
                text = self.describe(name, a, k, got)
                if threading.get_ident() == self.main:
                    self.calls.append(text)
                else:
                    self.others[text] += 1
            return got

        wrap_methods(b, NAMES, monkeypatch, on_call)
        # a queue is named where it first appears: its own creation, or a call that takes it
        for q in (b.default_queue,):
            self.name_of(q, "Q")

    def name_of(self, obj, letter: str) -> str:
        key = id(obj)
        got = self.names.get(key)
        if got is None:
            self.counts[letter] += 1
            got = self.names[key] = f"{letter}{self.counts[letter]}"
            self.keep.append(obj)
        return got

    def show(self, x) -> str:
        if x is None:
            return "-"
        if id(x) in self.names:
            return self.names[id(x)]
        if isinstance(x, np.ndarray):
            return f"h{x.nbytes}"
        if isinstance(x, (list, tuple)):
            return "[" + ",".join(self.show(v) for v in x) + "]"
        if isinstance(x, (int, np.integer)):
            return str(int(x))
        if isinstance(x, (bytes, bytearray)):
            return f"b{len(x)}"
        if type(x).__module__.startswith("pyopencl") and type(x).__name__ == "CommandQueue":
            return self.name_of(x, "Q")
        return type(x).__name__

    def describe(self, name: str, a: tuple, k: dict, got) -> str:
        if name == "launch":
            prg, kname, items, args = a[:4]
            rest = a[4:] + tuple(v for key, v in sorted(k.items()))
            text = f"launch {kname} {int(items)} ({self.show(list(args))}) {self.show(rest)}"
        else:
            parts = [self.show(v) for v in a] + [f"{key}={self.show(v)}"
                                                 for key, v in sorted(k.items())]
            text = f"{name} {' '.join(parts)}"
        letter = RETURNS.get(name)
        if letter is not None and got is not None:
            text += f" -> {self.name_of(got, letter)}"
        return text

    def result(self) -> dict:
        return {"main": list(self.calls), "others": sorted(f"{n}x {t}"
                                                           for t, n in self.others.items())}


# ------------------------------------------------------------------------------------ the runs
def _block_stream(b, tmp_path, monkeypatch) -> dict:
    """A CTR file of 5 chunks and a partial one, through a Pipeline's stream (worker threads)."""
    from ciphergrid.program import KeyedProgram
    from ciphergrid.request import make_request
    from ciphergrid.testing import oracle
    from ciphergrid.transfer.driver import CipherJob, Pipeline

    key, iv = bytes(range(16)), bytes(range(16, 32))
    data = (np.arange(5 * 4096 + 100, dtype=np.uint32) * 2654435761 % 251).astype(np.uint8)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data.tobytes())
    req = make_request(registry.lookup("aes-128-ctr"), key, iv, True)
    with KeyedProgram(b, req) as kp:
        tr = Trace(b, monkeypatch)
        pipe = Pipeline(b, chunk_bytes=4096, depth=2, threads=2)
        with open(src, "rb") as f, open(dst, "wb") as g:
            assert pipe.stream(CipherJob(kp), f, g) == data.nbytes
        monkeypatch.undo()
        pipe.close()
    want = oracle.crypt("aes-128-ctr", key, iv, data.tobytes(), True)
    assert dst.read_bytes() == want
    return tr.result()


def _block_array(b, monkeypatch) -> dict:
    """A CBC decryption of an array of 7 chunks (one thread: every chunk enqueued, one wait)."""
    from ciphergrid.program import KeyedProgram
    from ciphergrid.request import make_request
    from ciphergrid.testing import oracle
    from ciphergrid.transfer.driver import Pipeline

    key, iv = bytes(range(1, 17)), bytes(range(17, 33))
    ct = (np.arange(100 * 1024, dtype=np.uint32) * 40503 % 253).astype(np.uint8)
    out = np.zeros_like(ct)
    req = make_request(registry.lookup("aes-128-cbc"), key, iv, False)
    with KeyedProgram(b, req) as kp:
        tr = Trace(b, monkeypatch)
        pipe = Pipeline(b, chunk_bytes=16384, depth=2, threads=2)
        pipe.crypt(kp, ct, out)
        monkeypatch.undo()
        pipe.close()
    assert out.tobytes() == oracle.crypt("aes-128-cbc", key, iv, ct.tobytes(), False)
    return tr.result()


def _aead_batch(b, monkeypatch, name: str, *, encrypt: bool, slices: bool) -> dict:
    """A batch of messages in pieces (and slices) through transfer/batches.run."""
    from ciphergrid import aeads
    from ciphergrid.aeads.base import make_batch
    from ciphergrid.route import engine as get_engine
    from ciphergrid.transfer import batches

    eng = get_engine("cpu")
    drv = eng.aead_driver(name)
    spec = aeads.lookup(name)
    kl, nl, tl = spec.names[name], spec.default_nonce_length, spec.default_tag_length
    lens = [0, 1, 700, 17, 300, 2048, 5, 64, 1025, 16, 333, 900, 40, 129]
    rnd = np.random.default_rng(47)

    def data(n: int) -> bytes:
        return rnd.integers(0, 256, n, dtype=np.uint8).tobytes()

    keys = [data(kl) for _ in range(2)] * 7
    texts, nonces = [data(n) for n in lens], [data(nl) for _ in lens]
    aads = [data(i % 7) for i in range(len(lens))]
    one = make_batch(name, True, tl, keys, nonces, aads, texts)
    tags = drv.run(one)
    if encrypt:
        batch, received = make_batch(name, True, tl, keys, nonces, aads, texts), None
    else:
        sealed = [one.dst[one.off[i]:one.off[i + 1]].tobytes() for i in range(len(lens))]
        batch, received = make_batch(name, False, tl, keys, nonces, aads, sealed), tags.copy()
        received[3, 0] ^= 1
    monkeypatch.setattr(drv, "slice_bytes", 600 if slices else None, raising=False)
    monkeypatch.setattr(drv, "slice_mean_max", None, raising=False)
    monkeypatch.setattr(drv, "kernel_queues", 2, raising=False)
    batches._lanes(b, 2)   # (the batches' queues are the backend's: made before the trace)
    tr = Trace(b, monkeypatch)
    got = batches.run(b, drv, batch, received=received, piece_bytes=1500, depth=2)
    monkeypatch.undo()
    if encrypt:
        assert got.tobytes() == tags.tobytes() and batch.dst.tobytes() == one.dst.tobytes()
    else:
        assert got.tolist() == [i != 3 for i in range(len(lens))]
        assert batch.dst[batch.off[4]:].tobytes() == b"".join(texts[4:])
    return tr.result()


def _block_pipe(b, tmp_path, monkeypatch) -> dict:
    """An ECB stream from a pipe (read in order by one worker) into a file."""
    import os

    from ciphergrid.program import KeyedProgram
    from ciphergrid.request import make_request
    from ciphergrid.testing import oracle
    from ciphergrid.transfer.driver import CipherJob, Pipeline

    key = bytes(range(3, 19))
    data = (np.arange(3 * 4096 + 512, dtype=np.uint32) * 69069 % 241).astype(np.uint8)
    dst = tmp_path / "out"
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(data.tobytes())

    req = make_request(registry.lookup("aes-128-ecb"), key, None, True)
    with KeyedProgram(b, req) as kp:
        tr = Trace(b, monkeypatch)
        pipe = Pipeline(b, chunk_bytes=4096, depth=2, threads=2)
        writer = threading.Thread(target=feed)
        writer.start()
        with os.fdopen(r, "rb") as f, open(dst, "wb") as g:
            assert pipe.stream(CipherJob(kp), f, g) == data.nbytes
        writer.join()
        monkeypatch.undo()
        pipe.close()
    assert dst.read_bytes() == oracle.crypt("aes-128-ecb", key, None, data.tobytes(), True)
    return tr.result()


def _aead_rows(b, monkeypatch) -> dict:
    """A batch sealed into rows between tags (a sealed message's chunks: transfer/batches.py's
    rows, staged per piece)."""
    from ciphergrid.aeads.base import Batch
    from ciphergrid.route import engine as get_engine
    from ciphergrid.transfer import batches

    name, m, w, tl = "aes-128-gcm", 12, 256, 16
    drv = get_engine("cpu").aead_driver(name)
    rnd = np.random.default_rng(49)
    key = rnd.integers(0, 256, (1, 16), dtype=np.uint8)
    nonces = rnd.integers(0, 256, (m, 12), dtype=np.uint8)
    src = rnd.integers(0, 256, m * w, dtype=np.uint8)

    def batch(dst) -> Batch:
        return Batch(name, True, tl, key, np.zeros(m, dtype=np.int32), nonces,
                     np.zeros(0, dtype=np.uint8), np.zeros(m + 1, dtype=np.int64), src,
                     np.arange(m + 1, dtype=np.int64) * w, dst)

    flat = batch(np.zeros(m * w, dtype=np.uint8))
    tags = drv.run(flat)
    sealed = np.zeros(m * (w + tl), dtype=np.uint8)
    rows = sealed.reshape(m, w + tl)[:, :w]
    monkeypatch.setattr(drv, "slice_bytes", 1024, raising=False)
    monkeypatch.setattr(drv, "kernel_queues", 1, raising=False)
    batches._lanes(b, 1)
    tr = Trace(b, monkeypatch)
    got = batches.run(b, drv, batch(rows), piece_bytes=1024, depth=2)
    monkeypatch.undo()
    assert got.tobytes() == tags.tobytes()
    assert rows.tobytes() == flat.dst.reshape(m, w).tobytes()
    return tr.result()


CASES = {
    "block_stream": lambda b, tmp_path, mp: _block_stream(b, tmp_path, mp),
    "block_array": lambda b, tmp_path, mp: _block_array(b, mp),
    "block_pipe": lambda b, tmp_path, mp: _block_pipe(b, tmp_path, mp),
    "gcm_seal_rows": lambda b, tmp_path, mp: _aead_rows(b, mp),
    "gcm_seal_slices": lambda b, tmp_path, mp: _aead_batch(b, mp, "aes-128-gcm", encrypt=True,
                                                           slices=True),
    "gcm_open_pieces": lambda b, tmp_path, mp: _aead_batch(b, mp, "aes-128-gcm", encrypt=False,
                                                           slices=False),
    "chacha_seal_slices": lambda b, tmp_path, mp: _aead_batch(b, mp, "chacha20-poly1305",
                                                              encrypt=True, slices=True),
    "ascon_open_pieces": lambda b, tmp_path, mp: _aead_batch(b, mp, "ascon-aead128",
                                                             encrypt=False, slices=False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_device_schedule_unchanged(backend, tmp_path, monkeypatch, case):
    """Each job kind's backend calls through the one pipeline are the schedule recorded before."""
    got = CASES[case](backend, tmp_path, monkeypatch)
    main, others = EXPECTED[case]
    assert got["main"] == main.strip().splitlines()
    assert got["others"] == others.strip().splitlines()



# ------------------------------------------------------------------------------------ failures
class _Queues:
    """A stand-in backend that counts the queues finished."""

    def __init__(self):
        self.finished: list = []

    def finish(self, q) -> None:
        self.finished.append(q)


class _Kind:
    """A job kind of numbers that records what the pipeline does to each, failing where told."""

    def __init__(self, count: int, fail_at: tuple = ("", -1), error=RuntimeError):
        self.count, self.fail_at, self.error = count, fail_at, error
        self.log: list = []
        self.lock = threading.Lock()

    def _step(self, what: str, job: int) -> None:
        with self.lock:
            self.log.append((what, job))
        if (what, job) == self.fail_at:
            raise self.error(f"{what} {job} failed")

    def stage(self, seq: int):
        if seq >= self.count:
            return None
        self._step("stage", seq)
        return seq

    def launch(self, job: int, seq: int) -> None:
        assert job == seq
        self._step("launch", job)

    def retire(self, job: int) -> None:
        self._step("retire", job)

    def abort(self, job: int) -> None:
        with self.lock:
            self.log.append(("abort", job))

    def ends(self) -> dict:
        """job -> how it ended (retire or abort), each job staged ending once."""
        out: dict = {}
        for what, job in self.log:
            if what in ("retire", "abort"):
                assert job not in out, (job, self.log)
                out[job] = what
        return out


def test_one_thread_keeps_its_window_and_ends_every_job():
    from ciphergrid.transfer.flight import Lanes, fly

    b = _Queues()
    kind, seen = _Kind(5), []
    assert fly(kind, Lanes(b, "up", ["k0", "k1"], "down"), 5, window=2,
               full=lambda: seen.append("full"), ending=seen.append) == 5
    assert [w for w in kind.log if w[0] != "stage"] == [
        ("launch", 0), ("launch", 1), ("retire", 0), ("launch", 2), ("retire", 1),
        ("launch", 3), ("retire", 2), ("launch", 4), ("retire", 3), ("retire", 4)]
    assert seen == ["full", "full", "full", [3, 4]] and b.finished == []
    assert Lanes(b, "up", ["k0", "k1"], "down").kernel(3) == "k1"


@pytest.mark.parametrize("where", [("launch", 3), ("retire", 1), ("stage", 2)])
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_one_thread_failure_drains_the_lanes_and_aborts_what_flies(where, error):
    """A failure staging, launching or retiring a job (an interrupt too): every queue finished
    (uploads, kernels, downloads), then every job still in flight aborted; each job staged
    ends once."""
    from ciphergrid.transfer.flight import Lanes, fly

    b = _Queues()
    kind = _Kind(6, where, error)
    with pytest.raises(error):
        fly(kind, Lanes(b, "up", ["k0", "k1"], "down"), 6, window=3)
    assert b.finished == ["up", "k0", "k1", "down"]
    staged = {j for w, j in kind.log if w == "stage" and (w, j) != where}
    assert set(kind.ends()) == staged
    aborted = [j for j, how in kind.ends().items() if how == "abort"]
    first_abort = kind.log.index(("abort", aborted[0])) if aborted else len(kind.log)
    assert all(w != "launch" for w, _ in kind.log[first_abort:])


@pytest.mark.parametrize("where", [("launch", 4), ("retire", 2), ("stage", 3)])
def test_workers_failure_drains_the_lanes_and_ends_every_job(where):
    """The same with staging and retiring on worker threads: the jobs staged but not launched
    aborted, the lanes drained, every job staged retired or aborted once."""
    from ciphergrid.transfer.flight import Lanes, fly_threaded
    from ciphergrid.transfer.workers import Workers

    b = _Queues()
    kind = _Kind(8, where)
    prep, fin = Workers(2, "prep"), Workers(2, "finish")
    try:
        with pytest.raises(RuntimeError):
            fly_threaded(kind, Lanes(b, "up", ["k"], "down"), permits=4, prep=prep, fin=fin,
                         abort_wait=5)
    finally:
        prep.shutdown()
        fin.shutdown()
    assert b.finished == ["up", "k", "down"]
    staged = {j for w, j in kind.log if w == "stage" and (w, j) != where}
    assert set(kind.ends()) == staged
    kind = _Kind(8)
    prep, fin = Workers(2, "prep"), Workers(2, "finish")
    try:
        assert fly_threaded(kind, Lanes(b, "up", ["k"], "down"), permits=4, prep=prep,
                            fin=fin) == 8
    finally:
        prep.shutdown()
        fin.shutdown()
    assert kind.ends() == {j: "retire" for j in range(8)}
    assert [j for w, j in kind.log if w == "launch"] == list(range(8))



# ------------------------------------------------------------------------------------ resident
def test_resident_opening_copies_the_texts_after_the_rows_are_out(backend, monkeypatch):
    """A resident opening takes the texts and tags out of the rows on a queue of its own
    (engines/device_aead/rows.py): the job's own copy of those texts (a device-to-device upload
    on the caller's queue) waits for that queue's copies; before, it raced them and the tags
    failed now and then on PoCL."""
    import os

    from ciphergrid.engines.device_aead import rows
    from ciphergrid.formats import cobblestone as cs
    from ciphergrid.route import engine as get_engine

    eng = get_engine("cpu")
    b = eng.backend
    if eng.info.runtime != "opencl":
        pytest.skip("OpenCL buffers as the caller's device arrays")
    import pyopencl as cl

    def buffer(data: bytes, size: int):
        buf = cl.Buffer(b.ctx, cl.mem_flags.READ_WRITE, max(size, 16))
        if data:
            cl.enqueue_copy(b.default_queue, buf, np.frombuffer(data, dtype=np.uint8))
        b.finish()
        return buf

    n = 2 * cs.CHUNK + 100
    data, key, salt = os.urandom(n), os.urandom(16), os.urandom(24)
    sch = cs.scheme(False)
    k, base, commitment = cs.derive(sch, key, salt, b"ctx")
    nonces = cs.nonces(base, 0, n // cs.CHUNK + 1)
    sealed = buffer(salt + commitment, cs.sealed_length(n))
    rows.seal_rows(eng, sch.aead, k, nonces, buffer(data, n), n, sealed, cs.HEADER, cs.CHUNK,
                   cs.TAG)
    back = buffer(b"", n)
    tr = Trace(b, monkeypatch)
    ok = rows.open_rows(eng, sch.aead, k, nonces, sealed, cs.HEADER, n, back, cs.CHUNK, cs.TAG)
    monkeypatch.undo()
    calls = tr.result()["main"]
    q = tr.names[id(b.default_queue)]
    side = next(c for c in calls if c.startswith("after ") and not c.startswith(f"after {q} "))
    copied = next(c for c in calls[calls.index(side):] if c.startswith("marker "))
    copied = copied.split(" -> ")[1]
    waits = calls.index(f"after {q} [{copied}]")
    texts = next(i for i, c in enumerate(calls) if c.startswith("upload ")
                 and c.split()[2] == "Buffer" and c.split()[3] == q)
    assert waits < texts, calls
    h = np.empty(n, dtype=np.uint8)
    cl.enqueue_copy(b.default_queue, h, back)
    b.finish()
    assert ok.all() and h.tobytes() == data


#: the traces recorded at the commit before the job kinds shared one pipeline: (the driving
#: thread's calls, the other threads' calls counted)
EXPECTED: dict = {
    "ascon_open_pieces": ("""
alloc 3130 -> B1
upload B1 h2944 Q2 offset=0 record=0 -> E1
upload B1 h122 Q2 offset=2944 record=0 -> E2
alloc 3074 -> B2
host_staging 768
alloc 768 -> B3
view B3 0 56 -> B4
view B3 128 32 -> B5
view B3 256 24 -> B6
view B3 384 96 -> B7
view B3 512 23 -> B8
view B3 640 56 -> B9
upload B3 h768 Q2 record=0 -> E3
alloc 96 -> B10
marker Q2 -> E4
after Q3 [E4]
launch ascon_aead128 64 ([B1,B2,B4,B5,B6,B7,B8,B9,B10,0,6,1]) [Q3,0] -> E5
marker Q3 -> E6
after Q4 [E6]
download h3066 B2 Q4 offset=0 record=0 -> E7
zero B5 Q3 wait=0
marker Q3 -> E8
host_staging 96
download h96 B10 Q4 record=0 -> E9
marker Q4 -> E10
alloc 1451 -> B11
upload B11 h1443 Q2 offset=0 record=0 -> E11
alloc 1451 -> B12
host_staging 768
alloc 768 -> B13
view B13 0 48 -> B14
view B13 128 32 -> B15
view B13 256 20 -> B16
view B13 384 80 -> B17
view B13 512 20 -> B18
view B13 640 48 -> B19
upload B13 h768 Q2 record=0 -> E12
alloc 80 -> B20
marker Q2 -> E13
after Q5 [E13]
launch ascon_aead128 64 ([B11,B12,B14,B15,B16,B17,B18,B19,B20,0,5,1]) [Q5,0] -> E14
marker Q5 -> E15
after Q4 [E15]
download h1443 B12 Q4 offset=0 record=0 -> E16
zero B15 Q5 wait=0
marker Q5 -> E17
host_staging 80
download h80 B20 Q4 record=0 -> E18
marker Q4 -> E19
alloc 908 -> B21
upload B21 h900 Q2 offset=0 record=0 -> E20
alloc 908 -> B22
host_staging 768
alloc 768 -> B23
view B23 0 16 -> B24
view B23 128 32 -> B25
view B23 256 4 -> B26
view B23 384 16 -> B27
view B23 512 12 -> B28
view B23 640 16 -> B29
upload B23 h768 Q2 record=0 -> E21
alloc 16 -> B30
marker Q2 -> E22
after Q3 [E22]
launch ascon_aead128 64 ([B21,B22,B24,B25,B26,B27,B28,B29,B30,0,1,1]) [Q3,0] -> E23
marker Q3 -> E24
after Q4 [E24]
download h900 B22 Q4 offset=0 record=0 -> E25
zero B25 Q3 wait=0
marker Q3 -> E26
host_staging 16
download h16 B30 Q4 record=0 -> E27
marker Q4 -> E28
alloc 177 -> B31
upload B31 h169 Q2 offset=0 record=0 -> E29
alloc 177 -> B32
host_staging 768
alloc 768 -> B33
view B33 0 24 -> B34
view B33 128 32 -> B35
view B33 256 8 -> B36
view B33 384 32 -> B37
view B33 512 19 -> B38
view B33 640 24 -> B39
upload B33 h768 Q2 record=0 -> E30
alloc 32 -> B40
marker Q2 -> E31
after Q5 [E31]
launch ascon_aead128 64 ([B31,B32,B34,B35,B36,B37,B38,B39,B40,0,2,1]) [Q5,0] -> E32
marker Q5 -> E33
after Q4 [E33]
download h169 B32 Q4 offset=0 record=0 -> E34
zero B35 Q5 wait=0
marker Q5 -> E35
host_staging 32
download h32 B40 Q4 record=0 -> E36
marker Q4 -> E37
wait E10
wait E8
wait E19
wait E17
wait E28
wait E26
wait E37
wait E35
""", """

"""),
    "block_array": ("""
queue  -> Q2
queue  -> Q3
queue  -> Q4
alloc 16384 -> B1
alloc 16384 -> B2
alloc 16384 -> B3
alloc 16384 -> B4
upload B1 h16384 Q2 offset=0 wait_for=- -> E1
launch cg_cbc_dec 1024 ([B1,B2,Buffer,B2,0,336794129,404166165,471538201,538910237,1024]) [Q3,1,[E1,NannyEvent]] -> E2
download h16384 B2 Q4 offset=0 wait_for=[E2] -> E3
upload B3 h16384 Q2 offset=0 wait_for=- -> E4
launch cg_cbc_dec 1024 ([B3,B4,Buffer,B4,0,1160648448,2710205276,15126456,1548037655,1024]) [Q3,1,[E4,NannyEvent]] -> E5
download h16384 B4 Q4 offset=0 wait_for=[E5] -> E6
upload B1 h16384 Q2 offset=0 wait_for=[E2] -> E7
launch cg_cbc_dec 1024 ([B1,B2,Buffer,B2,0,3097594483,385935055,1935426862,3484983690,1024]) [Q3,1,[E7,E3,NannyEvent]] -> E8
download h16384 B2 Q4 offset=0 wait_for=[E8] -> E9
upload B3 h16384 Q2 offset=0 wait_for=[E5] -> E10
launch cg_cbc_dec 1024 ([B3,B4,Buffer,B4,0,773259494,2322816069,3872372897,1160648448,1024]) [Q3,1,[E10,E6,NannyEvent]] -> E11
download h16384 B4 Q4 offset=0 wait_for=[E11] -> E12
upload B1 h16384 Q2 offset=0 wait_for=[E8] -> E13
launch cg_cbc_dec 1024 ([B1,B2,Buffer,B2,0,2710205276,15126456,1548037655,3097594483,1024]) [Q3,1,[E13,E9,NannyEvent]] -> E14
download h16384 B2 Q4 offset=0 wait_for=[E14] -> E15
upload B3 h16384 Q2 offset=0 wait_for=[E11] -> E16
launch cg_cbc_dec 1024 ([B3,B4,Buffer,B4,0,385935055,1935426862,3484983690,773259494,1024]) [Q3,1,[E16,E12,NannyEvent]] -> E17
download h16384 B4 Q4 offset=0 wait_for=[E17] -> E18
upload B1 h4096 Q2 offset=0 wait_for=[E14] -> E19
launch cg_cbc_dec 256 ([B1,B2,Buffer,B2,0,2322816069,3872372897,1160648448,2710205276,256]) [Q3,1,[E19,E15,NannyEvent]] -> E20
download h4096 B2 Q4 offset=0 wait_for=[E20] -> E21
wait E21
""", """

"""),
    "block_stream": ("""
queue  -> Q2
queue  -> Q3
queue  -> Q4
alloc 4096 -> B1
alloc 4096 -> B2
alloc 4096 -> B3
alloc 4096 -> B4
upload B1 h4096 Q2 offset=0 wait_for=- -> E1
launch cg_ctr 256 ([B1,B2,Buffer,1157726452361532951,1736447835066146335,256]) [Q3,1,[E1,NannyEvent]] -> E2
download h4096 B2 Q4 offset=0 wait_for=[E2] -> E3
upload B3 h4096 Q2 offset=0 wait_for=- -> E4
launch cg_ctr 256 ([B3,B4,Buffer,1157726452361532951,1736447835066146591,256]) [Q3,1,[E4,NannyEvent]] -> E5
download h4096 B4 Q4 offset=0 wait_for=[E5] -> E6
upload B1 h4096 Q2 offset=0 wait_for=[E2] -> E7
launch cg_ctr 256 ([B1,B2,Buffer,1157726452361532951,1736447835066146847,256]) [Q3,1,[E7,E3,NannyEvent]] -> E8
download h4096 B2 Q4 offset=0 wait_for=[E8] -> E9
upload B3 h4096 Q2 offset=0 wait_for=[E5] -> E10
launch cg_ctr 256 ([B3,B4,Buffer,1157726452361532951,1736447835066147103,256]) [Q3,1,[E10,E6,NannyEvent]] -> E11
download h4096 B4 Q4 offset=0 wait_for=[E11] -> E12
upload B1 h4096 Q2 offset=0 wait_for=[E8] -> E13
launch cg_ctr 256 ([B1,B2,Buffer,1157726452361532951,1736447835066147359,256]) [Q3,1,[E13,E9,NannyEvent]] -> E14
download h4096 B2 Q4 offset=0 wait_for=[E14] -> E15
upload B3 h100 Q2 offset=0 wait_for=[E11] -> E16
launch cg_ctr 7 ([B3,B4,Buffer,1157726452361532951,1736447835066147615,7]) [Q3,1,[E16,E12,NannyEvent]] -> E17
download h100 B4 Q4 offset=0 wait_for=[E17] -> E18
""", """
1x wait E12
1x wait E15
1x wait E18
1x wait E3
1x wait E6
1x wait E9
"""),
    "chacha_seal_slices": ("""
alloc 3130 -> B1
upload B1 h512 Q2 offset=0 record=0 -> E1
marker Q2 -> E2
host_staging 1536
alloc 1536 -> B2
view B2 0 64 -> B3
view B2 128 15 -> B4
view B2 256 56 -> B5
view B2 384 56 -> B6
view B2 512 56 -> B7
view B2 640 8 -> B8
view B2 768 56 -> B9
view B2 896 12 -> B10
view B2 1024 56 -> B11
view B2 1152 24 -> B12
view B2 1280 72 -> B13
view B2 1408 56 -> B14
upload B2 h1536 Q2 record=0 -> E3
alloc 896 -> B15
view B15 0 192 -> B16
view B15 256 260 -> B17
view B15 640 140 -> B18
marker Q2 -> E4
upload B1 h506 Q2 offset=512 record=0 -> E5
marker Q2 -> E6
upload B1 h2048 Q2 offset=1018 record=0 -> E7
marker Q2 -> E8
alloc 3066 -> B19
alloc 96 -> B20
marker Q2 -> E9
after Q3 [E4]
launch chacha_xor 3 ([B1,B19,B5,B7,B8,6,B3,B12,B13,B16,6,0,3]) [Q3,0] -> E10
marker Q3 -> E11
after Q4 [E11]
download h1 B19 Q4 offset=0 record=0 -> E12
after Q3 [E6]
launch chacha_xor 20 ([B1,B19,B5,B7,B8,6,B3,B12,B13,B16,6,3,23]) [Q3,0] -> E13
marker Q3 -> E14
after Q4 [E14]
download h1017 B19 Q4 offset=1 record=0 -> E15
after Q3 [E8]
launch chacha_xor 33 ([B1,B19,B5,B7,B8,6,B3,B12,B13,B16,6,23,56]) [Q3,0] -> E16
marker Q3 -> E17
after Q4 [E17]
download h2048 B19 Q4 offset=1018 record=0 -> E18
launch chacha_powers 6 ([B16,B9,B11,B17,0,6]) [Q3,0] -> E19
launch chacha_poly 7 ([B19,B4,B5,B6,B9,B10,2,B11,B17,B18,6,7,0,7]) [Q3,0] -> E20
launch chacha_psum 6 ([B18,7,B9,B20,B14,B16,B20,1,6,6,0,6]) [Q3,0] -> E21
marker Q3 -> E22
zero B3 Q3 wait=0
zero B15 Q3 wait=0
marker Q3 -> E23
host_staging 96
after Q4 [E22]
download h96 B20 Q4 record=0 -> E24
marker Q4 -> E25
alloc 1443 -> B21
upload B21 h69 Q2 offset=0 record=0 -> E26
marker Q2 -> E27
host_staging 1536
alloc 1536 -> B22
view B22 0 64 -> B23
view B22 128 12 -> B24
view B22 256 48 -> B25
view B22 384 48 -> B26
view B22 512 48 -> B27
view B22 640 8 -> B28
view B22 768 48 -> B29
view B22 896 12 -> B30
view B22 1024 48 -> B31
view B22 1152 20 -> B32
view B22 1280 60 -> B33
view B22 1408 48 -> B34
upload B22 h1536 Q2 record=0 -> E28
alloc 640 -> B35
view B35 0 160 -> B36
view B35 256 200 -> B37
view B35 512 100 -> B38
marker Q2 -> E29
upload B21 h1374 Q2 offset=69 record=0 -> E30
marker Q2 -> E31
alloc 1443 -> B39
alloc 80 -> B40
marker Q2 -> E32
after Q5 [E29]
launch chacha_xor 4 ([B21,B39,B25,B27,B28,6,B23,B32,B33,B36,5,0,4]) [Q5,0] -> E33
marker Q5 -> E34
after Q4 [E34]
download h69 B39 Q4 offset=0 record=0 -> E35
after Q5 [E31]
launch chacha_xor 27 ([B21,B39,B25,B27,B28,6,B23,B32,B33,B36,5,4,31]) [Q5,0] -> E36
marker Q5 -> E37
after Q4 [E37]
download h1374 B39 Q4 offset=69 record=0 -> E38
launch chacha_powers 5 ([B36,B29,B31,B37,0,5]) [Q5,0] -> E39
launch chacha_poly 5 ([B39,B24,B25,B26,B29,B30,2,B31,B37,B38,5,5,0,5]) [Q5,0] -> E40
launch chacha_psum 5 ([B38,5,B29,B40,B34,B36,B40,1,5,5,0,5]) [Q5,0] -> E41
marker Q5 -> E42
zero B23 Q5 wait=0
zero B35 Q5 wait=0
marker Q5 -> E43
host_staging 80
after Q4 [E42]
download h80 B40 Q4 record=0 -> E44
marker Q4 -> E45
alloc 900 -> B41
upload B41 h900 Q2 offset=0 record=0 -> E46
host_staging 1536
alloc 1536 -> B42
view B42 0 64 -> B43
view B42 128 4 -> B44
view B42 256 16 -> B45
view B42 384 16 -> B46
view B42 512 16 -> B47
view B42 640 8 -> B48
view B42 768 16 -> B49
view B42 896 8 -> B50
view B42 1024 16 -> B51
view B42 1152 4 -> B52
view B42 1280 12 -> B53
view B42 1408 16 -> B54
upload B42 h1536 Q2 record=0 -> E47
alloc 384 -> B55
view B55 0 32 -> B56
view B55 128 40 -> B57
view B55 256 20 -> B58
alloc 900 -> B59
alloc 16 -> B60
marker Q2 -> E48
after Q3 [E48]
launch chacha_xor 16 ([B41,B59,B45,B47,B48,6,B43,B52,B53,B56,1,0,16]) [Q3,0] -> E49
launch chacha_powers 1 ([B56,B49,B51,B57,0,1]) [Q3,0] -> E50
launch chacha_poly 1 ([B59,B44,B45,B46,B49,B50,2,B51,B57,B58,1,1,0,1]) [Q3,0] -> E51
launch chacha_psum 1 ([B58,1,B49,B60,B54,B56,B60,1,1,1,0,1]) [Q3,0] -> E52
marker Q3 -> E53
after Q4 [E53]
download h900 B59 Q4 offset=0 record=0 -> E54
zero B43 Q3 wait=0
zero B55 Q3 wait=0
marker Q3 -> E55
host_staging 16
download h16 B60 Q4 record=0 -> E56
marker Q4 -> E57
alloc 169 -> B61
upload B61 h169 Q2 offset=0 record=0 -> E58
host_staging 1536
alloc 1536 -> B62
view B62 0 64 -> B63
view B62 128 11 -> B64
view B62 256 24 -> B65
view B62 384 24 -> B66
view B62 512 24 -> B67
view B62 640 8 -> B68
view B62 768 24 -> B69
view B62 896 8 -> B70
view B62 1024 24 -> B71
view B62 1152 8 -> B72
view B62 1280 24 -> B73
view B62 1408 24 -> B74
upload B62 h1536 Q2 record=0 -> E59
alloc 384 -> B75
view B75 0 64 -> B76
view B75 128 80 -> B77
view B75 256 40 -> B78
alloc 169 -> B79
alloc 32 -> B80
marker Q2 -> E60
after Q5 [E60]
launch chacha_xor 6 ([B61,B79,B65,B67,B68,6,B63,B72,B73,B76,2,0,6]) [Q5,0] -> E61
launch chacha_powers 2 ([B76,B69,B71,B77,0,2]) [Q5,0] -> E62
launch chacha_poly 2 ([B79,B64,B65,B66,B69,B70,2,B71,B77,B78,2,2,0,2]) [Q5,0] -> E63
launch chacha_psum 2 ([B78,2,B69,B80,B74,B76,B80,1,2,2,0,2]) [Q5,0] -> E64
marker Q5 -> E65
after Q4 [E65]
download h169 B79 Q4 offset=0 record=0 -> E66
zero B63 Q5 wait=0
zero B75 Q5 wait=0
marker Q5 -> E67
host_staging 32
download h32 B80 Q4 record=0 -> E68
marker Q4 -> E69
wait E25
wait E23
wait E45
wait E43
wait E57
wait E55
wait E69
wait E67
""", """

"""),
    "gcm_open_pieces": ("""
alloc 3130 -> B1
upload B1 h2944 Q2 offset=0 record=0 -> E1
upload B1 h122 Q2 offset=2944 record=0 -> E2
host_staging 1408
alloc 1408 -> B2
view B2 0 352 -> B3
view B2 384 47 -> B4
view B2 512 56 -> B5
view B2 640 56 -> B6
view B2 768 56 -> B7
view B2 896 8 -> B8
view B2 1024 56 -> B9
view B2 1152 24 -> B10
view B2 1280 104 -> B11
upload B2 h1408 Q2 record=0 -> E3
alloc 1792 -> B12
view B12 0 1280 -> B13
view B12 1280 96 -> B14
view B12 1408 96 -> B15
view B12 1536 176 -> B16
alloc 3098 -> B17
alloc 96 -> B18
marker Q2 -> E4
after Q3 [E4]
launch gcm_hkey 2 ([B3,44,B13,40,8,2]) [Q3,0] -> E5
launch gcm_hpow 64 ([B13,40,8,4,2,0,1,0]) [Q3,0] -> E6
launch gcm_j0 6 ([B11,12,B10,B13,40,B14,0,6]) [Q3,0] -> E7
launch gcm_ghash 256 ([B4,B1,B6,B5,B9,B10,B13,40,8,4,1,B16,0,6,0,11,0]) [Q3,0] -> E8
launch gcm_ctr 200 ([B1,B17,B5,B7,B8,B10,B3,44,B14,B15,0,6,0,200]) [Q3,0] -> E9
launch gcm_tag 256 ([B16,B9,B15,B18,0,6,3]) [Q3,0] -> E10
marker Q3 -> E11
after Q4 [E11]
download h3066 B17 Q4 offset=0 record=0 -> E12
zero B3 Q3 wait=0
zero B12 Q3 wait=0
marker Q3 -> E13
host_staging 96
download h96 B18 Q4 record=0 -> E14
marker Q4 -> E15
alloc 1475 -> B19
upload B19 h1443 Q2 offset=0 record=0 -> E16
host_staging 1408
alloc 1408 -> B20
view B20 0 352 -> B21
view B20 384 44 -> B22
view B20 512 48 -> B23
view B20 640 48 -> B24
view B20 768 48 -> B25
view B20 896 8 -> B26
view B20 1024 48 -> B27
view B20 1152 20 -> B28
view B20 1280 92 -> B29
upload B20 h1408 Q2 record=0 -> E17
alloc 1536 -> B30
view B30 0 992 -> B31
view B30 1024 80 -> B32
view B30 1152 80 -> B33
view B30 1280 160 -> B34
alloc 1475 -> B35
alloc 80 -> B36
marker Q2 -> E18
after Q5 [E18]
launch gcm_hkey 2 ([B21,44,B31,31,7,2]) [Q5,0] -> E19
launch gcm_hpow 48 ([B31,31,7,3,2,0,1,0]) [Q5,0] -> E20
launch gcm_j0 5 ([B29,12,B28,B31,31,B32,0,5]) [Q5,0] -> E21
launch gcm_ghash 256 ([B22,B19,B24,B23,B27,B28,B31,31,7,3,1,B34,0,5,0,10,0]) [Q5,0] -> E22
launch gcm_ctr 97 ([B19,B35,B23,B25,B26,B28,B21,44,B32,B33,0,5,0,97]) [Q5,0] -> E23
launch gcm_tag 256 ([B34,B27,B33,B36,0,5,3]) [Q5,0] -> E24
marker Q5 -> E25
after Q4 [E25]
download h1443 B35 Q4 offset=0 record=0 -> E26
zero B21 Q5 wait=0
zero B30 Q5 wait=0
marker Q5 -> E27
host_staging 80
download h80 B36 Q4 record=0 -> E28
marker Q4 -> E29
alloc 932 -> B37
upload B37 h900 Q2 offset=0 record=0 -> E30
host_staging 1408
alloc 1408 -> B38
view B38 0 352 -> B39
view B38 384 36 -> B40
view B38 512 16 -> B41
view B38 640 16 -> B42
view B38 768 16 -> B43
view B38 896 8 -> B44
view B38 1024 16 -> B45
view B38 1152 4 -> B46
view B38 1280 44 -> B47
upload B38 h1408 Q2 record=0 -> E31
alloc 3200 -> B48
view B48 0 2784 -> B49
view B48 2816 16 -> B50
view B48 2944 16 -> B51
view B48 3072 16 -> B52
alloc 932 -> B53
alloc 16 -> B54
marker Q2 -> E32
after Q3 [E32]
launch gcm_hkey 2 ([B39,44,B49,87,7,2]) [Q3,0] -> E33
launch gcm_hpow 160 ([B49,87,7,6,2,0,0,0]) [Q3,0] -> E34
launch gcm_j0 1 ([B47,12,B46,B49,87,B50,0,1]) [Q3,0] -> E35
launch gcm_ghash 256 ([B40,B37,B42,B41,B45,B46,B49,87,7,6,0,B52,0,1,0,1,0]) [Q3,0] -> E36
launch gcm_ctr 58 ([B37,B53,B41,B43,B44,B46,B39,44,B50,B51,0,1,0,58]) [Q3,0] -> E37
launch gcm_tag 256 ([B52,B45,B51,B54,0,1,0]) [Q3,0] -> E38
marker Q3 -> E39
after Q4 [E39]
download h900 B53 Q4 offset=0 record=0 -> E40
zero B39 Q3 wait=0
zero B48 Q3 wait=0
marker Q3 -> E41
host_staging 16
download h16 B54 Q4 record=0 -> E42
marker Q4 -> E43
alloc 201 -> B55
upload B55 h169 Q2 offset=0 record=0 -> E44
host_staging 1408
alloc 1408 -> B56
view B56 0 352 -> B57
view B56 384 43 -> B58
view B56 512 24 -> B59
view B56 640 24 -> B60
view B56 768 24 -> B61
view B56 896 8 -> B62
view B56 1024 24 -> B63
view B56 1152 8 -> B64
view B56 1280 56 -> B65
upload B56 h1408 Q2 record=0 -> E45
alloc 1280 -> B66
view B66 0 896 -> B67
view B66 896 32 -> B68
view B66 1024 32 -> B69
view B66 1152 32 -> B70
alloc 201 -> B71
alloc 32 -> B72
marker Q2 -> E46
after Q5 [E46]
launch gcm_hkey 2 ([B57,44,B67,28,4,2]) [Q5,0] -> E47
launch gcm_hpow 48 ([B67,28,4,3,2,0,1,0]) [Q5,0] -> E48
launch gcm_j0 2 ([B65,12,B64,B67,28,B68,0,2]) [Q5,0] -> E49
launch gcm_ghash 256 ([B58,B55,B60,B59,B63,B64,B67,28,4,3,1,B70,0,2,0,2,0]) [Q5,0] -> E50
launch gcm_ctr 14 ([B55,B71,B59,B61,B62,B64,B57,44,B68,B69,0,2,0,14]) [Q5,0] -> E51
launch gcm_tag 256 ([B70,B63,B69,B72,0,2,0]) [Q5,0] -> E52
marker Q5 -> E53
after Q4 [E53]
download h169 B71 Q4 offset=0 record=0 -> E54
zero B57 Q5 wait=0
zero B66 Q5 wait=0
marker Q5 -> E55
host_staging 32
download h32 B72 Q4 record=0 -> E56
marker Q4 -> E57
wait E15
wait E13
wait E29
wait E27
wait E43
wait E41
wait E57
wait E55
""", """

"""),
    "gcm_seal_slices": ("""
alloc 3130 -> B1
upload B1 h512 Q2 offset=0 record=0 -> E1
marker Q2 -> E2
host_staging 1408
alloc 1408 -> B2
view B2 0 352 -> B3
view B2 384 47 -> B4
view B2 512 56 -> B5
view B2 640 56 -> B6
view B2 768 56 -> B7
view B2 896 8 -> B8
view B2 1024 56 -> B9
view B2 1152 24 -> B10
view B2 1280 104 -> B11
upload B2 h1408 Q2 record=0 -> E3
alloc 1792 -> B12
view B12 0 1280 -> B13
view B12 1280 96 -> B14
view B12 1408 96 -> B15
view B12 1536 176 -> B16
marker Q2 -> E4
upload B1 h506 Q2 offset=512 record=0 -> E5
marker Q2 -> E6
upload B1 h2048 Q2 offset=1018 record=0 -> E7
marker Q2 -> E8
alloc 3098 -> B17
alloc 96 -> B18
marker Q2 -> E9
after Q3 [E4]
launch gcm_j0 6 ([B11,12,B10,B13,40,B14,0,6]) [Q3,0] -> E10
launch gcm_ctr 3 ([B1,B17,B5,B7,B8,B10,B3,44,B14,B15,0,3,0,3]) [Q3,0] -> E11
launch gcm_hkey 2 ([B3,44,B13,40,8,2]) [Q3,0] -> E12
launch gcm_hpow 64 ([B13,40,8,4,2,0,1,0]) [Q3,0] -> E13
marker Q3 -> E14
after Q4 [E14]
download h1 B17 Q4 offset=0 record=0 -> E15
after Q3 [E6]
launch gcm_ctr 68 ([B1,B17,B5,B7,B8,B10,B3,44,B14,B15,2,6,3,71]) [Q3,0] -> E16
marker Q3 -> E17
after Q4 [E17]
download h1017 B17 Q4 offset=1 record=0 -> E18
after Q3 [E8]
launch gcm_ctr 129 ([B1,B17,B5,B7,B8,B10,B3,44,B14,B15,5,6,71,200]) [Q3,0] -> E19
marker Q3 -> E20
after Q4 [E20]
download h2048 B17 Q4 offset=1018 record=0 -> E21
launch gcm_ghash 256 ([B4,B17,B6,B5,B9,B10,B13,40,8,4,1,B16,0,6,0,11,0]) [Q3,0] -> E22
launch gcm_tag 256 ([B16,B9,B15,B18,0,6,3]) [Q3,0] -> E23
marker Q3 -> E24
zero B3 Q3 wait=0
zero B12 Q3 wait=0
marker Q3 -> E25
host_staging 96
after Q4 [E24]
download h96 B18 Q4 record=0 -> E26
marker Q4 -> E27
alloc 1475 -> B19
upload B19 h69 Q2 offset=0 record=0 -> E28
marker Q2 -> E29
host_staging 1408
alloc 1408 -> B20
view B20 0 352 -> B21
view B20 384 44 -> B22
view B20 512 48 -> B23
view B20 640 48 -> B24
view B20 768 48 -> B25
view B20 896 8 -> B26
view B20 1024 48 -> B27
view B20 1152 20 -> B28
view B20 1280 92 -> B29
upload B20 h1408 Q2 record=0 -> E30
alloc 1536 -> B30
view B30 0 992 -> B31
view B30 1024 80 -> B32
view B30 1152 80 -> B33
view B30 1280 160 -> B34
marker Q2 -> E31
upload B19 h1374 Q2 offset=69 record=0 -> E32
marker Q2 -> E33
alloc 1475 -> B35
alloc 80 -> B36
marker Q2 -> E34
after Q5 [E31]
launch gcm_j0 5 ([B29,12,B28,B31,31,B32,0,5]) [Q5,0] -> E35
launch gcm_ctr 7 ([B19,B35,B23,B25,B26,B28,B21,44,B32,B33,0,3,0,7]) [Q5,0] -> E36
launch gcm_hkey 2 ([B21,44,B31,31,7,2]) [Q5,0] -> E37
launch gcm_hpow 48 ([B31,31,7,3,2,0,1,0]) [Q5,0] -> E38
marker Q5 -> E39
after Q4 [E39]
download h69 B35 Q4 offset=0 record=0 -> E40
after Q5 [E33]
launch gcm_ctr 90 ([B19,B35,B23,B25,B26,B28,B21,44,B32,B33,2,5,7,97]) [Q5,0] -> E41
marker Q5 -> E42
after Q4 [E42]
download h1374 B35 Q4 offset=69 record=0 -> E43
launch gcm_ghash 256 ([B22,B35,B24,B23,B27,B28,B31,31,7,3,1,B34,0,5,0,10,0]) [Q5,0] -> E44
launch gcm_tag 256 ([B34,B27,B33,B36,0,5,3]) [Q5,0] -> E45
marker Q5 -> E46
zero B21 Q5 wait=0
zero B30 Q5 wait=0
marker Q5 -> E47
host_staging 80
after Q4 [E46]
download h80 B36 Q4 record=0 -> E48
marker Q4 -> E49
alloc 932 -> B37
upload B37 h900 Q2 offset=0 record=0 -> E50
host_staging 1408
alloc 1408 -> B38
view B38 0 352 -> B39
view B38 384 36 -> B40
view B38 512 16 -> B41
view B38 640 16 -> B42
view B38 768 16 -> B43
view B38 896 8 -> B44
view B38 1024 16 -> B45
view B38 1152 4 -> B46
view B38 1280 44 -> B47
upload B38 h1408 Q2 record=0 -> E51
alloc 3200 -> B48
view B48 0 2784 -> B49
view B48 2816 16 -> B50
view B48 2944 16 -> B51
view B48 3072 16 -> B52
alloc 932 -> B53
alloc 16 -> B54
marker Q2 -> E52
after Q3 [E52]
launch gcm_j0 1 ([B47,12,B46,B49,87,B50,0,1]) [Q3,0] -> E53
launch gcm_ctr 58 ([B37,B53,B41,B43,B44,B46,B39,44,B50,B51,0,1,0,58]) [Q3,0] -> E54
launch gcm_hkey 2 ([B39,44,B49,87,7,2]) [Q3,0] -> E55
launch gcm_hpow 160 ([B49,87,7,6,2,0,0,0]) [Q3,0] -> E56
launch gcm_ghash 256 ([B40,B53,B42,B41,B45,B46,B49,87,7,6,0,B52,0,1,0,1,0]) [Q3,0] -> E57
launch gcm_tag 256 ([B52,B45,B51,B54,0,1,0]) [Q3,0] -> E58
marker Q3 -> E59
after Q4 [E59]
download h900 B53 Q4 offset=0 record=0 -> E60
zero B39 Q3 wait=0
zero B48 Q3 wait=0
marker Q3 -> E61
host_staging 16
download h16 B54 Q4 record=0 -> E62
marker Q4 -> E63
alloc 201 -> B55
upload B55 h169 Q2 offset=0 record=0 -> E64
host_staging 1408
alloc 1408 -> B56
view B56 0 352 -> B57
view B56 384 43 -> B58
view B56 512 24 -> B59
view B56 640 24 -> B60
view B56 768 24 -> B61
view B56 896 8 -> B62
view B56 1024 24 -> B63
view B56 1152 8 -> B64
view B56 1280 56 -> B65
upload B56 h1408 Q2 record=0 -> E65
alloc 1280 -> B66
view B66 0 896 -> B67
view B66 896 32 -> B68
view B66 1024 32 -> B69
view B66 1152 32 -> B70
alloc 201 -> B71
alloc 32 -> B72
marker Q2 -> E66
after Q5 [E66]
launch gcm_j0 2 ([B65,12,B64,B67,28,B68,0,2]) [Q5,0] -> E67
launch gcm_ctr 14 ([B55,B71,B59,B61,B62,B64,B57,44,B68,B69,0,2,0,14]) [Q5,0] -> E68
launch gcm_hkey 2 ([B57,44,B67,28,4,2]) [Q5,0] -> E69
launch gcm_hpow 48 ([B67,28,4,3,2,0,1,0]) [Q5,0] -> E70
launch gcm_ghash 256 ([B58,B71,B60,B59,B63,B64,B67,28,4,3,1,B70,0,2,0,2,0]) [Q5,0] -> E71
launch gcm_tag 256 ([B70,B63,B69,B72,0,2,0]) [Q5,0] -> E72
marker Q5 -> E73
after Q4 [E73]
download h169 B71 Q4 offset=0 record=0 -> E74
zero B57 Q5 wait=0
zero B66 Q5 wait=0
marker Q5 -> E75
host_staging 32
download h32 B72 Q4 record=0 -> E76
marker Q4 -> E77
wait E27
wait E25
wait E49
wait E47
wait E63
wait E61
wait E77
wait E75
""", """

"""),
    "block_pipe": ("""
queue  -> Q2
queue  -> Q3
queue  -> Q4
alloc 4096 -> B1
alloc 4096 -> B2
alloc 4096 -> B3
alloc 4096 -> B4
upload B1 h4096 Q2 offset=0 wait_for=- -> E1
launch cg_ecb_enc 256 ([B1,B2,Buffer,256]) [Q3,1,[E1,NannyEvent]] -> E2
download h4096 B2 Q4 offset=0 wait_for=[E2] -> E3
upload B3 h4096 Q2 offset=0 wait_for=- -> E4
launch cg_ecb_enc 256 ([B3,B4,Buffer,256]) [Q3,1,[E4,NannyEvent]] -> E5
download h4096 B4 Q4 offset=0 wait_for=[E5] -> E6
upload B1 h4096 Q2 offset=0 wait_for=[E2] -> E7
launch cg_ecb_enc 256 ([B1,B2,Buffer,256]) [Q3,1,[E7,E3,NannyEvent]] -> E8
download h4096 B2 Q4 offset=0 wait_for=[E8] -> E9
upload B3 h512 Q2 offset=0 wait_for=[E5] -> E10
launch cg_ecb_enc 32 ([B3,B4,Buffer,32]) [Q3,1,[E10,E6,NannyEvent]] -> E11
download h512 B4 Q4 offset=0 wait_for=[E11] -> E12
""", """
1x wait E12
1x wait E3
1x wait E6
1x wait E9
"""),
    "gcm_seal_rows": ("""
alloc 800 -> B1
upload B1 h768 Q2 offset=0 record=0 -> E1
host_staging 1280
alloc 1280 -> B2
view B2 0 176 -> B3
view B2 256 32 -> B4
view B2 384 32 -> B5
view B2 512 32 -> B6
view B2 640 32 -> B7
view B2 768 8 -> B8
view B2 896 32 -> B9
view B2 1024 12 -> B10
view B2 1152 68 -> B11
upload B2 h1280 Q2 record=0 -> E2
alloc 33792 -> B12
view B12 0 33168 -> B13
view B12 33280 48 -> B14
view B12 33408 48 -> B15
view B12 33536 192 -> B16
alloc 800 -> B17
alloc 48 -> B18
marker Q2 -> E3
after Q3 [E3]
launch gcm_j0 3 ([B11,12,B10,B13,2073,B14,0,3]) [Q3,0] -> E4
launch gcm_ctr_one 256 ([B1,B17,B5,B7,B8,B3,B14,B15,0,3,0,48,0,3]) [Q3,0] -> E5
launch gcm_hkey 1 ([B3,44,B13,2073,5,1]) [Q3,0] -> E6
launch gcm_hpow 2048 ([B13,2073,5,2,1,1,0,16]) [Q3,0] -> E7
launch gcm_ghash_pos 256 ([B4,B17,B6,B5,B9,B13,5,2,0,B16,0,3,0,12,16]) [Q3,0] -> E8
launch gcm_tag 256 ([B16,B9,B15,B18,0,3,2]) [Q3,0] -> E9
marker Q3 -> E10
after Q4 [E10]
download h768 B17 Q4 offset=0 record=0 -> E11
zero B3 Q3 wait=0
zero B12 Q3 wait=0
marker Q3 -> E12
host_staging 48
download h48 B18 Q4 record=0 -> E13
marker Q4 -> E14
alloc 800 -> B19
upload B19 h768 Q2 offset=0 record=0 -> E15
host_staging 1280
alloc 1280 -> B20
view B20 0 176 -> B21
view B20 256 32 -> B22
view B20 384 32 -> B23
view B20 512 32 -> B24
view B20 640 32 -> B25
view B20 768 8 -> B26
view B20 896 32 -> B27
view B20 1024 12 -> B28
view B20 1152 68 -> B29
upload B20 h1280 Q2 record=0 -> E16
alloc 33792 -> B30
view B30 0 33168 -> B31
view B30 33280 48 -> B32
view B30 33408 48 -> B33
view B30 33536 192 -> B34
alloc 800 -> B35
alloc 48 -> B36
marker Q2 -> E17
after Q3 [E17]
launch gcm_j0 3 ([B29,12,B28,B31,2073,B32,0,3]) [Q3,0] -> E18
launch gcm_ctr_one 256 ([B19,B35,B23,B25,B26,B21,B32,B33,0,3,0,48,0,3]) [Q3,0] -> E19
launch gcm_hkey 1 ([B21,44,B31,2073,5,1]) [Q3,0] -> E20
launch gcm_hpow 2048 ([B31,2073,5,2,1,1,0,16]) [Q3,0] -> E21
launch gcm_ghash_pos 256 ([B22,B35,B24,B23,B27,B31,5,2,0,B34,0,3,0,12,16]) [Q3,0] -> E22
launch gcm_tag 256 ([B34,B27,B33,B36,0,3,2]) [Q3,0] -> E23
marker Q3 -> E24
after Q4 [E24]
download h768 B35 Q4 offset=0 record=0 -> E25
zero B21 Q3 wait=0
zero B30 Q3 wait=0
marker Q3 -> E26
host_staging 48
download h48 B36 Q4 record=0 -> E27
marker Q4 -> E28
alloc 800 -> B37
upload B37 h768 Q2 offset=0 record=0 -> E29
host_staging 1280
alloc 1280 -> B38
view B38 0 176 -> B39
view B38 256 32 -> B40
view B38 384 32 -> B41
view B38 512 32 -> B42
view B38 640 32 -> B43
view B38 768 8 -> B44
view B38 896 32 -> B45
view B38 1024 12 -> B46
view B38 1152 68 -> B47
upload B38 h1280 Q2 record=0 -> E30
alloc 33792 -> B48
view B48 0 33168 -> B49
view B48 33280 48 -> B50
view B48 33408 48 -> B51
view B48 33536 192 -> B52
alloc 800 -> B53
alloc 48 -> B54
marker Q2 -> E31
after Q3 [E31]
launch gcm_j0 3 ([B47,12,B46,B49,2073,B50,0,3]) [Q3,0] -> E32
launch gcm_ctr_one 256 ([B37,B53,B41,B43,B44,B39,B50,B51,0,3,0,48,0,3]) [Q3,0] -> E33
launch gcm_hkey 1 ([B39,44,B49,2073,5,1]) [Q3,0] -> E34
launch gcm_hpow 2048 ([B49,2073,5,2,1,1,0,16]) [Q3,0] -> E35
launch gcm_ghash_pos 256 ([B40,B53,B42,B41,B45,B49,5,2,0,B52,0,3,0,12,16]) [Q3,0] -> E36
launch gcm_tag 256 ([B52,B45,B51,B54,0,3,2]) [Q3,0] -> E37
marker Q3 -> E38
after Q4 [E38]
download h768 B53 Q4 offset=0 record=0 -> E39
zero B39 Q3 wait=0
zero B48 Q3 wait=0
marker Q3 -> E40
host_staging 48
download h48 B54 Q4 record=0 -> E41
marker Q4 -> E42
alloc 544 -> B55
upload B55 h512 Q2 offset=0 record=0 -> E43
host_staging 1280
alloc 1280 -> B56
view B56 0 176 -> B57
view B56 256 32 -> B58
view B56 384 24 -> B59
view B56 512 24 -> B60
view B56 640 24 -> B61
view B56 768 8 -> B62
view B56 896 24 -> B63
view B56 1024 8 -> B64
view B56 1152 56 -> B65
upload B56 h1280 Q2 record=0 -> E44
alloc 33664 -> B66
view B66 0 33168 -> B67
view B66 33280 32 -> B68
view B66 33408 32 -> B69
view B66 33536 128 -> B70
alloc 544 -> B71
alloc 32 -> B72
marker Q2 -> E45
after Q3 [E45]
launch gcm_j0 2 ([B65,12,B64,B67,2073,B68,0,2]) [Q3,0] -> E46
launch gcm_ctr_one 256 ([B55,B71,B59,B61,B62,B57,B68,B69,0,2,0,32,0,2]) [Q3,0] -> E47
launch gcm_hkey 1 ([B57,44,B67,2073,5,1]) [Q3,0] -> E48
launch gcm_hpow 2048 ([B67,2073,5,2,1,1,0,16]) [Q3,0] -> E49
launch gcm_ghash_pos 256 ([B58,B71,B60,B59,B63,B67,5,2,0,B70,0,2,0,8,16]) [Q3,0] -> E50
launch gcm_tag 256 ([B70,B63,B69,B72,0,2,2]) [Q3,0] -> E51
marker Q3 -> E52
after Q4 [E52]
download h512 B71 Q4 offset=0 record=0 -> E53
zero B57 Q3 wait=0
zero B66 Q3 wait=0
marker Q3 -> E54
host_staging 32
download h32 B72 Q4 record=0 -> E55
marker Q4 -> E56
wait E14
wait E12
alloc 288 -> B73
upload B73 h256 Q2 offset=0 record=0 -> E57
host_staging 1280
alloc 1280 -> B74
view B74 0 176 -> B75
view B74 256 32 -> B76
view B74 384 16 -> B77
view B74 512 16 -> B78
view B74 640 16 -> B79
view B74 768 8 -> B80
view B74 896 16 -> B81
view B74 1024 4 -> B82
view B74 1152 44 -> B83
upload B74 h1280 Q2 record=0 -> E58
alloc 33664 -> B84
view B84 0 33168 -> B85
view B84 33280 16 -> B86
view B84 33408 16 -> B87
view B84 33536 64 -> B88
alloc 288 -> B89
alloc 16 -> B90
marker Q2 -> E59
after Q3 [E59]
launch gcm_j0 1 ([B83,12,B82,B85,2073,B86,0,1]) [Q3,0] -> E60
launch gcm_ctr_one 256 ([B73,B89,B77,B79,B80,B75,B86,B87,0,1,0,16,0,1]) [Q3,0] -> E61
launch gcm_hkey 1 ([B75,44,B85,2073,5,1]) [Q3,0] -> E62
launch gcm_hpow 2048 ([B85,2073,5,2,1,1,0,16]) [Q3,0] -> E63
launch gcm_ghash_pos 256 ([B76,B89,B78,B77,B81,B85,5,2,0,B88,0,1,0,4,16]) [Q3,0] -> E64
launch gcm_tag 256 ([B88,B81,B87,B90,0,1,2]) [Q3,0] -> E65
marker Q3 -> E66
after Q4 [E66]
download h256 B89 Q4 offset=0 record=0 -> E67
zero B75 Q3 wait=0
zero B84 Q3 wait=0
marker Q3 -> E68
host_staging 16
download h16 B90 Q4 record=0 -> E69
marker Q4 -> E70
wait E28
wait E26
wait E42
wait E40
wait E56
wait E54
wait E70
wait E68
""", """

"""),
}
