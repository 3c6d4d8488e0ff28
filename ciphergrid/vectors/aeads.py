"""Known-answer vectors of the AEADs: ``load(name)`` gives :class:`AEADVector` records.

The vectors are data, one file per AEAD family in ``vectors/aead/`` (``aes-gcm.json``), format
``"ciphergrid-aead-vectors 1"``, a JSON object:

``format``  ``"ciphergrid-aead-vectors 1"``.
``family``  the AEAD family (``"aes-gcm"``).
``groups``  one per source document: ``source`` (short name), ``document`` (the full citation),
    optionally ``note``, and ``vectors``, records with ``id`` (the place in the document),
    ``cipher`` (a name such as ``"aes-128-gcm"``), ``key``, ``nonce``, ``aad``, ``plaintext``,
    ``ciphertext``, ``tag``, optionally ``valid`` (default true; false: decryption must fail --
    the plaintext may then be absent) and ``note``.  A field set on the group is the default of
    its records.  Hex strings, or lists of hex strings joined in order (whitespace ignored).
``files``   sets of files of the ``cryptography_vectors`` package: ``document``, ``directory``,
    ``match`` (a regular expression the file name matches) and ``format``: ``nist-gcm`` (NIST CAVP
    ``gcmEncryptExtIV*.rsp`` / ``gcmDecrypt*.rsp``) or ``kv`` (``COUNT = ``-separated records of
    KEY/NONCE or IV/IN or Plaintext/AD or AAD/CT or Ciphertext/TAG/Result, as the package's
    ChaCha20Poly1305 files), with ``cipher`` naming the cipher of a ``kv`` set.

Unknown fields are an error.  Parsing happens once per process.  The files are read by the
package's one loader (vectors/__init__.py) as the kind :data:`AEADS`; what is theirs alone is
here: the record (:func:`_record`) and the two formats of file sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import VectorFileError, VectorKind, _hex, select, vectors_dir

__all__ = ["AEADVector", "AEADS", "load", "vectors_dir"]

FORMAT = "ciphergrid-aead-vectors 1"
_TOP = {"format", "family", "groups", "files"}
_RECORD = {"id", "cipher", "key", "nonce", "aad", "plaintext", "ciphertext", "tag", "valid", "note"}
_FILES = {"document", "directory", "match", "format", "cipher"}


@dataclass(frozen=True)
class AEADVector:
    cipher: str
    key: bytes
    nonce: bytes
    aad: bytes
    plaintext: bytes | None     # None for an invalid vector that gives none
    ciphertext: bytes
    tag: bytes
    valid: bool = True          # False: decryption must fail (InvalidTag)
    source: str = ""


def _record(r: dict, source: str, w: str):
    """The vector of an AEAD record."""
    valid = r.get("valid", True)
    if valid and "plaintext" not in r:
        raise VectorFileError(f"{w}: no 'plaintext'")
    pt = _hex(r["plaintext"], f"{w} plaintext") if "plaintext" in r else None
    ct = _hex(r["ciphertext"], f"{w} ciphertext")
    if pt is not None and len(pt) != len(ct):
        raise VectorFileError(f"{w}: plaintext and ciphertext differ in length")
    yield AEADVector(r["cipher"].strip().lower(), _hex(r["key"], f"{w} key"),
                     _hex(r["nonce"], f"{w} nonce"), _hex(r.get("aad", ""), f"{w} aad"),
                     pt, ct, _hex(r["tag"], f"{w} tag"), bool(valid), source)


def _read_nist_gcm(path: str, rel: str, cipher_of):
    """NIST CAVP GCM response files: [Keylen/IVlen/PTlen/AADlen/Taglen] sections of records."""
    rec: dict = {}

    def flush():
        if "Key" in rec and "Tag" in rec:
            key = bytes.fromhex(rec["Key"])
            yield AEADVector(cipher_of(len(key)), key, bytes.fromhex(rec["IV"]),
                             bytes.fromhex(rec.get("AAD", "")),
                             None if rec.get("FAIL") else bytes.fromhex(rec.get("PT", "")),
                             bytes.fromhex(rec.get("CT", "")), bytes.fromhex(rec["Tag"]),
                             not rec.get("FAIL"), f"{rel} #{rec.get('Count')}")

    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", "[")):
                continue
            if line == "FAIL":
                rec["FAIL"] = True
                continue
            k, _, v = line.partition("=")
            k, v = k.strip(), v.strip()
            if k == "Count":
                yield from flush()
                rec = {}
            rec[k] = v
    yield from flush()


def _kv_bytes(v: str) -> bytes:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] == '"':
        return v[1:-1].encode()
    return bytes.fromhex(v)


def _read_kv(path: str, rel: str, cipher: str):
    """COUNT-separated KEY=/NONCE=/IN=/AD=/CT=/TAG= records (quoted values are ASCII)."""
    names = {"key": "key", "nonce": "nonce", "iv": "nonce", "in": "pt", "plaintext": "pt",
             "ad": "aad", "aad": "aad", "ct": "ct", "ciphertext": "ct", "tag": "tag",
             "result": "result", "count": "count"}
    rec: dict = {}

    def flush():
        if "key" in rec and "tag" in rec:
            valid = "result" not in rec
            yield AEADVector(cipher, rec["key"], rec["nonce"], rec.get("aad", b""),
                             rec.get("pt") if valid else None, rec.get("ct", b""), rec["tag"],
                             valid, f"{rel} #{rec.get('count', b'').decode() or '?'}")

    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, _, v = line.partition("=")
            k = names.get(k.strip().lower())
            if k is None:
                continue
            if k == "count":
                yield from flush()
                rec = {"count": v.strip().encode()}
            elif k == "result":
                rec[k] = v.strip()
            else:
                rec[k] = _kv_bytes(v)
    yield from flush()


def _file_set(s: dict, doc: dict, where: str):
    """The reader of an AEAD's ``files`` set, by its format."""
    if s["format"] == "nist-gcm":
        from .. import aeads

        by_len = {v: k for k, v in aeads.family(doc["family"]).names.items()}
        return lambda path, rel: _read_nist_gcm(path, rel, by_len.__getitem__)
    if s["format"] == "kv":
        return lambda path, rel: _read_kv(path, rel, s["cipher"])
    raise VectorFileError(f"{where}: format {s['format']!r} is not nist-gcm or kv")


#: the AEADs' vector files (``aead/FAMILY.json``)
AEADS = VectorKind("aead", FORMAT, "family", frozenset(_TOP), frozenset(_RECORD),
                   ("id", "cipher", "key", "nonce", "ciphertext", "tag"), frozenset(_FILES),
                   _record, _file_set)


def load(cipher_name: str | None = None, *, files: bool = True) -> list[AEADVector]:
    """The AEAD vectors (of one cipher name); ``files=False``: only those written in the data
    files (not the large sets of the ``cryptography_vectors`` package)."""
    return select(AEADS, cipher_name, files)
