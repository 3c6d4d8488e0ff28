"""The AEADs (authenticated encryption with associated data): one module each, defining
``CIPHER`` (an ``base.AEAD``), with its kernels under ``kernels/`` and its vectors under
``vectors/``.  ``lookup(name)`` finds the declaration of a cipher name such as "aes-128-gcm";
``names()`` lists them.  See base.py for the batch every engine runs.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

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
        for info in pkgutil.iter_modules(__path__):
            if info.name == "base":
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            cipher = getattr(mod, "CIPHER", None)
            if cipher is not None:
                for n in cipher.names:
                    _BY_NAME[n] = cipher
        _loaded = True


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
