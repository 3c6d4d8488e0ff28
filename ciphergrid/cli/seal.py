"""``ciphergrid seal`` / ``open``: sealed files (C2SP chunked encryption)."""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidTag
from .common import EXIT_OK, READ_CHUNK, _file_bytes


def cmd_seal(args, seal: bool) -> int:
    """``ciphergrid seal`` / ``open``: C2SP chunked encryption (Cobblestone-128, or -256 with
    --aes256); the chunks in AEAD batches of 64 MiB (formats/cobblestone.py).  ``open`` releases
    each chunk once its tag verified (a regular --out appears only when the whole message did);
    with --offset / --length it maps the file and reads only the chunks of that range."""
    from .. import keys
    from ..fileio import Input, Output
    from ..formats import cobblestone as cb

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

    from ..formats import cobblestone as cb
    from ..transfer.pieces import overlapped

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

    from ..formats import cobblestone as cb
    from ..transfer.pieces import overlapped

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

