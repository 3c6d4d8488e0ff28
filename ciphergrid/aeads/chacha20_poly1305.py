"""ChaCha20-Poly1305 (RFC 8439), the declaration.

Its device implementation is ``engines/device_aead/chacha20_poly1305.py`` (``ChaChaDriver``)
over kernels/chacha20_poly1305.cl; OpenSSL has it (the openssl engine).
"""

from __future__ import annotations

from .base import AEAD, Kernel


class ChaCha20Poly1305(AEAD):
    family = "chacha20-poly1305"
    names = {"chacha20-poly1305": 32}
    nonce_lengths = (12,)
    default_nonce_length = 12
    tag_lengths = (16,)
    default_tag_length = 16
    #: the 32-bit block counter: 2^32 - 1 blocks of 64 bytes (RFC 8439 §2.8)
    max_message = (1 << 38) - 64
    #: the AAD length is a 64-bit field (le64 in the Poly1305 input)
    max_aad = (1 << 64) - 1
    parallel_message = True
    implementations = {"fast": Kernel("chacha20_poly1305.ChaChaDriver", constant_time=True)}
    openssl = {"chacha20-poly1305": "ChaCha20Poly1305"}


CIPHER = ChaCha20Poly1305()
