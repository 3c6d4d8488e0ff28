"""One file over many nodes: ``mpiexec -n N ciphergrid encrypt|decrypt ... --mpi`` (mpi4py).

Seed 002's resource manager as an MPI job (docs/mpi.md):

* **rank 0 is the manager**: it checks the arguments, the key (a passphrase is asked and derived
  there only) and the output (``fileio.Output``: the one-process command's rules and words), and
  deals the message out (cluster.manager): every other rank is an engine of the ``mpi`` kind and
  the composite engine's dealer deals them ranges on the plan's step (``--mpi-range``, default
  64 MiB, on the mode's grain) -- shares by expected speed, then a self-scheduled tail, so a
  slow worker never holds the job; it takes no range itself (one rank alone: it runs them all);
* **the other ranks are workers**: each reads its ranges of the input file and writes them into
  the partial output file itself (positioned I/O: the files are on a filesystem every node sees),
  running them on its node's engines (``--device``: ``auto``, a GPU, ``all`` for the scheduler
  over every device of the node);
* **rank 0 sends the data** instead where the files are not for the workers to open: an input
  that is not a regular file, an output written through (stdout, a FIFO, a device), ``--mpi-send``;
* **nothing partial**: the workers' output is ``.NAME.ciphergrid-partial`` in the output's folder,
  renamed to NAME by rank 0 only after every range was confirmed.  Rank 0 removes it on any
  failure or signal it sees, and a sentinel process it starts (outside the job, so that MPI's
  SIGKILL of every rank does not reach it) removes it when rank 0 ends without naming it; a later
  run on the same output removes one that a lost node left (and says so);
* **one outcome**: every rank ends with rank 0's exit code; only rank 0 says why.  A worker that
  gets a signal tells rank 0, which ends the job as if it had got it;
* **faults**: a worker whose range fails takes no more ranges and its range is dealt to another
  one, as is a range that runs past the dealer's hang limit (``CIPHERGRID_FAULT=mpi:RANK:fail:
  BYTES`` makes rank RANK fail once it has run BYTES; ``mpi:RANK:kill:BYTES`` kills it, which
  ends the MPI job; ``mpi:RANK:hang:BYTES`` stops it); a fault of the job (a write of the output
  that fails: a full disk; a sealed chunk that does not verify) ends it on every rank, the
  other ranks leaving their ranges at their next step;
* CBC encryption (serial) runs on one worker, as one range;
* sealed files (``seal`` / ``open --mpi``: cluster.sealed) are jobs of the same dealer: ranges
  of whole chunks, a chunk that does not verify ending the job on every rank (not dealt again).

The keys go from rank 0 to the workers inside MPI's messages (never on a command line, never
logged), as the request's fields.
"""

from __future__ import annotations

import os
import sys

from ..errors import DeviceError, InvalidArgument
from .job import _Job, name_output, partial_path
from .manager import deal
from .wire import (_END, _PLAN, PARTIAL_SUFFIX, POLL_MAX_S, RANGE, SIGNAL_WAIT_S, _await, _end,
                   _portable, _tell)
from .worker import _work

__all__ = ["run", "crypt_file", "partial_path", "RANGE", "POLL_MAX_S", "PARTIAL_SUFFIX",
           "SIGNAL_WAIT_S"]


def run(args, encrypt: bool, keying) -> str:
    """The command on this rank: "ok" on every rank, or the job's error raised on every rank
    (rank 0's, with its message; the others' silenced, so that the command line exits with
    rank 0's code everywhere and says why once).  ``keying``: the command line's key reader
    (cli.keying._keying), run on rank 0 only."""
    return command(args, lambda: _Job.for_command(args, encrypt, keying),
                   "encrypt" if encrypt else "decrypt")


