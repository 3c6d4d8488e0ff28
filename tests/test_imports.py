"""No import cycles in ciphergrid (scripts/dev/import_check.py): none in the static graph of every
import statement (deferred ones included), none taken at import time, no module left partially
initialised, whichever module is imported first.  The start-up of the command line's file paths:
what they import, the parser they build, the process's end."""

from __future__ import annotations

import os
import subprocess
import sys

import ciphergrid

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ciphergrid.__file__)))


def test_no_import_cycles():
    p = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "scripts", "dev", "import_check.py")],
                       capture_output=True, text=True, timeout=300, cwd=PKG_ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no import cycles" in p.stdout


def test_transfer_layer_reads_no_environment():
    """The transfer layer takes its options as objects; only ciphergrid.settings reads them."""
    base = os.path.join(PKG_ROOT, "ciphergrid", "transfer")
    for f in sorted(os.listdir(base)):
        if f.endswith(".py"):
            text = open(os.path.join(base, f), encoding="utf-8").read()
            assert "os.environ" not in text and "getenv" not in text, f


def test_lazy_package_names():
    """``import ciphergrid`` imports no numpy; its public names and submodules load on first use;
    ``ciphergrid.devices`` stays the function after the submodule of that name is imported."""
    code = ("import sys, ciphergrid\n"
            "assert 'numpy' not in sys.modules\n"
            "assert ciphergrid.registry.lookup('aes-128-ctr').name == 'aes-128-ctr'\n"
            "import ciphergrid.devices, ciphergrid.route\n"
            "assert callable(ciphergrid.devices) and ciphergrid.devices()\n"
            "assert ciphergrid.encrypt(b'x' * 16, 'aes-128-ecb', bytes(16), device='native')\n"
            "try:\n    ciphergrid.no_such_name\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no AttributeError')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_icd_vendors_folder_made_once_and_reused(tmp_path, monkeypatch):
    """backends/icd.py: where NVIDIA's OpenCL library is present but unregistered, the vendors
    folder (the system's entries + the missing one) is made once in the cache folder and reused
    by later processes without loading the library again; no GPU node: nothing made."""
    from ciphergrid.backends import icd

    system = tmp_path / "vendors"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(system))
    monkeypatch.setenv("CIPHERGRID_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CIPHERGRID_NO_ICD_FIXUP", raising=False)
    monkeypatch.setattr(icd, "SYSTEM_VENDORS", str(tmp_path / "no-system-vendors"))
    monkeypatch.setattr(icd, "_done", False)
    monkeypatch.setattr(icd, "_nvidia_present", lambda: False)
    assert icd.prepare() == str(system) and not (tmp_path / "cache").exists()

    loads = []
    monkeypatch.setattr(icd, "_nvidia_present", lambda: True)
    monkeypatch.setattr(icd, "_loadable", lambda lib: loads.append(lib) or True)
    folders = []
    for _ in range(2):   # (two processes: the second finds the folder)
        monkeypatch.setattr(icd, "_done", False)
        monkeypatch.setenv("OCL_ICD_VENDORS", str(system))
        folders.append(icd.prepare())
    assert folders[0] == folders[1] and loads == ["libnvidia-opencl.so.1"]
    made = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert made == [os.path.basename(folders[0])]           # no temporary folder left behind
    assert sorted(os.listdir(folders[0])) == ["nvidia.icd", "pocl.icd"]
    assert open(os.path.join(folders[0], "nvidia.icd")).read() == "libnvidia-opencl.so.1\n"
    assert os.environ["OCL_ICD_VENDORS"] == folders[0]


