"""``ciphergrid seal`` / ``open``: sealed files (C2SP chunked encryption), under a key file or a
passphrase (formats/passphrase.py: an Argon2id wrapper in front of the unchanged body)."""

from __future__ import annotations

import sys

from .. import errors
from ..errors import InvalidArgument
from .common import (EXIT_DEVICE, EXIT_OK, _file_bytes, _note_written, _said_by_service,
                     _service_engine)
from .keying import _open_key, _seal_key

#: bytes copied at a time from the staging file of --all-or-nothing to the output
COPY_STEP = 4 << 20


def cmd_seal(args, seal: bool) -> int:
    """``ciphergrid seal`` / ``open``: C2SP chunked encryption (Cobblestone-128, or -256 with
    --aes256); the chunks in OpenSSL's C loop on every core, or on a device as AEAD batches: the
    whole message one batch between two regular files, else batches of 64 MiB
    (formats/cobblestone.py, transfer/sealed.py).  ``open`` releases each chunk once its
    tag verified (a regular --out appears only when the whole message did; --all-or-nothing
    holds a stream's back until then too); with --offset / --length it maps the file and reads
    only the chunks of that range.

    Through a service (--service, CIPHERGRID_SERVICE: cli.common._service_engine) route plans
    the chunks on the service's remote engine, whose sealed-file entry hands it the command's
    own descriptors as ``encrypt``'s streams do; the key (a passphrase's derived here), the
    context and an input's header go in the request, a passphrase's wrapper is read or written
    here.  A range, and a context past what one request carries, stay in this process (-v says
    so)."""
    from ..fileio import Input
    from ..formats import cobblestone as cb

    _check_flags(args, seal)
    context = args.context.encode() if args.context is not None else b""
    if args.context_file is not None:
        context = _file_bytes(args.context_file, "--context-file")
    if getattr(args, "mpi", False):
        from ..cluster import sealed

        return {"ok": EXIT_OK}.get(sealed.run(args, seal, context), EXIT_DEVICE)
    src = Input(args.infile)
    served = None
    try:
        # the service named (or the per-user one under auto) runs the job; one named that does
        # not answer fails it here (exit 5), before a key is read or a passphrase asked for
        served = _served(args, _service_engine(args), context, seal)
        if seal:
            return _seal(args, src, context, served)
        if args.offset is not None or args.length is not None:
            return _open_range(args, src, context)
        head = bytearray(cb.HEADER)
        got = src.readinto(head)
        key, sch, head = _open_key(args, src, bytes(head[:got]), stream=True)
        return _open(args, src, context, key, sch, head, served)
    finally:
        if served is not None:
            served.close()   # (this command's connections to it)
        src.close()


def _served(args, served, context: bytes, seal: bool):
    """The service's remote engine where it runs this job, else None (closed): a range, a
    context past what one request carries (said with -v)."""
    if served is None:
        return None
    why = None
    if not seal and (args.offset is not None or args.length is not None):
        why = "--offset / --length"
    else:
        why = served.sealed_refusal(context)
    if why is None:
        return served
    if args.verbose:
        print(f"ciphergrid: {why}: run in this process, not by the service at {served.address}",
              file=sys.stderr)
    served.close()
    return None


def _plan(args, served, sch, seal: bool, nbytes: int | None):
    """The plan of a sealed file's chunks on the service (route, asked to use ``served``): its
    remote engine, which checks that the service runs the scheme's AEAD."""
    from .. import aeads
    from ..engines.remote import service_asked
    from ..formats import cobblestone as cb
    from ..request import aead_request
    from ..route import route

    chunks = 1 if nbytes is None else nbytes // cb.CHUNK + 1
    req = aead_request(aeads.spec(sch.aead), encrypt=seal, nonce_len=cb.NONCE,
                       tag_length=cb.TAG, count=chunks)
    with service_asked(served):
        return route(req, args.device, nbytes, path="stream")


