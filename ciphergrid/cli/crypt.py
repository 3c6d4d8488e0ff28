"""``ciphergrid encrypt`` / ``decrypt``: block ciphers and AEADs on one path.

The input, and an output nothing outside sees opened (stdout; a file to be replaced: an
anonymous temporary file), come first; then the service the command runs through (one named
that does not answer: exit 5, before a key is read), the key and the request (every length
checked before a byte is written), the plan (``route.route_file``: route decides the path from
what the input is), ``-v``'s line, the run, and the output named.  What differs by kind is
a small strategy, the job: :class:`Blocks` here (openssl enc's framing around the data: a
passphrase's header, PKCS#7 padding, base64; written as it runs) and ``cli.aead.Message`` (one
AEAD message, ciphertext || tag; nothing written before its tag verified).
"""

from __future__ import annotations

import sys

from ..errors import InvalidArgument, InvalidPadding
from .common import (EXIT_DEVICE, EXIT_OK, EXIT_USAGE, _note_written, _pipeline_flags,
                     _said_by_service, _service_engine)
from .keying import _keying, _salted


def cmd_crypt(args, encrypt: bool) -> int:
    from ..fileio import Input, Output

    if args.mpi:
        from .. import mpi

        return {"ok": EXIT_OK, "usage": EXIT_USAGE}.get(mpi.run(args, encrypt, _keying), EXIT_DEVICE)

    # The input, and an output whose opening nothing outside sees, are opened first, before the
    # imports and the key: a large output on a RAM disk is then allocated on another core while
    # the command starts up (Output.reserve).  Any failure before the run gives it up unwritten.
    src = Input(args.infile)
    out = None
    try:
        if Output.opens_quietly(args.outfile):
            out = Output(args.outfile, sync=not args.no_sync)
            if not args.base64:
                out.reserve(src.size)
        return _crypt(args, encrypt, src, out)
    except BaseException:
        if out is not None:
            out.discard()
        raise
    finally:
        src.close()


def _job(args, encrypt: bool):
    """The job's strategy for ``--cipher``: an AEAD's (cli.aead.Message) or a block cipher's;
    an unknown name (a misspelt AEAD too) says so here."""
    from .. import aeads
    from ..registry import known

    if not known(args.cipher) and aeads.is_aead(args.cipher):  # (a block cipher: no AEAD import)
        from .aead import Message

        return Message(args, encrypt)
    return Blocks(args, encrypt)


def _crypt(args, encrypt: bool, src, out) -> int:
    """cmd_crypt with its input open (and its output, where already opened)."""
    from ..engines.remote import service_asked
    from ..fileio import Output
    from ..progress import Progress

    job = _job(args, encrypt)   # (its flags checked: the other kind's are refused)
    # the service named (or the per-user one under auto) runs every job of this command: route
    # plans it on that service's engine (engines/remote.py); one named that does not answer
    # fails it here (exit 5), before a key is read or asked for
    served = _service_engine(args)
    try:
        job.prepare(src)           # the key, the request, every length checked
        with service_asked(served):
            plan = job.route(args.device)
        remote = plan.engine.kind == "remote"
        after = job.said_after(plan)   # (a service's stream: where it ran, once it has)
        if args.verbose and not after:
            print(f"ciphergrid: {plan.describe()}{job.note(plan)}", file=sys.stderr)
        if out is None:
            out = Output(args.outfile, size=job.out_size, sync=not args.no_sync)
        try:
            with out, service_asked(served):
                with Progress(job.n, quiet=args.quiet, verb="encrypted" if encrypt else "decrypted",
                              device="service" if remote else plan.device) as bar:
                    job.run(plan, src, out, bar)
        except BaseException as e:
            _note_written(e, out, *job.quiet)
            if after and hasattr(e, "ciphergrid_written"):
                # (the service says how far it wrote only now and then: more may have gone)
                e.ciphergrid_written = (f"at least {e.ciphergrid_written[0]}", out.name)
            raise
        if args.verbose and after:
            _said_by_service(plan.engine, f"{plan.cipher} {'encrypt' if encrypt else 'decrypt'}")
    finally:
        job.close()   # (keys set up on a device are wiped)
        if served is not None:
            served.close()   # (this command's connections to it)
    return EXIT_OK


# ------------------------------------------------------------------------------------ block ciphers
#: options of AEADs only
AEAD_FLAGS = (("--nonce", "nonce"), ("--aad", "aad"), ("--aad-file", "aad_file"),
              ("--tag-length", "tag_length"))


