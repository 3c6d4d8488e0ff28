"""Where the command line writes, and what a failure or a signal leaves (issue: "The command line
never loses or misplaces a byte").

* A regular --out (new, existing, through a symbolic link) is replaced atomically: mode and owner
  kept, the umask honoured for a new file, nothing hidden left on any failure or signal.
* FIFOs, devices and stdout are written through, never replaced; a full output (a 1 MiB tmpfs)
  fails loudly with the bytes written, on every engine.
* SIGINT, SIGTERM and SIGHUP stop every engine cleanly (exit 128 + N, no crash); SIGKILL leaves
  no file; a closed output pipe ends quietly (exit 141).
* What the input's size decides fails before any output, naming the user's flags and paths.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

import ciphergrid
from test_cli import _assert_error, cli, cli_env, ok  # noqa: F401

K16 = "000102030405060708090a0b0c0d0e0f"
IV16 = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
CTR = ["encrypt", "--cipher", "aes-128-ctr", "--key", K16, "--iv", IV16]


def _ref_ctr(data: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    e = Cipher(algorithms.AES(bytes.fromhex(K16)), modes.CTR(bytes.fromhex(IV16))).encryptor()
    return e.update(data) + e.finalize()


def _listing(d) -> list[str]:
    return sorted(x.name for x in d.iterdir())


# --------------------------------------------------------------------------- regular files

def test_existing_file_keeps_mode_and_gets_new_inode(tmp_path, rng):
    data = rng.data(4096 + 5)
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    out.write_bytes(b"old")
    os.chmod(out, 0o640)
    link = tmp_path / "hardlink"
    os.link(out, link)
    ino = out.stat().st_ino
    ok(cli(*CTR, "--in", src, "--out", out, "-q"))
    assert out.read_bytes() == _ref_ctr(data)
    st = out.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_ino != ino  # an atomic replace: hard links keep the old bytes (documented)
    assert link.read_bytes() == b"old"
    assert _listing(tmp_path) == ["hardlink", "in", "out"]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_existing_file_keeps_owner(tmp_path, rng):
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(rng.data(100))
    out.write_bytes(b"old")
    os.chown(out, 4321, 4322)
    ok(cli(*CTR, "--in", src, "--out", out, "-q"))
    st = out.stat()
    assert (st.st_uid, st.st_gid) == (4321, 4322)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o027])
def test_new_file_honours_umask(tmp_path, rng, umask):
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(rng.data(33))
    code = (f"import os, sys; os.umask({umask}); sys.argv = ['ciphergrid'] + sys.argv[1:]; "
            "from ciphergrid.cli import main; sys.exit(main())")
    env = cli_env()
    p = subprocess.run([sys.executable, "-c", code, *CTR, "--in", str(src), "--out", str(out)],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_symlink_target_is_replaced_link_stays(tmp_path, rng):
    data = rng.data(1000)
    src, target, link = tmp_path / "in", tmp_path / "target", tmp_path / "link"
    src.write_bytes(data)
    target.write_bytes(b"old")
    link.symlink_to(target.name)
    ok(cli(*CTR, "--in", src, "--out", link, "-q"))
    assert link.is_symlink() and os.readlink(link) == "target"
    assert target.read_bytes() == _ref_ctr(data)
    dangling = tmp_path / "dangling"
    dangling.symlink_to("made-by-us")
    ok(cli(*CTR, "--in", src, "--out", dangling, "-q"))
    assert (tmp_path / "made-by-us").read_bytes() == _ref_ctr(data)
    assert _listing(tmp_path) == ["dangling", "in", "link", "made-by-us", "target"]


def test_in_place(tmp_path, rng):
    data = rng.data(3 * 4096 + 7)
    f = tmp_path / "f"
    f.write_bytes(data)
    ok(cli(*CTR, "--in", f, "--out", f, "-q"))
    assert f.read_bytes() == _ref_ctr(data)
    assert _listing(tmp_path) == ["f"]


def test_error_names_user_paths(tmp_path):
    src = tmp_path / "in"
    src.write_bytes(bytes(32))
    outdir = tmp_path / "adir"
    outdir.mkdir()
    p = cli(*CTR, "--in", src, "--out", outdir)
    _assert_error(p, "out is a directory", 4)  # the output cannot be created: an I/O error
    assert str(outdir) in p.stderr.decode() and ".part" not in p.stderr.decode()
    p = cli(*CTR, "--in", src, "--out", tmp_path / "missing" / "out")
    _assert_error(p, "no such directory", 4)
    assert "missing" in p.stderr.decode()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory(tmp_path):
    src = tmp_path / "in"
    src.write_bytes(bytes(32))
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        p = cli(*CTR, "--in", src, "--out", ro / "out")
        _assert_error(p, "read-only directory", 4)
        assert str(ro / "out") in p.stderr.decode()
    finally:
        os.chmod(ro, 0o755)


def test_bad_hex_key_is_not_echoed(tmp_path):
    secret = "5e" * 15 + "zz"
    p = cli("encrypt", "--cipher", "aes-128-ctr", "--key", secret, "--iv", IV16, input=b"x")
    _assert_error(p, "bad hex key")
    assert secret not in p.stderr.decode() and "5e5e" not in p.stderr.decode()


# --------------------------------------------------------------------------- write-through outputs

def test_fifo_is_written_through(tmp_path, rng):
    data = rng.data(3 << 20)
    src, fifo = tmp_path / "in", tmp_path / "fifo"
    src.write_bytes(data)
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=reader)
    t.start()
    p = cli(*CTR, "--in", src, "--out", fifo, "-q")
    t.join(60)
    ok(p)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0] == _ref_ctr(data)


def test_device_node_is_written_through(tmp_path, rng):
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
        with open(node, "wb") as f:
            f.write(b"probe")
    except OSError as e:
        pytest.skip(f"cannot make or open a device node here ({e.strerror})")
    src = tmp_path / "in"
    src.write_bytes(rng.data(5000))
    ok(cli(*CTR, "--in", src, "--out", node, "-q"))
    assert stat.S_ISCHR(os.lstat(node).st_mode), "the device node was replaced by a file"


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 1 MiB tmpfs (root only; else skipped)."""
    d = tmp_path / "tiny"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    yield d
    subprocess.run(["umount", str(d)], capture_output=True)


