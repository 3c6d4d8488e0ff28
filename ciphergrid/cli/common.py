"""What every command shares: exit codes, warnings and error lines, hex options, the
service the command runs through."""

from __future__ import annotations

import errno
import os
import sys

from ..errors import InvalidArgument

EXIT_OK = 0
EXIT_USAGE = 2     # bad arguments, bad key / IV, the input does not suit the cipher
EXIT_AUTH = 3      # authentication failed: bad padding on decryption (bad tags later)
EXIT_IO = 4        # reading the input or writing the output failed (disk full, permissions...)
EXIT_DEVICE = 5    # a device or its runtime failed (compile error, out of memory, driver)
# a sealed file that does not open (seal/open): codes of their own, above any bitwise OR of the
# codes 0-5 (an MPI launcher may OR its ranks' codes)
EXIT_COMMITMENT = 8  # wrong key, passphrase or context, or a damaged header
EXIT_CHUNK = 9       # a chunk does not verify
EXIT_TRUNCATED = 10  # cut at a chunk boundary (or not a sealed length)
EXIT_SIGNAL = 128  # + the signal number: 130 SIGINT, 129 SIGHUP, 143 SIGTERM; 141: the reader of
#                    the output pipe went away (quietly, like coreutils)
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_USAGE: "usage or input error (arguments, key, IV, the input's length)",
    EXIT_AUTH: "authentication failure (bad padding; bad tags for AEADs)",
    EXIT_IO: "I/O error (cannot read the input, cannot write the output, disk full)",
    EXIT_DEVICE: "device or service error (kernel build, out of device memory, driver; the "
                 "service went away)",
    EXIT_COMMITMENT: "a sealed file's key commitment does not match (wrong key, passphrase or "
                     "context, or a damaged header)",
    EXIT_CHUNK: "a sealed file's chunk does not verify (altered, reordered, from another message)",
    EXIT_TRUNCATED: "a sealed file is truncated (at a chunk boundary, or not a sealed length)",
    EXIT_SIGNAL: "128 + N: stopped by signal N (SIGINT 130, SIGHUP 129, SIGTERM 143, SIGPIPE 141)",
}

#: bytes read per step from an input of unknown size read whole (an AEAD's message from a pipe)
READ_CHUNK = 64 << 20

#: errors that can only come from writing the output
_OUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)

#: the API's words in messages, as the command line spells them
_FLAG_WORDS = (("padding='pkcs7'", "--pad pkcs7"), ("sector_size", "--sector-size"),
               ("start_sector", "--start-sector"), ("constant_time=True", "--constant-time"))


def _flags(message: str) -> str:
    for word, flag in _FLAG_WORDS:
        message = message.replace(word, flag)
    return message


def _warn(message: str) -> None:
    print(f"ciphergrid: warning: {message}", file=sys.stderr)


def _hex(value: str, what: str) -> bytes:
    """``value`` as hex (whitespace between pairs allowed, as bytes.fromhex); an error names what
    is wrong -- characters other than hex digits first, then an odd count -- never the value."""
    v = value.strip()
    digits = "".join(v.split())
    if not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise InvalidArgument(f"{what} must be hexadecimal: the {len(v)} characters given contain "
                              "characters other than 0-9, a-f")
    if len(digits) % 2:
        raise InvalidArgument(f"{what} must be hexadecimal: the {len(v)} characters given contain "
                              f"an odd number of digits ({len(digits)})")
    try:
        return bytes.fromhex(v)
    except ValueError:  # (whitespace inside a pair) never echo the value: it may be a key
        raise InvalidArgument(f"{what} must be hexadecimal: the {len(v)} characters given are "
                              "not whole pairs of digits") from None


#: the most an option's file (associated data, a context) may hold: it is read into memory whole
OPTION_FILE_MAX = 64 << 20


def _file_bytes(path: str, flag: str, limit: int = OPTION_FILE_MAX) -> bytes:
    """A small file named by an option (associated data, a context), whole; refused past
    ``limit`` bytes (a device such as /dev/zero never ends)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InvalidArgument(f"{flag} {path}: cannot read: {e.strerror or e}") from None
    if len(data) > limit:
        raise InvalidArgument(f"{flag} {path}: holds more than {limit >> 20} MiB (read whole into "
                              "memory: give a smaller one)")
    return data



def _note_written(e: BaseException, out, *quiet) -> None:
    """For the one-line message: the output named where a full disk ended the run, and how much
    of a write-through output (stdout, a pipe) was already written when ``e`` ended it (not for
    a broken pipe, nor for the types ``quiet``)."""
    if (isinstance(e, OSError) and not e.filename and e.errno in _OUT_ERRNOS
            and out.name not in str(e)):
        e.filename = out.name
    if out.kind == "through" and not isinstance(e, (BrokenPipeError, *quiet)):
        e.ciphergrid_written = (out.written, out.name)



def _pipeline_flags(args):
    """--chunk-size / --depth, validated; handed to the pipeline (None: the device's tuning)."""
    from ..settings import check_chunk, check_depth, parse_bytes

    chunk = depth = None
    if getattr(args, "chunk_size", None) is not None:
        chunk = check_chunk(parse_bytes(args.chunk_size, "--chunk-size"))
    if getattr(args, "depth", None) is not None:
        depth = check_depth(args.depth)
    return chunk, depth



def _service_engine(args):
    """The service the command runs through, as route's remote engine (engines/remote.py):
    --service / CIPHERGRID_SERVICE ``auto`` (the per-user one when its socket answers), ``off``,
    or a socket path (it must answer: ServiceError); None: this process runs the command."""
    from ..settings import default_service_address, service_setting

    where = (args.service or service_setting() or "auto").strip()
    if where.startswith(("tls://", "tcp://")):
        raise InvalidArgument("--service: a command's files go to a local service (a socket "
                              "path); a remote one takes buffers (ciphergrid.connect)")
    if where.lower() == "off" or where.lower() == "auto" and not os.path.exists(
            default_service_address()):
        return None   # (no service to ask: the engines' modules are not imported for it)
    from ..engines.remote import for_setting

    return for_setting(where)


def _said_by_service(engine, what: str) -> None:
    """-v after a service ran a stream or a sealed file: where it ran there, and how long."""
    reply = engine.last_reply()
    why = f" ({reply['reason']})" if reply.get("reason") else ""
    print(f"ciphergrid: {what} on {reply.get('device')}{why}, by the service at "
          f"{engine.address} ({reply.get('seconds', 0):.3f} s there)", file=sys.stderr)


def _error(message: str, exc: BaseException | None = None) -> None:
    print(f"ciphergrid: error: {_flags(message)}{_written(exc)}", file=sys.stderr)


def _written(exc: BaseException | None) -> str:
    """"; N bytes were written to NAME" for an output written through (stdout, FIFO, device)."""
    w = getattr(exc, "ciphergrid_written", None)
    return f"; {w[0]} bytes were written to {w[1]}" if w else ""
