"""The request family (request.py): block requests and AEAD requests go through one route, and
each kind's work splits into ranges (BlockRange, MessageRange) that run to the whole's bytes."""

from __future__ import annotations

import numpy as np
import pytest

import ciphergrid
from ciphergrid import aeads, registry, route
from ciphergrid.aeads.base import make_batch
from ciphergrid.errors import InvalidArgument
from ciphergrid.plan import Plan
from ciphergrid.request import AEADRequest, BlockRange, MessageRange, aead_request, make_request
from ciphergrid.testing import oracle


def test_route_aead_is_gone():
    assert not hasattr(route, "route_aead")
    assert not hasattr(ciphergrid.aead, "_run")


def test_one_route_plans_both_kinds():
    block = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    msgs = aead_request(aeads.spec("aes-128-gcm"), encrypt=True, nonce_len=12, tag_length=16,
                        count=3)
    for req, kind in ((block, "blocks"), (msgs, "messages")):
        plan = route.route(req, "native", 4096)
        assert isinstance(plan, Plan) and plan.request is req and req.kind == kind
        assert plan.describe() == f"{req.name} encrypt on native"
    with pytest.raises(TypeError):   # (one run: each kind's plan refuses the other's data)
        route.route(msgs, "native", 4096).run(np.zeros(16, np.uint8), np.zeros(16, np.uint8))
    with pytest.raises(TypeError):
        route.route(block, "native", 4096).run()
    assert not hasattr(Plan, "run_batch")


def test_an_aead_request_takes_its_batch():
    batch = make_batch("aes-128-gcm", False, 12, [bytes(16)] * 2, [bytes(16)] * 2, [b"", b"a"],
                       [b"xy", b"z"])
    req = aead_request(aeads.spec("aes-128-gcm"), batch, impl="fast")
    assert isinstance(req, AEADRequest)
    assert (req.encrypt, req.nonce_len, req.tag_length, req.count, req.impl) == \
        (False, 16, 12, 2, "fast")
    assert req.work().count == 2 and req.weight(req.work()) == 3


@pytest.mark.parametrize("name, encrypt, n", [("aes-128-ctr", True, 1000),
                                              ("aes-128-cbc", False, 1024),
                                              ("aes-128-ecb", True, 512)])
def test_block_ranges_split_and_run_to_the_whole(name, encrypt, n, rng):
    """A block request's message split into BlockRanges, each run through the engine's session
    (in place, the chaining value read before): the whole message's bytes."""
    key, iv, data = rng.data(16), rng.data(16), rng.data(n)
    req = make_request(registry.lookup(name), key, None if name.endswith("ecb") else iv, encrypt)
    src = np.frombuffer(data, np.uint8).copy()
    work = req.work(n)
    first, rest = req.split(work, 5, src)
    second, third = req.split(rest, 17, src)
    assert (first.count, second.first, third.first) == (5, 5, 22)
    assert sum(r.count for r in (first, second, third)) == work.count
    eng = route.engine("native")
    with eng.session(req) as session:
        for r in (first, second, third):
            a, b = r.span(req.block_size, n)
            r.run(session, src[a:b], src[a:b])
    ref = oracle.encrypt if encrypt else oracle.decrypt
    assert src.tobytes() == ref(data, name, key, req.iv)


def test_a_serial_request_does_not_split():
    req = make_request(registry.lookup("aes-128-cbc"), bytes(16), bytes(16), True)
    with pytest.raises(InvalidArgument):
        req.split(req.work(64), 2)
    dec = make_request(registry.lookup("aes-128-cbc"), bytes(16), bytes(16), False)
    with pytest.raises(InvalidArgument):
        dec.split(dec.work(64), 4)       # (past the end)


