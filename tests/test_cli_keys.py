"""Keys on the command line: --key-file, and OpenSSL's passphrase mode (--pbkdf2 --pass), byte
compatible both ways with `openssl enc -pbkdf2` (and old `openssl enc` files without -pbkdf2)."""

from __future__ import annotations

import os
import subprocess

import pytest

from test_cli import _assert_error, cli, cli_env, ok

PW = "correct horse battery staple"


def ossl(openssl, *args, data: bytes) -> bytes:
    p = subprocess.run([openssl, "enc", *args], input=data, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout


CASES = [  # (cipher, iterations or None for the default, digest or None, data length)
    ("aes-128-cbc", None, None, 1000),
    ("aes-256-cbc", 1, "sha1", 0),
    ("aes-192-ecb", 1000, "sha512", 17),
    ("aes-256-ctr", None, None, 33),
    ("aes-128-ctr", 2, "md5", 1),
    ("aes-128-ecb", 10000, "sha256", 16),
]


def _kdf_args(it, md, openssl_style: bool) -> list[str]:
    a = ["-pbkdf2"] if openssl_style else ["--pbkdf2"]
    if it is not None:
        a += ["-iter" if openssl_style else "--iter", str(it)]
    if md is not None:
        a += ["-md" if openssl_style else "--md", md]
    return a


@pytest.mark.parametrize("name,it,md,n", CASES)
def test_pbkdf2_ciphergrid_to_openssl(openssl, tmp_path, rng, name, it, md, n):
    data = rng.data(n)
    src, enc = tmp_path / "in", tmp_path / "enc"
    src.write_bytes(data)
    ok(cli("encrypt", "-c", name, *_kdf_args(it, md, False), "--pass", f"pass:{PW}", "--in", src,
           "--out", enc))
    ct = enc.read_bytes()
    assert ct[:8] == b"Salted__"
    assert ossl(openssl, "-d", f"-{name}", *_kdf_args(it, md, True), "-pass", f"pass:{PW}", data=ct) == data


@pytest.mark.parametrize("name,it,md,n", CASES)
def test_pbkdf2_openssl_to_ciphergrid(openssl, tmp_path, rng, name, it, md, n):
    data = rng.data(n)
    ct = ossl(openssl, "-e", f"-{name}", *_kdf_args(it, md, True), "-pass", f"pass:{PW}", data=data)
    enc, out = tmp_path / "enc", tmp_path / "out"
    enc.write_bytes(ct)
    ok(cli("decrypt", "-c", name, *_kdf_args(it, md, False), "--pass", f"pass:{PW}", "--in", enc,
           "--out", out))
    assert out.read_bytes() == data


@pytest.mark.parametrize("md", ["md5", "sha256"])
def test_legacy_openssl_files_decrypt_with_warning(openssl, tmp_path, rng, md):
    data = rng.data(777)
    ct = ossl(openssl, "-e", "-aes-256-cbc", "-md", md, "-pass", f"pass:{PW}", data=data)
    enc = tmp_path / "enc"
    enc.write_bytes(ct)
    p = ok(cli("decrypt", "-c", "aes-256-cbc", "--md", md, "--pass", f"pass:{PW}", "--in", enc))
    assert p.stdout == data
    assert b"legacy key derivation" in p.stderr


@pytest.mark.parametrize("direction", ["ciphergrid-to-openssl", "openssl-to-ciphergrid"])
def test_base64_both_ways(openssl, tmp_path, rng, direction):
    data = rng.data(1000)
    if direction == "ciphergrid-to-openssl":
        p = ok(cli("encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "-a", input=data))
        assert all(len(line) <= 64 for line in p.stdout.split(b"\n"))
        assert ossl(openssl, "-d", "-aes-128-cbc", "-pbkdf2", "-a", "-pass", f"pass:{PW}", data=p.stdout) == data
    else:
        ct = ossl(openssl, "-e", "-aes-128-cbc", "-pbkdf2", "-a", "-pass", f"pass:{PW}", data=data)
        p = ok(cli("decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "-a", input=ct))
        assert p.stdout == data


def test_base64_with_hex_key_matches_openssl(openssl, rng):
    key, iv, data = rng.randbytes(16), rng.randbytes(16), rng.data(100)
    p = ok(cli("encrypt", "-c", "aes-128-ctr", "--key", key.hex(), "--iv", iv.hex(), "-a", input=data))
    assert p.stdout == ossl(openssl, "-aes-128-ctr", "-K", key.hex(), "-iv", iv.hex(), "-a", data=data)


def test_pass_sources(tmp_path, rng):
    data = rng.data(100)
    src = tmp_path / "in"
    src.write_bytes(data)
    pwfile = tmp_path / "pw"
    pwfile.write_text(PW + "\nsecond line is ignored\n")
    ct = ok(cli("encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"file:{pwfile}", "--in", src)).stdout
    env_run = cli("decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "env:CG_TEST_PW", input=ct,
                  env={"CG_TEST_PW": PW})
    assert ok(env_run).stdout == data
    assert b"warning" not in env_run.stderr
    r, w = os.pipe()
    os.write(w, (PW + "\n").encode())
    os.close(w)
    enc = tmp_path / "enc"
    enc.write_bytes(ct)
    import sys

    p = subprocess.run([sys.executable, "-m", "ciphergrid", "decrypt", "-c", "aes-128-cbc", "--pbkdf2",
                        "--pass", f"fd:{r}", "--in", str(enc)], pass_fds=(r,), capture_output=True,
                       env=cli_env(), timeout=120)
    os.close(r)
    assert p.returncode == 0, p.stderr
    assert p.stdout == data
    # the passphrase on stdin, the data from a file
    assert ok(cli("decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "stdin", "--in", enc,
                  input=(PW + "\n").encode())).stdout == data
    # ... but not when the data comes from stdin too
    _assert_error(cli("decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "stdin", input=ct),
                  "--pass stdin with data on stdin")


def test_pass_on_command_line_warns(rng):
    p = ok(cli("encrypt", "-c", "aes-128-ctr", "--pbkdf2", "--pass", f"pass:{PW}", input=b"x"))
    assert b"warning" in p.stderr and PW.encode() not in p.stderr


def test_wrong_passphrase_is_an_authentication_failure(tmp_path, rng):
    data = rng.data(100)
    ct = ok(cli("encrypt", "-c", "aes-256-cbc", "--pbkdf2", "--pass", f"pass:{PW}", input=data)).stdout
    enc, out = tmp_path / "enc", tmp_path / "out"
    enc.write_bytes(ct)
    p = cli("decrypt", "-c", "aes-256-cbc", "--pbkdf2", "--pass", "pass:wrong", "--in", enc, "--out", out)
    if p.returncode == 0:  # 1 in 256: the wrong key's last byte happens to look like padding
        pytest.skip("the wrong passphrase produced valid-looking padding")
    _assert_error(p, "wrong passphrase", 3)
    assert not out.exists()


def test_passphrase_misuse_errors(tmp_path):
    for args, why in [
        (["encrypt", "-c", "aes-128-cbc", "--pass", f"pass:{PW}"], "encrypting without --pbkdf2"),
        (["encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "--key", "00" * 16], "two keys"),
        (["encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "--iv", "00" * 16], "an IV"),
        (["encrypt", "-c", "aes-128-xts", "--pbkdf2", "--pass", f"pass:{PW}"], "XTS"),
        (["encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "--md", "nosuch"], "digest"),
        (["encrypt", "-c", "aes-128-cbc", "--pbkdf2"], "no terminal for the prompt"),
        (["decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}"], "no Salted__ header"),
        (["encrypt", "-c", "aes-128-cbc", "--iv", "00" * 16], "no key at all"),
    ]:
        p = cli(*args, input=b"0123456789abcdef" * 4, cwd=tmp_path)
        _assert_error(p, why)
        assert p.stdout == b""


def test_nopad_with_pbkdf2(openssl, rng):
    data = rng.data(64)
    ct = ok(cli("encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", f"pass:{PW}", "--nopad", input=data)).stdout
    assert len(ct) == 16 + 64
    assert ossl(openssl, "-d", "-aes-128-cbc", "-pbkdf2", "-nopad", "-pass", f"pass:{PW}", data=ct) == data


@pytest.mark.parametrize("form", ["hex", "hex-newline", "raw", "raw-key"])
def test_key_file(tmp_path, rng, ref, form):
    key, iv, data = rng.randbytes(32), rng.randbytes(16), rng.data(100)
    if form == "raw":
        key = b"\xff" + key[1:]   # (not hex text: taken as raw bytes without --raw-key)
    kf = tmp_path / "k"
    kf.write_bytes({"hex": key.hex().encode(), "hex-newline": key.hex().encode() + b"\n"}.get(form, key))
    raw = ["--raw-key"] if form == "raw-key" else []
    p = ok(cli("encrypt", "-c", "aes-256-ctr", "--key-file", kf, *raw, "--iv", iv.hex(), input=data))
    assert p.stdout == ref.encrypt(data, "aes-256-ctr", key, iv)
    assert b"warning" not in p.stderr


def _main(*args) -> int:
    from test_cli import run_main

    return run_main(*args)


@pytest.mark.parametrize("newline", [b"", b"\n"])
def test_key_file_of_32_hex_characters_for_a_256_bit_cipher(newline, tmp_path, capsys, ref):
    """32 ASCII hex characters (and no newline) for aes-256-ctr: hex text, a 16-byte key, refused
    in one line (it was silently taken as 32 raw bytes; with a newline as hex); --raw-key takes
    the 32 bytes."""
    text = bytes(range(16)).hex().encode()
    kf, src, out = tmp_path / "k", tmp_path / "in", tmp_path / "o"
    kf.write_bytes(text + newline)
    src.write_bytes(b"attack at dawn")
    common = ["encrypt", "-c", "aes-256-ctr", "--key-file", kf, "--iv", "00" * 16, "--in", src,
              "--out", out]
    assert _main(*common) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"ciphergrid: error: --key-file {kf}: aes-256-ctr takes a 32-byte (256-bit) key: "
                   "give 64 hex digits, got 32 hex digits"
                   + ("; give --raw-key if the file holds raw bytes" if not newline else "")), err
    assert not out.exists()
    if not newline:
        assert _main(*common, "--raw-key") == 0
        assert out.read_bytes() == ref.encrypt(b"attack at dawn", "aes-256-ctr", text, bytes(16))
    else:
        assert _main(*common, "--raw-key") == 2
        assert "33 raw bytes" in capsys.readouterr().err
    assert _main("encrypt", "-c", "aes-256-ctr", "--key", "00" * 32, "--raw-key", "--in", src) == 2
    assert "--raw-key says how --key-file holds the key" in capsys.readouterr().err


def test_key_size_wording_is_one_everywhere(tmp_path, capsys):
    """--key, --key-file, a block cipher and an AEAD: "takes a 16-byte (128-bit) key"."""
    kf, src = tmp_path / "k", tmp_path / "in"
    kf.write_text("00" * 5)
    src.write_bytes(bytes(16))
    for cipher, more in (("aes-128-ctr", ["--iv", "00" * 16]), ("aes-128-gcm", ["--nonce", "00" * 12])):
        for key in (["--key", "00" * 5], ["--key-file", kf]):
            assert _main("encrypt", "-c", cipher, *key, *more, "--in", src) == 2
            err = capsys.readouterr().err
            assert f"{cipher} takes a 16-byte (128-bit) key" in err, err
    assert _main("encrypt", "-c", "aes-128-xts", "--key", "00" * 16, "--iv", "00" * 16, "--in", src) == 2
    assert "aes-128-xts takes a 32-byte (256-bit) key (two 128-bit keys), got 16 bytes" in \
        capsys.readouterr().err


def test_key_file_wrong_size_does_not_show_the_key(tmp_path, rng):
    kf = tmp_path / "k"
    secret = rng.randbytes(20).hex()
    kf.write_text(secret)
    p = cli("encrypt", "-c", "aes-128-ctr", "--key-file", kf, "--iv", "00" * 16, input=b"x")
    _assert_error(p, "key file of the wrong size")
    assert secret[:8] not in p.stderr.decode() and str(kf) in p.stderr.decode()
