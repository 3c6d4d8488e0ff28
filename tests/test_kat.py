"""Known-answer tests: every vector of ciphergrid.vectors, for every registered name, on every
device, in both directions.

Vectors: those of the data files (ciphergrid/vectors/aes.json: FIPS 197 Appendix C, NIST SP 800-38A
(ECB/CBC/CTR), IEEE 1619-2007 (XTS), AESAVS Monte Carlo records), and - when cryptography_vectors is
installed - the NIST CAVP AESAVS ECB/CBC files (GFSbox, KeySbox, VarKey, VarTxt, MMT), the RFC 3686
AES-CTR vectors and the NIST XTSGen files (tweak as hex string, and as data unit sequence number
through sector mode).  Each test collects every mismatch and reports them together, so one test
is one (name, device, direction).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

import ciphergrid
from ciphergrid import registry, vectors

MAX_REPORTED = 15


def _exc(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:200]}{'...' if len(text) > 200 else ''}"


def _check(results: list[str], what: str, total: int, device: str):
    assert not results, (
        f"{len(results)} of {total} {what} checks failed on {device}:\n  "
        + "\n  ".join(results[:MAX_REPORTED])
        + (f"\n  ... and {len(results) - MAX_REPORTED} more" if len(results) > MAX_REPORTED else "")
    )


def _groups(vs: list[vectors.Vector], name: str):
    """Batch ECB vectors that share a key into one call (they are independent blocks); every other
    vector is its own call.  Yields lists of vectors that are run as one concatenated input."""
    if registry.lookup(name).mode.name != "ecb":
        for v in vs:
            yield [v]
        return
    by_key: dict[bytes, list] = defaultdict(list)
    for v in vs:
        by_key[v.key].append(v)
    yield from by_key.values()


def _run(direction: str, cipher_name: str, device: str):
    encrypt = direction == "encrypt"
    vs = [v for v in vectors.load(cipher_name) if (v.encrypt_ok if encrypt else v.decrypt_ok)]
    assert vs, f"no {direction} vector for {cipher_name}"
    fn = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
    bad: list[str] = []
    for group in _groups(vs, cipher_name):
        v0 = group[0]
        src = b"".join(v.plaintext if encrypt else v.ciphertext for v in group)
        want = b"".join(v.ciphertext if encrypt else v.plaintext for v in group)
        label = v0.source if len(group) == 1 else f"{len(group)} vectors with key {v0.key.hex()} ({v0.source}, ...)"
        try:
            out = fn(src, cipher_name, v0.key, device=device, **v0.call_kwargs())
        except Exception as e:  # report every failing vector, not just the first
            bad.append(f"{label}: raised {_exc(e)}")
            continue
        if type(out) is not bytes:
            bad.append(f"{label}: returned {type(out).__name__}, not bytes")
            continue
        if out != want:
            if len(group) == 1:
                bad.append(f"{label}: got {out.hex()[:96]} want {want.hex()[:96]}")
            else:
                off = 0
                for v in group:
                    n = len(v.plaintext)
                    w = v.ciphertext if encrypt else v.plaintext
                    if out[off: off + n] != w:
                        bad.append(f"{v.source} (batched): got {out[off:off+n].hex()} want {w.hex()}")
                    off += n
                if len(out) != len(want):
                    bad.append(f"{label}: output length {len(out)}, expected {len(want)}")
        # XTS vectors given as (sector_size, start_sector) also go through the explicit-tweak path
        if v0.sector_size is not None and len(group) == 1 and len(src) == v0.sector_size:
            tweak = v0.start_sector.to_bytes(16, "little")
            try:
                out2 = fn(src, cipher_name, v0.key, tweak, device=device)
            except Exception as e:
                bad.append(f"{label} (as iv=LE128({v0.start_sector})): raised {_exc(e)}")
                continue
            if out2 != want:
                bad.append(f"{label} (as iv=LE128({v0.start_sector})): got {bytes(out2).hex()[:96]} want {want.hex()[:96]}")
    _check(bad, f"{cipher_name} {direction}", len(vs), device)


def test_every_name_has_vectors(cipher_name):
    vs = vectors.load(cipher_name)
    assert vs, f"{cipher_name} is registered but has no known-answer vector in ciphergrid.vectors"
    assert any(v.encrypt_ok for v in vs) and any(v.decrypt_ok for v in vs)


def test_names_with_vectors_are_registered():
    assert set(vectors.names_with_vectors()) <= set(registry.names())
    assert set(vectors.names_with_vectors()) == {v.cipher for v in vectors.load()}


def test_vectors_agree_with_openssl():
    """The vectors (and this parser) against pyca/cryptography, i.e. OpenSSL."""
    vs = vectors.load()
    bad = vectors.verify_reference(vs)
    _check(bad, "reference", len(vs), "pyca/cryptography")


def test_official_vector_files_are_loaded():
    base = vectors.vectors_dir()
    if base is None:
        pytest.skip("cryptography_vectors is not installed: only the embedded vectors are run "
                    "(pip install cryptography-vectors)")
    files = {v.source.split(" [")[0] for v in vectors.load() if v.source.startswith("cryptography_vectors/")}
    for mode in ("ECB", "CBC"):
        for kind in ("GFSbox", "KeySbox", "VarKey", "VarTxt", "MMT"):
            for bits in (128, 192, 256):
                assert f"cryptography_vectors/ciphers/AES/{mode}/{mode}{kind}{bits}.rsp" in files
    for bits in (128, 192, 256):
        assert f"cryptography_vectors/ciphers/AES/CTR/aes-{bits}-ctr.txt" in files
    for sub in ("tweak-128hexstr", "tweak-dataunitseqno"):
        for bits in (128, 256):
            assert f"cryptography_vectors/ciphers/AES/XTS/{sub}/XTSGenAES{bits}.rsp" in files
    counts = defaultdict(int)
    for v in vectors.load():
        counts[v.cipher] += 1
    # both sections of every file: a parser that drops [DECRYPT] or stops early fails here
    assert counts["aes-128-ecb"] > 500 and counts["aes-256-cbc"] > 800
    assert counts["aes-128-xts"] > 1500 and counts["aes-256-xts"] > 1100
    seqno = [v for v in vectors.load() if v.sector_size is not None and v.source.startswith("cryptography_vectors/")]
    assert len({v.start_sector for v in seqno}) > 100
    # 128-, 200-, 256-, 384-bit data units (130-, 140-, 250-bit ones are skipped: not whole bytes)
    assert {v.sector_size for v in seqno} == {16, 25, 32, 48}


def test_loader_without_cryptography_vectors(monkeypatch):
    """Without the package only the vectors of the data files remain, and they still cover every
    name; each names its source (document and place in it)."""
    import sys

    monkeypatch.setitem(sys.modules, "cryptography_vectors", None)  # import fails
    vectors._all.cache_clear()
    vectors._all_mct.cache_clear()
    try:
        assert vectors.vectors_dir() is None
        vs = vectors.load()
        assert vs and not any(v.source.startswith("cryptography_vectors/") for v in vs)
        assert "aes.json" in vectors.data_files()
        assert all(v.source for v in vs) and all(m.source for m in vectors.load_mct())
        assert set(vectors.names_with_vectors()) == set(registry.names())
        assert vectors.load_mct()
    finally:
        vectors._all.cache_clear()
        vectors._all_mct.cache_clear()


def test_loader_is_cached():
    assert vectors.load()[0] is vectors.load()[0]


def test_kat_encrypt(cipher_name, device):
    _run("encrypt", cipher_name, device)


def test_kat_decrypt(cipher_name, device):
    _run("decrypt", cipher_name, device)


def test_kat_cipher_object(cipher_name, device):
    """The vectors of the data files (FIPS 197, SP 800-38A, IEEE 1619) through Cipher(...) contexts."""
    vs = [v for v in vectors.load(cipher_name) if not v.source.startswith("cryptography_vectors/")]
    assert vs
    bad = []
    for v in vs:
        kw = v.call_kwargs()
        iv = kw.pop("iv")
        c = ciphergrid.Cipher(cipher_name, v.key, iv, device=device, **kw)
        if v.encrypt_ok:
            e = c.encryptor()
            out = e.update(v.plaintext) + e.finalize()
            if out != v.ciphertext:
                bad.append(f"{v.source}: encryptor got {out.hex()[:64]}")
        if v.decrypt_ok:
            d = c.decryptor()
            out = d.update(v.ciphertext) + d.finalize()
            if out != v.plaintext:
                bad.append(f"{v.source}: decryptor got {out.hex()[:64]}")
    _check(bad, f"{cipher_name} Cipher()", len(vs), device)


@pytest.mark.parametrize("mct", vectors.load_mct(), ids=lambda m: m.source)
def test_monte_carlo(mct, device):
    """AESAVS Monte Carlo: 1000 chained single-block calls per record (key schedule reuse, the
    one-block path, IV handling on every call)."""
    got = vectors.run_mct(mct, device=device)
    want = mct.ciphertext if mct.encrypt else mct.plaintext
    assert got == want, f"{mct.source} on {device}: got {got.hex()} want {want.hex()}"



def test_aes_schedules_from_openssl_equal_ours():
    """The AES key schedules come from libcrypto where it has the low-level calls (a few us on
    every one-shot call) and from our Python otherwise: both the same for random keys of every
    size, both directions (a layout that does not match is never used)."""
    import os

    aes = registry.lookup("aes-128-ecb").algorithm
    for n in (16, 24, 32):
        for decrypt in (False, True):
            for _ in range(20):
                key = os.urandom(n)
                assert aes.expand(key, decrypt).tobytes() == aes._expand_py(key, decrypt).tobytes()
