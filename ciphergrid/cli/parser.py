"""The argument parser of every command: each command's options declared once (COMMANDS), read
by argparse -- or, for a file command's plain arguments, by :func:`_quick` from the same
declarations (no argparse import: a sealed file's start-up)."""

from __future__ import annotations

from .. import __version__
from ..keys import MAX_ITER
from .common import EXIT_CODES, EXIT_SIGNAL, EXIT_USAGE

DESCRIPTION = ("bulk encryption and decryption on GPUs, OpenCL devices and OpenSSL: encrypt, decrypt, "
               "seal, open, keygen, serve, list, devices, selftest, bench, report")


def _classes():
    """argparse's parser and help formatter as the command line's: usage errors as one line,
    ``ciphergrid: error: ...``, exit code 2; help at the terminal's width."""
    import argparse

    class _Formatter(argparse.HelpFormatter):
        """argparse's help formatter, the terminal's width from settings.terminal_columns
        (argparse makes a formatter for every add_argument, and its own imports shutil for the
        width)."""

        def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kw):
            if width is None:
                from ..settings import terminal_columns

                width = terminal_columns() - 2
            super().__init__(prog, indent_increment, max_help_position, width, **kw)

    class _Parser(argparse.ArgumentParser):
        def __init__(self, *a, **kw):
            kw.setdefault("formatter_class", _Formatter)
            super().__init__(*a, **kw)

        def error(self, message):
            self.exit(EXIT_USAGE, f"ciphergrid: error: {message} (see `{self.prog} --help`)\n")

        def parse_args(self, args=None, namespace=None):
            """As argparse's, but arguments no parser took are the command's error (its own
            help named), said without the values among them (a mistyped option's value may be
            a key)."""
            args, extra = self.parse_known_args(args, namespace)
            if extra:
                command = self._commands.get(getattr(args, "command", None), self) \
                    if hasattr(self, "_commands") else self
                named = [a for a in extra if a.startswith("-")]
                rest = len(extra) - len(named)
                words = " ".join(named) + (f" and {rest} more" if named and rest else "") \
                    if named else f"{rest} argument{'s' if rest > 1 else ''} more than it takes"
                command.error(f"unrecognized arguments: {words}")
            return args

    return _Parser


def _type_error(text: str):
    import argparse

    return argparse.ArgumentTypeError(text)


def _iterations(text: str) -> int:
    """--iter: a whole number from 1 to MAX_ITER (what OpenSSL's PBKDF2 takes: a C int)."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 12 or not 1 <= int(t) <= MAX_ITER:
        shown = t if len(t) <= 24 else t[:21] + "..."
        raise _type_error(f"give a whole number from 1 to {MAX_ITER}, not {shown!r}")
    return int(t)


def _length(text: str) -> int:
    """open --length: a whole number of bytes, 0 or more."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 20:
        shown = t if len(t) <= 24 else t[:21] + "..."
        raise _type_error(f"give a whole number of bytes (0 or more), not {shown!r}")
    return int(t)


_EPILOG = "exit codes: " + "; ".join(f"{k}{'+N' if k == EXIT_SIGNAL else ''} {v.split(' (')[0]}"
                                     for k, v in EXIT_CODES.items() if k != EXIT_SIGNAL) \
    + "; 128+N stopped by signal N"


def _service_option(p) -> None:
    p.add_argument("--service", metavar="WHERE", default=None,
                   help="auto (default: the per-user service when one runs, else this "
                        "process), off, or a service's socket path (CIPHERGRID_SERVICE)")


