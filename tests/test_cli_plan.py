"""The command line runs what route plans (issues 47, 49): one encrypt/decrypt path for block
ciphers and AEADs, the file's path (stream or context) decided by route.route_file rather
than the command, seal/open through a service on the remote engine's sealed-file entry, and `open`'s
start-up importing only what it runs.

Native engine (OpenSSL), inputs of a few KiB; the service is a thread of this process."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ciphergrid.testing import services
from conftest import cli_main as _main, record_first_args

PKG = Path(__file__).resolve().parent.parent / "ciphergrid"
K = 16384


@pytest.fixture
def folder():
    with services.short_folder("cg-plan-") as d:
        yield Path(d)


# ------------------------------------------------------------------------------------ open's start-up
def test_open_imports_only_what_it_runs(folder):
    """`ciphergrid open` of a sealed file, with no service answering (auto): no numpy, no
    OpenCL, no dataclasses (nor what they import), no hmac/hashlib, no terminal handling
    (getpass: a key file's), no registry, route or service modules -- and the plaintext is
    right."""
    key = os.urandom(16)
    (folder / "k").write_text(key.hex() + "\n")
    msg = os.urandom(3 * K + 7)
    (folder / "m").write_bytes(msg)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(folder))   # (no per-user service there)
    env.pop("CIPHERGRID_SERVICE", None)
    seal = subprocess.run([sys.executable, "-m", "ciphergrid", "seal", "--key-file", folder / "k",
                           "--in", folder / "m", "--out", folder / "m.cg", "--no-sync", "-q"],
                          capture_output=True, timeout=60, env=env)
    assert seal.returncode == 0, seal.stderr.decode()
    code = ("import sys\nfrom ciphergrid.cli import main\n"
            "assert main(['open', '--key-file', sys.argv[1], '--in', sys.argv[2], '--out', "
            "sys.argv[3], '--no-sync', '-q']) == 0\n"
            "bad = sorted(m for m in sys.modules if m in ('numpy', 'pyopencl', 'cupy', "
            "'dataclasses', 'inspect', 'hmac', 'hashlib', 'getpass', 'termios', 'ciphergrid.registry', "
            "'ciphergrid.route', 'ciphergrid.plan', 'ciphergrid.engines.remote') "
            "or m.startswith('ciphergrid.service'))\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code, str(folder / "k"), str(folder / "m.cg"),
                        str(folder / "back")], capture_output=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr.decode()[-800:]
    assert (folder / "back").read_bytes() == msg


def test_one_core_open_imports_no_openssl_engine_where_pycas_decryptor_runs_it(folder):
    """`ciphergrid open` on one core, where pyca's OpenSSL is the later release (its Cobblestone
    decryptor opens the chunks): neither the OpenSSL engine nor pyca's cipher classes are
    imported (the release check alone is made), nor the runtime (the workers counted from the
    usable cores, as the default runtime counts them) -- and the plaintext is
    right, for an empty message and one of a few chunks."""
    key = os.urandom(16)
    (folder / "k").write_text(key.hex() + "\n")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(folder))   # (no per-user service there)
    env.pop("CIPHERGRID_SERVICE", None)
    env.pop("CIPHERGRID_HOST_THREADS", None)
    code = ("import os, sys\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from ciphergrid.cli import main\n"
            "assert main(['open', '--key-file', sys.argv[1], '--in', sys.argv[2], '--out', "
            "sys.argv[3], '--no-sync', '-q']) == 0\n"
            "from ciphergrid._libcrypto import pyca_newer\n"
            "bad = sorted(m for m in sys.modules if m in ('ciphergrid.engines.openssl', "
            "'ciphergrid.engines.openssl.libcrypto', 'ciphergrid.engines.openssl.aead', "
            "'ciphergrid.engines.openssl.contexts', 'cryptography.hazmat.primitives.ciphers', "
            "'ciphergrid.runtime'))\n"
            "assert not (pyca_newer() and bad), bad\n"
            "from ciphergrid.transfer import sealed\n"
            "assert sealed.cores() == 1\n"
            "import ciphergrid.runtime\n"
            "assert sealed.cores() == 1 == ciphergrid.runtime.current().threads.budget\n")
    for n in (0, 3 * K + 7):
        msg = os.urandom(n)
        (folder / "m").write_bytes(msg)
        seal = subprocess.run([sys.executable, "-m", "ciphergrid", "seal", "--key-file", folder / "k",
                               "--in", folder / "m", "--out", folder / "m.cg", "--no-sync", "-q"],
                              capture_output=True, timeout=60, env=env)
        assert seal.returncode == 0, seal.stderr.decode()
        r = subprocess.run([sys.executable, "-c", code, str(folder / "k"), str(folder / "m.cg"),
                            str(folder / "back")], capture_output=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr.decode()[-800:]
        assert (folder / "back").read_bytes() == msg


# ------------------------------------------------------------------------------------ the file's path
def test_file_route_decides_stream_or_context():
    """A file of known size streams; base64 text around the bytes, or a pipe (unknown size)
    under a block limit, goes through a context routed for one piece; a pipe without such a
    limit streams."""
    from ciphergrid.route import FILE_PIECE as PIECE, route_file
    from ciphergrid.request import make_request
    from ciphergrid.registry import lookup

    ctr = make_request(lookup("aes-128-ctr"), bytes(16), bytes(16), True)
    p = route_file(ctr, "native", 5000)
    assert (p.path, p.nbytes, p.engine.kind) == ("stream", 5000, "openssl")
    assert route_file(ctr, "native", None).path == "stream"
    framed = route_file(ctr, "native", 5000, framed=True)
    assert (framed.path, framed.nbytes) == ("array", 5000)
    assert route_file(ctr, "native", None, framed=True).nbytes == PIECE
    weak = make_request(lookup("cast5-ecb"), bytes(16), None, True)
    assert weak.limit_refuses and route_file(weak, "native", None).path == "array"
    assert route_file(weak, "native", 4096).path == "stream"


def test_block_and_aead_commands_share_one_path(folder, capfd):
    """encrypt/decrypt of a block cipher and of an AEAD run through cli.crypt's one path: -v
    says the plan's engine for both, and the bytes equal the library's."""
    import ciphergrid

    key = os.urandom(16)
    (folder / "k").write_text(key.hex())
    msg = os.urandom(5000)
    (folder / "m").write_bytes(msg)
    iv, nonce = os.urandom(16), os.urandom(12)
    for cipher, extra, want in (
            ("aes-128-ctr", ["--iv", iv.hex()],
             ciphergrid.encrypt(msg, "aes-128-ctr", key=key, iv=iv, device="native")),
            ("aes-128-gcm", ["--nonce", nonce.hex()],
             ciphergrid.encrypt(msg, "aes-128-gcm", key=key, nonce=nonce, device="native"))):
        assert _main("encrypt", "-c", cipher, "--key-file", folder / "k", *extra, "--in",
                     folder / "m", "--out", folder / "e", "-d", "native", "-v", "-q",
                     "--service", "off") == 0
        err = capfd.readouterr().err
        assert f"ciphergrid: {cipher} encrypt on native" in err, err
        assert (folder / "e").read_bytes() == want
        assert _main("decrypt", "-c", cipher, "--key-file", folder / "k", *extra, "--in",
                     folder / "e", "--out", folder / "d", "-d", "native", "-q",
                     "--service", "off") == 0
        assert (folder / "d").read_bytes() == msg
    from ciphergrid.cli import aead, crypt

    assert not hasattr(aead, "cmd_aead") and hasattr(crypt, "Blocks")


def test_an_aead_message_is_one_request_routed_once(folder, monkeypatch):
    """The AEAD job routed a sizes-only request and then built the full one it ran: now one
    request (key, nonce, AAD) is routed once and is the one the plan runs, encrypting and
    decrypting."""
    import ciphergrid
    from ciphergrid import aead, route

    key, nonce, msg = os.urandom(16), os.urandom(12), os.urandom(3000)
    want = ciphergrid.encrypt(msg, "aes-128-gcm", key=key, nonce=nonce,
                              aad=bytes.fromhex("abcd"), device="native")
    routed = record_first_args(monkeypatch, route, "route")
    ran = record_first_args(monkeypatch, aead, "crypt")
    (folder / "k").write_text(key.hex())
    (folder / "m").write_bytes(msg)
    common = ["-c", "aes-128-gcm", "--key-file", folder / "k", "--nonce", nonce.hex(), "--aad",
              "abcd", "-d", "native", "-q", "--service", "off"]
    assert _main("encrypt", *common, "--in", folder / "m", "--out", folder / "e") == 0
    assert _main("decrypt", *common, "--in", folder / "e", "--out", folder / "d") == 0
    assert (folder / "e").read_bytes() == want
    assert (folder / "d").read_bytes() == msg
    assert len(routed) == len(ran) == 2
    assert all(r is c for r, c in zip(routed, ran))
    assert [(r.encrypt, r.key, r.nonce, r.aad) for r in routed] == [
        (True, key, nonce, b"\xab\xcd"), (False, key, nonce, b"\xab\xcd")]


def test_keys_are_read_once_for_both_kinds(folder, capfd):
    """The key options of a block cipher and of an AEAD go through one reader: no key is exit 2
    naming the ways each takes; --key warns (never showing the key) and works for both."""
    (folder / "m").write_bytes(b"x" * 32)
    nonce = "00" * 12
    common = ["--in", folder / "m", "--out", folder / "o", "-q", "--service", "off", "-d", "native"]
    assert _main("encrypt", "-c", "aes-128-ctr", "--iv", "00" * 16, *common) == 2
    assert "no key: give --key-file PATH, --key HEX, or --pbkdf2 --pass SOURCE" in \
        capfd.readouterr().err
    assert _main("encrypt", "-c", "aes-128-gcm", "--nonce", nonce, *common) == 2
    assert "no key: give --key-file PATH or --key HEX\n" in capfd.readouterr().err
    key = "ab" * 16
    for cipher, extra in (("aes-128-ctr", ["--iv", "00" * 16]), ("aes-128-gcm", ["--nonce", nonce])):
        assert _main("encrypt", "-c", cipher, "--key", key, *extra, *common) == 0
        err = capfd.readouterr().err
        assert "--key puts the key on the command line" in err and key not in err


# ------------------------------------------------------------------------------------ seal/open served
def _imports(rel: str) -> list[str]:
    tree = ast.parse((PKG / rel).read_text())
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            found.append(("." * n.level) + (n.module or ""))
        elif isinstance(n, ast.Import):
            found += [a.name for a in n.names]
    return found


def test_commands_reach_the_service_through_the_remote_engine():
    """No command module imports the service's package: encrypt, decrypt, seal and open reach
    a service through route's plan on the remote engine."""
    for rel in ("cli/crypt.py", "cli/aead.py", "cli/seal.py", "cli/common.py"):
        bad = [m for m in _imports(rel) if m.lstrip(".").startswith("service")
               or m.startswith("ciphergrid.service")]
        assert bad == [], (rel, bad)


