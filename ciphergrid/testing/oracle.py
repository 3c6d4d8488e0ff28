"""The one reference that ciphergrid's output is checked against: by the test suite, by
``ciphergrid selftest``'s vectors check, and by the benchmark's correctness gate.

* pyca/cryptography (OpenSSL) wherever it has the algorithm and the mode (XTS in data units: one
  pyca call per unit);
* else the algorithm's own ``reference_ecb`` (OpenSSL's ECB, or a plain-Python model of the
  cipher written from its specification) composed here with the mode, written independently of
  ``ciphergrid.modes``: ECB, CBC, CTR (big-endian counter over the whole block), XTS (IEEE 1619,
  ciphertext stealing, data units).

``crypt(name, key, iv, data, encrypt, padding=..., sector_size=..., start_sector=...)`` takes the
arguments of ``ciphergrid.encrypt``; ``source(name)`` says which reference answers for a name.
"""

from __future__ import annotations

from importlib import metadata

from ..errors import Error


class Unavailable(Error):
    """No reference exists for this cipher·mode (neither pyca nor the algorithm's own ECB)."""


def _spec(name_or_spec):
    if isinstance(name_or_spec, str):
        from ..registry import lookup

        return lookup(name_or_spec)
    return name_or_spec


def pyca_version() -> str:
    try:
        return metadata.version("cryptography")
    except metadata.PackageNotFoundError:
        return "?"


_PYCA_NAMES = {"aes": "AES", "camellia": "Camellia", "sm4": "SM4", "cast5": "CAST5",
               "seed": "SEED", "des": "TripleDES", "des-ede3": "TripleDES", "des-ede": "TripleDES",
               "blowfish": "Blowfish", "idea": "IDEA"}


def _pyca_algorithm(algorithm: str, key: bytes):
    from cryptography.hazmat.primitives.ciphers import algorithms

    try:
        from cryptography.hazmat.decrepit.ciphers import algorithms as decrepit
    except ImportError:
        decrepit = None
    cls_name = _PYCA_NAMES.get(algorithm)
    if cls_name is None:
        return None
    for mod in (decrepit, algorithms):  # decrepit first: no deprecation warning
        cls = getattr(mod, cls_name, None) if mod is not None else None
        if cls is not None:
            return cls(key)
    return None


