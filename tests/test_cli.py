"""The command line: `python -m ciphergrid ...` in a subprocess.

Output must be byte-identical to `openssl enc -NAME -nopad -K HEX -iv HEX` (with --pad pkcs7: to
openssl's default padding).  `openssl enc` does not do XTS, so XTS is compared with pyca/cryptography
(OpenSSL's library).  Errors: exit code 2, one stderr line starting with "ciphergrid: error:", and
the --out file neither created nor, when it existed, touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import ciphergrid
from ciphergrid import registry
from conftest import absent_spec

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ciphergrid.__file__)))
TIMEOUT = 600
ALL = registry.names()
# `openssl enc` checks the names OpenSSL has (not XTS: enc does not do it); the others (SEED-CTR ...)
# are checked against the reference
OPENSSL_NAMES = [n for n in ALL if registry.lookup(n).mode.name != "xts" and registry.lookup(n).openssl_name]
REF_NAMES = [n for n in ALL if registry.lookup(n).mode.name != "xts" and n not in OPENSSL_NAMES]
XTS_NAMES = [n for n in ALL if registry.lookup(n).mode.name == "xts"]
PAD_NAMES = [n for n in OPENSSL_NAMES if registry.lookup(n).mode.name in ("ecb", "cbc")]


def cli_env(extra: dict | None = None) -> dict:
    """The environment of a CLI subprocess: this checkout first on PYTHONPATH (what is already
    there, e.g. carried wheels, stays after it)."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = PKG_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def cli(*args: str, input: bytes | None = None, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ciphergrid", *map(str, args)], input=input,
                          capture_output=True, env=cli_env(env), cwd=cwd, timeout=TIMEOUT)


def ok(p: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert p.returncode == 0, f"exit {p.returncode}; stderr:\n{p.stderr.decode(errors='replace')}"
    return p


def openssl_enc(openssl: str, name: str, key: bytes, iv: bytes | None, data: bytes, *,
                decrypt: bool = False, pad: bool = False) -> bytes:
    args = [openssl, "enc", f"-{name}", "-K", key.hex()]
    if registry.lookup(name).algorithm.openssl_provider == "legacy":  # OpenSSL 3: SEED, CAST5, DES
        args += ["-provider", "legacy", "-provider", "default"]
    if iv is not None:
        args += ["-iv", iv.hex()]
    if not pad:
        args.append("-nopad")
    if decrypt:
        args.append("-d")
    p = subprocess.run(args, input=data, capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout


def _size(name: str) -> int:
    return 16 * 70 if registry.lookup(name).mode.name in ("ecb", "cbc") else 16 * 70 + 9


def _key_iv_args(key: bytes, iv: bytes | None) -> list[str]:
    """--key, --iv, and --allow-weak: the generic tests run every name with random keys (2-key
    TDEA included); tests/test_policy.py checks the policy itself."""
    return ["--key", key.hex()] + (["--iv", iv.hex()] if iv is not None else []) + ["--allow-weak"]


# --------------------------------------------------------------------------- outputs

@pytest.mark.parametrize("name", OPENSSL_NAMES)
def test_files_and_pipes_vs_openssl(name, openssl, tmp_path, rng):
    key, iv, pt = rng.key(name), rng.iv(name), rng.data(_size(name))
    want = openssl_enc(openssl, name, key, iv, pt)
    src, enc = tmp_path / "pt.bin", tmp_path / "ct.bin"
    src.write_bytes(pt)
    # encrypt: files
    ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", src, "--out", enc, cwd=tmp_path))
    assert enc.read_bytes() == want
    # decrypt: stdin -> stdout
    p = ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), input=want, cwd=tmp_path))
    assert p.stdout == pt
    # and the other way round: encrypt through pipes, decrypt files
    p = ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), input=pt, cwd=tmp_path))
    assert p.stdout == want
    dec = tmp_path / "back.bin"
    ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", enc, "--out", dec, cwd=tmp_path))
    assert dec.read_bytes() == pt


