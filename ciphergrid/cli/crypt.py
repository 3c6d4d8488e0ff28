"""``ciphergrid encrypt`` / ``decrypt`` of a block cipher (AEAD names go to cli.aead)."""

from __future__ import annotations

import sys

from ..errors import InvalidArgument, InvalidPadding
from .common import (EXIT_DEVICE, EXIT_OK, EXIT_USAGE, READ_CHUNK, _note_written,
                     _pipeline_flags, _service_engine)
from .keying import _keying, _salted


# ------------------------------------------------------------------------------------ encrypt / decrypt
def cmd_crypt(args, encrypt: bool) -> int:
    from ..fileio import Input, Output

    if args.mpi:
        from .. import mpi

        return {"ok": EXIT_OK, "usage": EXIT_USAGE}.get(mpi.run(args, encrypt, _keying), EXIT_DEVICE)

    # The input, and an output whose opening nothing outside sees (stdout; a file to be replaced:
    # an anonymous temporary file), are opened first, before the imports and the key: a large
    # output on a RAM disk is then allocated on another core while the command starts up
    # (Output.reserve).  Any failure before the run gives it up unwritten.
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


def _crypt(args, encrypt: bool, src, out) -> int:
    """cmd_crypt with its input open (and its output, where already opened)."""
    from .. import aeads
    from ..api import Cipher
    from ..engines.remote import service_asked
    from ..fileio import Output
    from ..registry import known, lookup

    if not known(args.cipher) and aeads.is_aead(args.cipher):  # (a block cipher: no AEAD import)
        if out is not None:
            out.discard()
        from .aead import cmd_aead

        return cmd_aead(args, encrypt)
    spec = lookup(args.cipher)  # an unknown name (a misspelt AEAD too) says so first
    for flag, value in (("--nonce", args.nonce), ("--aad", args.aad), ("--aad-file", args.aad_file),
                        ("--tag-length", args.tag_length)):
        if value is not None:
            raise InvalidArgument(f"{flag} is for AEADs (aes-256-gcm, chacha20-poly1305, ...), "
                                  f"not {spec.name}")
    tuning = _pipeline_flags(args)
    # the service named (or the per-user one under auto) runs every job of this command: route
    # plans it on that service's engine (engines/remote.py); one named that does not answer
    # fails it here (exit 5), before a key is read or asked for
    served = _service_engine(args)
    cipher = None
    try:
        kg = _keying(args, spec, encrypt, src)
        padding = None if args.nopad else (args.pad or ("pkcs7" if kg.phrase is not None else None))
        if kg.phrase is not None and not spec.mode.paddable:
            padding = None  # openssl enc pads block modes only
        reader = src.read
        if args.base64 and not encrypt:
            from ..b64 import Base64Reader

            reader = Base64Reader(src.read).read
        header = _salted(args, spec, kg, encrypt, reader)  # (a passphrase's header)
        n = None if args.base64 else src.size  # the data's bytes, when known
        def keyed(device):
            return Cipher(spec.name, kg.key, kg.iv, device=device, padding=padding,
                          sector_size=args.sector_size, start_sector=args.start_sector,
                          constant_time=args.constant_time, allow_weak=args.allow_weak)

        cipher = keyed(None)   # (no device looked at yet: a service may run it)
        req = cipher._request(encrypt)
        out_size = None
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
            out_size = req.out_len(n) + len(header)
        # through a service: a stream is its engine's (our descriptors handed over), anything
        # else goes through a context whose pieces it runs; it checks the device itself, and this
        # process looks at none (no CUDA import, no context).  Else the device is checked now.
        served_stream = served is not None and _streams(args, req, n)
        cipher.close()
        if served is None:
            cipher = keyed(args.device)
        elif not served_stream:
            cipher = keyed(None)
            cipher.device = args.device   # (the service's to check: route asks it for this one)
        else:
            cipher = None
        if out is None:
            out = Output(args.outfile, size=out_size, sync=not args.no_sync)
        try:
            with out, service_asked(served):
                if served_stream:
                    if header:
                        out.write(header)
                    _run_served(args, encrypt, req, src, out, n, tuning)
                else:
                    _run(args, encrypt, cipher, req, src, reader, out, header, n, tuning)
        except BaseException as e:
            _note_written(e, out)
            if served_stream and hasattr(e, "ciphergrid_written"):
                # (the service says how far it wrote only now and then: more may have gone)
                e.ciphergrid_written = (f"at least {e.ciphergrid_written[0]}", out.name)
            raise
    finally:
        if cipher is not None:
            cipher.close()  # the keys it set up on a device are wiped
        if served is not None:
            served.close()   # (this command's connections to it)
    return EXIT_OK


