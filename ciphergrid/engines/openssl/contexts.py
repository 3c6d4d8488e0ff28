"""The OpenSSL engine's one context setup, for block modes and AEADs alike: :class:`EvpCtx` (one
``EVP_CIPHER_CTX`` through ctypes: the cipher looked up, key and IV set, padding off) and the
pyca/``cryptography`` fallback when no libcrypto can be loaded (:class:`PycaCtx` for the block
modes, :class:`PycaAead` for AEAD messages); :func:`run_parts` runs a request's parts (block
ranges, data units, messages, chunks: ``threads.split``'s) each on a context of its own over the
host's threads, and frees every context once no thread is inside OpenSSL.

A block context's interface: ``process`` (an update over a range, in cancellable steps),
``final``, ``set_iv``, ``xts_units`` (XTS data units with their tweaks), ``spin`` (the ``openssl
speed`` loop) and ``free``; an AEAD's context carries the cipher only (``key=None``), each message
keyed in the C loop (aead.py).

Semantics follow ``openssl enc -nopad``: padding is switched off, so nothing is ever added or
removed here.  Keys are copied into ctypes buffers that are zeroed right after
``EVP_CipherInit_ex``; they are never logged or shown in a repr.  Contexts are released with
``EVP_CIPHER_CTX_free`` (which clears them).
"""

from __future__ import annotations

import ctypes
import time

from ...buffers import address
from ...errors import DeviceError, InvalidKey, InvalidLength, UnsupportedCipher
from . import threads
from .libcrypto import LIB, RAW, c_loop, evp_cipher, fail, fn_addr
from .threads import STEP, check_cancel
from ..._lazy import numpy_for

np = numpy_for(__name__)

__all__ = ["Ctx", "EvpCtx", "PycaCtx", "PycaAead", "has_evp", "pyca_mode", "run_parts"]


def run_parts(parts, make, work, host=None) -> None:
    """``work(ctx, part, cancel)`` for each of ``parts`` on a context of its own (``make(part)``,
    all made before any runs: a key OpenSSL refuses runs nothing), the first part in this thread
    and the others on ``host``'s pool (a runtime.Threads; None: this thread's runtime's); every
    context freed once none of them is in use, whatever happened."""
    if len(parts) == 1:   # (this thread alone: nobody to cancel it)
        ctx = make(parts[0])
        try:
            work(ctx, parts[0], threads.NEVER)
        finally:
            ctx.free()
        return
    ctxs = []
    try:
        for part in parts:
            ctxs.append(make(part))
        threads.run_all([_job(work, c, part) for c, part in zip(ctxs, parts)], host)
    finally:
        for c in ctxs:
            c.free()


def update_final(src, dst):
    """The work of a block mode's part (offset, length): its bytes from ``src`` into ``dst``
    through its context, then the context's final."""
    def work(ctx, part, cancel):
        ctx.process(src, dst, part[0], part[1], cancel)
        ctx.final()
    return work


def _job(work, ctx, part):
    return lambda cancel: work(ctx, part, cancel)


