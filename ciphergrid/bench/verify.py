"""The correctness gate (SUPERCOP's rule: only code whose output is right is timed).

Before a row is timed, the device's output is compared with

* the oracle (``ciphergrid.testing.oracle``, the one the tests use): pyca/cryptography (OpenSSL) on
  random key, IV and data of the row's size (capped at ``cap`` bytes), or, for a cipher pyca lacks,
  the cipher's own ``reference_ecb`` composed with the mode (a smaller cap: it may be a Python
  model);
* the known-answer vectors of ``ciphergrid.vectors.load(name)`` when that module exists.

A mismatch raises :class:`VerificationFailed` (the row is marked failed, never timed); a cipher with
neither an oracle nor vectors raises :class:`Unverifiable` (the row is skipped, never timed).
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import Error
from ..testing import oracle

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


def random_key(spec) -> bytes:
    while True:
        key = os.urandom(spec.key_len)
        if spec.mode.key_count == 1 or key[: spec.key_size] != key[spec.key_size:]:
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


def _what(spec, impl: str | None) -> str:
    return f"{spec.name} [{impl}]" if impl else spec.name


class Gate:
    """Checks (and caches) that a cipher·device·direction produces right output."""

    def __init__(self, api, *, cap: int = ORACLE_CAP):
        self.api = api
        self.cap = cap
        self._kat: dict[tuple, tuple[int, str | None]] = {}
        self._done: dict[tuple, dict] = {}

    def _device_crypt(self, name, device, key, iv, data: bytes, encrypt: bool,
                      impl: str | None = None) -> bytes:
        fn = self.api.encrypt if encrypt else self.api.decrypt
        arr = np.frombuffer(data, dtype=np.uint8).copy()
        kw = {"implementation": impl} if impl else {}
        return _as_bytes(fn(arr, cipher=name, key=key, iv=iv, device=device, **kw))

    def _check_size(self, spec, size: int) -> int:
        n = min(size, self.cap)
        if spec.mode.whole_blocks or spec.mode.key_count == 2:  # (XTS: whole blocks here too)
            n = max(n - n % spec.block_size, spec.block_size)
        return n

    def oracle(self, spec, device: str, size: int, encrypt: bool,
               impl: str | None = None) -> tuple[str | None, int]:
        """Compare on random inputs; return (oracle name or None if there is none, bytes checked)."""
        n = self._check_size(spec, size)
        key, iv = random_key(spec), random_iv(spec)
        source = oracle.source(spec)
        if not source.startswith("pyca"):  # (it may be a Python model: fewer bytes)
            n = self._check_size(spec, min(size, REFERENCE_CAP))
        data = os.urandom(n)
        try:
            want = oracle.crypt(spec, key, iv, data, encrypt)
        except oracle.Unavailable:
            return None, 0
        got = self._device_crypt(spec.name, device, key, iv, data, encrypt, impl)
        if got != want:
            raise VerificationFailed(
                f"{_what(spec, impl)} {'encrypt' if encrypt else 'decrypt'} on {device}: output on {n} random "
                f"bytes differs from {source}: {_first_diff(got, want)}")
        return source, n

    def kats(self, spec, device: str, encrypt: bool, impl: str | None = None) -> tuple[int, str | None]:
        """Run the known-answer vectors; return (number run, note)."""
        k = (spec.name, device, encrypt, impl)
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
                                     src, encrypt, impl)
            if got != want:
                raise VerificationFailed(
                    f"{_what(spec, impl)} {'encrypt' if encrypt else 'decrypt'} on {device}: known answer "
                    f"#{ran} ({getattr(v, 'source', '?')}, {len(src)} bytes) wrong: "
                    f"{_first_diff(got, want)}")
            ran += 1
        self._kat[k] = (ran, None if ran else "no usable vectors")
        return self._kat[k]

    def check(self, spec, device: str, size: int, encrypt: bool, *, impl: str | None = None) -> dict:
        """Verify one row (of kernel implementation ``impl``; None: the default); returns the
        record's ``verification`` dict or raises."""
        k = (spec.name, device, size, encrypt, impl)
        if k not in self._done:
            try:
                kat_n, kat_note = self.kats(spec, device, encrypt, impl)
                oracle, n = self.oracle(spec, device, size, encrypt, impl)
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