class Blocks:
    """A block cipher's job: openssl enc's framing around the data (a passphrase's ``Salted__``
    header, PKCS#7 padding, base64), the output written as the plan runs: the engine's stream,
    or a streaming context's pieces (route.route_file says which)."""

    quiet = ()   # (_note_written: every error says what a write-through output got)

    def __init__(self, args, encrypt: bool):
        from ..registry import lookup

        self.args, self.encrypt = args, encrypt
        self.spec = lookup(args.cipher)   # an unknown name says so first
        for flag, name in AEAD_FLAGS:
            if getattr(args, name) is not None:
                raise InvalidArgument(f"{flag} is for AEADs (aes-256-gcm, chacha20-poly1305, ...), "
                                      f"not {self.spec.name}")
        self.tuning = _pipeline_flags(args)
        self.cipher = None

    def prepare(self, src) -> None:
        """The key (a passphrase's header read or made), the request, and everything the
        input's size decides, before any output."""
        from ..api import Cipher

        args, spec, encrypt = self.args, self.spec, self.encrypt
        kg = _keying(args, spec, encrypt, src)
        padding = None if args.nopad else (args.pad or ("pkcs7" if kg.phrase is not None else None))
        if kg.phrase is not None and not spec.mode.paddable:
            padding = None  # openssl enc pads block modes only
        self.reader = src.read
        if args.base64 and not encrypt:
            from ..b64 import Base64Reader

            self.reader = Base64Reader(src.read).read
        self.header = _salted(args, spec, kg, encrypt, self.reader)  # (a passphrase's header)
        self.n = n = None if args.base64 else src.size  # the data's bytes, when known
        # (no device looked at yet: a service may run it)
        self.cipher = Cipher(spec.name, kg.key, kg.iv, device=None, padding=padding,
                             sector_size=args.sector_size, start_sector=args.start_sector,
                             constant_time=args.constant_time, allow_weak=args.allow_weak)
        req = self.req = self.cipher._request(encrypt)
        self.out_size = None
        if n is not None:  # everything the size decides, before any output
            req.admit(n)
            # a length that is not whole blocks is the input's error (2), padded or not; only
            # a padding that is missing or does not check is an authentication failure (3)
            if padding and not encrypt:
                req.check_length(n)
                if n == 0:
                    raise InvalidPadding(f"{spec.name}: padded data is at least one block: the "
                                         "input is empty")
            if not padding:
                req.check_length(n)
            self.out_size = req.out_len(n) + len(self.header)

    def route(self, device):
        from ..route import route_file

        plan = route_file(self.req, device, self.n, framed=self.args.base64)
        # a context: this Cipher's, its pieces on the plan's device (what -v says runs them);
        # a service's on the device asked of it (remote.service_asked: it checks the device)
        self.cipher.device = device if plan.engine.kind == "remote" else plan.device
        return plan

    def said_after(self, plan) -> bool:
        return plan.engine.kind == "remote" and plan.path == "stream"

    def note(self, plan) -> str:
        return " (a context: its pieces run there)" if plan.engine.kind == "remote" else ""

    def close(self) -> None:
        if self.cipher is not None:
            self.cipher.close()

    def run(self, plan, src, out, bar) -> None:
        write = out.write
        b64 = None
        if self.args.base64 and self.encrypt:
            from ..b64 import Base64Writer

            b64 = Base64Writer(out.write)
            write = b64.write
        if self.header:
            write(self.header)
        if plan.path == "stream":
            self._stream(plan, src, out, bar)
            return
        out.stop_reserving()   # (what the start-up left unreserved, the writes allocate)
        from ..route import FILE_PIECE

        ctx = self.cipher.encryptor() if self.encrypt else self.cipher.decryptor()
        while True:
            chunk = self.reader(FILE_PIECE)
            if not chunk:
                break
            write(ctx.update(chunk))
            bar.advance(len(chunk))
        write(ctx.finalize())
        if b64 is not None:
            b64.close()

    def _stream(self, plan, src, out, bar) -> None:
        """The plan's stream from our input's descriptor into our output's
        (transfer.files.run_stream: as a service runs it): a new output's reservation waited
        for where the plan faults it in ahead (a device's; a service's does so itself), else
        ended where it got to."""
        from ..transfer.files import run_stream

        fresh = out.kind == "replace"
        if fresh and plan.prefaults_output:
            out.wait_reserved()
        else:
            out.stop_reserving()  # (what the start-up left unreserved, the writes allocate)

        def advance(k: int) -> None:
            out.count(k)
            bar.advance(k)

        run_stream(plan, src.f, out.fd, nbytes=self.n, fresh=fresh, progress=advance,
                   chunk_bytes=self.tuning[0], depth=self.tuning[1])
