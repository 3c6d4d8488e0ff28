"""The command line's start-up (issue 49): what the program's start-up imported is frozen out
of the cyclic collector's passes (``gc.freeze`` in ``console``), so that a file command's
collections look only at what the command makes, and a file command's youngest generation is
collected every cli.FILE_GC_YOUNG allocations."""
from __future__ import annotations

import os
import subprocess
import sys

from ciphergrid import cli


def test_console_freezes_what_start_up_imported(tmp_path):
    key = os.urandom(16)
    (tmp_path / "k").write_text(key.hex() + "\n")
    (tmp_path / "m").write_bytes(b"x" * 100)
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count(), "
            "'young', gc.get_threshold()[0]))\n"
            "from ciphergrid import cli\n"
            "sys.argv = ['ciphergrid', *sys.argv[1:]]\ncli.console()\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    env.pop("CIPHERGRID_SERVICE", None)
    r = subprocess.run([sys.executable, "-c", code, "seal", "--key-file", str(tmp_path / "k"),
                        "--in", str(tmp_path / "m"), "--out", str(tmp_path / "m.cg"), "-q"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    frozen = int(r.stdout.split("frozen")[1].split()[0])
    assert frozen > 1000   # (every module's objects: thousands)
    assert int(r.stdout.split("young")[1]) == cli.FILE_GC_YOUNG
    assert (tmp_path / "m.cg").stat().st_size == 100 + 56 + 16


def test_other_commands_keep_the_collectors_thresholds():
    """`ciphergrid list` (not a file command) runs under the collector's usual thresholds."""
    code = ("import atexit, gc, sys\nbefore = gc.get_threshold()\n"
            "atexit.register(lambda: print('same', gc.get_threshold() == before))\n"
            "from ciphergrid import cli\nsys.argv = ['ciphergrid', 'list']\ncli.console()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("same")[1].split() == ["True"]
