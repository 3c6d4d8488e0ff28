"""ciphergrid.keys (key files, passphrases, openssl enc key derivation, the Salted__ header) and
ciphergrid.b64 (openssl enc -a framing), checked against the openssl binary where it is one."""

from __future__ import annotations

import binascii
import getpass
import io
import os
import subprocess
import sys
import warnings

import pytest

from ciphergrid import b64, keys
from ciphergrid.errors import InvalidArgument

PW = "pässwörd with spaces"  # non-ASCII: -pass pass: hands openssl the UTF-8 bytes of argv
SALT = bytes.fromhex("0123456789abcdef")


def _run(cmd: list[str], data: bytes = b"") -> bytes:
    p = subprocess.run(cmd, input=data, capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout


def ossl_key_iv(openssl: str, cipher: str, salt: bytes | None, *, pbkdf2: bool, md: str,
                iters: int | None = None, pass_arg: str = f"pass:{PW}") -> tuple[bytes, bytes | None]:
    """The key and IV that `openssl enc ... -P` prints."""
    cmd = [openssl, "enc", f"-{cipher}", "-md", md, "-pass", pass_arg, "-P"]
    cmd += ["-nosalt"] if salt is None else ["-S", salt.hex()]
    if pbkdf2:
        cmd += ["-pbkdf2"] + (["-iter", str(iters)] if iters is not None else [])
    fields = {}
    for line in _run(cmd).decode().splitlines():
        name, _, value = line.partition("=")
        fields[name.strip()] = value.strip()
    if salt is not None:
        assert fields["salt"] == salt.hex().upper()
    iv = fields.get("iv")
    return bytes.fromhex(fields["key"]), bytes.fromhex(iv) if iv else None


CIPHERS = {"aes-128-cbc": (16, 16), "aes-256-ctr": (32, 16), "aes-192-ecb": (24, 0)}


# ------------------------------------------------------------------------------------ derive
@pytest.mark.parametrize("cipher", list(CIPHERS))
@pytest.mark.parametrize("iters", [1, 1000, 10000])
@pytest.mark.parametrize("md", ["sha256", "sha1", "sha512", "md5"])
def test_pbkdf2_matches_openssl(openssl, cipher, iters, md):
    key_len, iv_len = CIPHERS[cipher]
    got = keys.derive(PW.encode(), SALT, key_len, iv_len, pbkdf2=True, iterations=iters, md=md)
    assert got == ossl_key_iv(openssl, cipher, SALT, pbkdf2=True, md=md, iters=iters)
    assert len(got[0]) == key_len and (got[1] is None) == (iv_len == 0)


def test_pbkdf2_defaults_match_openssl(openssl):
    assert keys.DEFAULT_ITER == 10000 and keys.DEFAULT_MD == "sha256"
    cmd = [openssl, "enc", "-aes-256-cbc", "-pbkdf2", "-S", SALT.hex(), "-pass", f"pass:{PW}", "-P"]
    out = _run(cmd).decode()
    key, iv = keys.derive(PW.encode(), SALT, 32, 16, pbkdf2=True)
    assert f"key={key.hex().upper()}" in out and f"iv ={iv.hex().upper()}" in out


@pytest.mark.parametrize("cipher", list(CIPHERS))
@pytest.mark.parametrize("md", ["md5", "sha256"])
@pytest.mark.parametrize("salted", [True, False])
def test_legacy_evp_bytestokey_matches_openssl(openssl, cipher, md, salted):
    key_len, iv_len = CIPHERS[cipher]
    salt = SALT if salted else None
    got = keys.derive(PW.encode(), salt, key_len, iv_len, pbkdf2=False, md=md)
    assert got == ossl_key_iv(openssl, cipher, salt, pbkdf2=False, md=md)


@pytest.mark.parametrize("md", ["sha3-256", "SHA512-256", "sha-224", "SHA2-384", "blake2b512",
                                "blake2s256", "sm3"])
def test_other_digests_match_openssl(openssl, md):
    try:
        keys.digest(md)
    except InvalidArgument as e:  # SM3 in an OpenSSL without it
        pytest.skip(str(e))
    got = keys.derive(PW.encode(), SALT, 32, 16, pbkdf2=True, iterations=3, md=md)
    assert got == ossl_key_iv(openssl, "aes-256-cbc", SALT, pbkdf2=True, md=md, iters=3)


def test_digest_names():
    from cryptography.hazmat.primitives import hashes

    for name in ("sha256", "SHA256", "sha-256", "SHA2-256", " Sha256 "):
        assert isinstance(keys.digest(name), hashes.SHA256)
    assert isinstance(keys.digest("SHA512/224"), hashes.SHA512_224)
    assert isinstance(keys.digest("sha-1"), hashes.SHA1)
    assert keys.digest("blake2b512").digest_size == 64
    for name in keys.DIGESTS:
        keys.digest(name)
    with pytest.raises(InvalidArgument, match="--md nosuch: unknown digest"):
        keys.digest("nosuch")


def test_derive_errors():
    with pytest.raises(InvalidArgument, match="--iter"):
        keys.derive(b"pw", SALT, 16, 16, pbkdf2=True, iterations=0)
    with pytest.raises(InvalidArgument, match="salt"):
        keys.derive(b"pw", b"short", 16, 16, pbkdf2=True)
    with pytest.raises(InvalidArgument, match="salt"):
        keys.derive(b"pw", None, 16, 16, pbkdf2=True)
    with pytest.raises(InvalidArgument, match="digest"):
        keys.derive(b"pw", SALT, 16, 16, pbkdf2=True, md="md4x")
    # a bytearray passphrase works as bytes do
    assert keys.derive(bytearray(b"pw"), SALT, 16, 16, pbkdf2=True, iterations=2) == \
        keys.derive(b"pw", SALT, 16, 16, pbkdf2=True, iterations=2)


# ------------------------------------------------------------------------------------ header
def test_header():
    salt = keys.new_salt()
    assert len(salt) == keys.SALT_LEN == 8 and keys.new_salt() != salt
    head = keys.make_header(salt)
    assert head == b"Salted__" + salt and len(head) == 16
    assert keys.parse_header(head) == salt
    assert keys.parse_header(head + b"more data") == salt
    for bad in (b"", b"Salted__", head[:15], b"Salted_X" + salt, b"U2FsdGVkX1" + b"x" * 6):
        with pytest.raises(InvalidArgument, match="no 'Salted__' header"):
            keys.parse_header(bad)
    with pytest.raises(InvalidArgument):
        keys.make_header(b"1234567")


def test_header_matches_openssl(openssl):
    # a random salt: with -S, openssl 3.0 writes no header at all
    ct = _run([openssl, "enc", "-aes-128-cbc", "-pbkdf2", "-pass", f"pass:{PW}"], b"data")
    salt = keys.parse_header(ct[:16])
    key, iv = keys.derive(PW.encode(), salt, 16, 16, pbkdf2=True)
    from ciphergrid.testing import oracle

    assert oracle.decrypt(ct[16:], "aes-128-cbc", key, iv, padding="pkcs7") == b"data"


def test_wipe():
    b = bytearray(b"secret key bytes")
    keys.wipe(b)
    assert b == bytearray(16)
    keys.wipe(bytearray())
    big = bytearray(os.urandom(64))
    keys.wipe(memoryview(big)[8:16])
    assert big[8:16] == bytes(8) and len(big) == 64


# ------------------------------------------------------------------------------------ --key-file
def _key_error(path, key_len, what=None, raw=False) -> str:
    with pytest.raises(InvalidArgument) as ei:
        keys.read_key_file(str(path), key_len, what, raw=raw)
    return str(ei.value)


def test_key_file_raw_and_hex(tmp_path):
    key = os.urandom(16)
    kf = tmp_path / "k"
    kf.write_bytes(key)
    assert keys.read_key_file(str(kf), 16) == key
    for text in (key.hex(), key.hex() + "\n", key.hex().upper() + "\r\n", "  \n" + key.hex() + " \t\n"):
        kf.write_text(text)
        assert keys.read_key_file(str(kf), 16, "aes-128-ctr") == key
    raw = b"0123456789abcdef"  # 16 raw bytes that are hex digits: hex (8 bytes) unless --raw-key
    kf.write_bytes(raw)
    assert keys.read_key_file(str(kf), 16, raw=True) == raw
    assert _key_error(kf, 16, "aes-128-ctr") == (
        f"--key-file {kf}: aes-128-ctr takes a 16-byte (128-bit) key: give 32 hex digits, got 16 "
        "hex digits; give --raw-key if the file holds raw bytes")
    kf.write_bytes(b"\n" * 32)  # raw bytes that look like whitespace
    assert keys.read_key_file(str(kf), 32) == b"\n" * 32


def test_key_file_of_exactly_the_hex_digits_of_a_shorter_key(tmp_path):
    """32 hex digits, no newline, for a 256-bit cipher: hex text (16 bytes: refused), not 32 raw
    bytes; with a newline the same; --raw-key takes the 32 bytes."""
    kf = tmp_path / "k"
    text = os.urandom(16).hex().encode()
    for content in (text, text + b"\n"):
        kf.write_bytes(content)
        msg = _key_error(kf, 32, "aes-256-ctr")
        assert "got 32 hex digits" in msg and text.decode()[:8] not in msg
        assert ("--raw-key" in msg) == (len(content) == 32)
    kf.write_bytes(text)
    assert keys.read_key_file(str(kf), 32, raw=True) == text
    kf.write_bytes(text + b"\n")
    assert "33 raw bytes (--raw-key)" in _key_error(kf, 32, raw=True)


def test_key_file_wrong_sizes_do_not_show_the_key(tmp_path):
    kf = tmp_path / "k.txt"
    secret = os.urandom(10).hex()
    kf.write_text(secret + "\n")
    msg = _key_error(kf, 16, "aes-128-ctr")
    assert msg == (f"--key-file {kf}: aes-128-ctr takes a 16-byte (128-bit) key: give 32 hex "
                   "digits, got 20 hex digits")
    assert "\n" not in msg
    kf.write_text(secret[:-1])  # odd number of digits
    assert "got 19 hex digits" in _key_error(kf, 16)
    kf.write_text(os.urandom(32).hex())  # a 32-byte key for a 16-byte cipher
    assert "got 64 hex digits" in _key_error(kf, 16, "aes-128-cbc")
    for content in (os.urandom(20), ("00" * 8 + " " + "00" * 8).encode(), b"0x" + b"00" * 16, b""):
        kf.write_bytes(content)
        msg = _key_error(kf, 16)
        assert str(kf) in msg and "16-byte (128-bit) key" in msg
        if len(content) > 4:
            assert content.hex() not in msg and repr(content) not in msg
            assert content[2:10].decode("latin-1") not in msg
    kf.write_bytes(b"a" * 100_000)  # a data file, not a key file
    assert "more than" in _key_error(kf, 32)


def test_key_file_unreadable(tmp_path):
    missing = tmp_path / "nope"
    assert _key_error(missing, 16) == f"--key-file {missing}: cannot read: No such file or directory"
    assert "cannot read" in _key_error(tmp_path, 16)  # a directory


# ------------------------------------------------------------------------------------ --pass
def _pass_error(source, **kw) -> str:
    kw.setdefault("confirm", False)
    kw.setdefault("stdin_is_data", False)
    with pytest.raises(InvalidArgument) as ei:
        keys.read_passphrase(source, **kw)
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def _read(source, **kw) -> bytes:
    kw.setdefault("confirm", False)
    kw.setdefault("stdin_is_data", False)
    return keys.read_passphrase(source, **kw)


def test_pass_text():
    assert _read(f"pass:{PW}") == PW.encode()
    assert _read("pass:a:b") == b"a:b"
    assert "empty" in _pass_error("pass:")


def test_pass_env(monkeypatch):
    monkeypatch.setenv("CG_TEST_PW", PW)
    assert _read("env:CG_TEST_PW") == PW.encode()
    monkeypatch.delenv("CG_TEST_PW")
    assert "CG_TEST_PW is not set" in _pass_error("env:CG_TEST_PW")
    monkeypatch.setenv("CG_TEST_PW", "")
    assert "empty" in _pass_error("env:CG_TEST_PW")
    assert "not set" in _pass_error("env:")


def test_pass_file(tmp_path):
    f = tmp_path / "pw"
    f.write_bytes(PW.encode() + b"\nsecond line is ignored\n")
    assert _read(f"file:{f}") == PW.encode()
    f.write_bytes(b"pw\r\nsecond\r\n")
    assert _read(f"file:{f}") == b"pw\r"  # as openssl: only the "\n" goes
    f.write_bytes(b"no newline")
    assert _read(f"file:{f}") == b"no newline"
    f.write_bytes(b" spaces kept \t\n")
    assert _read(f"file:{f}") == b" spaces kept \t"
    f.write_bytes(b"\xff\xfe raw bytes\n")
    assert _read(f"file:{f}") == b"\xff\xfe raw bytes"
    f.write_bytes(b"x" * 1030 + b"\n")  # cut to openssl's 1023 bytes
    assert _read(f"file:{f}") == b"x" * 1023
    f.write_bytes(b"")
    assert _pass_error(f"file:{f}") == f"--pass file:{f}: the file is empty"
    f.write_bytes(b"\nsecond\n")
    assert "empty" in _pass_error(f"file:{f}")
    assert _pass_error(f"file:{tmp_path / 'nope'}") == \
        f"--pass file:{tmp_path / 'nope'}: cannot read: No such file or directory"


@pytest.mark.parametrize("content", [PW.encode() + b"\nignored\n", b"y" * 1022 + b"\n",
                                     b"y" * 1023 + b"\n", b"z" * 1500, b"last line"])
def test_pass_file_matches_openssl(openssl, tmp_path, content):
    f = tmp_path / "pw"
    f.write_bytes(content)
    phrase = _read(f"file:{f}")
    assert keys.derive(phrase, SALT, 16, 16, pbkdf2=True, iterations=1) == \
        ossl_key_iv(openssl, "aes-128-cbc", SALT, pbkdf2=True, md="sha256", iters=1,
                    pass_arg=f"file:{f}")


def test_pass_file_crlf_as_openssl(openssl, tmp_path):
    """openssl 3.0 keeps the "\\r" of a "pw\\r\\n" line, and so do we: the same key."""
    f = tmp_path / "pw"
    f.write_bytes(b"pw\r\n")
    ossl = ossl_key_iv(openssl, "aes-128-cbc", SALT, pbkdf2=True, md="sha256", iters=1,
                       pass_arg=f"file:{f}")
    assert ossl == keys.derive(_read(f"file:{f}"), SALT, 16, 16, pbkdf2=True, iterations=1)


def test_pass_fd():
    r, w = os.pipe()
    try:
        os.write(w, PW.encode() + b"\nthe rest stays in the pipe")
        os.close(w)
        w = None
        assert _read(f"fd:{r}") == PW.encode()
        assert os.read(r, 100) == b"the rest stays in the pipe"  # and the descriptor stays open
        assert "end of file" in _pass_error(f"fd:{r}")
    finally:
        os.close(r)
        if w is not None:
            os.close(w)
    assert "cannot read" in _pass_error(f"fd:{r}")  # closed now
    assert "file descriptor number" in _pass_error("fd:x")
    assert "file descriptor number" in _pass_error("fd:-1")


def test_pass_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PW.encode() + b"\nmore\n")))
    assert _read("stdin") == PW.encode()
    monkeypatch.setattr(sys, "stdin", io.StringIO("text only\n"))  # no .buffer
    assert _read("stdin") == b"text only"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert "empty" in _pass_error("stdin")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"never read\n")))
    msg = _pass_error("stdin", stdin_is_data=True)
    assert msg.startswith("--pass stdin: the data comes from standard input too")
    assert sys.stdin.buffer.tell() == 0


