"""MPI ranks are engines of the composite dealer (ciphergrid/cluster/manager.py), without MPI:
rank engines whose line to their rank is a function here, dealt a file job's ranges by the
scheduler's Run (shares, tail, a failed range dealt again, a job fault ending the job, the other
ranks asked to leave their ranges), and the ``mpi`` kind's column of the capability table while
it is registered."""

from __future__ import annotations

import threading

import pytest

from ciphergrid import registry
from ciphergrid.backends.base import DeviceInfo
from ciphergrid.cluster.manager import KIND, FileRanges, RankEngine, can_run
from ciphergrid.cluster.wire import _DONE, _FAILED, _HALTED
from ciphergrid.engines.scheduler.run import Run, SchedulerStats
from ciphergrid.errors import DeviceError, EngineFailureWarning
from ciphergrid.runtime import Runtime

STEP = 64 << 10


def _plan(n, serial=False):
    return {"n": n, "step": STEP, "unit": 16, "serial": serial, "cipher": "aes-128-ctr",
            "encrypt": True}


class _Rank:
    """A rank's side: the ranges it ran; it fails (or finds the input bad) from a byte on."""

    def __init__(self, fail_at=None, bad=None):
        self.ran, self.fail_at, self.bad = [], fail_at, bad
        self.lock = threading.Lock()

    def line(self, msg):
        assert msg[0] == "range"
        a, b = msg[1], msg[2]
        if self.bad is not None:
            return (_FAILED, "chunk 3 does not verify", self.bad)
        if self.fail_at is not None and b > self.fail_at:
            return (_FAILED, "DeviceError: the node's GPU fell off the bus", None)
        with self.lock:
            self.ran.append((a, b))
        return (_DONE,)


def _engines(ranks):
    return [RankEngine(DeviceInfo(spec=f"rank:{w}", runtime=KIND, name="native", kind="native",
                                  compute_units=1, memory=0, extra={"rank": w}), r.line)
            for w, r in enumerate(ranks, 1)]


@pytest.fixture
def mpi_kind(tmp_path, monkeypatch):
    """A runtime of the test's own: the speeds the scheduler learnt of ``rank:N`` in another
    test (ranks answer at once: very fast) must not shrink a rank's share to nothing here."""
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))   # (no speeds kept)
    registry.register_engine_kind(KIND, lambda info: None, can_run, devices=lambda: ())
    try:
        with Runtime("test_mpi_dealer") as rt:
            yield rt
    finally:
        registry.unregister_engine_kind(KIND)


def _covered(ranks) -> list:
    spans = sorted(s for r in ranks for s in r.ran)
    merged = []
    for a, b in spans:
        assert not merged or a >= merged[-1][1], spans   # (no byte run twice)
        if merged and merged[-1][1] == a:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def test_a_file_job_is_dealt_to_every_rank_and_a_failed_range_again(mpi_kind):
    n = 20 * STEP + 5
    ranks = [_Rank(), _Rank(fail_at=0), _Rank()]
    engines = _engines(ranks)
    stats = SchedulerStats()
    with pytest.warns(EngineFailureWarning, match="run again elsewhere"):
        Run(FileRanges(_plan(n)), engines, stats, "direct", mpi_kind).go()
    assert _covered(ranks) == [(0, n)]
    assert ranks[0].ran and ranks[2].ran and not ranks[1].ran
    assert all(a % STEP == 0 for r in ranks for a, _ in r.ran)   # (on the plan's step)
    assert engines[1].broken and engines[1].capability(_req()) is None
    assert stats.failures and "rank:2" in stats.failures[0] and stats.rework_bytes > 0
    assert sum(e.bytes for e in engines) == n


def test_a_serial_message_is_one_range_run_by_one_rank(mpi_kind):
    ranks = [_Rank(fail_at=0), _Rank()]
    with pytest.warns(EngineFailureWarning):
        Run(FileRanges(_plan(7 * STEP, serial=True)), _engines(ranks), SchedulerStats(),
            "direct", mpi_kind).go()
    assert ranks[1].ran == [(0, 7 * STEP)] and not ranks[0].ran


def test_an_input_fault_ends_the_dealing_and_is_not_dealt_again(mpi_kind):
    bad = ValueError("chunk 3 does not verify")
    ranks = [_Rank(bad=bad), _Rank()]
    work = FileRanges(_plan(8 * STEP))
    engines = _engines(ranks)
    Run(work, engines, SchedulerStats(), "direct", mpi_kind).go()
    assert work.fault is bad and not any(e.broken for e in engines)


