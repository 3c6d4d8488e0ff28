"""Key material for the command line, compatible with ``openssl enc``.

Three ways to a key:

* ``--key-file PATH`` (:func:`read_key_file`): the key as hex text, or as raw bytes
  (``--raw-key``; without it only a file that is not hex text, of exactly the key's size).
* ``--pass SOURCE`` (:func:`read_passphrase`) and :func:`derive`: a passphrase turned into the
  key and IV the way ``openssl enc`` does it, either PBKDF2-HMAC (``-pbkdf2``) or the legacy
  ``EVP_BytesToKey`` with one iteration (files made by ``openssl enc`` without ``-pbkdf2``).
* :func:`make_header` / :func:`parse_header`: the 16-byte ``Salted__`` + salt header that
  ``openssl enc`` writes in front of passphrase-encrypted data.

Errors are :class:`~ciphergrid.errors.InvalidArgument` with a one-line message that names the
flag and path involved; no message ever includes key or passphrase bytes (nor a ``--pass``
argument that could be a mistyped passphrase).

Wiping secrets.  Python cannot promise that a secret leaves no copy in memory: ``bytes`` are
immutable, the interpreter and libraries copy freely, and the key and passphrase must be
returned as ``bytes`` to the callers.  What this module does: intermediate buffers it owns
(the file it read a key from, the concatenated digests of ``EVP_BytesToKey``, the PBKDF2
output) are ``bytearray`` objects overwritten with zeros by :func:`wipe` before they are
dropped; PBKDF2 writes straight into such a buffer (``derive_into``) where the installed
``cryptography`` has it.  The hash outputs of ``EVP_BytesToKey``, the strings ``getpass``
returns and the lines read from ``file:``/``fd:``/``stdin`` are ``bytes``/``str`` and are left
to the garbage collector.  Callers holding keys in a ``bytearray`` can use :func:`wipe` too.

Compatibility notes (checked against OpenSSL 3.0):

* ``-pass file:``, ``fd:`` and ``stdin`` read one line with ``BIO_gets`` into a 1024-byte
  buffer: at most 1023 bytes, newline included, are read, and a longer line is silently cut
  to its first 1023 bytes.  This module does the same (:data:`PASS_LINE_MAX`), so that long
  passphrase files give the same key in both programs.
* OpenSSL removes only the ``"\\n"``: a ``pw\\r\\n`` line gives the passphrase ``"pw\\r"``, and
  so does this module (the same file gives the same key in both programs).
* OpenSSL accepts an empty passphrase; here it is an error.
"""

from __future__ import annotations

import os
import sys
import warnings

TYPE_CHECKING = False   # (the command line imports no typing: docs/benchmarks.md 0c, 'Start-up')

if TYPE_CHECKING:  # (cryptography is imported where a passphrase is derived: not for key files)
    from cryptography.hazmat.primitives import hashes

from .errors import InvalidArgument

__all__ = [
    "SALT_MAGIC", "SALT_LEN", "HEADER_LEN", "DEFAULT_ITER", "MAX_ITER", "DEFAULT_MD", "DIGESTS",
    "PASS_LINE_MAX",
    "digest", "read_key_file", "read_passphrase", "derive", "make_header", "parse_header",
    "new_salt", "wipe",
]

SALT_MAGIC = b"Salted__"  # openssl enc header: magic (8 bytes) + salt (8 bytes)
SALT_LEN = 8
HEADER_LEN = len(SALT_MAGIC) + SALT_LEN
DEFAULT_ITER = 10000  # openssl enc -pbkdf2 default
MAX_ITER = 2**31 - 1  # PBKDF2's iteration count is a C int in OpenSSL (and in pyca's call to it)
DEFAULT_MD = "sha256"  # openssl enc default digest since 1.1.0, for both derivations

PASS_LINE_MAX = 1023  # openssl: BIO_gets(buf, APP_PASS_LEN = 1024) -> at most 1023 bytes a line