def test_full_output_through_stdout_every_engine(device, tiny_tmpfs, tmp_path, rng):
    """A full file system under stdout: non-zero exit, one line saying how many bytes went out."""
    src = tmp_path / "in"
    src.write_bytes(rng.data(3 << 20))
    with open(tiny_tmpfs / "out", "wb") as f:
        p = subprocess.run([sys.executable, "-m", "ciphergrid", *CTR, "--in", str(src), "-d", device, "-q"],
                           stdout=f, stderr=subprocess.PIPE, timeout=600,
                           env=cli_env())
    err = p.stderr.decode()
    assert p.returncode == 4, err
    lines = [x for x in err.strip().split("\n") if not x.startswith("ciphergrid: warning:")]
    assert len(lines) == 1 and "No space left" in lines[0], err
    # stdout is a regular file here: cut back to where it started
    assert (tiny_tmpfs / "out").stat().st_size == 0


def test_full_output_file_leaves_nothing(device, tiny_tmpfs, tmp_path, rng):
    src = tmp_path / "in"
    src.write_bytes(rng.data(3 << 20))
    p = cli(*CTR, "--in", src, "--out", tiny_tmpfs / "out", "-d", device, "-q")
    _assert_error(p, "full disk", 4)
    assert _listing(tiny_tmpfs) == []


