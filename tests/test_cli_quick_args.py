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


#: values tried for each option: a plain one of its type, and the ones argparse reads its own way
_ODD_VALUES = ("-3", "--", "-", "", "-x", "a=b", " -1", "0x10", " 7")


def _argparses(argv):
    """argparse's namespace of ``argv`` (as a dict), or "error"."""
    import contextlib
    import io

    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(parser.build_parser(argv).parse_args(argv))
    except SystemExit:
        return "error"


def _generated(command):
    """Argument lists over every option of ``command``: each spelling of it, with a value of its
    type and odd ones, as ``--name value`` and ``--name=value``, twice, without its value, and
    abbreviated; before and after the required ones."""
    actions = []
    parser.COMMANDS[command][2](parser._Declared(actions), command)

    def good(kw):
        for c in ([str(next(iter(kw["choices"])))] if "choices" in kw else []) + ["7", "1Mi", "v"]:
            try:
                if kw.get("type") is not None:
                    kw["type"](c)
                return c
            except Exception:  # noqa: BLE001 - the next candidate
                continue

    base, groups = [command], set()
    for flags, kw, group in actions:
        if kw.get("required"):
            base += [flags[0], good(kw)]
        elif group is not None and group[0] and id(group) not in groups:
            groups.add(id(group))
            base += [flags[0]] + ([] if kw.get("action") else [good(kw)])
    yield base
    yield from (base + ["--"], base + ["--", "x"], base + ["-"])
    for flags, kw, _ in actions:
        flag = kw.get("action") == "store_true"
        for f in flags:
            if flag:
                forms = [[f], [f, f], [f + "=1"], [f + "="]]
            else:
                forms = [[f], [f, good(kw), f, good(kw)]]
                for v in (good(kw),) + _ODD_VALUES:
                    forms.append([f, v])
                    if f.startswith("--"):
                        forms.append([f"{f}={v}"])
            if f.startswith("--"):
                forms += [[f[:n]] + ([] if flag else [good(kw)]) for n in (3, len(f) - 1)]
            for form in forms:
                yield base + form
                yield [command] + form + base[1:]


@pytest.mark.parametrize("command", parser._QUICK)
def test_generated_argument_lists_read_quickly_are_argparses(command):
    """Every option of the file commands in each spelling and with odd values: wherever the
    quick reading takes an argument list, argparse takes it too and gives the same namespace."""
    taken = 0
    for argv in _generated(command):
        quick = parser._quick(argv)
        if quick is None:
            continue
        taken += 1
        assert vars(quick) == _argparses(argv), argv
    assert taken > 50


def test_typed_text_defaults_and_shared_dests_as_argparse_reads_them(monkeypatch):
    """argparse applies an option's type to a default given as text, and of options sharing a
    ``dest`` keeps the one given (else the first's default): so does the quick reading."""
    declare = parser.COMMANDS["open"]

    def more(p, name):
        declare[2](p, name)
        p.add_argument("--extra-size", type=int, default="12")
        p.add_argument("--extra-kept", type=int, default=5)
        p.add_argument("--extra-on", dest="extra", action="store_true")
        p.add_argument("--extra-level", dest="extra", type=int, default=9)

    monkeypatch.setitem(parser.COMMANDS, "open", (declare[0], declare[1], more))
    for argv in (["open", "--key-file", "k"], ["open", "--key-file", "k", "--extra-size", "3"],
                 ["open", "--key-file", "k", "--extra-on"],
                 ["open", "--extra-level", "4", "--key-file", "k"]):
        quick = parser._quick(argv)
        assert quick is not None and vars(quick) == _argparses(argv)
