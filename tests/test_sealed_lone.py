"""A sealed message's lone worker (one thread, in order from the first chunk: the command line
on one core) through pyca's own Cobblestone encryptor and decryptor (formats/lone.py), and what
`ciphergrid seal` / `open` on one core import (issue 49: no more CPU than pyca's own stream).

OpenSSL and pyca only, messages of a few chunks."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ciphergrid.formats import cobblestone as cb

pyca = pytest.importorskip("cryptography.cobblestone")

K = cb.CHUNK


def _pieces(n: int, q: int):
    """(first chunk, start, end, final) of an n-byte message in pieces of q whole chunks, the
    final one possibly empty."""
    k = 0
    while True:
        lo, hi = k * K, min(n, (k + q) * K)
        final = hi - lo < q * K
        yield k, lo, hi, final
        if final:
            return
        k += q


@pytest.mark.parametrize("aes256", [False, True])
@pytest.mark.parametrize("n", [0, 5, 2 * K, 5 * K + 3])
def test_a_lone_worker_seals_through_pycas_encryptor(monkeypatch, aes256, n):
    """seal_at in order on one thread: pyca's encryptor seals every chunk (OpenSSL's C loop is
    never called), its header the Sealer's, and pyca opens the result."""
    from ciphergrid.engines.openssl import aead as ossl

    sch = cb.scheme(aes256)
    key, msg = os.urandom(sch.key_len), os.urandom(n)
    monkeypatch.setattr(ossl, "chunked", lambda *a, **k: pytest.fail("the C loop ran"))
    s = cb.Sealer(sch, key, b"ctx", device="native", path="stream")
    out = bytearray(s.header())
    for first, lo, hi, final in _pieces(n, 2):
        buf = bytearray(cb.sealed_length(hi - lo))
        got = s.seal_at(first, msg[lo:hi], hi - lo, final, buf, threads=1, alone=True)
        out += buf[:got]
    assert len(out) == cb.sealed_length(n)
    d = (pyca.Cobblestone256Decryptor if aes256 else pyca.Cobblestone128Decryptor)(key, b"ctx")
    assert d.update(bytes(out)) + d.finalize() == msg


def test_a_sealer_out_of_order_leaves_pycas_encryptor_with_the_same_bytes():
    """Chunks sealed out of order (not a lone worker's) go through the other paths under the
    key derived from the salt pyca drew: the same message opens."""
    key, msg = os.urandom(16), os.urandom(4 * K + 9)
    s = cb.Sealer(cb.scheme(False), key, b"", device="native", path="stream")
    body = bytearray(cb.sealed_length(len(msg)) - cb.HEADER)
    step = 2 * cb.SEALED_CHUNK
    s.seal_at(2, msg[2 * K:], len(msg) - 2 * K, True, memoryview(body)[step:], threads=1, alone=True)
    s.seal_at(0, msg[:2 * K], 2 * K, False, memoryview(body)[:step], threads=1, alone=True)
    assert cb.decrypt(s.header() + bytes(body), key) == msg


def test_an_opener_checks_the_commitment_without_deriving_its_keys():
    """The Opener's commitment is checked by pyca's decryptor (a wrong key or context is
    CommitmentMismatch at once); the key and base nonce are derived only where a path asks,
    equal to the spec's derivation."""
    key, msg = os.urandom(16), os.urandom(K + 1)
    sealed = cb.encrypt(msg, key, b"c")
    for k, c in ((os.urandom(16), b"c"), (key, b"d")):
        with pytest.raises(cb.CommitmentMismatch):
            cb.Opener(cb.scheme(False), k, c, sealed[:cb.HEADER])
    op = cb.Opener(cb.scheme(False), key, b"c", sealed[:cb.HEADER])
    assert op._keys is None
    assert (op.key, op.base) == cb.derive(cb.scheme(False), key, sealed[:cb.SALT], b"c")[:2]


#: modules a one-core `seal` / `open` of a key file's sealed file does not import
NOT_ON_ONE_CORE = ("ctypes", "ciphergrid._libcrypto", "ciphergrid.engines.openssl",
                   "ciphergrid.engines.openssl.aead", "ciphergrid.runtime", "numpy", "threading",
                   "ciphergrid.transfer.pieces", "argparse", "signal", "struct", "binascii",
                   "mmap", "ciphergrid.formats.passphrase", "fcntl",
                   "ciphergrid.backends.icd", "cryptography.exceptions", "ciphergrid.progress")


