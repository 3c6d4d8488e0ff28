"""Reader of NIST CAVP response files (``.rsp``, and ``.txt`` files in the same layout), as shipped
in the ``cryptography_vectors`` package.

Which files are read, and as which cipher·mode, is data: the ``files`` section of each algorithm's
vector file (``aes.json``).  This module only knows the three record layouts:

* ``nist``: KEY, [IV], PLAINTEXT, CIPHERTEXT (AESAVS KAT/MMT files, the RFC 3686 AES-CTR file,
  and the same layout for other block ciphers), both ``[ENCRYPT]`` and ``[DECRYPT]`` sections;
  the TDES files (TDESVS) give the key as KEYs (one DES key used three times) or KEY1, KEY2, KEY3,
  read as the shortest key bundle that means the same (``tdes_key``);
* ``xts``: the XTSGen layout: Key (key1 || key2), DataUnitLen (bits), PT, CT, and the tweak either
  as ``i`` (a 128-bit hex string: the vector's iv) or as ``DataUnitSeqNumber`` (decimal: one data
  unit of sector mode).  Data units that are not whole bytes are skipped;
* ``mct``: AESAVS Monte Carlo records (KEY, [IV], PLAINTEXT, CIPHERTEXT; the first ``per_file``
  records of each section);
* ``ntt``: NTT's Camellia known-answer file (t_camelia.txt, shipped as ciphers/Camellia/
  camellia-{128,192,256}-ecb.txt): lines ``K No.001 : 00 11 ...`` each followed by its pairs
  ``P No.001 : ...`` / ``C No.001 : ...`` (ECB, one block each).

A record's cipher name is the registered name of (the file's algorithm, the set's mode, the key's
length); a record whose key length no registered name takes is skipped.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Iterator

PACKAGE = "cryptography_vectors"
FORMATS = ("nist", "xts", "mct", "ntt")


def package_dir() -> str | None:
    """Directory of the installed cryptography_vectors package, or None when not installed."""
    try:
        import cryptography_vectors
    except ImportError:
        return None
    return os.path.dirname(os.path.abspath(cryptography_vectors.__file__))


def _h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


def records(path: str) -> Iterator[tuple[str, dict[str, str]]]:
    """Yield (section, {FIELD: value}) for each record of a NIST .rsp/.txt vector file.

    Field names are upper-cased; sections are the bracketed lines ([ENCRYPT], [DECRYPT]).
    A record ends at a blank line, at a new section, or at the next COUNT line.
    """
    section = ""
    rec: dict[str, str] = {}
    with open(path, "r", encoding="ascii", errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                if rec:
                    yield section, rec
                    rec = {}
                continue
            if line.startswith("[") and line.endswith("]"):
                if rec:
                    yield section, rec
                    rec = {}
                section = line[1:-1].strip().upper()
                continue
            if "=" not in line:
                continue
            k, v = (p.strip() for p in line.split("=", 1))
            k = k.upper()
            if k == "COUNT" and rec:
                yield section, rec
                rec = {}
            rec[k] = v
    if rec:
        yield section, rec


def _source(rel: str, section: str, r: dict) -> str:
    return f"{PACKAGE}/{rel} [{section}] COUNT={r.get('COUNT', '?')}"


def tdes_key(r: dict[str, str]) -> bytes | None:
    """The key of a TDESVS record (KEYs, or KEY1 KEY2 KEY3) as the shortest bundle meaning the
    same: K for keying option 3 (one DES key three times: single DES), K1 K2 for option 2
    (K3 == K1: 2-key TDEA), K1 K2 K3 for option 1; None when the record has no such key."""
    if "KEYS" in r:
        return _h(r["KEYS"])
    if not {"KEY1", "KEY2", "KEY3"} <= r.keys():
        return None
    k1, k2, k3 = _h(r["KEY1"]), _h(r["KEY2"]), _h(r["KEY3"])
    if k1 == k2 == k3:
        return k1
    return k1 + k2 if k3 == k1 else k1 + k2 + k3


def read_nist(path: str, rel: str, name_of: Callable[[int], str | None], make) -> Iterator:
    """``nist`` layout: one ``make(cipher, key, iv, plaintext, ciphertext, source)`` per record."""
    for section, r in records(path):
        if not {"PLAINTEXT", "CIPHERTEXT"} <= r.keys():
            continue
        key = _h(r["KEY"]) if "KEY" in r else tdes_key(r)
        if key is None:
            continue
        name = name_of(len(key))
        if name is None:
            continue
        iv = _h(r["IV"]) if "IV" in r else None
        yield make(name, key, iv, _h(r["PLAINTEXT"]), _h(r["CIPHERTEXT"]), _source(rel, section, r))


def read_xts(path: str, rel: str, name_of: Callable[[int], str | None], make) -> Iterator:
    """``xts`` layout: ``make(cipher, key, iv, plaintext, ciphertext, source, sector_size,
    start_sector)`` per record whose data unit is whole bytes."""
    for section, r in records(path):
        if not {"KEY", "PT", "CT", "DATAUNITLEN"} <= r.keys():
            continue
        bits = int(r["DATAUNITLEN"])
        if bits % 8:
            continue
        key = _h(r["KEY"])
        name = name_of(len(key))
        if name is None:
            continue
        pt, ct = _h(r["PT"]), _h(r["CT"])
        if len(pt) * 8 != bits or len(ct) != len(pt):
            raise ValueError(f"{rel} COUNT={r.get('COUNT')}: DataUnitLen does not match PT/CT")
        src = _source(rel, section, r)
        if "DATAUNITSEQNUMBER" in r:
            yield make(name, key, None, pt, ct, src, len(pt), int(r["DATAUNITSEQNUMBER"]))
        elif "I" in r:
            yield make(name, key, _h(r["I"]), pt, ct, src, None, None)


def read_ntt(path: str, rel: str, name_of: Callable[[int], str | None], make) -> Iterator:
    """``ntt`` layout: one ``make(cipher, key, None, plaintext, ciphertext, source)`` per P/C pair,
    under the last K line before it."""
    key = name = plain = None
    with open(path, "r", encoding="ascii", errors="replace") as f:
        for raw in f:
            tag, sep, value = raw.partition(":")
            tag = tag.split()
            if not sep or len(tag) != 2 or tag[0] not in ("K", "P", "C"):
                continue
            data = _h(value)
            if tag[0] == "K":
                key, plain = data, None
                name = name_of(len(key))
            elif tag[0] == "P":
                plain = data
            elif name is not None and plain is not None:
                yield make(name, key, None, plain, data, f"{PACKAGE}/{rel} key {key.hex()} {tag[1]}")
                plain = None


def read_mct(path: str, rel: str, name_of: Callable[[int], str | None], make,
             per_file: int) -> Iterator:
    """``mct`` layout: ``make(cipher, key, iv, plaintext, ciphertext, encrypt, source)`` for the
    first ``per_file`` records of the [ENCRYPT] and of the [DECRYPT] section."""
    taken: dict[str, int] = {}
    for section, r in records(path):
        if section not in ("ENCRYPT", "DECRYPT") or not {"KEY", "PLAINTEXT", "CIPHERTEXT"} <= r.keys():
            continue
        if taken.get(section, 0) >= per_file:
            continue
        key = _h(r["KEY"])
        name = name_of(len(key))
        if name is None:
            continue
        taken[section] = taken.get(section, 0) + 1
        yield make(name, key, _h(r["IV"]) if "IV" in r else None, _h(r["PLAINTEXT"]),
                   _h(r["CIPHERTEXT"]), section == "ENCRYPT", _source(rel, section, r))


def files(base: str, directory: str, match: str) -> list[tuple[str, str]]:
    """(path, path relative to ``base``) of the files of ``base/directory`` whose name matches the
    regular expression ``match`` entirely, sorted by name; none when the directory is absent."""
    d = os.path.join(base, *directory.split("/"))
    if not os.path.isdir(d):
        return []
    pat = re.compile(match)
    return [(os.path.join(d, fn), f"{directory}/{fn}")
            for fn in sorted(os.listdir(d)) if pat.fullmatch(fn)]