class EvpCtx:
    """One EVP_CIPHER_CTX, initialised with the cipher, the key (``None``: the cipher only, keyed
    later per message) and the IV at construction."""

    __slots__ = ("ptr", "ivbuf", "outl", "poutl", "scratch", "__weakref__")

    def __init__(self, evp_name: str, key: bytes, iv: bytes | None, encrypt: bool):
        cipher = evp_cipher(evp_name)
        self.ptr = LIB.EVP_CIPHER_CTX_new()
        if not self.ptr:
            fail("EVP_CIPHER_CTX_new")
        self.ivbuf = ctypes.create_string_buffer(32)
        self.outl = ctypes.c_int(0)
        self.poutl = ctypes.byref(self.outl)
        self.scratch = ctypes.create_string_buffer(64)
        enc = 1 if encrypt else 0
        # the cipher first, then the key: a cipher of variable key length (CAST5) is told the
        # key's length before it reads the key
        ok = LIB.EVP_CipherInit_ex(self.ptr, cipher, None, None, None, enc)
        if key is not None:
            keybuf = ctypes.create_string_buffer(max(1, len(key)))
            try:
                ctypes.memmove(keybuf, key, len(key))
                ivp = None
                if iv is not None:
                    ctypes.memmove(self.ivbuf, iv, len(iv))
                    ivp = ctypes.addressof(self.ivbuf)
                if ok == 1 and LIB.cg_ctx_key_length(self.ptr) != len(key):
                    ok = LIB.EVP_CIPHER_CTX_set_key_length(self.ptr, len(key))
                if ok == 1:
                    ok = LIB.EVP_CipherInit_ex(self.ptr, None, None, ctypes.addressof(keybuf),
                                               ivp, enc)
            finally:
                ctypes.memset(keybuf, 0, len(keybuf))
        if ok != 1:
            self.free()
            fail("EVP_CipherInit_ex")
        if LIB.EVP_CIPHER_CTX_set_padding(self.ptr, 0) != 1:
            self.free()
            fail("EVP_CIPHER_CTX_set_padding")

    def set_iv(self, iv: bytes) -> None:
        ctypes.memmove(self.ivbuf, iv, len(iv))
        if LIB.EVP_CipherInit_ex(self.ptr, None, None, None, ctypes.addressof(self.ivbuf), -1) != 1:
            fail("EVP_CipherInit_ex (IV)")

    def process(self, src, dst, off: int, n: int, cancel=None) -> None:
        """EVP_CipherUpdate over src[off:off+n] -> dst[off:off+n] in steps of STEP bytes, looking
        at ``cancel`` (a threading.Event) between steps."""
        update, ctx, poutl, outl = LIB.EVP_CipherUpdate, self.ptr, self.poutl, self.outl
        s = address(src) + off
        d = s - off if dst is src else address(dst)
        d += off
        done = 0
        while done < n:
            check_cancel(cancel)
            m = min(STEP, n - done)
            if update(ctx, d + done, poutl, s + done, m) != 1:
                fail("EVP_CipherUpdate")
            if outl.value != m:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {m}")
            done += m

    def final(self) -> None:
        if LIB.EVP_CipherFinal_ex(self.ptr, self.scratch, self.poutl) != 1:
            fail("EVP_CipherFinal_ex")
        if self.outl.value != 0:
            raise DeviceError(f"EVP_CipherFinal_ex returned {self.outl.value} unexpected bytes")

    def xts_units(self, tweaks: np.ndarray, first: int, src: np.ndarray, dst: np.ndarray,
                  off: int, n: int, unit: int) -> None:
        """Data units of ``unit`` bytes over [off, off+n); unit k's tweak is tweaks[first+k]."""
        s = src.ctypes.data + off
        d = dst.ctypes.data + off
        t = tweaks.ctypes.data + 16 * first
        loop = c_loop()
        if loop is not None:
            r = loop.cg_xts_units(fn_addr(LIB.EVP_CipherInit_ex), fn_addr(LIB.EVP_CipherUpdate),
                                  self.ptr, t, s, d, n, unit)
            if r < 0:
                fail(f"EVP_CipherInit_ex/EVP_CipherUpdate (XTS unit {first - r - 1})")
            return
        # one ctypes call per step, with prebuilt ctypes arguments (about half the call cost)
        init, update = RAW.EVP_CipherInit_ex, RAW.EVP_CipherUpdate
        ctx, poutl, outl = ctypes.c_void_p(self.ptr), self.poutl, self.outl
        nul, back = ctypes.c_void_p(None), ctypes.c_int(-1)
        tp, sp, dp = ctypes.c_void_p(t), ctypes.c_void_p(s), ctypes.c_void_p(d)
        mm = ctypes.c_int(unit)
        pos = 0
        while pos < n:
            m = unit if n - pos >= unit else n - pos
            if m != mm.value:
                mm = ctypes.c_int(m)
            if init(ctx, nul, nul, nul, tp, back) != 1:
                fail("EVP_CipherInit_ex (tweak)")
            if update(ctx, dp, poutl, sp, mm) != 1:
                fail("EVP_CipherUpdate (XTS unit)")
            if outl.value != m:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {m}")
            pos += m
            tp.value += 16
            sp.value += m
            dp.value += m

    def spin(self, buf: np.ndarray, size: int, deadline: float) -> int:
        """In-place EVP_CipherUpdate of buf[:size] until ``deadline``; returns bytes processed.

        One EVP call per buffer, as ``openssl speed`` does; the clock is read between batches
        of about 1 MiB (at least one call)."""
        addr = buf.ctypes.data
        clock = time.perf_counter
        batch = max(1, (1 << 20) // size)
        done = 0
        loop = c_loop()
        if loop is not None:
            spin, upd = loop.cg_spin, fn_addr(LIB.EVP_CipherUpdate)
            while True:
                if spin(upd, self.ptr, addr, size, batch) != batch:
                    fail("EVP_CipherUpdate")
                done += batch * size
                if clock() >= deadline:
                    return done
        update = RAW.EVP_CipherUpdate
        ctx, poutl, outl = ctypes.c_void_p(self.ptr), self.poutl, self.outl
        ap, sz = ctypes.c_void_p(addr), ctypes.c_int(size)
        batch = max(1, min(4096, (1 << 18) // size))
        while True:
            for _ in range(batch):
                if update(ctx, ap, poutl, ap, sz) != 1:
                    fail("EVP_CipherUpdate")
            if outl.value != size:
                raise DeviceError(f"EVP_CipherUpdate wrote {outl.value} bytes for {size}")
            done += batch * size
            if clock() >= deadline:
                return done

    def free(self) -> None:
        if self.ptr:
            LIB.EVP_CIPHER_CTX_free(self.ptr)
            self.ptr = None


# --- pyca cryptography fallback (same interface as EvpCtx) --------------------------------------

def pyca_mode(evp_name: str):
    """(algorithm class, Mode) for pyca, or None when pyca lacks the cipher."""
    from ... import registry

    try:
        spec = registry.lookup(evp_name)
    except UnsupportedCipher:
        return None
    from cryptography.hazmat.primitives.ciphers import algorithms

    algs = {"aes": "AES", "camellia": "Camellia", "sm4": "SM4", "aria": "ARIA"}
    alg = getattr(algorithms, algs.get(spec.algorithm.name, ""), None)
    if alg is None:
        return None
    if spec.mode.key_count == 2 and spec.key_size not in (16, 32):
        return None
    return alg, spec.mode


class PycaCtx:
    __slots__ = ("alg", "mode", "encrypt", "ctx")

    def __init__(self, evp_name: str, key: bytes, iv: bytes | None, encrypt: bool):
        found = pyca_mode(evp_name)
        if found is None:
            raise UnsupportedCipher(f"cryptography has no cipher {evp_name!r}")
        alg, self.mode = found
        self.alg = alg(bytes(key))
        self.encrypt = encrypt
        self.ctx = None
        if iv is not None or self.mode.iv_len(16) == 0:  # (ECB: no IV to wait for)
            self.set_iv(iv)

    def set_iv(self, iv: bytes | None) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, modes

        mode = {"ecb": lambda _: modes.ECB(), "cbc": modes.CBC, "ctr": modes.CTR,
                "xts": modes.XTS}[self.mode.name](None if iv is None else bytes(iv))
        try:
            c = Cipher(self.alg, mode)
            self.ctx = c.encryptor() if self.encrypt else c.decryptor()
        except ValueError as e:
            raise InvalidKey(str(e)) from None

    def process(self, src: np.ndarray, dst: np.ndarray, off: int, n: int, cancel=None) -> None:
        done = 0
        while done < n:
            check_cancel(cancel)
            m = min(STEP, n - done)
            res = self.ctx.update(memoryview(src[off + done: off + done + m]))
            if len(res) != m:
                raise DeviceError(f"cryptography update returned {len(res)} bytes for {m}")
            memoryview(dst)[off + done: off + done + m] = res
            done += m

    def final(self) -> None:
        try:
            res = self.ctx.finalize()
        except ValueError as e:
            raise InvalidLength(str(e)) from None
        if res:
            raise DeviceError(f"cryptography finalize returned {len(res)} unexpected bytes")

    def xts_units(self, tweaks, first, src, dst, off, n, unit) -> None:
        pos = 0
        k = first
        while pos < n:
            m = min(unit, n - pos)
            self.set_iv(tweaks[k].tobytes())
            self.process(src, dst, off + pos, m)
            pos += m
            k += 1

    def spin(self, buf: np.ndarray, size: int, deadline: float) -> int:
        out = bytearray(size + 64)
        mv = memoryview(buf)[:size]
        clock = time.perf_counter
        batch = max(1, min(4096, (1 << 18) // max(1, size)))
        done = 0
        while True:
            for _ in range(batch):
                self.ctx.update_into(mv, out)
            done += batch * size
            if clock() >= deadline:
                return done

    def free(self) -> None:
        self.ctx = None
        self.alg = None


class PycaAead:
    """AEAD messages through pyca's one-shot objects (AESGCM, ChaCha20Poly1305) or, for a nonce or
    tag length they refuse, AES-GCM's streaming interface: the fallback of the C loop (none, or
    one small message, where pyca's one call costs less).  ``messages`` writes what the C loop
    writes: the tags (sealing), or ``ok`` with the plaintext of every failed message zeroed."""

    __slots__ = ("name", "kind", "encrypt")

    def __init__(self, name: str, encrypt: bool):
        from ... import aeads

        self.name, self.kind, self.encrypt = name, aeads.lookup(name).openssl[name], encrypt

    def messages(self, batch, tags, ok, lo: int, hi: int, cancel=None) -> None:
        """Messages [lo, hi) of ``batch``: sealing writes tags[i]; opening checks tags[i] and
        sets ok[i] (a failed message's plaintext zeroed)."""
        for i in range(lo, hi):
            check_cancel(cancel)
            a, b = int(batch.off[i]), int(batch.off[i + 1])
            key = batch.keys[batch.key_index[i]].tobytes()
            aad = batch.aad[batch.aad_off[i]:batch.aad_off[i + 1]].tobytes()
            got = self._one(key, batch.nonces[i].tobytes(), aad, batch.src[a:b], batch.dst[a:b],
                            batch.tag_length, None if self.encrypt else tags[i].tobytes())
            if self.encrypt:
                tags[i] = np.frombuffer(got, dtype=np.uint8)
            else:
                ok[i] = got
                if not got:
                    batch.dst[a:b] = 0

    def _one(self, key: bytes, nonce: bytes, aad: bytes, src, dst, tag_length: int, tag_in):
        """One message; its tag (sealing) or whether it verified (opening)."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

        if self.kind == "ChaCha20Poly1305":
            return self._one_shot(ChaCha20Poly1305(key), nonce, aad, src, dst, tag_in)
        if tag_length == 16 and 8 <= len(nonce) <= 128:   # pyca's one-shot AESGCM: one call
            return self._one_shot(AESGCM(key), nonce, aad, src, dst, tag_in)
        if not self.name.startswith("aes-"):
            raise UnsupportedCipher(f"cryptography has no AEAD {self.name!r}")
        # AES-GCM through the streaming interface: any nonce length, truncated tags
        if self.encrypt:
            ctx = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
        else:
            ctx = Cipher(algorithms.AES(key),
                         modes.GCM(nonce, tag_in, min_tag_length=len(tag_in))).decryptor()
        if aad:
            ctx.authenticate_additional_data(aad)
        out = ctx.update(src.tobytes())
        try:
            out += ctx.finalize()
        except InvalidTag:
            return False
        dst[:] = np.frombuffer(out, dtype=np.uint8)
        return ctx.tag[:tag_length] if self.encrypt else True

    def _one_shot(self, a, nonce: bytes, aad: bytes, src, dst, tag_in):
        from cryptography.exceptions import InvalidTag

        if self.encrypt:
            out = a.encrypt(nonce, src.tobytes(), aad)
            dst[:] = np.frombuffer(out, dtype=np.uint8, count=src.nbytes)
            return out[src.nbytes:]
        try:
            out = a.decrypt(nonce, src.tobytes() + tag_in, aad)
        except InvalidTag:
            return False
        dst[:] = np.frombuffer(out, dtype=np.uint8)
        return True

    def free(self) -> None:
        pass


#: the context class in use: EvpCtx, or PycaCtx when no libcrypto could be loaded (the engine's
#: modules look it up here at each use, so a test can swap it)
Ctx = EvpCtx if LIB is not None else PycaCtx


def has_evp(evp_name: str) -> bool:
    """Whether the backend in use has this cipher (an EVP cipher, or pyca's)."""
    if LIB is None:
        return pyca_mode(evp_name) is not None
    try:
        evp_cipher(evp_name)
        return True
    except UnsupportedCipher:
        return False
