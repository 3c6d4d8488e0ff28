"""``ciphergrid keygen``: a new random key file for seal/open (or any 16- or 32-byte key)."""

from __future__ import annotations

import os
import sys

from ..errors import InvalidArgument
from .common import EXIT_OK


def cmd_keygen(args) -> int:
    """A key of 16 bytes (32 with --aes256) from the operating system's random source, written
    as hex text and a newline.  A file is created with mode 0600 and never replaces anything
    (O_EXCL: an existing name, a symbolic link too, is a usage error); ``--out -`` writes to
    standard output."""
    import secrets

    key = secrets.token_bytes(32 if args.aes256 else 16)
    text = bytearray(key.hex().encode() + b"\n")
    try:
        if args.outfile == "-":
            _write_all(sys.stdout.fileno(), text, "standard output")
            return EXIT_OK
        _create(args.outfile, text)
    finally:
        text[:] = bytes(len(text))
    return EXIT_OK


def _create(path: str, text: bytearray) -> None:
    """``text`` in a new file ``path`` (0600, synced); nothing left behind on a failure."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise InvalidArgument(f"--out {path}: exists; keygen never replaces a file (a key may "
                              "still be needed to open what it sealed): remove it or name "
                              "another") from None
    except OSError as e:
        raise OSError(e.errno, f"cannot create --out {path}: {e.strerror}") from None
    try:
        os.fchmod(fd, 0o600)   # (0600 whatever the umask leaves)
        _write_all(fd, text, f"--out {path}")
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    os.close(fd)


def _write_all(fd: int, data, where: str) -> None:
    """All of ``data`` written to ``fd``; an OSError names ``where`` (a broken pipe stays one)."""
    from ..transfer.files import write_all

    try:
        write_all(fd, memoryview(data), None)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OSError(e.errno, f"cannot write {where}: {e.strerror}") from None
