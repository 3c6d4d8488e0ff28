"""The file commands' arguments read without argparse (cli/parser.py ``_quick``) from the one
declaration argparse reads: the same namespace as argparse's wherever it reads them, argparse's
own reading (its errors and help) wherever they are not plain, and no argparse import on a
sealed file's path."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ciphergrid.cli import parser

#: argument lists the quick reading takes: each gives argparse's namespace
PLAIN = [
    ["open", "--key-file", "k", "--in", "x", "--out", "y", "--no-sync", "-q"],
    ["open", "--key-file=k", "--context", "", "--in=x", "-d", "native", "--length", "7",
     "--all-or-nothing", "--verbose"],
    ["open", "--key-file", "k", "--raw-key", "--aes256", "--context-file", "c", "--offset", "3"],
    ["seal", "--key-file", "k", "--in", "x", "--out", "y", "--device", "auto", "--mpi",
     "--mpi-range", "64Mi", "--service", "off"],
    ["seal", "--key-file", "k", "--argon2-memory", "1Mi", "--argon2-lanes", "2"],
    ["encrypt", "-c", "aes-128-ctr", "--key-file", "k", "--iv", "00", "--in", "x", "--out", "y"],
    ["decrypt", "--cipher", "aes-256-cbc", "-K", "ab", "--pad", "pkcs7", "--iter", "5",
     "--chunk-size", "1Mi", "--depth", "3", "-a", "--constant-time", "--tag-length", "12"],
]

#: argument lists left to argparse (its reading, or its error)
NOT_PLAIN = [
    ["open", "--key-f", "k"],                              # an abbreviation
    ["open", "--key-file", "k", "--key-file", "j"],        # twice
    ["open", "--pass", "pass:x"],                          # nargs
    ["open", "--offset", "-3", "--key-file", "k"],         # a value beginning with "-"
    ["open", "--key-file", "k", "--context", "a", "--context-file", "b"],   # exclusive
    ["open", "--in", "x"],                                 # a required group unmet
    ["open", "--key-file", "k", "--length", "x"],          # its type refuses it
    ["open", "--key-file", "k", "--no-sync=1"],            # a flag with a value
    ["open", "--key-file", "k", "-h"],
    ["open", "--key-file", "k", "stray"],
    ["open", "--key-file"],                                # no value
    ["encrypt", "--key-file", "k"],                        # --cipher required
    ["encrypt", "-c", "x", "--pad", "zero"],               # not a choice
    ["keygen", "--out", "k"], ["--version"], [],
]


@pytest.mark.parametrize("argv", PLAIN, ids=lambda a: " ".join(a)[:40])
def test_the_quick_reading_is_argparses(argv):
    quick = parser._quick(argv)
    assert quick is not None
    assert vars(quick) == vars(parser.build_parser([]).parse_args(argv))
    assert vars(parser.parse(argv)) == vars(quick)


@pytest.mark.parametrize("argv", NOT_PLAIN, ids=lambda a: " ".join(a)[:40])
def test_what_is_not_plain_is_argparses(argv):
    assert parser._quick(argv) is None


def test_an_error_is_argparses(capsys):
    """A refused value, read quickly or not, is argparse's one-line error and exit 2."""
    with pytest.raises(SystemExit) as e:
        parser.parse(["open", "--key-file", "k", "--length", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("ciphergrid: error: argument --length: give a whole number") and \
        err.count("\n") == 1


def test_a_sealed_files_start_up_imports_no_argparse(tmp_path):
    """`ciphergrid open` / `seal` with a key file: neither argparse nor gettext or locale."""
    code = ("import sys\nfrom ciphergrid.cli import parser\n"
            "a = parser.parse(sys.argv[1:])\nassert a.command == sys.argv[1], a\n"
            "bad = [m for m in ('argparse', 'gettext', 'locale') if m in sys.modules]\n"
            "assert not bad, bad\n")
    for argv in (["open", "--key-file", "k", "--in", "x", "--out", "y", "--no-sync", "-q"],
                 ["seal", "--key-file", "k", "--in", "x", "--out", "y", "--no-sync", "-q"]):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, timeout=60,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stderr.decode()[-600:]
