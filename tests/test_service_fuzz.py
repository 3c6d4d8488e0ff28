"""The service's protocol fuzzed (ciphergrid/testing/service_fuzz.py): a service of its own in a
process (started and stopped here, on a socket in a temporary folder), a fixed seed, a bounded
time; every reply a success or a clean error naming the broken field, the service alive and
answering after, its threads bounded and its descriptors back where they were.  A longer run:
scripts/dev/fuzz_service.py --seconds N --seed S."""
from __future__ import annotations

import pytest

from ciphergrid.testing import service_fuzz

SEED = 20261206


@pytest.fixture
def served(monkeypatch):
    """The service with OpenSSL alone (no OpenCL or CUDA device: no kernel builds)."""
    monkeypatch.setenv("CIPHERGRID_NO_OPENCL", "1")
    monkeypatch.setenv("CIPHERGRID_NO_CUDA", "1")
    with service_fuzz.ServerProcess() as srv:
        yield srv


def test_the_fuzzer_finds_a_fault():
    """The checks catch what they look for: Python's internals in a reply, a refusal that names
    no field, an accepted request that broke a rule, a silent close."""
    case = service_fuzz.Case("probe", {"op": "stream"}, named={"depth"})
    assert service_fuzz.problems(case, {"error": {"type": "ServiceError", "message":
                                 "TypeError: '<' not supported between instances of 'int' and 'str'"}})
    assert service_fuzz.problems(case, {"error": {"type": "InvalidArgument", "message": "stream: no"}})
    assert service_fuzz.problems(case, {"ok": True})
    assert service_fuzz.problems(case, None)
    assert not service_fuzz.problems(case, {"error": {"type": "InvalidArgument",
                                                      "message": "stream: depth must be ..."}})


def test_fuzzed_requests_get_clean_replies_and_leave_nothing_behind(served):
    fuzz = service_fuzz.Fuzzer(served, SEED, reply_timeout=20)
    summary = fuzz.run(seconds=12, max_cases=4000)
    assert not fuzz.problems, (summary, fuzz.problems[:10])
    assert summary["cases"] >= 200 and summary["ok"] and summary["errors"], summary
    assert served.alive()
