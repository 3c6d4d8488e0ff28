"""Across ranks with MPI (ciphergrid/cluster/): ``mpiexec -n N ciphergrid encrypt|decrypt --mpi``.

Every run here is started by the test itself on this machine (2 and 3 ranks on its cores; the
MPI library from the package index: ``pip install 'ciphergrid[mpi]'``), bounded in time.  Bytes
equal one process's for every splittable mode at sizes straddling the ranges, both directions;
CBC encryption on one worker; a worker made to fail: its range run by another, the output whole.
The README's rules for outputs, errors and exit codes hold on every rank: a FIFO or a device
written through, outputs refused before any range, a new file's mode; a rank or mpiexec killed
or signalled mid-job: nothing left under the output's name, no partial file, 128 + N and one line."""
from __future__ import annotations

import os
import random
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from ciphergrid.mpi import SIGNAL_WAIT_S, partial_path
from ciphergrid.testing import oracle

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install 'ciphergrid[mpi]')")
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'ciphergrid[mpi]')")
RANGE = 64 << 10


def _job(argv, env=None, timeout=180, stdin=None, stdout=subprocess.PIPE):
    """The mpiexec command ``argv`` run to its end (a session of its own), every rank ended (its
    process group) if it overruns."""
    with subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          start_new_session=True, env={**os.environ, **(env or {})}) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_job(p)
            raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _mpi(n, *args, env=None, timeout=180, stdin=None, stdout=subprocess.PIPE):
    """``mpiexec -n N ciphergrid ARGS``, every rank ended (its process group) if it overruns."""
    return _job([MPIEXEC, "-n", str(n), sys.executable, "-m", "ciphergrid", *args], env, timeout,
                stdin, stdout)


def _end_job(p) -> None:
    """Kill an mpiexec started in its own session and every rank it started (each rank is a
    session of its own: found by the job's marker in its environment)."""
    for pid in _ranks(p.pid).values():
        _kill(pid, signal.SIGKILL)
    _kill(-p.pid, signal.SIGKILL)
    p.wait(10)