def test_seal_and_open_through_the_remote_engines_sealed_entry(folder, capfd, monkeypatch):
    """seal/open --service run on the plan's remote engine (its sealed-file entry, counted
    here): the bytes open in this process, -v names the service, and a wrong context is exit
    8 with nothing written."""
    from ciphergrid.engines import remote

    calls = []
    real = remote.RemoteEngine.sealed_file

    def counted(self, seal, *a, **kw):
        calls.append(seal)
        return real(self, seal, *a, **kw)

    monkeypatch.setattr(remote.RemoteEngine, "sealed_file", counted)
    key = os.urandom(16)
    (folder / "k").write_text(key.hex())
    msg = os.urandom(2 * K + 3)
    (folder / "m").write_bytes(msg)
    with services.threaded(str(folder)) as s:
        svc = ["--service", s.address]
        assert _main("seal", "--key-file", folder / "k", "--context", "c", "--in", folder / "m",
                     "--out", folder / "m.cg", "-q", "-v", *svc) == 0
        err = capfd.readouterr().err
        assert "cobblestone-128 seal on " in err and f"by the service at {s.address}" in err
        assert _main("open", "--key-file", folder / "k", "--context", "c", "--in",
                     folder / "m.cg", "--out", folder / "back", "-q", "--service", "off") == 0
        assert (folder / "back").read_bytes() == msg
        assert _main("open", "--key-file", folder / "k", "--context", "c", "--in",
                     folder / "m.cg", "--out", folder / "back2", "-q", *svc) == 0
        assert (folder / "back2").read_bytes() == msg
        assert _main("open", "--key-file", folder / "k", "--context", "d", "--in",
                     folder / "m.cg", "--out", folder / "back3", "-q", *svc) == 8
        assert not (folder / "back3").exists()
    assert calls == [True, False]