def test_pass_unknown_source_is_not_echoed():
    for src in ("hunter2", "pas:hunter2", "PASS:hunter2", ""):
        msg = _pass_error(src)
        assert "unknown source" in msg and ("hunter2" not in msg)


class _FakeGetpass:
    def __init__(self, monkeypatch, answers):
        self.answers, self.prompts = list(answers), []
        monkeypatch.setattr(keys, "_have_tty", lambda: True)
        monkeypatch.setattr(getpass, "getpass", self)

    def __call__(self, prompt="Password: ", stream=None):
        self.prompts.append(prompt)
        a = self.answers.pop(0)
        if isinstance(a, BaseException) or (isinstance(a, type) and issubclass(a, BaseException)):
            raise a
        if a == "WARN":
            warnings.warn("Can not control echo on the terminal.", getpass.GetPassWarning)
            return "read from stdin"
        return a


def test_prompt_without_terminal(monkeypatch):
    monkeypatch.setattr(keys, "_have_tty", lambda: False)
    monkeypatch.setattr(getpass, "getpass", lambda *a, **k: pytest.fail("prompted"))
    assert _pass_error(None, confirm=True) == \
        "no passphrase: give --pass pass:|env:|file:|fd:|stdin or a key with --key-file"


def test_prompt(monkeypatch):
    g = _FakeGetpass(monkeypatch, [PW])
    assert _read(None, confirm=False) == PW.encode()
    assert g.prompts == ["enter passphrase: "]
    g = _FakeGetpass(monkeypatch, [PW, PW])
    assert _read(None, confirm=True, prompt="pw? ") == PW.encode()
    assert g.prompts == ["pw? ", "Verifying - pw? "]
    _FakeGetpass(monkeypatch, [PW, PW + "x"])
    msg = _pass_error(None, confirm=True)
    assert msg.startswith("verify failure") and "pässw" not in msg
    _FakeGetpass(monkeypatch, [""])
    assert "empty" in _pass_error(None, confirm=True)
    _FakeGetpass(monkeypatch, [EOFError])
    assert "end of file" in _pass_error(None)
    _FakeGetpass(monkeypatch, ["WARN"])  # getpass fell back to stdin: refused
    assert _pass_error(None, stdin_is_data=True).startswith("no passphrase")


