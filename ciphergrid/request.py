"""The request family: what to run, validated, and what part of it.

A request is a cipher with its keys and options plus the work it stands for:

* :class:`Request`, a block cipher·mode·direction with its key, IV and options (``make_request``
  checks everything the arguments decide: key and IV sizes, options, the mode's key rules, the
  implementation name, and raises the matching ciphergrid error); its work is a message's blocks,
  a part of it a :class:`BlockRange` (``Request.at`` is the request for a range's blocks as a
  message of its own);
* :class:`AEADRequest`, an AEAD·direction with its nonce and tag lengths and (once the data is
  there) its batch of messages (:class:`Batch`: keys, nonces, AAD and texts; ``make_batch``);
  its work is the batch's messages, a part of it a :class:`MessageRange`.

Both kinds answer ``work(nbytes)`` (the whole of it), ``split(work, at)`` (two ranges: splitting is
the primitive every layer uses), ``weight(work)`` (its bytes) and ``capability_on(engine, nbytes)``
(how an engine runs it); ``route.route`` takes either and returns the plan that runs it.  Engines,
the transfer layer and the router ask ``req.mode`` for what depends on a block request's mode.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field

from .runtime import current
from .errors import InvalidArgument, InvalidKey, InvalidKeySize, WeakCipherWarning
from .modes import padding as _padding
from ._lazy import numpy_for

np = numpy_for(__name__)


def implementation_of(declaration, constant_time: bool, implementation: str | None) -> str | None:
    """The implementation a call asks of ``declaration`` (a block cipher's or an AEAD's):
    ``constant_time`` selects its constant-time one (another named beside it is refused), an
    unknown name is refused."""
    if constant_time:
        ct = declaration.constant_time_implementation()
        if implementation not in (None, ct):
            raise InvalidArgument(f"constant_time=True selects the {ct!r} implementation")
        return ct
    if implementation is not None:
        declaration.implementation(implementation)  # raises for an unknown one
    return implementation


class _Kind:
    """What both kinds of request answer alike: the cipher's name (``spec.name``), and ``what``,
    the request in an error message."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def what(self) -> str:
        return self.spec.name


