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

K = 16384
SEALED = K + 16


def _cli(*args, **kw):
    kw.setdefault("timeout", 60)
    return subprocess.run([sys.executable, "-m", "ciphergrid", *map(str, args)], capture_output=True,
                          **kw)


def _key(tmp_path, aes256=False):
    kf = tmp_path / "k"
    p = _cli("keygen", "--out", kf, *(["--aes256"] if aes256 else []))
    assert p.returncode == 0, p.stderr.decode()
    return kf, bytes.fromhex(kf.read_text())


# ------------------------------------------------------------------------------------ keygen
def test_keygen_new_file_0600_never_replaced(tmp_path):
    kf = tmp_path / "k"
    p = _cli("keygen", "--out", kf)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr.decode()
    text = kf.read_bytes()
    assert len(text) == 33 and text.endswith(b"\n") and len(bytes.fromhex(text.decode())) == 16
    assert stat.S_IMODE(kf.stat().st_mode) == 0o600
    p = _cli("keygen", "--out", kf)
    assert p.returncode == 2 and b"exists" in p.stderr and kf.read_bytes() == text
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    p = _cli("keygen", "--out", link)
    assert p.returncode == 2 and not (tmp_path / "nowhere").exists()
    p = _cli("keygen", "--out", tmp_path / "no" / "k")
    assert p.returncode == 4 and b"cannot create" in p.stderr
    p = _cli("keygen", "--aes256", "--out", "-")
    assert p.returncode == 0 and len(bytes.fromhex(p.stdout.decode())) == 32
    assert p.stdout.endswith(b"\n")
    k2 = _cli("keygen", "--aes256", "--out", "-").stdout
    assert k2 != p.stdout
    # the key opens what it sealed
    kf2 = tmp_path / "k2"
    assert _cli("keygen", "--aes256", "--out", kf2).returncode == 0
    p = _cli("seal", "--aes256", "--key-file", kf2, input=b"hello")
    assert p.returncode == 0, p.stderr.decode()
    assert cb.decrypt(p.stdout, bytes.fromhex(kf2.read_text()), aes256=True) == b"hello"