def test_icd_prepared_at_the_first_pyopencl_import(tmp_path):
    """``import ciphergrid`` reads no vendors folder (backends/icd.py is not imported); the first
    import of pyopencl after it prepares the ICD loader's drivers before pyopencl's own code runs
    (here a stand-in pyopencl that says whether they were); where pyopencl came first, at once."""
    (tmp_path / "pyopencl.py").write_text(
        "import sys\nICD = sys.modules['ciphergrid.backends.icd']._done\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), PKG_ROOT]))
    env.pop("CIPHERGRID_NO_ICD_FIXUP", None)
    after = ("import sys, ciphergrid\nassert 'ciphergrid.backends.icd' not in sys.modules\n"
             "import pyopencl\nassert pyopencl.ICD is True\n")
    before = ("import sys\nsys.modules['pyopencl'] = type(sys)('pyopencl')\nimport ciphergrid\n"
              "assert sys.modules['ciphergrid.backends.icd']._done is True\n")
    for code in (after, before):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr


def test_failed_tag_classes_made_at_first_use():
    """``import ciphergrid`` (and its errors module) imports no ``cryptography.exceptions``: the
    failed-tag classes (errors.TAG_ERRORS) are made at the first use of any, one set under
    every name the package gives them, each still pyca's InvalidTag, pickled by name."""
    code = ("import pickle, sys\nimport ciphergrid, ciphergrid.errors as errors\n"
            "assert 'cryptography.exceptions' not in sys.modules\n"
            "from ciphergrid.errors import ChunkFailed\n"
            "from ciphergrid.formats import cobblestone as cb\n"
            "import ciphergrid.cobblestone as public\nimport cryptography.exceptions as pyca\n"
            "assert ciphergrid.InvalidTag is errors.InvalidTag is cb.InvalidTag\n"
            "assert cb.ChunkFailed is public.ChunkFailed is ChunkFailed\n"
            "assert cb.Truncated is public.Truncated and public.CommitmentMismatch is "
            "errors.CommitmentMismatch\n"
            "for c in errors.TAG_ERRORS:\n"
            "    cls = getattr(errors, c)\n"
            "    assert issubclass(cls, (errors.Error, pyca.InvalidTag)) and cls.__qualname__ == c\n"
            "e = pickle.loads(pickle.dumps(ChunkFailed('chunk 3 failed', 3)))\n"
            "assert type(e) is ChunkFailed and e.chunk == 3 and str(e) == 'chunk 3 failed'\n"
            "for mod in (errors, cb):\n"
            "    try:\n        mod.NoSuchError\n    except AttributeError as x:\n"
            "        assert mod.__name__ in str(x)\n"
            "    else:\n        raise SystemExit('no AttributeError')\n")
    r = _run_py(code)
    assert r.returncode == 0, r.stderr.decode()


def _run_py(code: str, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          timeout=120, cwd=cwd)


def _sealed_file(tmp_path):
    """A key file and a small file sealed by pyca (context: empty)."""
    from cryptography.cobblestone import Cobblestone128Encryptor

    key = bytes(range(16))
    (tmp_path / "k").write_text(key.hex() + "\n")
    c = Cobblestone128Encryptor(key, b"")
    (tmp_path / "m.cg").write_bytes(c.update(b"sealed text") + c.finalize())
    return tmp_path / "k", tmp_path / "m.cg"


def test_open_path_imports_only_what_it_runs(tmp_path):
    """`ciphergrid open` of a sealed file through OpenSSL imports no numpy, no block modes, no
    cipher module, no AEAD batch path and none of the OpenSSL engine's block-mode modules (its
    one context setup, contexts.py, is the chunks' too); the engine package still gives its names
    on first use."""
    key, sealed = _sealed_file(tmp_path)
    code = ("import sys\nfrom ciphergrid.cli import main\n"
            "assert main(['open', '--key-file', sys.argv[1], '--context', '', '--in', sys.argv[2], "
            "'--out', sys.argv[3], '--no-sync', '-q', '-d', 'native']) == 0\n"
            "bad = sorted(m for m in sys.modules if m == 'numpy' or m.startswith(("
            "'ciphergrid.modes', 'ciphergrid.algorithms', 'ciphergrid.aeads', 'ciphergrid.api', "
            "'ciphergrid.route', 'ciphergrid.bench', 'ciphergrid.engines.openssl.bulk', "
            "'ciphergrid.engines.openssl.xts')))\n"
            "assert not bad, bad\n"
            "from ciphergrid.engines import openssl\n"
            "assert openssl.crypt('aes-128-ecb', bytes(16), None, bytes(16), True) == "
            "bytes.fromhex('66e94bd4ef8a2c3b884cfa59ca342b2e')\n"
            "assert openssl.BACKEND_NAME in ('libcrypto', 'cryptography') and 'run' in dir(openssl)\n")
    r = _run_py(code, key, sealed, tmp_path / "out")
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "out").read_bytes() == b"sealed text"


