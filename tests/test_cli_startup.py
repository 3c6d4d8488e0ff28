"""The command line's start-up (issue 49): what the program's start-up imported is frozen out
of the cyclic collector's passes (``gc.freeze`` in ``console``), so that a file command's
collections look only at what the command makes."""
from __future__ import annotations

import os
import subprocess
import sys


def test_console_freezes_what_start_up_imported(tmp_path):
    key = os.urandom(16)
    (tmp_path / "k").write_text(key.hex() + "\n")
    (tmp_path / "m").write_bytes(b"x" * 100)
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count()))\n"
            "from ciphergrid import cli\n"
            "sys.argv = ['ciphergrid', *sys.argv[1:]]\ncli.console()\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    env.pop("CIPHERGRID_SERVICE", None)
    r = subprocess.run([sys.executable, "-c", code, "seal", "--key-file", str(tmp_path / "k"),
                        "--in", str(tmp_path / "m"), "--out", str(tmp_path / "m.cg"), "-q"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    frozen = int(r.stdout.split("frozen")[1])
    assert frozen > 1000   # (every module's objects: thousands)
    assert (tmp_path / "m.cg").stat().st_size == 100 + 56 + 16
