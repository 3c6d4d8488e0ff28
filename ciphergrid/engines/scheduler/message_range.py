"""One long AEAD message over several engines (``MessageText``: a run's units are the bytes of
the message's text, ranges cut on 64 bytes): each engine runs its range's text and returns the
range's partial MAC; the host folds the partials into the tag.

* **AES-GCM** (96-bit nonces): a range runs as GCM messages of the engine's own AEAD (one per
  host thread of OpenSSL, one on a device), each under a 16-byte IV derived so that its J0 is the
  message's counter block at the piece's first block f (nonce || 1 + f; for a 16-byte IV
  J0 = IV H^2 xor Lb H, so IV = (J0 xor Lb H) H^-2; the low 32 bits start at 2 and a message
  holds at most 2^32 - 2 blocks, so inc32 never wraps).  Their texts are the message's text
  there, and each tag E_K(J0') xor (P H xor L H) gives the piece's partial GHASH
  P = sum_i C_i H^(m + 1 - i) over its m blocks (L: its length block).  Decryption: the same
  messages run the text (their tags, over the plaintext, unused), and GCM messages with no text
  and AAD = the ciphertext pieces under a fixed nonce N give E_K(N || 1) xor (P H xor L H).
* **ChaCha20-Poly1305**: a range's text is ChaCha20 from block counter 1 + (its first byte / 64)
  (OpenSSL on its threads, or a device's ``chacha_stream`` kernel); its partial Poly1305 value
  P = sum_i (C_i + 2^128) r^(m + 1 - i) mod 2^130 - 5 (the range zero-padded to 16 bytes) from
  OpenSSL's Poly1305 under (r, s = 0) on the host.  That MAC gives
  P only mod 2^128 (its final reduction drops the top bits): of the (at most four) values below
  2^130 - 5 with those low bits, the one that also matches a second MAC over the range and one
  more block, ((P + b + 2^128) r mod 2^130 - 5) mod 2^128, is P (another block while two
  match; Horner's rule in Python ints, the last resort).

The fold (``gcm_tag``, ``poly_tag``): with the AAD and the length block as segments too, the MAC
value is the sum of each segment's P times H^e (r^e), e the blocks after the segment; then the
tag (E_K(J0) xor it; its sum with s mod 2^128).  Decryption's partials are over the
ciphertext; a range's plaintext goes to its worker's own buffer, then to the output, and the tag
is compared before the call returns anything (a failure zeroes the output).
"""

from __future__ import annotations

import hmac

import numpy as np

from ...modes.gf128 import mul4, power
from .units import GRAIN, TAIL

#: a range is cut on this many bytes from the message's start (a ChaCha20 block: 4 AES blocks)
ALIGN = 64
#: the smallest range (and the tail's smallest piece): a multiple of ALIGN
RANGE_GRAIN = GRAIN
#: the longest range one engine runs at once (its own buffer, and a device's buffers, hold it)
MAX_RANGE = 1 << 30
#: the nonce of the GHASH calls (their tags are never output)
_GHASH_NONCE = bytes(12)
P1305 = (1 << 130) - 5
M128 = (1 << 128) - 1


def kind_of(name: str) -> str | None:
    """"gcm" or "chacha" for the AEADs whose messages split into ranges, else None."""
    if name.startswith("aes-") and name.endswith("-gcm"):
        return "gcm"
    if name == "chacha20-poly1305":
        return "chacha"
    return None


def engine_runs_ranges(eng, name: str, nonce_len: int | None, tag_length: int | None,
                       nbytes: int | None = None) -> bool:
    """Whether ``eng`` runs ranges of one message of AEAD ``name`` (12-byte nonces; GCM: an
    engine whose GCM takes 12- and 16-byte nonces; ChaCha20-Poly1305: OpenSSL, or a device
    of our kernels)."""
    kind = kind_of(name)
    if kind is None or nonce_len != 12:
        return False
    from ... import aeads

    spec = aeads.spec(name)
    if kind == "chacha":
        return tag_length in (None, 16) and (eng.kind == "openssl" or (
            eng.kind == "device" and hasattr(eng, "aead_driver")
            and spec.capability("device", count=1, nonce_len=12) == "parallel"))
    return all(spec.capability(eng.kind, count=2, nonce_len=k, tag_length=16) == "parallel"
               for k in (12, 16))


