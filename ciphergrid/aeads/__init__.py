"""The AEADs (authenticated encryption with associated data): one module each, defining
``CIPHER`` (an ``base.AEAD``), with its kernels under ``kernels/`` and its vectors under
``vectors/``.  The registry (``ciphergrid.registry``) finds them with the block ciphers, through
one loader and one name table; the names below are its AEAD side: ``spec(name)`` the
``AEADSpec`` of a cipher name such as "aes-128-gcm", ``lookup(name)`` its declaration,
``names()`` every AEAD name.  See base.py for the batch every engine runs.
"""

from __future__ import annotations

from ..registry import AEADSpec, is_aead
from ..registry import aead_family as family
from ..registry import aead_names as names
from ..registry import aead_specs as specs
from ..registry import lookup_aead as spec

__all__ = ["AEADSpec", "family", "is_aead", "lookup", "names", "spec", "specs"]


def lookup(name: str):
    """The AEAD declaration of ``name`` (``UnsupportedCipher`` when there is none)."""
    return spec(name).aead