def test_a_job_fault_has_the_other_ranks_leave_their_ranges(mpi_kind):
    """A fault of the job (rank 1's write of the output fails) while rank 2 runs its share: the
    dealer asks every rank to leave its range (halt), rank 2 answers that range halted at its
    next step, and the job ends with rank 1's fault alone -- no rank broken, nothing dealt
    again, no warning."""
    import warnings

    full = OSError(28, "No space left on device")
    busy, halted, left = threading.Event(), threading.Event(), []

    class _Full(_Rank):
        def line(self, msg):   # (once rank 2 runs its share)
            busy.wait(10)
            return super().line(msg)

    class _Busy(_Rank):
        def line(self, msg):   # (a long share: it runs until it is asked to leave it)
            busy.set()
            if halted.wait(10):
                left.append(msg)
                return (_HALTED,)
            return super().line(msg)

    ranks = [_Full(bad=full), _Busy()]
    work = FileRanges(_plan(8 * STEP))
    work.halt = halted.set
    engines = _engines(ranks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Run(work, engines, SchedulerStats(), "direct", mpi_kind).go()
    assert halted.is_set() and work.fault is full and len(left) == 1
    assert not ranks[1].ran and not any(e.broken for e in engines)


def test_a_rank_asked_to_leave_its_range_stops_at_its_next_step(tmp_path):
    """A worker's side (cluster.worker): asked to halt after its range's first step, it writes
    that step only and answers the range halted, not failed (it stays whole)."""
    import os

    from ciphergrid.api import _request
    from ciphergrid.cluster.job import _plan as job_plan
    from ciphergrid.cluster.worker import answer, make_runner
    from ciphergrid.testing import oracle

    data, key, iv = os.urandom(4 * STEP), os.urandom(16), os.urandom(16)
    (tmp_path / "in").write_bytes(data)
    (tmp_path / "out").write_bytes(bytes(4 * STEP))
    req = _request("aes-128-ctr", key, iv, True, None, None, None, False, None)
    plan = job_plan(req, str(tmp_path / "in"), 0, len(data), str(tmp_path / "out"), 0, STEP)
    runner = make_runner(plan, "native", 1)
    asked = []
    runner.halted = lambda: asked.append(1) or True
    try:
        assert answer(runner, ("range", 0, 4 * STEP), None) == ((_HALTED,), None)
    finally:
        runner.close()
    assert len(asked) == 1
    got = (tmp_path / "out").read_bytes()
    assert got[:STEP] == oracle.encrypt(data, "aes-128-ctr", key, iv)[:STEP] and got[STEP:] == bytes(3 * STEP)


class _HaltQueue:
    """A worker's side of the communicator: the _HALT messages rank 0 sent it, in order."""

    def __init__(self, *messages):
        self.messages = list(messages)

    def Iprobe(self, source, tag):
        return bool(self.messages)

    def recv(self, source, tag):
        return self.messages.pop(0)


def test_a_rank_leaves_its_range_only_for_a_halt_of_its_own_job():
    """A halt carries its job's plan["halt_id"]: one an earlier job on the same communicator
    sent late is taken and dropped (the rank runs on), this job's halts it."""
    from ciphergrid.cluster.worker import _halt_asked

    late = _HaltQueue(("halt", b"earlier job"))
    assert _halt_asked(late, b"this job") is False and late.messages == []
    both = _HaltQueue(("halt", b"earlier job"), ("halt", b"this job"))
    assert _halt_asked(both, b"this job") is True and both.messages == []
    assert _halt_asked(_HaltQueue(), b"this job") is False


def test_every_rank_failing_is_the_jobs_failure(mpi_kind):
    ranks = [_Rank(fail_at=0), _Rank(fail_at=0)]
    with pytest.raises(DeviceError, match="every engine failed"):
        Run(FileRanges(_plan(4 * STEP)), _engines(ranks), SchedulerStats(), "direct",
            mpi_kind).go()


def _req(name="aes-128-ctr", encrypt=True):
    from ciphergrid.request import make_request

    spec = registry.lookup(name)
    return make_request(spec, bytes(spec.key_len), bytes(spec.iv_len) or None, encrypt)


def test_the_kind_is_a_column_of_the_capability_table_while_registered(mpi_kind):
    caps = registry.lookup("aes-128-cbc").capabilities()
    assert caps["encrypt"][KIND] == "serial" and caps["decrypt"][KIND] == "parallel"
    eng = _engines([_Rank()])[0]
    assert eng.capability(_req()) == "parallel"
    assert eng.capability(_req("aes-128-cbc")) == "serial"


def test_ranges_are_cut_finer_than_the_step(mpi_kind):
    """A rank runs a range a step at a time, so the dealer cuts on the scheduler's grain where
    the step is coarser: two ranks share a job of four steps by more than whole steps."""
    from ciphergrid.engines.scheduler.units import GRAIN

    step = 16 * GRAIN
    ranks = [_Rank(), _Rank()]
    plan = {**_plan(4 * step), "step": step}
    Run(FileRanges(plan), _engines(ranks), SchedulerStats(), "direct", mpi_kind).go()
    assert _covered(ranks) == [(0, 4 * step)]
    starts = [a for r in ranks for a, _ in r.ran]
    assert all(a % GRAIN == 0 for a in starts) and any(a % step for a in starts)


def test_ranks_are_never_judged_alone(mpi_kind, monkeypatch):
    """The scheduler's rule "together, or the fastest member alone" is for engines sharing one
    host's memory: a job over ranks runs together whatever the calibration says."""
    from ciphergrid.engines.scheduler import run, speeds

    def alone(rt, work, members, fenced=False):
        return speeds.Choice(alone=members[0].info.spec, why="alone (the test's)")

    monkeypatch.setattr(run, "choose", alone)
    ranks = [_Rank(), _Rank()]
    stats = SchedulerStats()
    Run(FileRanges(_plan(16 * STEP)), _engines(ranks), stats, "direct", mpi_kind).go()
    assert stats.alone is None and ranks[0].ran and ranks[1].ran