def _check_flags(args, seal: bool) -> None:
    if getattr(args, "raw_key", False) and args.passphrase is not None:
        raise InvalidArgument("--raw-key is for --key-file, not --pass")
    if seal:
        costs = [f for f, v in (("--argon2-memory", args.argon2_memory),
                                ("--argon2-iterations", args.argon2_iterations),
                                ("--argon2-lanes", args.argon2_lanes)) if v is not None]
        if costs and args.passphrase is None:
            raise InvalidArgument(f"{costs[0]} sets the passphrase's cost: give it with --pass")
        return
    ranged = args.offset is not None or args.length is not None
    if args.all_or_nothing and ranged:
        raise InvalidArgument("--all-or-nothing is for a whole message (a range is opened whole "
                              "before it is written)")


# ------------------------------------------------------------------------------------ seal
def _seal(args, src, context: bytes, served=None) -> int:
    from ..fileio import Output
    from ..formats import cobblestone as cb

    sch, key, wrapper = _seal_key(args, src)
    if served is not None:   # (the service writes the C2SP header, counted in its progress)
        plan = _plan(args, served, sch, True, src.size)
        total = None if src.size is None else cb.sealed_length(src.size)
        with _Stream(args, "sealed", total, "service", served=True) as st:
            with Output(args.outfile, sync=not args.no_sync) as out:
                st.out = out
                out.write(wrapper)
                plan.sealed_file(True, sch.name, key, context, src.fd, out.fd, progress=st.advance)
        _said(args, sch, "seal", plan)
        return EXIT_OK
    total = None if src.size is None else cb.sealed_length(src.size) - cb.HEADER
    where = _where(args, sch)
    with _Stream(args, "sealed", total, where[0]) as st:
        with Output(args.outfile, sync=not args.no_sync) as out:
            st.out = out
            _say_where(args, sch, "seal", where, src, out)
            from ..transfer import sealed

            s = cb.Sealer(sch, key, context, device=args.device, path="stream")
            out.write(wrapper + s.header())
            sealed.seal(src.f, out.fd, s, progress=st.advance)
    return EXIT_OK


# ------------------------------------------------------------------------------------ open
def _open_range(args, src, context: bytes) -> int:
    import mmap

    from ..fileio import Output
    from ..formats import cobblestone as cb
    from ..formats import passphrase as pp

    if not src.regular:
        raise InvalidArgument("--offset / --length need a regular --in file (a pipe has no "
                              "random access)")
    sealed = mmap.mmap(src.fd, 0, prot=mmap.PROT_READ) if src.size else b""
    key, sch, _ = _open_key(args, src, bytes(sealed[:pp.WRAPPER]), stream=False)
    body = memoryview(sealed)[pp.WRAPPER:] if args.passphrase is not None else sealed
    try:
        data = cb.decrypt_range(body, key, context, args.offset or 0, args.length,
                                aes256=sch.key_len == 32, device=args.device)
    finally:
        if isinstance(body, memoryview):
            body.release()
    with Output(args.outfile, sync=not args.no_sync) as out:
        out.write(data)
    return EXIT_OK


def _open(args, src, context: bytes, key: bytes, sch, head: bytes, served=None) -> int:
    from ..fileio import Output
    from ..formats import cobblestone as cb

    if len(head) < cb.HEADER:
        raise cb.Truncated(f"{sch.name}: the sealed message is shorter than its header: nothing "
                           "is released")
    # (the key commitment checked here first, through a service too: a wrong key or context
    # is said before anything is sent; the service checks it again)
    op = cb.Opener(sch, key, context, head, device=args.device, path="stream")
    total = None
    if src.size is not None:
        total = cb.message_length(cb.HEADER + src.size)   # (Truncated before anything is read)
    if served is not None:
        plan = _plan(args, served, sch, False, total)

        def run(fd: int, progress=None) -> None:
            plan.sealed_file(False, sch.name, key, context, src.fd, fd, header=head,
                             progress=progress)
        device = "service"
    else:
        where = _where(args, sch)
        device = where[0]
        from ..transfer import sealed

        def run(fd: int, progress=None) -> None:
            sealed.open_(src.f, fd, op, progress=progress)

    with _Stream(args, "opened", total, device, served=served is not None) as st:
        with Output(args.outfile, sync=not args.no_sync) as out:
            st.out = out
            if served is None:
                _say_where(args, sch, "open", where, src, out)
            if args.all_or_nothing and out.kind == "through":
                _staged(out, st, run)
            else:
                run(out.fd, st.advance)
    if served is not None:
        _said(args, sch, "open", plan)
    return EXIT_OK


