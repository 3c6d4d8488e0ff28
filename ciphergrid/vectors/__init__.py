"""Known-answer test vectors, for the test suite, ``ciphergrid selftest`` and the benchmark.

The vectors are data: one file per algorithm in this folder (``aes.json``), read by the loader
below.  A new cipher adds its file here, no code.  Each file holds

* vectors copied from the standards, grouped by the document they come from (for AES: FIPS 197
  Appendix C, NIST SP 800-38A Appendix F, IEEE 1619-2007 Annex B);
* Monte Carlo records (AESAVS);
* the official files of the ``cryptography_vectors`` package to read when it is installed
  (``pip install cryptography-vectors``): which folder, which file names, which record layout
  (``cavp.py`` reads them) and which mode.

``load(name)`` returns :class:`Vector` records; a vector is checked with one call::

    out = ciphergrid.encrypt(v.plaintext, v.cipher, v.key, v.iv,
                             sector_size=v.sector_size, start_sector=v.start_sector)
    assert out == v.ciphertext          # when v.encrypt_ok; decrypt likewise when v.decrypt_ok

Monte Carlo records (``load_mct``) need 1000 chained single-block calls each: ``run_mct``.
Parsing happens once per process (cached).

The vector file format (``ciphergrid-vectors 1``), a JSON object:

``format``
    ``"ciphergrid-vectors 1"``.
``algorithm``
    the algorithm's registry name (``"aes"``); names the cipher of the ``files`` records.
``groups``
    a list of groups, one per source document.  A group has ``source`` (a short name, e.g.
    ``"NIST SP 800-38A"``), ``document`` (the full citation: title, year, appendix or annex),
    optionally ``note``, and ``vectors``: a list of records.  Any record field set on the group
    is the default of its records (e.g. the plaintext that all of SP 800-38A's examples share).
    A record has ``id`` (its place in the document: ``"F.2.1/F.2.2"``, ``"Annex B vector 4"``),
    ``cipher`` (a registry name), ``key``, ``plaintext``, ``ciphertext``, optionally ``iv`` (IV,
    initial counter block, or XTS tweak), ``start_sector`` and ``sector_size`` (XTS sector mode:
    the data unit sequence number of the first unit, and the unit size; ``sector_size`` defaults
    to the whole plaintext, one data unit), and ``note``.  The vector's ``source`` is
    ``"<group source> <record id>"``.
``monte_carlo``
    groups as above whose records also have ``encrypt`` (true: 1000 chained encryptions from
    ``plaintext`` end at ``ciphertext``; false: 1000 chained decryptions from ``ciphertext`` end at
    ``plaintext``).
``files``
    sets of files of the ``cryptography_vectors`` package: ``document`` (what they are),
    ``directory`` (relative to the package), ``match`` (a regular expression the whole file name
    matches), ``format`` (``nist``, ``xts``, ``mct`` or ``ntt``: see ``cavp.py``) and ``mode``.

Values: byte strings are hex, either one string or a list of strings joined in order; whitespace
inside is ignored (the files write 16-byte blocks apart).  Integers (``start_sector``,
``sector_size``) are JSON numbers or strings such as ``"0x3333333333"``.  Unknown fields are an
error, so that a misspelt field cannot drop a value silently.

The AEADs' files (``aead/FAMILY.json``, vectors/aeads.py) are read by the same loader: a
:class:`VectorKind` names what tells the two kinds of file apart (their folder, format, the field
naming what their vectors are of, their record fields, how a record and a file set are read).

Derived, not written in the files: a record in sector mode whose plaintext is one data unit is
also given as a vector with the tweak as ``iv`` (LE128(start_sector), the tweak that unit takes),
and a key the mode refuses for encryption (XTS with key1 == key2) makes a decryption-only vector.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable, Iterable, Iterator

from . import cavp

__all__ = [
    "Vector",
    "MCTVector",
    "VectorKind",
    "load",
    "names_with_vectors",
    "vectors_dir",
    "load_mct",
    "run_mct",
    "verify_reference",
    "data_files",
]

FORMAT = "ciphergrid-vectors 1"


@dataclass(frozen=True)
class Vector:
    cipher: str                  # registry name, e.g. "aes-256-xts"
    key: bytes                   # XTS: key1 || key2
    iv: bytes | None             # IV / initial counter block / XTS tweak; None for ECB and XTS sector mode
    plaintext: bytes
    ciphertext: bytes
    encrypt_ok: bool = True      # may be checked by encryption (False for XTS with key1 == key2)
    decrypt_ok: bool = True      # may be checked by decryption
    sector_size: int | None = None    # XTS sector mode (data unit size in bytes)
    start_sector: int | None = None   # XTS sector mode (first data unit sequence number)
    source: str = ""

    def call_kwargs(self) -> dict:
        """Keyword arguments for ``ciphergrid.encrypt``/``decrypt`` besides data, cipher, key."""
        kw: dict = {"iv": self.iv}
        if self.sector_size is not None:
            kw["sector_size"] = self.sector_size
            kw["start_sector"] = self.start_sector
        return kw


@dataclass(frozen=True)
class MCTVector:
    """One record of an AESAVS Monte Carlo file (one outer iteration = 1000 chained blocks).

    ``encrypt=True``: 1000 chained encryptions starting from ``plaintext`` end at ``ciphertext``.
    ``encrypt=False``: 1000 chained decryptions starting from ``ciphertext`` end at ``plaintext``.
    """

    cipher: str                  # "aes-128-ecb", "aes-256-cbc", ...
    key: bytes
    iv: bytes | None
    plaintext: bytes
    ciphertext: bytes
    encrypt: bool
    source: str = ""


# --------------------------------------------------------------------------- the data files

_RECORD_FIELDS = {"id", "cipher", "key", "iv", "plaintext", "ciphertext", "sector_size",
                  "start_sector", "note"}
_MCT_FIELDS = {"id", "cipher", "key", "iv", "plaintext", "ciphertext", "encrypt", "note"}
_GROUP_FIELDS = {"source", "document", "note", "vectors"}
_FILE_SET_FIELDS = {"document", "directory", "match", "format", "mode"}
_TOP_FIELDS = {"format", "algorithm", "groups", "monte_carlo", "files"}


class VectorFileError(ValueError):
    """A vector data file does not follow the format."""


@dataclass(frozen=True)
class VectorKind:
    """What tells one kind of vector file from another (the block ciphers': :data:`BLOCKS`; the
    AEADs': vectors/aeads.py's ``AEADS``); the loader (``_read``, ``records``, ``_all``,
    ``select``) is one for both."""

    folder: str                  # under this package ("": this folder)
    format: str                  # the files' "format"
    naming: str                  # the field naming what a file's vectors are of ("algorithm")
    top: frozenset               # a file's fields
    fields: frozenset            # a record's fields
    required: tuple              # a record's required fields (on it or on its group)
    file_fields: frozenset       # a ``files`` set's fields
    #: (record merged over its group, source, where) -> the record's vectors
    record: Callable = field(compare=False)
    #: (file set, the file's document, where) -> the set's reader ((path, rel) -> its vectors),
    #: or None for a set this kind's vectors do not read; raises VectorFileError for a bad set
    file_set: Callable = field(compare=False)

    def where(self, fname: str) -> str:
        """The file's name in an error message (``aead/aes-gcm.json``)."""
        return f"{self.folder}/{fname}" if self.folder else fname


