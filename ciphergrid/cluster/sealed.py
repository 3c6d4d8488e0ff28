"""Sealed files over an MPI job: ``mpiexec -n N ciphergrid seal|open --mpi`` (docs/mpi.md).

Rank 0 does what the one-process command does before the data: the input key from --key-file,
or from --pass (Argon2id derived there only: the workers get the derived input key, inside MPI's
messages, as a block job's key), the context, the C2SP header (and a passphrase's wrapper)
written, or read and its key commitment checked.  The output is the block job's partial file
(job.partial_output: named at the end, removed on any failure).  The plan's ranges are plaintext
bytes in whole 16 KiB chunks, dealt by the block job's manager; each worker seals or opens the
chunks of its range (``Sealer.seal_at`` / ``Opener.open_at``: worker._SealedRunner) reading
and writing at their offsets on either side.  The range that ends the message holds the final
chunk (shorter, possibly empty) and is run with ``final``.

A chunk that does not verify is the input's fault, not the worker's: it is not dealt again, the
job fails with it on every rank (ChunkFailed, exit 9).
"""

from __future__ import annotations

import os

from ..errors import InvalidArgument
from .wire import RANGE


def run(args, seal: bool, context: bytes) -> str:
    """``seal`` / ``open`` with --mpi on this rank: "ok" on every rank, or the job's error raised
    on every rank (rank 0's words; as cluster.run)."""
    from . import command

    return command(args, lambda: _job(args, seal, context), "seal" if seal else "open")


def _through(path) -> bool:
    """Whether ``--out path`` is written through (stdout, a FIFO, a device), not replaced."""
    from ..fileio import output_target

    return output_target(path) in ("stdout", "descriptor", "special")


def _job(args, seal: bool, context: bytes):
    """Rank 0's job: the key, the header, the output's partial file and the plan."""
    from ..cli.keying import _open_key, _seal_key
    from ..fileio import Input
    from ..formats import cobblestone as cb
    from ..formats import passphrase as pp
    from ..settings import parse_bytes
    from .job import _Job, no_service, partial_output

    no_service(args)
    if not seal and (args.offset is not None or args.length is not None):
        raise InvalidArgument("--mpi opens a whole message: --offset / --length run in one "
                              "process (leave out --mpi)")
    step = parse_bytes(args.mpi_range, "--mpi-range") if args.mpi_range else RANGE
    step = max(cb.CHUNK, step // cb.CHUNK * cb.CHUNK)
    src = Input(args.infile)
    try:
        if src.is_stdin or not src.regular or _through(args.outfile):
            raise InvalidArgument(f"--mpi: {'seal' if seal else 'open'} needs a regular --in "
                                  "file and a regular --out file (on a filesystem every rank "
                                  "sees)")
        if seal:
            sch, key, wrapper = _seal_key(args, src)
            c2sp = cb.Sealer(sch, key, context, device="native").header()
            header = wrapper + c2sp
            n = src.size
            job = {"seal": True, "aes256": sch.key_len == 32, "key": key, "context": context,
                   "salt": c2sp[:cb.SALT]}
            in_offset, out_offset = 0, len(header)
            size = len(header) + cb.sealed_length(n) - cb.HEADER
        else:
            key, sch, _ = _open_key(args, src, os.pread(src.fd, pp.WRAPPER, 0), stream=False)
            wrap = pp.WRAPPER if args.passphrase is not None else 0
            head = os.pread(src.fd, cb.HEADER, wrap)
            if len(head) < cb.HEADER:
                raise cb.Truncated(f"{sch.name}: the sealed message is shorter than its header: "
                                   "nothing is released")
            cb.Opener(sch, key, context, head, device="native")   # (the commitment: 8)
            n = cb.message_length(src.size - wrap)                  # (a sealed length: 10)
            job = {"seal": False, "aes256": sch.key_len == 32, "key": key, "context": context,
                   "header": head}
            in_offset, out_offset, header = wrap + cb.HEADER, 0, b""
            size = n
        infile = os.path.abspath(args.infile)
    finally:
        src.close()
    output, partial, sentinel = partial_output(args.outfile, size, header, not args.no_sync)
    plan = {"cipher": sch.name, "sealed": job, "in": infile, "in_offset": in_offset, "n": n,
            "partial": partial, "out_offset": out_offset, "step": step, "unit": cb.CHUNK,
            "send": False,
            "serial": False}
    return _Job(plan, output, sentinel)