# ------------------------------------------------------------------------------------ base64
def _chunks(rng, data: bytes, most: int):
    i = 0
    while i < len(data):
        n = rng.randint(0, most)
        yield data[i:i + n]
        i += n


def _encode(rng, data: bytes, most: int | None) -> bytes:
    out = []
    w = b64.Base64Writer(out.append)
    if most is None:
        w.write(data)
    else:
        for piece in _chunks(rng, data, most):
            w.write(piece)
    w.close()
    w.close()  # idempotent
    return b"".join(out)


@pytest.mark.parametrize("n", [0, 1, 47, 48, 49, 95, 96, 1000])
def test_base64_writer_matches_openssl(openssl, rng, n):
    data = rng.data(n)
    want = _run([openssl, "base64"], data)
    assert want == _run([openssl, "enc", "-a", "-aes-128-ctr", "-K", "00" * 16, "-iv", "00" * 16],
                        _ctr0(data))  # enc -a frames the same way
    assert _encode(rng, data, None) == want
    for most in (1, 7, 48, 100):
        assert _encode(rng, data, most) == want
    w_out = []
    w = b64.Base64Writer(w_out.append)
    w.write(memoryview(data))
    w.write(bytearray())
    w.close()
    assert b"".join(w_out) == want


def _ctr0(data: bytes) -> bytes:
    """data encrypted with AES-128-CTR, zero key and IV (so that decrypting gives data back)."""
    from ciphergrid.testing import oracle

    return oracle.encrypt(data, "aes-128-ctr", bytes(16), bytes(16))