def test_a_contexts_pieces_run_on_the_plans_device(folder, capfd, monkeypatch):
    """base64 (a context, not a stream): the pieces run on the device the plan names (what -v
    says), not on a device chosen again per piece; the text equals openssl enc -a's framing of
    the library's bytes."""
    import base64

    import ciphergrid
    from ciphergrid import api

    asked = []
    real = api.route

    def recorded(req, device="auto", *a, **kw):
        asked.append(device)
        return real(req, device, *a, **kw)

    monkeypatch.setattr(api, "route", recorded)
    key, iv = os.urandom(16), os.urandom(16)
    (folder / "k").write_text(key.hex())
    msg = os.urandom(3000)
    (folder / "m").write_bytes(msg)
    assert _main("encrypt", "-c", "aes-128-ctr", "--key-file", folder / "k", "--iv", iv.hex(),
                 "--base64", "--in", folder / "m", "--out", folder / "e", "-v", "-q",
                 "--service", "off") == 0
    err = capfd.readouterr().err
    plan_device = err.split(" encrypt on ")[1].split()[0]
    assert asked and set(asked) == {plan_device}, (asked, err)
    want = ciphergrid.encrypt(msg, "aes-128-ctr", key=key, iv=iv, device="native")
    assert base64.b64decode((folder / "e").read_bytes()) == want
