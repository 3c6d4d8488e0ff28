"""The remote engine kind (engines/remote.py): a service is an engine.  ``device="service:PATH"``
runs a call there through route and its plan, CIPHERGRID_SERVICE makes route choose it, the plan
says so, and a service that does not answer is a DeviceError (the command line's exit 5)."""

from __future__ import annotations

import numpy as np
import pytest

import ciphergrid
from ciphergrid import registry, route, service
from ciphergrid.engines import remote
from ciphergrid.request import aead_request, make_request
from ciphergrid.testing import oracle, services


@pytest.fixture
def server():
    """A service in a thread of this process; stopped (and its socket gone) at the end."""
    with services.short_folder("cg-rem-") as folder, services.threaded(folder) as s:
        try:
            yield s
        finally:
            service.forget()   # (this runtime's connections to it: the service stops at once)


def _jobs(server) -> int:
    return server.status()["totals"]["jobs"]


def test_buffers_and_batches_through_the_remote_engine_equal_in_process(server, rng):
    where = f"service:{server.address}"
    key, iv = rng.randbytes(16), rng.randbytes(16)
    before = _jobs(server)
    for n in (100, 200 << 10):   # (inline, and through the connection's shared buffer)
        data = rng.data(n)
        ct = ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device=where)
        assert ct == oracle.encrypt(data, "aes-128-ctr", key, iv)
        assert ciphergrid.decrypt(ct, "aes-128-ctr", key, iv, device=where) == data
    padded = ciphergrid.encrypt(b"x" * 33, "aes-128-cbc", key, iv, padding="pkcs7", device=where)
    assert padded == ciphergrid.encrypt(b"x" * 33, "aes-128-cbc", key, iv, padding="pkcs7",
                                        device="native")
    nonce = rng.randbytes(12)
    sealed = ciphergrid.encrypt(b"secret", "aes-128-gcm", key, nonce=nonce, aad=b"h", device=where)
    assert sealed == ciphergrid.encrypt(b"secret", "aes-128-gcm", key, nonce=nonce, aad=b"h",
                                        device="native")
    with pytest.raises(ciphergrid.InvalidTag):
        ciphergrid.decrypt(sealed[:-1] + bytes([sealed[-1] ^ 1]), "aes-128-gcm", key,
                           nonce=nonce, aad=b"h", device=where)
    msgs, nonces = [b"a" * 100, b"b" * 7, b""], [rng.randbytes(12) for _ in range(3)]
    here = ciphergrid.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces, device="native")
    there = ciphergrid.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces, device=where)
    assert there.messages == here.messages
    opened = ciphergrid.decrypt_batch(there.messages, "aes-128-gcm", key=key, nonces=nonces,
                                      device=where)
    assert opened.messages == msgs and bool(np.all(opened.ok))
    assert _jobs(server) - before >= 9   # (every call above ran there)


def test_the_plan_names_the_service(server):
    spec = registry.lookup("aes-128-ctr")
    req = make_request(spec, bytes(16), bytes(16), True)
    plan = route.route(req, f"service:{server.address}", 4096)
    assert plan.engine.kind == "remote" and plan.how == "parallel"
    assert plan.describe() == f"aes-128-ctr encrypt by the service at {server.address}"
    assert plan.device == f"service:{server.address}"
    aead = route.route(aead_request(ciphergrid.aeads.spec("aes-128-gcm"), encrypt=False,
                                    nonce_len=12, tag_length=16), f"service:{server.address}", 100)
    assert aead.describe() == f"aes-128-gcm decrypt by the service at {server.address}"
    with remote.service_asked(server.address):
        asked = route.route(req, "native", 4096)
    assert asked.describe() == \
        f"aes-128-ctr encrypt by the service at {server.address} on its native"