def test_base64_writer_large_and_line_shape(openssl, rng):
    data = rng.data(b64._EMIT_BYTES + 48 * 3 + 5)  # more than one encode pass in one write()
    got = _encode(rng, data, None)
    assert got == _run([openssl, "base64"], data)
    lines = got.split(b"\n")
    assert lines[-1] == b"" and all(len(x) == 64 for x in lines[:-2]) and 0 < len(lines[-2]) <= 64


def test_base64_writer_nothing_written_and_closed():
    out = []
    w = b64.Base64Writer(out.append)
    w.write(b"")
    w.close()
    assert out == []
    with pytest.raises(ValueError):
        w.write(b"x")
    with b64.Base64Writer(out.append) as w:
        w.write(b"\0" * 48)
    assert out == [b"A" * 64 + b"\n"]


class _Pieces:
    """read(n) that hands out random small pieces of ``data`` (at most n bytes each)."""

    def __init__(self, rng, data: bytes, most: int):
        self.rng, self.data, self.pos, self.most = rng, data, 0, most

    def __call__(self, n: int) -> bytes:
        k = min(n, self.rng.randint(1, self.most))
        piece = self.data[self.pos:self.pos + k]
        self.pos += len(piece)
        return piece


def _decode(rng, text: bytes, most_in: int, most_out: int) -> bytes:
    r = b64.Base64Reader(_Pieces(rng, text, most_in))
    out = []
    while True:
        n = rng.randint(1, most_out)
        got = r.read(n)
        assert len(got) <= n
        if not got:
            break
        out.append(got)
    assert r.read(5) == b""
    return b"".join(out)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 16, 47, 48, 49, 1000, 5000])
