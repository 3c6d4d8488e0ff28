"""The sealed-file commands around the format: ``keygen``, ``seal``/``open`` with a passphrase
(the Argon2id wrapper of docs/format.md), each failure's exit code, ranges past the end, what a
pipe got before a failure, --all-or-nothing, -v/-q and interruptions (issues 46, 48, 49).
Native engine (OpenSSL), small messages and small Argon2id costs: the tests stay fast."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from ciphergrid import cobblestone as cb
from conftest import cli_main as _main

K = 16384
SEALED = K + 16


def _cli(*args, one_core=False, **kw):
    """The command in a new process; ``one_core``: on one core (one worker: the pieces of a
    stream in order, whatever the host's cores)."""
    kw.setdefault("timeout", 60)
    if one_core:
        cpu = min(os.sched_getaffinity(0))
        kw["preexec_fn"] = lambda: os.sched_setaffinity(0, {cpu})
    return subprocess.run([sys.executable, "-m", "ciphergrid", *map(str, args)], capture_output=True,
                          **kw)


def _key(tmp_path, aes256=False):
    kf = tmp_path / "k"
    assert _main("keygen", "--out", kf, *(["--aes256"] if aes256 else [])) == 0
    return kf, bytes.fromhex(kf.read_text())


# ------------------------------------------------------------------------------------ keygen
def test_keygen_new_file_0600_never_replaced(tmp_path, capfd):
    kf = tmp_path / "k"
    assert _main("keygen", "--out", kf) == 0
    assert capfd.readouterr() == ("", "")
    text = kf.read_bytes()
    assert len(text) == 33 and text.endswith(b"\n") and len(bytes.fromhex(text.decode())) == 16
    assert stat.S_IMODE(kf.stat().st_mode) == 0o600
    assert _main("keygen", "--out", kf) == 2
    assert "exists" in capfd.readouterr().err and kf.read_bytes() == text
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    assert _main("keygen", "--out", link) == 2
    assert not (tmp_path / "nowhere").exists()
    assert _main("keygen", "--out", tmp_path / "no" / "k") == 4
    assert "cannot create" in capfd.readouterr().err
    keys = []
    for _ in range(2):
        assert _main("keygen", "--aes256", "--out", "-") == 0
        out = capfd.readouterr().out
        assert out.endswith("\n") and len(bytes.fromhex(out)) == 32
        keys.append(out)
    assert keys[0] != keys[1]
    # the key opens what it sealed
    kf2 = tmp_path / "k2"
    assert _main("keygen", "--aes256", "--out", kf2) == 0
    p = _cli("seal", "--aes256", "--key-file", kf2, input=b"hello")
    assert p.returncode == 0, p.stderr.decode()
    assert cb.decrypt(p.stdout, bytes.fromhex(kf2.read_text()), aes256=True) == b"hello"


def _sealed_file(tmp_path, n=3 * K + 100, ctx=b"c"):
    kf, key = _key(tmp_path)
    msg = os.urandom(n)
    f = tmp_path / "m.cg"
    f.write_bytes(cb.encrypt(msg, key, ctx, device="native"))
    return kf, key, msg, f


# ------------------------------------------------------------------------------------ exit codes
def test_each_failure_its_exit_code(tmp_path, capfd):
    kf, key, msg, f = _sealed_file(tmp_path)
    s = f.read_bytes()
    out = tmp_path / "out"
    bad = tmp_path / "bad"
    cases = [
        (8, "commitment", s, "other context"),                                 # wrong context
        (8, "commitment", s[:10] + bytes([s[10] ^ 1]) + s[11:], "c"),          # damaged header
        (9, "chunk 1 does not verify", s[:56 + SEALED + 9] + bytes([s[56 + SEALED + 9] ^ 1])
         + s[56 + SEALED + 10:], "c"),                                        # a damaged chunk
        (10, "truncated", s[:56 + 2 * SEALED], "c"),                           # cut at a boundary
        (10, "shorter than its header", s[:30], "c"),
    ]
    for code, words, data, ctx in cases:
        bad.write_bytes(data)
        assert _main("open", "--key-file", kf, "--context", ctx, "--in", bad, "--out", out) == code
        err = capfd.readouterr().err
        assert words in err and err.count("\n") == 1, err
        assert not out.exists()
    assert _main("open", "--key-file", kf, "--context", "c", "--in", f, "--out", out) == 0
    assert out.read_bytes() == msg


def test_open_offset_past_the_end_is_a_usage_error(tmp_path, capfd):
    kf, key, msg, f = _sealed_file(tmp_path)
    n = len(msg)
    for off in (n + 1, n + 16, 4 * K, 10 * K):
        for extra in ((), ("--length", "1")):
            assert _main("open", "--key-file", kf, "--context", "c", "--in", f, "--offset", off,
                         "--out", tmp_path / "o", *extra) == 2
            assert f"not within the message's {n} bytes" in capfd.readouterr().err
    assert _main("open", "--key-file", kf, "--context", "c", "--in", f, "--offset", n,
                 "--out", tmp_path / "o") == 0
    assert (tmp_path / "o").read_bytes() == b""


# ------------------------------------------------------------------------------------ passphrases
SMALL = ("--argon2-memory", "64Ki", "--argon2-iterations", "1", "--argon2-lanes", "1")


def test_passphrase_seal_and_open(tmp_path, capfd, monkeypatch):
    from ciphergrid.formats import passphrase as pp

    pf = tmp_path / "pw"
    pf.write_bytes(b"correct horse\n")
    msg = os.urandom(2 * K + 5)
    src, sealed, out = tmp_path / "m", tmp_path / "m.cg", tmp_path / "out"
    src.write_bytes(msg)
    assert _main("seal", "--pass", f"file:{pf}", *SMALL, "--aes256", "--context", "x", "--in", src,
                 "--out", sealed, "-v") == 0
    err = capfd.readouterr().err
    assert "Argon2id 64 KiB, 1 pass, 1 lane:" in err and "cobblestone-256 seal on" in err
    data = sealed.read_bytes()
    assert data[:8] == b"CG-PASS\n" and len(data) == 38 + cb.sealed_length(len(msg))
    assert pp.decrypt(data, b"correct horse", b"x") == msg
    monkeypatch.setenv("PW", "correct horse")
    # the scheme comes from the wrapper (no --aes256); the passphrase from the environment
    assert _main("open", "--pass", "env:PW", "--context", "x", "--in", sealed, "--out", out) == 0
    assert out.read_bytes() == msg
    assert _main("open", "--pass", "env:PW", "--context", "x", "--in", sealed, "--offset", K,
                 "--length", 7, "--out", out) == 0
    assert out.read_bytes() == msg[K:K + 7]
    p = _cli("open", "--pass", "env:PW", "--context", "x", input=data)   # a pipe to a pipe
    assert p.returncode == 0 and p.stdout == msg, p.stderr.decode()
    out.unlink()
    # a wrong passphrase: the wrong key's exit
    monkeypatch.setenv("PW", "wrong")
    assert _main("open", "--pass", "env:PW", "--context", "x", "--in", sealed, "--out", out) == 8
    assert "passphrase" in capfd.readouterr().err and not out.exists()
    monkeypatch.setenv("PW", "correct horse")
    # a key file on a wrapped file, a passphrase on a plain one: said as such
    kf, _ = _key(tmp_path)
    assert _main("open", "--key-file", kf, "--in", sealed, "--out", out) == 2
    assert "with --pass" in capfd.readouterr().err
    plain = tmp_path / "plain.cg"
    assert _main("seal", "--key-file", kf, "--in", src, "--out", plain) == 0
    assert _main("open", "--pass", "env:PW", "--in", plain, "--out", out) == 2
    assert "--key-file" in capfd.readouterr().err
    assert _main("seal", "--key-file", kf, "--argon2-iterations", "2", "--in", src, "--out", plain) == 2
    assert "with --pass" in capfd.readouterr().err
    # a changed wrapper byte (its costs, salt or scheme): another key, the commitment refuses it
    for at in (13, 30):                               # (the memory, the salt)
        x = tmp_path / "x"
        x.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])
        assert pp.parse(x.read_bytes()[:38]) is not None
        assert _main("open", "--pass", "env:PW", "--context", "x", "--in", x, "--out", out) == 8
    assert not out.exists()


