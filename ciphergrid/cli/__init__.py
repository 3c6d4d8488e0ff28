"""ciphergrid command line: encrypt | decrypt | seal | open | keygen | serve | list | devices | selftest |
bench | report (a module per command).

Output bytes match ``openssl enc -NAME -nopad -K HEX -iv HEX`` (``--pad pkcs7``: OpenSSL's default
padding; ``--pbkdf2 --pass``: ``openssl enc -pbkdf2 -pass``, its ``Salted__`` header included).
Errors print one line, ``ciphergrid: error: ...``, before any output where the sizes decide them,
and exit with the codes of :data:`EXIT_CODES`.  A regular output file is replaced atomically (see
``fileio``); stdout, FIFOs and devices are written through, every write checked.
"""

from __future__ import annotations

import _signal as signal   # (the numbers; the signal module's enums only to name one)
import os
import sys

from .. import errors, interrupts
from ..errors import DeviceError, DeviceNotFound, Error, InvalidPadding, WeakCipherWarning
from .common import (EXIT_AUTH, EXIT_CHUNK, EXIT_CODES, EXIT_COMMITMENT, EXIT_DEVICE,  # noqa: F401
                     EXIT_IO, EXIT_OK, EXIT_SIGNAL, EXIT_TRUNCATED, EXIT_USAGE, _error, _warn,
                     _written)
from .parser import build_parser, chosen_command, parse  # noqa: F401


#: a sealed file's failures (errors.TAG_ERRORS), each its own exit code (every other failed
#: tag: EXIT_AUTH)
_SEALED_EXITS = {"CommitmentMismatch": EXIT_COMMITMENT, "ChunkFailed": EXIT_CHUNK,
                 "Truncated": EXIT_TRUNCATED}


def _failed(e: Error) -> int | None:
    """The exit code of ``e`` where it is a failed tag (errors.InvalidTag, made at its first
    use: none is before then) or bad padding, else None."""
    if isinstance(e, vars(errors).get("InvalidTag", ())):
        return {getattr(errors, name): code for name, code in _SEALED_EXITS.items()}.get(
            type(e), EXIT_AUTH)
    return EXIT_AUTH if isinstance(e, InvalidPadding) else None


def _dispatch(args) -> int:
    if args.command in ("encrypt", "decrypt"):
        from .crypt import cmd_crypt

        return cmd_crypt(args, args.command == "encrypt")
    if args.command in ("seal", "open"):
        from .seal import cmd_seal

        return cmd_seal(args, args.command == "seal")
    if args.command == "keygen":
        from .keygen import cmd_keygen

        return cmd_keygen(args)
    if args.command == "serve":
        from .serve import cmd_serve

        return cmd_serve(args)
    if args.command == "list":
        from .info import cmd_list

        return cmd_list(args)
    if args.command == "devices":
        from .info import cmd_devices

        return cmd_devices(args)
    if args.command == "selftest":
        from .info import cmd_selftest

        return cmd_selftest(args)
    from .. import bench

    if args.command == "bench":
        return bench.main(args)
    return bench.report_main(args)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    _warn(str(message))


def main(argv=None) -> int:
    """Run one command; returns the exit code (see :data:`EXIT_CODES`)."""
    import warnings

    warnings.showwarning = _show_warning  # the library's warnings as one line each
    # the cipher's own warnings (64-bit blocks, TDEA) are messages of this command, said once
    # (request.warn_once) even where PYTHONWARNINGS silences Python's warnings
    warnings.simplefilter("always", WeakCipherWarning)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    interrupts.install()
    try:
        return _dispatch(args)
    except BrokenPipeError:  # the reader of our output went away: quietly, as coreutils
        return EXIT_SIGNAL + signal.SIGPIPE
    except DeviceNotFound as e:
        _error(str(e))
        return EXIT_USAGE
    except DeviceError as e:
        _error(str(e), e)
        return EXIT_DEVICE
    except Error as e:
        _error(str(e), e)
        code = _failed(e)
        return EXIT_USAGE if code is None else code
    except OSError as e:  # a full disk, an I/O error: one line, no partial output
        where = f": {e.filename}" if e.filename else ""
        _error(f"{e.strerror or e}{where}", e)
        return EXIT_IO
    except KeyboardInterrupt as e:
        import signal as named

        signum = getattr(e, "signum", signal.SIGINT)
        print(f"ciphergrid: interrupted by {named.Signals(signum).name}{_written(e)}",
              file=sys.stderr)
        return EXIT_SIGNAL + signum
    finally:
        interrupts.restore()


#: the commands whose process ends at once after its output is flushed (:func:`console`)
_ENDS_AT_ONCE = ("encrypt", "decrypt", "seal", "open")
#: a file command's allocations between two collections of the youngest generation (gc's
#: threshold0): the start-up's module objects are frozen, the command's own are few
FILE_GC_YOUNG = 20000


def console() -> None:
    """The ``ciphergrid`` program: :func:`main`, then exit.  After a signal or a closed output
    pipe the process ends at once (``os._exit``) once our cleanup is done: worker threads still
    parked in a runtime must not meet the interpreter's shutdown.  A file command (encrypt,
    decrypt, seal, open; not ``--mpi``) that leaves no thread to join ends the same way once
    stdout and stderr are flushed and the exit functions have run: its outputs are closed, and
    the interpreter's teardown of every module would only cost its start-up's time again.
    What the start-up imported lives as long as the process: it is frozen out of the cyclic
    collector's passes (``gc.freeze``), which then look only at what the command makes; a file
    command's youngest generation is collected every FILE_GC_YOUNG allocations (its loop over
    the pieces makes few objects that the collector tracks)."""
    import gc

    gc.freeze()
    argv = sys.argv[1:]
    if chosen_command(argv) in _ENDS_AT_ONCE:
        gc.set_threshold(FILE_GC_YOUNG, *gc.get_threshold()[1:])
    from ..settings import one_blas_thread

    one_blas_thread()  # (before numpy's import)
    code = main(argv)
    flushed = True
    for f in (sys.stderr, sys.stdout):
        try:
            f.flush()
        except (OSError, ValueError):
            flushed = False
    if code >= EXIT_SIGNAL:
        os._exit(code)
    if flushed and _ends_at_once(argv):
        atexit = sys.modules.get("atexit")   # (not imported: nothing registered an exit function)
        if atexit is not None:
            atexit._run_exitfuncs()
        for f in (sys.stderr, sys.stdout):
            try:
                f.flush()
            except (OSError, ValueError):
                flushed = False
        if flushed:
            os._exit(code)
    sys.exit(code)


def _ends_at_once(argv) -> bool:
    """Whether the process of ``argv`` may end without the interpreter's teardown: a file
    command, not over MPI (no ``--mpi`` or its abbreviation, no mpi4py: MPI is finalised at
    exit), and no thread left but daemons (nothing to join)."""
    if chosen_command(argv) not in _ENDS_AT_ONCE or "mpi4py" in sys.modules \
            or any(a.startswith("--mp") for a in argv):
        return False
    threading = sys.modules.get("threading")
    return threading is None or all(t.daemon for t in threading.enumerate()
                                    if t is not threading.main_thread())


if __name__ == "__main__":
    console()
