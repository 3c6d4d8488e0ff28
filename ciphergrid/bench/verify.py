"""The correctness gate (SUPERCOP's rule: only code whose output is right is timed).

Before a row is timed, the device's output is compared with

* the oracle: pyca/cryptography (OpenSSL) on random key, IV and data of the row's size (capped at
  ``cap`` bytes), or, for a cipher pyca lacks, the cipher's own ``reference_ecb`` composed with the
  mode here (ECB, CBC, CTR; smaller cap, it may be a Python model);
* the known-answer vectors of ``ciphergrid.vectors.load(name)`` when that module exists.

A mismatch raises :class:`VerificationFailed` (the row is marked failed, never timed); a cipher with
neither an oracle nor vectors raises :class:`Unverifiable` (the row is skipped, never timed).
"""

from __future__ import annotations

import os
from importlib import metadata

import numpy as np

from ..errors import Error

#: largest input checked against the oracle per row
ORACLE_CAP = 1 << 20
#: cap when the oracle is the cipher's own (possibly Python) reference_ecb
REFERENCE_CAP = 16 << 10
#: KAT vectors run per cipher·device·direction (each one is a device call)
MAX_KATS = 32


class VerificationFailed(Error):
    """The device's output differs from the oracle or a known answer."""


class Unverifiable(Error):
    """Neither an oracle nor known-answer vectors exist for this cipher·mode."""


def _pyca_version() -> str:
    try:
        return metadata.version("cryptography")
    except metadata.PackageNotFoundError:
        return "?"


def _pyca_algorithm(algorithm: str, key: bytes):
    from cryptography.hazmat.primitives.ciphers import algorithms

    try:
        from cryptography.hazmat.decrepit.ciphers import algorithms as decrepit
    except ImportError:
        decrepit = None
    cls_name = {"aes": "AES", "camellia": "Camellia", "sm4": "SM4", "cast5": "CAST5",
                "seed": "SEED", "des-ede3": "TripleDES", "3des": "TripleDES",
                "blowfish": "Blowfish", "idea": "IDEA"}.get(algorithm)
    if cls_name is None:
        return None
    for mod in (algorithms, decrepit):
        cls = getattr(mod, cls_name, None) if mod is not None else None
        if cls is not None:
            return cls(key)
    return None


def pyca_crypt(spec, key: bytes, iv: bytes | None, data: bytes, encrypt: bool) -> bytes | None:
    """The oracle's output, or None when pyca/cryptography has no such cipher·mode."""
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    mode_cls = {"ecb": modes.ECB, "cbc": modes.CBC, "ctr": modes.CTR, "xts": modes.XTS}.get(spec.mode)
    if mode_cls is None:
        return None
    try:
        algo = _pyca_algorithm(spec.cipher.name, key)
        if algo is None:
            return None
        c = Cipher(algo, mode_cls() if spec.mode == "ecb" else mode_cls(iv))
    except (ValueError, TypeError):  # e.g. XTS for a cipher pyca only has in ECB
        return None
    ctx = c.encryptor() if encrypt else c.decryptor()
    return ctx.update(data) + ctx.finalize()


def reference_crypt(spec, key: bytes, iv: bytes | None, data: bytes, encrypt: bool) -> bytes | None:
    """ECB/CBC/CTR composed here over spec.cipher.reference_ecb (None if that is missing)."""
    bs = spec.block_size
    ecb = spec.cipher.reference_ecb
    try:
        if spec.mode == "ecb":
            return ecb(key, data, encrypt)
        if spec.mode == "ctr":
            n = -(-len(data) // bs)
            c0 = int.from_bytes(iv, "big")
            ctrs = b"".join(((c0 + i) % (1 << (8 * bs))).to_bytes(bs, "big") for i in range(n))
            ks = np.frombuffer(ecb(key, ctrs, True), np.uint8)[: len(data)]
            return (ks ^ np.frombuffer(data, np.uint8)).tobytes()
        if spec.mode == "cbc":
            d = np.frombuffer(data, np.uint8).reshape(-1, bs)
            if not encrypt:
                prev = np.vstack([np.frombuffer(iv, np.uint8)[None, :], d[:-1]])
                return (np.frombuffer(ecb(key, data, False), np.uint8).reshape(-1, bs) ^ prev).tobytes()
            out, prev = [], np.frombuffer(iv, np.uint8)
            for blk in d:
                prev = np.frombuffer(ecb(key, (blk ^ prev).tobytes(), True), np.uint8)
                out.append(prev.tobytes())
            return b"".join(out)
    except NotImplementedError:
        return None
    return None


def random_key(spec) -> bytes:
    while True:
        key = os.urandom(spec.key_len)
        if spec.mode != "xts" or key[: spec.key_size] != key[spec.key_size:]:
            return key


def random_iv(spec) -> bytes | None:
    return os.urandom(spec.iv_len) if spec.iv_len else None


def _as_bytes(v) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return bytes.fromhex(v)
    if isinstance(v, np.ndarray):
        return v.astype(np.uint8, copy=False).tobytes()
    return bytes(v)


def _first_diff(a: bytes, b: bytes) -> str:
    if len(a) != len(b):
        return f"length {len(a)} instead of {len(b)}"
    x = np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)
    idx = np.flatnonzero(x)
    return f"{idx.size} of {len(a)} bytes differ, first at byte {int(idx[0])}"


