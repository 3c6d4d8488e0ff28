"""ciphergrid command line: encrypt | decrypt | list | devices | selftest | bench | report.

Output bytes match ``openssl enc -NAME -nopad -K HEX -iv HEX`` (``--pad pkcs7``: OpenSSL's default
padding; ``--pbkdf2 --pass``: ``openssl enc -pbkdf2 -pass``, its ``Salted__`` header included).
Errors print one line, ``ciphergrid: error: ...``, before any output where the sizes decide them,
and exit with the codes of :data:`EXIT_CODES`.  A regular output file is replaced atomically (see
``fileio``); stdout, FIFOs and devices are written through, every write checked.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys

from . import __version__, interrupts
from .errors import (DeviceError, DeviceNotFound, Error, InvalidArgument, InvalidPadding, InvalidTag,
                     WeakCipherWarning)

EXIT_OK = 0
EXIT_USAGE = 2     # bad arguments, bad key / IV, the input does not suit the cipher
EXIT_AUTH = 3      # authentication failed: bad padding on decryption (bad tags later)
EXIT_IO = 4        # reading the input or writing the output failed (disk full, permissions...)
EXIT_DEVICE = 5    # a device or its runtime failed (compile error, out of memory, driver)
EXIT_SIGNAL = 128  # + the signal number: 130 SIGINT, 129 SIGHUP, 143 SIGTERM; 141: the reader of
#                    the output pipe went away (quietly, like coreutils)
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_USAGE: "usage or input error (arguments, key, IV, the input's length)",
    EXIT_AUTH: "authentication failure (bad padding; bad tags for AEADs)",
    EXIT_IO: "I/O error (cannot read the input, cannot write the output, disk full)",
    EXIT_DEVICE: "device or service error (kernel build, out of device memory, driver; the "
                 "service went away)",
    EXIT_SIGNAL: "128 + N: stopped by signal N (SIGINT 130, SIGHUP 129, SIGTERM 143, SIGPIPE 141)",
}

#: bytes read per step when the data goes through a streaming context (not the device pipeline)
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
    v = value.strip()
    try:
        return bytes.fromhex(v)
    except ValueError:  # never echo the value: it may be a key
        why = "an odd number of digits" if len(v.replace(" ", "")) % 2 else "characters other than 0-9, a-f"
        raise InvalidArgument(f"{what} must be hexadecimal: the {len(v)} characters given contain {why}") \
            from None


# ------------------------------------------------------------------------------------ keys
class _Keying:
    """Where the key comes from: ``key``/``iv`` given, or a passphrase to derive them from."""

    def __init__(self, key=None, iv=None, phrase=None, md=None):
        self.key, self.iv, self.phrase, self.md = key, iv, phrase, md


def _file_bytes(path: str, flag: str) -> bytes:
    """A small file named by an option (associated data, a context), whole."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InvalidArgument(f"{flag} {path}: cannot read: {e.strerror}") from None


def _keying(args, spec, encrypt: bool, src) -> _Keying:
    """From --key-file / --key / --pbkdf2 --pass (exactly one way)."""
    given = [f for f, v in (("--key", args.key), ("--key-file", args.key_file),
                            ("--pass", args.passphrase)) if v is not None]
    if len(given) > 1:
        raise InvalidArgument(f"give one of --key, --key-file, --pass (got {' and '.join(given)})")
    if args.iter is not None:
        args.pbkdf2 = True  # as openssl: -iter forces PBKDF2
    if args.passphrase is None and not args.pbkdf2:
        if args.md is not None:
            raise InvalidArgument("--md applies to passphrases (--pbkdf2 --pass)")
        iv = _hex(args.iv, "--iv") if args.iv is not None else None
        if args.key_file is not None:
            from . import keys

            return _Keying(keys.read_key_file(args.key_file, spec.key_lens, spec.name), iv)
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
    from . import keys

    md = args.md or keys.DEFAULT_MD
    keys.digest(md)  # an unknown digest fails before the prompt
    phrase = keys.read_passphrase(args.passphrase, confirm=encrypt, stdin_is_data=src.is_stdin)
    return _Keying(phrase=phrase, md=md)


# ------------------------------------------------------------------------------------ seal / open
def cmd_seal(args, seal: bool) -> int:
    """``ciphergrid seal`` / ``open``: C2SP chunked encryption (Cobblestone-128, or -256 with
    --aes256); the chunks in AEAD batches of 64 MiB (formats/cobblestone.py).  ``open`` releases
    each chunk once its tag verified (a regular --out appears only when the whole message did);
    with --offset / --length it maps the file and reads only the chunks of that range."""
    from . import keys
    from .fileio import Input, Output
    from .formats import cobblestone as cb

    sch = cb.scheme(args.aes256)
    key = keys.read_key_file(args.key_file, sch.key_len, sch.name)
    context = args.context.encode() if args.context is not None else b""
    if args.context_file is not None:
        context = _file_bytes(args.context_file, "--context-file")
    ranged = not seal and (args.offset is not None or args.length is not None)
    src = Input(args.infile)
    try:
        if ranged:
            import mmap

            if not src.regular:
                raise InvalidArgument("--offset / --length need a regular --in file (a pipe has no "
                                      "random access)")
            sealed = mmap.mmap(src.fd, 0, prot=mmap.PROT_READ) if src.size else b""
            data = cb.decrypt_range(sealed, key, context, args.offset or 0, args.length,
                                    aes256=args.aes256, device=args.device)
            with Output(args.outfile, sync=not args.no_sync) as out:
                out.write(data)
            return EXIT_OK
        with Output(args.outfile, sync=not args.no_sync) as out:
            (_seal_stream if seal else _open_stream)(src, out, sch, key, context, args.device)
    finally:
        src.close()
    return EXIT_OK


