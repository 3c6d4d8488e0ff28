"""``ciphergrid encrypt`` / ``decrypt`` with an AEAD: the job's strategy (cli/crypt.py runs it):
one message, ciphertext || tag."""

from __future__ import annotations

import os

from ..errors import InvalidArgument, InvalidTag
from .common import READ_CHUNK, _file_bytes, _hex
from .keying import _given_key


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


class Message:
    """An AEAD's job (cli.crypt runs it): one message, ciphertext || tag, read whole (a regular
    file mapped); on decryption nothing is written before the tag verified (a failed tag: exit
    3, one line, no output): the text is staged (:func:`_staging`) and written once it did."""

    quiet = (InvalidTag,)   # (a failed tag wrote nothing: _note_written says no count)

    def __init__(self, args, encrypt: bool):
        from .. import aeads
        from ..aead import _tag_length

        self.args, self.encrypt = args, encrypt
        spec = self.spec = aeads.spec(args.cipher)
        aead = spec.aead
        for flag, value in (("--pass", args.passphrase), ("--pbkdf2", args.pbkdf2 or None),
                            ("--iter", args.iter), ("--md", args.md), ("--pad", args.pad),
                            ("--nopad", args.nopad or None), ("--sector-size", args.sector_size),
                            ("--start-sector", args.start_sector),
                            ("--base64", args.base64 or None)):
            if value is not None:
                raise InvalidArgument(f"{flag} does not apply to {spec.name} (an AEAD: give "
                                      "--key-file and --nonce)")
        if args.iv is not None and args.nonce is not None:
            raise InvalidArgument("give --nonce or --iv, not both")
        if args.iv is not None and not spec.name.endswith("-gcm"):
            raise InvalidArgument(f"{spec.name} takes --nonce, not --iv")
        nonce_hex = args.nonce if args.nonce is not None else args.iv
        if nonce_hex is None:
            raise InvalidArgument(f"{spec.name} needs --nonce HEX ({aead.default_nonce_length} "
                                  "bytes, never reused under one key)")
        self.nonce = _hex(nonce_hex, "--nonce")
        if args.aad is not None and args.aad_file is not None:
            raise InvalidArgument("give --aad or --aad-file, not both")
        self.aad = b""
        if args.aad is not None:
            self.aad = _hex(args.aad, "--aad")
        elif args.aad_file is not None:
            self.aad = _file_bytes(args.aad_file, "--aad-file")
        self.tl = _tag_length(aead, args.tag_length)
        self.data = self.req = None

    def prepare(self, src) -> None:
        """The key, the sizes checked, and the whole input (mapped or read)."""
        args, spec, tl = self.args, self.spec, self.tl
        if args.key_file is not None and args.key is not None:
            raise InvalidArgument("give one of --key, --key-file")
        if args.raw_key and args.key_file is None:
            raise InvalidArgument("--raw-key says how --key-file holds the key: give --key-file")
        from ..aead import message_request

        key = _given_key(args, (spec.key_len,), spec.name, phrases=False)
        # the one request: route plans it and crypt runs it (key, nonce, AAD checked here)
        self.req = message_request(spec, self.encrypt, key, self.nonce, self.aad, tl,
                                   args.constant_time)
        self.data = _aead_input(src, spec.aead.max_message + (0 if self.encrypt else tl))
        self.n = n = self.data.nbytes
        if not self.encrypt and n < tl:
            raise InvalidArgument(f"{spec.name}: the input ({n} bytes) is shorter than its tag "
                                  f"({tl} bytes)")
        self.out_size = n + tl if self.encrypt else n - tl

    def route(self, device):
        """The plan of the one message's request: a file's (route sends it to OpenSSL under
        auto where OpenSSL has the AEAD); what -v says is what runs."""
        from ..aead import route_one

        return route_one(self.req, self.n, device, "stream")

    def said_after(self, plan) -> bool:
        return False

    def note(self, plan) -> str:
        return ""

    def close(self) -> None:
        self.data = self.req = None

    def run(self, plan, src, out, bar) -> None:
        from ..aead import crypt

        args, out_n = self.args, self.out_size
        out.stop_reserving()   # (the writes allocate what the start-up left unreserved)
        buf, held = _staging(out_n)
        try:
            # (InvalidTag: nothing written)
            crypt(self.req, self.data, args.device, buf, "stream", plan=plan)
            step = 64 << 20
            for a in range(0, out_n, step):
                out.write(memoryview(buf[a:a + step]))
        finally:
            if held is None:
                if not self.encrypt:
                    buf[:] = 0  # the plaintext's staging copy in memory
            else:  # an unlinked file: its pages are dropped, never written back, once closed
                held[0].close()  # (the mapping goes when its last view does)
        bar.advance(self.n)