def test_a_service_that_does_not_answer_is_a_device_error(tmp_path, monkeypatch):
    dead = str(tmp_path / "none.sock")
    with pytest.raises(ciphergrid.DeviceError, match="no service"):
        ciphergrid.encrypt(b"x" * 16, "aes-128-ctr", bytes(16), bytes(16), device=f"service:{dead}")
    monkeypatch.setenv("CIPHERGRID_SERVICE", dead)
    with pytest.raises(ciphergrid.DeviceError, match="no service"):
        ciphergrid.encrypt(b"x" * 16, "aes-128-ctr", bytes(16), bytes(16))
    with pytest.raises(ciphergrid.InvalidArgument):
        ciphergrid.encrypt(b"x" * 16, "aes-128-ctr", bytes(16), bytes(16), device="service:")


def test_the_service_setting_routes_the_packages_functions_there(server, monkeypatch, rng):
    key, iv, data = rng.randbytes(16), rng.randbytes(16), rng.data(5000)
    want = oracle.encrypt(data, "aes-128-ctr", key, iv)
    monkeypatch.setenv("CIPHERGRID_SERVICE", server.address)
    before = _jobs(server)
    assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
    assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv, device="native") == want
    assert _jobs(server) == before + 2
    assert ciphergrid.api.encrypt(data, "aes-128-ctr", key, iv) == want   # (api: no setting)
    assert _jobs(server) == before + 2
    monkeypatch.setenv("CIPHERGRID_SERVICE", "off")
    assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
    assert _jobs(server) == before + 2


def test_a_context_runs_on_the_service_in_pieces(server, rng):
    key, iv, data = rng.randbytes(16), rng.randbytes(16), rng.data(4096)
    before = _jobs(server)
    e = ciphergrid.Cipher("aes-128-cbc", key, iv, device=f"service:{server.address}").encryptor()
    got = b"".join(e.update(data[i:i + 1000]) for i in range(0, 4096, 1000)) + e.finalize()
    assert got == oracle.encrypt(data, "aes-128-cbc", key, iv)
    assert _jobs(server) > before


def test_a_file_streams_through_the_service_by_its_descriptors(server, tmp_path, rng):
    data = rng.data(70000)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    req = make_request(registry.lookup("aes-128-ctr"), key, iv, True)
    plan = route.route(req, f"service:{server.address}", len(data), path="stream")
    assert plan.path == "stream" and plan.engine.kind == "remote"
    steps = []
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        assert plan.stream(fin, fout, progress=steps.append, nbytes=len(data)) == len(data)
    assert dst.read_bytes() == oracle.encrypt(data, "aes-128-ctr", key, iv)
    assert sum(steps) == len(data) and plan.engine.last_reply().get("device")


def test_what_the_service_lists_is_what_its_engine_runs(server):
    """A hello that lists the service's capabilities is the engine's column; one that lists
    none: the built-in table."""
    eng = route.engine_of(remote.info_of(f"service:{server.address}"))
    req = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    assert eng.capability(req) == "parallel"
    eng.client()
    eng._conns.hello = {"capabilities": {"aes-128-ctr": {"encrypt": None, "decrypt": "parallel"}}}
    with pytest.raises(ciphergrid.UnsupportedCipher, match="the service at .* cannot run"):
        route.route(req, f"service:{server.address}", 4096)
    back = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), False)
    assert route.route(back, f"service:{server.address}", 4096).how == "parallel"
    assert eng.capability(make_request(registry.lookup("aes-128-cbc"), bytes(16), bytes(16),
                                       True)) is None


def test_a_services_runtime_and_in_process_blocks_run_here(server):
    """A service's own runtime never sends its requests to a service; ``service.in_process()``
    keeps the asked service out of its block (a device that names one still goes there)."""
    from ciphergrid.runtime import Runtime

    req = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    with Runtime("serving", serving=True), remote.service_asked(server.address):
        assert route.route(req, "native", 4096).engine.kind == "openssl"
        with pytest.raises(ciphergrid.InvalidArgument, match="does not send"):
            route.route(req, f"service:{server.address}", 4096)
    with service.in_process(), remote.service_asked(server.address):
        assert route.route(req, "native", 4096).engine.kind == "openssl"
        assert route.route(req, f"service:{server.address}", 4096).engine.kind == "remote"