def _seal_stream(src, out, sch, key: bytes, context: bytes, device: str) -> None:
    """The input sealed piece by piece into ``out``: READ_CHUNK bytes (whole chunks) at a time,
    the next piece read and the last one written while one is sealed (transfer.pieces.overlapped,
    over reused buffers: no fresh memory per piece); the piece that ends the input is the final
    one (its last chunk shorter, possibly empty)."""
    import numpy as np

    from .formats import cobblestone as cb
    from .transfer.pieces import overlapped

    s = cb.Sealer(sch, key, context, device=device)
    out.write(s.header())

    def pieces(take):
        while True:
            pt = take()
            n = src.readinto(pt)
            yield pt, n, n < READ_CHUNK
            if n < READ_CHUNK:
                return

    overlapped(pieces, lambda pt, n, final, ct: s.seal(pt[:n], final, out=ct), out.write,
               inputs=[np.empty(READ_CHUNK, dtype=np.uint8) for _ in range(2)],
               outputs=[np.empty(cb.sealed_length(READ_CHUNK), dtype=np.uint8) for _ in range(2)])


def _open_stream(src, out, sch, key: bytes, context: bytes, device: str) -> None:
    """The sealed input opened piece by piece into ``out``: each piece's chunks verified before
    any of its plaintext is written; a piece is final when nothing follows it (read ahead into
    another buffer).  Reading, opening and writing overlap (transfer.pieces.overlapped), over
    reused buffers."""
    import numpy as np

    from .formats import cobblestone as cb
    from .transfer.pieces import overlapped

    header = np.empty(cb.HEADER, dtype=np.uint8)
    got = src.readinto(header)
    if got < cb.HEADER:
        raise InvalidTag(f"{sch.name}: the sealed message is shorter than its header: nothing is "
                         "released")
    op = cb.Opener(sch, key, context, header.tobytes(), device=device)
    step = READ_CHUNK // cb.CHUNK * cb.SEALED_CHUNK
    first = [0]   # (the next piece's first chunk)

    def pieces(take):
        buf = take()
        n = src.readinto(buf)
        while True:
            ahead = take() if n == step else None
            nxt = src.readinto(ahead) if ahead is not None else 0
            yield buf, n, nxt == 0
            if nxt == 0:
                return
            buf, n = ahead, nxt

    def process(buf, n, final, pt):
        view = op.open(buf[:n], first[0], final, out=pt)
        first[0] += n // cb.SEALED_CHUNK
        return view

    overlapped(pieces, process, out.write,
               inputs=[np.empty(step, dtype=np.uint8) for _ in range(3)],
               outputs=[np.empty(READ_CHUNK, dtype=np.uint8) for _ in range(2)])


# ------------------------------------------------------------------------------------ encrypt / decrypt
def cmd_crypt(args, encrypt: bool) -> int:
    from .fileio import Input, Output

    if args.mpi:
        from . import mpi

        return {"ok": EXIT_OK, "usage": EXIT_USAGE}.get(mpi.run(args, encrypt, _keying), EXIT_DEVICE)

    # The input, and an output whose opening nothing outside sees (stdout; a file to be replaced:
    # an anonymous temporary file), are opened first, before the imports and the key: a large
    # output on a RAM disk is then allocated on another core while the command starts up
    # (Output.reserve).  Any failure before the run gives it up unwritten.
    src = Input(args.infile)
    out = None
    try:
        if Output.opens_quietly(args.outfile):
            out = Output(args.outfile, sync=not args.no_sync)
            if not args.base64:
                out.reserve(src.size)
        return _crypt(args, encrypt, src, out)
    except BaseException:
        if out is not None:
            out.discard()
        raise
    finally:
        src.close()


def _crypt(args, encrypt: bool, src, out) -> int:
    """cmd_crypt with its input open (and its output, where already opened)."""
    from . import aeads
    from .api import Cipher
    from .fileio import Output, read_exact
    from .registry import known, lookup

    if not known(args.cipher) and aeads.is_aead(args.cipher):  # (a block cipher: no AEAD import)
        if out is not None:
            out.discard()
        return cmd_aead(args, encrypt)
    spec = lookup(args.cipher)  # an unknown name (a misspelt AEAD too) says so first
    for flag, value in (("--nonce", args.nonce), ("--aad", args.aad), ("--aad-file", args.aad_file),
                        ("--tag-length", args.tag_length)):
        if value is not None:
            raise InvalidArgument(f"{flag} is for AEADs (aes-256-gcm, chacha20-poly1305, ...), "
                                  f"not {spec.name}")
    tuning = _pipeline_flags(args)
    cipher = None
    try:
        kg = _keying(args, spec, encrypt, src)
        padding = None if args.nopad else (args.pad or ("pkcs7" if kg.phrase is not None else None))
        if kg.phrase is not None and not spec.mode.paddable:
            padding = None  # openssl enc pads block modes only
        reader = src.read
        if args.base64 and not encrypt:
            from .b64 import Base64Reader

            reader = Base64Reader(src.read).read
        header = b""
        n = None if args.base64 else src.size  # the data's bytes, when known
        if kg.phrase is not None:  # the Salted__ header: written first, or read before the data
            from . import keys

            if encrypt:
                salt = keys.new_salt()
                header = keys.make_header(salt)
            else:
                salt = keys.parse_header(read_exact(reader, len(keys.SALT_MAGIC) + keys.SALT_LEN))
                n = None if args.base64 else src.size
            if not args.pbkdf2:
                _warn("decrypting with the legacy key derivation (EVP_BytesToKey, one iteration): "
                      "re-encrypt with --pbkdf2")
            kg.key, kg.iv = keys.derive(kg.phrase, salt, spec.key_len, spec.iv_len,
                                        pbkdf2=args.pbkdf2, iterations=args.iter or keys.DEFAULT_ITER,
                                        md=kg.md)
        def keyed(device):
            return Cipher(spec.name, kg.key, kg.iv, device=device, padding=padding,
                          sector_size=args.sector_size, start_sector=args.start_sector,
                          constant_time=args.constant_time, allow_weak=args.allow_weak)

        cipher = keyed(None)   # (no device looked at yet: a service may run it)
        req = cipher._request(encrypt)
        out_size = None
        if n is not None:  # everything the size decides, before any output
            req.admit(n)
            bs = spec.block_size
            if padding and not encrypt and (n == 0 or n % bs):
                raise InvalidPadding(f"{spec.name}: padded data is a positive multiple of {bs} "
                                     f"bytes, the input holds {n}")
            if not padding:
                req.check_length(n)
            out_size = req.out_len(n) + len(header)
        # a stream the service runs: it checks the device itself, and this process looks at
        # none (no CUDA import, no context); else the device is checked now
        client = _service_client(args) if _streams(args, req, n) else None
        if client is None:
            cipher.close()
            cipher = keyed(args.device)
        if out is None:
            out = Output(args.outfile, size=out_size, sync=not args.no_sync)
        try:
            with out:
                if client is not None:
                    with client:
                        if header:
                            out.write(header)
                        _run_served(args, encrypt, client, req, src, out, n, tuning)
                else:
                    _run(args, encrypt, cipher, req, src, reader, out, header, n, tuning)
        except BaseException as e:
            if (isinstance(e, OSError) and not e.filename and e.errno in _OUT_ERRNOS
                    and out.name not in str(e)):
                e.filename = out.name  # a full disk is the output's
            _note_written(e, out)
            raise
    finally:
        if cipher is not None:
            cipher.close()  # the keys it set up on a device are wiped
    return EXIT_OK


