"""Request: one validated cipher·mode·direction with its key material and options.

``make_request`` checks everything the arguments decide (key and IV sizes, options, the mode's
key rules, the implementation name) and raises the matching ciphergrid error; engines, the
transfer layer and the router take a Request and ask ``req.mode`` for what depends on the mode.
The fields for nonce, AAD and tag length wait for the AEADs; ``out_len`` already differs from the
input's length with PKCS#7 padding.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidArgument, InvalidKeySize
from .modes import padding as _padding


@dataclass(frozen=True, eq=False)
class Request:
    spec: object                 # registry.CipherSpec
    key: bytes
    iv: bytes | None
    encrypt: bool
    padding: str | None = None
    sector_size: int | None = None   # XTS data-unit size; None = the whole message is one unit
    start_sector: int = 0
    impl: str | None = None          # kernel implementation ("fast" default, "ct" constant-time...)
    nonce: bytes | None = None       # AEADs (later)
    aad: bytes = b""                 # AEADs (later)
    tag_length: int | None = None    # AEADs (later)

    def __repr__(self) -> str:  # never shows key material
        return f"Request({self.spec.name!r}, {'encrypt' if self.encrypt else 'decrypt'})"

    @property
    def mode(self):
        return self.spec.mode

    @property
    def block_size(self) -> int:
        return self.spec.block_size

    @property
    def implementation(self):
        return self.spec.algorithm.implementation(self.impl)

    def out_len(self, n: int) -> int:
        return self.mode.out_len(self, n)

    def check_length(self, n: int) -> None:
        self.mode.check_length(self, n)

    def at(self, first_block: int, chain: bytes | None = None) -> "Request":
        """The request for blocks [first_block, ...) as a message of its own (see Mode.at)."""
        return self.mode.at(self, first_block, chain)


def make_request(spec, key, iv, encrypt: bool, padding=None, sector_size=None, start_sector=None,
                 impl=None) -> Request:
    """Validate key, IV and options for ``spec`` (a registry.CipherSpec); raise the matching
    ciphergrid error."""
    mode = spec.mode
    key = bytes(key) if key is not None else b""
    if len(key) not in spec.key_lens:
        if len(spec.key_lens) > 1:
            lo, hi = min(spec.key_lens), max(spec.key_lens)
            what = f"{lo}- to {hi}-byte ({8 * lo}- to {8 * hi}-bit)"
        else:
            what = f"{spec.key_len} bytes ({8 * spec.key_len} bits"
            what += f": {mode.key_count} keys of {8 * spec.key_size} bits)" if mode.key_count > 1 else ")"
        raise InvalidKeySize(f"{spec.name} takes a {what} key, got {len(key)} bytes")
    if padding is not None and padding not in _padding.SCHEMES:
        raise InvalidArgument(f"padding must be None or 'pkcs7', got {padding!r}")
    if padding and not mode.paddable:
        raise InvalidArgument(f"padding applies to ECB and CBC only, not {mode.name.upper()}")
    iv, sector_size, start_sector = mode.validate(spec, iv, encrypt, sector_size, start_sector)
    mode.check_key(spec, key, encrypt)
    if impl is not None:
        spec.algorithm.implementation(impl)  # raises for an unknown implementation
    return Request(spec, key, iv, bool(encrypt), padding, sector_size, start_sector or 0, impl)