def _wrapper(memory_kib=64, iterations=1, lanes=1, version=1, scheme=1):
    import struct

    return struct.pack(">8sBBIII", b"CG-PASS\n", version, scheme, memory_kib, iterations, lanes) + bytes(16)


def test_passphrase_costs_past_the_caps_refused_at_once(tmp_path, capfd, monkeypatch):
    """A crafted wrapper cannot make opening take the machine: every cost past its cap (memory
    1 GiB, 10 passes, 16 lanes, memory x passes 1 GiB) is exit 2 before Argon2id runs."""
    import time

    from ciphergrid.formats import passphrase as pp

    kf, key, msg, f = _sealed_file(tmp_path)
    body = f.read_bytes()
    monkeypatch.setenv("PW", "pw")
    cases = {
        "memory": (_wrapper(memory_kib=(1 << 20) + 1), "KiB of memory"),
        "iterations": (_wrapper(iterations=11), "11 iterations"),
        "lanes": (_wrapper(lanes=17, memory_kib=1024), "17 lanes"),
        "memory x iterations": (_wrapper(memory_kib=1 << 19, iterations=3), "past the cap"),
        "the largest of all": (_wrapper(memory_kib=0xFFFFFFFF, iterations=0xFFFFFFFF,
                                        lanes=0xFFFFFFFF), "lanes"),
        "under Argon2's rule": (_wrapper(memory_kib=8, lanes=2), "8 per lane"),
        "version": (_wrapper(version=2), "version 2"),
        "scheme": (_wrapper(scheme=3), "unknown scheme"),
    }
    x = tmp_path / "x"
    for what, (w, words) in cases.items():
        x.write_bytes(w + body)
        t0 = time.perf_counter()
        assert _main("open", "--pass", "env:PW", "--in", x, "--out", tmp_path / "o") == 2, what
        assert time.perf_counter() - t0 < 1.0, what
        err = capfd.readouterr().err
        assert words in err and err.count("\n") == 1, (what, err)
    assert pp.MAX_MEMORY_KIB == 1 << 20 and pp.MAX_ITERATIONS == 10 and pp.MAX_LANES == 16
    # sealing takes no costs past the caps either
    assert _main("seal", "--pass", "env:PW", "--argon2-memory", "2Gi", "--argon2-iterations", "1",
                 "--in", f, "--out", tmp_path / "o") == 2
    assert "KiB of memory" in capfd.readouterr().err
    assert _main("seal", "--pass", "env:PW", "--argon2-iterations", "0", "--in", f, "--out",
                 tmp_path / "o") == 2
    assert "0 iterations" in capfd.readouterr().err and not (tmp_path / "o").exists()


