"""A lone worker's chunks of a sealed message (formats/cobblestone.py) through pyca's own
Cobblestone encryptor and decryptor: their chunk loop in Rust, in pyca's own OpenSSL, no Python
per chunk.  A lone worker is one thread that seals or opens a message in order from its first
chunk (the command line on one worker, a stream decryptor); where pyca has no Cobblestone
classes (an older ``cryptography``) none of this applies and OpenSSL's C loop runs the chunks.

A Sealer makes a :class:`Sealing`, an Opener an :class:`Opening`, and holds it: the pyca object
and the chunk it takes next are the sequence's own, advanced only by its ``seal`` / ``open_``.
:func:`runs` is the one rule for when a call takes this path: the Sealer's and Opener's runs
and -v (transfer/sealed.py ``said``) ask it.

Nothing here loads the system's libcrypto or the OpenSSL engine: only a chunk that fails to open
is found again (chunk by chunk, engines/openssl/aead.py ``pyca_chunks``) to name it.  pyca's
object giving another byte count than the format's is the engine's failure (DeviceError), the
output zeroed: nothing is released.
"""

from __future__ import annotations

from .. import errors
from ..errors import DeviceError


def _classes(sch, encrypt: bool):
    """pyca's ``Cobblestone{128,256}{Encryptor,Decryptor}`` class for scheme ``sch``, or None
    where this ``cryptography`` has none."""
    try:
        from cryptography import cobblestone as pyca
    except ImportError:
        return None
    name = f"Cobblestone{256 if sch.key_len == 32 else 128}{'Encryptor' if encrypt else 'Decryptor'}"
    return getattr(pyca, name, None)


def runs(sch, threads: int, alone: bool) -> bool:
    """Whether a call sealing or opening chunks of scheme ``sch`` in OpenSSL's place runs them
    through pyca's Cobblestone loop: one thread (``threads`` 1) with no other thread sealing
    or opening meanwhile (``alone``), where this ``cryptography`` has the scheme's classes
    (the call then continues its sequence: a Sealer's from its first chunk, an Opener's from
    any chunk 0)."""
    return alone and threads == 1 and _classes(sch, True) is not None \
        and _classes(sch, False) is not None


def stream(sch, encrypt: bool, key: bytes, context: bytes):
    """pyca's ``Cobblestone{128,256}{Encryptor,Decryptor}`` for scheme ``sch`` (a key of its
    length), or None where this ``cryptography`` has none."""
    made = _classes(sch, encrypt)
    return None if made is None else made(key, context)


def _bad_tag(e: Exception) -> bool:
    """Whether ``e`` is pyca's InvalidTag (its module imported only here)."""
    from cryptography.exceptions import InvalidTag

    return isinstance(e, InvalidTag)


def _through(pyca, a, b, final: bool, want: int, what: str) -> None:
    """``a`` through pyca's encryptor or decryptor ``pyca`` into ``b`` (with ``final`` its
    finalize after), which must give ``want`` bytes: another count is the engine's failure,
    ``b`` zeroed."""
    got = pyca.update_into(a, b)
    rest = pyca.finalize() if final else b""
    if got + len(rest) != want:
        b[:] = bytes(len(b))
        raise DeviceError(f"pyca's Cobblestone {what} gave {got + len(rest)} bytes, not {want}")
    b[got:want] = rest


