"""Rank 0's job (ciphergrid.cluster): the command's request, input and output checked as the
one-process command checks them, the plan every rank gets, the partial file the workers write
and its sentinel."""

from __future__ import annotations

import os
import subprocess
import sys

from ..errors import InvalidArgument
from .wire import OUTPUT_ERRNOS, PARTIAL_SUFFIX, RANGE, OutputFailed


def partial_path(out: str) -> str:
    """The partial output of ``out``: ``.NAME.ciphergrid-partial`` in the same folder."""
    folder, name = os.path.split(os.path.abspath(out))
    return os.path.join(folder, f".{name}{PARTIAL_SUFFIX}")


def name_output(e: BaseException, name: str) -> None:
    """The output named in a write of it that failed (a worker's, or rank 0's own full disk or
    file size limit), as the one-process command names it."""
    if (isinstance(e, OSError) and not e.filename
            and (isinstance(e, OutputFailed) or e.errno in OUTPUT_ERRNOS[:3])):
        e.filename = name


def no_service(args) -> None:
    """--mpi runs the job on the MPI job's ranks: a --service socket named beside it is refused
    (auto and off, and CIPHERGRID_SERVICE, are the one-process command's)."""
    where = (getattr(args, "service", None) or "").strip().lower()
    if where not in ("", "auto", "off"):
        raise InvalidArgument("--mpi runs the job on the MPI job's ranks, not through a service: "
                              "leave out --service")


class _Job:
    """Rank 0's side of a job: the plan every rank gets, the output (``fileio.Output``: replaced
    when everything succeeded, or written through), the sentinel of a partial file the workers
    write by name, and the input (``source``: a fileio.Input) when rank 0 sends the data."""

    def __init__(self, plan, out, sentinel=None, source=None):
        self.plan, self.out, self.sentinel, self.source = plan, out, sentinel, source
        self.sends: list = []   # rank 0's sends still open when the dealing ended (wire._end)

    @classmethod
    def for_command(cls, args, encrypt: bool, keying) -> "_Job":
        """The command line's job: its request, input and output, checked as the one-process
        command checks them and in the same words (``keying``: the command line's key reader;
        its passphrase header too)."""
        from .. import aeads
        from ..api import _request
        from ..cli.keying import _salted as salted
        from ..fileio import Input
        from ..registry import known, lookup
        from ..settings import parse_bytes

        no_service(args)
        if not known(args.cipher) and aeads.is_aead(args.cipher):
            raise InvalidArgument(f"--mpi: {args.cipher.strip().lower()} is an AEAD: AEADs do "
                                  "not run under --mpi yet (sealed files do: seal, open)")
        spec = lookup(args.cipher)
        if args.base64 or args.pad:
            raise InvalidArgument("--mpi: --base64 and --pad are not supported")
        src = Input(args.infile)
        try:
            kg = keying(args, spec, encrypt, src)
            if kg.phrase is not None and spec.mode.paddable:
                raise InvalidArgument(f"--mpi: {spec.name} with a passphrase is padded (openssl "
                                      "enc); give --key-file, or a mode without padding")
            size = src.size
            header = salted(args, spec, kg, encrypt, src.read)
            offset = size - src.size if size is not None else 0   # (a header read: skipped)
            req = _request(spec.name, kg.key, kg.iv, encrypt, None, args.sector_size,
                           args.start_sector, args.constant_time, None, args.allow_weak)
            step = parse_bytes(args.mpi_range, "--mpi-range") if args.mpi_range else RANGE
            sync = not args.no_sync
            if (not args.mpi_send and not src.is_stdin and src.regular
                    and _regular_or_new(args.outfile)):
                n = src.size
                src.close()
                return cls.for_files(req, args.infile, offset, n, args.outfile, header, step, sync)
            return cls._sending(req, src, args.outfile, header, step, sync)
        except BaseException:
            src.close()
            raise

    @classmethod
    def for_files(cls, req, src: str, offset: int, n: int, out: str, header: bytes, step: int,
                  sync: bool) -> "_Job":
        """The workers read ``src`` and write the partial file of ``out`` themselves."""
        _admit(req, n)
        output, partial, sentinel = partial_output(out, len(header) + req.out_len(n), header, sync)
        plan = _plan(req, os.path.abspath(src), offset, n, partial, len(header), step)
        return cls(plan, output, sentinel)

    @classmethod
    def _sending(cls, req, src, out, header: bytes, step: int, sync: bool) -> "_Job":
        """Rank 0 reads the input and writes the output: a replaced file (anonymous until named,
        as without --mpi), or one written through in order."""
        from ..fileio import Output

        n = src.size
        if n is None and req.limit_refuses:
            raise InvalidArgument(f"--mpi: {req.spec.name} over an input of unknown size (its "
                                  "block limit must be counted): give a file, or --allow-weak")
        if n is not None:
            _admit(req, n)
        output = Output(out, size=None if n is None else len(header) + req.out_len(n), sync=sync)
        try:
            if header:
                output.write(header)
            plan = _plan(req, None, 0, n, None, len(header), step)
            return cls(plan, output, source=src)
        except BaseException:
            output.abort()
            raise

    def commit(self) -> None:
        self.out.commit()

    def abort(self) -> None:
        self.out.abort()

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
        if self.sentinel is not None:
            self.sentinel.close()