def _run(args, encrypt, cipher, req, src, reader, out, header: bytes, n, tuning) -> None:
    from .progress import Progress
    from .route import route

    write = out.write
    b64 = None
    if args.base64 and encrypt:
        from .b64 import Base64Writer

        b64 = Base64Writer(out.write)
        write = b64.write
    if header:
        write(header)
    streams = _streams(args, req, n)
    r = route(req, args.device, n if streams else min(n or READ_CHUNK, READ_CHUNK),
              path="stream" if streams else "array")
    if args.verbose:
        why = f" ({r.reason})" if r.reason else (" (chosen by auto)" if args.device == "auto" else "")
        print(f"ciphergrid: {req.spec.name} {'encrypt' if encrypt else 'decrypt'} on {r.device}{why}",
              file=sys.stderr)
    verb = "encrypted" if encrypt else "decrypted"
    with Progress(n, quiet=args.quiet, verb=verb, device=r.device) as bar:
        if streams:
            prefault = None
            if r.engine.kind == "device" and out.kind == "replace":
                from .transfer.files import prefault_output

                out.wait_reserved()
                prefault = prefault_output(out.fd, n, new=True)  # on a RAM disk: faulted in
            else:
                out.stop_reserving()  # (what the start-up left unreserved, the writes allocate)
            try:
                if prefault is not None:
                    prefault.wait()

                def advance(k: int) -> None:
                    out.count(k)
                    bar.advance(k)

                r.engine.stream(req, src.f, out.fd, progress=advance, chunk_bytes=tuning[0],
                                depth=tuning[1], nbytes=n)
            finally:
                if prefault is not None:
                    prefault.close()
            return
        out.stop_reserving()
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        while True:
            chunk = reader(READ_CHUNK)
            if not chunk:
                break
            write(ctx.update(chunk))
            bar.advance(len(chunk))
        write(ctx.finalize())
        if b64 is not None:
            b64.close()


def _streams(args, req, n) -> bool:
    """Whether the data runs as a stream (file to file, pipe to pipe: the engine's own path);
    else through a context.  An input of unknown size under a block limit goes through a
    context, which counts."""
    return req.mode.streams(req) and not args.base64 and (n is not None or not req.limit_refuses)


def _run_served(args, encrypt, client, req, src, out, n, tuning) -> None:
    """The stream through the service: it reads our input's descriptor and writes our output's
    (the output is still ours: named only when the service said the job is done)."""
    from .progress import Progress

    fresh = out.kind == "replace"   # (a new file: the service may fault its pages in ahead)
    if fresh:
        out.wait_reserved()
    else:
        out.stop_reserving()
    verb = "encrypted" if encrypt else "decrypted"
    with Progress(n, quiet=args.quiet, verb=verb, device="service") as bar:
        def advance(k: int) -> None:
            out.count(k)
            bar.advance(k)

        reply = client.stream(req, src.fd, out.fd, device=args.device, progress=advance, nbytes=n,
                              chunk_bytes=tuning[0], depth=tuning[1], fresh_output=fresh)
    if args.verbose:
        why = f" ({reply['reason']})" if reply.get("reason") else ""
        print(f"ciphergrid: {req.spec.name} {'encrypt' if encrypt else 'decrypt'} on "
              f"{reply.get('device')}{why}, by the service at {client.address} "
              f"({reply.get('seconds', 0):.3f} s there)", file=sys.stderr)


#: an AEAD's decrypted output larger than this is staged in an anonymous temporary file (not in
#: memory) until its tag verified
AEAD_STAGE_IN_FILE_BYTES = 64 << 20