# --------------------------------------------------------------------------- GF(2^128), GCM

def _rev128(v: int) -> int:
    return int(f"{v:0128b}"[::-1], 2)


def _el(b: bytes) -> int:
    """A GCM field element (16 bytes, GCM's bit order) as an int with x^i at bit i."""
    return _rev128(int.from_bytes(b, "big"))


def _bytes(v: int) -> bytes:
    return _rev128(v).to_bytes(16, "big")


def _gcm_len_block(alen: int, clen: int) -> int:
    return _el((8 * alen).to_bytes(8, "big") + (8 * clen).to_bytes(8, "big"))


class GCMKeys:
    """A GCM message's key material for the pieces and the fold (Python ints, GCM's bits
    reflected: x^i at bit i): H, H^-2, E_K(_GHASH_NONCE || 1), E_K(J0)."""

    def __init__(self, key: bytes, nonce: bytes):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        self.key, self.nonce = key, nonce
        self._ecb = Cipher(algorithms.AES(key), modes.ECB())
        out = self.encrypt_blocks(bytes(16) + _GHASH_NONCE + (1).to_bytes(4, "big")
                                  + nonce + (1).to_bytes(4, "big"))
        self.h, self.mask_n, self.mask_j0 = _el(out[:16]), _el(out[16:32]), _el(out[32:48])
        self.h_inv2 = power(self.h, (1 << 128) - 3)   # (H^(2^128 - 1) = 1)
        self._lb_h = mul4(_gcm_len_block(0, 16), self.h)   # (a 16-byte IV's length block)

    def encrypt_blocks(self, data: bytes) -> bytes:
        enc = self._ecb.encryptor()
        return enc.update(data) + enc.finalize()

    def ivs(self, first_blocks) -> tuple:
        """For pieces from the text's blocks ``first_blocks`` on: their 16-byte IVs ((k, 16)
        uint8) and the E_K(J0') of each (ints)."""
        j0 = [self.nonce + (1 + f).to_bytes(4, "big") for f in first_blocks]
        ivs = b"".join(_bytes(mul4(_el(j) ^ self._lb_h, self.h_inv2)) for j in j0)
        masks = self.encrypt_blocks(b"".join(j0))
        return (np.frombuffer(ivs, dtype=np.uint8).reshape(-1, 16).copy(),
                [_el(masks[16 * i:16 * i + 16]) for i in range(len(j0))])

    def text_part(self, tag: bytes, mask: int, nbytes: int) -> int:
        """P H of a piece of ``nbytes`` from its tag as a message of its own (no AAD) and its
        E_K(J0')."""
        return _el(tag) ^ mask ^ mul4(_gcm_len_block(0, nbytes), self.h)

    def aad_part(self, tag: bytes, nbytes: int) -> int:
        """P H of ``nbytes`` of AAD from the tag of a message of no text under _GHASH_NONCE."""
        return _el(tag) ^ self.mask_n ^ mul4(_gcm_len_block(nbytes, 0), self.h)

    def partial_times_h(self, data) -> int:
        """P H of ``data`` through pyca (the message's AAD; P: its blocks' Horner sum, the
        last zero-padded)."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return self.aad_part(AESGCM(self.key).encrypt(_GHASH_NONCE, b"", data), len(data))


def gcm_tag(keys: GCMKeys, aad_part: int, aad_len: int, parts, clen: int) -> bytes:
    """The GCM tag from the AAD's P H (``aad_part``) and the ranges' ((start, end, P H) in
    order, tiling the text of ``clen`` bytes)."""
    h = keys.h
    y = mul4(_gcm_len_block(aad_len, clen), h)
    after = 1 + 0   # blocks after the segment: the length block, then the ranges behind it
    for a, b, ph in reversed(parts):
        y ^= mul4(ph, power(h, after - 1))
        after += -(-(b - a) // 16)
    if aad_len:
        y ^= mul4(aad_part, power(h, after - 1))
    return _bytes(y ^ keys.mask_j0)


# --------------------------------------------------------------------------- Poly1305

class PolyKeys:
    """A ChaCha20-Poly1305 message's key material: the ChaCha20 key and nonce, r and s."""

    def __init__(self, key: bytes, nonce: bytes):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        self.key, self.nonce = key, nonce
        block = Cipher(algorithms.ChaCha20(key, bytes(4) + nonce), None).encryptor().update(
            bytes(64))
        self.r = int.from_bytes(block[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
        self.s = int.from_bytes(block[16:32], "little")
        self._mac_key = self.r.to_bytes(16, "little") + bytes(16)

    def _mac(self, data, pad: int, extra: bytes = b"") -> int:
        from cryptography.hazmat.primitives.poly1305 import Poly1305

        p = Poly1305(self._mac_key)
        p.update(data)
        if pad:
            p.update(bytes(pad))
        if extra:
            p.update(extra)
        return int.from_bytes(p.finalize(), "little")

    def partial(self, data) -> int:
        """P of ``data`` (zero-padded to 16 bytes, every block with its 2^128 bit)."""
        n = len(data)
        pad = -n % 16
        low = self._mac(data, pad)
        cands = [low + k * (1 << 128) for k in range(4) if low + k * (1 << 128) < P1305]
        for fill in range(1, 4):
            if len(cands) == 1:
                return cands[0]
            blk = bytes([fill - 1]) * 16
            got = self._mac(data, pad, blk)
            c = int.from_bytes(blk, "little") + (1 << 128)
            cands = [p for p in cands if ((p + c) * self.r % P1305) & M128 == got]
        if len(cands) == 1:
            return cands[0]
        return self._horner(bytes(data) + bytes(pad))   # (never seen: a last resort)

    def _horner(self, data: bytes) -> int:
        acc, r = 0, self.r
        for i in range(0, len(data), 16):
            acc = (acc + int.from_bytes(data[i:i + 16], "little") + (1 << 128)) * r % P1305
        return acc

    def _iv(self, first_byte: int) -> bytes:
        return (1 + first_byte // 64).to_bytes(4, "little") + self.nonce

    def keystream(self, src, dst, first_byte: int) -> None:
        """ChaCha20 of ``src`` from byte ``first_byte`` (a multiple of 64) of the text into
        ``dst`` (pyca: one thread)."""
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        enc = Cipher(algorithms.ChaCha20(self.key, self._iv(first_byte)), None).encryptor()
        dst[:] = np.frombuffer(enc.update(src), dtype=np.uint8)

    def openssl_keystream(self, eng, src, dst, first_byte: int) -> None:
        """:meth:`keystream` on the OpenSSL engine ``eng``'s threads (libcrypto's ChaCha20, a
        piece of at least threads.MIN_CHUNK per thread); pyca where libcrypto is not loaded."""
        from ..openssl import contexts
        from ..openssl.libcrypto import LIB
        from ..openssl.threads import split

        n = src.nbytes
        if LIB is None or not n:
            self.keystream(src, dst, first_byte)
            return
        host = getattr(eng, "host", None)
        src = np.ascontiguousarray(src)
        contexts.run_parts(
            split(n, ALIGN, getattr(host, "budget", 1)),
            lambda part: contexts.EvpCtx("ChaCha20", self.key, self._iv(first_byte + part[0]), True),
            lambda ctx, part, cancel: ctx.process(src, dst, part[0], part[1], cancel), host)

    def device_keystream(self, eng, src, dst, first_byte: int) -> None:
        """:meth:`keystream` on device engine ``eng`` (the ChaCha20-Poly1305 driver's
        ``chacha_stream`` kernel); its copy of the key zeroed before it returns."""
        drv = eng.aead_driver("chacha20-poly1305")
        b, q, n = drv.backend, drv.backend.default_queue, src.nbytes
        words = np.frombuffer(self.key, dtype="<u4").astype(np.uint32)
        nonce = np.frombuffer(self.nonce, dtype="<u4")
        key = b.alloc(32)
        try:
            text, out = b.alloc(n), b.alloc(n)
            b.upload(key, words, q)
            b.upload(text, np.ascontiguousarray(src), q)
            b.launch(drv.prg, "chacha_stream", -(-n // 64),
                     [text, out, key, np.uint32(nonce[0]), np.uint32(nonce[1]),
                      np.uint32(nonce[2]), np.uint32(1 + first_byte // 64), np.uint64(n)], q)
            b.download(dst, out, q)
            b.finish(q)
        finally:
            words.fill(0)
            b.zero(key, q)


def poly_tag(keys: PolyKeys, aad_part: int, aad_len: int, parts, clen: int) -> bytes:
    """The ChaCha20-Poly1305 tag from the AAD's P and the ranges' ((start, end, P) in order,
    tiling the text of ``clen`` bytes)."""
    r = keys.r
    lens = aad_len.to_bytes(8, "little") + clen.to_bytes(8, "little")
    acc = (int.from_bytes(lens, "little") + (1 << 128)) * r % P1305
    after = 1
    for a, b, p in reversed(parts):
        acc = (acc + p * pow(r, after, P1305)) % P1305
        after += -(-(b - a) // 16)
    if aad_len:
        acc = (acc + aad_part * pow(r, after, P1305)) % P1305
    return ((acc + keys.s) & M128).to_bytes(16, "little")


# --------------------------------------------------------------------------- the unit

class MessageText:
    """One AEAD message's text as a scheduled run's units (bytes; ranges cut on ALIGN, at
    least GRAIN, at most MAX_RANGE), every range fenced: its text and its partial MAC are
    committed together, only while the range is still its worker's (``Run``); a range's
    partial MAC is a list of (start, end, partial) of its pieces."""

    def __init__(self, batch, tags_in):
        self.b, self.tags_in = batch, tags_in
        self.kind = kind_of(batch.name)
        key = batch.keys[batch.key_index[0]].tobytes()
        nonce = batch.nonces[0].tobytes()
        self.keys = GCMKeys(key, nonce) if self.kind == "gcm" else PolyKeys(key, nonce)
        self.src = batch.src[:int(batch.off[1])]
        self.dst = batch.dst[:int(batch.off[1])]
        self.aad = batch.aad[int(batch.aad_off[0]):int(batch.aad_off[1])]
        self.n = self.src.nbytes
        self.grain = max(ALIGN, RANGE_GRAIN // ALIGN * ALIGN)
        self.name, self.encrypt = batch.name, batch.encrypt
        self.in_place = True     # (always fenced: see the class docstring)
        self.parts: dict = {}    # range start -> (range end, [(start, end, partial)...])

    def tail_share(self) -> float:
        return TAIL

    def path(self, eng) -> str:
        return "array"

    def weight(self, a: int, b: int) -> int:
        return b - a

    def cut(self, a: int, b: int, nbytes: int) -> int:
        p = a + min(MAX_RANGE, max(self.grain, nbytes // self.grain * self.grain))
        return b if b - p < self.grain and b - a <= MAX_RANGE else min(p, b)

    def buffer(self, eng, a: int, b: int):
        return [np.empty(b - a, dtype=np.uint8), None]

    def _pieces(self, eng, a: int, b: int) -> list:
        """[a, b) cut into one piece per host thread of OpenSSL (of 1 MiB at least), one for
        another engine; cuts on ALIGN."""
        k = 1
        if eng.kind == "openssl":
            k = max(1, min(getattr(getattr(eng, "host", None), "budget", 1), (b - a) >> 20))
        step = -(-(b - a) // k // ALIGN) * ALIGN
        cuts = list(range(a, b, step)) + [b]
        return list(zip(cuts, cuts[1:]))

    def _batch(self, pieces, a: int, src, dst, nonces, aad=None):
        """A batch of GCM messages: piece j of ``src`` (the range from byte ``a``) under
        ``nonces[j]``, into ``dst``; with ``aad``, no texts and piece j of ``aad`` as AAD."""
        from ...request import Batch

        k = len(pieces)
        off = np.array([p[0] - a for p in pieces] + [pieces[-1][1] - a], dtype=np.int64)
        empty = np.zeros(0, dtype=np.uint8)
        texts, aads = (src, empty) if aad is None else (empty, aad)
        return Batch(self.name, True, 16, self.b.keys[self.b.key_index[:1]].copy(),
                     np.zeros(k, dtype=np.int32), nonces, aads,
                     off if aad is not None else np.zeros(k + 1, dtype=np.int64), texts,
                     off if aad is None else np.zeros(k + 1, dtype=np.int64),
                     dst if aad is None else np.zeros(0, dtype=np.uint8))

    def _run_gcm(self, eng, a: int, b: int, src, buf) -> list:
        pieces = self._pieces(eng, a, b)
        ivs, masks = self.keys.ivs([p // 16 for p, _ in pieces])
        text = self._batch(pieces, a, src, buf, ivs)
        try:
            tags = eng.seal(text, None)
            if self.encrypt:
                return [(p, q, self.keys.text_part(t.tobytes(), m, q - p))
                        for (p, q), t, m in zip(pieces, tags, masks)]
            nonces = np.zeros((len(pieces), 12), dtype=np.uint8)
            macs = self._batch(pieces, a, None, None, nonces, aad=src)
            try:
                tags = eng.seal(macs, None)
            finally:
                macs.wipe()
            return [(p, q, self.keys.aad_part(t.tobytes(), q - p))
                    for (p, q), t in zip(pieces, tags)]
        finally:
            text.wipe()

    def run(self, eng, a: int, b: int, out) -> None:
        buf, src = out[0], self.src[a:b]
        if self.kind == "gcm":
            out[1] = self._run_gcm(eng, a, b, src, buf)
        else:
            stream = (self.keys.openssl_keystream if eng.kind == "openssl" else
                      self.keys.device_keystream)
            if not self.encrypt:   # (the MAC over the ciphertext before any plaintext is written)
                out[1] = [(a, b, self.keys.partial(src))]
            stream(eng, src, buf, a)
            if self.encrypt:
                out[1] = [(a, b, self.keys.partial(buf))]

    def commit(self, a: int, b: int, out) -> None:
        self.dst[a:b] = out[0]
        self.parts[a] = (b, out[1])

    def tag(self) -> bytes:
        """The message's tag (full length) from the committed ranges."""
        parts, pos = [], 0
        while pos < self.n:
            b, pieces = self.parts[pos]   # (the committed ranges tile the text)
            parts += pieces
            pos = b
        aad_part = 0
        if self.aad.size:
            aad_part = (self.keys.partial_times_h(self.aad) if self.kind == "gcm"
                        else self.keys.partial(self.aad))
        fold = gcm_tag if self.kind == "gcm" else poly_tag
        return fold(self.keys, aad_part, int(self.aad.size), parts, self.n)

    def result(self):
        """Encryption: the (1, tag_length) tags; decryption: the verified mask (a failure's
        output zeroed)."""
        tl = self.b.tag_length
        tag = self.tag()[:tl]
        if self.encrypt:
            return np.frombuffer(tag, dtype=np.uint8).reshape(1, tl).copy()
        ok = hmac.compare_digest(tag, np.asarray(self.tags_in, dtype=np.uint8).reshape(-1)[:tl]
                                 .tobytes())
        if not ok:
            self.dst[:] = 0
        return np.array([ok], dtype=bool)
