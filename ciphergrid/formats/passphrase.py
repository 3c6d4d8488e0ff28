"""Sealed files under a passphrase: a small wrapper (docs/format.md, "Passphrases") in front of
an unchanged C2SP chunked-encryption body (formats/cobblestone.py).

    wrapper = magic "CG-PASS\\n" (8) || version 0x01 (1) || scheme (1: 0x01 Cobblestone-128,
              0x02 Cobblestone-256) || memory KiB (4) || iterations (4) || lanes (4)
              (big-endian) || salt (16 random bytes)
    input key = Argon2id(passphrase, salt, memory, iterations, lanes, length = the scheme's key,
                         associated data = the wrapper's first 22 bytes)

The wrapper is not authenticated on its own: every byte of it goes into Argon2id (the salt and
the costs as its parameters, the rest as its associated data), so a changed byte gives another
input key, which the body's key commitment refuses -- as it refuses a wrong passphrase
(``CommitmentMismatch``).  Costs read from a file are checked against caps before Argon2id runs
(:data:`CAPS`): a crafted file cannot make opening it take the machine's memory or minutes.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ..errors import InvalidArgument, Truncated
from . import PASS_MAGIC as MAGIC, is_wrapped  # noqa: F401 - (the package tells them)

VERSION = 1
SCHEMES = {1: False, 2: True}          # the scheme byte -> aes256
SALT = 16
_FIXED = ">8sBBIII"                    # (struct) magic, version, scheme, memory KiB, iterations, lanes
AD_LEN = 8 + 1 + 1 + 4 + 4 + 4         # 22 (struct.calcsize(_FIXED)): the associated data of Argon2id
WRAPPER = AD_LEN + SALT                # 38: the wrapper's bytes before the C2SP body


class Argon2Params(namedtuple("Argon2Params", ("memory_kib", "iterations", "lanes"),
                              defaults=(64 << 10, 3, 4))):
    """Argon2id's costs: memory in KiB, iterations (passes) and lanes.  The default is RFC 9106's
    second recommended option (64 MiB, 3 passes, 4 lanes)."""

    __slots__ = ()

    def check(self, where: str = "the Argon2id costs") -> "Argon2Params":
        """These costs, or InvalidArgument naming the first that is out of Argon2's rules or
        past a cap (:data:`CAPS`)."""
        m, t, p = self.memory_kib, self.iterations, self.lanes
        if not 1 <= p <= MAX_LANES:
            raise InvalidArgument(f"{where}: {p} lanes; give 1 to {MAX_LANES}")
        if not 1 <= t <= MAX_ITERATIONS:
            raise InvalidArgument(f"{where}: {t} iterations; give 1 to {MAX_ITERATIONS}")
        if not 8 * p <= m <= MAX_MEMORY_KIB:
            raise InvalidArgument(f"{where}: {m} KiB of memory; give {8 * p} (8 per lane) to "
                                  f"{MAX_MEMORY_KIB} KiB (1 GiB)")
        if m * t > MAX_WORK_KIB:
            raise InvalidArgument(f"{where}: {m} KiB x {t} iterations is past the cap of "
                                  f"{MAX_WORK_KIB} KiB x iterations (1 GiB passed over once)")
        return self


#: caps on the costs, sealing and opening: memory, passes, lanes, and memory x passes (the time:
#: 1 GiB once, 256 MiB 4 times, 64 MiB up to 10 times)
MAX_MEMORY_KIB = 1 << 20
MAX_ITERATIONS = 10
MAX_LANES = 16
MAX_WORK_KIB = 1 << 20
CAPS = {"memory_kib": MAX_MEMORY_KIB, "iterations": MAX_ITERATIONS, "lanes": MAX_LANES,
        "memory_kib_x_iterations": MAX_WORK_KIB}
DEFAULT = Argon2Params()


class Wrapper(namedtuple("Wrapper", ("params", "aes256", "salt", "raw"))):
    """A parsed wrapper: its costs (Argon2Params), scheme (``aes256``), salt and bytes."""

    __slots__ = ()

    @property
    def key_len(self) -> int:
        return 32 if self.aes256 else 16


def make(params: Argon2Params = DEFAULT, *, aes256: bool = False, salt: bytes | None = None) -> Wrapper:
    """A new wrapper (a random salt unless one is given)."""
    params.check()
    salt = os.urandom(SALT) if salt is None else bytes(salt)
    if len(salt) != SALT:
        raise InvalidArgument(f"the passphrase salt is {SALT} bytes, got {len(salt)}")
    import struct

    raw = struct.pack(_FIXED, MAGIC, VERSION, 2 if aes256 else 1, params.memory_kib, params.iterations,
                      params.lanes) + salt
    return Wrapper(params, aes256, salt, raw)


def parse(data) -> Wrapper:
    """The wrapper at the start of ``data`` (at least :data:`WRAPPER` bytes where it is whole):
    InvalidArgument for no wrapper, another version or scheme, or costs past the caps (checked
    before any key is derived); Truncated when the data ends inside it."""
    head = bytes(data[:WRAPPER])
    if not is_wrapped(head):
        raise InvalidArgument("not sealed with a passphrase (no CG-PASS header): open it with its "
                              "key (--key-file)")
    if len(head) < WRAPPER:
        raise Truncated(f"the sealed message is shorter than its passphrase header ({len(head)} of "
                        f"{WRAPPER} bytes): nothing is released")
    import struct

    _, version, scheme, m, t, p = struct.unpack(_FIXED, head[:AD_LEN])
    if version != VERSION:
        raise InvalidArgument(f"passphrase header version {version}: this ciphergrid reads "
                              f"version {VERSION}")
    if scheme not in SCHEMES:
        raise InvalidArgument(f"passphrase header: unknown scheme {scheme} (1: Cobblestone-128, "
                              "2: Cobblestone-256)")
    params = Argon2Params(m, t, p).check("the passphrase header's Argon2id costs")
    return Wrapper(params, SCHEMES[scheme], head[AD_LEN:], head)


def input_key(passphrase, wrapper: Wrapper) -> bytes:
    """The C2SP input key: Argon2id of the passphrase (bytes, or str as UTF-8) under the
    wrapper's salt and costs, the wrapper's first bytes as associated data."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    if isinstance(passphrase, str):
        passphrase = passphrase.encode()
    if not passphrase:
        raise InvalidArgument("empty passphrase")
    p = wrapper.params
    try:
        kdf = Argon2id(salt=wrapper.salt, length=wrapper.key_len, iterations=p.iterations,
                       lanes=p.lanes, memory_cost=p.memory_kib, ad=wrapper.raw[:AD_LEN])
    except UnsupportedAlgorithm:
        raise InvalidArgument("passphrases need Argon2id: cryptography >= 44 on OpenSSL >= 3.2 "
                              "(its wheels have it)") from None
    return kdf.derive(bytes(passphrase))