def _aead_input(src, limit: int):
    """The whole input as a uint8 array: a regular file mapped, anything else read to its end
    (refused past ``limit`` bytes, before reading it all where the size is known)."""
    import mmap

    import numpy as np

    if src.size is not None and src.size > limit:
        raise InvalidArgument(f"the input holds {src.size} bytes, past the AEAD's limit of {limit} "
                              "for one message; split it into chunks of their own nonces")
    if src.regular and src.size:
        here = os.lseek(src.fd, 0, os.SEEK_CUR)
        m = mmap.mmap(src.fd, 0, prot=mmap.PROT_READ)
        return np.frombuffer(m, dtype=np.uint8)[here:here + src.size]
    parts, got = [], 0
    while True:
        b = src.read(READ_CHUNK)
        if not b:
            break
        got += len(b)
        if got > limit:
            raise InvalidArgument(f"the input is past the AEAD's limit of {limit} bytes for one "
                                  "message; split it into chunks of their own nonces")
        parts.append(b)
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def _staging(n: int):
    """A buffer of ``n`` bytes for output held back until its tag verified: memory, or for large
    outputs an anonymous temporary file (unlinked from the start: nothing survives a crash)."""
    import mmap
    import tempfile

    import numpy as np

    if n <= AEAD_STAGE_IN_FILE_BYTES:
        return np.empty(n, dtype=np.uint8), None
    f = tempfile.TemporaryFile()
    os.ftruncate(f.fileno(), n)
    m = mmap.mmap(f.fileno(), n)
    return np.frombuffer(m, dtype=np.uint8), (f, m)


def cmd_aead(args, encrypt: bool) -> int:
    """encrypt/decrypt with an AEAD: one message, ciphertext || tag; on decryption nothing is
    written before the tag verified (a failed tag: exit 3, one line, no output)."""
    from . import aeads
    from .aead import _tag_length, crypt
    from .fileio import Input, Output
    from .progress import Progress

    spec = aeads.spec(args.cipher)
    aead = spec.aead
    for flag, value in (("--pass", args.passphrase), ("--pbkdf2", args.pbkdf2 or None),
                        ("--iter", args.iter), ("--md", args.md), ("--pad", args.pad),
                        ("--nopad", args.nopad or None), ("--sector-size", args.sector_size),
                        ("--start-sector", args.start_sector), ("--base64", args.base64 or None)):
        if value is not None:
            raise InvalidArgument(f"{flag} does not apply to {spec.name} (an AEAD: give --key-file "
                                  "and --nonce)")
    if args.iv is not None and args.nonce is not None:
        raise InvalidArgument("give --nonce or --iv, not both")
    if args.iv is not None and not spec.name.endswith("-gcm"):
        raise InvalidArgument(f"{spec.name} takes --nonce, not --iv")
    nonce_hex = args.nonce if args.nonce is not None else args.iv
    if nonce_hex is None:
        raise InvalidArgument(f"{spec.name} needs --nonce HEX ({aead.default_nonce_length} bytes, "
                              "never reused under one key)")
    nonce = _hex(nonce_hex, "--nonce")
    if args.aad is not None and args.aad_file is not None:
        raise InvalidArgument("give --aad or --aad-file, not both")
    aad = b""
    if args.aad is not None:
        aad = _hex(args.aad, "--aad")
    elif args.aad_file is not None:
        aad = _file_bytes(args.aad_file, "--aad-file")
    tl = _tag_length(aead, args.tag_length)
    src = Input(args.infile)
    try:
        if args.key_file is not None and args.key is not None:
            raise InvalidArgument("give one of --key, --key-file")
        if args.key_file is not None:
            from . import keys

            key = keys.read_key_file(args.key_file, (spec.key_len,), spec.name)
        elif args.key is not None:
            _warn("--key puts the key on the command line, where other users can read it (ps, "
                  "/proc); prefer --key-file")
            key = _hex(args.key, "--key")
        else:
            raise InvalidArgument("no key: give --key-file PATH or --key HEX")
        aead.check(spec.name, len(key), len(nonce), tl)
        n = src.size
        if n is not None and not encrypt and n < tl:
            raise InvalidArgument(f"{spec.name}: the input ({n} bytes) is shorter than its tag "
                                  f"({tl} bytes)")
        data = _aead_input(src, aead.max_message + (0 if encrypt else tl))
        n = data.nbytes
        if not encrypt and n < tl:
            raise InvalidArgument(f"{spec.name}: the input ({n} bytes) is shorter than its tag "
                                  f"({tl} bytes)")
        out_n = n + tl if encrypt else n - tl
        client = _service_client(args)
        if client is not None:
            with client:
                return _aead_served(args, encrypt, client, spec, key, nonce, aad, tl, data, out_n)
        if args.verbose:
            from .route import route_aead

            r = route_aead(spec, args.device, out_n, nonce_len=len(nonce), tag_length=tl,
                           path="stream")
            print(f"ciphergrid: {spec.name} {'encrypt' if encrypt else 'decrypt'} on {r.device}"
                  + (" (chosen by auto)" if args.device == "auto" else ""), file=sys.stderr)
        with Progress(n, quiet=args.quiet, verb="encrypted" if encrypt else "decrypted",
                      device=args.device) as bar:
            buf, held = _staging(out_n)
            # the output is opened first (its errors come before the work; a FIFO's reader sees
            # its end even when the tag fails) but written only once the tag verified
            out = Output(args.outfile, size=out_n, sync=not args.no_sync)
            try:
                with out:
                    crypt(encrypt, data, spec.name, key, nonce, aad, tl, args.device,
                          args.constant_time, None, buf, path="stream")  # InvalidTag: nothing written
                    step = 64 << 20
                    for a in range(0, out_n, step):
                        out.write(memoryview(buf[a:a + step]))
            except BaseException as e:
                _note_written(e, out, InvalidTag)
                raise
            finally:
                if held is None:
                    if not encrypt:
                        buf[:] = 0  # the plaintext's staging copy in memory
                else:  # an unlinked file: its pages are dropped, never written back, once closed
                    held[0].close()  # (the mapping goes when its last view does)
            bar.advance(n)
    finally:
        src.close()
    return EXIT_OK


