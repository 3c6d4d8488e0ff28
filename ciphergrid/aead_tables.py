"""The AEAD calls' arguments as a batch's tables, checked (aead.py builds its batches with
them; the service checks a client's tables with them): the implementation, the tag length,
the key table and index, the nonce table, the AAD table, the limits per message, and the
refusal of a (key, nonce) pair repeated within an encryption batch (large batches: beside the
device work, ``Beside``).
"""

from __future__ import annotations


import numpy as np

from . import buffers
from .errors import InvalidArgument, InvalidLength
from .request import implementation_of  # noqa: F401  (aead's name for it)

I64 = np.int64


def tag_length_of(aead, tag_length) -> int:
    if tag_length is None:
        return aead.default_tag_length
    if isinstance(tag_length, bool) or not isinstance(tag_length, (int, np.integer)):
        raise InvalidArgument(f"tag_length must be an int, not {type(tag_length).__name__}")
    return int(tag_length)


def longest_of(off: np.ndarray, limit: int) -> int:
    """The longest of the texts at offsets ``off`` (rising), or their total where that is
    within ``limit`` (no text is then past it: a pass over the offsets fewer before the first
    upload)."""
    total = int(off[-1]) if off.size else 0
    return total if total <= limit or off.size < 2 else int(np.diff(off).max())


def check_limits(spec, longest: int, longest_aad: int) -> None:
    """The longest message and the longest AAD of a batch against the AEAD's limits."""
    aead = spec.aead
    if longest > aead.max_message:
        raise InvalidLength(f"{spec.name}: a message of {longest} bytes is past the "
                            f"AEAD's limit of {aead.max_message} bytes per (key, nonce); split it "
                            "into chunks of their own nonces (a chunked format)")
    if longest_aad > aead.max_aad:
        raise InvalidLength(f"{spec.name}: associated data of {longest_aad} bytes is "
                            f"past the limit of {aead.max_aad} bytes")


def key_table(spec, key, keys, m: int, index=None):
    """(key table (k, key_len) uint8, key index (m,) int32) from ``key`` (one for every message)
    or ``keys`` (one per message; with ``index``: a table of distinct keys as a service's batch
    sends it, and each message's index into it)."""
    if index is not None:
        return _indexed_keys(spec, key, keys, index, m)
    if (key is None) == (keys is None):
        raise InvalidArgument("give key= (one key for every message) or keys= (one per message)")
    if key is not None:
        kb = buffers.bytes_like(key, "key")
        table, index = [kb], np.zeros(m, dtype=np.int32)
    else:
        if isinstance(keys, np.ndarray) and keys.ndim == 2:
            keys = [bytes(r) for r in keys]
        keys = list(keys)
        if len(keys) != m:
            raise InvalidArgument(f"keys= has {len(keys)} keys for {m} messages")
        seen: dict = {}
        index = np.empty(m, dtype=np.int32)
        for i, k in enumerate(keys):
            index[i] = seen.setdefault(buffers.bytes_like(k, "key"), len(seen))
        table = list(seen)
    klen = spec.key_len
    for k in table:
        spec.aead.check(spec.name, len(k), spec.aead.default_nonce_length,
                        spec.aead.default_tag_length)
    arr = np.frombuffer(b"".join(table), dtype=np.uint8).reshape(len(table), klen).copy()
    return arr, index


def _indexed_keys(spec, key, keys, index, m: int):
    """``key_table`` of a (k, key_len) table ``keys`` and the (m,) ``index`` into it: copies,
    every index within the table (the table wiped where one is not)."""
    if key is not None:
        raise InvalidArgument("a key index goes with a table of keys, not one key")
    table = np.array(keys, dtype=np.uint8)
    if table.ndim != 2:
        raise InvalidArgument("a key index goes with a (k, key length) table of keys")
    spec.aead.check(spec.name, table.shape[1], spec.aead.default_nonce_length,
                    spec.aead.default_tag_length)
    index = np.array(index, dtype=np.int32)
    if index.shape != (m,) or (m and (not table.shape[0] or int(index.min()) < 0
                                      or int(index.max()) >= table.shape[0])):
        table.fill(0)
        raise InvalidArgument("a batch's key index outside its key table")
    return table, index


