"""Where a key comes from: a block cipher's --key-file, --key, or a passphrase (openssl enc's
derivations); a sealed file's --key-file, or --pass (its Argon2id wrapper)."""

from __future__ import annotations

import sys

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
        return _Keying(_given_key(args, spec.key_lens, spec.name, phrases=True), iv)
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


def _given_key(args, lens, name: str, phrases: bool) -> bytes:
    """The key of --key-file or --key (a block cipher's or an AEAD's; ``phrases``: a passphrase
    is the other way to give one, named in the messages)."""
    if args.key_file is not None:
        from .. import keys

        return keys.read_key_file(args.key_file, lens, name, raw=args.raw_key)
    if args.key is None:
        raise InvalidArgument("no key: give " + ("--key-file PATH, --key HEX, or --pbkdf2 --pass "
                                                 "SOURCE" if phrases else "--key-file PATH or --key HEX"))
    _warn("--key puts the key on the command line, where other users can read it (ps, /proc); "
          "prefer --key-file" + (" or --pbkdf2 --pass" if phrases else ""))
    return _hex(args.key, "--key")


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


# ------------------------------------------------------------------------ sealed files
def _key_file(args, sch) -> bytes:
    """The sealed file's input key from --key-file; a key of the other scheme's size (a key of
    ``keygen --aes256`` without ``--aes256``, or the reverse) is said as such."""
    from .. import keys
    from ..formats import cobblestone as cb

    raw = {"raw": True} if getattr(args, "raw_key", False) else {}
    try:
        return keys.read_key_file(args.key_file, sch.key_len, sch.name, **raw)
    except InvalidArgument as e:
        other = cb.scheme(sch.key_len != 32)
        try:
            keys.read_key_file(args.key_file, other.key_len, other.name, **raw)
        except InvalidArgument:
            raise e from None
        hint = "give --aes256" if other.key_len == 32 else "leave out --aes256"
        raise InvalidArgument(f"{e}; that is a {other.name} key: {hint}") from None


def _passphrase(args, src, confirm: bool) -> bytes:
    from .. import keys

    source = args.passphrase or None
    if source is not None and source.startswith("pass:"):
        _warn("--pass pass:... puts the passphrase on the command line, where other users can "
              "read it; prefer env:, file:, fd: or the prompt")
    return keys.read_passphrase(source, confirm=confirm, stdin_is_data=src.is_stdin)


def _derive(args, phrase: bytes, wrapper) -> bytes:
    """The C2SP input key from the passphrase (-v: the costs and the time they took)."""
    import time

    from ..formats import passphrase as pp

    t0 = time.perf_counter()
    key = pp.input_key(phrase, wrapper)
    if args.verbose:
        p = wrapper.params
        print(f"ciphergrid: Argon2id {p.memory_kib} KiB, {_n(p.iterations, 'pass', 'passes')}, "
              f"{_n(p.lanes, 'lane', 'lanes')}: {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return key


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _seal_key(args, src):
    """(scheme, input key, passphrase wrapper) for ``seal``: from --key-file, or from --pass and
    the Argon2id costs asked for (the wrapper: b"" with a key file)."""
    from ..formats import cobblestone as cb

    sch = cb.scheme(args.aes256)
    wrapper = b""
    if args.passphrase is not None:
        from ..formats import passphrase as pp

        d = pp.DEFAULT
        memory = args.argon2_memory
        if memory is not None and memory % 1024:
            raise InvalidArgument(f"--argon2-memory {memory} bytes: give whole KiB (e.g. 64Mi)")
        t, p = args.argon2_iterations, args.argon2_lanes
        params = pp.Argon2Params(d.memory_kib if memory is None else memory // 1024,
                                 d.iterations if t is None else t,
                                 d.lanes if p is None else p).check("--argon2-*")
        w = pp.make(params, aes256=args.aes256)
        key = _derive(args, _passphrase(args, src, confirm=True), w)
        wrapper = w.raw
    else:
        key = _key_file(args, sch)
    return sch, key, wrapper


def _open_key(args, src, head: bytes, stream: bool):
    """(input key, scheme, the C2SP header) for ``open``: from --key-file, or from --pass and the
    passphrase wrapper at the start of the input (``head``: its first bytes; a stream's header
    read on past the wrapper).  A wrapped file with a key file, or a plain one with a
    passphrase, is said as such before anything else."""
    from ..formats import cobblestone as cb
    from ..formats import is_wrapped

    wrapped = is_wrapped(head)
    if args.passphrase is None:
        if wrapped:
            raise InvalidArgument("the input is sealed with a passphrase (its CG-PASS header): "
                                  "open it with --pass")
        sch = cb.scheme(args.aes256)
        return _key_file(args, sch), sch, head
    if not wrapped:
        raise InvalidArgument("the input is not sealed with a passphrase (no CG-PASS header): "
                              "open it with --key-file")
    from ..formats import passphrase as pp

    if stream and len(head) < pp.WRAPPER:
        raise pp.Truncated("the sealed message is shorter than its passphrase header: nothing "
                           "is released")
    w = pp.parse(head)
    if args.aes256 and not w.aes256:
        raise InvalidArgument("--aes256: the input's passphrase header says Cobblestone-128")
    sch = cb.scheme(w.aes256)
    key = _derive(args, _passphrase(args, src, confirm=False), w)
    if stream:   # the C2SP header: what was read past the wrapper, and the rest of it
        rest = bytearray(cb.HEADER - (len(head) - pp.WRAPPER))
        got = src.readinto(rest)
        head = head[pp.WRAPPER:] + bytes(rest[:got])
    return key, sch, head
