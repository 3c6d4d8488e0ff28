"""The OpenSSL engine's one context setup (engines/openssl/contexts.py): block modes, XTS and the
AEADs make their EVP contexts in one place, run their parts through ``run_parts`` (every context
freed whatever happens), and an AEAD batch gives the same bytes on the C loop, on pyca's fallback
and over several threads; C2SP chunks cut into runs give one run's bytes."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

from ciphergrid.engines.openssl import aead as ossl
from ciphergrid.engines.openssl import contexts, libcrypto
from ciphergrid.engines.openssl import threads as workers
from ciphergrid.request import make_batch
from ciphergrid.runtime import Runtime

PKG = pathlib.Path(contexts.__file__).parent
needs_loop = pytest.mark.skipif(libcrypto.LIB is None or libcrypto.c_loop() is None,
                                reason="no libcrypto or no C loop")


def test_contexts_are_made_in_one_module():
    """Only contexts.py makes, keys and frees EVP contexts (libcrypto.py declares the calls)."""
    for path in PKG.glob("*.py"):
        if path.name in ("contexts.py", "libcrypto.py"):
            continue
        text = path.read_text()
        for call in ("EVP_CIPHER_CTX_new", "EVP_CIPHER_CTX_free", "evp_cipher(",
                     "contextmanager"):
            assert call not in text, f"{path.name} calls {call}"


class _Probe:
    def __init__(self, made, part):
        self.part, self.freed = part, False
        made.append(self)

    def free(self):
        self.freed = True


def test_run_parts_frees_every_context():
    """A part's work failing, or a context failing to be made, leaves every context made freed;
    when a make fails no work runs."""
    made, ran = [], []

    def work(ctx, part, cancel):
        ran.append(part)
        if part == (1, 2):
            raise ValueError("part 1")

    with pytest.raises(ValueError, match="part 1"):
        contexts.run_parts([(0, 1), (1, 2)], lambda p: _Probe(made, p), work)
    assert [c.part for c in made] == [(0, 1), (1, 2)] and all(c.freed for c in made)

    made.clear(), ran.clear()

    def make(part):
        if part == (2, 3):
            raise RuntimeError("no context")
        return _Probe(made, part)

    with pytest.raises(RuntimeError):
        contexts.run_parts([(0, 1), (1, 2), (2, 3)], make, work)
    assert len(made) == 2 and all(c.freed for c in made) and not ran


def test_ranges_cover_in_order():
    w = np.array([5, 1, 1, 1, 1, 1, 5, 100, 1, 1])
    for t in (1, 2, 3, 8, 20):
        r = workers.ranges(w, t)
        assert r[0][0] == 0 and r[-1][1] == len(w) and len(r) <= t
        assert all(a < b for a, b in r) and all(r[i][1] == r[i + 1][0] for i in range(len(r) - 1))
    assert workers.ranges(w, 1) == [(0, len(w))]
    assert workers.ranges(np.zeros(0), 4) == [(0, 0)]


def _reference(name, encrypt, key, nonce, aad, text, tl):
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    if name == "chacha20-poly1305":
        return ChaCha20Poly1305(key).encrypt(nonce, text, aad)
    enc = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
    enc.authenticate_additional_data(aad)
    return enc.update(text) + enc.finalize() + enc.tag[:tl]


CASES = [("aes-128-gcm", 16, 12, 16), ("aes-256-gcm", 32, 8, 12), ("chacha20-poly1305", 32, 12, 16)]


@pytest.mark.parametrize("loop", ["c", "pyca"])
@pytest.mark.parametrize("name,kl,nl,tl", CASES)
def test_aead_batch_on_either_context(name, kl, nl, tl, loop, monkeypatch):
    """70 messages (over the threaded threshold) on two threads: sealed as pyca seals each one,
    opened back, a message with a broken tag zeroed and reported, the others intact."""
    if loop == "pyca":
        monkeypatch.setattr(libcrypto, "_LOOP", False)
    elif libcrypto.LIB is None or libcrypto.c_loop() is None:
        pytest.skip("no C loop")
    rng = np.random.default_rng(7)
    m = 70
    keys = [bytes(rng.integers(0, 256, kl, dtype=np.uint8)) for _ in range(3)]
    keys = [keys[i % 3] for i in range(m)]
    nonces = [bytes(rng.integers(0, 256, nl, dtype=np.uint8)) for _ in range(m)]
    aads = [bytes(rng.integers(0, 256, i % 5, dtype=np.uint8)) for i in range(m)]
    texts = [bytes(rng.integers(0, 256, (i * 37) % 300, dtype=np.uint8)) for i in range(m)]
    host = Runtime("shape", threads=2).threads
    sealed = make_batch(name, True, tl, keys, nonces, aads, texts)
    tags = ossl.seal(sealed, host)
    for i in range(m):
        a, b = sealed.off[i], sealed.off[i + 1]
        want = _reference(name, True, keys[i], nonces[i], aads[i], texts[i], tl)
        assert sealed.dst[a:b].tobytes() + tags[i].tobytes() == want, i
    opened = make_batch(name, False, tl, keys, nonces, aads,
                        [sealed.dst[sealed.off[i]:sealed.off[i + 1]] for i in range(m)])
    bad = tags.copy()
    bad[5, 0] ^= 1
    ok = ossl.open_(opened, bad, host)
    assert ok.tolist() == [i != 5 for i in range(m)]
    for i in range(m):
        got = opened.dst[opened.off[i]:opened.off[i + 1]].tobytes()
        assert got == (bytes(len(texts[i])) if i == 5 else texts[i]), i


@needs_loop
@pytest.mark.parametrize("encrypt", [True, False])
def test_chunked_runs_cut_as_one(encrypt, monkeypatch):
    """C2SP chunks cut into three runs (the short final chunk with the last) give the bytes of
    one run; a broken tag in the second run is the chunk reported."""
    monkeypatch.setattr(ossl, "_C_RUN_MIN_BYTES", 1024)
    key, base, chunk, tag = os.urandom(16), os.urandom(12), 256, 16
    plain = np.frombuffer(os.urandom(chunk * 10 + 77), dtype=np.uint8)
    sealed = np.empty(11 * (chunk + tag) - chunk + 77, dtype=np.uint8)
    assert ossl.chunked(True, "aes-128-gcm", key, base, 3, plain, sealed, plain.size, True,
                        chunk, tag) == -1
    src, n = (plain, plain.size) if encrypt else (sealed, sealed.size)
    one = np.empty(sealed.size if encrypt else plain.size, dtype=np.uint8)
    three = np.empty_like(one)
    host = Runtime("chunks", threads=3).threads
    assert ossl.chunked(encrypt, "aes-128-gcm", key, base, 3, src, one, n, True, chunk, tag) == -1
    assert ossl.chunked(encrypt, "aes-128-gcm", key, base, 3, src, three, n, True, chunk, tag,
                        threads=3, host=host) == -1
    assert one.tobytes() == three.tobytes() == (sealed if encrypt else plain).tobytes()
    if not encrypt:
        broken = sealed.copy()
        broken[6 * (chunk + tag) + 3] ^= 1   # chunk 6: in the second of three runs
        assert ossl.chunked(False, "aes-128-gcm", key, base, 3, broken, three, n, True, chunk,
                            tag, threads=3, host=host) == 6
        assert not three[6 * chunk:7 * chunk].any()