def _said(args, sch, verb: str, plan) -> None:
    """-v: where the service ran the chunks."""
    if args.verbose:
        _said_by_service(plan.engine, f"{sch.name} {verb}")


def _staged(out, st, run) -> None:
    """--all-or-nothing to a stream: the plaintext opened (``run(fd)``: in this process or by
    the service) into an unlinked temporary file, copied to ``out`` only once every chunk
    verified (nothing of it survives a failure or a crash)."""
    import os
    import tempfile

    with tempfile.TemporaryFile(prefix="ciphergrid-open-") as f:
        run(f.fileno())
        buf = bytearray(COPY_STEP)
        pos = 0
        while True:
            got = os.preadv(f.fileno(), [buf], pos)
            if not got:
                return
            out.write(memoryview(buf)[:got])
            st.bar.advance(got)
            pos += got


def _where(args, sch) -> tuple[str, bool, str]:
    """Where the chunks run: (the device's spec, or "native"; whether OpenSSL's C loop runs
    them on this process's cores; route's reason or "")."""
    from ..transfer import sealed

    native, device, reason = sealed.runs_on(sch, args.device, sealed.BATCH_PIECE)
    return device, native, reason


def _say_where(args, sch, verb: str, where: tuple, src, out) -> None:
    """-v, once the output is open: OpenSSL's place (pyca's Cobblestone loop or OpenSSL's C
    loop) and the workers transfer.sealed runs for this input, or the device and its
    batches (transfer.sealed.said: the whole message one batch where transfer.sealed.one_batch
    says so, else batches of BATCH_PIECE)."""
    if not args.verbose:
        return
    from ..transfer import sealed

    device, native, reason = where
    whole = not native and sealed.one_batch(src.fd, out.fd, verb == "seal")
    workers, alone = sealed.workers(native, src.size, verb == "seal")
    how = sealed.said(native, reason, whole, workers, sch=sch, alone=alone)
    print(f"ciphergrid: {sch.name} {verb} on {'native' if native else device} ({how})",
          file=sys.stderr)


class _NoBar:
    """progress.Progress where it shows nothing (--quiet, stderr not a terminal)."""

    def advance(self, n: int) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


_NO_BAR = _NoBar()


class _Stream:
    """The run's progress bar, and on a failure the one-line error's account of what a
    write-through output (stdout, a pipe, a device) already got: a signal or an I/O error says
    how many bytes reached it (as ``encrypt``); a chunk or truncation found after verified
    chunks were written says so instead of "nothing is released"."""

    def __init__(self, args, verb: str, total: int | None, device: str, served: bool = False):
        if args.quiet or not sys.stderr.isatty():   # (no bar and no summary: progress.py's rule)
            self.bar = _NO_BAR
        else:
            from ..progress import Progress

            self.bar = Progress(total, quiet=args.quiet, verb=verb, device=device)
        self.out = None
        self.served = served   # (a service writes the output: it says how far now and then)

    def advance(self, k: int) -> None:
        self.out.count(k)
        self.bar.advance(k)

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, et, e, tb):
        self.bar.__exit__(et, e, tb)
        out = self.out
        if e is None or out is None:
            return False
        if isinstance(e, errors.InvalidTag):
            if out.kind == "through" and out.written:
                raise _released(e, out) from None
            return False
        _note_written(e, out)
        if self.served and hasattr(e, "ciphergrid_written") and not hasattr(e, "service_done"):
            # (the service died or went silent: more may have reached the output since it last
            # said how far it was)
            e.ciphergrid_written = (f"at least {e.ciphergrid_written[0]}", out.name)
        return False


def _released(e: errors.InvalidTag, out) -> errors.InvalidTag:
    """``e`` (its class kept: its exit code) said with the verified bytes ``out`` got first."""
    text = str(e)
    for tail in (": nothing more is released", ": nothing is released"):
        text = text.replace(tail, "")
    failed = isinstance(e, errors.ChunkFailed) and e.chunk is not None
    when = f"chunk {e.chunk} failed" if failed else "this was found"
    new = type(e)(f"{text}; {out.written} verified bytes were written to {out.name} before {when}")
    if isinstance(e, errors.ChunkFailed):
        new.chunk = e.chunk
    return new
