"""AES-GCM (NIST SP 800-38D): AES-128/192/256 in Galois/Counter Mode, the declaration.

Its device implementations are ``engines/device_aead/gcm.py`` (``GCMDriver``) over
kernels/gcm.cl, compiled after the AES block functions: "fast" (kernels/aes.cl: T-tables, GHASH
with tables of H-multiples in work-group memory) and "ct" (kernels/aes_bs.cl: bitsliced AES and a
GHASH multiply without any table indexed by data); OpenSSL has it (the openssl engine).
"""

from __future__ import annotations

from .base import AEAD, Kernel


class AESGCM(AEAD):
    family = "aes-gcm"
    names = {"aes-128-gcm": 16, "aes-192-gcm": 24, "aes-256-gcm": 32}
    #: SP 800-38D takes any IV of 1 to 2^61 - 1 bytes; the kernels take up to 2^24 - 1
    nonce_lengths = range(1, 1 << 24)
    default_nonce_length = 12
    tag_lengths = range(12, 17)
    default_tag_length = 16
    max_message = (1 << 36) - 32          # 2^32 - 2 blocks (SP 800-38D 5.2.1.1)
    max_aad = (1 << 61) - 1               # len(A) <= 2^64 - 1 bits
    #: one message host -> host goes to a GPU from this size: below it OpenSSL's AES-NI/PCLMUL GCM
    #: on one core is faster (the GPU's fixed cost per call; docs/benchmarks.md 0l)
    gpu_one_message_min = 16 << 20
    parallel_message = True
    implementations = {
        # positional GHASH tables, the one-key counter pass in text-block space from registers,
        # grouped loads, GHASH tiles with their spare blocks first and tile factors precomputed
        # (measured: docs/benchmarks.md 0f)
        "fast": Kernel("gcm.GCMDriver", options={"gh": 3, "ctr": 3, "pf": 1, "mad": 1, "hd": 2,
                                                 "tf": 1}),
        "ct": Kernel("gcm.GCMDriver", constant_time=True,
                     options={"ct": True, "gh": 1, "grp": 6, "roll": 1, "ctr": 4,
                              "hd": 1, "tf": 1}),
    }
    openssl = {n: "AESGCM" for n in names}

    def openssl_takes(self, name: str, nonce_len: int, tag_length: int) -> bool:
        """pyca's AES-GCM (AESGCM, and modes.GCM for truncated tags) takes nonces of 8 to 128
        bytes only; every tag length of ``tag_lengths``."""
        return name in self.openssl and 8 <= nonce_len <= 128 and tag_length in self.tag_lengths


CIPHER = AESGCM()