@dataclass(frozen=True, eq=False)
class Request(_Kind):
    spec: object                 # registry.CipherSpec
    key: bytes
    iv: bytes | None
    encrypt: bool
    padding: str | None = None
    sector_size: int | None = None   # XTS data-unit size; None = the whole message is one unit
    start_sector: int = 0
    impl: str | None = None          # kernel implementation ("fast" default, "ct" constant-time...)
    allow_weak: bool = False         # encryption the cipher's UsePolicy refuses is allowed (warned)
    #: the cipher's UsePolicy for this key, worked out once when the request was made (encryption)
    policy: object = field(default=None, repr=False)

    #: the kind of work: a message's blocks
    kind = "blocks"

    def __repr__(self) -> str:  # never shows key material
        return f"Request({self.spec.name!r}, {'encrypt' if self.encrypt else 'decrypt'})"

    @property
    def what(self) -> str:
        """'aes-128-ctr encryption': the request in an error message."""
        return f"{self.spec.name} {'encryption' if self.encrypt else 'decryption'}"

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

    @property
    def limit_refuses(self) -> bool:
        """Whether encrypting past the policy's block limit is refused (64-bit blocks: 2^32, TDEA:
        2^20; not with allow_weak): a stream of unknown length must then be counted as it goes
        (admit)."""
        if not self.encrypt or self.allow_weak:
            return False
        pol = self._policy()
        return pol.block_limit is not None and pol.over_limit_refused

    def _policy(self):
        return self.policy if self.policy is not None else self.spec.algorithm.encryption_policy(self.key)

    def admit(self, total_bytes: int) -> None:
        """Check the cipher's UsePolicy for a call or context that has encrypted ``total_bytes``
        under this key: past a refusing limit (64-bit blocks: 2^32 blocks, TDEA: 2^20) raise,
        unless ``allow_weak``; past a limit that allow_weak lifted (or one that only warns), warn
        once."""
        if not self.encrypt:
            return
        pol = self.policy
        if pol is None:    # (made while policies were suspended, or by hand)
            if policy_suspended():
                return
            pol = self.spec.algorithm.encryption_policy(self.key)
        if pol.block_limit is None or total_bytes <= pol.block_limit * self.block_size:
            return
        if policy_suspended():
            return
        what = f"{self.spec.name}: more than {_blocks(pol.block_limit, self.block_size)} under one key"
        why = pol.limit_reason or "the cipher's limit"
        if pol.over_limit_refused and not self.allow_weak:
            raise InvalidArgument(f"{what} is refused ({why}); use a new key, or allow_weak=True / "
                                  "--allow-weak to override")
        warn_once(f"{what}, encrypted anyway (allow_weak): {why}" if pol.over_limit_refused
                  else f"{what}: {why}")

    def at(self, first_block: int, chain: bytes | None = None) -> "Request":
        """The request for blocks [first_block, ...) as a message of its own (see Mode.at)."""
        return self.mode.at(self, first_block, chain)


    def capability_on(self, eng, nbytes: int | None = None) -> str | None:
        """How engine ``eng`` runs this request for ``nbytes``: "parallel", "serial" or None."""
        return eng.capability(self, nbytes)

    @property
    def plan_key(self) -> tuple:
        """What route's plan of this request depends on besides the size, the device and the
        path: every field but its secrets (key, IV) and its policy (route.py keeps plans by it)."""
        return ("blocks", self.spec, self.encrypt, self.padding, self.sector_size,
                self.start_sector, self.impl, self.allow_weak)

    def work(self, nbytes: int) -> "BlockRange":
        """The whole message of ``nbytes`` as a range of blocks (the last may be partial)."""
        return BlockRange(0, -(-nbytes // self.block_size))

    def weight(self, work: "BlockRange") -> int:
        return work.count * self.block_size

    def split(self, work: "BlockRange", at: int, src=None) -> tuple["BlockRange", "BlockRange"]:
        """``work`` cut before its block ``work.first + at``: two ranges; the second's chaining
        value read from ``src`` (the whole message's input) where the mode reads behind (CBC
        decryption).  Raises InvalidArgument where the mode does not split there (CBC
        encryption; XTS inside a data unit)."""
        unit = self.mode.split_unit(self)
        if unit is None or not 0 < at < work.count or (at * self.block_size) % unit:
            raise InvalidArgument(f"{self.spec.name} does not split after {at} blocks of "
                                  f"{work.count}")
        f = work.first + at
        chain = None
        if self.mode.reads_behind(self):
            if src is None:
                raise InvalidArgument(f"{self.what} splits with its input at hand (src=)")
            chain = self.mode.chain_at(self, src, f)
        return (BlockRange(work.first, at, work.chain), BlockRange(f, work.count - at, chain))


@dataclass(frozen=True)
class BlockRange:
    """Blocks [first, first + count) of a block request's message (the message's last block may
    be partial: CTR, XTS), ``chain`` the chaining value before block ``first`` where the mode
    needs one (CBC decryption: the ciphertext block before it; None from block 0)."""

    first: int
    count: int
    chain: bytes | None = None

    def span(self, block_size: int, nbytes: int) -> tuple[int, int]:
        """The range's bytes [a, b) in a message of ``nbytes``."""
        a = self.first * block_size
        return a, min(nbytes, a + self.count * block_size)

    def run(self, session, src, dst) -> None:
        """The range's input ``src`` (its bytes, ``span``) into ``dst`` through ``session`` (an
        engine's session of the whole message's request)."""
        session.crypt(src, dst, self.first, self.chain)


@dataclass(frozen=True, eq=False)
class MessageRange:
    """Messages [a, b) of an AEAD request's batch (:class:`Batch`)."""

    batch: object
    a: int
    b: int

    @property
    def count(self) -> int:
        return self.b - self.a

    @property
    def nbytes(self) -> int:
        """The bytes of the range's texts."""
        return int(self.batch.off[self.b] - self.batch.off[self.a])

    def part(self, dst=None):
        """The range as a batch of its own (views; its output texts into ``dst``, default the
        batch's own; every message with the batch's own output: the batch itself)."""
        if dst is None and self.a == 0 and self.b == self.batch.count:
            return self.batch
        return self.batch.part(self.a, self.b, dst)

    def run(self, eng, impl: str | None = None, tags=None, dst=None, **kw):
        """The range sealed (its tags) or opened against ``tags`` (the range's received tags;
        its verified mask) by engine ``eng``; output texts into ``dst`` (default: the batch's).
        ``kw``: the engine's options (``beside`` of a seal, a composite's ``stats``)."""
        part = self.part(dst)
        if part.encrypt:
            return eng.seal(part, impl, **kw)
        return eng.open(part, tags, impl, **kw)


@dataclass
class Batch:
    """Messages of one AEAD name, one direction: an AEAD request's data.  Everything is a
    batch: one message is a batch of one, a million database cells a batch of a million; the
    public API, the CLI, the engines and the benchmark all hand the engine a ``Batch``:

    * the texts of every message, concatenated in ``src`` (message i is ``src[off[i]:off[i+1]]``:
      plaintext when encrypting, ciphertext *without its tag* when decrypting); ``dst`` has the
      same size and layout and receives the output texts;
    * a key per message as an index into a table of distinct keys (``keys[key_index[i]]``), so
      one key for all (the common case) is expanded once;
    * a nonce per message (``nonces``, one row each, one length per batch), the AAD per message
      (``aad[aad_off[i]:aad_off[i+1]]``) and one tag length for the batch.
    """

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

    @classmethod
    def one(cls, name: str, encrypt: bool, tag_length: int, key: bytes, nonce: bytes,
            aad: bytes, src, dst, nbytes: int | None = None) -> "Batch":
        """One message as a batch: ``src`` its text into ``dst`` (host or GPU arrays, or device
        buffers, of the text's size: ``nbytes``, default ``src.nbytes``), the key copied into
        the batch's table (wiped with it)."""
        n = src.nbytes if nbytes is None else int(nbytes)
        return cls(name, bool(encrypt), int(tag_length),
                   np.frombuffer(key, dtype=np.uint8).reshape(1, -1).copy(),
                   np.zeros(1, dtype=np.int32), np.frombuffer(nonce, dtype=np.uint8).reshape(1, -1),
                   np.frombuffer(aad, dtype=np.uint8), np.array([0, len(aad)], dtype=np.int64),
                   src, np.array([0, n], dtype=np.int64), dst)

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
    aad_off = np.zeros(m + 1, dtype=np.int64)
    aad_off[1:] = np.cumsum([len(a) for a in aads])
    off = np.zeros(m + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(t) for t in texts])
    aad = np.frombuffer(b"".join(bytes(a) for a in aads), dtype=np.uint8).copy()
    src = np.frombuffer(b"".join(bytes(t) for t in texts), dtype=np.uint8).copy()
    if dst is None:
        dst = np.empty_like(src)
    return Batch(name, bool(encrypt), int(tag_length), key_arr, index, non, aad, aad_off, src,
                 off, dst)


@dataclass(frozen=True, eq=False)
class AEADRequest(_Kind):
    """An AEAD request: ``spec`` (aeads.AEADSpec), the direction (None: routed without one),
    the nonce and tag lengths, ``count`` messages, the implementation, and ``batch``, the
    messages themselves (None while only sizes are known: the command line routes a file's
    message before reading it); a one-shot message's request also holds its ``key``,
    ``nonce`` and ``aad`` (never shown, and no part of ``plan_key``).  Built by
    :func:`aead_request`."""

    spec: object
    encrypt: bool | None
    nonce_len: int | None = None
    tag_length: int | None = None
    count: int = 1
    impl: str | None = None
    batch: object = field(default=None, repr=False)
    #: one message's key, nonce and AAD (a one-shot call's; a batch holds its own in ``batch``)
    key: bytes | None = field(default=None, repr=False)
    nonce: bytes | None = field(default=None, repr=False)
    aad: bytes = field(default=b"", repr=False)

    #: the kind of work: a batch's messages
    kind = "messages"

    def capability_on(self, eng, nbytes: int | None = None) -> str | None:
        """How engine ``eng`` runs ``count`` messages with these sizes (a service: as it
        says; else the capability table's column of the engine's kind)."""
        sizes = dict(count=self.count, nonce_len=self.nonce_len, tag_length=self.tag_length)
        if eng.kind == "remote":
            return eng.aead_capability(self.spec, **sizes)
        return self.spec.capability(eng.kind, **sizes)

    @property
    def plan_key(self) -> tuple:
        """What route's plan of this request depends on besides the size, the device and the
        path: every field but its batch (keys, nonces, texts)."""
        return ("messages", self.spec, self.encrypt, self.nonce_len, self.tag_length, self.count,
                self.impl)

    def work(self, nbytes: int | None = None) -> MessageRange:
        """Every message of the batch."""
        return MessageRange(self.batch, 0, self.count)

    def weight(self, work: MessageRange) -> int:
        return work.nbytes

    def split(self, work: MessageRange, at: int, src=None) -> tuple[MessageRange, MessageRange]:
        """``work`` cut before its message ``work.a + at``: two ranges."""
        if not 0 < at < work.count:
            raise InvalidArgument(f"{work.count} messages do not split after {at}")
        return (MessageRange(work.batch, work.a, work.a + at),
                MessageRange(work.batch, work.a + at, work.b))


class Closing:
    """What holds a key to make requests with (the API's Cipher, its AEAD classes): ``close()``
    wipes it; leaving a ``with`` block closes it, and so does its collection."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def aead_request(spec, batch=None, *, encrypt: bool | None = None, nonce_len: int | None = None,
                 tag_length: int | None = None, count: int = 1, impl: str | None = None,
                 key: bytes | None = None, nonce: bytes | None = None,
                 aad: bytes = b"") -> AEADRequest:
    """The AEADRequest of ``batch`` (its direction, sizes and count taken from it), or, without
    one, of ``count`` messages of the sizes given; with ``key`` and ``nonce`` (and ``aad``),
    one message's (its nonce's length the request's)."""
    if batch is not None:
        return AEADRequest(spec, batch.encrypt, int(batch.nonces.shape[1]), batch.tag_length,
                           batch.count, impl, batch)
    if nonce is not None:
        nonce_len = len(nonce)
    return AEADRequest(spec, encrypt, nonce_len, tag_length, count, impl, None, key, nonce, aad)


def policy_suspended() -> bool:
    """Whether this runtime is inside ``weak_use_allowed``."""
    return current().policy.suspended > 0


@contextlib.contextmanager
def weak_use_allowed():
    """Within the block, every request is made as with allow_weak=True and says nothing: for the
    known-answer self-test and the benchmark, which encrypt random data under random keys of
    every cipher to check and measure it (their reports say so); not for users' data.  (Per
    runtime: a service's clients are not covered by another's self-test.)"""
    pol = current().policy
    with pol.lock:
        pol.suspended += 1
    try:
        yield
    finally:
        with pol.lock:
            pol.suspended -= 1


def warn_once(message: str, state=None) -> None:
    """A WeakCipherWarning, once per message and runtime (the CLI prints it on stderr);
    ``state``: this thread's policy state, where the caller has it."""
    pol = state if state is not None else current().policy
    if message in pol.warned:   # (said already: no lock needed to see it)
        return
    with pol.lock:
        if message in pol.warned:
            return
        pol.warned.add(message)
    warnings.warn(message, WeakCipherWarning, stacklevel=3)


def _blocks(n: int, block_size: int) -> str:
    """'2^20 blocks (8 MiB)', '4 blocks (32 bytes)'."""
    size = n * block_size
    count = f"2^{n.bit_length() - 1}" if n >= 1024 and n & (n - 1) == 0 else str(n)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{count} blocks ({size >> shift} {unit})"
    return f"{count} blocks ({size} bytes)"


def check_policy(spec, key: bytes, allow_weak: bool):
    """Encrypting under ``key``: the cipher's UsePolicy (algorithms/base.py) refuses (unless
    ``allow_weak``) or warns, once per process: one message, the refusal's reason lifted by
    allow_weak first.  Returns the policy (None where policies are suspended)."""
    state = current().policy
    if state.suspended > 0:   # (policy_suspended)
        return None
    pol = spec.algorithm.encryption_policy(key)
    said = [pol.warning] if pol.warning else []
    if pol.refusal:
        if not allow_weak:
            raise InvalidKey(f"{spec.name}: {pol.refusal}: encryption refused unless allow_weak=True "
                             f"/ --allow-weak (decryption always works)")
        said.insert(0, f"{pol.refusal}: encrypting anyway (allow_weak)")
    if said:
        warn_once(f"{spec.name}: " + "; ".join(said), state)
    return pol


def make_request(spec, key, iv, encrypt: bool, padding=None, sector_size=None, start_sector=None,
                 impl=None, allow_weak: bool = False) -> Request:
    """Validate key, IV and options for ``spec`` (a registry.CipherSpec); raise the matching
    ciphergrid error."""
    mode = spec.mode
    key = bytes(key) if key is not None else b""
    if len(key) not in spec.key_lens:
        from .registry import key_words

        raise InvalidKeySize(f"{spec.name} takes {key_words(spec.key_lens, mode.key_count)}, "
                             f"got {len(key)} bytes")
    if padding is not None and padding not in _padding.SCHEMES:
        raise InvalidArgument(f"padding must be None or 'pkcs7', got {padding!r}")
    if padding and not mode.paddable:
        raise InvalidArgument(f"padding applies to ECB and CBC only, not {mode.name.upper()}")
    iv, sector_size, start_sector = mode.validate(spec, iv, encrypt, sector_size, start_sector)
    mode.check_key(spec, key, encrypt)
    if impl is not None:
        spec.algorithm.implementation(impl)  # raises for an unknown implementation
    elif not mode.parallel(encrypt):
        impl = spec.algorithm.serial_implementation
    policy = check_policy(spec, key, allow_weak) if encrypt else None
    # (the frozen dataclass's fields set at once: its __init__ sets them one call at a time)
    req = object.__new__(Request)
    req.__dict__.update(spec=spec, key=key, iv=iv, encrypt=bool(encrypt), padding=padding,
                        sector_size=sector_size, start_sector=start_sector or 0, impl=impl,
                        allow_weak=bool(allow_weak), policy=policy)
    return req
