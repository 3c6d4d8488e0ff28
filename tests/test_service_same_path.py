"""A served job runs the command line's own path (issue 50): ``encrypt`` through a service calls
the same stream function (transfer.files.run_stream) with the same size, fresh-output, chunk and
depth decisions as in process, and its engine cuts the same pieces; ``seal`` / ``open`` through
a service run transfer.sealed's pieces with the same piece sizes and workers.  A served
stream's client does not wait for its output's reservation (the service faults a fresh output
in itself where its plan says so), as an OpenSSL stream in process does not.

The service is a thread of the test's own process (so the spies see both sides); the commands
run in this process; OpenSSL ("native"), a few MiB."""
from __future__ import annotations

import os

from ciphergrid.fileio import Output
from ciphergrid.testing import oracle
from ciphergrid.transfer import files, pieces, sealed
from conftest import cli_main as _main

KEY = "000102030405060708090a0b0c0d0e0f"
N = (3 << 20) + 16


def _spies(monkeypatch) -> list:
    """What the stream, the pieces and the output's reservation were asked, in order."""
    seen = []
    run_stream, plan = files.run_stream, pieces.plan

    def spy_stream(p, src, dst, **kw):
        seen.append(("run_stream", p.engine.kind, kw["nbytes"], kw["fresh"], kw["chunk_bytes"],
                     kw["depth"]))
        return run_stream(p, src, dst, **kw)

    def spy_plan(*a, **kw):
        got = plan(*a, **kw)
        seen.append(("pieces", got))
        return got

    monkeypatch.setattr(files, "run_stream", spy_stream)
    monkeypatch.setattr(pieces, "plan", spy_plan)
    for name in ("wait_reserved", "stop_reserving"):
        real = getattr(Output, name)
        monkeypatch.setattr(Output, name, lambda self, _r=real, _n=name: (seen.append((_n,)),
                                                                          _r(self))[1])
    return seen


def test_a_served_stream_runs_the_in_process_path(server, folder, monkeypatch):
    data = os.urandom(N)
    src, out = os.path.join(folder, "in"), os.path.join(folder, "out")
    with open(src, "wb") as f:
        f.write(data)
    want = oracle.encrypt(data, "aes-128-ctr", bytes.fromhex(KEY), bytes.fromhex(KEY))
    seen = _spies(monkeypatch)
    common = ["encrypt", "-c", "aes-128-ctr", "--key", KEY, "--iv", KEY, "--device", "native",
              "--in", src, "--out", out, "--no-sync", "-q"]
    runs = {}
    for where in ("off", server.address):
        seen.clear()
        assert _main(*common, "--service", where) == 0
        with open(out, "rb") as f:
            assert f.read() == want
        runs[where] = list(seen)
    here, served = runs["off"], runs[server.address]
    assert here[0] == ("stop_reserving",) and served[0] == ("stop_reserving",)
    assert here[1] == ("run_stream", "openssl", N, True, None, None)
    assert served[1] == ("run_stream", "remote", N, True, None, None)
    # the service: the same call, then the same pieces
    assert served[2:] == here[1:], (here, served)


def test_served_seal_and_open_cut_the_in_process_pieces(server, folder, monkeypatch):
    kf = os.path.join(folder, "k")
    with open(kf, "w") as f:
        f.write(KEY)
    src, out, back = (os.path.join(folder, n) for n in ("m", "m.cg", "back"))
    data = os.urandom(N)
    with open(src, "wb") as f:
        f.write(data)
    seen = []
    real = sealed._run

    def spy(*a):   # (src, dst, in_step, out_step, chunks per piece, workers, ...)
        seen.append(a[2:6])
        return real(*a)

    monkeypatch.setattr(sealed, "_run", spy)
    runs = {}
    for where in ("off", server.address):
        seen.clear()
        svc = ["--key-file", kf, "--device", "native", "--no-sync", "-q", "--service", where]
        assert _main("seal", "--in", src, "--out", out, *svc) == 0
        assert _main("open", "--in", out, "--out", back, *svc) == 0
        with open(back, "rb") as f:
            assert f.read() == data
        runs[where] = list(seen)
    assert len(runs["off"]) == 2 and runs[server.address] == runs["off"], runs