def test_base64_reader_round_trip(rng, n):
    data = rng.data(n)
    text = _encode(rng, data, 50)
    for most_in, most_out in ((1, 1), (3, 17), (100, 1000), (10000, 10000)):
        assert _decode(rng, text, most_in, most_out) == data
    r = b64.Base64Reader(io.BytesIO(text).read)
    assert r.read(-1) == data and r.read(1) == b""


def test_base64_reader_decodes_openssl_and_whitespace(openssl, rng):
    data = rng.data(777)
    text = _run([openssl, "base64"], data)
    assert _decode(rng, text, 5, 33) == data
    flat = binascii.b2a_base64(data, newline=False)
    assert _decode(rng, flat, 64, 100) == data  # one line, no newline
    messy = bytearray()
    for c in flat:
        messy.append(c)
        if rng.random() < 0.2:
            messy += rng.choice([b" ", b"\t", b"\r\n", b"\n", b"\n\n", b"\x0b", b"\x0c"])
    assert _decode(rng, b"  \r\n" + bytes(messy) + b"\r\n\r\n", 13, 50) == data


def test_base64_reader_header_then_rest(openssl):
    ct = _run([openssl, "enc", "-aes-128-cbc", "-pbkdf2", "-a", "-pass", f"pass:{PW}"], b"x" * 100)
    r = b64.Base64Reader(io.BytesIO(ct).read)
    assert len(keys.parse_header(r.read(16))) == 8
    assert len(r.read(1 << 20)) == 112 and r.read(1) == b""


