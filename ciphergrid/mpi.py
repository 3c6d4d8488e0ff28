"""``--mpi`` and :func:`crypt_file`: the package :mod:`ciphergrid.cluster` (this module's name
stays for the command line and for programs that import it)."""

from .cluster import PARTIAL_SUFFIX, POLL_MAX_S, RANGE, SIGNAL_WAIT_S, crypt_file, partial_path, run

__all__ = ["run", "crypt_file", "partial_path", "RANGE", "POLL_MAX_S", "PARTIAL_SUFFIX",
           "SIGNAL_WAIT_S"]