@pytest.mark.parametrize("name", REF_NAMES)
def test_files_and_pipes_vs_reference(name, tmp_path, rng, ref):
    """Names OpenSSL lacks: encrypt files, decrypt through pipes, against the reference."""
    key, iv, pt = rng.key(name), rng.iv(name), rng.data(_size(name))
    src, enc = tmp_path / "pt.bin", tmp_path / "ct.bin"
    src.write_bytes(pt)
    ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", src, "--out", enc, cwd=tmp_path))
    assert enc.read_bytes() == ref.encrypt(pt, name, key, iv)
    p = ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), input=enc.read_bytes(), cwd=tmp_path))
    assert p.stdout == pt


@pytest.mark.parametrize("name", XTS_NAMES)
def test_xts_vs_reference(name, tmp_path, rng, ref):
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(16 * 70 + 9)
    p = ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), input=pt, cwd=tmp_path))
    assert p.stdout == ref.encrypt(pt, name, key, iv)
    p = ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), input=p.stdout, cwd=tmp_path))
    assert p.stdout == pt
    # sector mode, with a short last sector
    pt = rng.data(5 * 4096 + 100)
    start = 2**40 + 7
    src, out = tmp_path / "disk.img", tmp_path / "disk.enc"
    src.write_bytes(pt)
    ok(cli("encrypt", "--cipher", name, "--key", key.hex(), "--sector-size", 4096,
           "--start-sector", start, "--in", src, "--out", out, cwd=tmp_path))
    assert out.read_bytes() == ref.encrypt(pt, name, key, sector_size=4096, start_sector=start)
    p = ok(cli("decrypt", "--cipher", name, "--key", key.hex(), "--sector-size", 4096,
               "--start-sector", start, "--in", out, cwd=tmp_path))
    assert p.stdout == pt


@pytest.mark.parametrize("name", PAD_NAMES)
def test_pkcs7_vs_openssl_default_padding(name, openssl, tmp_path, rng):
    key, iv = rng.key(name), rng.iv(name)
    # every length class on the first name of each mode, one length on the others (process startup)
    first = name == [n for n in PAD_NAMES if registry.lookup(n).mode.name == registry.lookup(name).mode.name][0]
    for n in ((0, 5, 16, 33) if first else (33,)):
        pt = rng.data(n)
        want = openssl_enc(openssl, name, key, iv, pt, pad=True)
        p = ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--pad", "pkcs7", input=pt, cwd=tmp_path))
        assert p.stdout == want, f"{n} bytes"
        if n in (0, 33):
            p = ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), "--pad", "pkcs7",
                       input=want, cwd=tmp_path))
            assert p.stdout == pt


def test_large_file_vs_openssl(openssl, tmp_path, rng):
    """Several MiB through the CLI (chunked reading/writing, CTR counter continuity)."""
    name = "aes-256-ctr" if "aes-256-ctr" in ALL else OPENSSL_NAMES[0]
    key, iv = rng.key(name), b"\x00" * 8 + b"\xff" * 7 + b"\xf0"
    pt = rng.data(5 * (1 << 20) + 3 if registry.lookup(name).mode.name == "ctr" else 5 * (1 << 20))
    src, out = tmp_path / "big.bin", tmp_path / "big.enc"
    src.write_bytes(pt)
    ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", src, "--out", out, cwd=tmp_path))
    assert out.read_bytes() == openssl_enc(openssl, name, key, iv, pt)


