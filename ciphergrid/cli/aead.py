"""``ciphergrid encrypt`` / ``decrypt`` with an AEAD: one message, ciphertext || tag."""

from __future__ import annotations

import os
import sys

from ..errors import InvalidArgument, InvalidTag
from .common import EXIT_OK, READ_CHUNK, _file_bytes, _hex, _note_written, _service_engine, _warn


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
    from .. import aeads
    from ..aead import _tag_length, crypt, route_message
    from ..engines.remote import service_asked
    from ..fileio import Input, Output
    from ..progress import Progress

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
    served = None
    try:
        # a service named that does not answer fails the job here (exit 5), before the key
        served = _service_engine(args)
        if args.key_file is not None and args.key is not None:
            raise InvalidArgument("give one of --key, --key-file")
        if args.raw_key and args.key_file is None:
            raise InvalidArgument("--raw-key says how --key-file holds the key: give --key-file")
        if args.key_file is not None:
            from .. import keys

            key = keys.read_key_file(args.key_file, (spec.key_len,), spec.name, raw=args.raw_key)
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
        # where the message runs, decided once (the service's remote engine, when one runs the
        # command): what -v says is what runs
        with service_asked(served):
            r = route_message(spec, encrypt, n, len(nonce), tl, args.device, "stream")
        if args.verbose:
            print(f"ciphergrid: {r.describe()}", file=sys.stderr)
        with Progress(n, quiet=args.quiet, verb="encrypted" if encrypt else "decrypted",
                      device=args.device) as bar:
            buf, held = _staging(out_n)
            # the output is opened first (its errors come before the work; a FIFO's reader sees
            # its end even when the tag fails) but written only once the tag verified
            out = Output(args.outfile, size=out_n, sync=not args.no_sync)
            try:
                with out:
                    crypt(encrypt, data, spec.name, key, nonce, aad, tl, args.device,
                          args.constant_time, None, buf, path="stream",
                          route=r)  # InvalidTag: nothing written
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
        if served is not None:
            served.close()   # (this command's connections to it)
        src.close()
    return EXIT_OK