def _crypt_options(p, name: str) -> None:
    p.add_argument("--cipher", "-c", required=True, help="e.g. aes-128-ctr, aes-256-xts (see `ciphergrid list`)")
    k = p.add_argument_group("key (one of)")
    k.add_argument("--key-file", metavar="PATH",
                   help="the key as hex text (raw bytes: add --raw-key)")
    k.add_argument("--raw-key", action="store_true",
                   help="--key-file holds the key's raw bytes, not hex text")
    k.add_argument("--key", "-K", help="the key in hex (XTS: both keys); visible in ps: prefer --key-file")
    k.add_argument("--pass", dest="passphrase", metavar="SOURCE",
                   help="passphrase as openssl: pass:TEXT, env:VAR, file:PATH, fd:N, stdin "
                        "(default with --pbkdf2: asked on the terminal)")
    k.add_argument("--pbkdf2", action="store_true",
                   help="derive key and IV from a passphrase as `openssl enc -pbkdf2` "
                        "(Salted__ header, PKCS#7 padding for ECB/CBC)")
    k.add_argument("--iter", type=_iterations, metavar="N",
                   help=f"PBKDF2 iterations, 1 to {MAX_ITER} (default 10000; implies --pbkdf2)")
    k.add_argument("--md", metavar="DIGEST", help="passphrase digest (default sha256)")
    p.add_argument("--iv", help="IV / initial counter / XTS tweak in hex (GCM: the nonce)")
    p.add_argument("--nonce", help="AEADs: the nonce in hex (never reuse one under a key)")
    p.add_argument("--aad", metavar="HEX", help="AEADs: associated data in hex (authenticated, not encrypted)")
    p.add_argument("--aad-file", metavar="PATH", help="AEADs: associated data from a file")
    p.add_argument("--tag-length", type=int, metavar="BYTES",
                   help="AEADs: tag bytes (default 16; GCM 12-16, AEGIS 16 or 32)")
    p.add_argument("--in", dest="infile", metavar="PATH", help="input file or device (default stdin)")
    p.add_argument("--out", dest="outfile", metavar="PATH",
                   help="output (default stdout); a regular file is replaced atomically")
    p.add_argument("--device", "-d", default="auto",
                   help="auto, cpu, gpu, native, opencl[:P[:N]], cuda[:N]; several at once: all, "
                        "or a list such as cuda:0,native (the data split over them)")
    p.add_argument("--pad", choices=["pkcs7"], help="PKCS#7 padding (ECB/CBC), as openssl without -nopad")
    p.add_argument("--nopad", action="store_true", help="no padding (the default unless --pbkdf2)")
    p.add_argument("--no-sync", action="store_true",
                   help="name the output without waiting for it to reach the disk (as cat and "
                        "openssl enc); a crash can then leave it incomplete under its name")
    p.add_argument("--allow-weak", action="store_true",
                   help="encrypt what the cipher's rules refuse, with a warning: DES and TDEA "
                        "(withdrawn by NIST), more than 2^32 blocks of a 64-bit block cipher "
                        "under one key (2^20 for TDEA); decryption never needs it")
    p.add_argument("--base64", "-a", action="store_true",
                   help="base64 output on encryption, input on decryption (openssl -a)")
    p.add_argument("--sector-size", type=int, help="XTS data-unit size in bytes (tweak = sector number)")
    p.add_argument("--start-sector", type=int, help="XTS sector number of the first unit")
    p.add_argument("--constant-time", action="store_true",
                   help="bitsliced table-free kernel (no secret-dependent memory access)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    p.add_argument("--verbose", "-v", action="store_true", help="say which device runs the job")
    p.add_argument("--chunk-size", metavar="BYTES",
                   help="pipeline chunk size, e.g. 16Mi (default: tuned per device)")
    p.add_argument("--depth", type=int, metavar="N",
                   help="pipeline depth: chunks in flight (default: tuned per device)")
    p.add_argument("--mpi", action="store_true",
                   help="one job over every rank of an MPI run (mpiexec -n N ciphergrid ... "
                        "--mpi; files on a shared filesystem; docs/mpi.md)")
    p.add_argument("--mpi-range", metavar="BYTES",
                   help="--mpi: bytes a worker runs at a time (its step; ranges are dealt on "
                        "the smaller of this and the scheduler's grain; default 64Mi)")
    p.add_argument("--mpi-send", action="store_true",
                   help="--mpi: rank 0 reads the input and writes the output, sending the "
                        "data to the workers (the files on its node only; the default for "
                        "stdin, pipes and stdout)")
    _service_option(p)


def _sealed_options(p, name: str) -> None:
    k = p.add_mutually_exclusive_group(required=True)
    k.add_argument("--key-file", metavar="PATH",
                   help="the input key: 16 bytes (32 with --aes256) as hex text (raw bytes: "
                        "add --raw-key)")
    p.add_argument("--raw-key", action="store_true",
                   help="--key-file holds the key's raw bytes, not hex text")
    p.add_argument("--aes256", action="store_true",
                   help="Cobblestone-256 (SHA-512 + AES-256-GCM) instead of Cobblestone-128")
    k.add_argument("--pass", dest="passphrase", metavar="SOURCE", nargs="?", const="",
                   help="a passphrase instead of a key (Argon2id, docs/format.md): pass:TEXT, "
                        "env:VAR, file:PATH, fd:N, stdin; --pass alone: asked on the terminal"
                        + (" twice" if name == "seal" else ""))
    c = p.add_mutually_exclusive_group()
    c.add_argument("--context", metavar="TEXT", help="the context the message is bound to")
    c.add_argument("--context-file", metavar="PATH", help="the context, from a file")
    p.add_argument("--in", dest="infile", metavar="PATH", help="input file (default stdin)")
    p.add_argument("--out", dest="outfile", metavar="PATH",
                   help="output (default stdout); a regular file is replaced atomically")
    p.add_argument("--device", "-d", default="auto",
                   help="where the chunks run: auto, native, cpu, gpu, cuda[:N], all, ...")
    p.add_argument("--no-sync", action="store_true", help="do not sync a new output before naming it")
    p.add_argument("--mpi", action="store_true",
                   help="one job over every rank of an MPI run (mpiexec -n N ciphergrid " + name
                        + " ... --mpi; regular files on a shared filesystem; docs/mpi.md)")
    p.add_argument("--mpi-range", metavar="BYTES",
                   help="--mpi: plaintext bytes a worker runs at a time, in whole 16 KiB "
                        "chunks (its step; ranges are dealt on the smaller of this and the "
                        "scheduler's grain; default 64Mi)")
    _service_option(p)
    if name == "open":
        p.add_argument("--offset", type=int, metavar="N",
                       help="the first byte of the message to open (negative: from its end)")
        p.add_argument("--length", type=_length, metavar="M",
                       help="bytes to open (default: to the end)")
        p.add_argument("--all-or-nothing", action="store_true",
                       help="stdout, a pipe or a device: hold the plaintext in an unlinked "
                            "temporary file ($TMPDIR) and write it only once every chunk "
                            "verified (a regular --out always is all or nothing)")
    else:
        from ..settings import bytes_option

        p.add_argument("--argon2-memory", type=bytes_option("--argon2-memory"), metavar="SIZE",
                       help="with --pass: Argon2id's memory (default 64Mi, at most 1Gi)")
        p.add_argument("--argon2-iterations", type=int, metavar="N",
                       help="with --pass: Argon2id's passes (default 3, at most 10)")
        p.add_argument("--argon2-lanes", type=int, metavar="N",
                       help="with --pass: Argon2id's lanes (default 4, at most 16)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="say where the chunks run (and the passphrase's Argon2id costs)")


def _keygen_options(p, name: str) -> None:
    p.add_argument("--out", dest="outfile", metavar="PATH", required=True,
                   help="the new key file (mode 0600; an existing name is refused); - for stdout")
    p.add_argument("--aes256", action="store_true", help="a 32-byte key (Cobblestone-256) instead of 16")


def _serve_options(p, name: str) -> None:
    p.add_argument("--socket", metavar="PATH",
                   help="the Unix socket (default $XDG_RUNTIME_DIR/ciphergrid.sock)")
    p.add_argument("--status", action="store_true", help="ask the running service what it does")
    p.add_argument("--job-timeout", type=float, metavar="SECONDS",
                   help="give up a job running longer than this (default 3600)")
    p.add_argument("--policy", metavar="FILE",
                   help="who may connect, with which weight and job limit (TOML; default: only "
                        "the server's own user; docs/service.md)")
    p.add_argument("--socket-mode", metavar="OCTAL", default="600",
                   help="the socket file's mode (default 600; a system service: 660 with "
                        "--socket-group)")
    p.add_argument("--socket-group", metavar="GROUP", help="the socket file's group")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="also serve remote clients over TCP with TLS (docs/service.md)")
    p.add_argument("--tls-cert", metavar="PEM", help="the server's certificate (chain)")
    p.add_argument("--tls-key", metavar="PEM", help="the server's private key")
    p.add_argument("--tls-client-ca", metavar="PEM",
                   help="require client certificates signed by these CAs")
    p.add_argument("--token-file", metavar="PATH",
                   help="remote clients may present one of these tokens (one per line)")
    p.add_argument("--insecure-loopback", action="store_true",
                   help="--listen on a loopback address without TLS (tokens still required): "
                        "anyone on this machine can reach it")
    p.add_argument("--metrics", metavar="[ADDR:]PORT",
                   help="Prometheus metrics on http://ADDR:PORT/metrics (default address "
                        "127.0.0.1; needs prometheus-client)")


def _list_options(p, name: str) -> None:
    p.add_argument("--json", action="store_true", help="as JSON")


def _selftest_options(p, name: str) -> None:
    p.add_argument("--device", "-d", default=None, help="only this device")
    p.add_argument("--quiet", "-q", action="store_true")


def _bench_options(p, name: str) -> None:
    from .. import bench

    (bench.add_arguments if name == "bench" else bench.add_report_arguments)(p)


#: every command: its help line, whether its help ends with the exit codes, its options
COMMANDS = {
    "encrypt": ("encrypt a file or stdin", True, _crypt_options),
    "decrypt": ("decrypt a file or stdin", True, _crypt_options),
    "seal": ("seal a file or stdin: C2SP chunked encryption (Cobblestone-128)", True, _sealed_options),
    "open": ("open a sealed file or stdin (all of it, or --offset/--length)", True, _sealed_options),
    "keygen": ("make a new random key file (hex text) for seal and open", True, _keygen_options),
    "serve": ("run the encryption service (shares the devices among local clients; "
              "docs/service.md)", True, _serve_options),
    "list": ("every cipher name with its key and IV sizes", False, _list_options),
    "devices": ("list every device", False, None),
    "selftest": ("known-answer tests on every device", False, _selftest_options),
    "bench": ("the benchmark methodology (see docs/benchmarks.md)", False, _bench_options),
    "report": ("Markdown tables and plots from bench JSON", False, _bench_options),
}


def chosen_command(argv) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (the top level takes no
    option with a value), where that names a command and no top-level option that prints and
    exits (``--help``, ``--version``) comes before it; else None."""
    for a in argv:
        if a.startswith("-"):
            if a == "--" or a.startswith("-h") or (len(a) > 2 and (
                    "--help".startswith(a) or "--version".startswith(a))):   # (abbreviated)
                return None
            continue
        return a if a in COMMANDS else None
    return None


def build_parser(argv=None):
    """The parser (argparse's).  Where ``argv`` runs a command (:func:`chosen_command`) only
    that command's parser is built, so that a command's start-up does not pay for the others'
    options; else (None, no command, ``--help``) every command's, the benchmark's options (and
    their imports) only where ``argv`` is None."""
    _Parser = _classes()
    ap = _Parser(prog="ciphergrid", description=DESCRIPTION, epilog=_EPILOG)
    ap.add_argument("--version", action="version", version=f"ciphergrid {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ap._commands = sub.choices   # (each command's parser: its errors name its help)
    one = None if argv is None else chosen_command(argv)
    for name, (what, codes, options) in COMMANDS.items():
        if one is not None and name != one:
            continue
        p = sub.add_parser(name, help=what, **({"epilog": _EPILOG} if codes else {}))
        if options is not None and (argv is None or one is not None
                                    or options is not _bench_options):
            options(p, name)
    return ap


def parse(argv):
    """The arguments of ``argv``: :func:`_quick`'s reading where it applies, else argparse's
    (every error, help and version said by argparse)."""
    args = _quick(argv)
    return build_parser(argv).parse_args(argv) if args is None else args


#: the commands whose plain arguments :func:`_quick` reads
_QUICK = ("encrypt", "decrypt", "seal", "open")


class _Declared:
    """What a command's declaration (COMMANDS) adds, recorded instead of built: each option's
    flags, keywords and mutually exclusive group (a list holding whether the group is
    required), in order."""

    def __init__(self, actions: list, group: list | None = None):
        self.actions, self.group = actions, group

    def add_argument(self, *flags, **kw) -> None:
        self.actions.append((flags, kw, self.group))

    def add_argument_group(self, *a, **kw) -> _Declared:
        return _Declared(self.actions, self.group)

    def add_mutually_exclusive_group(self, required: bool = False) -> _Declared:
        return _Declared(self.actions, [required])


def _quick(argv):
    """The arguments of a file command (_QUICK) read from the declarations argparse reads, where
    they are plain: the command first, then each option by its full name (``--name value``,
    ``--name=value``, a short ``-x value``) once, a store or a flag, its value not beginning
    with ``-`` (nor ``--name=--``) and taken by its type and choices, a default given as text
    taken by its type (of options sharing a ``dest``, the first's), the required ones and the
    mutually exclusive groups satisfied.  Anything else (help, an abbreviation, an error, an
    option of ``nargs``) is argparse's: None.  Returns the namespace argparse would give."""
    from types import SimpleNamespace

    if not argv or argv[0] not in _QUICK:
        return None
    actions = []
    COMMANDS[argv[0]][2](_Declared(actions), argv[0])
    flag_of, dest_of = {}, {}
    for i, (flags, kw, _) in enumerate(actions):
        if kw.get("action") not in (None, "store_true") or "nargs" in kw:
            flags = ()   # (read by argparse only)
        for f in flags:
            flag_of[f] = i
        dest_of[i] = kw.get("dest") or next(f for f in actions[i][0] if f.startswith("--"))[2:] \
            .replace("-", "_")
    given = {}
    k = 1
    while k < len(argv):
        flag, eq, value = argv[k].partition("=") if argv[k].startswith("--") else (argv[k], "", "")
        i = flag_of.get(flag)
        if i is None or i in given:
            return None
        kw = actions[i][1]
        if kw.get("action") == "store_true":
            if eq:
                return None
            given[i] = True
        else:
            if not eq:
                k += 1
                if k == len(argv) or argv[k].startswith("-"):
                    return None
                value = argv[k]
            elif value == "--":   # (argparse drops it from the values it reads)
                return None
            if kw.get("type") is not None:
                try:
                    value = kw["type"](value)
                except Exception:  # noqa: BLE001 - argparse says what is wrong with it
                    return None
            if "choices" in kw and value not in kw["choices"]:
                return None
            given[i] = value
        k += 1
    groups = {}
    for i, (flags, kw, group) in enumerate(actions):
        if kw.get("required") and i not in given:
            return None
        if group is not None:
            groups.setdefault(id(group), [group[0], 0])[1] += i in given
    if any(n > 1 or required and not n for required, n in groups.values()):
        return None
    values = {"command": argv[0]}
    for i, (flags, kw, _) in enumerate(actions):
        if i in given:
            values[dest_of[i]] = given[i]
            continue
        if dest_of[i] in values:   # (an earlier option's of the same dest, given or not)
            continue
        default = kw.get("default", False if kw.get("action") else None)
        if isinstance(default, str) and kw.get("type") is not None:
            try:   # (argparse's type applied to a default given as text)
                default = kw["type"](default)
            except Exception:  # noqa: BLE001 - argparse says what is wrong with it
                return None
        values[dest_of[i]] = default
    return SimpleNamespace(**values)