def test_passphrase_vectors():
    """Our own vectors (docs/format.md, 'Passphrases'); and RFC 9106's Argon2id vector (5.3:
    secret and associated data) through the Argon2id the wrapper uses."""
    import hashlib
    import json
    from importlib import resources

    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    from ciphergrid.formats import passphrase as pp

    tag = Argon2id(salt=b"\x02" * 16, length=32, iterations=3, lanes=4, memory_cost=32,
                   ad=b"\x04" * 12, secret=b"\x03" * 8).derive(b"\x01" * 32)
    assert tag.hex() == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"
    doc = json.loads(resources.files("ciphergrid").joinpath("vectors", "formats", "passphrase.json").read_text())
    assert "Argon2id" in doc["source"] and len(doc["vectors"]) >= 3
    for v in doc["vectors"]:
        aes256 = v["scheme"] == "cobblestone-256"
        phrase = bytes.fromhex(v["passphrase_utf8"])
        assert phrase == v["passphrase"].encode()
        n = v["message_length"]
        msg = bytes((i * 31 + n) % 251 for i in range(n))
        params = pp.Argon2Params(v["memory_kib"], v["iterations"], v["lanes"])
        sealed = pp.encrypt(msg, phrase, bytes.fromhex(v["context"]), aes256=aes256, params=params,
                            salt=bytes.fromhex(v["argon2_salt"]), c2sp_salt=bytes.fromhex(v["c2sp_salt"]))
        assert sealed[:38].hex() == v["wrapper"]
        assert pp.input_key(phrase, pp.parse(sealed)).hex() == v["input_key"]
        assert len(sealed) == v["sealed_length"]
        assert hashlib.sha256(sealed).hexdigest() == v["sealed_sha256"]
        if "sealed" in v:
            assert sealed.hex() == v["sealed"]
        assert pp.decrypt(sealed, phrase, bytes.fromhex(v["context"])) == msg
        assert cb.decrypt(sealed[38:], bytes.fromhex(v["input_key"]), bytes.fromhex(v["context"]),
                          aes256=aes256) == msg