def test_parser_builds_only_the_chosen_command():
    """A command's start-up builds its own parser only; with no command (or --help before it)
    every command's, and the chosen parser reads its arguments as the full parser does."""
    import argparse

    from ciphergrid.cli.parser import COMMANDS, build_parser

    def commands(ap):
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
        return sorted(sub.choices)

    argv = ["open", "--key-file", "k", "--context", "c", "--in", "x", "--no-sync", "-q"]
    assert commands(build_parser(argv)) == ["open"]
    assert commands(build_parser(["--bogus", "seal"])) == ["seal"]
    for every in ([], ["--help", "open"], ["-h"], ["--vers"], ["no-such-command", "open"], None):
        assert commands(build_parser(every)) == sorted(COMMANDS), every
    assert build_parser(argv).parse_args(argv) == build_parser([]).parse_args(argv)
    crypt = ["encrypt", "-c", "aes-128-ctr", "--key-file", "k", "--iv", "00", "--in", "x"]
    assert build_parser(crypt).parse_args(crypt) == build_parser([]).parse_args(crypt)


_TEARDOWN = ("import sys, atexit\nimport ciphergrid.cli as cli\n"
             "class Teardown:\n    def __del__(self):\n        print('teardown', flush=True)\n"
             "cli._probe = Teardown()\n"
             "atexit.register(lambda: print('atexit', flush=True))\n"
             "sys.argv = ['ciphergrid', *sys.argv[1:]]\ncli.console()\n")


def test_file_command_ends_without_teardown(tmp_path):
    """A file command's process ends once its output is flushed and the exit functions ran,
    without the interpreter's teardown, with the command's exit code; other commands end as
    before."""
    key, sealed = _sealed_file(tmp_path)
    args = ["open", "--key-file", key, "--context", "", "--in", sealed, "-q", "-d", "native"]
    r = _run_py(_TEARDOWN, *args)          # (the plaintext to stdout, a pipe)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"sealed textatexit\n"
    args[args.index("--context") + 1] = "other"
    r = _run_py(_TEARDOWN, *args)          # a wrong context: its exit code, the error said
    assert r.returncode == 8 and b"key commitment" in r.stderr and r.stdout == b"atexit\n"
    r = _run_py(_TEARDOWN, "list")
    assert r.returncode == 0 and r.stdout.endswith(b"atexit\nteardown\n"), r.stdout[-200:]
    code = ("from ciphergrid.cli import _ends_at_once as e\n"
            "assert e(['seal', '--in', 'x']) and e(['-q', 'encrypt'])\n"
            "for a in (['open', '--mpi'], ['encrypt', '--mpi-send'], ['list'], ['--help', 'open'], []):\n"
            "    assert not e(a), a\n")
    r = _run_py(code)
    assert r.returncode == 0, r.stderr.decode()


def test_a_failing_icd_preparation_does_not_fail_the_import_of_pyopencl(monkeypatch):
    """The package's meta path finder prepares the ICD drivers at pyopencl's first import as a
    help only: where that fails (an unwritable cache folder), pyopencl's import goes on."""
    from ciphergrid.backends import icd

    def fails():
        raise PermissionError(13, "Permission denied", "/cache/icd")

    monkeypatch.setattr(icd, "prepare", fails)
    assert ciphergrid._BeforeOpenCL.find_spec("pyopencl") is None
    assert ciphergrid._BeforeOpenCL.find_spec("numpy") is None


def test_a_second_caller_of_the_icd_preparation_waits_for_the_first(monkeypatch):
    """Two threads preparing the ICD drivers at once (one importing pyopencl, one through the
    OpenCL backend): the second returns only once the first has set the driver list, so its
    OpenCL calls come after it."""
    import threading

    from ciphergrid.backends import icd

    monkeypatch.delenv("CIPHERGRID_NO_ICD_FIXUP", raising=False)
    monkeypatch.setattr(icd, "_done", False)
    started, go, order = threading.Event(), threading.Event(), []

    def slow_probe():
        started.set()
        go.wait(10)
        order.append("first prepared")
        return False

    monkeypatch.setattr(icd, "_nvidia_present", slow_probe)
    first = threading.Thread(target=icd.prepare)
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: (icd.prepare(), order.append("second returned")))
    second.start()
    second.join(0.2)
    go.set()
    first.join(10)
    second.join(10)
    assert order == ["first prepared", "second returned"] and icd._done is True
