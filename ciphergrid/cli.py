"""ciphergrid command line: encrypt | decrypt | devices | selftest | bench | report.

Output bytes match ``openssl enc -NAME -nopad -K HEX -iv HEX`` (``--pad pkcs7``: OpenSSL's default
padding).  Errors print one line, ``ciphergrid: error: ...``, and exit with code 2; an output file
is written to a temporary name and renamed only on success, so a failed or interrupted run leaves
no partial output (and an existing file untouched).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile

from . import __version__
from .errors import Error, InvalidArgument

EXIT_ERROR = 2
READ_CHUNK = 64 << 20


def _hex(value: str, what: str) -> bytes:
    try:
        return bytes.fromhex(value.strip())
    except ValueError:
        raise InvalidArgument(f"{what} must be hexadecimal, got {len(value)} characters that are not") from None


class _AtomicOutput:
    """Write to a temporary file beside the target; rename on success, delete on failure."""

    def __init__(self, path: str | None):
        self.path = path
        self.tmp = None
        self.f = None

    def __enter__(self):
        if self.path is None or self.path == "-":
            self.f = sys.stdout.buffer
            return self.f
        d = os.path.dirname(os.path.abspath(self.path))
        fd, self.tmp = tempfile.mkstemp(prefix=".ciphergrid-", suffix=".part", dir=d)
        self.f = os.fdopen(fd, "w+b")  # readable too: the pipeline maps it to write in place
        return self.f

    def __exit__(self, exc_type, exc, tb):
        if self.tmp is None:
            if exc_type is None:
                self.f.flush()
            return False
        try:
            if exc_type is None:
                self.f.flush()
                os.fsync(self.f.fileno())
                self.f.close()
                os.replace(self.tmp, self.path)
                self.tmp = None
        finally:
            if self.tmp is not None:
                try:
                    self.f.close()
                finally:
                    try:
                        os.unlink(self.tmp)
                    except FileNotFoundError:
                        pass
        return False


def _open_input(path: str | None):
    if path is None or path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as e:
        raise InvalidArgument(f"cannot read {path}: {e.strerror}") from None


def cmd_crypt(args, encrypt: bool) -> int:
    from .api import Cipher
    from .progress import Progress

    key = _hex(args.key, "--key")
    iv = _hex(args.iv, "--iv") if args.iv is not None else None
    # validated here (key and IV sizes, options); the device starts with encryptor()/decryptor()
    cipher = Cipher(args.cipher, key, iv, device=args.device, padding=args.pad,
                    sector_size=args.sector_size, start_sector=args.start_sector,
                    constant_time=args.constant_time)
    chunk_bytes, depth = _pipeline_flags(args)
    src = _open_input(args.infile)
    total = None
    try:
        st = os.fstat(src.fileno())
        if stat.S_ISREG(st.st_mode):
            total = st.st_size
    except (OSError, ValueError):
        total = None
    try:
        with _AtomicOutput(args.outfile) as out, Progress(total, quiet=args.quiet) as bar:
            prefault = None
            if _may_stream(cipher, encrypt, args.device):
                from .pipeline import prefault_output

                # a new output on a RAM disk: its pages are zero-filled while the device starts
                prefault = prefault_output(out, total)
            try:
                ctx = cipher.encryptor() if encrypt else cipher.decryptor()
                engine = _stream_engine(ctx, args.device, total)
                if engine is not None:  # overlapped file streaming on a kernel device
                    from .pipeline import stream_crypt

                    if prefault is not None:
                        prefault.wait()
                    stream_crypt(engine.backend, ctx.p, src, out, chunk_bytes=chunk_bytes,
                                 depth=depth, progress=bar.advance, nbytes=total)
                    return 0
                while True:
                    chunk = src.read(READ_CHUNK)
                    if not chunk:
                        break
                    out.write(ctx.update(chunk))
                    bar.advance(len(chunk))
                out.write(ctx.finalize())
                if prefault is not None:
                    out.truncate()  # the file was sized for the stream: end it where we did
            finally:
                if prefault is not None:
                    prefault.close()
    finally:
        if src is not sys.stdin.buffer:
            src.close()
    return 0


def _may_stream(cipher, encrypt: bool, device: str) -> bool:
    """Whether this run will likely stream through a kernel device (decided before the device
    starts, from the options alone: the native engine and the CPU run elsewhere)."""
    head = (device or "auto").strip().lower().split(":")[0]
    if head in ("native", "cpu"):
        return False
    from .pipeline import streams

    _key, _iv, padding, sector_size, _start, _impl = cipher._args
    return streams(cipher.spec.mode, encrypt, padding, sector_size)


def _pipeline_flags(args):
    """--chunk-size / --depth: validated, and exported so every pipeline run of this process
    (the streaming one and CipherContext's) uses them."""
    from . import tuning

    chunk = depth = None
    if getattr(args, "chunk_size", None) is not None:
        chunk = tuning.check_chunk(tuning.parse_bytes(args.chunk_size, "--chunk-size"))
        os.environ[tuning.ENV_CHUNK] = str(chunk)
    if getattr(args, "depth", None) is not None:
        depth = tuning.check_depth(args.depth)
        os.environ[tuning.ENV_DEPTH] = str(depth)
    return chunk, depth


def _stream_engine(ctx, device: str, total):
    """The DeviceEngine to stream the file through, or None for CipherContext's path (the native
    engine; padding, CBC encryption and one-unit XTS, which need the whole message)."""
    from .engine import DeviceEngine, get_engine
    from .pipeline import streamable

    if not streamable(ctx.p):
        return None
    eng = get_engine(device, ctx.p.spec.name, total)
    return eng if isinstance(eng, DeviceEngine) else None


def cmd_devices(args) -> int:
    from .devices import devices

    rows = [(d.spec, d.runtime, d.kind, d.name, str(d.compute_units), f"{d.memory / 2**30:.1f} GiB")
            for d in devices()]
    head = ("device", "runtime", "kind", "name", "units", "memory")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


def cmd_selftest(args) -> int:
    from .selftest import run

    return run(device=args.device, quiet=args.quiet)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, ``ciphergrid: error: ...``, exit code 2."""

    def error(self, message):
        self.exit(EXIT_ERROR, f"ciphergrid: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="ciphergrid", description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="version", version=f"ciphergrid {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in ("encrypt", "decrypt"):
        p = sub.add_parser(name, help=f"{name} a file or stdin")
        p.add_argument("--cipher", "-c", required=True, help="e.g. aes-128-ctr, aes-256-xts")
        p.add_argument("--key", "-K", required=True, help="key in hex (XTS: both keys)")
        p.add_argument("--iv", help="IV / initial counter / XTS tweak in hex")
        p.add_argument("--in", dest="infile", help="input file (default stdin)")
        p.add_argument("--out", dest="outfile", help="output file (default stdout)")
        p.add_argument("--device", "-d", default="auto",
                       help="auto, cpu, gpu, native, opencl[:P[:N]], cuda[:N]")
        p.add_argument("--pad", choices=["pkcs7"], help="PKCS#7 padding (ECB/CBC), as openssl without -nopad")
        p.add_argument("--sector-size", type=int, help="XTS data-unit size in bytes (tweak = sector number)")
        p.add_argument("--start-sector", type=int, help="XTS sector number of the first unit")
        p.add_argument("--constant-time", action="store_true",
                       help="bitsliced table-free kernel (no secret-dependent memory access)")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
        p.add_argument("--chunk-size", metavar="BYTES",
                       help="pipeline chunk size, e.g. 16Mi (default: tuned per device)")
        p.add_argument("--depth", type=int, metavar="N",
                       help="pipeline depth: chunks in flight (default: tuned per device)")
    p = sub.add_parser("devices", help="list every device")
    p = sub.add_parser("selftest", help="known-answer tests on every device")
    p.add_argument("--device", "-d", default=None, help="only this device")
    p.add_argument("--quiet", "-q", action="store_true")
    try:
        from . import bench

        p = sub.add_parser("bench", help="the benchmark methodology (see docs/benchmarks.md)")
        bench.add_arguments(p)
        p = sub.add_parser("report", help="Markdown tables and plots from bench JSON")
        bench.add_report_arguments(p)
    except (ImportError, AttributeError):  # bench not installed in this build
        pass
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.command in ("encrypt", "decrypt"):
            return cmd_crypt(args, args.command == "encrypt")
        if args.command == "devices":
            return cmd_devices(args)
        if args.command == "selftest":
            return cmd_selftest(args)
        if args.command == "bench":
            from . import bench

            return bench.main(args)
        if args.command == "report":
            from . import bench

            return bench.report_main(args)
    except Error as e:
        print(f"ciphergrid: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:  # a full disk, an I/O error on the output: one line, no partial output
        where = f": {e.filename}" if e.filename else ""
        print(f"ciphergrid: error: {e.strerror or e}{where}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ciphergrid: error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