@pytest.mark.parametrize("text", [b"QU*J", b"QQ==QUJD", b"QQ==\nQQ==\n", b"QQ", b"QUI", b"Q",
                                  b"Q===", b"====", b"=AAA", b"AA=A", b"QQ=", b"QUJD\x00",
                                  "QUJ\u00e9".encode(), b"QUJD-_", b"QQ==="])
def test_base64_reader_invalid(rng, text):
    for most in (1, 3, 100):
        with pytest.raises(InvalidArgument, match=r"^--base64: the input is not valid base64"):
            _decode(rng, text + b"\n", most, 64)


def test_base64_reader_padding_variants():
    for text, want in ((b"QQ==", b"A"), (b"QUI=", b"AB"), (b"QUJD", b"ABC"), (b"QR==", b"A"),
                       (b"Q Q = =\n", b"A"), (b"QQ=\n=", b"A"), (b"", b""), (b" \n\n", b"")):
        assert b64.Base64Reader(io.BytesIO(text).read).read(100) == want


def test_key_file_of_a_cipher_with_many_key_sizes(tmp_path):
    """CAST-128 takes 5..16-byte keys: hex text of one of those lengths first, else raw bytes."""
    from ciphergrid import keys

    lens = tuple(range(5, 17))
    p = tmp_path / "k"
    p.write_text("0102030405\n")
    assert keys.read_key_file(str(p), lens, "cast5-ecb") == bytes([1, 2, 3, 4, 5])
    p.write_bytes(bytes(range(1, 11)))
    assert keys.read_key_file(str(p), lens, "cast5-ecb") == bytes(range(1, 11))
    p.write_bytes(bytes(3))
    with pytest.raises(InvalidArgument, match=r"5- to 16-byte \(40- to 128-bit\) key"):
        keys.read_key_file(str(p), lens, "cast5-ecb")
