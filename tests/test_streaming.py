"""Streaming contexts: Cipher(...).encryptor()/.decryptor() fed in arbitrary pieces give exactly the
one-shot result (and the reference's), for every name and mode variant, on every device."""

from __future__ import annotations

import pytest

import ciphergrid
from ciphergrid import registry


def _variants(name: str, rng) -> list[dict]:
    """(label, kwargs for Cipher, plaintext length) of the mode variants of ``name``."""
    mode = registry.lookup(name).mode.name
    if mode in ("ecb", "cbc"):
        return [
            dict(label="nopad", kw={}, size=16 * 131),
            dict(label="pkcs7", kw={"padding": "pkcs7"}, size=16 * 131 + 5),
            dict(label="pkcs7-full-block", kw={"padding": "pkcs7"}, size=16 * 64),
        ]
    if mode == "xts":
        return [
            dict(label="one-unit", kw={}, size=16 * 131 + 3),
            dict(label="sectors", kw={"sector_size": 512, "start_sector": 2**40 + 7}, size=4 * 512 + 40),
            dict(label="sectors-whole", kw={"sector_size": 512, "start_sector": 5}, size=3 * 512),
        ]
    return [dict(label="ctr", kw={}, size=16 * 131 + 3)]


def _split(pattern: str, n: int, rng) -> list[int]:
    """Piece lengths summing to n."""
    out: list[int] = []
    if pattern == "random":
        left = n
        while left:
            r = rng.random()
            k = 0 if r < 0.1 else 1 if r < 0.25 else rng.randint(2, 40) if r < 0.7 else rng.randint(41, 1500)
            k = min(k, left)
            out.append(k)
            left -= k
    elif pattern == "one-byte-prefix":   # 1-byte pieces across several block boundaries, then the rest
        k = min(100, n)
        out = [1] * k + [n - k]
    elif pattern == "empties":           # empty updates around a single piece
        out = [0, 0, n, 0]
    elif pattern == "around-blocks":     # pieces ending one before / at / one after block edges
        left = n
        for k in (15, 1, 16, 17, 15, 32, 33, 31, 1):
            k = min(k, left)
            out.append(k)
            left -= k
        out.append(left)
    else:
        raise AssertionError(pattern)
    assert sum(out) == n
    return out


def _feed(ctx, data: bytes, pieces: list[int]) -> bytes:
    res, off = [], 0
    for k in pieces:
        r = ctx.update(data[off:off + k])
        assert type(r) is bytes, f"update returned {type(r).__name__}"
        res.append(r)
        off += k
    r = ctx.finalize()
    assert type(r) is bytes, f"finalize returned {type(r).__name__}"
    res.append(r)
    return b"".join(res)


@pytest.mark.parametrize("pattern", ["random", "one-byte-prefix", "empties", "around-blocks"])
def test_streaming_equals_one_shot(cipher_name, pattern, device, rng, ref):
    name = cipher_name
    key, iv = rng.key(name), rng.iv(name)
    for var in _variants(name, rng):
        kw = var["kw"]
        civ = None if "sector_size" in kw else iv
        pt = rng.data(var["size"])
        where = f"{name} {var['label']} {pattern} on {device} (key={key.hex()}, iv={civ.hex() if civ else None})"
        one_shot = ciphergrid.encrypt(pt, name, key, civ, device=device, **kw)
        assert one_shot == ref.encrypt(pt, name, key, civ, **kw), f"one-shot encrypt: {where}"
        c = ciphergrid.Cipher(name, key, civ, device=device, **kw)
        pieces = _split(pattern, len(pt), rng)
        got = _feed(c.encryptor(), pt, pieces)
        assert got == one_shot, f"encryptor: {where}, pieces={pieces}"
        pieces = _split(pattern, len(one_shot), rng)
        back = _feed(c.decryptor(), one_shot, pieces)
        assert back == pt, f"decryptor: {where}, pieces={pieces}"


def test_all_one_byte_updates(cipher_name, device, rng, ref):
    name = cipher_name
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(64 if mode in ("ecb", "cbc") else 67)
    want = ref.encrypt(pt, name, key, iv)
    c = ciphergrid.Cipher(name, key, iv, device=device)
    assert _feed(c.encryptor(), pt, [1] * len(pt)) == want
    assert _feed(c.decryptor(), want, [1] * len(want)) == pt