def test_o_append_is_read_without_fcntl(tmp_path):
    """fileio.appends reads a descriptor's O_APPEND (its open flags, or set later by F_SETFL)
    from /proc without the fcntl module; an output opened O_APPEND is written in order, not at
    offsets (transfer/files.ends); a closed descriptor is an OSError."""
    import fcntl

    from ciphergrid.fileio import appends
    from ciphergrid.transfer import files

    plain = os.open(tmp_path / "p", os.O_WRONLY | os.O_CREAT)
    added = os.open(tmp_path / "a", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    src = os.open(tmp_path / "p", os.O_RDONLY)
    try:
        assert (appends(plain), appends(added)) == (False, True)
        assert files.ends(src, plain).reg_out and not files.ends(src, added).reg_out
        fcntl.fcntl(plain, fcntl.F_SETFL, os.O_APPEND)
        assert appends(plain)
    finally:
        for fd in (plain, added, src):
            os.close(fd)
    with pytest.raises(OSError):
        appends(plain)


def test_one_core_seal_and_open_load_no_system_libcrypto(tmp_path):
    """`ciphergrid seal` and `open` on one core (a key file, regular files): pyca's own loop
    runs the chunks in the calling thread, so neither ctypes (the system's libcrypto) nor the
    OpenSSL engine, the runtime, numpy, threading, argparse or the other modules of
    NOT_ON_ONE_CORE are imported -- and pyca opens what was sealed, and the reverse."""
    key = os.urandom(16)
    (tmp_path / "k").write_text(key.hex() + "\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))   # (no per-user service there)
    for name in ("CIPHERGRID_SERVICE", "CIPHERGRID_HOST_THREADS"):
        env.pop(name, None)
    code = ("import os, sys\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from ciphergrid.cli import main\n"
            "assert main(sys.argv[1:]) == 0\n"
            f"bad = sorted(m for m in {NOT_ON_ONE_CORE!r} if m in sys.modules)\n"
            "assert not bad, bad\n")
    for n in (0, 3 * K + 7):
        msg = os.urandom(n)
        (tmp_path / "m").write_bytes(msg)
        for verb, src, dst in (("seal", "m", "m.cg"), ("open", "m.cg", "back")):
            r = subprocess.run([sys.executable, "-c", code, verb, "--key-file", str(tmp_path / "k"),
                                "--in", str(tmp_path / src), "--out", str(tmp_path / dst),
                                "--no-sync", "-q"], capture_output=True, timeout=60, env=env)
            assert r.returncode == 0, r.stderr.decode()[-800:]
        assert (tmp_path / "back").read_bytes() == msg
        d = pyca.Cobblestone128Decryptor(key, b"")
        assert d.update((tmp_path / "m.cg").read_bytes()) + d.finalize() == msg


def test_one_core_pipes_in_pieces(tmp_path):
    """On one core the pieces of a pipe run in the calling thread too: stdin to stdout, a
    message of several pieces, sealed and opened (pyca agrees); a chunk altered in the pipe
    fails with the chunk's exit code after the verified pieces were written."""
    key = os.urandom(16)
    (tmp_path / "k").write_text(key.hex() + "\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    for name in ("CIPHERGRID_SERVICE", "CIPHERGRID_HOST_THREADS"):
        env.pop(name, None)
    code = ("import os, sys\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from ciphergrid.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    msg = os.urandom((5 << 20) // 2 + 77)

    def cg(*argv, data):
        return subprocess.run([sys.executable, "-c", code, *argv, "--key-file", str(tmp_path / "k"),
                               "-q"], input=data, capture_output=True, timeout=60, env=env)

    sealed = cg("seal", data=msg)
    assert sealed.returncode == 0, sealed.stderr.decode()
    d = pyca.Cobblestone128Decryptor(key, b"")
    assert d.update(sealed.stdout) + d.finalize() == msg
    opened = cg("open", data=sealed.stdout)
    assert opened.returncode == 0 and opened.stdout == msg, opened.stderr.decode()
    bad = bytearray(sealed.stdout)
    bad[cb.HEADER + 100 * cb.SEALED_CHUNK + 5] ^= 1   # (in the second piece)
    failed = cg("open", data=bytes(bad))
    assert failed.returncode == 9, failed.stderr.decode()
    assert b"chunk 100 does not verify" in failed.stderr
    assert failed.stdout == msg[:64 * K]   # (the first piece verified and written)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_regular_input_that_shrinks_fails_on_any_number_of_workers(tmp_path, threads):
    """A regular input is read at its pieces' offsets up to the size it had at the start, by
    the calling thread alone or by workers (files.read_piece): one that shrinks meanwhile is
    an error, never a short sealed message taken for a whole one."""
    from ciphergrid.errors import InvalidArgument
    from ciphergrid.transfer import sealed

    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(os.urandom(6 * K))
    s = cb.Sealer(cb.scheme(False), os.urandom(16), b"", device="native")
    seal_at, calls = s.seal_at, []

    def shrinking(*a, **kw):
        if not calls:
            os.truncate(src, K)            # the input loses its tail while the pieces run
        calls.append(1)
        return seal_at(*a, **kw)

    s.seal_at = shrinking
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        with pytest.raises(InvalidArgument, match="changed while it was read .* of 98304 bytes"):
            sealed.seal(fi, fo, s, piece=2 * K, threads=threads)


@pytest.mark.parametrize("length", [cb.HEADER - 8, cb.HEADER + 1, 0])
def test_a_header_of_another_length_from_pycas_encryptor_is_an_engine_failure(monkeypatch,
                                                                             length):
    """The salt and commitment come from pyca's encryptor (its random salt): a header of
    another length than the format's is the engine's failure, never a sealer whose header
    is cut elsewhere; the real one's salt is drawn afresh for each message."""
    from ciphergrid.errors import DeviceError
    from ciphergrid.formats import lone

    real = lone.stream

    class Short:
        def __init__(self, enc):
            self.enc = enc

        def update(self, data):
            return (self.enc.update(data) + bytes(8))[:length]

    salts = {cb.Sealer(cb.scheme(False), bytes(16), b"", device="native").salt for _ in range(3)}
    assert len(salts) == 3 and {len(s) for s in salts} == {cb.SALT}
    monkeypatch.setattr(lone, "stream", lambda *a: Short(real(*a)))
    with pytest.raises(DeviceError, match=f"a header of {length} bytes, not {cb.HEADER}"):
        cb.Sealer(cb.scheme(False), bytes(16), b"", device="native")


@pytest.mark.parametrize("threads, n, loop, workers", [
    ("1", 2 * K + 5, "pyca's Cobblestone loop", 1),   # (one worker asked)
    ("2", K + 5, "OpenSSL's C loop", 1),              # (one piece: one worker, not alone)
    ("2", (1 << 20) + 5, "OpenSSL's C loop", 2)])
def test_v_says_the_loop_and_workers_that_run(tmp_path, monkeypatch, capsys, threads, n, loop,
                                              workers):
    """`seal -v` / `open -v` in OpenSSL's place say the loop and the workers that run: pyca's
    Cobblestone loop where one worker is asked (CIPHERGRID_HOST_THREADS=1: OpenSSL's C loop
    then never called), else OpenSSL's C loop and the workers that run (one for an input of
    one piece)."""
    from conftest import cli_main

    from ciphergrid.engines.openssl import aead as ossl

    key = os.urandom(16)
    (tmp_path / "k").write_text(key.hex() + "\n")
    (tmp_path / "m").write_bytes(msg := os.urandom(n))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))   # (no per-user service there)
    monkeypatch.delenv("CIPHERGRID_SERVICE", raising=False)
    monkeypatch.setenv("CIPHERGRID_HOST_THREADS", threads)
    real, calls = ossl.chunked, []

    def chunked(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(ossl, "chunked", chunked)
    for verb, src, dst in (("seal", "m", "m.cg"), ("open", "m.cg", "back")):
        calls.clear()
        assert cli_main(verb, "--key-file", tmp_path / "k", "--in", tmp_path / src, "--out",
                        tmp_path / dst, "--device", "native", "--no-sync", "-q", "-v") == 0
        err = capsys.readouterr().err
        assert (f"cobblestone-128 {verb} on native ({loop}, {workers} "
                f"worker{'s' if workers > 1 else ''})\n") in err, err
        assert bool(calls) == (loop == "OpenSSL's C loop")
    assert (tmp_path / "back").read_bytes() == msg


@pytest.mark.parametrize("verb", ["seal", "open"])
def test_pycas_wrong_byte_count_is_an_engine_failure(tmp_path, monkeypatch, capsys, verb):
    """pyca's encryptor or decryptor giving another byte count than the format's is the
    engine's failure on both sides: DeviceError (exit code 5), the output zeroed and nothing
    released, never a sealed message or a plaintext of another length."""
    from conftest import cli_main

    from ciphergrid.errors import DeviceError
    from ciphergrid.formats import lone

    key, msg = os.urandom(16), os.urandom(K + 5)
    sealed = cb.encrypt(msg, key, device="native")
    real = lone.stream

    class Longer:
        """pyca's object, one byte more from its finalize."""

        def __init__(self, obj):
            self.obj = obj

        def update(self, data):
            return self.obj.update(data)

        def update_into(self, data, out):
            return self.obj.update_into(data, out)

        def finalize(self):
            return self.obj.finalize() + b"!"

    monkeypatch.setattr(lone, "stream", lambda *a: Longer(real(*a)))
    sch, body = cb.scheme(False), sealed[cb.HEADER:]
    if verb == "seal":
        dst, want = bytearray(len(body)), len(body)
        with pytest.raises(DeviceError, match=f"encryptor gave {want + 1} bytes, not {want}$"):
            cb.Sealer(sch, key, b"", device="native").seal_at(0, msg, len(msg), True, dst,
                                                               threads=1, alone=True)
    else:
        dst, want = bytearray(len(msg)), len(msg)
        with pytest.raises(DeviceError, match=f"decryptor gave {want + 1} bytes, not {want}$"):
            cb.Opener(sch, key, b"", sealed[:cb.HEADER], device="native").open_at(
                0, body, len(body), True, dst, threads=1, alone=True)
    assert dst == bytes(len(dst))
    (tmp_path / "k").write_text(key.hex() + "\n")
    (tmp_path / "in").write_bytes(msg if verb == "seal" else sealed)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))   # (no per-user service there)
    monkeypatch.delenv("CIPHERGRID_SERVICE", raising=False)
    monkeypatch.setenv("CIPHERGRID_HOST_THREADS", "1")
    assert cli_main(verb, "--key-file", tmp_path / "k", "--in", tmp_path / "in", "--out",
                    tmp_path / "out", "--device", "native", "--no-sync", "-q") == 5
    assert "bytes, not" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