def nonce_table(spec, nonces, m: int, tag_length: int, key_len: int) -> np.ndarray:
    if nonces is None:
        raise InvalidArgument(f"{spec.name} needs a nonce for every message (nonces=)")
    if isinstance(nonces, np.ndarray) and nonces.ndim == 2:
        arr = np.ascontiguousarray(nonces, dtype=np.uint8)
    else:
        if isinstance(nonces, (bytes, bytearray, memoryview)) or isinstance(nonces, np.ndarray):
            raise InvalidArgument("nonces= is a list of nonces, or an (m, nonce length) array")
        nonces = [buffers.bytes_like(n, "nonce") for n in nonces]
        if len(nonces) != m:
            raise InvalidArgument(f"nonces= has {len(nonces)} nonces for {m} messages")
        lens = {len(n) for n in nonces}
        if len(lens) > 1:
            raise InvalidArgument("every nonce of one batch has the same length")
        nl = lens.pop() if lens else spec.aead.default_nonce_length
        arr = np.frombuffer(b"".join(nonces), dtype=np.uint8).reshape(m, nl).copy()
    if arr.shape[0] != m:
        raise InvalidArgument(f"nonces= has {arr.shape[0]} nonces for {m} messages")
    spec.aead.check(spec.name, key_len, arr.shape[1], tag_length)
    return arr


_MIX, _MIX_SHIFT = np.uint64(0x9E3779B97F4A7C15), np.uint64(29)


def word_views(nonces: np.ndarray, size: int, order: str = "<") -> list:
    """Every byte of each row of the C-contiguous (m, n) uint8 ``nonces`` (n >= ``size``) in
    ``size``-byte words of byte order ``order``, one (m,) strided view per word, no copies:
    words from bytes 0, size, ... and a last one ending on byte n (overlapping the one before
    where ``size`` does not divide n)."""
    m, n = nonces.shape
    starts = list(range(0, n - size + 1, size)) + ([n - size] if n % size else [])
    return [np.ndarray((m,), f"{order}u{size}", nonces, s, (n,)) for s in starts]


