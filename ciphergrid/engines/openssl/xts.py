"""XTS on the OpenSSL engine: one data unit (the whole message, tweak = the IV: OpenSSL's
semantics), data units of ``sector_size`` bytes with dm-crypt ``plain64`` tweaks spread over
threads, and XTS composed from the cipher's ECB (IEEE 1619, ciphertext stealing included) for a
registered XTS name OpenSSL has no EVP cipher for (XTS of another 128-bit block cipher, or a key
size OpenSSL's XTS lacks).
"""

from __future__ import annotations

from ...errors import InvalidLength
from . import contexts
from .libcrypto import LIB, MAX_UPDATE, c_loop
from .threads import STEP, check_cancel, run_all, split
from ..._lazy import numpy_for

np = numpy_for(__name__)

#: data processed per batch when XTS is composed from ECB (bounds the temporary mask memory)
ECB_BATCH = 4 << 20
#: without the C loop, sector-mode XTS uses threads only for units at least this large (below,
#: the per-unit ctypes calls make threads slower than one thread: docs/benchmarks.md, 'Figures
#: moved from code comments')
CTYPES_THREAD_MIN_UNIT = 32 << 10


def run(req, src: np.ndarray, dst: np.ndarray, threads: int, host=None) -> None:
    """An XTS request (checked for its lengths) over ``src`` into ``dst`` on ``threads`` threads
    (of ``host``'s pool: a runtime.Threads, None: this thread's runtime's)."""
    spec = req.spec
    if req.sector_size is not None:  # data units
        if not contexts.has_evp(spec.name):
            from_ecb(spec, req.key, None, src, dst, req.encrypt, threads, req.sector_size,
                     req.start_sector, host)
        else:
            sectors(spec.name, req.key, src, dst, req.encrypt, threads, req.sector_size,
                    req.start_sector, host)
    elif not contexts.has_evp(spec.name):  # one data unit
        from_ecb(spec, req.key, req.iv, src, dst, req.encrypt, threads, None, 0, host)
    else:
        n = src.size
        if n > MAX_UPDATE:
            raise InvalidLength(f"{spec.name}: a data unit of {n} bytes is too large")
        contexts.run_parts([(0, n)], lambda _: contexts.Ctx(spec.name, req.key, req.iv, req.encrypt),
                           lambda ctx, part, cancel: ctx.process(src, dst, *part, cancel), host)


def sector_tweaks(start_sector: int, count: int) -> np.ndarray:
    """(count, 16) uint8: tweak k = (start_sector + k) mod 2**128 as 16 little-endian bytes."""
    s = start_sector % (1 << 128)
    lo0, hi0 = s & ((1 << 64) - 1), s >> 64
    t = np.empty((count, 2), dtype="<u8")
    lo = np.arange(count, dtype=np.uint64)
    lo += np.uint64(lo0)  # wraps modulo 2**64
    t[:, 0] = lo
    t[:, 1] = np.uint64(hi0)
    t[:, 1] += (lo < np.uint64(lo0)).astype(np.uint64)
    return t.view(np.uint8).reshape(count, 16)