@pytest.fixture
def ramdisk():
    """A fresh directory on a tmpfs (/dev/shm), where a new file's pages are zero-filled on first
    touch and the CLI faults an output's pages in while the device starts."""
    import tempfile
    from pathlib import Path

    from ciphergrid.transfer.files import TMPFS_MAGIC, fs_magic as _fs_magic

    magic = None
    if os.path.isdir("/dev/shm"):
        fd = os.open("/dev/shm", os.O_RDONLY)
        try:
            magic = _fs_magic(fd)
        finally:
            os.close(fd)
    if magic != TMPFS_MAGIC:
        pytest.skip("no tmpfs at /dev/shm: the RAM-disk output path is not exercised")
    d = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="ciphergrid-test-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_ramdisk_output_auto_device(openssl, ramdisk, rng):
    """--device auto (the default) with the output sized and faulted in first: on a machine
    without a GPU the run falls to OpenSSL, which writes the pre-sized file sequentially; the
    file ends where the data does (a CBC decryption: the output is as long as the input)."""
    name = "aes-128-cbc"
    key, iv = rng.key(name), rng.iv(name)
    ct = rng.data(2 * (1 << 20) + 16 * 7)
    src, out = ramdisk / "in.bin", ramdisk / "out.bin"
    src.write_bytes(ct)
    ok(cli("decrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", src, "--out", out,
           env={"CIPHERGRID_PREFAULT": "1Mi"}))
    assert out.read_bytes() == openssl_enc(openssl, name, key, iv, ct, decrypt=True)
    assert sorted(x.name for x in ramdisk.iterdir()) == ["in.bin", "out.bin"]


def test_ramdisk_output_vs_openssl(device, openssl, ramdisk, rng):
    """An output on a RAM disk, faulted in ahead by background threads (CIPHERGRID_PREFAULT=1Mi:
    from 1 MiB on), on every device: the bytes of `openssl enc`, the file's size exact (the native
    path writes sequentially into the pre-sized file), and no temporary file left."""
    name = "aes-128-ctr"
    key, iv = rng.key(name), rng.iv(name)
    pt = rng.data(3 * (1 << 20) + 5)
    src, out = ramdisk / "in.bin", ramdisk / "out.bin"
    src.write_bytes(pt)
    ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--in", src, "--out", out,
           "--device", device, env={"CIPHERGRID_PREFAULT": "1Mi"}))
    assert out.read_bytes() == openssl_enc(openssl, name, key, iv, pt)
    assert sorted(x.name for x in ramdisk.iterdir()) == ["in.bin", "out.bin"]


def test_ramdisk_failed_run_leaves_nothing(device, ramdisk):
    """A run that fails after the output was sized and faulted in (ECB over a partial block,
    found by the stream) exits 2 and leaves no output and no temporary file."""
    src, out = ramdisk / "in.bin", ramdisk / "out.bin"
    src.write_bytes(bytes(2 * (1 << 20) + 1))
    p = cli("encrypt", "--cipher", "aes-128-ecb", "--key", "00" * 16, "--in", src, "--out", out,
            "--device", device, env={"CIPHERGRID_PREFAULT": "1Mi"})
    _assert_error(p, "ecb-partial-block on a RAM disk")
    assert sorted(x.name for x in ramdisk.iterdir()) == ["in.bin"]


def test_every_device(device, tmp_path, rng, ref):
    """--device SPEC, for every device, one name per mode."""
    seen = set()
    for name in ALL:
        mode = registry.lookup(name).mode.name
        if mode in seen:
            continue
        seen.add(mode)
        key, iv, pt = rng.key(name), rng.iv(name), rng.data(_size(name))
        p = ok(cli("encrypt", "--cipher", name, *_key_iv_args(key, iv), "--device", device, input=pt, cwd=tmp_path))
        assert p.stdout == ref.encrypt(pt, name, key, iv), f"{name} on {device}"


def test_uppercase_hex_and_name(tmp_path, rng, ref):
    name = "aes-128-cbc" if "aes-128-cbc" in ALL else ALL[0]
    key, iv, pt = rng.key(name), rng.iv(name), rng.data(64)
    args = ["--key", key.hex().upper()] + (["--iv", iv.hex().upper()] if iv else [])
    p = ok(cli("encrypt", "--cipher", name.upper(), *args, input=pt, cwd=tmp_path))
    assert p.stdout == ref.encrypt(pt, name, key, iv)


# --------------------------------------------------------------------------- errors

K16 = "000102030405060708090a0b0c0d0e0f"
IV16 = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
ABSENT_CUDA, ABSENT_OPENCL = absent_spec("cuda"), absent_spec("opencl")

