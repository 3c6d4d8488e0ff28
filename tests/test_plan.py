"""aeads/plan.py: a batch's per-message arrays uploaded once and each piece's own made on the
device (kernels/pieces.cl), against the same arrays worked out on the host (the rebased prefix
sums, the rows, aeads.base.coarse_index); and batches cut into pieces through the plans of GCM
(one key and several: the one-key counter and GHASH passes) and ChaCha20-Poly1305 (several sum
levels), against the batch as one job."""

from __future__ import annotations

import numpy as np
import pytest

from ciphergrid.aeads.base import coarse_index, make_batch
from ciphergrid.aeads.plan import ABS, HINT, PREFIX, ROWS, Holder, PieceMeta


def engine(spec):
    from ciphergrid.route import engine as get

    return get(spec)


def _download(b, buf, nbytes: int, dtype) -> np.ndarray:
    host = np.zeros(nbytes, dtype=np.uint8)
    b.download(host, buf)
    b.finish()
    return host.view(dtype)


def test_piece_arrays_made_on_the_device(device, rng):
    if device == "native":
        pytest.skip("the OpenSSL engine has no device")
    eng = engine(device)
    b = eng.backend
    r = np.random.default_rng(rng.randrange(1 << 30))
    m = 300
    lens = r.integers(0, 5000, m)
    lens[[0, 7, 8, 150, m - 1]] = 0                      # empty messages, the first and the last
    pre = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(lens, out=pre[1:])
    aoff = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(r.integers(0, 40, m), out=aoff[1:])
    rows3 = r.integers(0, 256, (m, 13), dtype=np.uint8)  # rows of an odd width
    rows4 = r.integers(0, 1 << 31, m).astype(np.int32)
    bounds = [0, 1, 9, 100, 151, 299, m]
    shift = 6
    owner = Holder(b)
    meta = PieceMeta(b, b.default_queue, owner,
                     {"pre": pre, "aoff": aoff, "rows3": rows3.reshape(-1), "rows4": rows4},
                     [("pre", PREFIX, "pre", 0), ("aoff", ABS, "aoff", 0),
                      ("hint", HINT, "pre", shift), ("rows3", ROWS, "rows3", 13),
                      ("rows4", ROWS, "rows4", 4)], bounds, pads={"rows3": 32})
    try:
        for a, e in zip(bounds, bounds[1:]):
            n = e - a
            buf, views = meta.piece(a, e)
            meta.fill(buf, a, e, b.default_queue)
            want_pre = pre[a:e + 1] - pre[a]
            got = {k: _download(b, views[k], sz, dt) for k, sz, dt in (
                ("pre", 8 * (n + 1), np.int64), ("aoff", 8 * (n + 1), np.int64),
                ("rows3", 13 * n, np.uint8), ("rows4", 4 * n, np.int32))}
            assert got["pre"].tolist() == want_pre.tolist(), (a, e)
            assert got["aoff"].tolist() == aoff[a:e + 1].tolist()
            assert got["rows3"].tobytes() == rows3[a:e].tobytes()
            assert got["rows4"].tolist() == rows4[a:e].tolist()
            want_hint = coarse_index(want_pre, shift)
            hint = _download(b, views["hint"], 4 * want_hint.shape[0], np.uint32)
            assert hint.tolist() == want_hint.tolist(), (a, e)
        with pytest.raises(ValueError):
            meta.piece(0, m)                              # (not one of its pieces)
        # the whole batch as one piece: the whole arrays, its coarse index made alone
        meta = PieceMeta(b, b.default_queue, owner, {"pre": pre},
                         [("pre", PREFIX, "pre", 0), ("hint", HINT, "pre", shift)], [0, m])
        buf, views = meta.piece(0, m)
        meta.fill(buf, 0, m, b.default_queue)
        want_hint = coarse_index(pre, shift)
        assert _download(b, views["hint"], 4 * want_hint.shape[0], np.uint32).tolist() \
            == want_hint.tolist()
        assert _download(b, views["pre"], 8 * (m + 1), np.int64).tolist() == pre.tolist()
    finally:
        owner.wipe()


@pytest.mark.parametrize("name,keys,knobs", [
    ("aes-128-gcm", 1, {}), ("aes-256-gcm", 3, {}), ("aes-128-gcm", 1, {"impl": "ct"}),
    ("chacha20-poly1305", 1, {"poly_blocks": 1, "fanin": 2}),
    ("chacha20-poly1305", 2, {})])
def test_plan_pieces_against_one_job(device, rng, name, keys, knobs):
    """transfer/batches.run through the driver's plan (pieces of 1-4 messages, texts of 0 to
    3000 bytes, AAD of 0 to 40) gives the one job's texts and tags; decryption's tags compared
    per piece."""
    from ciphergrid import aeads
    from ciphergrid.transfer import batches

    if device == "native":
        pytest.skip("the OpenSSL engine has no device queues")
    eng = engine(device)
    spec = aeads.lookup(name)
    knobs = dict(knobs)
    impl = knobs.pop("impl", None)
    if knobs:
        from ciphergrid.aeads.chacha20_poly1305 import ChaChaDriver

        drv = ChaChaDriver(eng.backend, spec, name, **knobs)
    else:
        drv = eng.aead_driver(name, impl)
    kl = spec.names[name]
    lens = [0, 1, 700, 17, 3000, 2048, 5, 64, 1025, 16, 333, 0, 40, 2999]
    table = [rng.data(kl) for _ in range(keys)]
    ks = [table[i % keys] for i in range(len(lens))]
    texts = [rng.data(n) for n in lens]
    nonces = [rng.data(12) for _ in lens]
    aads = [rng.data(i * 3 % 41) for i in range(len(lens))]
    one = make_batch(name, True, 16, ks, nonces, aads, texts)
    want = drv.run(one)
    cut = make_batch(name, True, 16, ks, nonces, aads, texts)
    got = batches.run(eng.backend, drv, cut, piece_bytes=1000, depth=2)
    assert len(batches.cuts(cut.off, 1000)) > 5
    assert got.tobytes() == want.tobytes() and cut.dst.tobytes() == one.dst.tobytes()
    back = make_batch(name, False, 16, ks, nonces, aads,
                      [one.dst[one.off[i]:one.off[i + 1]].tobytes() for i in range(len(lens))])
    bad = want.copy()
    bad[5, 3] ^= 4
    ok = batches.run(eng.backend, drv, back, received=bad, piece_bytes=1000, depth=2)
    assert ok.tolist() == [i != 5 for i in range(len(lens))]
    for i, t in enumerate(texts):
        assert back.dst[back.off[i]:back.off[i + 1]].tobytes() == (bytes(len(t)) if i == 5 else t)
