"""The uniform AEAD interface: the declaration (``AEAD``: names, sizes, limits, and its device
implementations by the name of their driver, ``Kernel``) and the one tag comparison
(``verify``); the request data, ``Batch`` (everything is a batch), is the request family's
(request.py, beside ``AEADRequest``).  The device drivers and their jobs are the device engine's
(``engines/device_aead/``).

A device driver returns the tags it computed, one row per message, in both directions; the shared
layer writes them after the ciphertext, or compares them in constant time with the received ones
(``verify``) and zeroes the plaintext of every message that fails.  A driver never decides
whether a tag verifies, so no engine can release unverified plaintext by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidArgument, InvalidKeySize
from .._lazy import numpy_for
from ..request import Batch, make_batch   # (the request data: request.py)

np = numpy_for(__name__)


@dataclass(frozen=True)
class Kernel:
    """One device implementation of an AEAD: where its driver is and what it promises.
    ``driver`` names the device engine's driver class: "MODULE.Class", a module of
    ``ciphergrid/engines/device_aead/`` ("gcm.GCMDriver"), or a dotted path of a module
    anywhere ("package.module.Class": an AEAD registered from outside).  The declaration never
    imports it: the device engine does, when it builds the driver."""

    driver: str                   # the DeviceAEAD subclass, by name (above)
    constant_time: bool = False   # no table indexed by secret data, no secret-dependent branch
    options: dict = field(default_factory=dict)   # passed to the driver (variants of one driver)


class AEAD:
    """Base class of the AEAD declarations: one module of ``ciphergrid/aeads/`` each, defining
    ``CIPHER = TheSubclass()`` (as the block ciphers' modules of ``algorithms/`` do)."""

    #: family name ("aes-gcm", "chacha20-poly1305", "ascon-aead128", "aegis-128l")
    family: str = ""
    #: cipher name -> key length in bytes ({"aes-128-gcm": 16, ...})
    names: dict = {}
    #: accepted nonce lengths in bytes (a tuple, or a range: GCM takes any length >= 1)
    nonce_lengths = (12,)
    #: the nonce length the CLI and the docs recommend
    default_nonce_length: int = 12
    #: accepted tag lengths in bytes, and the default
    tag_lengths = (16,)
    default_tag_length: int = 16
    #: the longest plaintext of one message, in bytes (GCM: 2^36 - 32; ChaCha20: 2^38 - 64)
    max_message: int = 1 << 62
    #: the longest AAD of one message, in bytes
    max_aad: int = 1 << 61
    #: whether one message runs in parallel on a device (GCM, ChaCha20-Poly1305) or serially on
    #: one work-item (Ascon, AEGIS: their speed comes from batches)
    parallel_message: bool = True
    #: with device "auto", ONE message of host data this long or longer goes to a GPU rather than
    #: to OpenSSL (where OpenSSL has the AEAD: route._gpu_takes_host_aead)
    gpu_one_message_min: int = 1 << 20
    #: device implementations by name; "fast" is the default
    implementations: dict = {}
    #: cipher name -> OpenSSL / pyca class name, when OpenSSL has it (the openssl engine)
    openssl: dict = {}

    def openssl_takes(self, name: str, nonce_len: int, tag_length: int) -> bool:
        """Whether the OpenSSL engine runs ``name`` with these sizes (pyca's AES-GCM takes
        nonces of 8 to 128 bytes only, for example)."""
        return name in self.openssl

    def key_length(self, name: str) -> int:
        return self.names[name]

    def check(self, name: str, key_len: int, nonce_len: int, tag_length: int) -> None:
        """Raise the ciphergrid error for a key, nonce or tag length ``name`` does not take."""
        from ..errors import InvalidIVSize

        if key_len != self.names[name]:
            raise InvalidKeySize(f"{name} takes a {self.names[name]}-byte "
                                 f"({8 * self.names[name]}-bit) key, got {key_len} bytes")
        if nonce_len not in self.nonce_lengths:
            raise InvalidIVSize(f"{name} takes a nonce of {_lengths(self.nonce_lengths)} bytes, "
                                f"got {nonce_len}")
        if tag_length not in self.tag_lengths:
            raise InvalidArgument(f"{name} takes a tag of {_lengths(self.tag_lengths)} bytes, "
                                  f"got {tag_length}")

    def implementation(self, impl: str | None) -> Kernel:
        impl = impl or "fast"
        try:
            return self.implementations[impl]
        except KeyError:
            raise InvalidArgument(f"{self.family} has no implementation {impl!r} "
                                  f"(it has {', '.join(sorted(self.implementations))})") from None

    def constant_time_implementation(self) -> str:
        for n, k in self.implementations.items():
            if k.constant_time:
                return n
        raise InvalidArgument(f"{self.family} has no constant-time kernel")


def _lengths(lens) -> str:
    lens = list(lens) if not isinstance(lens, range) else lens
    if isinstance(lens, range):
        return f"{lens.start} to {lens.stop - 1}"
    return " or ".join(str(n) for n in lens)


def verify(batch: Batch, computed: np.ndarray, received: np.ndarray) -> np.ndarray:
    """Compare each message's computed tag with the received one in constant time; zero the
    output text of every message that fails.  Returns the boolean mask of messages that verified."""
    m = batch.count
    if m == 0:
        return np.zeros(0, dtype=bool)
    c = np.ascontiguousarray(computed, dtype=np.uint8).reshape(m, -1)
    r = np.ascontiguousarray(received, dtype=np.uint8).reshape(m, -1)
    if c.shape != r.shape:
        raise InvalidArgument("computed and received tags differ in length")
    # every byte of every tag XORed and ORed (no early exit, no branch on the bytes: constant
    # time, as hmac.compare_digest, for the whole batch at once), 8 bytes at a time: the rows
    # zero-padded to whole words (an OR-reduce along a row of bytes is several times slower and
    # would be most of a GPU batch's host time after its last download: docs/benchmarks.md,
    # 'Figures moved from code comments')
    t = c.shape[1]
    x = np.zeros((m, -(-t // 8) * 8), dtype=np.uint8)
    np.bitwise_xor(c, r, out=x[:, :t])
    words = x.view(np.uint64)
    acc = words[:, 0].copy()
    for j in range(1, words.shape[1]):
        acc |= words[:, j]
    ok = acc == 0
    if not ok.all():
        for i in np.flatnonzero(~ok):
            batch.dst[batch.off[i]:batch.off[i + 1]] = 0
    return ok
