"""Sealed files over an MPI job: ``mpiexec -n N ciphergrid seal|open --mpi`` (docs/mpi.md).

Rank 0 does what the one-process command does before the data: the input key from --key-file,
or from --pass (Argon2id derived there only: the workers get the derived input key, inside MPI's
messages, as a block job's key), the context, the C2SP header (and a passphrase's wrapper)
written, or read and its key commitment checked.  The output is the block job's partial file
(job.partial_output: named at the end, removed on any failure).  The plan's ranges are plaintext
bytes in whole 16 KiB chunks, dealt by the block job's manager; each worker seals or opens the
chunks of its range (``Sealer.seal_at`` / ``Opener.open_at``) reading and writing at their
offsets on either side.  The range that ends the message holds the final chunk (shorter,
possibly empty) and is run with ``final``.

A chunk that does not verify is the input's fault, not the worker's: it is not dealt again, the
job fails with it on every rank (ChunkFailed, exit 9).
"""

from __future__ import annotations

import os
import sys

from ..errors import InvalidArgument
from .wire import RANGE
from .worker import _positioned, _Runner


def run(args, seal: bool, context: bytes) -> str:
    """``seal`` / ``open`` with --mpi on this rank: "ok" on every rank, or the job's error raised
    on every rank (rank 0's words; as cluster.run)."""
    from .. import interrupts
    from . import _execute, _share_plan, _world

    comm = _world(InvalidArgument)
    if comm.rank != 0:
        interrupts.hold()   # (rank 0 holds them once its job is made: a passphrase's prompt)
    plan = _share_plan(comm, lambda: _job(args, seal, context), True)
    summary = _execute(comm, plan, args.device, command=True)
    if comm.rank == 0 and args.verbose:
        print(f"ciphergrid: {plan['cipher']} {'seal' if seal else 'open'} over {comm.size} "
              f"ranks: {summary}", file=sys.stderr)
    return "ok"


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
    from .job import _Job, partial_output

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
            "partial": partial, "out_offset": out_offset, "step": step, "send": False,
            "serial": False}
    return _Job(plan, output, sentinel)


class _SealedRunner(_Runner):
    """A rank's ranges of a sealed file: plaintext bytes [a, b) in whole chunks (the last range:
    the final chunk too), sealed or opened from their offsets in the input to theirs in the
    partial file, on this node's cores (OpenSSL's C loop) or device (AEAD batches)."""

    def __init__(self, plan, device: str, rank: int):
        from ..formats import cobblestone as cb
        from ..settings import injected_faults

        self.plan, self.rank = plan, rank
        s = plan["sealed"]
        sch = cb.scheme(s["aes256"])
        self.seal = s["seal"]
        if self.seal:
            self.engine = cb.Sealer(sch, s["key"], s["context"], salt=s["salt"], device=device,
                                    path="stream")
        else:
            self.engine = cb.Opener(sch, s["key"], s["context"], s["header"], device=device,
                                    path="stream")
        step = plan["step"]
        self.device = "native" if cb._native(sch, device, "stream", step, step // cb.CHUNK) \
            else device
        self.fin = os.open(plan["in"], os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.fout = os.open(plan["partial"], os.O_WRONLY | os.O_CLOEXEC)
        except BaseException:
            os.close(self.fin)
            raise
        self.fault = injected_faults().get(f"mpi:{rank}")
        self.ran = 0
        self.bufs = [bytearray(), bytearray()]   # (the range's input and output, reused)

    def _buf(self, i: int, n: int) -> memoryview:
        if len(self.bufs[i]) < n:
            self.bufs[i] = bytearray(n)
        return memoryview(self.bufs[i])[:n]

    def run(self, a: int, b: int) -> None:
        from ..formats import cobblestone as cb

        self._injected(b - a)
        p = self.plan
        n, first, final = b - a, a // cb.CHUNK, b == p["n"]
        # the range sealed: a tag per whole chunk, and one for the final chunk where it ends here
        plain, sealed = (n, a), (n + (n // cb.CHUNK + final) * cb.TAG, first * cb.SEALED_CHUNK)
        (m_in, at_in), (m_out, at_out) = (plain, sealed) if self.seal else (sealed, plain)
        at_in, at_out = p["in_offset"] + at_in, p["out_offset"] + at_out
        src, dst = self._buf(0, m_in), self._buf(1, m_out)
        if _positioned(os.preadv, self.fin, src, at_in) != m_in:
            raise OSError(f"{p['in']}: the input changed size while it was read")
        if self.seal:
            k = self.engine.seal_at(first, src, n, final, dst)
        else:
            k = self.engine.open_at(first, src, m_in, final, dst)
        if _positioned(os.pwritev, self.fout, dst[:k], at_out) != k:
            raise OSError(f"{p['partial']}: a write stopped short (disk full?)")
        self.ran += n

    def crypt(self, a: int, data: bytes, chain) -> bytes:
        raise InvalidArgument("--mpi: a sealed file's ranges are read by the workers")

    def close(self) -> None:
        os.close(self.fin)
        os.close(self.fout)
