"""``ciphergrid seal`` / ``open``: sealed files (C2SP chunked encryption)."""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidTag
from .common import EXIT_OK, _file_bytes


def cmd_seal(args, seal: bool) -> int:
    """``ciphergrid seal`` / ``open``: C2SP chunked encryption (Cobblestone-128, or -256 with
    --aes256); the chunks in OpenSSL's C loop on every core, or in AEAD batches of 64 MiB on a
    device (formats/cobblestone.py, transfer/sealed.py).  ``open`` releases
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
    """The input sealed into ``out`` after the header, in pieces of whole chunks read, sealed
    and written by workers at once (transfer/sealed.py); the piece that ends the input is the
    final one (its last chunk shorter, possibly empty)."""
    from ..formats import cobblestone as cb
    from ..transfer import sealed

    s = cb.Sealer(sch, key, context, device=device, path="stream")
    out.write(s.header())
    sealed.seal(src.f, out.fd, s, progress=out.count)


def _open_stream(src, out, sch, key: bytes, context: bytes, device: str) -> None:
    """The sealed input opened into ``out`` in pieces (transfer/sealed.py): each piece's chunks
    verified before any of its plaintext is written."""
    from ..formats import cobblestone as cb
    from ..transfer import sealed

    header = bytearray(cb.HEADER)
    got = src.readinto(header)
    if got < cb.HEADER:
        raise InvalidTag(f"{sch.name}: the sealed message is shorter than its header: nothing is "
                         "released")
    op = cb.Opener(sch, key, context, bytes(header), device=device, path="stream")
    sealed.open_(src.f, out.fd, op, progress=out.count)