def _pyca_one(spec, key: bytes, iv: bytes | None, data: bytes, encrypt: bool) -> bytes | None:
    """One pyca call (one XTS data unit), or None when pyca lacks the cipher·mode."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    mode_cls = {"ecb": modes.ECB, "cbc": modes.CBC, "ctr": modes.CTR, "xts": modes.XTS}.get(spec.mode.name)
    if mode_cls is None:
        return None
    try:
        algo = _pyca_algorithm(spec.algorithm.name, key)
        if algo is None:
            return None
        c = Cipher(algo, mode_cls() if spec.mode.name == "ecb" else mode_cls(iv))
        ctx = c.encryptor() if encrypt else c.decryptor()
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # e.g. XTS of a cipher pyca has in ECB only; CTR of a 64-bit cipher (CAST5) and
        # Camellia-XTS pass the constructor and are refused at encryptor()
        return None
    return ctx.update(data) + ctx.finalize()


# ---- the modes over a block cipher's ECB, written here from the standards -----------------------

def _xor(a: bytes, b: bytes) -> bytes:
    n = min(len(a), len(b))  # (as zip: the shorter length; as integers: fast for MiB)
    return (int.from_bytes(a[:n], "little") ^ int.from_bytes(b[:n], "little")).to_bytes(n, "little")


def _ctr(ecb, key, iv, data, bs):
    n = -(-len(data) // bs)
    c0 = int.from_bytes(iv, "big")
    ctrs = b"".join(((c0 + i) % (1 << (8 * bs))).to_bytes(bs, "big") for i in range(n))
    return _xor(data, ecb(key, ctrs, True)[: len(data)])


def _cbc(ecb, key, iv, data, bs, encrypt):
    out, prev = [], iv
    for i in range(0, len(data), bs):
        blk = data[i: i + bs]
        if encrypt:
            prev = ecb(key, _xor(blk, prev), True)
            out.append(prev)
        else:
            out.append(_xor(ecb(key, blk, False), prev))
            prev = blk
    return b"".join(out)


def _times_x(t: bytes) -> bytes:
    """t * x in GF(2^128), IEEE 1619 byte order (little-endian), x^128 = x^7 + x^2 + x + 1."""
    v = int.from_bytes(t, "little") << 1
    if v >> 128:
        v = (v ^ 0x87) & ((1 << 128) - 1)
    return v.to_bytes(16, "little")


def _xts_unit(ecb, k1, k2, tweak: bytes, data: bytes, encrypt: bool) -> bytes:
    t = ecb(k2, tweak, True)
    m, r = divmod(len(data), 16)
    full = m if r == 0 else m - 1
    # the tweaks T * x^j of blocks 0 .. full - 1, then every full block in one ECB call
    tweaks, v = [], int.from_bytes(t, "little")
    for _ in range(full):
        tweaks.append(v.to_bytes(16, "little"))
        v <<= 1
        if v >> 128:
            v ^= (1 << 128) | 0x87
    t = v.to_bytes(16, "little")
    masks = b"".join(tweaks)
    out = [_xor(ecb(k1, _xor(data[: 16 * full], masks), encrypt), masks)] if full else []
    if r:  # ciphertext stealing (IEEE 1619-2018 5.3.2 / 5.4.2)
        last, tail = data[16 * full: 16 * full + 16], data[16 * m:]
        t_next = _times_x(t)
        t_a, t_b = (t, t_next) if encrypt else (t_next, t)
        cc = _xor(ecb(k1, _xor(last, t_a), encrypt), t_a)
        pp = tail + cc[r:]
        out.append(_xor(ecb(k1, _xor(pp, t_b), encrypt), t_b))
        out.append(cc[:r])
    return b"".join(out)


def _composed(spec, key, iv, data, encrypt, sector_size, start_sector) -> bytes:
    ecb, bs, mode = spec.algorithm.reference_ecb, spec.block_size, spec.mode.name
    if mode == "ecb":
        return ecb(key, data, encrypt)
    if mode == "ctr":
        return _ctr(ecb, key, iv, data, bs)
    if mode == "cbc":
        return _cbc(ecb, key, iv, data, bs, encrypt)
    if mode == "xts":
        ks = spec.key_size
        return b"".join(_xts_unit(ecb, key[:ks], key[ks:], tw, data[a:b], encrypt)
                        for tw, a, b in _units(iv, len(data), sector_size, start_sector))
    raise Unavailable(f"no reference composition for {mode}")


def _units(iv, n, sector_size, start_sector):
    """(tweak, start, end) of each XTS data unit."""
    if sector_size is None:
        return [(iv, 0, n)]
    return [((((start_sector or 0) + u) % (1 << 128)).to_bytes(16, "little"), off,
             min(n, off + sector_size))
            for u, off in enumerate(range(0, n, sector_size))]


# ---- the reference --------------------------------------------------------------------------------

def _pad(data: bytes, bs: int) -> bytes:
    k = bs - len(data) % bs
    return data + bytes([k]) * k


def _unpad(data: bytes, bs: int) -> bytes:
    k = data[-1] if data else 0
    if not data or len(data) % bs or not 1 <= k <= bs or data[-k:] != bytes([k]) * k:
        raise ValueError("bad padding")
    return data[:-k]


def source(name_or_spec) -> str:
    """Which reference answers for this cipher·mode."""
    spec = _spec(name_or_spec)
    if _pyca_one(spec, bytes(spec.key_size) + (bytes(range(1, spec.key_size + 1))
                                                 if spec.mode.key_count == 2 else b""),
                 bytes(spec.iv_len) if spec.iv_len else None, bytes(spec.block_size), True) is not None:
        return f"pyca/cryptography {pyca_version()}"
    return f"{spec.algorithm.name} reference_ecb + {spec.mode.name} composed in ciphergrid.testing.oracle"


def crypt(name_or_spec, key: bytes, iv: bytes | None, data, encrypt: bool, *,
          padding: str | None = None, sector_size: int | None = None,
          start_sector: int | None = None) -> bytes:
    """The reference output for ``ciphergrid.encrypt``/``decrypt`` with the same arguments."""
    spec = _spec(name_or_spec)
    key, data = bytes(key), bytes(data)
    iv = None if iv is None else bytes(iv)
    bs = spec.block_size
    if padding is not None and padding != "pkcs7":
        raise ValueError(f"unknown padding {padding!r}")
    if padding and encrypt:
        data = _pad(data, bs)
    if spec.mode.name == "xts" and sector_size is not None:
        parts = []
        for tw, a, b in _units(iv, len(data), sector_size, start_sector):
            got = _pyca_one(spec, key, tw, data[a:b], encrypt)
            parts.append(got if got is not None else
                         _composed(spec, key, tw, data[a:b], encrypt, None, None))
        out = b"".join(parts)
    else:
        out = _pyca_one(spec, key, iv, data, encrypt)
        if out is None:
            try:
                out = _composed(spec, key, iv, data, encrypt, None, None)
            except NotImplementedError:
                raise Unavailable(f"no reference for {spec.name}: pyca lacks it and "
                                  f"{spec.algorithm.name} has no reference_ecb") from None
    if padding and not encrypt:
        out = _unpad(out, bs)
    return out


def encrypt(data, name, key, iv=None, **kw) -> bytes:
    return crypt(name, key, iv, data, True, **kw)


def decrypt(data, name, key, iv=None, **kw) -> bytes:
    return crypt(name, key, iv, data, False, **kw)


def random_inputs(name_or_spec, randbytes, sector_size: int | None = None):
    """(key, iv, options) of random values for a cipher·mode, as the tests and benchmarks use
    them: XTS's two key halves distinct (encryption refuses equal ones); with ``sector_size``,
    XTS in data units of that size (no IV); ``randbytes(n)``: the random source."""
    spec = _spec(name_or_spec)
    key = bytes(randbytes(spec.key_len))
    if spec.mode.key_count == 2:
        key = key[: spec.key_size] + bytes(b ^ 0x5A for b in key[: spec.key_size])
    opts = {"sector_size": sector_size} if sector_size and "sector_size" in spec.mode.options else {}
    iv = bytes(randbytes(spec.iv_len)) if spec.iv_len and not opts else None
    return key, iv, opts