ERROR_CASES = {
    "bad-hex-key": (["encrypt", "--cipher", "aes-128-cbc", "--key", "zz" * 16, "--iv", IV16], 32),
    "odd-hex-key": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16[:-1], "--iv", IV16], 32),
    "bad-hex-iv": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", "x" * 32], 32),
    "wrong-key-size": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16[:-2], "--iv", IV16], 32),
    "aes-256-key-too-short": (["encrypt", "--cipher", "aes-256-ecb", "--key", K16], 32),
    "wrong-iv-size": (["encrypt", "--cipher", "aes-128-ctr", "--key", K16, "--iv", IV16[:-2]], 32),
    "missing-iv": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16], 32),
    "iv-for-ecb": (["encrypt", "--cipher", "aes-128-ecb", "--key", K16, "--iv", IV16], 32),
    "ecb-partial-block": (["encrypt", "--cipher", "aes-128-ecb", "--key", K16], 17),
    "cbc-decrypt-partial-block": (["decrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16], 33),
    "bad-padding": (["decrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "--pad", "pkcs7"], "badpad"),
    "unknown-pad": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "--pad", "zero"], 32),
    "unknown-cipher": (["encrypt", "--cipher", "aes-128-ocb", "--key", K16, "--iv", IV16], 32),
    "xts-short": (["encrypt", "--cipher", "aes-128-xts", "--key", K16 + IV16, "--iv", IV16], 15),
    "xts-equal-keys": (["encrypt", "--cipher", "aes-128-xts", "--key", K16 + K16, "--iv", IV16], 64),
    "xts-iv-and-sectors": (["encrypt", "--cipher", "aes-128-xts", "--key", K16 + IV16, "--iv", IV16,
                            "--sector-size", "512", "--start-sector", "0"], 1024),
    "absent-device": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "--device", ABSENT_CUDA], 32),
    "absent-opencl-device": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "--device", ABSENT_OPENCL], 32),
    "missing-in": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16], "missing"),
    "in-is-directory": (["encrypt", "--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16], "directory"),
}


#: exit codes (README): 2 usage or input, 3 authentication (bad padding)
EXIT = {case: 3 if case == "bad-padding" else 2 for case in ERROR_CASES}


def _bad_padding_input() -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    e = Cipher(algorithms.AES(bytes.fromhex(K16)), modes.CBC(bytes.fromhex(IV16))).encryptor()
    # 64 good bytes, then a last block ending in 0x00: not PKCS#7
    return e.update(bytes(range(64)) + bytes(16)) + e.finalize()


def _error_case(case: str, tmp_path):
    args, data = ERROR_CASES[case]
    args = list(args)
    if data == "missing":
        src = tmp_path / "does-not-exist.bin"
    elif data == "directory":
        src = tmp_path / "a-directory"
        src.mkdir()
    else:
        src = tmp_path / "in.bin"
        src.write_bytes(_bad_padding_input() if data == "badpad" else bytes(range(256))[:data] if data <= 256 else bytes(data))
    return args + ["--in", str(src)]


def _assert_error(p: subprocess.CompletedProcess, case: str, code: int = 2):
    """Exit ``code`` and one error line (warnings, such as a key given on the command line, may
    come before it)."""
    err = p.stderr.decode(errors="replace")
    assert p.returncode == code, f"{case}: exit {p.returncode}, stderr: {err!r}"
    lines = [x for x in err.rstrip("\n").split("\n") if not x.startswith("ciphergrid: warning:")]
    assert len(lines) == 1 and lines[0].startswith("ciphergrid: error:"), (
        f"{case}: stderr should be one line starting with 'ciphergrid: error:', got {err!r}")
    assert len(lines[0]) > len("ciphergrid: error: "), f"{case}: empty message"


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_creates_no_output_file(case, tmp_path):
    args = _error_case(case, tmp_path)
    out = tmp_path / "out.bin"
    p = cli(*args, "--out", out, cwd=tmp_path)
    _assert_error(p, case, EXIT[case])
    assert not out.exists(), f"{case}: --out file was created ({out.stat().st_size} bytes)"
    assert sorted(x.name for x in tmp_path.iterdir() if x.name not in ("in.bin", "a-directory")) == [], \
        f"{case}: files left behind: {list(tmp_path.iterdir())}"
    assert p.stdout == b""


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_leaves_existing_output_untouched(case, tmp_path):
    args = _error_case(case, tmp_path)
    out = tmp_path / "out.bin"
    sentinel = b"precious data that must survive a failed run\n" * 100
    out.write_bytes(sentinel)
    os.utime(out, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = out.stat()
    p = cli(*args, "--out", out, cwd=tmp_path)
    _assert_error(p, case, EXIT[case])
    assert out.read_bytes() == sentinel, f"{case}: existing --out file was modified"
    after = out.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), \
        f"{case}: existing --out file was replaced or touched"


def test_error_on_stdin_stdout(tmp_path):
    """The error contract holds with pipes too (bad key, data on stdin)."""
    p = cli("encrypt", "--cipher", "aes-128-cbc", "--key", "zz", "--iv", IV16, input=bytes(32), cwd=tmp_path)
    _assert_error(p, "bad key on stdin")
    assert p.stdout == b""


def test_usage_error_exit_code(tmp_path):
    """argparse usage errors (missing --cipher) exit 2 as well."""
    p = cli("encrypt", "--key", K16, input=bytes(16), cwd=tmp_path)
    assert p.returncode == 2


# --------------------------------------------------------------------------- devices, selftest

def test_devices_command(tmp_path):
    p = ok(cli("devices", cwd=tmp_path))
    out = p.stdout.decode()
    for d in ciphergrid.devices():
        assert d.spec in out, f"{d.spec} missing from `ciphergrid devices`:\n{out}"


def test_selftest_command(tmp_path):
    p = ok(cli("selftest", cwd=tmp_path))
    text = (p.stdout + p.stderr).decode(errors="replace")
    for d in ciphergrid.devices():
        assert d.spec in text, f"selftest output does not mention {d.spec}:\n{text[-2000:]}"


_NO_NUMPY = """
import importlib.abc, runpy, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("numpy imported on the OpenSSL file path")
sys.meta_path.insert(0, _Block())
sys.argv = ["ciphergrid"] + sys.argv[1:]
runpy.run_module("ciphergrid", run_name="__main__")
"""


@pytest.mark.parametrize("name", ["aes-128-ctr", "aes-256-cbc"])
def test_openssl_file_and_pipe_path_imports_no_numpy(name, tmp_path, rng):
    """Start-up: encrypting a file and decrypting a pipe on the OpenSSL engine never imports numpy
    (the import alone was 0.07-0.44 s of the CLI's start-up): the same bytes with numpy blocked."""
    spec = registry.lookup(name)
    key, iv = rng.key(name), rng.randbytes(spec.iv_len)
    data = rng.data(3 * 1024 * 1024 + 16 * 7)
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    base = [sys.executable, "-c", _NO_NUMPY]
    common = ["--cipher", name, "--key-file", str(tmp_path / "k"), "--iv", iv.hex(), "--device", "native"]
    (tmp_path / "k").write_bytes(key)
    p = subprocess.run(base + ["encrypt", *common, "--in", str(src), "--out", str(dst)],
                       capture_output=True, env=cli_env(), timeout=TIMEOUT)
    ok(p)
    ct = dst.read_bytes()
    assert ct == ciphergrid.encrypt(data, name, key, iv, device="native")
    p = subprocess.run(base + ["decrypt", *common], input=ct, capture_output=True, env=cli_env(),
                       timeout=TIMEOUT)
    assert ok(p).stdout == data


# --------------------------------------------------------------------------- in process (issue 46-48)

def run_main(*args) -> int:
    """``ciphergrid.cli.main`` in this process; argparse's exits as their codes."""
    from ciphergrid.cli import main

    try:
        return main([str(a) for a in args])
    except SystemExit as e:
        return e.code


def _one_error_line(err: str) -> str:
    lines = [x for x in err.rstrip("\n").split("\n") if not x.startswith("ciphergrid: warning:")]
    assert len(lines) == 1 and lines[0].startswith("ciphergrid: error:"), err
    return lines[0]


def test_help_lists_every_command_with_its_line(capsys):
    """`ciphergrid --help`: every command on a line of its own with its help text (seal, open and
    serve included; a command added without help= shows no text and fails here)."""
    import argparse
    import re

    from ciphergrid.cli.parser import build_parser

    assert run_main("--help") == 0
    out = capsys.readouterr().out
    sub = next(a for a in build_parser([])._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert set(helps) == set(sub.choices) and {"seal", "open", "serve"} <= set(helps)
    for name, text in helps.items():
        assert text, f"{name} has no help text"
        first = " ".join(text.split()[:2])
        assert re.search(rf"^\s+{re.escape(name)}\s+{re.escape(first)}", out, re.M), (name, out)


def test_unrecognised_option_points_to_the_commands_help(tmp_path, capsys):
    """The command's own help is named, and no value among the extra arguments is shown (a
    mistyped option's value may be a key)."""
    assert run_main("encrypt", "-c", "aes-128-ctr", "--key-file", tmp_path / "k", "--bogus",
                    "--kye", "00112233445566778899aabbccddeeff") == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == ("ciphergrid: error: unrecognized arguments: --bogus --kye and 1 more "
                    "(see `ciphergrid encrypt --help`)"), line
    assert run_main("list", "extra") == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "see `ciphergrid list --help`" in line and "extra" not in line, line
    # what the top-level parser itself refuses still names the top-level help
    assert run_main("nosuchcommand") == 2
    assert "see `ciphergrid --help`" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("iv,why", [("xyz", "characters other than 0-9, a-f"),
                                    ("zz" * 16, "characters other than 0-9, a-f"),
                                    ("abc", "an odd number of digits (3)"),
                                    ("00" * 15 + "0", "an odd number of digits (31)")])
def test_bad_hex_names_what_is_wrong(iv, why, tmp_path, capsys):
    """Characters that are not hex digits are said first (not "odd number of digits" for
    "xyz"), then the digits' parity."""
    (tmp_path / "k").write_text(K16)
    assert run_main("encrypt", "-c", "aes-128-cbc", "--key-file", tmp_path / "k", "--iv", iv,
                    "--in", tmp_path / "k", "--out", tmp_path / "o") == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("ciphergrid: error: --iv must be hexadecimal") and line.endswith(why), line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("pad", [[], ["--pad", "pkcs7"]])
def test_partial_block_is_an_input_error_padded_or_not(pad, tmp_path, capsys):
    """17 bytes to a CBC decryption: exit 2 with or without --pad pkcs7 (the length is the
    input's error); 3 stays for padding that does not check."""
    (tmp_path / "k").write_text(K16)
    src = tmp_path / "in"
    src.write_bytes(bytes(17))
    common = ["decrypt", "-c", "aes-128-cbc", "--key-file", tmp_path / "k", "--iv", IV16, *pad,
              "--out", tmp_path / "o"]
    assert run_main(*common, "--in", src) == 2
    assert "17 bytes is not a multiple of 16" in _one_error_line(capsys.readouterr().err)
    if pad:
        src.write_bytes(_bad_padding_input())
        assert run_main(*common, "--in", src) == 3
        assert "padding" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("n", ["0", "-1", str(2**31), str(2**32 - 1), str(2**32), str(10**11),
                               str(2**64), "1e3", "ten", ""])
def test_iter_out_of_range_is_one_line(n, capsys):
    """--iter outside 1 .. 2^31-1 (what OpenSSL's PBKDF2 takes): exit 2, one line, before any
    derivation (was: 0 taken as 10000; 2^31 a Rust panic; 2^64 an OverflowError)."""
    assert run_main("encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "pass:pw",
                    "--iter", n) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--iter" in line and "1 to 2147483647" in line and "see `ciphergrid encrypt --help`" in line


def test_iter_bounds_accepted():
    from ciphergrid import keys
    from ciphergrid.cli.parser import _iterations

    assert _iterations("1") == 1 and _iterations(str(2**31 - 1)) == keys.MAX_ITER == 2**31 - 1
    with pytest.raises(ciphergrid.InvalidArgument, match="from 1 to 2147483647"):
        keys.derive(b"pw", bytes(8), 16, 16, pbkdf2=True, iterations=2**31)


# --------------------------------------------------------------------------- --service for every job

@pytest.fixture
def service():
    """A service in a thread of this process (as tests/test_service.py's), on a socket in a
    fresh short folder; stopped, its socket gone, at the end."""
    from ciphergrid.testing import services

    with services.short_folder("cg-cli-") as d, services.threaded(d) as s:
        yield s


#: jobs that go through a context, not a stream: (name, options, data length)
CONTEXT_JOBS = {
    "pad": ("aes-128-cbc", ["--pad", "pkcs7"], 1000),
    "base64": ("aes-128-ctr", ["-a"], 1000),
    "passphrase": ("aes-128-cbc", ["--pbkdf2", "--pass", "env:CG_CLI_PW", "--iter", "2"], 1000),
}


@pytest.mark.parametrize("job", list(CONTEXT_JOBS))
def test_context_jobs_run_through_the_named_service(job, service, tmp_path, capsys, monkeypatch):
    """--pad pkcs7, -a and passphrase jobs with --service: run by the service (-v says so), the
    same bytes as in this process, both ways (they were run here, the service ignored)."""
    from ciphergrid import keys

    name, opts, n = CONTEXT_JOBS[job]
    monkeypatch.setenv("CG_CLI_PW", "pw")
    monkeypatch.setattr(keys, "new_salt", lambda: bytes(range(8)))   # (the same header twice)
    (tmp_path / "k").write_text(K16)
    keyed = [] if "--pbkdf2" in opts else ["--key-file", tmp_path / "k", "--iv", IV16]
    src = tmp_path / "in"
    data = bytes(range(256)) * (n // 256) + bytes(n % 256)
    src.write_bytes(data)
    outs = {}
    for where in (service.address, "off"):
        out = tmp_path / f"out-{where == 'off'}"
        assert run_main("encrypt", "-c", name, *keyed, *opts, "--in", src, "--out", out, "-v", "-q",
                        "--service", where) == 0
        err = capsys.readouterr().err
        assert ("by the service at " + service.address in err) == (where != "off"), err
        outs[where] = out.read_bytes()
    assert outs[service.address] == outs["off"] and outs["off"] != data
    back = tmp_path / "back"
    assert run_main("decrypt", "-c", name, *keyed, *opts, "--in", tmp_path / "out-False",
                    "--out", back, "-v", "-q", "--service", service.address) == 0
    assert "by the service at" in capsys.readouterr().err
    assert back.read_bytes() == data


#: every kind of job the command line takes: (name, options); a stream, contexts, an AEAD
EVERY_JOB = {
    "stream": ("aes-128-ctr", []),
    "pad": ("aes-128-cbc", ["--pad", "pkcs7"]),
    "base64": ("aes-128-ctr", ["-a"]),
    "passphrase": ("aes-128-cbc", ["--pbkdf2", "--pass", "env:CG_CLI_PW"]),
    "aead": ("aes-128-gcm", ["--nonce", "00" * 12]),
}


@pytest.mark.parametrize("direction", ["encrypt", "decrypt"])
@pytest.mark.parametrize("job", list(EVERY_JOB))
def test_a_named_service_that_does_not_answer_fails_every_job(job, direction, tmp_path, capsys,
                                                               monkeypatch):
    """--service PATH where nothing answers: exit 5, one line, no output, for every kind of job
    (it was ignored, the job run here, for contexts and passphrases)."""
    name, opts = EVERY_JOB[job]
    monkeypatch.setenv("CG_CLI_PW", "pw")
    (tmp_path / "k").write_text(K16)
    keyed = [] if "--pbkdf2" in opts else ["--key-file", tmp_path / "k"]
    keyed += ["--iv", IV16] if not opts or opts[0] in ("--pad", "-a") else []
    src = tmp_path / "in"
    src.write_bytes(bytes(64))
    out = tmp_path / "o"
    assert run_main(direction, "-c", name, *keyed, *opts, "--in", src, "--out", out,
                    "--service", tmp_path / "nothing.sock") == 5
    assert "no service at" in _one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "k"]
