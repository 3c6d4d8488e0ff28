"""One way to run a plan (plan.py): ``plan.run(data, out=None, **opts)`` runs a block request's
message (its blocks, in BlockRanges where sliced) or an AEAD request's batch (a MessageRange of
all its messages), by the plan's request's kind; and route's plans are kept per runtime by what
decides them (route.py), without the request's key."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import ciphergrid
from ciphergrid import aeads, registry, route
from ciphergrid.request import aead_request, make_batch, make_request
from ciphergrid.testing import oracle


def _block(name, key, iv, encrypt=True, **kw):
    return make_request(registry.lookup(name), key, iv, encrypt, **kw)


@pytest.mark.parametrize("name, encrypt", [("aes-128-ctr", True), ("aes-128-cbc", False),
                                           ("aes-128-ecb", True)])
def test_a_block_plan_runs_whole_or_in_ranges_to_the_same_bytes(name, encrypt, rng):
    """A block plan's message whole, and in block ranges of a slice (in place: CBC
    decryption's chaining values read before each range runs over them), with a turn before
    each range: the reference's bytes."""
    n = 1000 if name.endswith("ctr") else 1024
    key, iv, data = rng.data(16), rng.data(16), rng.data(n)
    req = _block(name, key, None if name.endswith("ecb") else iv, encrypt)
    ref = (oracle.encrypt if encrypt else oracle.decrypt)(data, name, key, req.iv)
    plan = route.route(req, "native", n)
    whole = np.empty(n, np.uint8)
    plan.run(np.frombuffer(data, np.uint8), whole)
    assert whole.tobytes() == ref
    turns = []
    buf = np.frombuffer(data, np.uint8).copy()
    plan.run(buf, slice_bytes=160, turn=turns.append)     # (out=None: in place)
    assert buf.tobytes() == ref
    assert sum(turns) == n and len(turns) == -(-n // 160) and max(turns) == 160


def test_an_aead_plan_runs_its_batch_seal_and_open(rng):
    name, key = "aes-128-gcm", rng.data(16)
    texts = [rng.data(n) for n in (0, 17, 300)]
    nonces = [rng.data(12) for _ in texts]
    spec = aeads.spec(name)
    sealed = make_batch(name, True, 16, [key] * 3, nonces, [b"a", b"", b"bc"], texts)
    plan = route.route(aead_request(spec, sealed), "native", int(sealed.off[-1]))
    tags = plan.run()                                      # (the request's own batch)
    assert not sealed.keys.any()                           # (its key material wiped)
    for i, (t, nonce, aad) in enumerate(zip(texts, nonces, [b"a", b"", b"bc"])):
        ct = sealed.dst[sealed.off[i]:sealed.off[i + 1]].tobytes() + tags[i].tobytes()
        assert ct == AESGCM(key).encrypt(nonce, t, aad)
    opened = make_batch(name, False, 16, [key] * 3, nonces, [b"a", b"", b"bc"],
                        [sealed.dst[sealed.off[i]:sealed.off[i + 1]].tobytes() for i in range(3)])
    bad = tags.copy()
    bad[1, 0] ^= 1
    out = np.full(opened.src.nbytes, 0xAA, np.uint8)
    ok = route.route(aead_request(spec, opened), "native", 317).run(opened, out, tags=bad)
    assert list(ok) == [True, False, True]
    assert out[17:317].tobytes() == texts[2] and out[:17].tobytes() == bytes(17)


def test_each_kind_refuses_the_others_options():
    block = _block("aes-128-ctr", bytes(16), bytes(16))
    with pytest.raises(TypeError):
        route.route(block, "native", 16).run(np.zeros(16, np.uint8), tags=np.zeros(16))
    msgs = aead_request(aeads.spec("aes-128-gcm"), encrypt=True, nonce_len=12, tag_length=16)
    batch = make_batch("aes-128-gcm", True, 16, [bytes(16)], [bytes(12)], [b""], [b"x"])
    with pytest.raises(TypeError):
        route.route(msgs, "native", 1).run(batch, slice_bytes=16)


# --------------------------------------------------------------------------- route's kept plans

def _requests(rng):
    """Block requests and AEAD requests whose plans differ by mode, direction, sizes and units."""
    k16, k32 = rng.data(16), rng.data(32)
    yield _block("aes-128-ctr", k16, rng.data(16))
    yield _block("aes-128-cbc", k16, rng.data(16))                      # (serial: OpenSSL)
    yield _block("aes-128-cbc", k16, rng.data(16), False)
    yield _block("aes-128-xts", k32, None, sector_size=512)
    yield _block("aes-128-xts", k32, None, sector_size=520)             # (units not whole blocks)
    yield _block("clefia-128-ctr", k16, rng.data(16))                   # (OpenSSL lacks it)
    gcm, ascon = aeads.spec("aes-128-gcm"), aeads.spec("ascon-aead128")
    for count in (1, 5):
        yield aead_request(gcm, encrypt=True, nonce_len=12, tag_length=16, count=count)
    yield aead_request(gcm, encrypt=False, nonce_len=16, tag_length=12, count=1)
    yield aead_request(ascon, encrypt=True, nonce_len=16, tag_length=16, count=1)


def _another(req):
    """A request of ``req``'s shape under another key (a block request's) or batch."""
    import dataclasses

    if req.kind == "blocks":
        return dataclasses.replace(req, key=bytes(len(req.key)))
    return dataclasses.replace(req, batch=None)


def _decide(req, device, n, path):
    """(the plan or the error's type) of a decision made now, not kept."""
    try:
        return route._route(req, device, n, path, None)
    except ciphergrid.Error as e:
        return type(e)


def test_kept_plans_are_the_plans_decided_now(rng):
    """For a grid of requests, devices, sizes and paths, a route answered from the runtime's
    kept plans equals the decision made now (every field; the same engine), and holds the
    request it was asked for, not the one it was first routed for."""
    devices = ["auto"] + [d.spec for d in ciphergrid.devices()]
    sizes = [16, 520, 4096, 1040, route.AUTO_GPU_MIN_BYTES, 64 << 20]
    with ciphergrid.runtime.Runtime("plans") as rt:
        cases = 0
        for req in _requests(rng):
            for device in devices:
                for n in sizes:
                    for path in ("array", "stream"):
                        want = _decide(req, device, n, path)
                        # (the first routes and keeps, the second, of another key, takes it)
                        for again in (req, _another(req)):
                            if isinstance(want, type):
                                with pytest.raises(want):
                                    route.route(again, device, n, path=path)
                                continue
                            got = route.route(again, device, n, path=path)
                            assert got == want and got.engine is want.engine, (req, device, n)
                            assert got.request is again
                        cases += not isinstance(want, type)
        assert len(rt.plans) == cases > 100


def test_a_kept_plan_serves_another_request_of_its_shape(rng):
    """Another key and IV of the same shape: the kept plan, bound to the new request."""
    with ciphergrid.runtime.Runtime("plans") as rt:
        a = _block("aes-128-ctr", rng.data(16), rng.data(16))
        b = _block("aes-128-ctr", rng.data(16), rng.data(16))
        pa, pb = route.route(a, "native", 4096), route.route(b, "native", 4096)
        assert len(rt.plans) == 1 and pa == pb and pa.request is a and pb.request is b
        data = rng.data(4096)
        out = np.empty(4096, np.uint8)
        pb.run(np.frombuffer(data, np.uint8), out)
        assert out.tobytes() == oracle.encrypt(data, "aes-128-ctr", b.key, b.iv)


def test_a_kept_plan_keeps_no_request_key_or_batch(rng):
    """Kept plans are templates: no request, so no key, IV or batch stays reachable from them
    once the caller's plan and request are gone."""
    import weakref

    key = rng.data(16)
    with ciphergrid.runtime.Runtime("plans") as rt:
        req = _block("aes-128-ctr", key, rng.data(16))
        batch = make_batch("aes-128-gcm", True, 16, [key], [rng.data(12)], [b""], [b"text"])
        areq = aead_request(aeads.spec("aes-128-gcm"), batch)
        plans = [route.route(req, "native", 4096), route.route(areq, "native", 4)]
        plans[1].run()
        refs = [weakref.ref(x) for x in (req, areq, batch)]
        del req, areq, batch, plans
        gc.collect()
        assert [r() for r in refs] == [None, None, None]
        assert len(rt.plans) == 2
        for kept in rt.plans.table.values():
            assert kept.request is None
            seen, todo = set(), [v for k, v in vars(kept).items() if k != "engine"]
            while todo:   # (everything the template's own fields reach)
                x = todo.pop()
                if id(x) in seen or isinstance(x, type):
                    continue
                seen.add(id(x))
                if isinstance(x, (bytes, bytearray, memoryview, np.ndarray)):
                    assert key not in bytes(x)
                todo.extend(gc.get_referents(x))


def test_what_decides_a_plan_drops_or_bypasses_the_kept_one(rng, tmp_path):
    """An engine kind registered drops the kept plans; an engine replaced is not served from
    them; a context asked to use a service decides again (here: none answers, an error), one
    told ``off`` takes the kept plan."""
    from ciphergrid.engines import remote
    from ciphergrid.errors import ServiceError

    req = _block("aes-128-ctr", rng.data(16), rng.data(16))
    with ciphergrid.runtime.Runtime("plans") as rt:
        first = route.route(req, "native", 4096)
        assert len(rt.plans) == 1
        registry.register_engine_kind("plans-test", object, lambda *a, **k: None)
        try:
            assert len(rt.plans) == 0
        finally:
            registry.unregister_engine_kind("plans-test")
        route.route(req, "native", 4096)
        rt.engines.pop("native")
        again = route.route(req, "native", 4096)
        assert again.engine is not first.engine and again.engine is rt.engines["native"]
        with remote.service_asked(str(tmp_path / "no-service.sock")):
            with pytest.raises(ServiceError):
                route.route(req, "native", 4096)
        with remote.service_asked("off"):
            assert route.route(req, "native", 4096).engine is again.engine


def test_the_thread_budget_decides_a_files_kept_plan(monkeypatch):
    """A file of AES goes to OpenSSL for keeping up with the filesystem only on a budget of
    enough cores: a runtime's budget changed, the kept plan of the smaller one is not used."""
    monkeypatch.setattr(route, "_cpu_flags", lambda: frozenset({"aes"}))
    req = _block("aes-128-ctr", bytes(16), bytes(16))
    with ciphergrid.runtime.Runtime("plans", threads=route.AUTO_FILES_OPENSSL_MIN_CORES) as rt:
        keeps_up = route.route(req, "auto", 64 << 20, path="stream")
        assert "keeps up with files" in keeps_up.choice
        rt.threads.budget = 1
        assert "keeps up" not in route.route(req, "auto", 64 << 20, path="stream").choice
        rt.threads.budget = route.AUTO_FILES_OPENSSL_MIN_CORES
        assert route.route(req, "auto", 64 << 20, path="stream") == keeps_up