# ------------------------------------------------------------------------------------ streams
def test_pipe_says_what_it_got_before_a_chunk_failed(tmp_path):
    """Opening to a pipe releases verified pieces before a later chunk fails: the error says how
    many bytes (issue 48: it said 'nothing is released'); --all-or-nothing releases none."""
    kf, key, msg, f = _sealed_file(tmp_path, n=(3 << 20) + 100)
    s = bytearray(f.read_bytes())
    bad_chunk = 190                                   # in the last MiB (pieces are 1 MiB)
    s[56 + bad_chunk * SEALED + 3] ^= 1
    f.write_bytes(bytes(s))
    p = _cli("open", "--key-file", kf, "--context", "c", "--in", f, one_core=True)
    err = p.stderr.decode()
    assert p.returncode == 9, err
    got = len(p.stdout)
    assert got >= 1 << 20 and p.stdout == msg[:got]
    assert f"; {got} verified bytes were written to <stdout> before chunk {bad_chunk} failed" in err
    assert "nothing" not in err
    p = _cli("open", "--key-file", kf, "--context", "c", "--in", f, "--all-or-nothing")
    assert p.returncode == 9 and p.stdout == b"" and b"nothing is released" in p.stderr
    f.write_bytes(cb.encrypt(msg, key, b"c", device="native"))
    p = _cli("open", "--key-file", kf, "--context", "c", "-q", "--all-or-nothing", input=f.read_bytes())
    assert p.returncode == 0 and p.stdout == msg and p.stderr == b"", p.stderr.decode()
    # a pipe cut at a chunk boundary: truncated, after the verified chunks
    p = _cli("open", "--key-file", kf, "--context", "c", input=f.read_bytes()[:56 + 150 * SEALED],
             one_core=True)
    err = p.stderr.decode()
    assert p.returncode == 10 and len(p.stdout) == 128 * K and p.stdout == msg[:128 * K], err
    assert f"; {len(p.stdout)} verified bytes were written to <stdout> before this was found" in err


@pytest.mark.parametrize("command", ["seal", "open"])
def test_interrupted_says_bytes_written(tmp_path, command):
    """seal/open stopped by a signal while writing to a pipe say how many bytes reached it, as
    encrypt does (issue 46): seal once its header is out, open once a verified piece (1 MiB) is
    out; both then wait for more input."""
    import signal

    kf, key = _key(tmp_path)
    msg = os.urandom(2 << 20)
    first = cb.encrypt(msg, key, device="native")[:56 + 64 * SEALED] if command == "open" else b""
    want = 1 << 20 if command == "open" else 56
    proc = subprocess.Popen([sys.executable, "-m", "ciphergrid", command, "--key-file", str(kf)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(first)
        proc.stdin.flush()
        head = proc.stdout.read(want)        # what it wrote; the rest waits for input
        proc.send_signal(signal.SIGINT)
        proc.stdin.close()
        rest = proc.stdout.read()
        rc = proc.wait(30)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, err
    assert len(head) == want and (command == "seal" or head == msg[:want])
    assert f"interrupted by SIGINT; {len(head) + len(rest)} bytes were written to <stdout>" in err
