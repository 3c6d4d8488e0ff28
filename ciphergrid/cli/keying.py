"""Where a block cipher's key comes from: --key-file, --key, or a passphrase (openssl enc's
derivations)."""

from __future__ import annotations

from ..errors import InvalidArgument
from .common import _hex, _warn


# ------------------------------------------------------------------------------------ keys
class _Keying:
    """Where the key comes from: ``key``/``iv`` given, or a passphrase to derive them from."""

    def __init__(self, key=None, iv=None, phrase=None, md=None):
        self.key, self.iv, self.phrase, self.md = key, iv, phrase, md


def _keying(args, spec, encrypt: bool, src) -> _Keying:
    """From --key-file / --key / --pbkdf2 --pass (exactly one way)."""
    given = [f for f, v in (("--key", args.key), ("--key-file", args.key_file),
                            ("--pass", args.passphrase)) if v is not None]
    if len(given) > 1:
        raise InvalidArgument(f"give one of --key, --key-file, --pass (got {' and '.join(given)})")
    if args.raw_key and args.key_file is None:
        raise InvalidArgument("--raw-key says how --key-file holds the key: give --key-file")
    if args.iter is not None:
        args.pbkdf2 = True  # as openssl: -iter forces PBKDF2
    if args.passphrase is None and not args.pbkdf2:
        if args.md is not None:
            raise InvalidArgument("--md applies to passphrases (--pbkdf2 --pass)")
        iv = _hex(args.iv, "--iv") if args.iv is not None else None
        if args.key_file is not None:
            from .. import keys

            return _Keying(keys.read_key_file(args.key_file, spec.key_lens, spec.name,
                                              raw=args.raw_key), iv)
        if args.key is None:
            raise InvalidArgument("no key: give --key-file PATH, --key HEX, or --pbkdf2 --pass SOURCE")
        _warn("--key puts the key on the command line, where other users can read it (ps, "
              "/proc); prefer --key-file or --pbkdf2 --pass")
        return _Keying(_hex(args.key, "--key"), iv)
    if args.key is not None or args.key_file is not None:
        raise InvalidArgument("--pbkdf2/--pass derive the key: give no --key or --key-file")
    if args.iv is not None:
        raise InvalidArgument("--pbkdf2/--pass derive the IV too: give no --iv")
    if spec.mode.key_count > 1:
        raise InvalidArgument(f"{spec.name}: passphrases (openssl enc) are not defined for XTS; "
                              "give --key-file")
    if encrypt and not args.pbkdf2:
        raise InvalidArgument("encryption with a passphrase needs --pbkdf2 (the legacy derivation "
                              "is kept only to decrypt old openssl enc files)")
    if args.passphrase is not None and args.passphrase.startswith("pass:"):
        _warn("--pass pass:... puts the passphrase on the command line, where other users can "
              "read it; prefer env:, file:, fd: or the prompt")
    from .. import keys

    md = args.md or keys.DEFAULT_MD
    keys.digest(md)  # an unknown digest fails before the prompt
    phrase = keys.read_passphrase(args.passphrase, confirm=encrypt, stdin_is_data=src.is_stdin)
    return _Keying(phrase=phrase, md=md)


def _salted(args, spec, kg: _Keying, encrypt: bool, read) -> bytes:
    """A passphrase's key and IV set in ``kg`` from openssl enc's ``Salted__`` header: a new
    one when encrypting (returned: it is written before the data), else the one read from the
    data's start (``read``).  Without a passphrase: nothing to do (b"")."""
    if kg.phrase is None:
        return b""
    from .. import keys
    from ..fileio import read_exact

    header = b""
    if encrypt:
        salt = keys.new_salt()
        header = keys.make_header(salt)
    else:
        salt = keys.parse_header(read_exact(read, len(keys.SALT_MAGIC) + keys.SALT_LEN))
    if not args.pbkdf2:
        _warn("decrypting with the legacy key derivation (EVP_BytesToKey, one iteration): "
              "re-encrypt with --pbkdf2")
    kg.key, kg.iv = keys.derive(kg.phrase, salt, spec.key_len, spec.iv_len, pbkdf2=args.pbkdf2,
                                iterations=args.iter or keys.DEFAULT_ITER, md=kg.md)
    return header