def test_contexts_are_independent(cipher_name, device, rng, ref):
    """Two encryptors and a decryptor of one Cipher, interleaved, do not share state."""
    name = cipher_name
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(16 * 40)
    want = ref.encrypt(pt, name, key, iv)
    c = ciphergrid.Cipher(name, key, iv, device=device)
    e1, e2, d = c.encryptor(), c.encryptor(), c.decryptor()
    o1, o2, o3 = [], [], []
    for i in range(0, len(pt), 48):
        o1.append(e1.update(pt[i:i + 48]))
        o3.append(d.update(want[i:i + 48]))
        o2.append(e2.update(pt[i:i + 48]))
    o1.append(e1.finalize())
    o2.append(e2.finalize())
    o3.append(d.finalize())
    assert b"".join(o1) == want and b"".join(o2) == want, mode
    assert b"".join(o3) == pt
    # a context made after others finished starts from the IV again
    assert _feed(c.encryptor(), pt, [len(pt)]) == want


def test_empty_stream(cipher_name, device, rng, ref):
    name = cipher_name
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    c = ciphergrid.Cipher(name, key, iv, device=device)
    if mode == "xts":
        e = c.encryptor()
        e.update(b"")
        with pytest.raises(ciphergrid.InvalidLength):
            e.finalize()
    else:
        assert _feed(c.encryptor(), b"", [0]) == b""
        assert _feed(c.decryptor(), b"", [0]) == b""
    if mode in ("ecb", "cbc"):
        cp = ciphergrid.Cipher(name, key, iv, device=device, padding="pkcs7")
        ct = _feed(cp.encryptor(), b"", [])
        assert ct == ref.encrypt(b"", name, key, iv, padding="pkcs7") and len(ct) == registry.lookup(name).block_size
        assert _feed(cp.decryptor(), ct, [7, 9]) == b""


def test_already_finalized(cipher_name, device, rng):
    name = cipher_name
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    c = ciphergrid.Cipher(name, key, iv, device=device)
    pt = rng.data(32)
    for ctx, data in ((c.encryptor(), pt), (c.decryptor(), pt)):
        ctx.update(data)
        ctx.finalize()
        with pytest.raises(ciphergrid.AlreadyFinalized):
            ctx.update(b"\x00" * 16)
        with pytest.raises(ciphergrid.AlreadyFinalized):
            ctx.update(b"")
        with pytest.raises(ciphergrid.AlreadyFinalized):
            ctx.finalize()
    assert issubclass(ciphergrid.AlreadyFinalized, ciphergrid.Error), mode


def test_streaming_length_errors(cipher_name, device, rng, ref):
    """Length errors that only the whole stream reveals are raised by finalize()."""
    name = cipher_name
    mode = registry.lookup(name).mode.name
    key, iv = rng.key(name), rng.iv(name)
    c = ciphergrid.Cipher(name, key, iv, device=device)
    if mode in ("ecb", "cbc"):
        for ctx in (c.encryptor(), c.decryptor()):
            ctx.update(rng.data(20))
            ctx.update(rng.data(7))
            with pytest.raises(ciphergrid.InvalidLength):
                ctx.finalize()
        # bad PKCS#7 padding: last plaintext byte 0x00
        bad = ref.encrypt(b"\x10" * 15 + b"\x00", name, key, iv)
        d = ciphergrid.Cipher(name, key, iv, device=device, padding="pkcs7").decryptor()
        d.update(bad[:5])
        d.update(bad[5:])
        with pytest.raises(ciphergrid.InvalidPadding):
            d.finalize()
    elif mode == "xts":
        for ctx in (c.encryptor(), c.decryptor()):
            ctx.update(rng.data(10))
            ctx.update(rng.data(5))
            with pytest.raises(ciphergrid.InvalidLength):
                ctx.finalize()
        # sector mode: a last sector shorter than one block
        s = ciphergrid.Cipher(name, key, None, device=device, sector_size=512, start_sector=0)
        e = s.encryptor()
        with pytest.raises(ciphergrid.InvalidLength):
            e.update(rng.data(512))
            e.update(rng.data(8))
            e.finalize()
    else:
        # CTR takes any length
        pt = rng.data(27)
        assert _feed(c.encryptor(), pt, [20, 7]) == ref.encrypt(pt, name, key, iv)
