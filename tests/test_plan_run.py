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