def partial_output(out: str, size: int, header: bytes, sync: bool):
    """``--out out`` as the workers write it: (its fileio.Output, the partial file's path, the
    sentinel that removes it), the partial file ``size`` bytes with ``header`` at its start."""
    from ..fileio import Output

    output = Output(out, sync=sync, named=_fresh_partial)
    try:
        if output.kind != "replace":   # (made a FIFO or a device meanwhile)
            raise OSError(f"--out {out}: not a regular file any more")
        os.ftruncate(output.fd, size)
        if header:
            os.pwrite(output.fd, header, 0)
        partial = partial_path(output.target)
        return output, partial, _Sentinel(partial)
    except BaseException as e:
        output.abort()
        name_output(e, output.name)
        raise


def _regular_or_new(path) -> bool:
    """Whether ``--out path`` is a file the workers may write (a regular file, or none yet)."""
    from ..fileio import output_target

    return output_target(path) in ("regular", "new", "nowhere")


def _admit(req, n: int) -> None:
    """What the input's size decides, before any output."""
    req.admit(n)
    req.check_length(n)


def _fresh_partial(target: str) -> str:
    """The partial file's name for ``target``, a stale one (a run that could not end) removed."""
    partial = partial_path(target)
    if os.path.lexists(partial):
        os.unlink(partial)
        print(f"ciphergrid: warning: removed {partial}, left by an earlier run that did not "
              "end", file=sys.stderr)
    return partial


def _plan(req, src, offset: int, n, partial, out_offset: int, step: int) -> dict:
    """The plan every rank gets.  ``src`` None: rank 0 sends the data (``n`` None: until the
    input ends)."""
    # (serial: the message is one range, run a step at a time by one rank -- or, sent, in
    # pieces one after the other, each taking its chaining value from the one before)
    unit = req.mode.split_unit(req) or req.block_size
    step = max(unit, step // unit * unit)
    return {"cipher": req.spec.name, "key": bytes(req.key), "iv": bytes(req.iv) if req.iv else None,
            "encrypt": req.encrypt, "sector_size": req.sector_size,
            "start_sector": req.start_sector or None, "impl": req.impl, "allow_weak": req.allow_weak,
            "in": src, "in_offset": offset, "n": n, "partial": partial, "out_offset": out_offset,
            "step": step, "unit": unit, "send": src is None,
            "serial": req.mode.split_unit(req) is None}


class _Sentinel:
    """A process outside the MPI job that removes the partial file when rank 0 ends without
    naming it (MPI's SIGKILL of every rank after one died, or a SIGKILL of rank 0).  It waits for
    the end of a pipe that only rank 0 holds; the file it removes is the one made (same inode)."""

    _CODE = ("import os, sys\n"
             "while os.read(0, 512):\n"
             "    pass\n"
             "try:\n"
             "    st = os.stat(sys.argv[1])\n"
             "    if (st.st_dev, st.st_ino) == (int(sys.argv[2]), int(sys.argv[3])):\n"
             "        os.unlink(sys.argv[1])\n"
             "except OSError:\n"
             "    pass\n")

    def __init__(self, path: str):
        st = os.stat(path)
        r, self.w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", self._CODE, path, str(st.st_dev), str(st.st_ino)],
                stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        except BaseException:
            os.close(self.w)
            raise
        finally:
            os.close(r)

    def close(self) -> None:
        if self.w is not None:
            os.close(self.w)
            self.w = None
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