def _hash(cls: str, *args):
    """A callable that returns cryptography's ``hashes.<cls>(*args)`` (imported when called)."""
    def make():
        from cryptography.hazmat.primitives import hashes

        return getattr(hashes, cls)(*args)
    return make


# The -md names: canonical (openssl's spelling, lower case) -> a callable that returns the
# cryptography HashAlgorithm.
DIGESTS = {
    "md5": _hash("MD5"),
    "sha1": _hash("SHA1"),
    "sha224": _hash("SHA224"),
    "sha256": _hash("SHA256"),
    "sha384": _hash("SHA384"),
    "sha512": _hash("SHA512"),
    "sha512-224": _hash("SHA512_224"),
    "sha512-256": _hash("SHA512_256"),
    "sha3-224": _hash("SHA3_224"),
    "sha3-256": _hash("SHA3_256"),
    "sha3-384": _hash("SHA3_384"),
    "sha3-512": _hash("SHA3_512"),
    "blake2b512": _hash("BLAKE2b", 64),
    "blake2s256": _hash("BLAKE2s", 32),
    "sm3": _hash("SM3"),
}

# Other spellings OpenSSL 3 accepts for the same digests (looked up after lower-casing).
_ALIASES = {
    "sha-1": "sha1",
    "ssl3-sha1": "sha1",
    "ssl3-md5": "md5",
    "sha2-224": "sha224", "sha-224": "sha224",
    "sha2-256": "sha256", "sha-256": "sha256",
    "sha2-384": "sha384", "sha-384": "sha384",
    "sha2-512": "sha512", "sha-512": "sha512",
    "sha2-512/224": "sha512-224", "sha-512/224": "sha512-224", "sha512/224": "sha512-224",
    "sha2-512/256": "sha512-256", "sha-512/256": "sha512-256", "sha512/256": "sha512-256",
}


def digest(name: str) -> hashes.HashAlgorithm:
    """The hash algorithm for an ``-md``/``--md`` name (case-insensitive; OpenSSL's spellings)."""
    key = name.strip().lower() if isinstance(name, str) else ""
    key = _ALIASES.get(key, key)
    make = DIGESTS.get(key)
    shown = name if isinstance(name, str) and len(name) <= 40 else "(the name given)"
    if make is None:
        raise InvalidArgument(f"--md {shown}: unknown digest; use one of {', '.join(DIGESTS)}")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes

    algo = make()
    try:
        hashes.Hash(algo)  # an OpenSSL built without it (SM3, FIPS mode) fails here, not later
    except UnsupportedAlgorithm:
        raise InvalidArgument(f"--md {shown}: not supported by the OpenSSL that cryptography "
                              "uses here") from None
    return algo


def wipe(buf) -> None:
    """Overwrite ``buf`` (a bytearray, or any writable buffer) with zeros, in place."""
    with memoryview(buf) as mv:
        with mv.cast("B") as b:
            b[:] = bytes(len(b))


# ------------------------------------------------------------------------------------ --key-file
#: the whitespace around a key file's hex text (a bytes pattern's ``\s``), and each hex digit's value
_SPACE = frozenset(b" \t\n\r\x0b\x0c")
_NIBBLE = {c: int(chr(c), 16) for c in b"0123456789abcdefABCDEF"}


def _hex_run(buf, n: int) -> tuple[int, int] | None:
    """Where the hex digits of ``buf[:n]`` lie, whitespace around them ignored: (start, end), or
    None where something else is there too (read in place: no copy of the key's text)."""
    a, b = 0, n
    while a < b and buf[a] in _SPACE:
        a += 1
    while b > a and buf[b - 1] in _SPACE:
        b -= 1
    for i in range(a, b):
        if buf[i] not in _NIBBLE:
            return None
    return a, b


