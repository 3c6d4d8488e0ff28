"""The AEADs (authenticated encryption with associated data): one module each, defining
``CIPHER`` (an ``base.AEAD``), with its kernels under ``kernels/`` and its vectors under
``vectors/``.  ``lookup(name)`` finds the declaration of a cipher name such as "aes-128-gcm";
``names()`` lists them.  See base.py for the batch every engine runs.
"""

from __future__ import annotations

import threading

from dataclasses import dataclass

from ..errors import UnsupportedCipher

_BY_NAME: dict = {}
_loaded = False
_lock = threading.Lock()


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        from .. import aeads
        from ..registry import declarations

        for cipher in declarations(aeads):
            for n in cipher.names:
                _BY_NAME[n] = cipher
        _loaded = True


@dataclass(frozen=True)
class AEADSpec:
    """One AEAD cipher name: its declaration and what each engine does with it."""

    name: str          # "aes-128-gcm"
    aead: object       # the base.AEAD declaration

    @property
    def key_len(self) -> int:
        return self.aead.names[self.name]

    def capability(self, engine: str, encrypt: bool = True, count: int = 1,
                   nonce_len: int | None = None, tag_length: int | None = None) -> str | None:
        """How an engine of kind ``engine`` ("device", "openssl", or a registered kind; the
        capability table: registry.EngineKind) runs ``count`` messages: "parallel", "serial"
        (one message of a serial AEAD on a device: one work-item) or None; with the nonce and
        tag sizes, whether it runs those."""
        from ..registry import engine_kind

        return engine_kind(engine).capability(self, None, "encrypt" if encrypt else "decrypt",
                                              count=count, nonce_len=nonce_len,
                                              tag_length=tag_length)

    def capabilities(self) -> dict:
        """{"encrypt": {"device": ..., "openssl": ...}, "decrypt": {...}}: every kind's column."""
        from ..registry import table_kinds

        return {d: {k.name: k.capability(self, None, d) for k in table_kinds()}
                for d in ("encrypt", "decrypt")}


def spec(name: str) -> AEADSpec:
    """The AEADSpec of a cipher name (``UnsupportedCipher`` when it names no AEAD)."""
    return AEADSpec(name.strip().lower(), lookup(name))


def specs() -> list[AEADSpec]:
    return [spec(n) for n in names()]


def register(cipher) -> list[str]:
    """Register an AEAD declaration outside the package (tests); returns its names."""
    _load()
    for n in cipher.names:
        _BY_NAME[n] = cipher
    return list(cipher.names)


def unregister(names_) -> None:
    for n in names_:
        _BY_NAME.pop(n, None)


def names() -> list[str]:
    """Every AEAD cipher name, sorted."""
    _load()
    return sorted(_BY_NAME)


def is_aead(name: str) -> bool:
    _load()
    return isinstance(name, str) and name.strip().lower() in _BY_NAME


def lookup(name: str):
    """The AEAD declaration of ``name`` (``UnsupportedCipher`` when there is none)."""
    _load()
    try:
        return _BY_NAME[name.strip().lower()]
    except (KeyError, AttributeError):
        raise UnsupportedCipher(f"unknown AEAD {name!r}") from None


def family(name: str):
    """The AEAD declaration of a family ("aes-gcm")."""
    _load()
    for c in _BY_NAME.values():
        if c.family == name:
            return c
    raise UnsupportedCipher(f"unknown AEAD family {name!r}")
