"""Ascon-AEAD128 (NIST SP 800-232, August 2025), the declaration.

One message is a sponge, serial from its first block to its tag, so one work-item computes one
message and the speed comes from batches (``parallel_message = False``).  Its device
implementation is ``engines/device_aead/ascon.py`` (``AsconDriver``) over kernels/ascon.cl;
OpenSSL has no Ascon.
"""

from __future__ import annotations

from .base import AEAD, Kernel


class AsconAEAD128(AEAD):
    family = "ascon-aead128"
    names = {"ascon-aead128": 16}
    nonce_lengths = (16,)
    default_nonce_length = 16
    tag_lengths = (16,)
    default_tag_length = 16
    #: 2^54 bytes: the data limit under one key that the task names for SP 800-232
    max_message = 1 << 54
    max_aad = 1 << 54
    parallel_message = False
    implementations = {
        "fast": Kernel("ascon.AsconDriver", constant_time=True,
                       options={"wg": 64, "tile": 128, "stage": None, "ahead": None}),
    }
    openssl: dict = {}


CIPHER = AsconAEAD128()