class Sealing:
    """pyca's encryptor of one message sealing its chunks in order from chunk 0: its header
    (salt || commitment, the salt its random draw) and the chunk it seals next.  Once asked
    for another chunk it is spent: the Sealer's other paths seal every later one."""

    __slots__ = ("header", "_enc", "_next")

    def __init__(self, enc, header: bytes):
        self.header, self._enc, self._next = header, enc, 0

    @classmethod
    def made(cls, sch, key: bytes, context: bytes, length: int) -> Sealing | None:
        """The sequence for scheme ``sch`` under ``key`` and ``context``, its header ``length``
        bytes (another length is the engine's failure, never a sealed message); None where
        pyca has no encryptor."""
        enc = stream(sch, True, key, context)
        if enc is None:
            return None
        head = enc.update(b"")
        if len(head) != length:
            raise DeviceError(f"pyca's Cobblestone encryptor gave a header of {len(head)} bytes, "
                              f"not {length}")
        return cls(enc, head)

    def seal(self, first: int, src, n: int, final: bool, dst, need: int, chunk: int) -> bool:
        """Chunks from chunk ``first`` (the first ``n`` bytes of ``src``: whole chunks of
        ``chunk`` bytes, and with ``final`` the shorter last one) sealed into the first
        ``need`` bytes of ``dst``, where this sequence seals chunk ``first`` next; False where
        it does not."""
        enc, self._enc = self._enc, None
        if enc is None or self._next != first:
            return False
        with memoryview(src) as a, memoryview(dst) as b:
            _through(enc, a.cast("B")[:n], b.cast("B")[:need], final, need, "encryptor")
        if not final:
            self._enc, self._next = enc, first + n // chunk
        return True


def _decryptor(sch, key: bytes, context: bytes, header: bytes):
    """pyca's decryptor with ``header`` (salt || commitment) taken: the key commitment checked
    (False where it does not match), or None where pyca has none."""
    dec = stream(sch, False, key, context)
    if dec is None:
        return None
    try:
        dec.update_into(header, bytearray(0))
    except Exception as e:  # noqa: BLE001 - pyca's InvalidTag
        if _bad_tag(e):
            return False
        raise
    return dec


class Opening:
    """pyca's decryptor of one sealed message opening its chunks in order: the chunk it opens
    next, and what makes a new one from chunk 0 (the input key, context and header)."""

    __slots__ = ("_sch", "_made", "_dec", "_next")

    def __init__(self, sch, made: tuple, dec):
        self._sch, self._made, self._dec, self._next = sch, made, dec, 0

    @classmethod
    def made(cls, sch, key: bytes, context: bytes, header: bytes) -> Opening | None | bool:
        """The sequence for the message of ``header`` under ``key`` and ``context``, its key
        commitment checked (False where it does not match); None where pyca has no
        decryptor."""
        dec = _decryptor(sch, key, context, header)
        return dec if not dec else cls(sch, (key, context, header), dec)

    def open_(self, first: int, src, m: int, final: bool, dst, n: int, chunk: int, tag: int,
              keys) -> bool:
        """Sealed chunks from chunk ``first`` (the first ``m`` bytes of ``src``, of ``chunk`` +
        ``tag`` bytes each) opened into the first ``n`` bytes of ``dst``, read in order (a new
        decryptor from chunk 0), each chunk's plaintext written once its tag verified; False
        where this sequence does not open chunk ``first`` next.  A chunk that fails zeroes
        ``dst`` and is named (ChunkFailed), found again under ``keys()`` (the derived key and
        base nonce)."""
        dec, self._dec = self._dec, None
        if dec is None or self._next != first:
            dec = None if first else _decryptor(self._sch, *self._made)
            if not dec:
                return False
        name = self._sch.name
        with memoryview(src) as a, memoryview(dst) as b:
            a, b = a.cast("B")[:m], b.cast("B")[:n]
            try:
                _through(dec, a, b, final, n, "decryptor")
            except Exception as e:  # noqa: BLE001 - pyca's InvalidTag
                if not _bad_tag(e):
                    raise
                from ..engines.openssl import aead as ossl

                key, base = keys()
                bad = first + max(0, ossl.pyca_chunks(False, key, base, first, a, b, m, final,
                                                      chunk, tag))
                b[:] = bytes(n)
                raise errors.ChunkFailed(f"{name}: chunk {bad} does not verify (altered, "
                                         "reordered or from another message): nothing is "
                                         "released", bad) from None
        if not final:
            self._dec, self._next = dec, first + m // (chunk + tag)
        return True