def sectors(evp_name, key, src, dst, encrypt, threads, unit, start_sector, host=None) -> None:
    """Data units of ``unit`` bytes (the last may be shorter), unit k with the tweak
    ``start_sector + k``, through the EVP cipher: whole units per thread."""
    n = src.size
    count = -(-n // unit)
    tweaks = sector_tweaks(start_sector, count)
    if LIB is not None and c_loop() is None and unit < CTYPES_THREAD_MIN_UNIT:
        threads = 1  # two ctypes calls per small unit: threads would only convoy on the GIL
    step = max(unit, STEP // unit * unit)  # whole units per look at the flag

    def work(ctx, part, cancel):
        off, length = part
        for a in range(off, off + length, step):
            check_cancel(cancel)
            ctx.xts_units(tweaks, a // unit, src, dst, a, min(step, off + length - a), unit)

    contexts.run_parts(split(n, unit, threads), lambda _: contexts.Ctx(evp_name, key, None, encrypt),
                       work, host)


# --- XTS composed from ECB, for registered XTS names OpenSSL has no EVP cipher for ------------



def _ecb(evp_name: str, key: bytes, src: np.ndarray, dst: np.ndarray, encrypt: bool) -> None:
    """ECB of whole blocks src -> dst (flat uint8, same size; dst may be src), in this thread."""
    contexts.run_parts([(0, src.size)], lambda _: contexts.Ctx(evp_name, key, None, encrypt),
                       contexts.update_final(src, dst))


def _encrypted_tweaks(ecb: str, k2: bytes, raw: np.ndarray) -> np.ndarray:
    """(N, 2) little-endian uint64: E_k2 of the N raw 16-byte tweaks ``raw`` (N, 16)."""
    t = np.empty((raw.shape[0], 2), dtype="<u8")
    _ecb(ecb, k2, np.ascontiguousarray(raw).reshape(-1), t.reshape(-1).view(np.uint8), True)
    return t


def _mul_alpha64(lo: np.ndarray, hi: np.ndarray):
    """(lo, hi) * alpha^64 in GF(2^128) mod x^128 + x^7 + x^2 + x + 1 (IEEE 1619 order)."""
    o = hi
    r_lo = o ^ (o << np.uint64(1)) ^ (o << np.uint64(2)) ^ (o << np.uint64(7))
    r_hi = (o >> np.uint64(63)) ^ (o >> np.uint64(62)) ^ (o >> np.uint64(57))
    return r_lo, lo ^ r_hi


def masks(t0: np.ndarray, nblocks: int) -> np.ndarray:
    """(N, nblocks, 2) uint64 masks T*alpha^j (j < nblocks) for encrypted tweaks t0 (N, 2).

    T*alpha^j for 0 < j < 64 is (T << j) xor (o * 0x87) with o = the j bits shifted out; all j of
    a group of 64 are computed at once by broadcasting, then the base moves on by alpha^64.
    """
    n = t0.shape[0]
    m = np.empty((n, nblocks, 2), dtype="<u8")
    lo = np.ascontiguousarray(t0[:, 0])
    hi = np.ascontiguousarray(t0[:, 1])
    for g0 in range(0, nblocks, 64):
        cnt = min(64, nblocks - g0)
        m[:, g0, 0] = lo
        m[:, g0, 1] = hi
        if cnt > 1:
            j = np.arange(1, cnt, dtype=np.uint64)[None, :]
            rj = np.uint64(64) - j
            L, H = lo[:, None], hi[:, None]
            o = H >> rj
            nlo = L << j
            nlo ^= o
            nlo ^= o << np.uint64(1)
            nlo ^= o << np.uint64(2)
            nlo ^= o << np.uint64(7)
            nhi = H << j
            nhi |= L >> rj
            nhi ^= o >> np.uint64(63)
            nhi ^= o >> np.uint64(62)
            nhi ^= o >> np.uint64(57)
            m[:, g0 + 1: g0 + cnt, 0] = nlo
            m[:, g0 + 1: g0 + cnt, 1] = nhi
        if g0 + 64 < nblocks:
            lo, hi = _mul_alpha64(lo, hi)
    return m


def from_ecb(spec, key, iv, src, dst, encrypt, threads, sector_size, start_sector,
             host=None) -> None:
    """XTS composed from the cipher's ECB mode: C = E_k1(P ^ T*alpha^j) ^ T*alpha^j with
    T = E_k2(tweak); whole units in batches (masks, ECB, masks), spread over threads."""
    ecb = spec.name[: -len("xts")] + "ecb"
    k1, k2 = key[: spec.key_size], key[spec.key_size:]
    n = src.size
    unit = sector_size if sector_size is not None else n
    count = -(-n // unit)
    if sector_size is None:
        raw_tweaks = np.frombuffer(iv, dtype=np.uint8).reshape(1, 16)
    else:
        raw_tweaks = sector_tweaks(start_sector, count)
    # units made of whole blocks go through the batched path; a unit with a partial last block
    # (the last one, or the single unit without sector_size) is done with ciphertext stealing
    full_units = n // unit if unit % 16 == 0 else 0
    per_batch = max(1, ECB_BATCH // unit)

    def run(u_start: int, u_end: int, cancel=None) -> None:
        for u0 in range(u_start, u_end, per_batch):
            check_cancel(cancel)
            u1 = min(u_end, u0 + per_batch)
            t = _encrypted_tweaks(ecb, k2, raw_tweaks[u0:u1])
            msk = masks(t, unit // 16).reshape(-1)
            seg = slice(u0 * unit, u1 * unit)
            tmp = np.bitwise_xor(src[seg].view("<u8"), msk)
            tmp8 = tmp.view(np.uint8)
            _ecb(ecb, k1, tmp8, tmp8, encrypt)
            np.bitwise_xor(tmp, msk, out=dst[seg].view("<u8"))

    if full_units:
        parts = split(full_units * unit, unit, threads)
        run_all([(lambda cancel, a=off // unit, b=(off + length) // unit: run(a, b, cancel))
                 for off, length in parts], host)
    for u in range(full_units, count):
        off = u * unit
        m = min(unit, n - off)
        _unit_steal(ecb, k1, k2, raw_tweaks[u: u + 1], src[off: off + m], dst[off: off + m],
                    encrypt)


def _unit_steal(ecb, k1, k2, raw_tweak, src, dst, encrypt) -> None:
    """One data unit whose last block is partial (ciphertext stealing); ``raw_tweak`` (1, 16)."""
    m = src.size
    nb, r = divmod(m, 16)
    t = _encrypted_tweaks(ecb, k2, raw_tweak)
    msks = masks(t, nb + 1).reshape(-1).view(np.uint8)  # nb + 1 masks (16 bytes each)

    def blocks(data: np.ndarray, msk: np.ndarray) -> np.ndarray:
        tmp = np.bitwise_xor(data, msk)
        _ecb(ecb, k1, tmp, tmp, encrypt)
        np.bitwise_xor(tmp, msk, out=tmp)
        return tmp

    head = nb if r == 0 else nb - 1  # blocks processed normally
    if head:
        dst[: 16 * head] = blocks(src[: 16 * head], msks[: 16 * head])
    if r == 0:
        return
    last = src[16 * head: 16 * head + 16]       # the last whole block
    tail = src[16 * nb:]                        # the r-byte partial block
    m_last, m_tail = msks[16 * head: 16 * nb], msks[16 * nb: 16 * nb + 16]
    if encrypt:
        cc = blocks(last, m_last)
        pp = np.concatenate([tail, cc[r:]])
        dst[16 * head: 16 * nb] = blocks(pp, m_tail)
        dst[16 * nb:] = cc[:r]
    else:
        pp = blocks(last, m_tail)
        cc = np.concatenate([tail, pp[r:]])
        dst[16 * head: 16 * nb] = blocks(cc, m_last)
        dst[16 * nb:] = pp[:r]