def _kill(pid, sig) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _ranks(mpiexec_pid) -> dict:
    """rank -> pid of the ranks started by this mpiexec: MPICH's PMI_RANK in the environment of
    a child of its proxy (a child of mpiexec)."""
    def parent(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None

    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            rank = int(env[b"PMI_RANK"])
        except (OSError, KeyError, ValueError):
            continue
        proxy = parent(pid)
        if proxy is not None and parent(proxy) == mpiexec_pid:
            found[rank] = int(pid)
    return found


def _files(tmp_path, name, n, rng, encrypt=True, **opts):
    key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
    data = rng.randbytes(n)
    src, kf = tmp_path / "in", tmp_path / "k"
    src.write_bytes(data)
    kf.write_text(key.hex())
    args = ["-c", name, "--key-file", str(kf), "--in", str(src), "--out", str(tmp_path / "out"),
            "--mpi", "--mpi-range", str(RANGE), "-q", "--device", "native"]
    if iv:
        args += ["--iv", iv.hex()]
    if opts.get("sector_size"):
        args += ["--sector-size", str(opts["sector_size"])]
    return args, oracle.crypt(name, key, iv, data, encrypt, **opts)


CASES = [("aes-128-ctr", 5 * RANGE + 7, {}), ("aes-256-cbc", 4 * RANGE, {}),
         ("aes-128-xts", 3 * RANGE + 4096 + 20, {"sector_size": 4096}), ("camellia-128-ecb", 2 * RANGE + 32, {})]


@pytest.mark.parametrize("name,n,opts", CASES)
@pytest.mark.parametrize("encrypt", [True, False])
def test_three_ranks_equal_one_process(tmp_path, name, n, opts, encrypt):
    rng = random.Random(f"{name}{n}{encrypt}")
    args, want = _files(tmp_path, name, n, rng, encrypt, **opts)
    r = _mpi(3, "encrypt" if encrypt else "decrypt", *args, "-v")
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out").read_bytes() == want
    assert b"over 3 ranks" in r.stderr
    assert not os.path.exists(partial_path(str(tmp_path / "out")))


def test_two_ranks_and_cbc_encryption_on_one_worker(tmp_path):
    rng = random.Random(5)
    args, want = _files(tmp_path, "aes-128-cbc", 3 * RANGE, rng)
    r = _mpi(2, "encrypt", *args, "-v")
    assert r.returncode == 0 and (tmp_path / "out").read_bytes() == want, r.stderr.decode()[-3000:]
    assert b"rank 1 (native) 100%" in r.stderr


def test_a_failing_worker_costs_rework_not_bytes(tmp_path):
    """CIPHERGRID_FAULT=mpi:1:fail:0: rank 1 fails on its first range; that range goes to
    rank 2; the output is whole and a warning says so."""
    rng = random.Random(6)
    args, want = _files(tmp_path, "aes-128-ctr", 8 * RANGE + 3, rng)
    r = _mpi(3, "encrypt", *args, env={"CIPHERGRID_FAULT": "mpi:1:fail:0"})
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out").read_bytes() == want
    assert b"rank 1" in r.stderr and b"run again" in r.stderr


def test_every_worker_failing_leaves_no_output(tmp_path):
    rng = random.Random(7)
    args, _ = _files(tmp_path, "aes-128-ctr", 4 * RANGE, rng)
    r = _mpi(2, "encrypt", *args, env={"CIPHERGRID_FAULT": "mpi:1:fail:0"})
    assert r.returncode == 5 and b"every worker failed" in r.stderr
    assert not (tmp_path / "out").exists() and not os.path.exists(partial_path(str(tmp_path / "out")))


def _mpich_segments() -> set:
    try:
        return {f for f in os.listdir("/dev/shm") if f.startswith("mpich_shm_")}
    except OSError:
        return set()


def _remove_unmapped(names) -> None:
    """Remove the shared-memory segments of MPICH that no process maps any more (a killed job's:
    MPICH cannot remove them)."""
    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as f:
                mapped.update(n for n in names if n in f.read())
        except OSError:
            pass
    for n in set(names) - mapped:
        try:
            os.unlink(os.path.join("/dev/shm", n))
        except OSError:
            pass


def test_a_partial_file_a_lost_node_left_is_removed_by_the_next_run(tmp_path):
    """The backstop: a partial file nobody removed (a node lost with rank 0 and its sentinel)
    is removed by the next run on the same output, which says so."""
    rng = random.Random(8)
    args, want = _files(tmp_path, "aes-128-ctr", 3 * RANGE, rng)
    left = partial_path(str(tmp_path / "out"))
    with open(left, "wb") as f:
        f.write(b"stale")
    r = _mpi(2, "encrypt", *args)
    assert r.returncode == 0 and (tmp_path / "out").read_bytes() == want, r.stderr.decode()[-3000:]
    assert not os.path.exists(left) and b"removed" in r.stderr


def test_bad_arguments_one_line_from_rank_zero(tmp_path):
    (tmp_path / "in").write_bytes(b"x" * 100)
    r = _mpi(2, "encrypt", "-c", "aes-128-ctr", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
             "--mpi")
    assert r.returncode == 2 and r.stderr.count(b"error:") == 1 and b"no key" in r.stderr
    assert not (tmp_path / "out").exists()


def test_pbkdf2_header_read_and_written_by_rank_zero(tmp_path):
    """A passphrase (CTR: no padding): rank 0 derives the key and writes the Salted__ header;
    openssl reads the result, and so does --mpi (the header read by rank 0, skipped by all)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command")
    data = random.Random(9).randbytes(3 * RANGE + 5)
    (tmp_path / "in").write_bytes(data)
    r = _mpi(3, "encrypt", "-c", "aes-256-ctr", "--pbkdf2", "--pass", "env:PW", "--in", str(tmp_path / "in"),
             "--out", str(tmp_path / "out"), "--mpi", "--mpi-range", str(RANGE), "-q", env={"PW": "secret"})
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    back = subprocess.run([openssl, "enc", "-d", "-aes-256-ctr", "-pbkdf2", "-pass", "pass:secret",
                           "-in", str(tmp_path / "out")], capture_output=True)
    assert back.returncode == 0 and back.stdout == data
    r = _mpi(3, "decrypt", "-c", "aes-256-ctr", "--pbkdf2", "--pass", "env:PW", "--in", str(tmp_path / "out"),
             "--out", str(tmp_path / "back"), "--mpi", "--mpi-range", str(RANGE), "-q", env={"PW": "secret"})
    assert r.returncode == 0 and (tmp_path / "back").read_bytes() == data, r.stderr.decode()[-3000:]


def test_python_entry_point_for_an_mpi_program(tmp_path):
    """A program that is an MPI job already calls ciphergrid.mpi.crypt_file on every rank."""
    data = random.Random(10).randbytes(5 * RANGE + 9)
    (tmp_path / "in").write_bytes(data)
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import sys\n"
        "from mpi4py import MPI\n"
        "from ciphergrid.mpi import crypt_file\n"
        f"r = crypt_file(sys.argv[1], sys.argv[2], 'aes-128-ctr', bytes(16), bytes(16), device='native',"
        f" range_bytes={RANGE})\n"
        "if MPI.COMM_WORLD.rank == 0:\n"
        "    print(r['bytes'], r['summary'])\n")
    r = subprocess.run([MPIEXEC, "-n", "3", sys.executable, str(prog), str(tmp_path / "in"), str(tmp_path / "out")],
                       capture_output=True, timeout=180)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert r.stdout.decode().startswith(str(len(data))) and b"rank 2" in r.stdout
    assert (tmp_path / "out").read_bytes() == oracle.encrypt(data, "aes-128-ctr", bytes(16), bytes(16))


# -- rank 0 sends the data (a pipe, stdout, --mpi-send) ---------------------------------------------
def _fifo_feeder(path, data):
    import threading

    os.mkfifo(path)

    def feed():
        with open(path, "wb") as f:
            f.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("name,encrypt", [("aes-128-ctr", True), ("aes-256-cbc", False), ("aes-256-cbc", True),
                                          ("aes-128-xts", False)])
def test_a_pipe_in_and_stdout_out_through_rank_zero(tmp_path, name, encrypt):
    """A pipe (a FIFO given as --in: MPICH forwards a rank's own stdin through a small buffer) to
    stdout: rank 0 reads, deals the bytes, writes the results in order; CBC decryption's chaining
    block taken from the range before, CBC encryption range after range."""
    rng = random.Random(f"send{name}{encrypt}")
    opts = {"sector_size": 4096} if "xts" in name else {}
    key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
    data = rng.randbytes(5 * RANGE + (4096 if opts else 32))
    (tmp_path / "k").write_text(key.hex())
    feeder = _fifo_feeder(str(tmp_path / "fifo"), data)
    args = ["encrypt" if encrypt else "decrypt", "-c", name, "--key-file", str(tmp_path / "k"),
            "--in", str(tmp_path / "fifo"), "--mpi", "--mpi-range", str(RANGE), "-q", "--device", "native", "-v"]
    if iv:
        args += ["--iv", iv.hex()]
    if opts:
        args += ["--sector-size", "4096"]
    r = _mpi(3, *args)
    feeder.join(10)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert r.stdout == oracle.crypt(name, key, iv, data, encrypt, **opts)
    assert b"rank 0 sent" in r.stderr


def test_rank_zero_sends_to_a_file_and_a_failing_worker_is_replaced(tmp_path):
    """--mpi-send with files (on rank 0's node only): the output named at the end; a worker
    failing on its first range: the range (its bytes kept by rank 0) goes to another."""
    rng = random.Random(13)
    args, want = _files(tmp_path, "aes-128-ctr", 7 * RANGE + 5, rng)
    r = _mpi(3, "encrypt", *args, "--mpi-send", env={"CIPHERGRID_FAULT": "mpi:1:fail:0"})
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out").read_bytes() == want
    assert b"run again" in r.stderr and not os.path.exists(partial_path(str(tmp_path / "out")))


def test_a_pipe_that_does_not_fit_the_mode_is_refused(tmp_path):
    """ECB over a pipe of 100 bytes (not whole blocks): one line, exit 2 (the input's length, as
    without --mpi), nothing under the name."""
    feeder = _fifo_feeder(str(tmp_path / "fifo"), b"x" * 100)
    r = _mpi(2, "encrypt", "-c", "aes-128-ecb", "--key", "00" * 16, "--in", str(tmp_path / "fifo"),
             "--out", str(tmp_path / "out"), "--mpi", "-q")
    feeder.join(10)
    assert r.returncode == 2 and r.stderr.count(b"error:") == 1, r.stderr.decode()[-3000:]
    assert not (tmp_path / "out").exists() and not os.path.exists(partial_path(str(tmp_path / "out")))


def test_weak_scaling_model():
    """docs/mpi.md's model: no loss where nothing limits, the shared file system's cap, the
    manager's saturation, and two ranges in flight hiding the manager's answer."""
    from ciphergrid.bench.mpi import MODEL, model_table, weak_scaling

    free = weak_scaling(8, None)
    assert free["e_range"] == 1.0 and free["efficiency"] > 0.99
    fs = weak_scaling(16, 1e12)
    assert fs["limit"] == "file system" and fs["aggregate_bps"] == pytest.approx(1e12 / 2, rel=0.01)
    one = weak_scaling(8, None, in_flight=1)
    assert one["limit"] == "ranges" and one["efficiency"] < free["efficiency"]
    t = MODEL["range_bytes"] / MODEL["node_bps"]
    assert one["e_range"] == pytest.approx(t / (t + one["answer_s"]))
    busy = weak_scaling(10_000, None)
    assert busy["efficiency"] == 0.0 and busy["limit"] == "manager"
    table = model_table(nodes=(2, 64))
    assert table.count("\n") == 3 and "shared FS 200 GB/s" in table


# -- outputs, errors and signals as without --mpi (README: "Outputs", the exit codes) -----------------
def _reader(path, into):
    def read():
        with open(path, "rb") as f:
            into.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def test_a_fifo_out_is_written_through(tmp_path):
    """--out a FIFO: written through by rank 0, never replaced by a regular file."""
    rng = random.Random(20)
    args, want = _files(tmp_path, "aes-128-ctr", 2 * RANGE + 5, rng)
    os.unlink(tmp_path / "out")  if (tmp_path / "out").exists() else None
    os.mkfifo(tmp_path / "out")
    got = []
    t = _reader(str(tmp_path / "out"), got)
    r = _mpi(3, "encrypt", *args, timeout=60)
    t.join(10)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert stat.S_ISFIFO(os.lstat(tmp_path / "out").st_mode)
    assert got == [want]


def test_a_character_device_out_stays_a_device(tmp_path):
    """--out a character device (a node of /dev/null's numbers made here): written through,
    the node left as it was."""
    try:
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here: {e}")
    rng = random.Random(21)
    args, _ = _files(tmp_path, "aes-128-ctr", RANGE + 3, rng)
    i = args.index("--out")
    args[i + 1] = str(tmp_path / "null")
    r = _mpi(3, "encrypt", *args, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    st = os.lstat(tmp_path / "null")
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert not [f for f in os.listdir(tmp_path) if "ciphergrid" in f]


@pytest.mark.parametrize("command,limited", [("encrypt", "rank != 0"), ("seal", "rank != 0"), ("encrypt", "rank == 0")])
def test_a_write_of_the_output_failing_is_the_jobs_io_error(tmp_path, command, limited):
    """A file size limit on the workers only (their writes fail with EFBIG, as a full disk's with
    ENOSPC): the job's I/O error, not a rank's (no range dealt again, no "every worker failed",
    5): exit 4 on every rank, one line naming the output in the one-process command's words,
    nothing under its name and no partial file.  On rank 0 only: sizing the partial file fails,
    in the same words."""
    if command == "encrypt":
        args, _ = _files(tmp_path, "aes-128-ctr", 6 * RANGE, random.Random(31))
    else:
        _sealed_files(tmp_path, 6 * RANGE, 31)
        args = ["--key-file", str(tmp_path / "k"), *_sealed_args(tmp_path, "in", "out")]
    # (set once MPI is up: its start-up makes shared memory files larger than the limit)
    limit = (f"import resource, sys; from mpi4py import MPI; rank = MPI.COMM_WORLD.rank; {limited} and resource.setrlimit("
             "resource.RLIMIT_FSIZE, (32768, resource.getrlimit(resource.RLIMIT_FSIZE)[1])); "
             "from ciphergrid.cli import console; console()")
    run, codes = _mpi_each(3, tmp_path, command, *args, python=["-c", limit])
    err = run.stderr.decode()
    assert codes == [4, 4, 4] and run.returncode == 4, err[-3000:]
    assert err == f"ciphergrid: error: File too large: {tmp_path / 'out'}\n"
    assert _nothing_left(tmp_path, "out")


def test_a_full_disk_exits_4_and_leaves_nothing(tmp_path):
    """A full disk, a 256 KiB tmpfs mounted in a user and mount namespace of the test's own
    (skipped where none can be made), as --out of 512 KiB: exit 4, "No space left on device"
    naming the output, nothing left on it."""
    small = tmp_path / "small"
    small.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', str(small)],
                           capture_output=True, timeout=30) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no tmpfs can be mounted here (unshare -rm)")
    args, _ = _files(tmp_path, "aes-128-ctr", 8 * RANGE, random.Random(32))
    args[args.index("--out") + 1] = str(small / "out")
    r = _job(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=256k tmpfs "$0" || exit 99; "$@"; rc=$?; '
              'ls -A "$0" > "$0.left"; exit $rc', str(small), MPIEXEC, "-n", "3", sys.executable, "-m", "ciphergrid",
              "encrypt", *args], timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 4, err[-3000:]
    assert err == f"ciphergrid: error: No space left on device: {small / 'out'}\n"
    assert (tmp_path / "small.left").read_text() == ""


@pytest.mark.parametrize("where", ["missing folder", "/proc/version", "a directory"])
def test_an_output_that_cannot_be_made_exits_4_on_every_rank(tmp_path, where):
    """Checked by rank 0 before any range, with the one-process command's words: exit 4, one
    line that names --out and no internal file; every rank ends (none waits or spins)."""
    rng = random.Random(22)
    args, _ = _files(tmp_path, "aes-128-ctr", 2 * RANGE, rng)
    out = {"missing folder": str(tmp_path / "no" / "out"), "/proc/version": "/proc/version",
           "a directory": str(tmp_path)}[where]
    args[args.index("--out") + 1] = out
    r = _mpi(3, "encrypt", *args, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 4, err[-3000:]
    assert err.count("error:") == 1 and "--out" in err and "partial" not in err, err
    assert not [f for f in os.listdir(tmp_path) if "ciphergrid" in f]


def test_a_new_output_gets_0666_less_umask_and_an_old_one_keeps_its_mode(tmp_path):
    rng = random.Random(23)
    args, want = _files(tmp_path, "aes-128-ctr", 2 * RANGE + 1, rng)
    mask = os.umask(0o022)
    os.umask(mask)
    r = _mpi(2, "encrypt", *args, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert stat.S_IMODE(os.stat(tmp_path / "out").st_mode) == 0o666 & ~mask
    os.chmod(tmp_path / "out", 0o640)
    r = _mpi(2, "encrypt", *args, timeout=60)
    assert r.returncode == 0 and (tmp_path / "out").read_bytes() == want
    assert stat.S_IMODE(os.stat(tmp_path / "out").st_mode) == 0o640


def test_an_aead_says_in_one_line_that_it_does_not_run_under_mpi(tmp_path):
    (tmp_path / "in").write_bytes(b"x" * 100)
    r = _mpi(2, "encrypt", "-c", "aes-256-gcm", "--key", "00" * 32, "--in", str(tmp_path / "in"),
             "--out", str(tmp_path / "out"), "--mpi", timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == err.count("warning:") + 1 and len(err) < 400, err
    assert "--mpi" in err and "unknown cipher" not in err
    assert not (tmp_path / "out").exists()


def test_the_readmes_pipe_forms_in_and_stdout_out(tmp_path):
    """The supported ways to pipe data through mpiexec (docs/mpi.md): ``--in <(command)`` and a
    small standard input; standard output redirected to a file."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    rng = random.Random(24)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    data = rng.randbytes(3 * RANGE + 7)
    (tmp_path / "in").write_bytes(data)
    (tmp_path / "k").write_text(key.hex())
    cmd = (f"{MPIEXEC} -n 3 {sys.executable} -m ciphergrid encrypt -c aes-128-ctr --key-file {tmp_path}/k "
           f"--iv {iv.hex()} --mpi --mpi-range {RANGE} -q --device native --in <(cat {tmp_path}/in) "
           f"> {tmp_path}/out")
    r = subprocess.run([bash, "-c", cmd], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out").read_bytes() == oracle.encrypt(data, "aes-128-ctr", key, iv)
    small = data[:20000]
    with open(tmp_path / "small", "wb") as f:
        f.write(small)
    with open(tmp_path / "small", "rb") as fin, open(tmp_path / "out2", "wb") as fout:
        r = _mpi(2, "encrypt", "-c", "aes-128-ctr", "--key-file", str(tmp_path / "k"), "--iv", iv.hex(),
                 "--mpi", "-q", "--device", "native", stdin=fin, stdout=fout, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out2").read_bytes() == oracle.encrypt(small, "aes-128-ctr", key, iv)


def _wait_gone(path, seconds=5.0) -> bool:
    end = time.monotonic() + seconds
    while os.path.exists(path):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _still(partial, want) -> bool:
    """Whether the job stands still: the partial file holds ranges rank 2 ran but not the first
    one (rank 1's: it stopped on it), and does not change."""
    try:
        with open(partial, "rb") as f:
            got = f.read()
        time.sleep(0.2)
        with open(partial, "rb") as f:
            again = f.read()
    except OSError:
        return False
    return got == again and got[:RANGE] != want[:RANGE] and any(
        got[a:a + RANGE] == want[a:a + RANGE] for a in range(RANGE, len(want), RANGE))


@pytest.mark.parametrize("victim,sig", [(0, signal.SIGKILL), (1, signal.SIGKILL), (2, signal.SIGTERM),
                                        (0, signal.SIGTERM), ("mpiexec", signal.SIGTERM), (1, signal.SIGINT)])
def test_a_rank_killed_mid_job_leaves_nothing(tmp_path, victim, sig):
    """Rank 1 made to stop on its first range (the job stands still once rank 2 has run what
    it may: its share and tail pieces), then a rank (the stopped one too) or mpiexec is signalled: nothing under the
    output's name and no partial file; 128 + N and one line (a SIGKILL: mpiexec reports the
    signal's number itself)."""
    rng = random.Random(25)
    args, want = _files(tmp_path, "aes-128-ctr", 6 * RANGE, rng)
    out = tmp_path / "out"
    os.unlink(out) if out.exists() else None
    left = partial_path(str(out))
    before = _mpich_segments()
    with subprocess.Popen([MPIEXEC, "-n", "3", sys.executable, "-m", "ciphergrid", "encrypt", *args],
                          stderr=subprocess.PIPE, start_new_session=True,
                          env={**os.environ, "CIPHERGRID_FAULT": "mpi:1:hang:0",
                               # (no speeds measured before: equal shares, the longest hang limit)
                               "CIPHERGRID_CACHE_DIR": str(tmp_path / "cache")}) as p:
        try:
            end = time.monotonic() + 30
            ranks = {}
            while not (len(ranks) == 3 and _still(left, want)) and time.monotonic() < end:
                time.sleep(0.05)
                ranks = _ranks(p.pid)
            assert len(ranks) == 3 and _still(left, want)
            _kill(p.pid if victim == "mpiexec" else ranks[victim], sig)
            err = p.communicate(timeout=30)[1].decode()
        except BaseException:
            _end_job(p)
            raise
    _remove_unmapped(_mpich_segments() - before)
    assert not out.exists()
    assert _wait_gone(left), os.listdir(tmp_path)
    if sig != signal.SIGKILL:
        assert p.returncode == 128 + sig, err[-3000:]
        assert err.count(f"interrupted by {sig.name}") == 1, err
    else:
        assert p.returncode != 0


def test_a_signal_while_rank_zero_waits_on_a_silent_pipe(tmp_path):
    """Rank 0 sends the data of a pipe that goes silent (its writer alive) to stdout; SIGTERM to
    mpiexec: every rank ends at once with 143, one line saying how much reached stdout."""
    os.mkfifo(tmp_path / "fifo")
    fed, release = threading.Event(), threading.Event()

    def feed():
        with open(tmp_path / "fifo", "wb") as f:
            f.write(random.Random(26).randbytes(3 * RANGE))
            fed.set()
            release.wait(60)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    (tmp_path / "k").write_text("00" * 16)
    with open(tmp_path / "out", "wb") as out, subprocess.Popen(
            [MPIEXEC, "-n", "3", sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr", "--key-file",
             str(tmp_path / "k"), "--iv", "00" * 16, "--in", str(tmp_path / "fifo"), "--mpi", "--mpi-range",
             str(RANGE), "-q", "--device", "native"], stdout=out, stderr=subprocess.PIPE,
            start_new_session=True) as p:
        try:
            assert fed.wait(30)
            time.sleep(0.3)
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            err = p.communicate(timeout=30)[1].decode()
            took = time.monotonic() - t0
        except BaseException:
            _end_job(p)
            raise
        finally:
            release.set()
    assert p.returncode == 143, err[-3000:]
    assert err.count("\n") == 1 and "interrupted by SIGTERM" in err and "bytes were written to <stdout>" in err, err
    assert took < SIGNAL_WAIT_S


def test_sigterm_mid_job_with_a_fifo_input_says_one_line_and_leaves_nothing(tmp_path):
    """Rank 0 deals a FIFO's bytes, fed without end, to a file: SIGTERM to mpiexec mid-job (its
    sends of ranges still open, queued ahead of busy ranks) gives 143, our one line and no other
    (MPI's ending reports a request left open on stderr), and nothing under the output's name.
    Five runs: the signal lands at different points of the dealing."""
    (tmp_path / "k").write_text("00" * 16)
    out = tmp_path / "out"
    for run in range(5):
        fifo = tmp_path / f"fifo{run}"
        os.mkfifo(fifo)
        fed, stop = [0], threading.Event()

        def feed():
            piece = random.Random(run).randbytes(RANGE)
            try:
                with open(fifo, "wb") as f:
                    while not stop.is_set():
                        fed[0] += f.write(piece)
            except OSError:   # (the job ended: the reader is gone)
                pass

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        with subprocess.Popen(
                [MPIEXEC, "-n", "3", sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr",
                 "--key-file", str(tmp_path / "k"), "--iv", "00" * 16, "--in", str(fifo), "--out", str(out),
                 "--mpi", "--mpi-range", str(RANGE), "-q", "--device", "native"], stderr=subprocess.PIPE,
                start_new_session=True) as p:
            try:
                end = time.monotonic() + 30
                while fed[0] < (40 + 13 * run) * RANGE and p.poll() is None and time.monotonic() < end:
                    time.sleep(0.01)
                assert p.poll() is None and fed[0] >= 40 * RANGE
                p.send_signal(signal.SIGTERM)
                err = p.communicate(timeout=30)[1].decode()
            except BaseException:
                _end_job(p)
                raise
            finally:
                stop.set()
        feeder.join(10)
        assert p.returncode == 143, err[-3000:]
        assert err == "ciphergrid: interrupted by SIGTERM\n", err
        assert not out.exists() and not os.path.exists(partial_path(str(out)))
        assert sorted(os.listdir(tmp_path)) == [f"fifo{i}" for i in range(run + 1)] + ["k"]


# -- sealed files: seal / open --mpi (ciphergrid/cluster/sealed.py) ---------------------------------
def _mpi_each(n, tmp_path, *args, env=None, timeout=60, python=("-m", "ciphergrid")):
    """``mpiexec -n N ciphergrid ARGS`` with each rank's own exit code: (the run, [codes by rank]);
    ``python``: how Python runs the command line."""
    codes = tmp_path / "codes"
    codes.mkdir(exist_ok=True)
    for f in codes.iterdir():
        f.unlink()
    wrap = f'"$@"; rc=$?; echo $rc > {shlex.quote(str(codes))}/$PMI_RANK; exit $rc'
    run = _job([MPIEXEC, "-n", str(n), "sh", "-c", wrap, "sh", sys.executable, *python,
                *args], env, timeout)
    got = [int((codes / str(r)).read_text()) if (codes / str(r)).exists() else None for r in range(n)]
    return run, got


def _sealed_files(tmp_path, n, seed):
    data = random.Random(seed).randbytes(n)
    key = random.Random(seed + 1).randbytes(16)
    (tmp_path / "in").write_bytes(data)
    (tmp_path / "k").write_text(key.hex())
    return data, key


def _sealed_args(tmp_path, inp, out, *more):
    return ["--in", str(tmp_path / inp), "--out", str(tmp_path / out), "--mpi", "--mpi-range", str(RANGE),
            "-q", "--device", "native", *more]


def _nothing_left(tmp_path, name):
    return not (tmp_path / name).exists() and not os.path.exists(partial_path(str(tmp_path / name)))


@pytest.mark.parametrize("n,aes256", [(6 * RANGE + 123, False), (4 * RANGE, True)])
def test_seal_over_three_ranks_opens_in_process_and_with_pyca(tmp_path, n, aes256):
    """The sealed file of 3 ranks opens with ``ciphergrid open`` in one process and with pyca's
    Cobblestone (a range count of whole ranges too: the final, empty chunk on the last one)."""
    pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
    data = random.Random(n).randbytes(n)
    key = random.Random(n + 1).randbytes(32 if aes256 else 16)
    (tmp_path / "in").write_bytes(data)
    (tmp_path / "k").write_text(key.hex())
    extra = ["--aes256"] if aes256 else []
    r = _mpi(3, "seal", "--key-file", str(tmp_path / "k"), "--context", "ctx",
             *_sealed_args(tmp_path, "in", "in.cg", "-v", *extra), timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert b"seal over 3 ranks" in r.stderr
    sealed = (tmp_path / "in.cg").read_bytes()
    d = (pyca.Cobblestone256Decryptor if aes256 else pyca.Cobblestone128Decryptor)(key, b"ctx")
    assert d.update(sealed) + d.finalize() == data
    p = subprocess.run([sys.executable, "-m", "ciphergrid", "open", "--key-file", str(tmp_path / "k"),
                        "--context", "ctx", "--in", str(tmp_path / "in.cg"), "--out", str(tmp_path / "back"),
                        "--service", "off", "-q", *extra], capture_output=True, timeout=60)
    assert p.returncode == 0 and (tmp_path / "back").read_bytes() == data, p.stderr.decode()
    assert not os.path.exists(partial_path(str(tmp_path / "in.cg")))


def test_open_over_ranks_of_a_pyca_sealed_file(tmp_path):
    pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
    data, key = _sealed_files(tmp_path, 5 * RANGE + 77, 40)
    e = pyca.Cobblestone128Encryptor(key, b"")
    (tmp_path / "in.cg").write_bytes(e.update(data) + e.finalize())
    r = _mpi(3, "open", "--key-file", str(tmp_path / "k"), *_sealed_args(tmp_path, "in.cg", "out"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert (tmp_path / "out").read_bytes() == data
    assert not os.path.exists(partial_path(str(tmp_path / "out")))


def _sealed_in_process(data, key):
    from ciphergrid.formats import cobblestone as cb

    return cb.encrypt(data, key, b"", device="native")


def test_a_tampered_chunk_fails_every_rank_with_9_and_leaves_nothing(tmp_path):
    """A chunk that does not verify is the input's fault: not dealt again to another worker
    (that would fail too), but the job's end: 9 on every rank, one line, nothing left."""
    data, key = _sealed_files(tmp_path, 6 * RANGE, 41)
    sealed = bytearray(_sealed_in_process(data, key))
    sealed[56 + 16400 * 9 + 100] ^= 1   # (chunk 9: the third range)
    (tmp_path / "in.cg").write_bytes(sealed)
    r, codes = _mpi_each(3, tmp_path, "open", "--key-file", str(tmp_path / "k"),
                         *_sealed_args(tmp_path, "in.cg", "out"))
    err = r.stderr.decode()
    assert codes == [9, 9, 9] and r.returncode == 9, err[-3000:]
    assert err.count("\n") == 1 and "chunk 9 does not verify" in err, err
    assert _nothing_left(tmp_path, "out")


@pytest.mark.parametrize("case,code", [("key", 8), ("cut", 10)])
def test_a_wrong_key_or_a_truncated_file_fails_every_rank(tmp_path, case, code):
    data, key = _sealed_files(tmp_path, 2 * RANGE, 42)
    sealed = _sealed_in_process(data, key)
    if case == "key":
        (tmp_path / "k").write_text(bytes(16).hex())
    else:
        sealed = sealed[:56 + 16400 * 4]   # (at a chunk boundary: the final chunk is gone)
    (tmp_path / "in.cg").write_bytes(sealed)
    r, codes = _mpi_each(2, tmp_path, "open", "--key-file", str(tmp_path / "k"),
                         *_sealed_args(tmp_path, "in.cg", "out"))
    err = r.stderr.decode()
    assert codes == [code, code] and r.returncode == code, err[-3000:]
    assert err.count("\n") == 1 and ("commitment" if case == "key" else "truncated") in err, err
    assert _nothing_left(tmp_path, "out")


def test_a_passphrase_both_ways(tmp_path):
    """--pass: Argon2id on rank 0 only (small costs); the sealed file opens in one process and
    over ranks; a wrong passphrase: 8."""
    data, _ = _sealed_files(tmp_path, 3 * RANGE + 5, 43)
    costs = ["--argon2-memory", "64Ki", "--argon2-iterations", "1", "--argon2-lanes", "1"]
    env = {"CG_TEST_PASS": "correct horse"}
    r = _mpi(3, "seal", "--pass", "env:CG_TEST_PASS", *costs, *_sealed_args(tmp_path, "in", "in.cg"),
             env=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    p = subprocess.run([sys.executable, "-m", "ciphergrid", "open", "--pass", "env:CG_TEST_PASS", "--in",
                        str(tmp_path / "in.cg"), "--out", str(tmp_path / "back"), "--service", "off", "-q"],
                       capture_output=True, timeout=60, env={**os.environ, **env})
    assert p.returncode == 0 and (tmp_path / "back").read_bytes() == data, p.stderr.decode()
    r = _mpi(2, "open", "--pass", "env:CG_TEST_PASS", *_sealed_args(tmp_path, "in.cg", "out"), env=env,
             timeout=60)
    assert r.returncode == 0 and (tmp_path / "out").read_bytes() == data, r.stderr.decode()[-3000:]
    r = _mpi(2, "open", "--pass", "env:CG_TEST_PASS", *_sealed_args(tmp_path, "in.cg", "out2"),
             env={"CG_TEST_PASS": "wrong"}, timeout=60)
    assert r.returncode == 8 and _nothing_left(tmp_path, "out2"), r.stderr.decode()[-3000:]


def test_sealed_mpi_refuses_a_range_and_a_stream_in_one_line(tmp_path):
    data, key = _sealed_files(tmp_path, 1000, 44)
    (tmp_path / "in.cg").write_bytes(_sealed_in_process(data, key))
    r = _mpi(2, "open", "--key-file", str(tmp_path / "k"), "--offset", "5",
             *_sealed_args(tmp_path, "in.cg", "out"), timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "--offset" in err, err
    r = _mpi(2, "seal", "--key-file", str(tmp_path / "k"), "--in", str(tmp_path / "in"), "--mpi", "-q",
             timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "regular --out" in err and not r.stdout, err


def test_a_failing_worker_of_a_sealed_job_costs_rework_not_bytes(tmp_path):
    """A worker's own failure (not a chunk's) under seal --mpi: its range goes to the other
    worker, the sealed file is whole (it opens to the input) and a warning says so."""
    data, key = _sealed_files(tmp_path, 5 * RANGE + 9, 45)
    r = _mpi(3, "seal", "--key-file", str(tmp_path / "k"), *_sealed_args(tmp_path, "in", "in.cg"),
             env={"CIPHERGRID_FAULT": "mpi:1:fail:0"}, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert b"rank 1" in r.stderr and b"run again" in r.stderr
    from ciphergrid.formats import cobblestone as cb

    assert cb.decrypt((tmp_path / "in.cg").read_bytes(), key, b"", device="native") == data
