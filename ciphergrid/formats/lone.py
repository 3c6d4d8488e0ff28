"""A lone worker's chunks of a sealed message (formats/cobblestone.py) through pyca's own
Cobblestone encryptor and decryptor: their chunk loop in Rust, in pyca's own OpenSSL, no Python
per chunk.  A lone worker is one thread that seals or opens a message in order from its first
chunk (the command line on one core, a stream decryptor); where pyca has no Cobblestone classes
(an older ``cryptography``) none of this applies and OpenSSL's C loop runs the chunks.

Nothing here loads the system's libcrypto or the OpenSSL engine: only a chunk that fails to open
is found again (chunk by chunk, engines/openssl/aead.py ``_pyca_chunks``) to name it.
"""

from __future__ import annotations

from .. import errors
from ..errors import DeviceError


def stream(sch, encrypt: bool, key: bytes, context: bytes):
    """pyca's ``Cobblestone{128,256}{Encryptor,Decryptor}`` for scheme ``sch`` (a key of its
    length), or None where this ``cryptography`` has none."""
    try:
        from cryptography import cobblestone as pyca
    except ImportError:
        return None
    name = f"Cobblestone{256 if sch.key_len == 32 else 128}{'Encryptor' if encrypt else 'Decryptor'}"
    made = getattr(pyca, name, None)
    return None if made is None else made(key, context)


def header(enc, length: int) -> bytes:
    """pyca's encryptor ``enc``'s header (salt || commitment: the salt its random draw), which
    must be ``length`` bytes: another length is the engine's failure, never a sealed message."""
    head = enc.update(b"")
    if len(head) != length:
        raise DeviceError(f"pyca's Cobblestone encryptor gave a header of {len(head)} bytes, "
                          f"not {length}")
    return head


def opener(sch, key: bytes, context: bytes, header: bytes):
    """pyca's decryptor with ``header`` (salt || commitment) taken: the key commitment checked
    (False where it does not match), or None where pyca has none."""
    dec = stream(sch, False, key, context)
    if dec is None:
        return None
    try:
        dec.update_into(header, bytearray(0))
    except Exception as e:  # noqa: BLE001 - pyca's InvalidTag, its module imported only here
        from cryptography.exceptions import InvalidTag as _Bad

        if isinstance(e, _Bad):
            return False
        raise
    return dec


def seal(s, first: int, src, n: int, final: bool, dst, need: int, chunk: int) -> bool:
    """Sealer ``s``'s chunks from chunk ``first`` (the first ``n`` bytes of ``src``: whole chunks
    of ``chunk`` bytes, and with ``final`` the shorter last one) into the first ``need`` bytes of
    ``dst`` through its pyca encryptor, where that seals chunk ``first`` next; False where it
    does not (the Sealer's other paths then run every later chunk)."""
    seq, s._seq = s._seq, None
    if seq is None or seq[1] != first:
        return False
    enc = seq[0]
    with memoryview(src) as a, memoryview(dst) as b:
        a, b = a.cast("B")[:n], b.cast("B")[:need]
        got = enc.update_into(a, b)
        if final:
            rest = enc.finalize()
            b[got:got + len(rest)] = rest
            got += len(rest)
    if got != need:   # (not the bytes the format says: the engine failed)
        raise DeviceError(f"pyca's Cobblestone encryptor sealed {got} bytes, not {need}")
    if not final:
        s._seq = (enc, first + n // chunk)
    return True


def open_(op, first: int, src, m: int, final: bool, dst, n: int, chunk: int, tag: int) -> bool:
    """Opener ``op``'s sealed chunks from chunk ``first`` (the first ``m`` bytes of ``src``, of
    ``chunk`` + ``tag`` bytes each) opened into the first ``n`` bytes of ``dst`` by its pyca
    decryptor, read in order (a new one from chunk 0), each chunk's plaintext written once its
    tag verified; False where it does not apply (another position, no such decryptor).  A
    chunk that fails zeroes ``dst`` and is named (ChunkFailed)."""
    seq, op._seq = op._seq, None
    if seq is None or seq[1] != first:
        dec = None if first else opener(op.sch, *op._made)
        if not dec:
            return False
        seq = (dec, 0)
    dec, name = seq[0], op.sch.name
    with memoryview(src) as a, memoryview(dst) as b:
        a, b = a.cast("B")[:m], b.cast("B")[:n]
        try:
            got = dec.update_into(a, b)
            if final:
                rest = dec.finalize()
                b[got:got + len(rest)] = rest
                got += len(rest)
        except Exception as e:  # noqa: BLE001 - pyca's InvalidTag, its module imported only here
            from cryptography.exceptions import InvalidTag as _Bad

            if not isinstance(e, _Bad):
                raise
            from ..engines.openssl import aead as ossl

            bad = first + max(0, ossl._pyca_chunks(False, op.key, op.base, first, a, b, m, final,
                                                   chunk, tag))
            b[:] = bytes(n)
            raise errors.ChunkFailed(f"{name}: chunk {bad} does not verify (altered, reordered or "
                                     "from another message): nothing is released", bad) from None
    if got != n:   # (not the bytes the format says: never released)
        raise errors.InvalidTag(f"{name}: the sealed chunks opened to {got} bytes, not {n}")
    if not final:
        op._seq = (dec, first + m // (chunk + tag))
    return True