def _note_written(e: BaseException, out, *quiet) -> None:
    """For the one-line message: how much of a write-through output (stdout, a pipe) was already
    written when ``e`` ended the run (not for a broken pipe, nor for the types ``quiet``)."""
    if out.kind == "through" and not isinstance(e, (BrokenPipeError, *quiet)):
        e.ciphergrid_written = (out.written, out.name)


def _aead_served(args, encrypt, client, spec, key, nonce, aad, tl, data, out_n) -> int:
    """cmd_aead's message run by the service (the data and the result in sealed shared memory
    past a few KiB); the output written only once the service answered (decryption: the tag
    verified there first; a failed tag: InvalidTag, nothing written)."""
    from .fileio import Output
    from .progress import Progress

    with Progress(data.nbytes, quiet=args.quiet, verb="encrypted" if encrypt else "decrypted",
                  device="service") as bar:
        out = Output(args.outfile, size=out_n, sync=not args.no_sync)
        res = None
        try:
            with out:
                fn = client.encrypt if encrypt else client.decrypt
                res = fn(data, spec.name, key, nonce=nonce, aad=aad, tag_length=tl,
                         device=args.device, constant_time=args.constant_time)
                view = memoryview(res).cast("B")
                step = 64 << 20
                for a in range(0, out_n, step):
                    out.write(view[a:a + step])
        except BaseException as e:
            _note_written(e, out, InvalidTag)
            raise
        finally:
            if res is not None and not encrypt and not isinstance(res, bytes):
                res[:] = 0   # (the plaintext's copy in our memory)
        bar.advance(data.nbytes)
    if args.verbose:
        print(f"ciphergrid: {spec.name} {'encrypt' if encrypt else 'decrypt'} by the service at "
              f"{client.address}", file=sys.stderr)
    return EXIT_OK


def _pipeline_flags(args):
    """--chunk-size / --depth, validated; handed to the pipeline (None: the device's tuning)."""
    from .settings import check_chunk, check_depth, parse_bytes

    chunk = depth = None
    if getattr(args, "chunk_size", None) is not None:
        chunk = check_chunk(parse_bytes(args.chunk_size, "--chunk-size"))
    if getattr(args, "depth", None) is not None:
        depth = check_depth(args.depth)
    return chunk, depth


# ------------------------------------------------------------------------------------ other commands
def _engines_text(caps: dict) -> str:
    # parallel engines first; of the serial ones OpenSSL first (one core beats one work-item)
    order = sorted((e for e, how in caps.items() if how),
                   key=lambda e: (caps[e] == "serial", caps[e] == "serial" and e != "openssl"))
    return ", ".join(e + (" (serial)" if caps[e] == "serial" else "") for e in order) or "-"


def _key_bits(lens) -> str:
    """"128 bits", or "40-128 bits" for a name that takes many key sizes (CAST-128)."""
    lo, hi = 8 * min(lens), 8 * max(lens)
    return f"{hi} bits" if lo == hi else f"{lo}-{hi} bits"


def _sizes(lens) -> dict:
    """A tuple of sizes as {"any_of": [...]}, a range as {"from": first, "to": last}."""
    if isinstance(lens, range):
        return {"from": lens.start, "to": lens.stop - 1}
    return {"any_of": list(lens)}


def _bytes_text(sizes: dict, default: int) -> str:
    if "from" in sizes:
        return f"{default} B ({sizes['from']}-{sizes['to']})"
    return " or ".join(str(n) for n in sizes["any_of"]) + " B"


def cmd_list(args) -> int:
    """Every cipher name with its key and IV sizes and the engines that run it, per direction
    (``--json``: one object per name)."""
    from .registry import aliases, specs

    short = aliases()
    rows = []
    for s in specs():
        rows.append({"name": s.name, "aliases": short.get(s.name, []),
                     "algorithm": s.algorithm.name, "mode": s.mode.name,
                     "key_bytes": s.key_len, "key_bytes_accepted": list(s.key_lens),
                     "iv_bytes": s.iv_len, "block_bytes": s.block_size,
                     "engines": s.capabilities(),
                     "openssl_provider": s.algorithm.openssl_provider})
    from . import aeads

    arows = []
    for a in aeads.specs():
        d = a.aead
        arows.append({"name": a.name, "aead": d.family, "key_bytes": a.key_len,
                      "nonce_bytes": _sizes(d.nonce_lengths), "default_nonce_bytes": d.default_nonce_length,
                      "tag_bytes": _sizes(d.tag_lengths), "default_tag_bytes": d.default_tag_length,
                      "max_message_bytes": d.max_message, "parallel_within_message": d.parallel_message,
                      "engines": a.capabilities(),
                      "constant_time": [n for n, k in d.implementations.items() if k.constant_time]})
    if args.json:
        import json

        print(json.dumps(rows + arows, indent=1))
        return EXIT_OK
    head = ("name", "key", "iv", "block", "encrypt on", "decrypt on")
    table = [(r["name"], _key_bits(r["key_bytes_accepted"]), f"{r['iv_bytes']} B" if r["iv_bytes"] else "-",
              f"{r['block_bytes']} B", _engines_text(r["engines"]["encrypt"]),
              _engines_text(r["engines"]["decrypt"])) for r in rows]
    widths = [max(len(t[i]) for t in table + [head]) for i in range(len(head))]
    for t in [head] + table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    if arows:
        head = ("AEAD", "key", "nonce", "tag", "encrypt on", "decrypt on")
        table = [(r["name"], f"{8 * r['key_bytes']} bits", _bytes_text(r["nonce_bytes"], r["default_nonce_bytes"]),
                  _bytes_text(r["tag_bytes"], r["default_tag_bytes"]),
                  _engines_text(r["engines"]["encrypt"]), _engines_text(r["engines"]["decrypt"]))
                 for r in arows]
        widths = [max(len(t[i]) for t in table + [head]) for i in range(len(head))]
        print()
        for t in [head] + table:
            print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    if short:
        print("OpenSSL's short names (as openssl enc takes them): "
              + ", ".join(f"{a} = {n}" for n, al in sorted(short.items()) for a in al))
    print("device: our kernels on OpenCL / CUDA devices; openssl: OpenSSL on every core; "
          "serial: one block after the other" + ("; for an AEAD, one message on one work-item "
                                                 "(batches of them run in parallel)" if arows else ""))
    return EXIT_OK