def test_message_ranges_split_and_run_to_the_whole(rng):
    """An AEAD request's batch split into MessageRanges, each sealed by the engine, then each
    opened: the whole batch's tags and texts."""
    name, m = "aes-128-gcm", 5
    key = rng.data(16)
    nonces = [rng.data(12) for _ in range(m)]
    aads = [rng.data(i) for i in range(m)]
    texts = [rng.data(40 * i + 3) for i in range(m)]
    spec = aeads.spec(name)
    eng = route.engine("native")
    batch = make_batch(name, True, 16, [key] * m, nonces, aads, texts)
    req = aead_request(spec, batch)
    left, right = req.split(req.work(), 2)
    assert isinstance(left, MessageRange) and (left.a, left.b, right.a, right.b) == (0, 2, 2, 5)
    tags = np.concatenate([r.run(eng) for r in (left, right)])
    for i in range(m):
        ct = batch.dst[batch.off[i]:batch.off[i + 1]].tobytes() + tags[i].tobytes()
        assert ct == _pyca_seal(key, nonces[i], aads[i], texts[i])
    sealed = [batch.dst[batch.off[i]:batch.off[i + 1]].tobytes() for i in range(m)]
    opened = make_batch(name, False, 16, [key] * m, nonces, aads, sealed)
    oreq = aead_request(spec, opened)
    parts = oreq.split(oreq.work(), 3)
    tags[4, 0] ^= 1   # (the last message's tag altered: it alone fails)
    ok = np.concatenate([r.run(eng, tags=tags[r.a:r.b]) for r in parts])
    assert ok.tolist() == [True] * 4 + [False]
    assert opened.dst[:opened.off[4]].tobytes() == b"".join(texts[:4])
    assert not opened.dst[opened.off[4]:].any()


def _pyca_seal(key, nonce, aad, text):
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key).encrypt(nonce, text, aad)


def test_the_public_calls_are_unchanged(rng):
    key, nonce, pt = rng.data(16), rng.data(12), rng.data(100)
    ct = ciphergrid.encrypt(pt, "aes-128-gcm", key, nonce=nonce, device="native")
    assert ct == _pyca_seal(key, nonce, b"", pt)
    r = ciphergrid.encrypt_batch([pt, pt[:7]], "aes-128-gcm", key=key,
                                 nonces=[nonce, rng.data(12)], device="native")
    assert r.messages[0] == ct
    assert BlockRange(2, 3).span(16, 40) == (32, 40)


def test_the_batch_is_the_request_familys():
    """Batch (an AEAD request's data) lives in request.py; aeads.base names the same class."""
    from ciphergrid import request
    from ciphergrid.aeads import base

    assert base.Batch is request.Batch and base.make_batch is request.make_batch
    b = request.make_batch("aes-128-gcm", True, 16, [bytes(16)] * 3, [bytes(12)] * 3,
                           [b"", b"a", b"bc"], [b"x", b"", b"yz"])
    assert aead_request(aeads.spec("aes-128-gcm"), b).batch is b
    r = request.MessageRange(b, 1, 3)
    part = r.part()
    assert (r.count, r.nbytes, part.count, part.src.tobytes()) == (2, 2, 2, b"yz")
    assert part.aad.tobytes() == b"abc" and part.off.tolist() == [0, 0, 2]


def test_one_message_is_a_batch_of_one(rng):
    from ciphergrid.request import Batch

    key, nonce, aad, pt = rng.data(16), rng.data(12), rng.data(5), rng.data(33)
    src = np.frombuffer(pt, np.uint8)
    b = Batch.one("aes-128-gcm", True, 16, key, nonce, aad, src, np.empty_like(src))
    assert b.message(0) == (key, nonce, aad, pt) and b.count == 1
    tag = MessageRange(b, 0, 1).run(route.engine("native"))
    assert b.dst.tobytes() + tag[0].tobytes() == _pyca_seal(key, nonce, aad, pt)
    b.wipe()
    assert not b.keys.any()


def test_a_made_request_has_the_constructors_fields():
    """make_request sets a Request's fields at once, past the dataclass's __init__: every field
    the class declares, and no other, as the constructor sets them."""
    import dataclasses

    from ciphergrid.request import Request

    for name, enc in (("aes-128-xts", True), ("des-ede3-cbc", False)):
        spec = registry.lookup(name)
        key = bytes(range(spec.key_len))
        xts = "xts" in name
        req = make_request(spec, key, None if xts else bytes(spec.iv_len), enc,
                           sector_size=512 if xts else None, start_sector=7 if xts else None,
                           allow_weak=True)
        assert set(vars(req)) == {f.name for f in dataclasses.fields(Request)}
        assert vars(Request(**vars(req))) == vars(req)
