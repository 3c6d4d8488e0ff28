"""Modes of operation as objects (see base.Mode): ``modes.ECB``, ``CBC``, ``CTR``, ``XTS``."""

from __future__ import annotations

from . import gf128, padding
from .base import Mode
from .cbc import CBC
from .ctr import CTR, ctr_at
from .ecb import ECB
from .xts import XTS, XtsLayout

#: every mode, in the order names are listed
MODES: tuple[Mode, ...] = (ECB, CBC, CTR, XTS)


def by_name(name: str) -> Mode:
    for m in MODES:
        if m.name == name:
            return m
    raise KeyError(name)


__all__ = ["Mode", "ECB", "CBC", "CTR", "XTS", "MODES", "by_name", "ctr_at", "XtsLayout",
           "gf128", "padding"]