def nonce_words(nonces: np.ndarray) -> list:
    """Every byte of each row of the (m, n) uint8 ``nonces`` in 64-bit words, one (m,) array
    per word: ``word_views`` where n >= 8, else a padded copy.  (The views copy nothing.)"""
    m, n = nonces.shape
    if n < 8 or not nonces.flags.c_contiguous:
        padded = np.zeros((m, -(-n // 8) * 8), dtype=np.uint8)
        padded[:, :n] = nonces
        return [padded.view("<u8")[:, j] for j in range(padded.shape[1] // 8)]
    return word_views(nonces, 8)


def pair_hash(index: np.ndarray, nonces: np.ndarray) -> np.ndarray:
    """A 64-bit mixing hash of each message's (key index, nonce): equal pairs, equal hashes."""
    acc = index.astype(np.uint64)
    acc *= _MIX
    acc ^= acc >> _MIX_SHIFT
    for word in nonce_words(nonces):
        acc ^= word
        acc *= _MIX
        acc ^= acc >> _MIX_SHIFT
    return acc


def counter_word(nonces: np.ndarray) -> bool:
    """Whether some aligned 32- or 64-bit word of the (m, n) uint8 ``nonces`` (C-contiguous),
    read little- or big-endian, rises strictly from row to row -- a counter, the usual way of
    making nonces (SP 800-38D 8.2.1: a fixed field and an invocation counter): then no two rows
    are equal, proved in one pass instead of a hash and a sort (docs/benchmarks.md 0o).  Each
    word is tried on its first rows before all of them, so
    random nonces cost almost nothing here."""
    m, n = nonces.shape
    if m < 2 or not nonces.flags.c_contiguous:
        return m < 2
    for size in (4, 8):
        for order in "<>" if n >= size else "":
            for w in word_views(nonces, size, order):
                head = w[:64]
                if (head[1:] > head[:-1]).all() and (w[1:] > w[:-1]).all():
                    return True
    return False


#: batches of this many messages or more check their (key, nonce) pairs beside the device work
REPEATS_BESIDE = 8192


class Beside:
    """``fn(*args)`` on the caller's runtime's thread beside the device work
    (runtime.Threads.beside), submitted by ``start()``: numpy's sort releases the
    interpreter lock, so a batch's repeated-nonce check overlaps the device work.  The engine
    calls ``start()`` once its device is busy (the engine protocol's ``beside``:
    engines.base.Engine.seal): a GPU's piece runner when its pieces in flight are full and it is
    about to wait, so that the check does not compete for the interpreter lock with the
    enqueueing of the first pieces (started with the call, it slows encryption:
    docs/benchmarks.md 0o); other engines at once.  ``failed()`` (starting it if nobody has)
    waits and says whether it raised; ``result()`` re-raises that error.  The caller zeroes the
    batch's output before raising: no ciphertext of a refused batch is returned."""

    def __init__(self, fn, *args):
        from .runtime import current

        self.fn, self.args = fn, args
        self.threads = current().threads   # (its thread is the caller's runtime's: Threads.beside)
        self.future = None

    def start(self) -> None:
        if self.future is None:
            self.future = self.threads.beside().submit(self.fn, *self.args)

    def failed(self) -> bool:
        self.start()
        return self.future.exception() is not None

    def result(self) -> None:
        self.start()
        self.future.result()


def refuse_repeats(spec, index: np.ndarray, nonces: np.ndarray) -> None:
    """Encryption: a (key, nonce) pair used twice in one batch is refused (it breaks the AEAD);
    not inside ``request.weak_use_allowed()`` (the known answers of selftest repeat pairs)."""
    from .request import policy_suspended

    m = nonces.shape[0]
    if m < 2 or policy_suspended() or counter_word(nonces):
        return
    # a 64-bit hash per pair, sorted (several times faster than sorting the pairs themselves or
    # hashing them as concatenated rows: docs/benchmarks.md 0o); the pairs are compared exactly
    # only when two hashes are equal
    hs = np.sort(pair_hash(index, nonces))
    if not (hs[1:] == hs[:-1]).any():
        return
    rows = np.concatenate([index.astype("<i4").view(np.uint8).reshape(m, 4), nonces], axis=1)
    view = rows.view(np.dtype((np.void, rows.shape[1]))).reshape(m)
    if np.unique(view).size != m:
        raise InvalidArgument(f"{spec.name}: a (key, nonce) pair repeats within the batch; every "
                              "message under one key needs its own nonce")


def aad_table(aad, m: int, offsets=None):
    """(concatenated AAD uint8, offsets (m + 1,)) from None, one bytes-like for all, or a list;
    with ``offsets``: ``aad`` is every message's AAD back to back (a service's batch), message
    i's ``aad[offsets[i]:offsets[i + 1]]``."""
    if offsets is not None:
        a = buffers.as_u8(aad)
        off = np.asarray(offsets, dtype=I64)
        if (off.shape != (m + 1,) or off[0] != 0 or off[-1] != a.nbytes
                or not bool((off[1:] >= off[:-1]).all())):
            raise InvalidArgument("a batch's AAD offsets must rise from 0 to its size")
        return a, off
    off = np.zeros(m + 1, dtype=I64)
    if aad is None:
        return np.zeros(0, dtype=np.uint8), off
    if isinstance(aad, (bytes, bytearray, memoryview)):
        a = buffers.bytes_like(aad, "aad")
        if not a:
            return np.zeros(0, dtype=np.uint8), off
        off[1:] = np.arange(1, m + 1, dtype=I64) * len(a)
        return np.frombuffer(a * m, dtype=np.uint8), off
    aad = [buffers.bytes_like(a, "aad") for a in aad]
    if len(aad) != m:
        raise InvalidArgument(f"aad= has {len(aad)} entries for {m} messages")
    off[1:] = np.cumsum([len(a) for a in aad])
    return np.frombuffer(b"".join(aad), dtype=np.uint8), off
