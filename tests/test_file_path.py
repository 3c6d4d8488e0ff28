"""The file path of the host engines (ciphergrid.transfer.pieces, the OpenSSL engine's stream):
bytes equal to the one-shot reference for inputs straddling every piece and worker boundary, for
regular files (read and written at offsets by several workers) and pipes (in order), in every
mode that streams, both directions; an input that changes while it is read fails; the start-up
of a CPU-only run imports no GPU runtime.

Pieces are made tiny (a few blocks) so that a few KiB cross many piece boundaries and every
worker takes several pieces; the CLI-level checks (signals, full disks, read-only directories,
in-place runs, ``openssl enc``) are in test_cli_output.py and test_cli.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from ciphergrid import registry
from ciphergrid.engines.openssl import OpenSSLEngine
from ciphergrid.errors import InvalidArgument
from ciphergrid.request import make_request
from ciphergrid.testing import oracle
from ciphergrid.transfer import pieces

from test_cli import cli_env

PIECE = 48          # three AES blocks: boundaries everywhere
XTS_UNIT = 32       # XTS data units of two blocks, pieces of three units
CASES = [
    ("aes-128-ctr", True, {}), ("aes-128-ctr", False, {}),
    ("aes-256-ecb", True, {}), ("aes-192-cbc", True, {}), ("aes-192-cbc", False, {}),
    ("aes-128-xts", True, {"sector_size": XTS_UNIT}), ("aes-256-xts", False, {"sector_size": XTS_UNIT}),
]


def _lengths(name: str, opts) -> list[int]:
    mode = registry.lookup(name).mode.name
    piece = 3 * XTS_UNIT if opts else PIECE
    base = [piece - 16, piece, piece + 16, 5 * piece, 7 * piece + 32]
    if mode == "ctr":
        base += [1, piece + 1, 9 * piece - 5]
    if mode == "xts":
        base = [n for n in base if n % XTS_UNIT == 0 or n % XTS_UNIT >= 16] + [5 * XTS_UNIT + 17]
    return sorted({n for n in base if n > 0})


def _request(name, key, iv, encrypt, opts):
    return make_request(registry.lookup(name), key, iv, encrypt, sector_size=opts.get("sector_size"),
                        start_sector=3 if opts else None)


def _expect(name, key, iv, data, encrypt, opts):
    return oracle.crypt(name, key, iv, data, encrypt, sector_size=opts.get("sector_size"),
                        start_sector=3 if opts else None)


@pytest.mark.parametrize("name,encrypt,opts", CASES, ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("ends", ["files", "pipes"])
def test_bytes_across_pieces_and_workers(name, encrypt, opts, ends, rng, tmp_path):
    spec = registry.lookup(name)
    eng = OpenSSLEngine()
    for n in _lengths(name, opts):
        key, iv, data = rng.key(name), (rng.iv(name) if not opts else None), rng.data(n)
        req = _request(name, key, iv, encrypt, opts)
        want = _expect(name, key, iv, data, encrypt, opts)
        piece = 3 * XTS_UNIT if opts else PIECE
        if ends == "files":
            src, dst = tmp_path / "in", tmp_path / "out"
            src.write_bytes(b"HEAD" + data)
            with open(src, "rb") as fi, open(dst, "wb") as fo:
                fi.seek(4)                     # a stream starts at the descriptor's offset
                fo.write(b"xy")
                got_n = eng.stream(req, fi, fo, chunk_bytes=piece, depth=3)
                fo.write(b"!")                 # the offset is left after what was written
            got = dst.read_bytes()
            assert got[:2] == b"xy" and got[-1:] == b"!", (spec.name, n)
            got = got[2:-1]
        else:
            got_n, got = _through_pipes(eng, req, data, piece)
        assert got_n == n, (spec.name, n)
        assert got == want, f"{name} {'enc' if encrypt else 'dec'} {n} bytes ({ends})"


def _through_pipes(eng, req, data: bytes, piece: int):
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    chunks = []

    def feed():
        with os.fdopen(w_in, "wb") as f:
            for i in range(0, len(data), 7):  # small, odd writes: short reads on the other end
                f.write(data[i: i + 7])
                f.flush()

    def drain():
        with os.fdopen(r_out, "rb") as f:
            chunks.append(f.read())

    ts = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for t in ts:
        t.start()
    try:
        n = eng.stream(req, r_in, w_out, chunk_bytes=piece, depth=3)
    finally:
        os.close(r_in)
        os.close(w_out)
        for t in ts:
            t.join()
    return n, chunks[0]


def test_input_that_shrinks_fails(tmp_path, rng):
    """A regular input is read at offsets up to the size it had at the start: one that shrinks
    meanwhile is an error, never a short output taken for a whole one."""
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(rng.data(64 << 10))
    req = _request("aes-128-ctr", rng.key("aes-128-ctr"), rng.iv("aes-128-ctr"), True, {})
    calls = []

    def crypt(r, a, b):
        if not calls:
            os.truncate(src, 1000)        # the input loses its tail while the stream runs
        calls.append(1)
        b[:] = a

    with open(src, "rb") as fi, open(dst, "wb") as fo:
        with pytest.raises(InvalidArgument, match="changed while it was read"):
            pieces.stream(req, fi, fo, crypt, piece=4096, threads=1)


def test_a_failing_piece_stops_every_worker(tmp_path, rng):
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(rng.data(256 << 10))
    req = _request("aes-128-ctr", rng.key("aes-128-ctr"), rng.iv("aes-128-ctr"), True, {})
    seen = []

    def crypt(r, a, b):
        seen.append(1)
        if len(seen) == 5:
            raise OSError(5, "simulated device failure")
        b[:] = a

    with open(src, "rb") as fi, open(dst, "wb") as fo:
        with pytest.raises(OSError, match="simulated"):
            pieces.stream(req, fi, fo, crypt, piece=4096, threads=3)
    assert len(seen) < 64  # stopped early, not after all 64 pieces


def test_cpu_only_start_imports_no_gpu_runtime(tmp_path, rng):
    """With no GPU device node, the automatic choice of a large stream starts no GPU runtime."""
    from ciphergrid.devices import gpu_nodes_present

    if gpu_nodes_present():
        pytest.skip("this machine shows a GPU device node")
    src = tmp_path / "in"
    with open(src, "wb") as f:
        f.truncate(64 << 20)  # past the size at which auto would look for a GPU
    code = ("import sys; from ciphergrid import cli; rc = cli.main(['encrypt', '--cipher', "
            "'aes-128-ctr', '--key-file', sys.argv[1], '--iv', '00' * 16, '--in', sys.argv[2], "
            "'--out', sys.argv[3], '-q']); "
            "bad = [m for m in ('pyopencl', 'cupy', 'ciphergrid.bench') if m in sys.modules]; "
            "print(rc, bad)")
    keyf = tmp_path / "key"
    keyf.write_text("00" * 16)
    p = subprocess.run([sys.executable, "-c", code, str(keyf), str(src), str(tmp_path / "out")],
                       capture_output=True, env=cli_env(), timeout=120)
    assert p.stdout.decode().split() == ["0", "[]"], p.stderr.decode()
    assert np.count_nonzero(np.fromfile(tmp_path / "out", np.uint8)) > 0


@pytest.mark.parametrize("name,encrypt,opts", [c for c in CASES if c[0] != "aes-192-cbc" or not c[1]],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_mapped_path_bytes(name, encrypt, opts, rng, tmp_path, monkeypatch):
    """The mapped variant (a RAM disk on many cores: each worker enciphers a range from the
    input's mapping into the output's), forced here on any filesystem with small ranges."""
    monkeypatch.setattr(pieces, "MAPPED_STEP", 3 * XTS_UNIT if opts else PIECE)
    monkeypatch.setattr(pieces, "plan", lambda ends, req, piece=None, threads=None, cores=None: ("mapped", 0, 3))
    eng = OpenSSLEngine()
    for n in _lengths(name, opts):
        key, iv, data = rng.key(name), (rng.iv(name) if not opts else None), rng.data(n)
        req = _request(name, key, iv, encrypt, opts)
        src, dst = tmp_path / "in", tmp_path / "out"
        src.write_bytes(data)
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            assert eng.stream(req, fi, fo) == n
            fo.write(b"!")
        assert dst.read_bytes() == _expect(name, key, iv, data, encrypt, opts) + b"!", (name, n)


def test_plan_per_filesystem(tmp_path, monkeypatch):
    """The measured choice: pieces of 1 MiB on a disk filesystem, 4 workers at most; serial
    modes and explicit sizes never take the mapped variant."""
    from ciphergrid.runtime import Runtime, current
    from ciphergrid.transfer import files

    src = tmp_path / "in"
    src.write_bytes(bytes(4096))
    req = _request("aes-128-ctr", bytes(16), bytes(16), True, {})
    with open(src, "rb") as fi, open(tmp_path / "out", "wb") as fo:
        e = files.ends(fi, fo)
        monkeypatch.setattr(files, "fs_magic", lambda fd: 0xEF53)   # ext4
        budget = current().threads.budget
        assert pieces.plan(e, req) == ("pieces", pieces.PIECE, min(pieces.WORKERS, budget))
        monkeypatch.setattr(files, "fs_magic", lambda fd: files.TMPFS_MAGIC)
        with Runtime("16 cores", threads=16):   # (the cores: the runtime's thread budget)
            assert pieces.plan(e, req)[0] == "mapped"
            assert pieces.plan(e, req, piece=1 << 20)[0] == "pieces"
            cbc = _request("aes-128-cbc", bytes(16), bytes(16), True, {})
            assert pieces.plan(e, cbc) == ("pieces", pieces.PIECE_TMPFS, pieces.WORKERS)
        assert pieces.plan(e, req, cores=16)[0] == "mapped"
        with Runtime("2 cores", threads=2):
            assert pieces.plan(e, req) == ("pieces", pieces.PIECE_TMPFS, 2)