def command(args, make_job, verb: str) -> str:
    """A command line's job on this rank (``make_job``: rank 0's, cluster.run's rules)."""
    from .. import interrupts

    comm = _world(InvalidArgument)
    if comm.rank != 0:
        interrupts.hold()   # (rank 0 holds them once its job is made: a passphrase's prompt)
    plan = _share_plan(comm, make_job, True)
    summary = _execute(comm, plan, args.device, command=True)
    if comm.rank == 0 and args.verbose:
        print(f"ciphergrid: {plan['cipher']} {verb} over {comm.size} ranks: {summary}",
              file=sys.stderr)
    return "ok"


def _world(error):
    try:
        from mpi4py import MPI
    except ImportError:
        raise error("--mpi needs mpi4py and an MPI library: pip install 'ciphergrid[mpi]' "
                    "(docs/mpi.md)") from None
    return MPI.COMM_WORLD


def crypt_file(src: str, dst: str, cipher: str, key, iv=None, *, encrypt: bool = True, comm=None,
               device: str = "auto", sector_size=None, start_sector=None, allow_weak: bool = False,
               range_bytes: int = RANGE, sync: bool = True) -> dict:
    """For programs that are MPI jobs already: every rank of ``comm`` (default COMM_WORLD) calls
    this with the same arguments (collective).  Rank 0 checks them and deals ``src`` in ranges
    to the other ranks, which encipher them on their node's ``device`` into ``dst``'s partial
    file; ``dst`` appears when every range is done.  Returns {"bytes", "summary"} on every rank;
    raises the same error on every rank when the job failed."""
    comm = comm or _world(DeviceError)

    def job():
        from ..api import _request

        req = _request(cipher, bytes(key), bytes(iv) if iv is not None else None, encrypt, None,
                       sector_size, start_sector, False, None, allow_weak)
        if not os.path.isfile(src):
            raise InvalidArgument(f"the input must be a regular file, not {src}")
        return _Job.for_files(req, src, 0, os.path.getsize(src), dst, b"", range_bytes, sync)

    plan = _share_plan(comm, job, False)
    return {"bytes": plan["n"], "summary": _execute(comm, plan, device, command=False)}


def _share_plan(comm, make_job, command: bool):
    """Rank 0 makes the job (``make_job``) and sends its plan to every rank; a failure there
    ends every rank (_end).  The plan, on every rank (rank 0's ``plan["job"]``: its job, not
    sent)."""
    if comm.rank == 0:
        try:
            job = make_job()
        except BaseException as e:
            _tell(comm, _PLAN, None, _portable(e))
            _end(comm, e, command)
        job.plan["halt_id"] = os.urandom(8)   # (this job's halts, told from an earlier job's)
        _tell(comm, _PLAN, job.plan, None)
        job.plan["job"] = job
        return job.plan
    plan, err = _await(comm, _PLAN)
    if plan is None:
        _end(comm, err, command)
    return plan


def _execute(comm, plan, device: str, command: bool) -> str:
    """Every rank: its part of the plan (manager, worker, or alone).  Returns the job's summary
    on every rank when the output is named; raises rank 0's error on every rank otherwise
    (``command``: the command line's; its workers silenced, its signals held where they land and
    raised where a rank looks for messages or between ranges: interrupts.hold)."""
    if command:
        from .. import interrupts

        interrupts.hold()
    if comm.rank == 0:
        job, outcome = plan["job"], None
        try:
            deal(comm, job, device)
            job.commit()
        except BaseException as e:
            job.abort()
            name_output(e, job.out.name)
            if job.out.kind == "through" and not isinstance(e, BrokenPipeError):
                e.ciphergrid_written = (job.out.written, job.out.name)   # (the command line's note)
            outcome = e
        finally:
            job.close()
        summary = plan.get("summary", "")
        _tell(comm, _END, _portable(outcome), summary)
        _end(comm, outcome, command, job.sends)
        return summary
    end = _work(comm, plan, device)
    outcome, summary = end if end is not None else _await(comm, _END)
    _end(comm, outcome, command)
    return summary
