"""Known-answer test vectors, for the test suite, ``ciphergrid selftest`` and the benchmark.

Two sources:

* vectors embedded here (each block names the document it is copied from):
  NIST SP 800-38A Appendix F (ECB, CBC, CTR for AES-128/192/256), IEEE 1619-2007 Annex B
  (XTS-AES) and the first record of two NIST CAVP AESAVS Monte Carlo files;
* the official files shipped in the ``cryptography_vectors`` package, when it is installed
  (``pip install cryptography-vectors``): NIST CAVP AESAVS KAT/MMT files for ECB and CBC
  (GFSbox, KeySbox, VarKey, VarTxt, MMT; both the ``[ENCRYPT]`` and ``[DECRYPT]`` sections),
  the AES-CTR files (RFC 3686 test vectors) and the NIST XTSGen files (tweak given as a
  128-bit hex string, and tweak given as a data unit sequence number).  AESAVS Monte Carlo
  files (``*MCT*.rsp``) are picked up too if a version of the package ships them.

``load(name)`` returns :class:`Vector` records; a vector is checked with one call::

    out = ciphergrid.encrypt(v.plaintext, v.cipher, v.key, v.iv,
                             sector_size=v.sector_size, start_sector=v.start_sector)
    assert out == v.ciphertext          # when v.encrypt_ok; decrypt likewise when v.decrypt_ok

Monte Carlo records (``load_mct``) need 1000 chained single-block calls each: ``run_mct``.
Parsing happens once per process (cached).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

__all__ = [
    "Vector",
    "MCTVector",
    "load",
    "names_with_vectors",
    "vectors_dir",
    "load_mct",
    "run_mct",
]


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


# --------------------------------------------------------------------------- embedded vectors

def _h(s: str) -> bytes:
    return bytes.fromhex("".join(s.split()))


# NIST SP 800-38A (2001), "Recommendation for Block Cipher Modes of Operation", Appendix F:
# F.1.1-F.1.6 (ECB), F.2.1-F.2.6 (CBC), F.5.1-F.5.6 (CTR).  The same four-block plaintext is
# used throughout; the encryption and decryption examples of each pair are the same data.
_SP800_38A_PT = _h(
    "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710"
)
_SP800_38A_KEYS = {
    128: _h("2b7e151628aed2a6abf7158809cf4f3c"),
    192: _h("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b"),
    256: _h("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"),
}
_SP800_38A_CBC_IV = _h("000102030405060708090a0b0c0d0e0f")
_SP800_38A_CTR_IV = _h("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
_SP800_38A = [
    # (section, mode, key bits, ciphertext)
    ("F.1.1/F.1.2", "ecb", 128,
     "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf"
     "43b1cd7f598ece23881b00e3ed030688 7b0c785e27e8ad3f8223207104725dd4"),
    ("F.1.3/F.1.4", "ecb", 192,
     "bd334f1d6e45f25ff712a214571fa5cc 974104846d0ad3ad7734ecb3ecee4eef"
     "ef7afd2270e2e60adce0ba2face6444e 9a4b41ba738d6c72fb16691603c18e0e"),
    ("F.1.5/F.1.6", "ecb", 256,
     "f3eed1bdb5d2a03c064b5a7e3db181f8 591ccb10d410ed26dc5ba74a31362870"
     "b6ed21b99ca6f4f9f153e7b1beafed1d 23304b7a39f9f3ff067d8d8f9e24ecc7"),
    ("F.2.1/F.2.2", "cbc", 128,
     "7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2"
     "73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7"),
    ("F.2.3/F.2.4", "cbc", 192,
     "4f021db243bc633d7178183a9fa071e8 b4d9ada9ad7dedf4e5e738763f69145a"
     "571b242012fb7ae07fa9baac3df102e0 08b0e27988598881d920a9e64f5615cd"),
    ("F.2.5/F.2.6", "cbc", 256,
     "f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d"
     "39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b"),
    ("F.5.1/F.5.2", "ctr", 128,
     "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff"
     "5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee"),
    ("F.5.3/F.5.4", "ctr", 192,
     "1abc932417521ca24f2b0459fe7e6e0b 090339ec0aa6faefd5ccc2c6f4ce8e94"
     "1e36b26bd1ebc670d1bd1d665620abf7 4f78a7f6d29809585a97daec58c6b050"),
    ("F.5.5/F.5.6", "ctr", 256,
     "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5"
     "2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6"),
]

# IEEE Std 1619-2007, "Standard for Cryptographic Protection of Data on Block-Oriented Storage
# Devices", Annex B (XTS-AES test vectors; SP 800-38E adopts them).  (vector, key1||key2, data
# unit sequence number, plaintext, ciphertext).  The tweak is the sequence number as a 128-bit
# little-endian integer.  Vector 1 has key1 == key2: OpenSSL (and ciphergrid) refuse that key for
# encryption, so it is a decryption-only vector.
_PATTERN_512 = bytes(range(256)) * 2
_IEEE1619_K15 = "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0 bfbebdbcbbbab9b8b7b6b5b4b3b2b1b0"
_IEEE1619 = [
    (1, "00000000000000000000000000000000 00000000000000000000000000000000", 0,
     bytes(32),
     "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e"),
    (2, "11111111111111111111111111111111 22222222222222222222222222222222", 0x3333333333,
     b"\x44" * 32,
     "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0"),
    (3, "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0 22222222222222222222222222222222", 0x3333333333,
     b"\x44" * 32,
     "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89"),
    (4, "27182818284590452353602874713526 31415926535897932384626433832795", 0,
     _PATTERN_512,
     "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89c"
     "c78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412"
     "328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce"
     "93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad0265"
     "5ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8"
     "a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f434"
     "1332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c"
     "5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e"
     "94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc"
     "1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3"
     "e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56fd344"
     "b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd"
     "74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752"
     "afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb609ef4f79c203e"
     "bb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18d"
     "eb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568"),
    (10, "27182818284590452353602874713526 62497757247093699959574966967627"
         "31415926535897932384626433832795 02884197169399375105820974944592", 0xFF,
     _PATTERN_512,
     "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"
     "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd"
     "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
     "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca"
     "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0"
     "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
     "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec"
     "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a"
     "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
     "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae"
     "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29"
     "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
     "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f"
     "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385"
     "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
     "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"),
    # vectors 15-18: data units of 17-20 bytes (ciphertext stealing).  The standard prints the
    # sequence number as the tweak bytes "9a78563412" (little-endian), i.e. 0x123456789a.
    (15, _IEEE1619_K15, 0x123456789A, bytes(range(17)), "6c1625db4671522d3d7599601de7ca09ed"),
    (16, _IEEE1619_K15, 0x123456789A, bytes(range(18)), "d069444b7a7e0cab09e24447d24deb1fedbf"),
    (17, _IEEE1619_K15, 0x123456789A, bytes(range(19)), "e5df1351c0544ba1350b3363cd8ef4beedbf9d"),
    (18, _IEEE1619_K15, 0x123456789A, bytes(range(20)), "9d84c813f719aa2c7be3f66171c7c5c2edbf9dac"),
]

# NIST CAVP AESAVS Monte Carlo test files (aesmct.zip, "CAVS 11.1"): the COUNT = 0 record of the
# [ENCRYPT] section of ECBMCT128.rsp and of CBCMCT128.rsp.  cryptography_vectors ships no MCT
# files; when it does, load_mct() also reads them.
_AESAVS_MCT = [
    ("ECBMCT128.rsp [ENCRYPT] COUNT=0", "aes-128-ecb",
     "139a35422f1d61de3c91787fe0507afd", None,
     "b9145a768b7dc489a096b546f43b231f", "d7c3ffac9031238650901e157364c386"),
    ("CBCMCT128.rsp [ENCRYPT] COUNT=0", "aes-128-cbc",
     "8809e7dd3a959ee5d8dbb13f501f2274", "e5c0bb535d7d54572ad06d170a0e58ae",
     "1fd4ee65603e6130cfc2a82ab3d56c24", "b127a5b4c4692d87483db0c3b0d11e64"),
]


def _embedded() -> Iterator[Vector]:
    for section, mode, bits, ct in _SP800_38A:
        iv = {"ecb": None, "cbc": _SP800_38A_CBC_IV, "ctr": _SP800_38A_CTR_IV}[mode]
        yield Vector(f"aes-{bits}-{mode}", _SP800_38A_KEYS[bits], iv, _SP800_38A_PT, _h(ct),
                     source=f"NIST SP 800-38A {section}")
    for num, key_hex, seq, pt, ct_hex in _IEEE1619:
        key = _h(key_hex)
        half = len(key) // 2
        name = f"aes-{8 * half}-xts"
        enc_ok = key[:half] != key[half:]
        ct = _h(ct_hex)
        src = f"IEEE 1619-2007 Annex B vector {num}"
        # as a single data unit with the tweak given explicitly ...
        yield Vector(name, key, seq.to_bytes(16, "little"), pt, ct, encrypt_ok=enc_ok,
                     source=src + " (tweak as iv)")
        # ... and as one sector of sector mode
        yield Vector(name, key, None, pt, ct, encrypt_ok=enc_ok, sector_size=len(pt),
                     start_sector=seq, source=src + " (sector mode)")


# --------------------------------------------------------------------------- cryptography_vectors

def vectors_dir() -> str | None:
    """Directory of the installed cryptography_vectors package, or None when not installed."""
    try:
        import cryptography_vectors
    except ImportError:
        return None
    return os.path.dirname(os.path.abspath(cryptography_vectors.__file__))


def _records(path: str) -> Iterator[tuple[str, dict[str, str]]]:
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


def _nist_block_file(base: str, rel: str, mode: str) -> Iterator[Vector]:
    """AESAVS KAT/MMT files (ECB, CBC) and the AES-CTR files: KEY, [IV], PLAINTEXT, CIPHERTEXT."""
    for section, r in _records(os.path.join(base, rel)):
        if not {"KEY", "PLAINTEXT", "CIPHERTEXT"} <= r.keys():
            continue
        key = _h(r["KEY"])
        iv = _h(r["IV"]) if "IV" in r else None
        yield Vector(
            f"aes-{8 * len(key)}-{mode}", key, iv, _h(r["PLAINTEXT"]), _h(r["CIPHERTEXT"]),
            source=f"cryptography_vectors/{rel} [{section}] COUNT={r.get('COUNT', '?')}",
        )


def _nist_xts_file(base: str, rel: str, by_seqno: bool) -> Iterator[Vector]:
    """NIST XTSGen files: Key (key1||key2), DataUnitLen (bits), i (hex tweak) or
    DataUnitSeqNumber (decimal), PT, CT.  Data units that are not whole bytes are skipped."""
    for section, r in _records(os.path.join(base, rel)):
        if not {"KEY", "PT", "CT", "DATAUNITLEN"} <= r.keys():
            continue
        bits = int(r["DATAUNITLEN"])
        if bits % 8:
            continue
        key = _h(r["KEY"])
        pt, ct = _h(r["PT"]), _h(r["CT"])
        if len(pt) * 8 != bits or len(ct) != len(pt):
            raise ValueError(f"{rel} COUNT={r.get('COUNT')}: DataUnitLen does not match PT/CT")
        half = len(key) // 2
        enc_ok = key[:half] != key[half:]
        src = f"cryptography_vectors/{rel} [{section}] COUNT={r.get('COUNT', '?')}"
        name = f"aes-{8 * half}-xts"
        if by_seqno:
            yield Vector(name, key, None, pt, ct, encrypt_ok=enc_ok, sector_size=len(pt),
                         start_sector=int(r["DATAUNITSEQNUMBER"]), source=src)
        else:
            yield Vector(name, key, _h(r["I"]), pt, ct, encrypt_ok=enc_ok, source=src)


_BLOCK_KINDS = ("GFSbox", "KeySbox", "VarKey", "VarTxt", "MMT")


def _from_files(base: str) -> Iterator[Vector]:
    aes = os.path.join(base, "ciphers", "AES")
    for mode in ("ECB", "CBC"):
        d = os.path.join(aes, mode)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            m = re.fullmatch(rf"{mode}({'|'.join(_BLOCK_KINDS)})(128|192|256)\.rsp", fn)
            if m:
                yield from _nist_block_file(base, f"ciphers/AES/{mode}/{fn}", mode.lower())
    d = os.path.join(aes, "CTR")
    if os.path.isdir(d):
        for fn in sorted(os.listdir(d)):
            if re.fullmatch(r"aes-(128|192|256)-ctr\.txt", fn):
                yield from _nist_block_file(base, f"ciphers/AES/CTR/{fn}", "ctr")
    for sub, by_seqno in (("tweak-128hexstr", False), ("tweak-dataunitseqno", True)):
        d = os.path.join(aes, "XTS", sub)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            if fn.endswith(".rsp"):
                yield from _nist_xts_file(base, f"ciphers/AES/XTS/{sub}/{fn}", by_seqno)


@functools.lru_cache(maxsize=None)
def _all() -> tuple[Vector, ...]:
    out = list(_embedded())
    base = vectors_dir()
    if base is not None:
        out.extend(_from_files(base))
    return tuple(out)


def _norm(name: str) -> str:
    return name.strip().lower()


def load(cipher_name: str | None = None) -> list[Vector]:
    """All known-answer vectors, or those of one cipher name ("aes-128-cbc")."""
    if cipher_name is None:
        return list(_all())
    n = _norm(cipher_name)
    return [v for v in _all() if v.cipher == n]


def names_with_vectors() -> list[str]:
    """Sorted cipher names that have at least one vector."""
    return sorted({v.cipher for v in _all()})


# --------------------------------------------------------------------------- Monte Carlo (AESAVS)

@functools.lru_cache(maxsize=None)
def _all_mct(per_file: int) -> tuple[MCTVector, ...]:
    out = [
        MCTVector(name, _h(k), _h(iv) if iv else None, _h(pt), _h(ct), True,
                  source=f"NIST CAVP AESAVS {src}")
        for src, name, k, iv, pt, ct in _AESAVS_MCT
    ]
    base = vectors_dir()
    if base is None:
        return tuple(out)
    for mode in ("ECB", "CBC"):
        d = os.path.join(base, "ciphers", "AES", mode)
        if not os.path.isdir(d):
            continue
        for fn in sorted(os.listdir(d)):
            if not re.fullmatch(rf"{mode}MCT(128|192|256)\.rsp", fn):
                continue
            rel = f"ciphers/AES/{mode}/{fn}"
            taken: dict[str, int] = {}
            for section, r in _records(os.path.join(base, rel)):
                if section not in ("ENCRYPT", "DECRYPT") or not {"KEY", "PLAINTEXT", "CIPHERTEXT"} <= r.keys():
                    continue
                if taken.get(section, 0) >= per_file:
                    continue
                taken[section] = taken.get(section, 0) + 1
                key = _h(r["KEY"])
                out.append(MCTVector(
                    f"aes-{8 * len(key)}-{mode.lower()}", key, _h(r["IV"]) if "IV" in r else None,
                    _h(r["PLAINTEXT"]), _h(r["CIPHERTEXT"]), section == "ENCRYPT",
                    source=f"cryptography_vectors/{rel} [{section}] COUNT={r.get('COUNT', '?')}",
                ))
    return tuple(out)


def load_mct(cipher_name: str | None = None, per_file: int = 2) -> list[MCTVector]:
    """Monte Carlo records: the embedded ones plus the first ``per_file`` records of each section
    of every AESAVS MCT file found in cryptography_vectors."""
    vs = _all_mct(per_file)
    if cipher_name is None:
        return list(vs)
    n = _norm(cipher_name)
    return [v for v in vs if v.cipher == n]


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


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
    """Check vectors against pyca/cryptography (OpenSSL); return descriptions of mismatches.

    Used by the test suite to check the vectors and this parser themselves."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    bad = []
    for v in vs:
        mode = v.cipher.rsplit("-", 1)[1]
        units: list[tuple[bytes, object]] = []
        if mode == "xts" and v.sector_size is not None:
            s = v.sector_size
            for n, off in enumerate(range(0, len(v.plaintext), s)):
                units.append((slice(off, off + s), modes.XTS(((v.start_sector or 0) + n).to_bytes(16, "little"))))
        else:
            m = {"ecb": lambda: modes.ECB(), "cbc": lambda: modes.CBC(v.iv),
                 "ctr": lambda: modes.CTR(v.iv), "xts": lambda: modes.XTS(v.iv)}[mode]()
            units.append((slice(0, None), m))
        enc = dec = b""
        for sl, m in units:
            if v.encrypt_ok:
                c = Cipher(algorithms.AES(v.key), m).encryptor()
                enc += c.update(v.plaintext[sl]) + c.finalize()
            if v.decrypt_ok:
                c = Cipher(algorithms.AES(v.key), m).decryptor()
                dec += c.update(v.ciphertext[sl]) + c.finalize()
        if v.encrypt_ok and enc != v.ciphertext:
            bad.append(f"{v.source}: encryption mismatch")
        if v.decrypt_ok and dec != v.plaintext:
            bad.append(f"{v.source}: decryption mismatch")
    return bad
