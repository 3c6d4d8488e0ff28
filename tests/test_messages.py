"""Every message true (issue 35): what the command line and the names say is what happened.

* A pipe whose length is not whole blocks: the error gives the input's whole length (not the
  last read's), on every path (OpenSSL pieces, the device pipeline).
* An unknown --cipher suggests the close names and lists every name, the AEADs included; a
  misspelt AEAD name with --nonce says "unknown cipher", not "--nonce is for AEADs".
* Decrypting a ciphertext that is not whole blocks does not suggest --pad pkcs7 (padding cannot
  help); encrypting such an input does.
* Exit codes as the README's table: an --out that cannot be created (no such folder, a
  directory, a /proc file) is an I/O error, 4, said in words.
* OpenSSL's short names (aes128, des3, seed...) are the names `openssl enc` takes them for.
* The benchmark's tables: a header over the bench summary, selftest's columns aligned, each
  version once in the report, no speedup printed as "0.00x".
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading

import pytest

import ciphergrid
from ciphergrid import registry
from test_cli import _assert_error, cli, cli_env, ok, openssl_enc

K16 = "000102030405060708090a0b0c0d0e0f"
IV16 = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"


def _opencl_cpu() -> bool:
    return any(d.runtime == "opencl" and d.kind == "cpu" for d in ciphergrid.devices())


# --------------------------------------------------------------------------- 1. a pipe's length

def _through_pipe(args, n: int, piece: int = 64 << 10) -> subprocess.CompletedProcess:
    """The CLI reading ``n`` bytes from a pipe written in ``piece``-byte writes (the CLI reads it
    in many reads of its own), its output to /dev/null."""
    proc = subprocess.Popen([sys.executable, "-m", "ciphergrid", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env())
    err = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    reader.start()
    block = bytes(range(256)) * (piece // 256)
    sent = 0
    try:
        while sent < n:
            k = min(piece, n - sent)
            proc.stdin.write(block[:k])
            sent += k
        proc.stdin.close()
    except BrokenPipeError:
        pass
    rc = proc.wait(timeout=300)
    reader.join()
    return subprocess.CompletedProcess(args, rc, b"", err[0])


@pytest.mark.parametrize("engine", ["native", "cpu"])  # OpenSSL's pieces; the device pipeline
@pytest.mark.parametrize("direction", ["encrypt", "decrypt"])
def test_pipe_partial_block_gives_whole_length(direction, engine):
    if engine == "cpu" and not _opencl_cpu():
        pytest.skip("no OpenCL CPU device")
    n = 3 * (1 << 20) + 5 * 4096 + 7  # several reads of the pipe and pieces of the stream
    args = [direction, "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "-q", "--device", engine]
    p = _through_pipe(args, n)
    _assert_error(p, "pipe partial block", 2)
    err = p.stderr.decode()
    assert f": {n} bytes is not a multiple of 16" in err, err
    # the padding hint where padding would help, and only there
    assert ("--pad pkcs7" in err) == (direction == "encrypt"), err


# --------------------------------------------------------------------------- 2. unknown names

def test_unknown_cipher_suggests_and_lists_every_name():
    p = cli("encrypt", "--cipher", "aes-128-cbx", "--key", K16, "--iv", IV16, input=bytes(16))
    _assert_error(p, "unknown cipher")
    err = p.stderr.decode()
    assert "unknown cipher 'aes-128-cbx' (did you mean aes-128-cbc or " in err, err
    for name in ("aes-256-xts", "aes-128-gcm", "aes-256-gcm", "chacha20-poly1305", "ascon-aead128",
                 "aegis-128l", "aes128 = aes-128-cbc"):
        assert name in err, (name, err)
    # the same words from the library
    with pytest.raises(ciphergrid.UnsupportedCipher, match=r"did you mean aes-128-cbc .*aegis-128l"):
        ciphergrid.encrypt(bytes(16), "aes-128-cbx", bytes(16), bytes(16))
    # a name far from all of them: no suggestion, still every name (the AEADs' where their
    # registry is loaded, as it is by whoever resolves names of both kinds)
    from ciphergrid import aeads

    assert not aeads.is_aead("zzz")
    msg = str(registry.unknown("zzz"))
    assert "did you mean" not in msg and "chacha20-poly1305" in msg and "seed-xts" in msg


def test_misspelt_aead_with_nonce_is_an_unknown_cipher():
    p = cli("encrypt", "--cipher", "aes-256-gcmx", "--key", K16 * 2, "--nonce", "00" * 12,
            input=bytes(16))
    _assert_error(p, "misspelt AEAD")
    err = p.stderr.decode()
    assert "unknown cipher 'aes-256-gcmx' (did you mean aes-256-gcm" in err, err
    assert "is for AEADs" not in err, err
    # a real block cipher with --nonce still says what the flag is for, under its full name
    p = cli("encrypt", "--cipher", "aes256", "--key", K16 * 2, "--iv", IV16, "--nonce", "00",
            input=bytes(16))
    _assert_error(p, "nonce for a block cipher")
    assert "--nonce is for AEADs (aes-256-gcm, chacha20-poly1305, ...), not aes-256-cbc" in p.stderr.decode()


# --------------------------------------------------------------------------- 3. the padding hint

@pytest.mark.parametrize("name", ["aes-128-cbc", "aes-128-ecb", "des-ede3-cbc"])
def test_decrypting_partial_blocks_does_not_suggest_padding(name, tmp_path):
    spec = registry.lookup(name)
    key = os.urandom(spec.key_len).hex()
    iv = ["--iv", os.urandom(spec.iv_len).hex()] if spec.iv_len else []
    src = tmp_path / "in"
    src.write_bytes(bytes(spec.block_size * 3 + 1))
    n = spec.block_size * 3 + 1
    p = cli("decrypt", "--cipher", name, "--key", key, *iv, "--in", src)
    _assert_error(p, "decrypt partial block")
    err = p.stderr.decode()
    assert f"{n} bytes is not a multiple of {spec.block_size}" in err and "--pad" not in err, err
    assert "cut short" in err, err
    p = cli("encrypt", "--cipher", name, "--key", key, *iv, "--in", src, "--allow-weak")
    _assert_error(p, "encrypt partial block")
    assert "(or use --pad pkcs7)" in p.stderr.decode()
    # the library says the same (padding= is its word)
    k, v = bytes.fromhex(key), bytes.fromhex(iv[1]) if iv else None
    with pytest.raises(ciphergrid.InvalidLength) as e:
        ciphergrid.decrypt(bytes(n), name, k, v)
    assert "padding" not in str(e.value)
    with pytest.raises(ciphergrid.InvalidLength, match=r"or use padding='pkcs7'"):
        ciphergrid.encrypt(bytes(n), name, k, v)


# --------------------------------------------------------------------------- 4. exit codes

def test_output_that_cannot_be_created_is_an_io_error(tmp_path):
    src = tmp_path / "in"
    src.write_bytes(bytes(32))
    args = ["encrypt", "--cipher", "aes-128-ctr", "--key", K16, "--iv", IV16, "--in", src, "--out"]
    p = cli(*args, tmp_path / "missing" / "out")
    _assert_error(p, "no such folder", 4)
    assert f"cannot create --out {tmp_path / 'missing' / 'out'}: no such directory " \
           f"{tmp_path / 'missing'}" in p.stderr.decode()
    p = cli(*args, tmp_path)
    _assert_error(p, "a directory", 4)
    assert f"cannot create --out {tmp_path}: it is a directory" in p.stderr.decode()
    a_file = tmp_path / "in"
    p = cli(*args, a_file / "out")
    _assert_error(p, "below a file", 4)
    assert str(a_file / "out") in p.stderr.decode()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["in"]


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="no /proc/version")
def test_out_proc_file_says_why_in_words(tmp_path):
    before = open("/proc/version").read()
    src = tmp_path / "in"
    src.write_bytes(bytes(32))
    p = cli("encrypt", "--cipher", "aes-128-ctr", "--key", K16, "--iv", IV16, "--in", src,
            "--out", "/proc/version")
    _assert_error(p, "/proc/version", 4)
    err = p.stderr.decode()
    assert "cannot write --out /proc/version: " in err and "Illegal seek" not in err, err
    if os.geteuid() == 0:  # (others: permission denied, in words too)
        assert "the kernel's proc interface" in err, err
    assert open("/proc/version").read() == before


# --------------------------------------------------------------------------- 5. OpenSSL's short names

SHORT = sorted(registry.ALIASES)


@pytest.mark.parametrize("alias", SHORT)
def test_short_name_is_the_long_one(alias, rng):
    full = registry.ALIASES[alias]
    spec = registry.lookup(alias)
    assert spec.name == full and registry.lookup(alias.upper()) is spec and registry.known(alias)
    key, iv = rng.key(full), rng.iv(full)
    data = rng.data(spec.block_size * 9)
    want = ciphergrid.encrypt(data, full, key, iv)
    assert ciphergrid.encrypt(data, alias, key, iv) == want
    assert ciphergrid.decrypt(want, alias, key, iv) == data
    with ciphergrid.Cipher(alias, key, iv) as c:
        assert c.spec.name == full


@pytest.mark.parametrize("alias", SHORT)
def test_short_name_on_the_command_line_vs_openssl(alias, openssl, rng):
    """`ciphergrid encrypt -c aes128` = `openssl enc -aes128 -nopad` (the legacy provider loaded
    for DES, CAST5 and SEED, as for their long names)."""
    full = registry.ALIASES[alias]
    spec = registry.lookup(full)
    key, iv = rng.key(full), rng.iv(full)
    data = rng.data(spec.block_size * 11)
    want = openssl_enc(openssl, alias, key, iv, data)
    assert want == openssl_enc(openssl, full, key, iv, data)
    args = ["--key", key.hex()] + (["--iv", iv.hex()] if iv else []) + ["--allow-weak", "-q"]
    assert ok(cli("encrypt", "--cipher", alias, *args, input=data)).stdout == want
    assert ok(cli("decrypt", "--cipher", alias, *args, input=want)).stdout == data


def test_list_shows_short_names():
    text = ok(cli("list")).stdout.decode()
    assert "aes128 = aes-128-cbc" in text and "des3 = des-ede3-cbc" in text
    import json

    rows = {r["name"]: r for r in json.loads(ok(cli("list", "--json")).stdout)}
    assert rows["aes-128-cbc"]["aliases"] == ["aes128"] and rows["aes-128-ctr"]["aliases"] == []
    assert sorted(rows["cast5-cbc"]["aliases"]) == ["cast", "cast-cbc"]


