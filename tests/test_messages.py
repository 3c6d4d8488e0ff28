"""Every message true (issue 35): what the command line and the names say is what happened.

* A pipe whose length is not whole blocks: the error gives the input's whole length (not the
  last read's), on every path (OpenSSL pieces, the device pipeline).
* An unknown --cipher suggests the close names (the AEADs' included) and points to the list; a
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
from conftest import absent_spec
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

def test_unknown_cipher_suggests_and_points_to_the_list():
    """One short line: the close names (block ciphers, AEADs and OpenSSL's short names alike),
    then where every name is listed; not every name (a 1,434-character line)."""
    p = cli("encrypt", "--cipher", "aes-128-cbx", "--key", K16, "--iv", IV16, input=bytes(16))
    _assert_error(p, "unknown cipher")
    err = p.stderr.decode().strip().splitlines()[-1]
    assert err == ("ciphergrid: error: unknown cipher 'aes-128-cbx' (did you mean aes-128-cbc, "
                   "aes-128-ecb or aes-128-ctr?); `ciphergrid list` gives every name"), err
    # the same words from the library
    with pytest.raises(ciphergrid.UnsupportedCipher, match=r"did you mean aes-128-cbc, .*ciphergrid list"):
        ciphergrid.encrypt(bytes(16), "aes-128-cbx", bytes(16), bytes(16))
    # an AEAD's name and a short name are suggested too; a name far from all: no suggestion
    from ciphergrid import aeads

    assert not aeads.is_aead("zzz")
    assert "did you mean chacha20-poly1305" in str(registry.unknown("chacha20-poly1350"))
    assert "did you mean aes128" in str(registry.unknown("aes128x"))
    msg = str(registry.unknown("zzz"))
    assert msg == "unknown cipher 'zzz'; `ciphergrid list` gives every name"


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
    # the API the same: the unknown name, not "is not an AEAD"
    with pytest.raises(ciphergrid.UnsupportedCipher, match="did you mean aes-256-gcm"):
        ciphergrid.encrypt(bytes(16), "aes-256-gcmx", key=bytes(32), nonce=bytes(12))
    with pytest.raises(ciphergrid.InvalidArgument, match="aes-256-cbc is not an AEAD"):
        ciphergrid.encrypt(bytes(16), "aes-256-cbc", key=bytes(32), iv=bytes(16), nonce=bytes(12))


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


# --------------------------------------------------------------------------- 6. tables

#: devices of the fake benchmark records (specs that name no device here)
FAKE_CPU, FAKE_GPU = absent_spec("opencl", 2), absent_spec("cuda")


def _rec(kind, device, gbps, size=1 << 20, cipher="aes-128-ctr", **kw):
    from ciphergrid.bench import records

    r = records.Record(cipher=cipher, algorithm="aes", key_bits=128, mode="ctr", direction="encrypt",
                       device=device, device_name=device, device_kind="cpu", runtime="opencl",
                       kind=kind, size=size, **kw)
    t = size / (gbps * 1e9)
    r.set_times([t, t * 1.1, t * 0.9])
    return r


def _results(records):
    from ciphergrid.bench import records as rec_mod

    host = {"packages": {"ciphergrid": "0.1.0", "numpy": "2.0", "cryptography": "44.0"},
            "ciphergrid": {"version": "0.1.0", "git_commit": "0123456789abcdef"},
            "python": "3.11.7", "cpu_model": "CPU", "cpu_usable": 2,
            "openssl": {"cli": "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)"}}
    run = {"suite": "ciphers", "command": "ciphergrid bench", "date": "2026-01-01", "host": host,
           "counts": {"ok": len(records)}}
    return rec_mod.Results(run=run, records=records)


def test_report_speedups_and_versions():
    from ciphergrid.bench import report

    res = _results([_rec("openssl-allcores", "openssl", 16.5, threads=2),
                    _rec("e2e", "native", 0.0254), _rec("kernel", FAKE_CPU, 0.00004),
                    _rec("kernel", FAKE_GPU, 300.0)])
    md = report.render_markdown(res)
    assert "0.00x" not in md
    speed = {row.split(" | ")[2]: row.split(" | ")[-1].rstrip(" |") for row in md.splitlines()
             if row.startswith("| aes-128-ctr | encrypt |") and row.count("|") == 9}
    assert speed == {"native e2e": "0.0015x", f"{FAKE_CPU} kernel": "0.0000024x",
                     f"{FAKE_GPU} kernel": "18.18x"}, speed
    versions = next(x for x in md.splitlines() if x.startswith("- **Versions:**"))
    assert versions == ("- **Versions:** ciphergrid 0.1.0 0123456789ab, Python 3.11.7, "
                        "cryptography 44.0, numpy 2.0"), versions
    baseline = next(x for x in md.splitlines() if x.startswith("- **OpenSSL baseline:**"))
    assert baseline.count("3.0.19") == 1, baseline
    assert [report.ratio_text(x) for x in (None, 0.5, 0.04, 0.004, 0.0, 2e-8)] == \
        ["–", "0.50x", "0.040x", "0.0040x", "0x", "<0.000001x"]


def test_bench_summary_has_a_header_and_fixed_columns():
    from ciphergrid import bench

    recs = [_rec("openssl-1core", "openssl", 8.377, threads=1), _rec("e2e", "native", 0.0254, size=16),
            _rec("kernel", FAKE_CPU, 4.2e-5, cipher="copy")]
    bad = _rec("kernel", FAKE_CPU, 1.0, size=1024)
    bad.status, bad.error = "failed", "wrong output"
    out = io.StringIO()
    bench.print_summary(_results(recs + [bad]), out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["cipher", "dir", "device", "kind", "size", "GB/s", "min-max"]
    assert len({len(x) for x in lines[:4]}) == 1, lines       # the figures right-aligned under it
    ends = {x.index(v) + len(v) for x, v in zip(lines[1:4], ("8.377", "0.0254", "4.2e-05"))}
    assert ends == {lines[0].index("GB/s") + 4}, lines
    assert lines[4].endswith("FAILED: wrong output")


def test_selftest_columns_line_up():
    from ciphergrid.selftest import print_table

    rows = [(FAKE_CPU, "aes-128-cbc", 1178, 0), (FAKE_CPU, "camellia-128-cbc", 16, 0),
            ("native", "chacha20-poly1305", 576, 0), ("native", "hight-ecb", None, None),
            ("native", "present-128-ecb", 3, 1)]
    out = io.StringIO()
    sys.stdout, real = out, sys.stdout
    try:
        print_table(rows, 1)
    finally:
        sys.stdout = real
    lines = out.getvalue().splitlines()
    head = lines[0]
    assert head.split() == ["device", "cipher", "passed", "failed"]
    for x in lines[1:-1]:  # every name, number and dash ends where its column's title does
        for title in ("passed", "failed"):
            end = head.index(title) + len(title)
            assert x[end - 1] != " " and (len(x) == end or x[end] == " "), (title, x)
        assert x.index(x.split()[1]) == head.index("cipher"), x
    assert lines[-1] == "1773 passed, 1 failed"
    assert re.search(r"present-128-ecb +3 +1  FAIL$", lines[-2])
