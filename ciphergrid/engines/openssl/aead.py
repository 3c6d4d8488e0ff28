"""The AEADs OpenSSL has (AES-GCM, ChaCha20-Poly1305): the messages of a batch spread over the
host's cores, each thread running its share in the C helper loop (``libcrypto.c_loop``: one EVP
context per thread, no Python per message, the GIL released); without a C compiler, one message
after the other through pyca/cryptography (which is OpenSSL too).

``seal`` writes each message's ciphertext into ``batch.dst`` and returns the tags; ``open_``
checks each message's tag inside OpenSSL and zeroes the plaintext of every message that fails,
returning the mask of those that verified.
"""

from __future__ import annotations

from . import contexts
from .libcrypto import pyca_newer as _pyca_newer
from .threads import host_threads, ranges, split
from ..._lazy import numpy_for

np = numpy_for(__name__)

#: below this many messages (or bytes) a batch runs on the calling thread
_THREADED_MIN_MESSAGES = 64
_THREADED_MIN_BYTES = 4 << 20
#: one message below this many bytes goes through pyca's one-shot call, not the C loop
_C_LOOP_MIN_BYTES = 1 << 20
#: chunked encryption: the least bytes given to one thread, and the chunks one C call takes
#: between two looks at its run's cancel flag (about threads.STEP bytes of 16 KiB chunks)
_C_RUN_MIN_BYTES = 1 << 20
_STEP_CHUNKS = 2048


#: EVP names of the AEADs
EVP_NAMES = {"aes-128-gcm": "AES-128-GCM", "aes-192-gcm": "AES-192-GCM", "aes-256-gcm": "AES-256-GCM",
             "chacha20-poly1305": "ChaCha20-Poly1305"}


def _messages(batch, tags: np.ndarray, ok: np.ndarray, host) -> None:
    """The batch's messages on ``host``'s threads (a runtime.Threads: its budget), in ranges of
    about equal bytes (a message counted 256 more), each on a context of its own: the C loop's
    where there is one (no Python per message), else pyca's (:class:`contexts.PycaAead`).
    Sealing writes ``tags``; opening reads them and writes ``ok``."""
    from .libcrypto import LIB, c_loop, fail

    m, total = batch.count, int(batch.off[-1])
    loop = c_loop() if batch.name in EVP_NAMES else None
    if loop is None or LIB is None or m == 1 and total < _C_LOOP_MIN_BYTES:
        loop = None   # (one small message: pyca's one call costs less than the loop's set-up)
    threads = host.budget
    if m < _THREADED_MIN_MESSAGES and total < _THREADED_MIN_BYTES or m == 1:
        threads = 1
    parts = [(0, m)] if threads == 1 else ranges(np.diff(batch.off) + 256, threads)
    if loop is None:
        contexts.run_parts(parts, lambda _: contexts.PycaAead(batch.name, batch.encrypt),
                           lambda ctx, part, cancel: ctx.messages(batch, tags, ok, *part, cancel),
                           host)
        return
    enc = 1 if batch.encrypt else 0
    arrays = (np.ascontiguousarray(batch.keys), np.ascontiguousarray(batch.key_index, dtype=np.int32),
              np.ascontiguousarray(batch.nonces), np.ascontiguousarray(batch.aad),
              np.ascontiguousarray(batch.aad_off, dtype=np.int64),
              np.ascontiguousarray(batch.off, dtype=np.int64))
    keys, kidx, nonces, aad, aad_off, off = (v.ctypes.data for v in arrays)
    fns = _loop_fns()

    def work(ctx, part, cancel):
        r = loop.cg_aead_batch(*fns, ctx.ptr, enc, keys, batch.keys.shape[1], kidx, nonces,
                               batch.nonces.shape[1], aad, aad_off, batch.src.ctypes.data,
                               batch.dst.ctypes.data, off, tags.ctypes.data, batch.tag_length,
                               ok.ctypes.data, *part)
        if r < 0:
            fail(f"{batch.name} message {-r - 1}")

    contexts.run_parts(parts, lambda _: contexts.EvpCtx(EVP_NAMES[batch.name], None, None,
                                                        batch.encrypt), work, host)


def address(buf) -> int:
    """The address of a contiguous buffer's first byte (a numpy array, a bytearray, a writable
    memoryview or mapping; numpy is imported only for a read-only one)."""
    import ctypes
    import sys

    numpy = sys.modules.get("numpy")   # (no array without it: not imported for one)
    if numpy is not None and isinstance(buf, numpy.ndarray):
        if not buf.flags.c_contiguous:
            from ...errors import InvalidArgument

            raise InvalidArgument("the chunks' buffers must be contiguous")
        return buf.ctypes.data
    view = memoryview(buf)
    if view.readonly:
        return np.frombuffer(view, dtype=np.uint8).ctypes.data
    return ctypes.addressof(ctypes.c_char.from_buffer(view)) if view.nbytes else 0


_FNS: tuple | None = None   # the EVP functions' addresses the C loop takes


def _loop_fns() -> tuple:
    """The addresses of the EVP functions the C loop calls (read once)."""
    from .libcrypto import LIB, fn_addr

    global _FNS
    if _FNS is None:
        _FNS = tuple(fn_addr(f) for f in (LIB.EVP_CipherInit_ex, LIB.EVP_CipherUpdate,
                                          LIB.EVP_CipherFinal_ex, LIB.EVP_CIPHER_CTX_ctrl,
                                          LIB.ERR_clear_error))
    return _FNS


