"""A key file's hex text read in place (keys.py ``_hex_run`` / ``_unhex``: no regular
expression, no binascii, no copy of the text): the same keys and the same refusals as the
pattern ``\\s*([0-9A-Fa-f]*)\\s*`` and ``binascii.a2b_hex`` give."""
from __future__ import annotations

import binascii
import random
import re

import pytest

from ciphergrid import keys
from ciphergrid.errors import InvalidArgument

PATTERN = re.compile(rb"\s*([0-9A-Fa-f]*)\s*")
ALPHABET = b"0123456789abcdefABCDEF \t\n\r\x0b\x0cgG-x\x00\xff"


def _by_pattern(data: bytes, lens: tuple):
    m = PATTERN.fullmatch(data)
    if m is not None and m.end(1) > m.start(1):
        count = m.end(1) - m.start(1)
        if count % 2 == 0 and count // 2 in lens:
            return binascii.a2b_hex(m.group(1))
        return "refused"
    return data if len(data) in lens else "refused"


def test_the_hex_text_reads_as_the_pattern_did(tmp_path):
    rng = random.Random(4901)
    path = tmp_path / "k"
    cases = [b"00" * 16 + b"\n", b" \t" + b"aB" * 16 + b"\r\n\x0b\x0c", b"ab" * 15 + b" ab\n",
             b"\n\n", b"", b"0" * 31, b"G" * 16, bytes(range(16)), b"ab" * 8 + b"\n" + b"ab" * 8]
    for _ in range(400):
        n = rng.choice([0, 1, 2, 15, 16, 17, 31, 32, 33, 34, 40, 64, 66])
        core = bytes(rng.choice(b"0123456789abcdefABCDEF") for _ in range(n))
        if rng.random() < 0.5:   # (a stray byte somewhere)
            i = rng.randrange(len(core) + 1)
            core = core[:i] + bytes([rng.choice(ALPHABET)]) + core[i:]
        pad = lambda: bytes(rng.choice(b" \t\n\r\x0b\x0c") for _ in range(rng.randrange(3)))
        cases.append(pad() + core + pad())
    for data in cases:
        path.write_bytes(data)
        for lens in ((16,), (16, 32), (8,)):
            want = _by_pattern(data, lens)
            try:
                got = keys.read_key_file(str(path), lens if len(lens) > 1 else lens[0], "x")
            except InvalidArgument:
                got = "refused"
            assert got == want, (data, lens)


@pytest.mark.parametrize("text", [b"00112233445566778899aabbccddeeff", b"00112233445566778899AABBCCDDEEFF"])
def test_unhex_is_binascii(text):
    assert keys._unhex(bytearray(text), 0, len(text)) == binascii.a2b_hex(text)
