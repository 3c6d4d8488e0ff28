"""The AEADs OpenSSL has (AES-GCM, ChaCha20-Poly1305), through pyca/cryptography (which is
OpenSSL): one message after the other, the messages of a batch spread over the host's cores.

``seal`` writes each message's ciphertext into ``batch.dst`` and returns the tags; ``open_``
checks each message's tag inside OpenSSL and zeroes the plaintext of every message that fails,
returning the mask of those that verified.
"""

from __future__ import annotations

import os

import numpy as np

from .threads import run_all

#: below this many messages (or bytes) a batch runs on the calling thread
_THREADED_MIN_MESSAGES = 64
_THREADED_MIN_BYTES = 4 << 20


def _algorithm(name: str, key: bytes):
    from cryptography.hazmat.primitives.ciphers import algorithms

    if name.startswith("aes-"):
        return algorithms.AES(key)
    raise ValueError(name)


def _one(name: str, kind: str, encrypt: bool, key: bytes, nonce: bytes, aad: bytes, src, dst,
         tag_length: int, tag_in: bytes | None):
    """One message; returns its tag (seal) or whether it verified (open)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    if kind == "ChaCha20Poly1305":
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        a = ChaCha20Poly1305(key)
        if encrypt:
            out = a.encrypt(nonce, src.tobytes(), aad)
            dst[:] = np.frombuffer(out, dtype=np.uint8, count=src.nbytes)
            return out[src.nbytes:]
        try:
            out = a.decrypt(nonce, src.tobytes() + tag_in, aad)
        except InvalidTag:
            return False
        dst[:] = np.frombuffer(out, dtype=np.uint8)
        return True
    # AES-GCM through the streaming interface: any nonce length, truncated tags
    if encrypt:
        ctx = Cipher(_algorithm(name, key), modes.GCM(nonce)).encryptor()
    else:
        ctx = Cipher(_algorithm(name, key), modes.GCM(nonce, tag_in, min_tag_length=len(tag_in))).decryptor()
    if aad:
        ctx.authenticate_additional_data(aad)
    out = ctx.update(src.tobytes())
    try:
        out += ctx.finalize()
    except InvalidTag:
        return False
    dst[:] = np.frombuffer(out, dtype=np.uint8)
    return ctx.tag[:tag_length] if encrypt else True


def _run(batch, tags_in):
    from ... import aeads

    kind = aeads.lookup(batch.name).openssl[batch.name]
    m = batch.count
    results = [None] * m

    def part(lo, hi):
        def job(cancel):
            for i in range(lo, hi):
                if cancel.is_set():
                    return
                a, b = int(batch.off[i]), int(batch.off[i + 1])
                key = batch.keys[batch.key_index[i]].tobytes()
                aad = batch.aad[batch.aad_off[i]:batch.aad_off[i + 1]].tobytes()
                results[i] = _one(batch.name, kind, batch.encrypt, key, batch.nonces[i].tobytes(),
                                  aad, batch.src[a:b], batch.dst[a:b], batch.tag_length,
                                  None if tags_in is None else tags_in[i].tobytes())
        return job

    threads = os.cpu_count() or 1
    small = m < _THREADED_MIN_MESSAGES and batch.src.nbytes < _THREADED_MIN_BYTES
    step = m if (small or threads == 1 or m == 1) else -(-m // threads)
    run_all([part(lo, min(m, lo + step)) for lo in range(0, m, max(1, step))] or [lambda c: None])
    return results


def seal(batch) -> np.ndarray:
    res = _run(batch, None)
    tags = np.empty((batch.count, batch.tag_length), dtype=np.uint8)
    for i, t in enumerate(res):
        tags[i] = np.frombuffer(t, dtype=np.uint8)
    return tags


def open_(batch, tags_in: np.ndarray) -> np.ndarray:
    ok = np.array(_run(batch, tags_in), dtype=bool)
    for i in np.flatnonzero(~ok):
        batch.dst[batch.off[i]:batch.off[i + 1]] = 0
    return ok
