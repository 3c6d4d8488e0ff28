"""A fuzzer of the command line: argument vectors for ``encrypt``, ``decrypt`` and ``list`` made
from the parser's own options (valid values, boundary and huge integers, negative numbers,
non-hex text, empty strings, unicode, missing files, directories given as files), each run in
this process through ``ciphergrid.cli.main`` and checked against the README's contract:

* the exit code is one of 0, 2, 3, 4, 5;
* standard error holds only ``ciphergrid: ...`` lines: at most one ``ciphergrid: error:`` line
  (exactly one on a failure, none on success), warnings as ``ciphergrid: warning:`` -- never a
  traceback;
* after a failure nothing is left in the output folder.

tests/test_cli_fuzz.py runs a fixed seed for a bounded time; scripts/dev/fuzz_cli.py runs any
seed for as long as asked.  The runs stay cheap: tiny inputs, the native engine (or an engine
name that does not exist), a named service that does not answer or none, PBKDF2 iteration counts
that are refused or small, the terminal never asked for a passphrase.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import traceback
from dataclasses import dataclass, field

#: the exit codes of the README's table (128 + N is a signal: none is sent here)
EXIT_CODES = {0, 2, 3, 4, 5}

#: options not fuzzed: MPI needs mpiexec, and --help/--version only print (run a few times anyway)
SKIPPED = {"--mpi", "--mpi-range", "--mpi-send"}

#: names the native engine runs (no kernel build): block ciphers of each mode, AEADs, a short name
CIPHERS = ["aes-128-cbc", "aes-256-ctr", "aes-128-ecb", "aes-128-xts", "aes-256-xts", "des-ede3-cbc",
           "cast5-cbc", "camellia-128-ctr", "seed-cbc", "aes-128-gcm", "aes-256-gcm",
           "chacha20-poly1305", "aes128"]

BIG_INTS = ["0", "1", "-1", "2", "15", "16", "17", "512", "4096", str(2**31 - 1), str(2**31),
            str(2**32 - 1), str(2**32), str(2**63), str(2**64), str(10**11), str(10**30),
            "-" + str(2**63), "1e3", "0x10", "ten", "", " 7 ", "\u0663", "1_000"]
BAD_TEXT = ["", " ", "-", "--", "x", "zz", "\u00e9\u00e8", "\u2603" * 3, "\udcff", "a" * 300,
            "--bogus", "-1"]


@dataclass
class Result:
    argv: list
    code: object = None
    out: str = ""
    err: str = ""
    exc: str = ""                       # a traceback that escaped main
    left: list = field(default_factory=list)   # files in the output folder after a failure

    def problems(self) -> list[str]:
        """What breaks the contract (empty: nothing)."""
        bad = []
        if self.exc:
            bad.append("an exception escaped main:\n" + self.exc)
        if self.code not in EXIT_CODES:
            bad.append(f"exit code {self.code!r}")
        lines = [x for x in self.err.splitlines() if x.strip()]
        if "Traceback" in self.err:
            bad.append("a traceback on stderr")
        stray = [x for x in lines if not x.startswith("ciphergrid: ")]
        if stray:
            bad.append(f"stderr lines that are not ciphergrid's: {stray[:3]!r}")
        errors = [x for x in lines if x.startswith("ciphergrid: error:")]
        if self.code == 0 and errors:
            bad.append("an error line on success")
        if self.code not in (0, None) and len(errors) != 1:
            bad.append(f"{len(errors)} error lines on a failure")
        if self.left:
            bad.append(f"files left in the output folder after a failure: {self.left}")
        return bad

    def report(self) -> str:
        return (f"argv: {self.argv!r}\nexit: {self.code!r}\nstderr: {self.err!r}\n"
                + "\n".join(self.problems()))


class Fuzzer:
    """Argument vectors from ``seed`` over files it makes under ``folder`` (an ``in`` folder of
    inputs and keys, an ``out`` folder the runs write into)."""

    def __init__(self, seed, folder: str):
        from ..cli.parser import build_parser

        self.rng = random.Random(seed)
        self.inp = os.path.join(folder, "in")
        self.out = os.path.join(folder, "out")
        os.makedirs(self.inp, exist_ok=True)
        os.makedirs(self.out, exist_ok=True)
        self.files = {}
        for name, content in {"d0": b"", "d1": b"x", "d15": bytes(15), "d16": bytes(range(16)),
                              "d17": bytes(17), "d64": bytes(range(64)), "d100": os.urandom(100),
                              "k16": b"00112233445566778899aabbccddeeff\n",
                              "k32": bytes(range(32)).hex().encode() + b"\n",
                              "k64": bytes(range(64)).hex().encode(),
                              "k16raw": b"\xff" + bytes(range(15)), "k32hex32": b"ab" * 16,
                              "kempty": b"", "kbig": b"0" * 100_000,
                              "aad": b"header", "salted": b"Salted__" + bytes(8) + bytes(32),
                              "pw": b"fuzz\n"}.items():
            path = os.path.join(self.inp, name)
            with open(path, "wb") as f:
                f.write(content)
            self.files[name] = path
        self.missing = os.path.join(self.inp, "no-such-file")
        ap = build_parser([])
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
        self.options = {}   # command -> [(option string, action)]
        for cmd in ("encrypt", "decrypt", "list"):
            acts = []
            for a in sub.choices[cmd]._actions:
                if a.option_strings and not (set(a.option_strings) & SKIPPED):
                    acts.append((max(a.option_strings, key=len), a))
            self.options[cmd] = acts

    # -- values ---------------------------------------------------------------------------------
    def _hex(self, n: int | None = None) -> str:
        r = self.rng
        n = r.choice([0, 1, 5, 8, 12, 15, 16, 17, 24, 32, 64]) if n is None else n
        return os.urandom(n).hex()

    def _path(self, dest: str) -> str:
        r = self.rng
        if dest == "outfile":
            return r.choice([os.path.join(self.out, "o")] * 6 + [
                self.out, os.path.join(self.out, "no", "such", "o"), "/dev/null", "",
                os.path.join(self.out, "\u00e9\u2603")])
        pool = list(self.files.values()) + [self.missing, self.inp, "/dev/null", ""]
        if dest != "infile":   # (an input that never ends is a stream's to run: not a test's)
            pool.append("/dev/zero")
        if dest == "key_file":
            pool += [self.files[k] for k in ("k16", "k32", "k16raw", "k32hex32")] * 3
        return r.choice(pool)

    def value(self, cmd: str, dest: str, action) -> str:
        """A value for the option of ``dest``: mostly plausible, often not."""
        r = self.rng
        if r.random() < 0.15:
            return r.choice(BAD_TEXT)
        if action.choices:
            return r.choice(list(action.choices) + ["bogus"])
        if dest == "cipher":
            return r.choice(CIPHERS * 3 + ["aes-128-cbx", "AES-128-CBC", "aes-256-gcmx", "des"])
        if dest in ("key", "iv", "nonce", "aad"):
            if r.random() < 0.6:
                return self._hex(r.choice([8, 12, 16, 24, 32, 64]))
            return r.choice([self._hex(), self._hex(16)[:-1], "xyz", "0g" * 8, "00 11", " " + self._hex(16)])
        if dest in ("key_file", "aad_file", "infile", "outfile"):
            return self._path(dest)
        if dest == "passphrase":
            return r.choice(["pass:pw", f"file:{self.files['pw']}", "env:CG_FUZZ_UNSET",
                             f"file:{self.files['k16']}", f"file:{self.missing}", f"file:{self.inp}",
                             "file:/dev/zero", "fd:999", "fd:x", "stdin",
                             "bogus", "pass:", ""])
        if dest == "md":
            return r.choice(["sha256", "sha1", "md5", "SHA-512", "nosuch", "sha3-256"])
        if dest == "device":
            return r.choice(["native"] * 4 + ["auto", "nosuch", "native,native", "opencl:x", ""])
        if dest == "service":
            return r.choice(["off"] * 3 + [os.path.join(self.inp, "nothing.sock"), self.inp,
                                           "tls://example.invalid:1", "tcp://127.0.0.1:1", "auto"])
        if dest in ("chunk_size", "mpi_range"):
            return r.choice(["64Ki", "16Mi", "0", "1", "-1", "1e9", "9" * 40, "12Qi", "4096"])
        if dest == "iter":   # (refused or small: an accepted count near 2^31 runs for hours)
            return r.choice(["1", "2", "3"] * 3 + [v for v in BIG_INTS if v != str(2**31 - 1)])
        if action.type is int or action.type not in (None, str):
            return r.choice(BIG_INTS)
        return r.choice(BAD_TEXT + ["x"])

    # -- argument vectors -----------------------------------------------------------------------
    def _base(self, cmd: str) -> list:
        """A valid-looking job: a cipher, its key and IV or nonce, a tiny input, the output."""
        r = self.rng
        name = r.choice(CIPHERS)
        aead = name.endswith("-gcm") or name.startswith("chacha20")
        xts = name.endswith("-xts")
        klen = {"aes-256-ctr": 32, "aes-128-xts": 32, "aes-256-xts": 64, "des-ede3-cbc": 24,
                "aes-256-gcm": 32, "chacha20-poly1305": 32}.get(name, 16)
        argv = [cmd, "--cipher", name]
        how = r.random()
        if how < 0.45:
            argv += ["--key", self._hex(klen)]
        elif how < 0.8 or aead:
            kf = {16: "k16", 32: "k32", 64: "k64"}.get(klen, "k16")
            argv += ["--key-file", self.files[kf]]
        else:
            argv += ["--pbkdf2", "--pass", f"file:{self.files['pw']}", "--iter", r.choice(["1", "2"])]
        if not aead and r.random() < 0.25 and "--pbkdf2" not in argv:
            argv = argv[:3] + ["--pbkdf2", "--pass", f"file:{self.files['pw']}", "--iter", "1"]
        if aead:
            argv += ["--nonce", self._hex(12)]
        elif "--pbkdf2" not in argv and not name.endswith("-ecb"):
            argv += ["--iv", self._hex(8 if name.startswith(("des", "cast")) else 16)]
        if xts and r.random() < 0.5:
            argv += ["--sector-size", r.choice(["16", "32", "512"])]
        if name.startswith("des") and r.random() < 0.7:
            argv.append("--allow-weak")
        argv += ["--in", self.files[r.choice(["d0", "d1", "d15", "d16", "d17", "d64", "d100", "salted"])],
                 "--device", "native", "--service", "off", "-q"]
        return argv

    @staticmethod
    def _near(argv: list) -> set:
        """The options a job like ``argv`` reads (where a bad value gets furthest)."""
        near = {"--in", "--out", "--key-file", "--raw-key", "--chunk-size", "--depth", "--device",
                "--service", "--base64", "--verbose", "--constant-time"}
        name = argv[argv.index("--cipher") + 1] if "--cipher" in argv[:-1] else ""
        if "--pbkdf2" in argv or "--pass" in argv:
            near |= {"--iter", "--md", "--pass", "--pbkdf2", "--nopad", "--pad"}
        elif name.endswith("-gcm") or name.startswith("chacha20"):
            near |= {"--tag-length", "--nonce", "--aad", "--aad-file", "--iv"}
        elif name.endswith("-xts"):
            near |= {"--sector-size", "--start-sector", "--iv", "--key"}
        else:
            near |= {"--iv", "--key", "--pad", "--nopad", "--allow-weak"}
        return near

    def case(self) -> list:
        r = self.rng
        cmd = r.choices(["encrypt", "decrypt", "list"], weights=[45, 45, 10])[0]
        argv = [cmd] if cmd == "list" else self._base(cmd)
        for _ in range(r.choice([0, 1, 1, 2, 2, 3, 4])):
            kind = r.random()
            if kind < 0.08:
                argv.append(r.choice(["--bogus", "extra", "-Z", "--key-fil", "--", "-"]))
                continue
            if kind < 0.18 and len(argv) > 2:   # an option's value dropped (or the option)
                del argv[r.randrange(1, len(argv))]
                continue
            opts = self.options[cmd]
            if cmd != "list" and r.random() < 0.5:   # an option the base job's kind reads
                near = self._near(argv)
                opts = [oa for oa in opts if oa[0] in near] or opts
            opt, act = r.choice(opts)
            if opt in ("--help", "--version") and r.random() < 0.8:
                continue
            if act.nargs == 0:
                argv.append(opt)
            else:
                argv += [opt, self.value(cmd, act.dest, act)]
        if cmd != "list" and "--out" not in argv and r.random() < 0.9:
            argv += ["--out", os.path.join(self.out, "o")]
        return argv

    # -- a run ----------------------------------------------------------------------------------
    def run(self, argv: list) -> Result:
        """``argv`` through ``ciphergrid.cli.main`` in this process, its output captured."""
        from .. import keys
        from ..cli import main

        res = Result(list(argv))
        out, err = io.StringIO(), io.StringIO()
        saved_tty = keys._have_tty
        keys._have_tty = lambda: False   # (never a prompt on the terminal)
        # descriptors 0 and 1 (an input or output of "-", or none named): /dev/null and a
        # scratch file, never this process's own
        saved_fds = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        sink = os.open(os.path.join(os.path.dirname(self.out), "stdout"),
                       os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(sink, 1)
        # relative names (an --out of "x" or "-1") land in the output folder, not the caller's
        here = os.getcwd()
        os.chdir(self.out)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    res.code = main(argv)
                except SystemExit as e:
                    res.code = e.code if e.code is not None else 0
        except BaseException:   # (a panic from a library is a BaseException)
            res.exc = traceback.format_exc()
        finally:
            os.chdir(here)
            os.dup2(saved_fds[0], 0)
            os.dup2(saved_fds[1], 1)
            for fd in (*saved_fds, null, sink):
                os.close(fd)
            keys._have_tty = saved_tty
        res.out, res.err = out.getvalue(), err.getvalue()
        left = sorted(os.listdir(self.out))
        if res.code != 0 or res.exc:
            res.left = left
        for name in left:   # (a success's output, or what a failure left: gone before the next)
            p = os.path.join(self.out, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        return res


def fuzz(seed, folder: str, *, cases: int | None = None, seconds: float | None = None,
         stop_at_first: bool = False) -> tuple[int, list[Result]]:
    """Run ``cases`` vectors (or as many as ``seconds`` allow, whichever ends first) of ``seed``;
    returns (vectors run, the results that broke the contract)."""
    import time

    fz = Fuzzer(seed, folder)
    end = time.monotonic() + seconds if seconds is not None else None
    bad, n = [], 0
    while (cases is None or n < cases) and (end is None or time.monotonic() < end):
        res = fz.run(fz.case())
        n += 1
        if res.problems():
            bad.append(res)
            if stop_at_first:
                break
    return n, bad
