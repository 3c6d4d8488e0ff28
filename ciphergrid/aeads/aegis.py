"""AEGIS-128L (draft-irtf-cfrg-aegis-aead-18), the declaration: a 16-byte key, a 16-byte nonce,
128- or 256-bit tags (two finalizations, not one tag truncated), 32-byte blocks, a 1024-bit state
of 8 AES blocks.

AEGIS is serial within a message, so the device kernel runs one message per work-item and gets
its speed from batches; its device implementation is ``engines/device_aead/aegis.py``
(``AegisDriver``) over kernels/aegis128l.cl.  OpenSSL has no AEGIS: there is no ``openssl``
engine entry.
"""

from __future__ import annotations

from .base import AEAD, Kernel


class AEGIS128L(AEAD):
    family = "aegis-128l"
    names = {"aegis-128l": 16}
    nonce_lengths = (16,)
    default_nonce_length = 16
    tag_lengths = (16, 32)
    default_tag_length = 16
    # the draft: P_MAX = A_MAX = 2^61 bytes, lengths MUST be less
    max_message = (1 << 61) - 1
    max_aad = (1 << 61) - 1
    parallel_message = False
    implementations = {"fast": Kernel("aegis.AegisDriver", constant_time=False)}
    openssl: dict = {}


CIPHER = AEGIS128L()