def _unhex(buf, a: int, b: int) -> bytes:
    """The bytes of the hex digits ``buf[a:b]`` (an even count of them)."""
    out = bytearray((b - a) // 2)
    try:
        for i in range(len(out)):
            out[i] = _NIBBLE[buf[a + 2 * i]] << 4 | _NIBBLE[buf[a + 2 * i + 1]]
        return bytes(out)
    finally:
        wipe(out)


class _Takes:
    """"NAME takes a 16-byte (128-bit) key", as a message says it (registry.key_words)."""

    def __init__(self, what: str | None, lens: tuple):
        self.what, self.lens = what, lens

    def __str__(self) -> str:
        from .registry import key_words

        return f"{self.what or 'the cipher'} takes {key_words(self.lens)}"


def read_key_file(path: str, key_len, what: str | None = None, *, raw: bool = False) -> bytes:
    """The key in ``--key-file PATH``.

    A file whose content, whitespace around it ignored (a trailing newline), is all hex digits
    is hex text, whatever its size.  Raw bytes are taken with ``raw=True`` (``--raw-key``): the
    file's bytes, its size exactly the key's.  Without it a file that is not hex text is taken
    as raw bytes only where nothing else can be meant: a size that is the key's.  ``key_len``
    may be a tuple of the lengths a cipher takes (CAST-128: 5..16).  ``what`` (the cipher's
    name) is used in messages; they never show the file's bytes."""
    lens = (key_len,) if isinstance(key_len, int) else tuple(sorted(key_len))
    key_len = lens[-1]
    who = _Takes(what, lens)   # (said only in an error: the registry is not imported otherwise)
    digits = (f"{2 * lens[0]}" if len(lens) == 1 else f"{2 * lens[0]} to {2 * key_len}") + " hex digits"
    where = f"--key-file {path}"
    limit = 4 * key_len + 4096  # anything longer is not a key file; read no more than this
    buf = bytearray(limit + 1)
    try:
        n = 0
        with open(path, "rb") as f:
            while n < len(buf):
                with memoryview(buf) as mv:
                    got = f.readinto(mv[n:])
                if not got:
                    break
                n += got
    except OSError as e:
        wipe(buf)
        raise InvalidArgument(f"{where}: cannot read: {e.strerror or e}") from None
    m = None
    try:
        if n > limit:
            raise InvalidArgument(f"{where}: {who}; the file holds more than {limit} bytes")
        if raw:
            if n not in lens:
                raise InvalidArgument(f"{where}: {who}; the file holds {n} raw bytes (--raw-key)")
            return bytes(memoryview(buf)[:n])
        m = _hex_run(buf, n)
        if m is not None and m[1] > m[0]:
            count = m[1] - m[0]
            if count % 2 == 0 and count // 2 in lens:
                return _unhex(buf, *m)
            hint = "; give --raw-key if the file holds raw bytes" if n in lens else ""
            raise InvalidArgument(f"{where}: {who}: give {digits}, got {count} hex digits{hint}")
        if n in lens:
            return bytes(memoryview(buf)[:n])
        raise InvalidArgument(f"{where}: {who}: give {digits} (or the raw bytes with --raw-key); "
                              f"the file holds {n} bytes that are not hex text")
    finally:
        m = None
        wipe(buf)


# ------------------------------------------------------------------------------------ --pass
_NO_PASS = "no passphrase: give --pass pass:|env:|file:|fd:|stdin or a key with --key-file"


def _have_tty() -> bool:
    """Whether a controlling terminal can be opened for the prompt."""
    if os.name != "posix":
        return sys.stdin is not None and sys.stdin.isatty()
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _end_line(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
    return line


def _line_from_fd(fd: int) -> bytes:
    """The first line from descriptor ``fd``, read a byte at a time so that nothing after the
    line is taken from a pipe that something else may still read."""
    out = bytearray()
    try:
        while len(out) < PASS_LINE_MAX:
            b = os.read(fd, 1)
            if not b:
                break
            out += b
            if b == b"\n":
                break
        return bytes(out)
    finally:
        wipe(out)


def _prompt(prompt: str, confirm: bool) -> bytes:
    import getpass   # (here: a key file's command imports no terminal handling)

    if not _have_tty():
        raise InvalidArgument(_NO_PASS)
    with warnings.catch_warnings():
        # getpass falls back to reading stdin (with a warning) when it cannot open the
        # terminal; stdin may be the data, so make that fallback an error instead.
        warnings.simplefilter("error", getpass.GetPassWarning)
        try:
            first = getpass.getpass(prompt)
            if first and confirm:
                again = getpass.getpass("Verifying - " + prompt)
                if again != first:
                    raise InvalidArgument("verify failure: the two passphrases typed differ")
        except getpass.GetPassWarning:
            raise InvalidArgument(_NO_PASS) from None
        except EOFError:
            raise InvalidArgument("no passphrase: the prompt got end of file") from None
    if not first:
        raise InvalidArgument("empty passphrase: type one, or give --pass")
    return first.encode("utf-8", "surrogateescape")


def read_passphrase(source: str | None, *, confirm: bool, stdin_is_data: bool,
                    prompt: str = "enter passphrase: ") -> bytes:
    """The passphrase named by ``--pass SOURCE``, as OpenSSL's ``-pass``:

    ``pass:TEXT`` the text; ``env:VAR`` the variable's value; ``file:PATH`` the file's first
    line; ``fd:N`` the first line read from descriptor N (left open); ``stdin`` the first line
    of standard input (refused when ``stdin_is_data``: the data comes from there too).  A line
    loses its ``"\\n"`` (and a ``"\\r"`` before it) and nothing else; it is cut, as in OpenSSL,
    to :data:`PASS_LINE_MAX` bytes.  ``None``: asked on the terminal without echo, twice when
    ``confirm``.  Arguments and variables are returned as the bytes the OS holds; a typed
    passphrase as UTF-8.
    """
    if source is None:
        return _prompt(prompt, confirm)
    kind, sep, arg = source.partition(":")
    if source == "stdin":
        if stdin_is_data:
            raise InvalidArgument("--pass stdin: the data comes from standard input too: give "
                                  "the data with --in, or the passphrase with env:, file: or fd:")
        stream = sys.stdin
        if stream is None:
            raise InvalidArgument("--pass stdin: there is no standard input")
        try:
            raw = getattr(stream, "buffer", None)
            if raw is not None:
                line = raw.readline(PASS_LINE_MAX)
            else:
                line = stream.readline(PASS_LINE_MAX).encode("utf-8", "surrogateescape")
        except (OSError, ValueError) as e:
            raise InvalidArgument(f"--pass stdin: cannot read: {getattr(e, 'strerror', None) or e}") \
                from None
        if not line:
            raise InvalidArgument("--pass stdin: standard input is empty")
        phrase, where = _end_line(line), "--pass stdin"
    elif not sep:
        # never echo it: it may be a passphrase typed without its "pass:"
        raise InvalidArgument("--pass: unknown source: give pass:TEXT, env:VAR, file:PATH, fd:N "
                              "or stdin")
    elif kind == "pass":
        phrase, where = os.fsencode(arg), "--pass pass:"
    elif kind == "env":
        value = os.environ.get(arg) if arg else None
        if value is None:
            raise InvalidArgument(f"--pass env:{arg}: the environment variable {arg or '(none named)'} "
                                  "is not set")
        phrase, where = os.fsencode(value), f"--pass env:{arg}"
    elif kind == "file":
        where = f"--pass file:{arg}"
        try:
            with open(arg, "rb") as f:
                line = f.readline(PASS_LINE_MAX)
        except OSError as e:
            raise InvalidArgument(f"{where}: cannot read: {e.strerror or e}") from None
        if not line:
            raise InvalidArgument(f"{where}: the file is empty")
        phrase = _end_line(line)
    elif kind == "fd":
        where = f"--pass fd:{arg}"
        if not arg.isdigit() or not arg.isascii():
            raise InvalidArgument(f"{where}: give a file descriptor number")
        try:
            line = _line_from_fd(int(arg))
        except OSError as e:
            raise InvalidArgument(f"{where}: cannot read: {e.strerror or e}") from None
        if not line:
            raise InvalidArgument(f"{where}: nothing to read (end of file)")
        phrase = _end_line(line)
    else:
        raise InvalidArgument("--pass: unknown source: give pass:TEXT, env:VAR, file:PATH, fd:N "
                              "or stdin")
    if not phrase:
        raise InvalidArgument(f"{where}: the passphrase is empty")
    return phrase


# ------------------------------------------------------------------------------------ derivation
def derive(passphrase: bytes, salt: bytes | None, key_len: int, iv_len: int, *, pbkdf2: bool,
           iterations: int = DEFAULT_ITER, md: str = DEFAULT_MD) -> tuple[bytes, bytes | None]:
    """``(key, iv)`` as ``openssl enc`` derives them from a passphrase and the header's salt.

    ``pbkdf2=True`` (``-pbkdf2 [-iter N]``): PBKDF2-HMAC-``md`` of ``key_len + iv_len`` bytes,
    split into key and IV.  ``pbkdf2=False`` (no ``-pbkdf2``): ``EVP_BytesToKey`` with one
    iteration, ``D_1 = H(pass || salt)``, ``D_i = H(D_{i-1} || pass || salt)``; there ``salt``
    may be ``None`` (``openssl enc -nosalt``).  ``iv`` is ``None`` when ``iv_len`` is 0.
    """
    algo = digest(md)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITER:
        raise InvalidArgument(f"--iter must be a whole number from 1 to {MAX_ITER} "
                              f"(got {iterations!r})")
    if key_len < 0 or iv_len < 0 or key_len + iv_len == 0:
        raise InvalidArgument(f"cannot derive a {key_len}-byte key and a {iv_len}-byte IV")
    if salt is None:
        if pbkdf2:
            raise InvalidArgument("--pbkdf2 needs a salt (openssl enc -nosalt is legacy only)")
    elif len(salt) != SALT_LEN:
        raise InvalidArgument(f"the salt must be {SALT_LEN} bytes (got {len(salt)})")
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    need = key_len + iv_len
    out = bytearray(need)
    try:
        if pbkdf2:
            kdf = PBKDF2HMAC(algorithm=algo, length=need, salt=bytes(salt), iterations=iterations)
            if hasattr(kdf, "derive_into"):
                kdf.derive_into(passphrase, out)
            else:  # cryptography < 47: the bytes it returns cannot be wiped
                out[:] = kdf.derive(passphrase)
        else:
            prev, got = b"", 0
            while got < need:
                h = hashes.Hash(algo)
                h.update(prev)
                h.update(passphrase)
                if salt:
                    h.update(salt)
                prev = h.finalize()
                take = min(len(prev), need - got)
                out[got:got + take] = prev[:take]
                got += take
            prev = None
        with memoryview(out) as mv:
            key = bytes(mv[:key_len])
            iv = bytes(mv[key_len:]) if iv_len else None
        return key, iv
    finally:
        wipe(out)


# ------------------------------------------------------------------------------------ header
def new_salt() -> bytes:
    """A fresh random salt for a ``Salted__`` header."""
    return os.urandom(SALT_LEN)


def make_header(salt: bytes) -> bytes:
    """The 16-byte header ``openssl enc`` writes first: ``Salted__`` + the 8-byte salt."""
    if len(salt) != SALT_LEN:
        raise InvalidArgument(f"the salt must be {SALT_LEN} bytes (got {len(salt)})")
    return SALT_MAGIC + bytes(salt)


def parse_header(head: bytes) -> bytes:
    """The salt from the first 16 bytes of passphrase-encrypted data (longer input is fine:
    only the first 16 bytes are looked at)."""
    if len(head) < HEADER_LEN or bytes(head[:len(SALT_MAGIC)]) != SALT_MAGIC:
        raise InvalidArgument("the input has no 'Salted__' header: not made by openssl enc "
                              "-pbkdf2 / ciphergrid --pbkdf2 (or it is base64: add -a)")
    return bytes(head[len(SALT_MAGIC):HEADER_LEN])
