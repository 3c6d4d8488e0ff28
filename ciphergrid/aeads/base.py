"""The uniform AEAD interface: the request type (``Batch``), the declaration (``AEAD``: names,
sizes, limits, and its device implementations by the name of their driver, ``Kernel``) and the
one tag comparison (``verify``).  The device drivers and their jobs are the device engine's
(``engines/device_aead/``).

Everything is a batch.  One message is a batch of one; a million database cells are a batch of a
million; the public API, the CLI, the engines and the benchmark all hand the engine a ``Batch``:

* the texts of every message, concatenated in ``src`` (message i is ``src[off[i]:off[i+1]]``:
  plaintext when encrypting, ciphertext *without its tag* when decrypting); ``dst`` has the same
  size and layout and receives the output texts;
* a key per message as an index into a table of distinct keys (``keys[key_index[i]]``), so one
  key for all (the common case) is expanded once;
* a nonce per message (``nonces``, one row each, one length per batch), the AAD per message
  (``aad[aad_off[i]:aad_off[i+1]]``) and one tag length for the batch.

A device driver returns the tags it computed, one row per message, in both directions; the shared
layer writes them after the ciphertext, or compares them in constant time with the received ones
(``verify``) and zeroes the plaintext of every message that fails.  A driver never decides
whether a tag verifies, so no engine can release unverified plaintext by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidArgument, InvalidKeySize
from .._lazy import numpy_for

np = numpy_for(__name__)

I64 = np.int64


@dataclass
class Batch:
    """Messages of one AEAD name, one direction (see the module docstring)."""

    name: str                    # the cipher name, e.g. "aes-128-gcm"
    encrypt: bool
    tag_length: int              # bytes of each tag
    keys: np.ndarray             # (k, key_len) uint8: the distinct keys
    key_index: np.ndarray        # (m,) int32: message i uses keys[key_index[i]]
    nonces: np.ndarray           # (m, nonce_len) uint8
    aad: np.ndarray              # uint8: every message's AAD, concatenated
    aad_off: np.ndarray          # (m + 1,) int64
    src: np.ndarray              # uint8: every message's text, concatenated
    off: np.ndarray              # (m + 1,) int64: message i is src[off[i]:off[i + 1]]
    dst: np.ndarray              # uint8, src's size and layout (may be src itself: in place)

    @property
    def count(self) -> int:
        return int(self.key_index.shape[0])

    def lengths(self) -> np.ndarray:
        return np.diff(self.off)

    def aad_lengths(self) -> np.ndarray:
        return np.diff(self.aad_off)

    def message(self, i: int):
        """(key, nonce, aad, text) of message i as bytes (tests and host references)."""
        return (self.keys[self.key_index[i]].tobytes(), self.nonces[i].tobytes(),
                self.aad[self.aad_off[i]:self.aad_off[i + 1]].tobytes(),
                self.src[self.off[i]:self.off[i + 1]].tobytes())

    def wipe(self) -> None:
        """Zero the key table (the shared layer calls it when the batch is done)."""
        self.keys.fill(0)

    def part(self, a: int, b: int, dst=None) -> "Batch":
        """Messages [a, b) as a batch of their own: views of this one's arrays (the key table
        shared), offsets from 0; its output texts into ``dst`` (default: this batch's, in place
        where they lie)."""
        o0, o1 = int(self.off[a]), int(self.off[b])
        p0, p1 = int(self.aad_off[a]), int(self.aad_off[b])
        return Batch(self.name, self.encrypt, self.tag_length, self.keys, self.key_index[a:b],
                     self.nonces[a:b], self.aad[p0:p1], self.aad_off[a:b + 1] - p0,
                     self.src[o0:o1], self.off[a:b + 1] - o0,
                     self.dst[o0:o1] if dst is None else dst)


def make_batch(name: str, encrypt: bool, tag_length: int, keys, nonces, aads, texts,
               dst: np.ndarray | None = None) -> Batch:
    """A Batch from lists (tests, small batches): ``keys`` one bytes per message (equal keys are
    stored once), ``nonces``/``aads``/``texts`` one bytes-like each."""
    m = len(texts)
    table: dict[bytes, int] = {}
    index = np.empty(m, dtype=np.int32)
    for i, k in enumerate(keys):
        index[i] = table.setdefault(bytes(k), len(table))
    klen = len(next(iter(table))) if table else 0
    key_arr = np.frombuffer(b"".join(table), dtype=np.uint8).reshape(len(table), klen).copy()
    nlen = len(nonces[0]) if m else 0
    if any(len(n) != nlen for n in nonces):
        raise InvalidArgument("every nonce of a batch has the same length")
    non = np.frombuffer(b"".join(bytes(n) for n in nonces), dtype=np.uint8).reshape(m, nlen).copy()
    aad_off = np.zeros(m + 1, dtype=I64)
    aad_off[1:] = np.cumsum([len(a) for a in aads])
    off = np.zeros(m + 1, dtype=I64)
    off[1:] = np.cumsum([len(t) for t in texts])
    aad = np.frombuffer(b"".join(bytes(a) for a in aads), dtype=np.uint8).copy()
    src = np.frombuffer(b"".join(bytes(t) for t in texts), dtype=np.uint8).copy()
    if dst is None:
        dst = np.empty_like(src)
    return Batch(name, bool(encrypt), int(tag_length), key_arr, index, non, aad, aad_off, src,
                 off, dst)


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