def cmd_serve(args) -> int:
    """``ciphergrid serve``: run the service in the foreground until SIGTERM / SIGINT (the
    socket removed, the running jobs given STOP_GRACE_S to end); ``--status``: ask one."""
    import json

    from .service import connect
    from .settings import default_service_address

    address = args.socket or default_service_address()
    if args.status:
        with connect(address, timeout=10) as c:
            print(json.dumps(c.status(), indent=2, sort_keys=True))
        return EXIT_OK
    from .service.policy import Policy
    from .service.server import JOB_TIMEOUT_S, Server

    try:
        mode = int(args.socket_mode, 8)
    except ValueError:
        raise InvalidArgument(f"--socket-mode: {args.socket_mode!r} is not an octal mode") from None
    metrics = None
    if args.metrics:
        host, _, port = args.metrics.rpartition(":")
        if not port.isdigit():
            raise InvalidArgument(f"--metrics: {args.metrics!r} is not [ADDR:]PORT")
        metrics = (host or "127.0.0.1", int(port))
    import socket

    from .settings import activation_fds

    policy = Policy.load(args.policy, os.getuid())
    fds = activation_fds()   # (systemd's socket activation: its socket, not ours to make)
    inherited = socket.socket(fileno=fds[0]) if fds else None
    server = Server(address, job_timeout=args.job_timeout or JOB_TIMEOUT_S, policy=policy,
                    socket_mode=mode, socket_group=args.socket_group, inherited=inherited)
    address = server.address
    remote = None
    try:
        if metrics is not None:
            server.serve_metrics(metrics[1], metrics[0])
        if args.listen:
            remote = _serve_remote_options(args, server)
    except BaseException:
        server.close()
        raise
    print(f"ciphergrid: serving on {address} (pid {os.getpid()}; SIGTERM or Ctrl-C stops it)"
          + (f"; metrics on http://{metrics[0]}:{metrics[1]}/metrics" if metrics else "")
          + (f"; remote clients on {remote}" if remote else ""),
          file=sys.stderr, flush=True)
    previous = {s: signal.signal(s, lambda *_: server.stop()) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.serve_forever()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    print("ciphergrid: service stopped", file=sys.stderr)
    return EXIT_OK


def _serve_remote_options(args, server) -> str:
    """--listen and its TLS options: the remote listener started; its address."""
    host, _, port = args.listen.rpartition(":")
    if not port.isdigit() or not host:
        raise InvalidArgument(f"--listen: {args.listen!r} is not HOST:PORT")
    tls = None
    if args.tls_cert or args.tls_key or args.tls_client_ca:
        import ssl

        if not (args.tls_cert and args.tls_key):
            raise InvalidArgument("TLS needs --tls-cert and --tls-key")
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            tls.load_cert_chain(args.tls_cert, args.tls_key)
            if args.tls_client_ca:
                tls.load_verify_locations(args.tls_client_ca)
                tls.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as e:
            raise InvalidArgument(f"TLS: {getattr(e, 'strerror', None) or e}") from None
    tokens = None
    if args.token_file:
        try:
            with open(args.token_file) as f:
                tokens = [line.strip() for line in f if line.strip()]
        except OSError as e:
            raise InvalidArgument(f"--token-file: {e.strerror}: {args.token_file}") from None
    got = server.listen_remote(host.strip("[]"), int(port), tls=tls, tokens=tokens,
                               insecure_loopback=args.insecure_loopback)
    return f"{'tls' if tls else 'tcp'}://{host}:{got}"


def _service_client(args):
    """The service the command runs through: --service / CIPHERGRID_SERVICE ``auto`` (the
    per-user one when its socket answers), ``off``, or an address (it must answer); None: this
    process runs the command."""
    from .settings import service_setting

    where = (args.service or service_setting() or "auto").strip()
    if where.startswith(("tls://", "tcp://")):
        raise InvalidArgument("--service: a command's files go to a local service (a socket "
                              "path); a remote one takes buffers (ciphergrid.connect)")
    from .service import resolve

    return resolve(where)


def cmd_devices(args) -> int:
    from .devices import devices

    rows = [(d.spec, d.runtime, d.kind, d.name, str(d.compute_units), f"{d.memory / 2**30:.1f} GiB")
            for d in devices()]
    head = ("device", "runtime", "kind", "name", "units", "memory")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return EXIT_OK


def cmd_selftest(args) -> int:
    from .selftest import run

    return run(device=args.device, quiet=args.quiet)


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, the terminal's width from settings.terminal_columns (argparse
    makes a formatter for every add_argument, and its own imports shutil for the width)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kw):
        if width is None:
            from .settings import terminal_columns

            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width, **kw)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, ``ciphergrid: error: ...``, exit code 2; help at the terminal's
    width (_Formatter)."""

    def __init__(self, *a, **kw):
        kw.setdefault("formatter_class", _Formatter)
        super().__init__(*a, **kw)

    def error(self, message):
        self.exit(EXIT_USAGE, f"ciphergrid: error: {message} (see `{self.prog} --help`)\n")


_EPILOG = "exit codes: " + "; ".join(f"{k}{'+N' if k == EXIT_SIGNAL else ''} {v.split(' (')[0]}"
                                     for k, v in EXIT_CODES.items() if k != EXIT_SIGNAL) \
    + "; 128+N stopped by signal N"


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The parser; the benchmark's options (and its imports) only when ``argv`` runs ``bench``
    or ``report`` (None: always), so that encrypting does not pay for them at start-up."""
    ap = _Parser(prog="ciphergrid", description=__doc__.split("\n")[0], epilog=_EPILOG)
    ap.add_argument("--version", action="version", version=f"ciphergrid {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in ("encrypt", "decrypt"):
        p = sub.add_parser(name, help=f"{name} a file or stdin", epilog=_EPILOG)
        p.add_argument("--cipher", "-c", required=True, help="e.g. aes-128-ctr, aes-256-xts (see `ciphergrid list`)")
        k = p.add_argument_group("key (one of)")
        k.add_argument("--key-file", metavar="PATH",
                       help="the key as hex text, or raw bytes when the file's size is the key's")
        k.add_argument("--key", "-K", help="the key in hex (XTS: both keys); visible in ps: prefer --key-file")
        k.add_argument("--pass", dest="passphrase", metavar="SOURCE",
                       help="passphrase as openssl: pass:TEXT, env:VAR, file:PATH, fd:N, stdin "
                            "(default with --pbkdf2: asked on the terminal)")
        k.add_argument("--pbkdf2", action="store_true",
                       help="derive key and IV from a passphrase as `openssl enc -pbkdf2` "
                            "(Salted__ header, PKCS#7 padding for ECB/CBC)")
        k.add_argument("--iter", type=int, metavar="N", help="PBKDF2 iterations (default 10000; implies --pbkdf2)")
        k.add_argument("--md", metavar="DIGEST", help="passphrase digest (default sha256)")
        p.add_argument("--iv", help="IV / initial counter / XTS tweak in hex (GCM: the nonce)")
        p.add_argument("--nonce", help="AEADs: the nonce in hex (never reuse one under a key)")
        p.add_argument("--aad", metavar="HEX", help="AEADs: associated data in hex (authenticated, not encrypted)")
        p.add_argument("--aad-file", metavar="PATH", help="AEADs: associated data from a file")
        p.add_argument("--tag-length", type=int, metavar="BYTES",
                       help="AEADs: tag bytes (default 16; GCM 12-16, AEGIS 16 or 32)")
        p.add_argument("--in", dest="infile", metavar="PATH", help="input file or device (default stdin)")
        p.add_argument("--out", dest="outfile", metavar="PATH",
                       help="output (default stdout); a regular file is replaced atomically")
        p.add_argument("--device", "-d", default="auto",
                       help="auto, cpu, gpu, native, opencl[:P[:N]], cuda[:N]; several at once: all, "
                            "or a list such as cuda:0,native (the data split over them)")
        p.add_argument("--pad", choices=["pkcs7"], help="PKCS#7 padding (ECB/CBC), as openssl without -nopad")
        p.add_argument("--nopad", action="store_true", help="no padding (the default unless --pbkdf2)")
        p.add_argument("--no-sync", action="store_true",
                       help="name the output without waiting for it to reach the disk (as cat and "
                            "openssl enc); a crash can then leave it incomplete under its name")
        p.add_argument("--allow-weak", action="store_true",
                       help="encrypt what the cipher's rules refuse, with a warning: DES and TDEA "
                            "(withdrawn by NIST), more than 2^32 blocks of a 64-bit block cipher "
                            "under one key (2^20 for TDEA); decryption never needs it")
        p.add_argument("--base64", "-a", action="store_true",
                       help="base64 output on encryption, input on decryption (openssl -a)")
        p.add_argument("--sector-size", type=int, help="XTS data-unit size in bytes (tweak = sector number)")
        p.add_argument("--start-sector", type=int, help="XTS sector number of the first unit")
        p.add_argument("--constant-time", action="store_true",
                       help="bitsliced table-free kernel (no secret-dependent memory access)")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
        p.add_argument("--verbose", "-v", action="store_true", help="say which device runs the job")
        p.add_argument("--chunk-size", metavar="BYTES",
                       help="pipeline chunk size, e.g. 16Mi (default: tuned per device)")
        p.add_argument("--depth", type=int, metavar="N",
                       help="pipeline depth: chunks in flight (default: tuned per device)")
        p.add_argument("--mpi", action="store_true",
                       help="one job over every rank of an MPI run (mpiexec -n N ciphergrid ... "
                            "--mpi; files on a shared filesystem; docs/mpi.md)")
        p.add_argument("--mpi-range", metavar="BYTES",
                       help="--mpi: bytes per range dealt to a worker (default 64Mi)")
        p.add_argument("--mpi-send", action="store_true",
                       help="--mpi: rank 0 reads the input and writes the output, sending the "
                            "data to the workers (the files on its node only; the default for "
                            "stdin, pipes and stdout)")
        p.add_argument("--service", metavar="WHERE", default=None,
                       help="auto (default: the per-user service when one runs, else this "
                            "process), off, or a service's socket path (CIPHERGRID_SERVICE)")
    for name, what in (("seal", "seal a file or stdin: C2SP chunked encryption (Cobblestone-128)"),
                       ("open", "open a sealed file or stdin (all of it, or --offset/--length)")):
        p = sub.add_parser(name, help=what, epilog=_EPILOG)
        p.add_argument("--key-file", required=True, metavar="PATH",
                       help="the input key: 16 bytes (32 with --aes256), raw or as hex text")
        p.add_argument("--aes256", action="store_true",
                       help="Cobblestone-256 (SHA-512 + AES-256-GCM) instead of Cobblestone-128")
        c = p.add_mutually_exclusive_group()
        c.add_argument("--context", metavar="TEXT", help="the context the message is bound to")
        c.add_argument("--context-file", metavar="PATH", help="the context, from a file")
        p.add_argument("--in", dest="infile", metavar="PATH", help="input file (default stdin)")
        p.add_argument("--out", dest="outfile", metavar="PATH",
                       help="output (default stdout); a regular file is replaced atomically")
        p.add_argument("--device", "-d", default="auto",
                       help="where the chunks run: auto, native, cpu, gpu, cuda[:N], all, ...")
        p.add_argument("--no-sync", action="store_true", help="do not sync a new output before naming it")
        if name == "open":
            p.add_argument("--offset", type=int, metavar="N",
                           help="the first byte of the message to open (negative: from its end)")
            p.add_argument("--length", type=int, metavar="M", help="bytes to open (default: to the end)")
    p = sub.add_parser("serve", help="run the encryption service (shares the devices among local "
                                     "clients; docs/service.md)", epilog=_EPILOG)
    p.add_argument("--socket", metavar="PATH",
                   help="the Unix socket (default $XDG_RUNTIME_DIR/ciphergrid.sock)")
    p.add_argument("--status", action="store_true", help="ask the running service what it does")
    p.add_argument("--job-timeout", type=float, metavar="SECONDS",
                   help="give up a job running longer than this (default 3600)")
    p.add_argument("--policy", metavar="FILE",
                   help="who may connect, with which weight and job limit (TOML; default: only "
                        "the server's own user; docs/service.md)")
    p.add_argument("--socket-mode", metavar="OCTAL", default="600",
                   help="the socket file's mode (default 600; a system service: 660 with "
                        "--socket-group)")
    p.add_argument("--socket-group", metavar="GROUP", help="the socket file's group")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="also serve remote clients over TCP with TLS (docs/service.md)")
    p.add_argument("--tls-cert", metavar="PEM", help="the server's certificate (chain)")
    p.add_argument("--tls-key", metavar="PEM", help="the server's private key")
    p.add_argument("--tls-client-ca", metavar="PEM",
                   help="require client certificates signed by these CAs")
    p.add_argument("--token-file", metavar="PATH",
                   help="remote clients may present one of these tokens (one per line)")
    p.add_argument("--insecure-loopback", action="store_true",
                   help="--listen on a loopback address without TLS (tokens still required): "
                        "anyone on this machine can reach it")
    p.add_argument("--metrics", metavar="[ADDR:]PORT",
                   help="Prometheus metrics on http://ADDR:PORT/metrics (default address "
                        "127.0.0.1; needs prometheus-client)")
    p = sub.add_parser("list", help="every cipher name with its key and IV sizes")
    p.add_argument("--json", action="store_true", help="as JSON")
    p = sub.add_parser("devices", help="list every device")
    p = sub.add_parser("selftest", help="known-answer tests on every device")
    p.add_argument("--device", "-d", default=None, help="only this device")
    p.add_argument("--quiet", "-q", action="store_true")
    p = sub.add_parser("bench", help="the benchmark methodology (see docs/benchmarks.md)")
    r = sub.add_parser("report", help="Markdown tables and plots from bench JSON")
    if argv is None or any(a in ("bench", "report") for a in argv):
        from . import bench

        bench.add_arguments(p)
        bench.add_report_arguments(r)
    return ap


