"""Defects a new user met following the README, each checked where it was fixed."""

from __future__ import annotations

import types

import pytest

from ciphergrid import fileio
from ciphergrid.cli import seal as cli_seal


def _said(capsys, tmp_path, verb: str, through: bool = False, size: int = 100) -> str:
    src_path = tmp_path / "in"
    src_path.write_bytes(b"x" * size)
    args = types.SimpleNamespace(verbose=True)
    where = ("the-device", False, "")
    src = fileio.Input(str(src_path))
    try:
        with fileio.Output("/dev/null" if through else str(tmp_path / "out")) as out:
            cli_seal._say_where(args, _Scheme(), verb, where, src, out)
    finally:
        src.f.close()
    return capsys.readouterr().err


class _Scheme:
    name = "cobblestone-128"


def test_seal_v_says_one_batch_between_regular_files(capsys, tmp_path, monkeypatch):
    """seal/open -v on a device said "AEAD batches of 64 MiB" where the whole message runs as
    one batch over the mapped files (transfer.sealed.mapped); a stream keeps the pieces."""
    monkeypatch.delenv("CIPHERGRID_STREAM_MMAP", raising=False)
    for verb in ("seal", "open"):
        line = _said(capsys, tmp_path, verb)
        assert line == (f"ciphergrid: cobblestone-128 {verb} on the-device (the whole message "
                        "one AEAD batch over the mapped files)\n")
    line = _said(capsys, tmp_path, "seal", through=True)
    assert line == "ciphergrid: cobblestone-128 seal on the-device (AEAD batches of 64 MiB)\n"
    monkeypatch.setenv("CIPHERGRID_STREAM_MMAP", "0")
    line = _said(capsys, tmp_path, "open")
    assert line == "ciphergrid: cobblestone-128 open on the-device (AEAD batches of 64 MiB)\n"


def test_a_keygen_aes256_key_without_aes256_is_named(capsys, tmp_path):
    """seal/open with a key of the other Cobblestone's size said only "cobblestone-128 takes a
    16-byte key ... got 64 hex digits"; the error now names the flag (exit 2, no output)."""
    from ciphergrid.cli import main

    k256, k128 = tmp_path / "k256", tmp_path / "k128"
    assert main(["keygen", "--aes256", "--out", str(k256)]) == 0
    assert main(["keygen", "--out", str(k128)]) == 0
    (tmp_path / "in").write_bytes(b"data")
    capsys.readouterr()
    out = tmp_path / "out.cg"
    for verb, key, flags, said in (("seal", k256, [], "that is a cobblestone-256 key: give --aes256"),
                                   ("seal", k128, ["--aes256"],
                                    "that is a cobblestone-128 key: leave out --aes256")):
        assert main([verb, "--key-file", str(key), *flags, "--in", str(tmp_path / "in"),
                     "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.rstrip().endswith(said), err
        assert key.read_text().strip() not in err
        assert not out.exists()
    assert main(["seal", "--aes256", "--key-file", str(k256), "--in", str(tmp_path / "in"),
                 "--out", str(out)]) == 0
    assert main(["open", "--key-file", str(k256), "--in", str(out), "--out",
                 str(tmp_path / "back")]) == 2
    assert capsys.readouterr().err.rstrip().endswith("give --aes256")
    assert not (tmp_path / "back").exists()


def test_open_length_below_zero_is_a_usage_error(capsys, tmp_path):
    """open --length -3 said "the range [5, 2) is not within the message's N bytes"; argparse
    now names the option (exit 2, one line, nothing written)."""
    from ciphergrid.cli import main

    k = tmp_path / "k"
    assert main(["keygen", "--out", str(k)]) == 0
    (tmp_path / "in").write_bytes(bytes(range(200)))
    assert main(["seal", "--key-file", str(k), "--in", str(tmp_path / "in"),
                 "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    out = tmp_path / "part"
    opened = ["open", "--key-file", str(k), "--in", str(tmp_path / "s"), "--offset", "5"]
    with pytest.raises(SystemExit) as stop:   # (argparse's usage error)
        main([*opened, "--length", "-3", "--out", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --length: give a whole number of bytes" in err, err
    assert not out.exists()
    assert main([*opened, "--length", "3", "--out", str(out)]) == 0
    assert out.read_bytes() == bytes(range(5, 8))


def test_mpi_with_a_service_socket_is_refused(tmp_path):
    """``mpiexec ... --mpi --service PATH`` ran the job on the ranks and ignored the socket
    (exit 0, even where no service answers); it is now one line from rank 0, exit 2 on every
    rank, no output -- for encrypt and for seal."""
    import os
    import shutil
    import signal
    import subprocess
    import sys

    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                           + os.environ.get("PATH", ""))
    if mpiexec is None:
        pytest.skip("no mpiexec")
    (tmp_path / "in").write_bytes(b"x" * 100)
    (tmp_path / "k").write_text("00" * 16)
    sock = str(tmp_path / "no-service.sock")
    for args in (["encrypt", "-c", "aes-128-ctr", "--iv", "00" * 16],
                 ["seal"]):
        out = tmp_path / f"out-{args[0]}"
        with subprocess.Popen([mpiexec, "-n", "2", sys.executable, "-m", "ciphergrid", *args,
                               "--key-file", str(tmp_path / "k"), "--in", str(tmp_path / "in"),
                               "--out", str(out), "--mpi", "--service", sock],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) as p:
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                raise
        assert p.returncode == 2, err
        assert err.count(b"error:") == 1 and b"leave out --service" in err, err
        assert sorted(f.name for f in tmp_path.iterdir()) == ["in", "k"]


def test_bench_seal_finds_the_environments_mpiexec(monkeypatch):
    """`ciphergrid bench seal` from a venv that was not activated skipped its MPI rows ("mpiexec
    not on PATH") while the mpi extra's mpiexec lay beside its Python, which `bench mpi` uses."""
    import os
    import sys

    from ciphergrid.bench import seal as bench_seal

    if not os.access(os.path.join(os.path.dirname(sys.executable), "mpiexec"), os.X_OK):
        pytest.skip("no mpiexec beside this Python (pip install 'ciphergrid[mpi]')")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert bench_seal.mpi_support() is None