def _run(args, encrypt, cipher, req, src, reader, out, header: bytes, n, tuning) -> None:
    """The job as route plans it: in this process (a stream on its engine, or a context), or,
    under a service (remote.service_asked), through a context whose pieces the service runs."""
    from ..progress import Progress
    from ..route import route

    write = out.write
    b64 = None
    if args.base64 and encrypt:
        from ..b64 import Base64Writer

        b64 = Base64Writer(out.write)
        write = b64.write
    if header:
        write(header)
    streams = _streams(args, req, n)
    r = route(req, args.device, n if streams else min(n or READ_CHUNK, READ_CHUNK),
              path="stream" if streams else "array")
    served = r.engine.kind == "remote"
    streams = streams and not served   # (a served stream runs through _run_served)
    where = "service" if served else r.device
    if args.verbose:
        print(f"ciphergrid: {r.describe()}" + (" (a context: its pieces run there)" if served
                                               else ""), file=sys.stderr)
    verb = "encrypted" if encrypt else "decrypted"
    with Progress(n, quiet=args.quiet, verb=verb, device=where) as bar:
        if streams:
            prefault = None
            if r.prefaults_output and out.kind == "replace":
                from ..transfer.files import prefault_output

                out.wait_reserved()
                prefault = prefault_output(out.fd, n, new=True)  # on a RAM disk: faulted in
            else:
                out.stop_reserving()  # (what the start-up left unreserved, the writes allocate)
            try:
                if prefault is not None:
                    prefault.wait()

                def advance(k: int) -> None:
                    out.count(k)
                    bar.advance(k)

                r.stream(src.f, out.fd, progress=advance, chunk_bytes=tuning[0],
                         depth=tuning[1], nbytes=n)
            finally:
                if prefault is not None:
                    prefault.close()
            return
        out.stop_reserving()
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        while True:
            chunk = reader(READ_CHUNK)
            if not chunk:
                break
            write(ctx.update(chunk))
            bar.advance(len(chunk))
        write(ctx.finalize())
        if b64 is not None:
            b64.close()


def _streams(args, req, n) -> bool:
    """Whether the data runs as a stream (file to file, pipe to pipe: the engine's own path);
    else through a context.  An input of unknown size under a block limit goes through a
    context, which counts."""
    return req.mode.streams(req) and not args.base64 and (n is not None or not req.limit_refuses)


def _run_served(args, encrypt, req, src, out, n, tuning) -> None:
    """The stream through the service route plans it on (remote.service_asked): it reads our
    input's descriptor and writes our output's (the output is still ours: named only when the
    service said the job is done)."""
    from ..progress import Progress
    from ..route import route

    r = route(req, args.device, n, path="stream")

    fresh = out.kind == "replace"   # (a new file: the service may fault its pages in ahead)
    if fresh:
        out.wait_reserved()
    else:
        out.stop_reserving()
    verb = "encrypted" if encrypt else "decrypted"
    with Progress(n, quiet=args.quiet, verb=verb, device="service") as bar:
        def advance(k: int) -> None:
            out.count(k)
            bar.advance(k)

        r.stream(src.fd, out.fd, progress=advance, nbytes=n, chunk_bytes=tuning[0],
                 depth=tuning[1], fresh_output=fresh)
    if args.verbose:
        reply = r.engine.last_reply()
        why = f" ({reply['reason']})" if reply.get("reason") else ""
        print(f"ciphergrid: {req.spec.name} {'encrypt' if encrypt else 'decrypt'} on "
              f"{reply.get('device')}{why}, by the service at {r.engine.address} "
              f"({reply.get('seconds', 0):.3f} s there)", file=sys.stderr)