def data_files(kind: VectorKind | None = None) -> list[str]:
    """Names of the vector data files of ``kind`` (default: the block ciphers': ``aes.json``,
    ...), sorted."""
    folder = resources.files(__name__)
    if kind is not None and kind.folder:
        folder = folder.joinpath(kind.folder)
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".json") and p.is_file())


@functools.lru_cache(maxsize=None)
def _read(kind: VectorKind, fname: str) -> dict:
    where = kind.where(fname)
    text = resources.files(__name__).joinpath(where).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise VectorFileError(f"{where}: not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != kind.format:
        raise VectorFileError(f"{where}: \"format\" must be {kind.format!r}")
    _no_unknown(doc, kind.top, where)
    if not isinstance(doc.get(kind.naming), str):
        raise VectorFileError(f"{where}: \"{kind.naming}\" (the name of what its vectors are "
                              "of, such as \"aes\") is missing")
    return doc


def _no_unknown(obj: dict, allowed: set, where: str) -> None:
    extra = set(obj) - allowed
    if extra:
        raise VectorFileError(f"{where}: unknown field(s) {sorted(extra)}")


def _hex(value, where: str) -> bytes:
    parts = [value] if isinstance(value, str) else value
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise VectorFileError(f"{where}: expected a hex string or a list of hex strings")
    try:
        return bytes.fromhex("".join("".join(parts).split()))
    except ValueError:
        raise VectorFileError(f"{where}: not hex") from None


def _int(value, where: str) -> int:
    if isinstance(value, bool):
        raise VectorFileError(f"{where}: expected an integer")
    if isinstance(value, int):
        return value
    try:
        return int(value, 0)
    except (TypeError, ValueError):
        raise VectorFileError(f"{where}: expected an integer") from None


def group_records(groups: list, where: str, fields: set,
                  required: tuple) -> Iterator[tuple[dict, str, str]]:
    """(record merged over its group's defaults, source, where) of each record of a list of
    groups (``source``, ``document``, ``note``, ``vectors`` + defaults of the record ``fields``);
    every record must end up with the ``required`` fields.  Shared by the block ciphers' and the
    AEADs' (vectors/aeads.py) files."""
    for gi, group in enumerate(groups):
        gwhere = f"{where}[{gi}]"
        _no_unknown(group, _GROUP_FIELDS | (fields - {"id", "note"}), gwhere)
        for need in ("source", "document", "vectors"):
            if need not in group:
                raise VectorFileError(f"{gwhere}: no {need!r}")
        defaults = {k: v for k, v in group.items() if k not in _GROUP_FIELDS}
        for ri, rec in enumerate(group["vectors"]):
            rwhere = f"{gwhere} vector {rec.get('id', ri)!r}"
            _no_unknown(rec, fields, rwhere)
            merged = {**defaults, **rec}
            for need in required:
                if need not in merged:
                    raise VectorFileError(f"{rwhere}: no {need!r}")
            yield merged, f"{group['source']} {merged['id']}", rwhere


def records(kind: VectorKind, fname: str, section: str = "groups",
            fields: set | None = None) -> Iterator[tuple[dict, str, str]]:
    """group_records of a section of a vector file of ``kind`` (its record fields, unless
    ``fields``)."""
    yield from group_records(_read(kind, fname).get(section, []),
                             f"{kind.where(fname)} {section}",
                             kind.fields if fields is None else fields, kind.required)


def _file_sets(kind: VectorKind, fname: str) -> Iterator[tuple[dict, dict, str]]:
    """(set, the file's document, where) of each ``files`` set of a vector file of ``kind``."""
    doc = _read(kind, fname)
    for i, s in enumerate(doc.get("files", [])):
        where = f"{kind.where(fname)} files[{i}]"
        _no_unknown(s, kind.file_fields, where)
        yield s, doc, where


@functools.lru_cache(maxsize=None)
def _all(kind: VectorKind, with_files: bool = True) -> tuple:
    """Every vector of ``kind``: its data files' records, then (``with_files``, where the
    cryptography_vectors package is installed) the package's files they name."""
    out: list = []
    for fname in data_files(kind):
        for r, source, where in records(kind, fname):
            out.extend(kind.record(r, source, where))
    base = vectors_dir() if with_files else None
    if base is not None:
        for fname in data_files(kind):
            for s, doc, where in _file_sets(kind, fname):
                read = kind.file_set(s, doc, where)
                if read is not None:
                    for path, rel in cavp.files(base, s["directory"], s["match"]):
                        out.extend(read(path, rel))
    return tuple(out)


def select(kind: VectorKind, cipher_name: str | None = None, files: bool = True) -> list:
    """The vectors of ``kind`` (of one cipher name); ``files=False``: only those written in the
    data files."""
    vs = _all(kind, bool(files))
    if cipher_name is None:
        return list(vs)
    n = _norm(cipher_name)
    return [v for v in vs if v.cipher == n]


def _encrypt_ok(cipher: str, key: bytes) -> bool:
    """False when the mode refuses this key for encryption (XTS: key1 == key2)."""
    from .. import registry
    from ..errors import Error, InvalidKey

    try:
        spec = registry.lookup(cipher)
    except Error:
        return True  # not registered: test_kat reports the name
    try:
        spec.mode.check_key(spec, key, True)
    except InvalidKey:
        return False
    return True


def _block_record(r: dict, source: str, where: str) -> Iterator[Vector]:
    """The vectors of a block cipher's record (sector mode: two, see the module docstring)."""
    name = r["cipher"].strip().lower()
    key = _hex(r["key"], f"{where} key")
    pt = _hex(r["plaintext"], f"{where} plaintext")
    ct = _hex(r["ciphertext"], f"{where} ciphertext")
    iv = _hex(r["iv"], f"{where} iv") if "iv" in r else None
    if len(pt) != len(ct):
        raise VectorFileError(f"{where}: plaintext and ciphertext differ in length")
    enc_ok = _encrypt_ok(name, key)
    if "start_sector" not in r:
        if "sector_size" in r:
            raise VectorFileError(f"{where}: sector_size without start_sector")
        yield Vector(name, key, iv, pt, ct, encrypt_ok=enc_ok, source=source)
        return
    if iv is not None:
        raise VectorFileError(f"{where}: start_sector (sector mode) takes no iv")
    start = _int(r["start_sector"], f"{where} start_sector")
    size = _int(r.get("sector_size", len(pt)), f"{where} sector_size")
    if size == len(pt):
        # one data unit: the same vector with its tweak given explicitly ...
        yield Vector(name, key, start.to_bytes(16, "little"), pt, ct, encrypt_ok=enc_ok,
                     source=source + " (tweak as iv)")
    # ... and as sector mode
    yield Vector(name, key, None, pt, ct, encrypt_ok=enc_ok, sector_size=size,
                 start_sector=start, source=source + " (sector mode)")


def _mct_from_data(fname: str) -> Iterator[MCTVector]:
    for r, source, where in records(BLOCKS, fname, "monte_carlo", _MCT_FIELDS):
        if not isinstance(r.get("encrypt"), bool):
            raise VectorFileError(f"{where}: \"encrypt\" (true or false) is missing")
        yield MCTVector(r["cipher"].strip().lower(), _hex(r["key"], f"{where} key"),
                        _hex(r["iv"], f"{where} iv") if "iv" in r else None,
                        _hex(r["plaintext"], f"{where} plaintext"),
                        _hex(r["ciphertext"], f"{where} ciphertext"), r["encrypt"], source=source)


# --------------------------------------------------------------------------- cryptography_vectors

def vectors_dir() -> str | None:
    """Directory of the installed cryptography_vectors package, or None when not installed."""
    return cavp.package_dir()


def _block_set(s: dict, where: str) -> str:
    """A block cipher's ``files`` set checked; its format."""
    if set(s) != _FILE_SET_FIELDS:
        raise VectorFileError(f"{where}: needs {sorted(_FILE_SET_FIELDS - set(s))}")
    if s["format"] not in cavp.FORMATS:
        raise VectorFileError(f"{where}: format {s['format']!r} is not one of {cavp.FORMATS}")
    return s["format"]


def _namer(algorithm: str, mode: str) -> Callable[[int], str | None]:
    from .. import registry

    # every length a name takes (CAST5: one name for 5- to 16-byte keys)
    by_len = {n: spec.name for spec in registry.specs()
              if spec.algorithm.name == algorithm and spec.mode.name == mode
              for n in spec.key_lens}
    return by_len.get


def _block_file_set(s: dict, doc: dict, where: str):
    """The reader of a block cipher's ``files`` set of known-answer records (a Monte Carlo set:
    None, ``load_mct`` reads those)."""
    fmt = _block_set(s, where)
    if fmt == "mct":
        return None
    name_of = _namer(doc["algorithm"], s["mode"])

    def block(name, key, iv, pt, ct, src):
        return Vector(name, key, iv, pt, ct, source=src)

    def xts(name, key, iv, pt, ct, src, sector_size, start_sector):
        return Vector(name, key, iv, pt, ct, encrypt_ok=_encrypt_ok(name, key),
                      sector_size=sector_size, start_sector=start_sector, source=src)

    if fmt == "xts":
        return lambda path, rel: cavp.read_xts(path, rel, name_of, xts)
    read = cavp.read_nist if fmt == "nist" else cavp.read_ntt
    return lambda path, rel: read(path, rel, name_of, block)


#: the block ciphers' vector files (this folder's ``NAME.json``)
BLOCKS = VectorKind("", FORMAT, "algorithm", frozenset(_TOP_FIELDS), frozenset(_RECORD_FIELDS),
                    ("id", "cipher", "key", "plaintext", "ciphertext"),
                    frozenset(_FILE_SET_FIELDS), _block_record, _block_file_set)


def _norm(name: str) -> str:
    return name.strip().lower()


def load(cipher_name: str | None = None) -> list[Vector]:
    """All known-answer vectors, or those of one cipher name ("aes-128-cbc")."""
    return select(BLOCKS, cipher_name)


def names_with_vectors() -> list[str]:
    """Sorted cipher names that have at least one vector."""
    return sorted({v.cipher for v in _all(BLOCKS)})


# --------------------------------------------------------------------------- Monte Carlo (AESAVS)

@functools.lru_cache(maxsize=None)
def _all_mct(per_file: int) -> tuple[MCTVector, ...]:
    out: list[MCTVector] = []
    for fname in data_files():
        out.extend(_mct_from_data(fname))
    base = vectors_dir()
    if base is None:
        return tuple(out)

    def make(name, key, iv, pt, ct, encrypt, src):
        return MCTVector(name, key, iv, pt, ct, encrypt, source=src)

    for fname in data_files():
        for s, doc, where in _file_sets(BLOCKS, fname):
            if _block_set(s, where) == "mct":
                name_of = _namer(doc["algorithm"], s["mode"])
                for path, rel in cavp.files(base, s["directory"], s["match"]):
                    out.extend(cavp.read_mct(path, rel, name_of, make, per_file))
    return tuple(out)


def load_mct(cipher_name: str | None = None, per_file: int = 2) -> list[MCTVector]:
    """Monte Carlo records: those of the data files plus the first ``per_file`` records of each
    section of every Monte Carlo file the data files name in cryptography_vectors."""
    vs = _all_mct(per_file)
    if cipher_name is None:
        return list(vs)
    n = _norm(cipher_name)
    return [v for v in vs if v.cipher == n]


def run_mct(v: MCTVector, op: Callable[..., bytes] | None = None, *, device: str = "auto",
            inner: int = 1000) -> bytes:
    """Run the inner loop of one AESAVS Monte Carlo record (AESAVS sections 6.4.1-6.4.4) and
    return its result (``v.ciphertext`` expected when ``v.encrypt``, else ``v.plaintext``).

    ``op(data, cipher, key, iv, encrypt)`` does one single-block operation; by default
    ``ciphergrid.encrypt``/``decrypt`` on ``device``.  Every step is one call (the chain is
    sequential), so this is 1000 calls per record.
    """
    if op is None:
        import ciphergrid

        def op(data, cipher, key, iv, encrypt):  # noqa: F811 - default op
            f = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
            return bytes(f(data, cipher, key, iv, device=device))

    mode = v.cipher.rsplit("-", 1)[1]
    text = v.plaintext if v.encrypt else v.ciphertext
    if mode == "ecb":
        for _ in range(inner):
            text = op(text, v.cipher, v.key, None, v.encrypt)
        return text
    if mode != "cbc":
        raise ValueError(f"no Monte Carlo procedure for {v.cipher}")
    # CBC: out[j] = CBC(key, iv = IV if j == 0 else out[j-1] (enc) / in[j-1] (dec), in[j]);
    # in[j+1] = IV if j == 0 else out[j-1].  With the chaining value passed as the IV of a
    # one-block CBC call this is exactly the AESAVS procedure for both directions.
    assert v.iv is not None
    cur_in, prev_out, chain = text, v.iv, v.iv
    out = b""
    for j in range(inner):
        out = op(cur_in, v.cipher, v.key, chain, v.encrypt)
        nxt = v.iv if j == 0 else prev_out
        chain = out if v.encrypt else cur_in
        prev_out, cur_in = out, nxt
    return out


def verify_reference(vs: Iterable[Vector]) -> list[str]:
    """Check vectors against the oracle (``ciphergrid.testing.oracle``: pyca/cryptography, i.e.
    OpenSSL, where it has the cipher·mode); return descriptions of mismatches.

    Used by the test suite to check the vectors and this loader themselves."""
    from ..testing import oracle

    bad = []
    for v in vs:
        kw = v.call_kwargs()
        iv = kw.pop("iv")
        for enc, ok, src, want in ((True, v.encrypt_ok, v.plaintext, v.ciphertext),
                                   (False, v.decrypt_ok, v.ciphertext, v.plaintext)):
            if not ok:
                continue
            what = "encryption" if enc else "decryption"
            try:
                got = oracle.crypt(v.cipher, v.key, iv, src, enc, **kw)
            except oracle.Unavailable as e:
                bad.append(f"{v.source}: no reference for {what} ({e})")
                continue
            if got != want:
                bad.append(f"{v.source}: {what} mismatch")
    return bad