def pyca_chunks(encrypt: bool, key: bytes, base: bytes, first: int, src, dst, n: int,
                final: bool, chunk: int, tag: int) -> int:
    """:func:`chunked` one chunk at a time through pyca's AESGCM (``encrypt_into`` /
    ``decrypt_into``: no copies); it holds the interpreter lock, so only a lone caller.  Returns
    as :func:`chunked` does (-1, or the first chunk that does not verify): how a chunk that
    fails in pyca's Cobblestone decryptor is named (formats/lone.py)."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    gcm = AESGCM(key)
    src, dst = memoryview(src).cast("B"), memoryview(dst).cast("B")
    b = int.from_bytes(base, "big")
    step = chunk if encrypt else chunk + tag
    out_step = chunk + tag if encrypt else chunk
    whole = n // step
    seal, open_ = gcm.encrypt_into, gcm.decrypt_into
    for j in range(whole + (1 if final else 0)):
        i, o = j * step, j * out_step
        m = chunk if j < whole else n - i - (0 if encrypt else tag)
        nonce = (b ^ (first + j)).to_bytes(12, "big")
        if encrypt:
            seal(nonce, src[i:i + m], None, dst[o:o + m + tag])
            continue
        try:
            open_(nonce, src[i:i + m + tag], None, dst[o:o + m])
        except InvalidTag:
            dst[o:o + m] = bytes(m)
            return j
    return -1


def chunked(encrypt: bool, name: str, key: bytes, base: bytes, first: int, src, dst, n: int,
            final: bool, chunk: int, tag: int, threads: int = 1, alone: bool = False,
            host=None) -> int | None:
    """Chunks of C2SP chunked encryption (formats/cobblestone.py) in the C loop, no Python per
    chunk: chunk j is AEAD ``name`` under ``key`` with nonce ``base`` XOR (``first`` + j), no AAD.
    ``src``/``dst`` are contiguous buffers: sealing reads ``n`` plaintext bytes (whole chunks of
    ``chunk`` bytes; with ``final`` the shorter last one after them) and writes ciphertext || tag
    per chunk; opening reads ``n`` sealed bytes and writes the plaintext, each chunk's tag checked
    inside OpenSSL.  The chunks are cut into ``threads`` runs on the pool of ``host`` (a
    runtime.Threads; None: this thread's runtime's).  ``alone``
    with one thread: no other thread of the process runs chunks meanwhile, so AES-GCM may go
    through pyca's OpenSSL where that is the later release (:func:`_pyca_newer`), one call per
    chunk.

    Returns -1 when every chunk was sealed or verified, else the number of the first chunk (from
    0) whose tag did not verify (its plaintext zeroed; the others' left to the caller); None where
    there is no C loop (the caller takes the batch path).  An OpenSSL failure raises DeviceError."""
    import ctypes

    from .libcrypto import LIB, c_loop, fail

    loop = c_loop()
    if loop is None or LIB is None or name not in EVP_NAMES:
        return None
    step = chunk if encrypt else chunk + tag          # input bytes per whole chunk
    out_step = chunk + tag if encrypt else chunk
    count = n // step + (1 if final else 0)
    if not count:
        return -1
    if alone and threads == 1 and name.endswith("-gcm") and len(base) == 12 and _pyca_newer():
        return pyca_chunks(encrypt, key, base, first, src, dst, n, final, chunk, tag)
    src, dst = address(src), address(dst)
    fns = _loop_fns()
    # runs of whole chunks, at least _C_RUN_MIN_BYTES each (the shorter last chunk with the last)
    parts = [(off // step, (off + length) // step) for off, length in
             split(n, step, threads, _C_RUN_MIN_BYTES)]
    parts[-1] = (parts[-1][0], count)
    bad = [-1]

    def work(ctx, part, cancel):
        lo, hi = part
        why = ctypes.c_int(0)
        for a in range(lo, hi, _STEP_CHUNKS):      # (a look at cancel between steps)
            if cancel.is_set():
                return
            b = min(hi, a + _STEP_CHUNKS)
            last = b == count and final
            done = loop.cg_chunked(*fns, ctx.ptr, enc, base, first + a, src + a * step,
                                   dst + a * out_step, (n if last else b * step) - a * step,
                                   1 if last else 0, chunk, tag, ctypes.byref(why))
            if why.value == 2:
                fail(f"{name} chunk {first + a + done}")
            if why.value == 1:
                bad.append(a + done)
                return

    enc = 1 if encrypt else 0
    contexts.run_parts(parts, lambda _: contexts.EvpCtx(EVP_NAMES[name], key, None, encrypt),
                       work, host)
    return min(b for b in bad if b >= 0) if len(bad) > 1 else -1


def seal(batch, host=None) -> np.ndarray:
    """The tags of ``batch`` sealed on ``host``'s threads (None: this thread's runtime's)."""
    tags = np.empty((batch.count, batch.tag_length), dtype=np.uint8)
    _messages(batch, tags, np.empty(0, dtype=np.uint8), host_threads(host))
    return tags


def open_(batch, tags_in: np.ndarray, host=None) -> np.ndarray:
    """The mask of ``batch``'s verified messages, opened on ``host``'s threads (None: this
    thread's runtime's); the plaintext of every other message zeroed."""
    ok8 = np.zeros(batch.count, dtype=np.uint8)
    tags = np.ascontiguousarray(tags_in, dtype=np.uint8).copy()
    _messages(batch, tags, ok8, host_threads(host))
    return ok8.astype(bool)