def _error(message: str, exc: BaseException | None = None) -> None:
    print(f"ciphergrid: error: {_flags(message)}{_written(exc)}", file=sys.stderr)


def _written(exc: BaseException | None) -> str:
    """"; N bytes were written to NAME" for an output written through (stdout, FIFO, device)."""
    w = getattr(exc, "ciphergrid_written", None)
    return f"; {w[0]} bytes were written to {w[1]}" if w else ""


def _dispatch(args) -> int:
    if args.command in ("encrypt", "decrypt"):
        return cmd_crypt(args, args.command == "encrypt")
    if args.command in ("seal", "open"):
        return cmd_seal(args, args.command == "seal")
    if args.command == "serve":
        return cmd_serve(args)
    if args.command == "list":
        return cmd_list(args)
    if args.command == "devices":
        return cmd_devices(args)
    if args.command == "selftest":
        return cmd_selftest(args)
    from . import bench

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
    ap = build_parser(argv)
    args = ap.parse_args(argv)
    interrupts.install()
    try:
        return _dispatch(args)
    except BrokenPipeError:  # the reader of our output went away: quietly, as coreutils
        return EXIT_SIGNAL + signal.SIGPIPE
    except (InvalidPadding, InvalidTag) as e:
        _error(str(e), e)
        return EXIT_AUTH
    except DeviceNotFound as e:
        _error(str(e))
        return EXIT_USAGE
    except DeviceError as e:
        _error(str(e), e)
        return EXIT_DEVICE
    except Error as e:
        _error(str(e), e)
        return EXIT_USAGE
    except OSError as e:  # a full disk, an I/O error: one line, no partial output
        where = f": {e.filename}" if e.filename else ""
        _error(f"{e.strerror or e}{where}", e)
        return EXIT_IO
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"ciphergrid: interrupted by {signal.Signals(signum).name}{_written(e)}",
              file=sys.stderr)
        return EXIT_SIGNAL + signum
    finally:
        interrupts.restore()


def console() -> None:
    """The ``ciphergrid`` program: :func:`main`, then exit.  After a signal or a closed output
    pipe the process ends at once (``os._exit``) once our cleanup is done: worker threads still
    parked in a runtime must not meet the interpreter's shutdown."""
    from .settings import one_blas_thread

    one_blas_thread()  # (before numpy's import)
    code = main()
    if code >= EXIT_SIGNAL:
        for f in (sys.stderr, sys.stdout):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()