class Gate:
    """Checks (and caches) that a cipher·device·direction produces right output."""

    def __init__(self, api, *, cap: int = ORACLE_CAP):
        self.api = api
        self.cap = cap
        self._kat: dict[tuple, tuple[int, str | None]] = {}
        self._done: dict[tuple, dict] = {}

    def _device_crypt(self, name, device, key, iv, data: bytes, encrypt: bool) -> bytes:
        fn = self.api.encrypt if encrypt else self.api.decrypt
        arr = np.frombuffer(data, dtype=np.uint8).copy()
        return _as_bytes(fn(arr, cipher=name, key=key, iv=iv, device=device))

    def _check_size(self, spec, size: int) -> int:
        n = min(size, self.cap)
        if spec.needs_whole_blocks or spec.mode == "xts":
            n = max(n - n % spec.block_size, spec.block_size)
        return n

    def oracle(self, spec, device: str, size: int, encrypt: bool) -> tuple[str | None, int]:
        """Compare on random inputs; return (oracle name or None if there is none, bytes checked)."""
        n = self._check_size(spec, size)
        key, iv = random_key(spec), random_iv(spec)
        data = os.urandom(n)
        want = pyca_crypt(spec, key, iv, data, encrypt)
        oracle = f"pyca/cryptography {_pyca_version()}"
        if want is None:
            n = self._check_size(spec, min(size, REFERENCE_CAP))
            data = data[:n]
            want = reference_crypt(spec, key, iv, data, encrypt)
            oracle = f"{spec.cipher.name} reference_ecb + {spec.mode} composed in bench.verify"
        if want is None:
            return None, 0
        got = self._device_crypt(spec.name, device, key, iv, data, encrypt)
        if got != want:
            raise VerificationFailed(
                f"{spec.name} {'encrypt' if encrypt else 'decrypt'} on {device}: output on {n} random "
                f"bytes differs from {oracle}: {_first_diff(got, want)}")
        return oracle, n

    def kats(self, spec, device: str, encrypt: bool) -> tuple[int, str | None]:
        """Run the known-answer vectors; return (number run, note)."""
        k = (spec.name, device, encrypt)
        if k in self._kat:
            return self._kat[k]
        try:
            vectors = self.api.load_vectors(spec.name)
        except ImportError:
            self._kat[k] = (0, "ciphergrid.vectors not available")
            return self._kat[k]
        except Error as e:
            self._kat[k] = (0, f"no vectors: {e}")
            return self._kat[k]
        ran = 0
        for v in vectors or []:
            if ran >= MAX_KATS:
                break
            ok = getattr(v, "encrypt_ok" if encrypt else "decrypt_ok", True)
            if not ok or getattr(v, "sector_size", None):
                continue  # negative vectors and data-unit (sector) XTS vectors: not for the gate
            pt, ct = _as_bytes(v.plaintext), _as_bytes(v.ciphertext)
            if not pt:
                continue
            src, want = (pt, ct) if encrypt else (ct, pt)
            got = self._device_crypt(spec.name, device, _as_bytes(v.key), _as_bytes(v.iv) or None,
                                     src, encrypt)
            if got != want:
                raise VerificationFailed(
                    f"{spec.name} {'encrypt' if encrypt else 'decrypt'} on {device}: known answer "
                    f"#{ran} ({getattr(v, 'source', '?')}, {len(src)} bytes) wrong: "
                    f"{_first_diff(got, want)}")
            ran += 1
        self._kat[k] = (ran, None if ran else "no usable vectors")
        return self._kat[k]

    def check(self, spec, device: str, size: int, encrypt: bool) -> dict:
        """Verify one row; returns the record's ``verification`` dict or raises."""
        k = (spec.name, device, size, encrypt)
        if k not in self._done:
            try:
                kat_n, kat_note = self.kats(spec, device, encrypt)
                oracle, n = self.oracle(spec, device, size, encrypt)
                if oracle is None and kat_n == 0:
                    raise Unverifiable(f"{spec.name}: no oracle and no known-answer vectors "
                                       f"({kat_note}); not timed")
            except Error as e:  # cached: the kernel and e2e rows of one size share the verdict
                self._done[k] = e
            else:
                self._done[k] = {"status": "passed", "oracle": oracle, "oracle_bytes": n,
                                 "kat_vectors": kat_n, "detail": kat_note}
        v = self._done[k]
        if isinstance(v, Exception):
            raise v
        return dict(v)