def encrypt(data, passphrase, context: bytes = b"", *, aes256: bool = False,
            params: Argon2Params = DEFAULT, salt: bytes | None = None, c2sp_salt: bytes | None = None,
            device: str = "auto") -> bytes:
    """``data`` sealed under a passphrase: the wrapper, then the C2SP body under its input key
    (``salt``: the wrapper's, ``c2sp_salt``: the body's; random unless given)."""
    from . import cobblestone as cb

    w = make(params, aes256=aes256, salt=salt)
    return w.raw + cb.encrypt(data, input_key(passphrase, w), context, aes256=aes256, salt=c2sp_salt,
                              device=device)


def _body(sealed):
    from . import cobblestone as cb

    u8 = cb._u8(sealed)
    return parse(u8[:WRAPPER]), u8[WRAPPER:]


def decrypt(sealed, passphrase, context: bytes = b"", *, device: str = "auto") -> bytes:
    """The message of a passphrase-sealed ``sealed`` (the scheme from its wrapper)."""
    from . import cobblestone as cb

    w, body = _body(sealed)
    return cb.decrypt(body, input_key(passphrase, w), context, aes256=w.aes256, device=device)


def decrypt_range(sealed, passphrase, context: bytes = b"", offset: int = 0, length: int | None = None,
                  *, device: str = "auto") -> bytes:
    """``cobblestone.decrypt_range`` of a passphrase-sealed ``sealed``."""
    from . import cobblestone as cb

    w, body = _body(sealed)
    return cb.decrypt_range(body, input_key(passphrase, w), context, offset, length, aes256=w.aes256,
                            device=device)
