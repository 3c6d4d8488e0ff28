"""Cipher names, as OpenSSL spells them, resolved to (block cipher, key size, mode).

``lookup("aes-256-xts")`` gives a :class:`CipherSpec`.  A cipher module registers its variants
(name prefix and key size) and the modes it supports; every registered name is run by the test
suite (KATs where vectors exist, differential tests against OpenSSL/pyca on every device).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ciphers.base import BlockCipher
from .errors import UnsupportedCipher

#: the parallel block-cipher modes, in the order they are listed
MODES = ("ecb", "cbc", "ctr", "xts")


@dataclass(frozen=True)
class CipherSpec:
    name: str             # "aes-256-xts"
    cipher: BlockCipher   # the block cipher object
    key_size: int         # bytes of ONE block-cipher key (xts takes two of them)
    mode: str             # "ecb" | "cbc" | "ctr" | "xts"

    @property
    def block_size(self) -> int:
        return self.cipher.block_size

    @property
    def key_len(self) -> int:
        """Length of the key the caller gives (XTS: two concatenated block-cipher keys)."""
        return 2 * self.key_size if self.mode == "xts" else self.key_size

    @property
    def iv_len(self) -> int:
        """Length of the IV / initial counter / tweak; 0 when the mode takes none."""
        return 0 if self.mode == "ecb" else self.cipher.block_size

    @property
    def needs_whole_blocks(self) -> bool:
        """ECB and CBC take whole blocks (unless padding is asked for)."""
        return self.mode in ("ecb", "cbc")


_SPECS: dict[str, CipherSpec] = {}


def register(cipher: BlockCipher, variants: list[tuple[str, int]], modes=MODES) -> None:
    """Register ``prefix-mode`` names for each (prefix, key size) variant of a cipher."""
    for prefix, key_size in variants:
        for mode in modes:
            if mode == "xts" and cipher.block_size != 16:
                continue  # XTS is defined for 128-bit blocks only
            spec = CipherSpec(f"{prefix}-{mode}", cipher, key_size, mode)
            _SPECS[spec.name] = spec


def _load() -> None:
    # importing a cipher module registers it; one line per cipher
    from .ciphers import aes  # noqa: F401


def names() -> list[str]:
    """Every registered cipher·mode name, sorted."""
    _load()
    return sorted(_SPECS)


def lookup(name: str) -> CipherSpec:
    _load()
    key = name.strip().lower()
    try:
        return _SPECS[key]
    except KeyError:
        raise UnsupportedCipher(
            f"unknown cipher {name!r}; expected one of: {', '.join(sorted(_SPECS))}"
        ) from None