def test_full_device_through_dev_full(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    src = tmp_path / "in"
    src.write_bytes(bytes(1 << 20))
    p = cli(*CTR, "--in", src, "--out", "/dev/full", "-d", "native", "-q")
    _assert_error(p, "/dev/full", 4)
    assert "0 bytes were written to /dev/full" in p.stderr.decode()


def test_closed_pipe_is_quiet(tmp_path):
    """`... | head -c 10`: the reader goes away; we end quietly with 141, as coreutils do."""
    src = tmp_path / "in"
    src.write_bytes(bytes(8 << 20))
    (tmp_path / "k").write_text(K16)
    env = cli_env()
    cmd = (f"{sys.executable} -m ciphergrid encrypt -c aes-128-ctr --key-file k --iv {IV16} "
           f"--in in -q | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}")
    p = subprocess.run(cmd, shell=True, executable="/bin/bash", capture_output=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.stdout.decode().strip() == "141", p.stderr
    assert p.stderr == b""


# --------------------------------------------------------------------------- early errors

def test_errors_the_size_decides_come_first(tmp_path):
    """ECB without padding over 100 MiB + 3 to stdout: the error, and not one byte out."""
    src = tmp_path / "big"
    with open(src, "wb") as f:
        f.truncate((100 << 20) + 3)
    t0 = time.perf_counter()
    p = cli("encrypt", "--cipher", "aes-128-ecb", "--key", K16, "--in", src)
    _assert_error(p, "ecb over a partial block")
    assert p.stdout == b""
    assert "--pad pkcs7" in p.stderr.decode()
    assert time.perf_counter() - t0 < 60


def test_xts_without_sector_size_fails_at_once(tmp_path):
    src = tmp_path / "disk.img"
    with open(src, "wb") as f:
        f.truncate(2 << 30)  # sparse
    p = cli("encrypt", "--cipher", "aes-128-xts", "--key", K16 + IV16, "--iv", IV16, "--in", src,
            "--out", tmp_path / "out")
    _assert_error(p, "xts without --sector-size")
    assert "--sector-size" in p.stderr.decode() and "sector_size" not in p.stderr.decode()
    assert _listing(tmp_path) == ["disk.img"]


# --------------------------------------------------------------------------- signals

def _start(args, **kw):
    env = cli_env()
    return subprocess.Popen([sys.executable, "-m", "ciphergrid", *map(str, args)],
                            stderr=subprocess.PIPE, env=env, **kw)


def _wait_started(proc, seconds: float = 120) -> None:
    """Until -v said which device runs the job (the work has begun)."""
    line = proc.stderr.readline().decode()
    while line.startswith("ciphergrid: warning:"):
        line = proc.stderr.readline().decode()
    assert " on " in line, line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_signal_mid_job_every_engine(device, sig, tmp_path):
    """The signal arrives while the device works on a 1 GiB (sparse) input: exit 128 + N (or
    killed), never a crash, no output file and no hidden temporary file left."""
    src = tmp_path / "in"
    with open(src, "wb") as f:
        f.truncate(1 << 30)
    out = tmp_path / "out"
    proc = _start([*CTR, "--in", src, "--out", out, "-d", device, "-q", "-v"])
    try:
        _wait_started(proc)
        time.sleep(0.3)
        proc.send_signal(sig)
        rc = proc.wait(120)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL
    elif rc != 0:  # (a fast engine may have finished before the signal: then it must be complete)
        assert rc == 128 + sig, f"exit {rc}: {err}"
        assert f"interrupted by {signal.Signals(sig).name}" in err
    if rc == 0:
        assert out.stat().st_size == 1 << 30
        out.unlink()
    assert _listing(tmp_path) == ["in"], err


def test_signal_on_stdout_says_bytes_written(tmp_path):
    src = tmp_path / "in"
    with open(src, "wb") as f:
        f.truncate(1 << 30)
    r, w = os.pipe()
    proc = _start([*CTR, "--in", src, "-d", "native", "-q", "-v"], stdout=w)
    os.close(w)
    got = 0
    try:
        _wait_started(proc)
        while got < (1 << 20):
            got += len(os.read(r, 1 << 16))
        proc.send_signal(signal.SIGTERM)
        while True:  # drain, so the writer is not blocked on a full pipe
            b = os.read(r, 1 << 20)
            if not b:
                break
            got += len(b)
        rc = proc.wait(120)
    finally:
        os.close(r)
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode()
    assert rc == 143, err
    assert f"{got} bytes were written to <stdout>" in err, (got, err)


# --------------------------------------------------------------------------- list, -v

def test_list_command():
    p = ok(cli("list"))
    text = p.stdout.decode()
    assert "aes-256-xts" in text and "512 bits" in text
    import json

    rows = json.loads(ok(cli("list", "--json")).stdout)
    byname = {r["name"]: r for r in rows}
    assert byname["aes-128-ctr"]["key_bytes"] == 16 and byname["aes-128-ctr"]["iv_bytes"] == 16
    assert byname["aes-256-ecb"]["iv_bytes"] == 0
    assert set(byname) == set(ciphergrid.available_ciphers())


def test_verbose_names_the_device(tmp_path):
    p = ok(cli(*CTR, "-v", "-q", input=bytes(100)))
    assert "aes-128-ctr encrypt on " in p.stderr.decode()


def test_out_dev_stdout(tmp_path, rng):
    """--out /dev/stdout (a magic link to a pipe here) is written through, as openssl does."""
    data = rng.data(5000)
    src = tmp_path / "in"
    src.write_bytes(data)
    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout")
    p = ok(cli(*CTR, "--in", src, "--out", "/dev/stdout", "-q"))
    assert p.stdout == _ref_ctr(data)
    assert _listing(tmp_path) == ["in"]


def test_no_sync_names_the_output_without_fsync(tmp_path, monkeypatch):
    """--no-sync: the output is named without fsync (the file and its folder); by default both
    are synced before the name appears."""
    from ciphergrid import fileio

    calls = []
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: calls.append(fd))
    for sync, want in ((False, 0), (True, 2)):
        calls.clear()
        out = tmp_path / f"o{sync}"
        with fileio.Output(str(out), size=3, sync=sync) as o:
            o.write(b"abc")
        assert out.read_bytes() == b"abc" and len(calls) == want, (sync, calls)


def test_full_ram_disk_with_the_mapped_file_path(tiny_tmpfs, tmp_path, rng, monkeypatch):
    """The mapped variant of the file path (a RAM disk on many cores) reserves the output first:
    a full RAM disk is an ENOSPC error before any byte, never a SIGBUS in a worker."""
    import errno

    from ciphergrid import registry
    from ciphergrid.engines.openssl import OpenSSLEngine
    from ciphergrid.request import make_request
    from ciphergrid.transfer import pieces

    monkeypatch.setattr(pieces, "plan", lambda ends, req, piece=None, threads=None, cores=None: ("mapped", 0, 4))
    src = tmp_path / "in"
    src.write_bytes(rng.data(3 << 20))
    req = make_request(registry.lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    with open(src, "rb") as fi, open(tiny_tmpfs / "out", "wb") as fo:
        with pytest.raises(OSError) as e:
            OpenSSLEngine().stream(req, fi, fo)
    assert e.value.errno == errno.ENOSPC


# --------------------------------------------------------------------------- the RAM-disk reservation
# (fileio.Output.reserve: a new output on a tmpfs is allocated by a background thread while the
# command starts up; the output's size must still be exactly what was written)

@pytest.fixture
def ram_dir(tmp_path):
    """A fresh folder on a tmpfs (/dev/shm; else skipped), removed after the test."""
    import shutil
    import tempfile

    from ciphergrid import fileio

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    d = tempfile.mkdtemp(prefix="cg-test-", dir="/dev/shm")
    try:
        fd = os.open(d, os.O_RDONLY)
        try:
            if fileio.fs_magic(fd) != fileio.TMPFS_MAGIC:
                pytest.skip("/dev/shm is not a tmpfs")
        finally:
            os.close(fd)
        yield __import__("pathlib").Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_reserved_output_is_cut_to_what_was_written(ram_dir, monkeypatch):
    """Reserved (in slices, by its thread) further than written: the size is never the
    reservation's, what was allocated past the end is given back at the commit; an aborted
    output leaves nothing."""
    from ciphergrid import fileio

    monkeypatch.setattr(fileio, "RESERVE_MIN", 0)
    monkeypatch.setattr(fileio, "RESERVE_SLICE", 64 << 10)
    out = ram_dir / "new"
    with fileio.Output(str(out), sync=False) as o:
        assert o.reserve(4 << 20)
        o.wait_reserved()  # (all of it: 4 MiB allocated, none of it in the size)
        st = os.fstat(o.fd)
        assert st.st_size == 0 and st.st_blocks * 512 >= 4 << 20
        o.write(b"a" * 100_001)
    assert out.read_bytes() == b"a" * 100_001
    assert out.stat().st_blocks * 512 < 1 << 20
    o = fileio.Output(str(ram_dir / "dropped"), sync=False)
    assert o.reserve(4 << 20)
    o.write(b"b" * 1000)
    o.abort()
    assert _listing(ram_dir) == ["new"]


def test_reserved_ram_disk_outputs_cli(ram_dir, tmp_path, rng):
    """Through the command line with an input large enough to be reserved: a padded decryption
    (output shorter than the input) is exact, to a file and to stdout (``> file``: written
    through); stdout on a larger existing file (``1<>``) keeps the file's size and the bytes
    after ours."""
    data = rng.data((40 << 20) + 5)
    src = tmp_path / "in"
    src.write_bytes(data)
    cbc = ["--cipher", "aes-128-cbc", "--key", K16, "--iv", IV16, "--pad", "pkcs7", "-q"]
    ok(cli("encrypt", *cbc, "--in", src, "--out", ram_dir / "ct"))
    assert (ram_dir / "ct").stat().st_size == len(data) + 11
    ok(cli("decrypt", *cbc, "--in", ram_dir / "ct", "--out", ram_dir / "pt"))
    assert (ram_dir / "pt").read_bytes() == data
    (ram_dir / "pt").unlink()
    with open(ram_dir / "pt", "wb") as f:
        p = subprocess.run([sys.executable, "-m", "ciphergrid", "decrypt", *cbc, "--in",
                            str(ram_dir / "ct")], stdout=f, stderr=subprocess.PIPE, timeout=600,
                           env=cli_env())
    assert p.returncode == 0, p.stderr.decode()
    assert (ram_dir / "pt").read_bytes() == data
    (ram_dir / "pt").unlink()
    big = ram_dir / "big"
    tail = rng.data(1 << 20)
    with open(big, "wb") as f:
        f.truncate(50 << 20)
        f.seek(50 << 20)
        f.write(tail)
    with open(big, "r+b") as f:
        p = subprocess.run([sys.executable, "-m", "ciphergrid", *CTR, "--in", str(src), "-q"],
                           stdout=f, stderr=subprocess.PIPE, timeout=600, env=cli_env())
    assert p.returncode == 0, p.stderr.decode()
    with open(big, "rb") as f:
        assert f.read(len(data)) == _ref_ctr(data)
        f.seek(50 << 20)
        assert f.read() == tail


def test_full_ram_disk_with_a_reserved_output(tiny_tmpfs, tmp_path):
    """An input large enough to be reserved, a 1 MiB tmpfs: the reservation stops quietly at the
    full disk, the writes fail there (exit 4, one line); nothing left, stdout cut back."""
    src = tmp_path / "in"
    with open(src, "wb") as f:
        f.truncate(40 << 20)
    p = cli(*CTR, "--in", src, "--out", tiny_tmpfs / "out", "-d", "native", "-q")
    _assert_error(p, "full disk", 4)
    assert _listing(tiny_tmpfs) == []
    with open(tiny_tmpfs / "out", "wb") as f:
        p = subprocess.run([sys.executable, "-m", "ciphergrid", *CTR, "--in", str(src), "-q"],
                           stdout=f, stderr=subprocess.PIPE, timeout=600, env=cli_env())
    assert p.returncode == 4 and "No space left" in p.stderr.decode(), p.stderr.decode()
    assert (tiny_tmpfs / "out").stat().st_size == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_signal_mid_file_on_a_ram_disk(sig, ram_dir, tmp_path):
    """A signal while the output on a RAM disk is being reserved and written: no file left."""
    src = tmp_path / "in"
    with open(src, "wb") as f:
        f.truncate(1 << 30)
    out = ram_dir / "out"
    proc = _start([*CTR, "--in", src, "--out", out, "-d", "native", "-q", "-v"])
    try:
        _wait_started(proc)
        time.sleep(0.1)
        proc.send_signal(sig)
        rc = proc.wait(120)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    if rc == 0:  # (finished before the signal: then complete)
        assert out.stat().st_size == 1 << 30
        out.unlink()
    else:
        assert rc == 128 + sig, f"exit {rc}: {err}"
    assert _listing(ram_dir) == [], err


def test_output_target_names_what_out_is(tmp_path):
    from ciphergrid.fileio import Output, output_target

    (tmp_path / "f").write_bytes(b"x")
    os.mkfifo(tmp_path / "p")
    want = {None: "stdout", "-": "stdout", str(tmp_path / "f"): "regular",
            str(tmp_path / "n"): "new", str(tmp_path / "no" / "n"): "nowhere",
            str(tmp_path): "directory", str(tmp_path / "p"): "special",
            "/dev/null": "special", "/proc/self/fd/99": "descriptor"}
    assert {p: output_target(p) for p in want} == want
    assert [Output.opens_quietly(p) for p in want] == [True, True, True, True, False, False,
                                                      False, False, False]
