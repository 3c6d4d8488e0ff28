"""The encryption service (ciphergrid/service/): ``ciphergrid serve``, ``ciphergrid.connect``,
the command line through a running service.

Every server here is started by the test itself, on this machine, on a socket in a fresh
folder, and stopped by it within a bounded time: in a thread for the API's cases, as a
``ciphergrid serve`` process where signals and killing matter.  The engines are whatever this
machine has (OpenSSL, PoCL; the GPU suite adds the GPUs)."""
from __future__ import annotations

import fcntl
import mmap
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import ciphergrid
from ciphergrid.service import protocol
from ciphergrid.service.server import Server
from ciphergrid.testing import oracle
from ciphergrid.testing.services import ask as _ask
from conftest import record_first_args

KEY_HEX = "000102030405060708090a0b0c0d0e0f"


def _serve_process(folder, *extra):
    """``ciphergrid serve`` as a process of its own; returns (process, socket path) once it listens."""
    address = os.path.join(folder, "p.sock")
    p = subprocess.Popen([sys.executable, "-m", "ciphergrid", "serve", "--socket", address, *extra],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:   # (until it answers: a socket left by a killed one may be there already)
        try:
            with ciphergrid.connect(address) as c:
                if c.server_pid == p.pid:
                    return p, address
        except ciphergrid.ServiceError:
            pass
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            raise AssertionError(f"the service did not start: {p.stderr.read()}")
        time.sleep(0.05)


CASES = [("aes-128-ctr", {}, 100), ("aes-128-ctr", {}, (1 << 20) + 5), ("aes-256-cbc", {"padding": "pkcs7"}, 1000),
         ("aes-128-xts", {"sector_size": 4096, "start_sector": 7}, 300 << 10), ("camellia-128-ecb", {}, 4096)]


@pytest.mark.parametrize("name,opts,n", CASES)
def test_buffers_through_the_service_equal_in_process(server, name, opts, n):
    """Inline (small) and through a sealed memfd (large): the same bytes as the in-process API
    and the oracle, both ways, the caller's type back."""
    rng = random.Random(n)
    key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
    data = rng.randbytes(n)
    with ciphergrid.connect(server.address) as c:
        ct = c.encrypt(data, name, key, iv, **opts)
        assert isinstance(ct, bytes) and ct == ciphergrid.encrypt(data, name, key, iv, **opts)
        assert c.decrypt(ct, name, key, iv, **opts) == data
        arr = np.frombuffer(data[: n // 16 * 16], dtype=np.uint8).copy()
        if not opts.get("padding"):
            got = c.encrypt(arr, name, key, iv, **opts)
            assert isinstance(got, np.ndarray) and got.tobytes() == ciphergrid.encrypt(
                arr, name, key, iv, **opts).tobytes()


def test_status_and_errors(server):
    """One line for a bad request, as in process; the status counts jobs and bytes."""
    with ciphergrid.connect(server.address) as c:
        with pytest.raises(ciphergrid.InvalidKeySize):
            c.encrypt(b"x" * 16, "aes-128-ctr", b"short", bytes(16))   # (refused before sending)
        with pytest.raises(ciphergrid.InvalidLength):
            c.encrypt(b"x" * 17, "aes-128-cbc", bytes(16), bytes(16))
        c.encrypt(b"y" * 64, "aes-128-ctr", bytes(16), bytes(16))
        st = c.status()
    assert st["totals"]["jobs"] >= 1 and st["totals"]["bytes"] >= 64 and st["uid"] == os.getuid()
    # the server checks what it is sent, too (a client that skipped its own checks)
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect(server.address)
        protocol.send(s, {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-cbc",
                          "key": bytes(16), "iv": bytes(16), "encrypt": True, "data": b"z" * 17})
        reply, _ = protocol.recv(s)
    assert reply["error"]["type"] == "InvalidLength"


def test_a_client_of_another_user_is_refused(server, monkeypatch):
    """No policy file: only the server's own user may connect (checked on the peer's
    credentials, not only the socket file's mode)."""
    from ciphergrid.service.policy import Policy

    monkeypatch.setattr(server, "policy", Policy(os.getuid() + 1))
    with pytest.raises(ciphergrid.ServiceError, match="may not use this service"):
        ciphergrid.connect(server.address)
    assert server.totals["refused"] == 1


def test_a_server_of_another_user_gets_no_key(server, monkeypatch):
    """The client checks who serves before it sends anything: another user's server (not root)
    is refused."""
    monkeypatch.setattr(protocol, "peer_uid", lambda sock: os.getuid() + 12345)
    if os.getuid() + 12345 == 0:
        pytest.skip("(that uid would be root)")
    with pytest.raises(ciphergrid.ServiceError, match="nothing sent"):
        ciphergrid.connect(server.address)
    assert server.totals["jobs"] == 0


def test_a_memfd_not_sealed_against_shrinking_is_refused(server):
    """A client could shrink an unsealed buffer under the server (SIGBUS): refused."""
    fd = os.memfd_create("t", os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 4096)
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.connect(server.address)
            protocol.send(s, {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr",
                              "key": bytes(16), "iv": bytes(16), "encrypt": True, "length": 4096},
                          [fd])
            reply, _ = protocol.recv(s)
        assert "F_SEAL_SHRINK" in reply["error"]["message"]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)   # sealed: served, in place
        mm = mmap.mmap(fd, 4096)
        mm[:] = bytes(4096)
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.connect(server.address)
            protocol.send(s, {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr",
                              "key": bytes(16), "iv": bytes(16), "encrypt": True, "length": 4096},
                          [fd])
            reply, _ = protocol.recv(s)
        assert reply["ok"] and bytes(mm) == oracle.encrypt(bytes(4096), "aes-128-ctr", bytes(16), bytes(16))
        mm.close()
    finally:
        os.close(fd)


def test_malformed_messages_close_that_connection_only(server):
    """A fuzzer: random bytes, random maps, wrong types, a wrong version: each connection that
    sent one gets an error or is closed; the server answers the next client."""
    import msgpack

    rng = random.Random(7)
    junk = [rng.randbytes(rng.randrange(1, 300)) for _ in range(30)]
    junk += [msgpack.packb(x) for x in (1, [1, 2], {"op": "crypt"}, {"op": 7}, {"op": "crypt", "version": 99},
                                        {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr",
                                         "key": "text", "iv": None, "encrypt": True, "data": 5},
                                        {"op": "stream", "version": protocol.VERSION, "cipher": "aes-128-ctr",
                                         "key": bytes(16), "iv": bytes(16), "encrypt": True},
                                        {b"\x00": b"\x01"})]
    for body in junk:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(10)
            s.connect(server.address)
            s.sendall(body)
            try:
                reply, _ = protocol.recv(s)
            except protocol.ProtocolError:
                reply = None
            assert reply is None or "error" in reply, reply
    with ciphergrid.connect(server.address) as c:
        assert c.encrypt(b"a" * 32, "aes-128-ctr", bytes(16), bytes(16)) == \
            ciphergrid.encrypt(b"a" * 32, "aes-128-ctr", bytes(16), bytes(16))


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ciphergrid", *args], capture_output=True, timeout=120, **kw)


def test_cli_files_and_pipes_through_the_service(server, folder):
    """The command line with --service: the service reads and writes the command's own open
    descriptors (a file, a pipe), the output named only when it is done; the same bytes as
    without a service and as openssl; -v says the service ran it."""
    src = os.path.join(folder, "in")
    data = random.Random(3).randbytes((3 << 20) + 11)
    with open(src, "wb") as f:
        f.write(data)
    want = oracle.encrypt(data, "aes-128-ctr", bytes.fromhex(KEY_HEX), bytes.fromhex(KEY_HEX))
    out = os.path.join(folder, "out")
    r = _cli("encrypt", "-c", "aes-128-ctr", "--key", KEY_HEX, "--iv", KEY_HEX, "--in", src, "--out", out,
             "--service", server.address, "-v", "-q")
    assert r.returncode == 0, r.stderr
    assert b"by the service at" in r.stderr
    assert open(out, "rb").read() == want
    r = _cli("decrypt", "-c", "aes-128-ctr", "--key", KEY_HEX, "--iv", KEY_HEX, "--service", server.address,
             "-q", input=want)
    assert r.returncode == 0 and r.stdout == data, r.stderr
    # a passphrase's header read by the client, the rest by the service: openssl's format
    r = _cli("encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "pass:pw", "--in", src, "--out", out,
             "--service", server.address, "-q")
    assert r.returncode == 0, r.stderr
    r = _cli("decrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "pass:pw", "--in", out,
             "--service", server.address, "-q")
    assert r.returncode == 0 and r.stdout == data, r.stderr
    # --service off, and auto with none running: this process
    r = _cli("encrypt", "-c", "aes-128-ctr", "--key", KEY_HEX, "--iv", KEY_HEX, "--in", src, "-q", "-v",
             env={**os.environ, "CIPHERGRID_SERVICE": "auto", "XDG_RUNTIME_DIR": folder})
    assert r.returncode == 0 and r.stdout == want and b"by the service" not in r.stderr
    # an address where nothing answers: one line, exit 5
    r = _cli("encrypt", "-c", "aes-128-ctr", "--key", KEY_HEX, "--iv", KEY_HEX, "--in", src, "-q",
             "--service", os.path.join(folder, "nothing.sock"))
    assert r.returncode == 5 and b"no service at" in r.stderr and not r.stdout


def test_cli_aead_through_the_service(server, folder):
    """An AEAD on the command line through the service: the same bytes as pyca both ways (a
    small message inline, a larger one in shared memory); a changed byte: exit 3, one line, no
    output file."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

    key, nonce = bytes(range(32)), bytes(range(12))
    keyf = os.path.join(folder, "k")
    with open(keyf, "w") as f:
        f.write(key.hex())
    for name, ref, n in (("aes-256-gcm", AESGCM, 1000), ("chacha20-poly1305", ChaCha20Poly1305, (1 << 20) + 3)):
        data = random.Random(n).randbytes(n)
        src, out, back = (os.path.join(folder, x) for x in ("in", "out", "back"))
        with open(src, "wb") as f:
            f.write(data)
        want = ref(key).encrypt(nonce, data, b"hdr")
        common = ["-c", name, "--key-file", keyf, "--nonce", nonce.hex(), "--aad", b"hdr".hex(),
                  "--service", server.address, "-q"]
        r = _cli("encrypt", *common, "--in", src, "--out", out, "-v")
        assert r.returncode == 0 and b"by the service at" in r.stderr, r.stderr
        assert open(out, "rb").read() == want
        r = _cli("decrypt", *common, "--in", out, "--out", back)
        assert r.returncode == 0 and open(back, "rb").read() == data, r.stderr
        bad = bytearray(want)
        bad[n // 2] ^= 1
        with open(out, "wb") as f:
            f.write(bad)
        os.unlink(back)
        r = _cli("decrypt", *common, "--in", out, "--out", back)
        assert r.returncode == 3 and not os.path.exists(back), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_sigterm_stops_the_service_and_removes_its_socket(folder):
    p, address = _serve_process(folder)
    try:
        with ciphergrid.connect(address) as c:
            assert c.status()["pid"] == p.pid
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
    finally:
        p.kill()
    assert not os.path.exists(address)
    # a socket left by a killed server is taken over by the next one
    p, address = _serve_process(folder)
    p.kill()
    p.wait(10)
    assert os.path.exists(address)
    p, address = _serve_process(folder)
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0


def test_killed_server_or_client_mid_job(folder):
    """A job reading a pipe that has not ended: the server killed -> the command exits 5 with
    one line and its --out is not created; a client killed -> the server carries on serving."""
    p, address = _serve_process(folder, "--job-timeout", "60")
    out = os.path.join(folder, "out")
    try:
        cmd = [sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr", "--key", KEY_HEX,
               "--iv", KEY_HEX, "--out", out, "--service", address, "-q"]
        client = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        client.stdin.write(b"x" * 100000)
        client.stdin.flush()
        deadline = time.monotonic() + 30
        with ciphergrid.connect(address) as c:   # (the job has started: it counts as one)
            while c.status()["totals"]["jobs"] < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
        p.kill()
        p.wait(10)
        err = client.communicate(timeout=30)[1]
        assert client.returncode == 5, err
        assert b"service" in err and err.count(b"error:") == 1, err
        assert not os.path.exists(out)
        # the client killed mid-job: the server is still there for the next one
        p, address = _serve_process(folder, "--job-timeout", "60")
        client = subprocess.Popen(cmd[:-3] + ["--service", address, "-q"], stdin=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        client.stdin.write(b"y" * 100000)
        client.stdin.flush()
        time.sleep(0.5)
        client.kill()
        client.wait(10)
        client.stdin.close()   # (the job's input ends: the server's job ends with it)
        with ciphergrid.connect(address) as c:
            assert c.encrypt(b"z" * 48, "aes-128-ctr", bytes(16), bytes(16)) == \
                oracle.encrypt(b"z" * 48, "aes-128-ctr", bytes(16), bytes(16))
        assert not os.path.exists(out)
    finally:
        p.kill()
        p.wait(10)


def test_a_silent_input_is_given_up_at_the_job_limit(folder):
    """A pipe that never delivers does not hold the client for ever: at the service's job limit
    the client is told (exit 5, one line), and the service goes on serving others."""
    p, address = _serve_process(folder, "--job-timeout", "1")
    try:
        r = subprocess.Popen([sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr",
                              "--key", KEY_HEX, "--iv", KEY_HEX, "--service", address, "-q"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        err = _wait_err(r, 60)
        assert r.returncode == 5 and b"limit" in err, err
        assert time.monotonic() - t0 < 30
        with ciphergrid.connect(address) as c:
            assert c.status()["totals"]["jobs"] == 1
    finally:
        p.kill()
        p.wait(10)


def _wait_err(proc, timeout):
    """The stderr of ``proc`` once it ends, its stdin left open meanwhile (a silent pipe)."""
    try:
        proc.wait(timeout)
    finally:
        proc.kill()
    err = proc.stderr.read()
    proc.stdin.close()
    return err


# -- who may connect, limits, metrics ------------------------------------------------------------
def _policy(folder, text):
    path = os.path.join(folder, "policy.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def test_policy_file_rules(folder):
    from ciphergrid.service.policy import Policy

    pol = Policy.load(_policy(folder, "[defaults]\nweight = 2\nmax_jobs = 3\n[[allow]]\nuid = 4242\n"
                                      "weight = 5\n[[allow]]\ngid = 777\nmax_jobs = 1\n"), own_uid=1000)
    assert pol.grant(4242, {1}).weight == 5 and pol.grant(4242, {1}).max_jobs == 3
    assert pol.grant(5, {777}).max_jobs == 1 and pol.grant(5, {777}).weight == 2
    assert pol.grant(1000, {1000}).max_jobs == 3            # the server's own user: the defaults
    assert pol.grant(5, {6}) is None
    assert Policy.load(None, own_uid=1000).grant(1001, {1001}) is None
    for bad in ("[[allow]]\nuser = 'no-such-user-here'\n", "[[allow]]\nuid = 1\ngid = 2\n", "[allow]\n",
                "[defaults]\nweight = -1\n", "[[allow]]\nuid = 1\ncolour = 'red'\n", "not toml ]]",
                "[elsewhere]\n"):
        with pytest.raises(ciphergrid.InvalidArgument):
            Policy.load(_policy(folder, bad), own_uid=0)


def _as_nobody():
    def drop():
        os.setgid(65534)
        os.setgroups([])
        os.setuid(65534)
    return drop


#: a client in the standard library alone (run as another user, who may not read our virtualenv):
#: a hello in MessagePack, the reply's bytes printed
_RAW_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.sendall(bytes.fromhex("82a26f70a568656c6c6fa776657273696f6e01"))   # {"op": "hello", "version": 1}
print(s.recv(65536))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a client as another user (CI runs as root)")
def test_another_user_is_refused_by_the_policy_not_only_the_socket_mode(folder):
    """The socket open to everyone (mode 666): a client of another user (nobody) is refused by
    the server's check of its credentials; a policy that names it lets it in."""
    from ciphergrid.service.policy import Policy

    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if python is None:
        pytest.skip("no system python3 for a client of another user")
    os.chmod(folder, 0o755)
    for policy, want in ((None, b"may not use this service"), ("[[allow]]\nuid = 65534\n", b"\xa2ok\xc3")):
        pol = Policy.load(_policy(folder, policy) if policy else None, os.getuid())
        s = Server(os.path.join(folder, "o.sock"), policy=pol, socket_mode=0o666)
        t = threading.Thread(target=s.serve_forever, daemon=True)
        t.start()
        try:
            r = subprocess.run([python, "-c", _RAW_CLIENT, s.address], capture_output=True, timeout=60,
                               preexec_fn=_as_nobody(), cwd="/tmp", env={"PATH": "/usr/bin:/bin"})
        finally:
            s.stop()
            t.join(15)
        import ast

        got = ast.literal_eval(r.stdout.decode().strip() or "b''")   # (the bytes it printed)
        assert want in got, (r.stdout, r.stderr[-2000:])


def test_a_users_job_limit(server, folder, monkeypatch):
    """Jobs at once per user (the policy's max_jobs): one more waits until one of them ended,
    then runs (no failure)."""
    from ciphergrid.service.policy import Policy

    monkeypatch.setattr(server, "policy", Policy.load(_policy(folder, "[defaults]\nmax_jobs = 1\n"),
                                                      os.getuid()))
    r, w = os.pipe()
    out = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
    req = ciphergrid.api._request("aes-128-ctr", bytes(16), bytes(16), True, None, None, None, False, None)
    first = ciphergrid.connect(server.address)
    done, second = [], []
    t = threading.Thread(target=lambda: done.append(first.stream(req, r, out)), daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 20
        while not server.running.get(os.getuid()) and time.monotonic() < deadline:
            time.sleep(0.02)
        c = ciphergrid.connect(server.address)
        t2 = threading.Thread(target=lambda: second.append(
            c.encrypt(b"b" * 16, "aes-128-ctr", bytes(16), bytes(16))), daemon=True)
        t2.start()
        t2.join(0.5)
        assert not second   # (waiting for the first job's slot)
        os.write(w, b"c" * 1000)
        os.close(w)
        w = None
        t.join(20)
        t2.join(20)
        assert done and done[0]["bytes"] == 1000
        assert second == [oracle.encrypt(b"b" * 16, "aes-128-ctr", bytes(16), bytes(16))]
        c.close()
    finally:
        first.close()
        for fd in (r, w, out):
            if fd is not None:
                os.close(fd)


def test_a_users_memory_limit(server, folder, monkeypatch):
    """The policy's max_memory: a job that would make the service hold more of its own memory
    for the user (an AEAD message's copies, a batch decryption's output) is refused with one
    line; one in the client's shared memory costs none; the count is back to 0 after."""
    from ciphergrid.service.policy import Policy

    monkeypatch.setattr(server, "policy", Policy.load(_policy(folder, "[defaults]\nmax_memory = \"1Mi\"\n"),
                                                      own_uid=os.getuid()))
    assert server.policy.grant(os.getuid(), set()).max_memory == 1 << 20
    rng = random.Random(5)
    key, nonce, data = rng.randbytes(16), rng.randbytes(12), rng.randbytes(600 << 10)
    msgs = [rng.randbytes(16 << 10) for _ in range(100)]   # (1.6 MiB)
    nonces = [rng.randbytes(12) for _ in range(100)]
    with ciphergrid.connect(server.address) as c:
        with pytest.raises(ciphergrid.ServiceError, match="max_memory|may hold 1048576"):
            c.encrypt(data, "aes-128-gcm", key, nonce=nonce)      # (2 x 600 KiB of copies)
        sealed = c.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces)   # (in place: none)
        with pytest.raises(ciphergrid.ServiceError, match="may hold 1048576"):
            c.decrypt_batch(sealed.messages, "aes-128-gcm", key=key, nonces=nonces)
        assert c.decrypt_batch(sealed.messages[:40], "aes-128-gcm", key=key,
                               nonces=nonces[:40]).messages == msgs[:40]
        assert c.encrypt(data, "aes-128-ctr", key, key) == oracle.encrypt(data, "aes-128-ctr", key, key)
        assert server.status()["memory"] == {}
    with pytest.raises(ciphergrid.InvalidArgument, match="max_memory"):
        Policy.load(_policy(folder, "[defaults]\nmax_memory = \"lots\"\n"), own_uid=0)


def test_metrics_in_prometheus_format(folder):
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    s = Server(os.path.join(folder, "m.sock"))
    s.serve_metrics(port)
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    try:
        with ciphergrid.connect(s.address) as c:
            c.encrypt(b"d" * 100, "aes-128-ctr", bytes(16), bytes(16))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        s.stop()
        t.join(15)
    assert 'ciphergrid_service_bytes_total{device="native",op="crypt"} 100.0' in text
    assert "ciphergrid_service_jobs_running 0.0" in text


def test_socket_activation(folder):
    """systemd's socket activation: the socket passed as descriptor 3 (LISTEN_PID, LISTEN_FDS);
    the service serves on it and leaves it in place when it stops (it is systemd's)."""
    address = os.path.join(folder, "act.sock")
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lst.bind(address)
    lst.listen(8)
    fd = lst.fileno()

    def as_fd3():   # (after the descriptors are inherited: close_fds would close it again)
        os.dup2(fd, 3)

    cmd = f'LISTEN_PID=$$ LISTEN_FDS=1 exec "{sys.executable}" -m ciphergrid serve'
    p = subprocess.Popen(["sh", "-c", cmd], preexec_fn=as_fd3, close_fds=False, stderr=subprocess.PIPE,
                         text=True)
    try:
        with ciphergrid.connect(address, timeout=60) as c:
            assert c.server_pid == p.pid
            assert c.encrypt(b"e" * 20, "aes-128-ctr", bytes(16), bytes(16)) == \
                oracle.encrypt(b"e" * 20, "aes-128-ctr", bytes(16), bytes(16))
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0, p.stderr.read()
    finally:
        p.kill()
        lst.close()
    assert os.path.exists(address)


# -- fairness ----------------------------------------------------------------------------------------
def test_fair_shares_follow_the_weights():
    """Two jobs competing for 0.6 s, weights 1 and 3: bytes about 1 : 3; a job that joins late
    starts at once (it is behind nobody)."""
    from ciphergrid.service.fair import Fair

    fair = Fair(quantum=1 << 20)
    got = {"a": 0, "b": 0}
    stop = time.monotonic() + 0.6

    def run(job, weight):
        fair.join(job, weight)
        while time.monotonic() < stop:
            fair.take(job, 256 << 10)
            got[job] += 256 << 10
            time.sleep(0.0005)   # (the slice's work)
        fair.leave(job)

    threads = [threading.Thread(target=run, args=(j, w)) for j, w in (("a", 1), ("b", 3))]
    for t in threads:
        t.start()
    time.sleep(0.2)
    fair.join("late", 1)
    assert fair.take("late", 4096) < 0.05
    fair.leave("late")
    for t in threads:
        t.join()
    ratio = got["b"] / got["a"]
    assert 2.4 < ratio < 3.6, got


@pytest.mark.parametrize("name,opts", [("aes-128-cbc", {}), ("aes-128-xts", {"sector_size": 512}),
                                       ("aes-128-ctr", {})])
def test_a_large_buffer_runs_in_slices_each_after_its_turn(server, monkeypatch, name, opts):
    """A buffer larger than a slice runs slice by slice (each waits for its turn), in place in the
    shared memory: CBC decryption's chaining block read before the slice before it is run."""
    from ciphergrid.service import fair

    monkeypatch.setattr(fair, "SLICE", 64 << 10)
    turns = []
    real = server.fair.take
    monkeypatch.setattr(server.fair, "take", lambda job, n: (turns.append(n), real(job, n))[1])
    rng = random.Random(11)
    key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
    data = rng.randbytes((1 << 20) + 512)
    with ciphergrid.connect(server.address) as c:
        for enc in (True, False):
            f = c.encrypt if enc else c.decrypt
            assert f(data, name, key, iv, device="native", **opts) == \
                oracle.crypt(name, key, iv, data, enc, **opts)
    assert len(turns) >= 16 + 2 and sum(turns) == 2 * len(data)   # (CBC encryption: one turn)


@pytest.mark.parametrize("name", ["aes-256-gcm", "chacha20-poly1305", "ascon-aead128"])
@pytest.mark.parametrize("n", [0, 1000, (1 << 20) + 3])
def test_aead_messages_through_the_service(server, name, n):
    """One AEAD message, inline or through shared memory: ciphertext || tag equal to the
    in-process API's; a wrong tag raises InvalidTag and nothing comes back."""
    rng = random.Random(f"{name}{n}")
    a = ciphergrid.aeads.lookup(name)
    key, nonce, aad = rng.randbytes(a.names[name]), rng.randbytes(a.default_nonce_length), b"hdr"
    data = rng.randbytes(n)
    with ciphergrid.connect(server.address) as c:
        ct = c.encrypt(data, name, key, nonce=nonce, aad=aad)
        assert ct == ciphergrid.encrypt(data, name, key, nonce=nonce, aad=aad)
        assert c.decrypt(ct, name, key, nonce=nonce, aad=aad) == data
        bad = bytearray(ct)
        bad[-1] ^= 1
        with pytest.raises(ciphergrid.InvalidTag):
            c.decrypt(bytes(bad), name, key, nonce=nonce, aad=aad)
        with pytest.raises(ciphergrid.InvalidIVSize):
            c.encrypt(data, name, key, nonce=b"")


def _batch_case(name, rng, m, size, keys=False):
    a = ciphergrid.aeads.lookup(name)
    kl = a.names[name]
    msgs = [rng.randbytes(rng.randrange(size + 1)) for _ in range(m)]
    nonces = [rng.randbytes(a.default_nonce_length) for _ in range(m)]
    kw = {"keys": [rng.randbytes(kl) for _ in range(m)]} if keys else {"key": rng.randbytes(kl)}
    aad = [rng.randbytes(rng.randrange(20)) for _ in range(m)]
    return msgs, nonces, aad, kw


@pytest.mark.parametrize("name,m,size,keys", [
    ("aes-128-gcm", 5, 200, False),             # inline
    ("chacha20-poly1305", 300, 1000, True),     # sealed memfd, a key per message
    ("aes-256-gcm", 0, 0, False)])              # nothing
def test_aead_batches_through_the_service(server, name, m, size, keys):
    """encrypt_batch / decrypt_batch through the service: the in-process library's texts and
    tags; a message whose tag fails is withheld (zeros, ok False) and the others returned; a
    repeated (key, nonce) refused as in process."""
    rng = random.Random(f"{name}{m}")
    msgs, nonces, aad, kw = _batch_case(name, rng, m, size, keys)
    want = ciphergrid.encrypt_batch(msgs, name, nonces=nonces, aad=aad, **kw)
    with ciphergrid.connect(server.address) as c:
        got = c.encrypt_batch(msgs, name, nonces=nonces, aad=aad, **kw)
        assert got.messages == want.messages and len(got) == m
        sealed = list(got.messages)
        if m:
            sealed[m // 2] = sealed[m // 2][:-1] + bytes([sealed[m // 2][-1] ^ 1])
        back = c.decrypt_batch(sealed, name, nonces=nonces, aad=aad, **kw)
        assert back.failed == ([m // 2] if m else [])
        assert [x for i, x in enumerate(back.messages) if i != m // 2] == \
            [x for i, x in enumerate(msgs) if i != m // 2]
        if m:
            assert not back.data[back.offsets[m // 2]:back.offsets[m // 2 + 1]].any()
        if m > 1 and not keys:
            with pytest.raises(ciphergrid.InvalidArgument, match="nonce"):
                c.encrypt_batch(msgs, name, nonces=[nonces[0]] * m, **kw)
        with pytest.raises(TypeError, match="messages come first"):
            c.encrypt_batch(name, msgs, nonces=nonces, **kw)


CONTEXT_CASES = [("aes-128-ctr", {}), ("aes-256-cbc", {"padding": "pkcs7"}), ("camellia-128-ecb", {}),
                 ("aes-128-xts", {"sector_size": 512, "start_sector": 3})]


@pytest.mark.parametrize("name,opts", CONTEXT_CASES)
def test_contexts_through_the_service(server, name, opts):
    """``connect().Cipher(...)``'s contexts over an odd split (pieces inline and, past 64 KiB,
    in shared memory): the one-shot bytes, both ways; the service ran them."""
    rng = random.Random(name)
    n = (200 << 10) if "xts" in name else (200 << 10) + (0 if "ecb" in name else 5)
    key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
    data = rng.randbytes(n)
    want = ciphergrid.encrypt(data, name, key, iv, **opts)
    cuts = [0, 1, 17, 4096, 70000 + 512, n] if "xts" not in name else [0, 512, 1024, 100 << 10, n]
    with ciphergrid.connect(server.address) as c:
        jobs = server.status()["totals"]["jobs"]
        for enc, src, res in ((True, data, want), (False, want, data)):
            cipher = c.Cipher(name, key, iv, **opts)
            ctx = cipher.encryptor() if enc else cipher.decryptor()
            at = [x for x in cuts if x < len(src)] + [len(src)]
            got = b"".join(ctx.update(src[a:b]) for a, b in zip(at, at[1:])) + ctx.finalize()
            assert got == res
        assert server.status()["totals"]["jobs"] > jobs
        buf = bytearray(len(data) + 512)
        ctx = c.Cipher(name, key, iv, **opts).encryptor()
        k = ctx.update_into(data, buf)
        assert bytes(buf[:k]) + ctx.finalize() == want
        assert "service" in repr(c.Cipher(name, key, iv, **opts)) and key.hex() not in repr(ctx)


def test_a_connection_reuses_one_shared_buffer(server):
    """Past 64 KiB a connection's requests share one sealed memfd (its arena), enlarged when a
    request needs more and mapped once on each side: every result right and the caller's own
    (a later request does not change an earlier result); the mappings do not pile up."""
    import gc

    def mapped():
        with open("/proc/self/maps") as f:
            return sum("memfd:ciphergrid" in line for line in f)

    rng = random.Random(7)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    base = mapped()
    with ciphergrid.connect(server.address) as c:
        results = []
        for n in (100 << 10, (3 << 20) + 5, 100 << 10, 200 << 10):
            data = rng.randbytes(n)
            results.append((data, c.encrypt(data, "aes-128-ctr", key, iv)))
            msgs = [rng.randbytes(n // 64) for _ in range(64)]
            got = c.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=[bytes(11) + bytes([i]) for i in range(64)])
            assert got.messages == ciphergrid.aead.encrypt_batch(
                msgs, "aes-128-gcm", key=key, nonces=[bytes(11) + bytes([i]) for i in range(64)]).messages
        for data, ct in results:
            assert ct == oracle.encrypt(data, "aes-128-ctr", key, iv)
        gc.collect()
        assert mapped() - base <= 2    # (the client's arena, and the service's mapping of it)
    gc.collect()


@pytest.mark.policy
def test_each_client_has_its_own_weak_cipher_warnings(server):
    """The use policy's state is a client session's, not the service's: a 64-bit block cipher's
    warning said for one client is said again for the second client of the same service (once
    per session: not again for the first one's next request), and the service's own state stays
    untouched."""
    msg = {"op": "crypt", "version": 1, "cipher": "cast5-cbc", "key": bytes(range(16)),
           "iv": bytes(8), "encrypt": True, "device": "native", "data": bytes(16)}

    def weak(w):
        return [str(x.message) for x in w if x.category is ciphergrid.WeakCipherWarning]

    first, second = (socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(2))
    with first, second, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for s in (first, second):
            s.settimeout(10)
            s.connect(server.address)
        for s in (first, second, first):
            protocol.send(s, msg)
            reply, _ = protocol.recv(s)
            assert reply["ok"] and reply["data"] == oracle.encrypt(bytes(16), "cast5-cbc",
                                                                   bytes(range(16)), bytes(8))
    said = weak(w)
    assert len(said) == 2 and said[0] == said[1] and "64-bit blocks" in said[0], said
    assert server.runtime.policy.warned == set()


@pytest.mark.policy
def test_the_service_counts_a_block_limit_itself(server, folder, monkeypatch):
    """A cipher's refusing block limit is checked in the service too, not only in the client: a
    stream of a regular file past it, a piece of a longer message whose place puts it past it
    (``first_block``), and a pipe (its size unknown) are refused before any byte is written;
    within the limit they run."""
    from ciphergrid import registry
    from ciphergrid.algorithms.base import UsePolicy

    name = "cast5-ecb"   # (8-byte blocks: a limit of 4 blocks is 32 bytes)
    monkeypatch.setattr(registry.lookup(name).algorithm, "encryption_policy",
                        lambda key: UsePolicy(block_limit=4, over_limit_refused=True))
    common = {"version": 1, "cipher": name, "key": bytes(range(16)), "iv": None,
              "encrypt": True, "device": "native"}

    def stream(data, pipe=False):
        out = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
        if pipe:
            src, w = os.pipe()
            os.write(w, data)
            os.close(w)
        else:
            src = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
            os.write(src, data)
            os.lseek(src, 0, os.SEEK_SET)
        try:
            return _ask(server.address, _stream_msg(**common), [src, out]), os.fstat(out).st_size
        finally:
            os.close(src)
            os.close(out)

    assert stream(bytes(32))[0]["ok"]
    reply, written = stream(bytes(40))
    assert reply["error"]["type"] == "InvalidArgument" and "refused" in reply["error"]["message"]
    assert written == 0
    reply, written = stream(bytes(16), pipe=True)
    assert reply["error"]["type"] == "InvalidArgument" and written == 0, reply
    assert _ask(server.address, {"op": "crypt", **common, "data": bytes(16),
                                 "first_block": 2})["ok"]
    reply = _ask(server.address, {"op": "crypt", **common, "data": bytes(16), "first_block": 3})
    assert reply["error"]["type"] == "InvalidArgument" and "refused" in reply["error"]["message"]


def test_the_library_uses_a_service_only_when_asked(server, folder, monkeypatch):
    """``ciphergrid.encrypt`` and the batches run in this process unless CIPHERGRID_SERVICE names
    a service (a path, or ``auto`` with the per-user one answering): then the service runs them,
    ``out=`` gets the result, and ``api``'s own functions still run here."""
    from ciphergrid import api, service

    def jobs():
        return server.status()["totals"]["jobs"]

    key, iv, data = bytes(range(16)), bytes(16), bytes(range(256)) * 40
    want = oracle.encrypt(data, "aes-128-ctr", key, iv)
    msgs, nonces = [b"a" * 100, b"b" * 7], [bytes(12), bytes(11) + b"\1"]
    sealed = ciphergrid.aead.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces).messages
    for where in (None, "off", "auto"):   # (auto: no per-user service in this test's runtime dir)
        if where is None:
            monkeypatch.delenv("CIPHERGRID_SERVICE", raising=False)
        else:
            monkeypatch.setenv("CIPHERGRID_SERVICE", where)
        monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
        before = jobs()
        assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
        assert jobs() == before
    monkeypatch.setenv("CIPHERGRID_SERVICE", server.address)
    try:
        before = jobs()
        assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
        out = bytearray(len(data))
        assert ciphergrid.decrypt(want, "aes-128-ctr", key, iv, out=out) is out and out == data
        assert ciphergrid.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces).messages == sealed
        assert ciphergrid.decrypt_batch(sealed, "aes-128-gcm", key=key, nonces=nonces).messages == msgs
        assert jobs() == before + 4
        conns = server.status()["totals"]["connections"]
        pid = os.fork()   # (a child connects on its own: the parent's connection stays the parent's)
        if pid == 0:
            ok = False
            try:
                ok = ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
            finally:
                os._exit(0 if ok else 1)
        deadline = time.monotonic() + 30   # (bounded: a child forked beside threads could hang)
        while (got := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        if got[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        assert got[0] == pid and got[1] == 0
        assert server.status()["totals"]["connections"] == conns + 1
        assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want and jobs() == before + 6
        before += 2
        assert api.encrypt(data, "aes-128-ctr", key, iv) == want     # (api: this process)
        with service.in_process():                                  # (what `ciphergrid bench` runs in)
            assert ciphergrid.encrypt(data, "aes-128-ctr", key, iv) == want
        st = ciphergrid.SchedulerStats()
        ciphergrid.encrypt(data, "aes-128-ctr", key, iv, stats=st)  # (stats: this process's)
        assert jobs() == before + 4
        monkeypatch.setenv("CIPHERGRID_SERVICE", os.path.join(folder, "none.sock"))
        with pytest.raises(ciphergrid.ServiceError, match="no service"):
            ciphergrid.encrypt(data, "aes-128-ctr", key, iv)
        monkeypatch.setenv("CIPHERGRID_SERVICE", "tls://127.0.0.1:1")
        with pytest.raises(ciphergrid.InvalidArgument, match="connect"):
            ciphergrid.encrypt(data, "aes-128-ctr", key, iv)
    finally:
        service.forget()


def test_aead_batch_through_a_remote_service_in_groups(remote, monkeypatch):
    """Over TLS a batch larger than one remote message goes in groups of whole messages: the
    in-process results, tags verified back; one message larger than a message: one clear error."""
    start, pki = remote
    server, address = start()
    monkeypatch.setattr(protocol, "REMOTE_PIECE", 64 << 10)
    rng = random.Random(41)
    msgs, nonces, aad, kw = _batch_case("aes-128-gcm", rng, 100, 3000, keys=True)
    want = ciphergrid.encrypt_batch(msgs, "aes-128-gcm", nonces=nonces, aad=aad, **kw)
    with ciphergrid.connect(address, cafile=pki["ca"], token="s3cret") as c:
        got = c.encrypt_batch(msgs, "aes-128-gcm", nonces=nonces, aad=aad, **kw)
        assert got.messages == want.messages
        back = c.decrypt_batch(got.messages, "aes-128-gcm", nonces=nonces, aad=aad, **kw)
        assert back.messages == msgs and not back.failed
        with pytest.raises(ciphergrid.InvalidArgument, match="does not fit"):
            c.encrypt_batch([bytes(40 << 10)], "aes-128-gcm", nonces=nonces[:1], key=bytes(16))
        data = rng.randbytes(300 << 10)           # (a context's piece past REMOTE_PIECE: pieces)
        key, iv = rng.randbytes(16), rng.randbytes(16)
        ctx = c.Cipher("aes-128-cbc", key, iv).encryptor()
        got = ctx.update(data[:100]) + ctx.update(data[100:]) + ctx.finalize()
        assert got == oracle.encrypt(data, "aes-128-cbc", key, iv)


def _packed_by_hand(address: str, msg: dict) -> dict:
    """``msg`` packed by hand (no checks of the client's or of protocol.send's) on a connection
    of its own after a hello; the reply."""
    import msgpack

    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sk:
        sk.connect(address)
        sk.sendall(msgpack.packb({"op": "hello", "version": protocol.VERSION}))
        sk.recv(1 << 16)
        sk.sendall(msgpack.packb(msg, use_bin_type=True))
        return msgpack.unpackb(sk.recv(1 << 16))


def test_a_batch_with_lying_tables_is_refused(server):
    """A client's batch buffer whose offsets or key indices point outside it: a clear error,
    the service stays up (its tables are copied and checked before any engine reads them)."""
    m, n = 2, 32
    layout, total = protocol.batch_layout(m, n, 16, 1, 16, 12, 0)
    for bad in ("off", "index"):
        region = np.zeros(total, dtype=np.uint8)
        v = protocol.batch_views(region, layout)
        v["off"][:] = [0, 16, 32]
        if bad == "off":
            v["off"][2] = 1 << 40
        else:
            v["index"][1] = 5
        msg = {"op": "batch", "version": protocol.VERSION, "cipher": "aes-128-gcm",
               "encrypt": True, "tag_length": 16, "m": m, "n": n, "keys": 1,
               "nonce_length": 12, "aad_length": 0, "data": region.tobytes()}
        reply = _packed_by_hand(server.address, msg)
        assert reply["error"]["type"] == "InvalidArgument", reply
    with ciphergrid.connect(server.address) as c:
        assert c.status()["totals"]["errors"] >= 2


def test_the_service_checks_a_batch_by_the_librarys_check(server, monkeypatch):
    """The batch op built its Batch from its own copy of the library's checks; it goes through
    aead.checked_batch (its key table and index, AAD offsets): a key index outside the table,
    AAD offsets past the AAD and a short message table are the library's refusals; a good
    batch is the library's bytes."""
    from ciphergrid import aead

    calls, real = [], aead.checked_batch

    def spy(req, messages, given, out=None, *, output=True):
        calls.append(given.get("key_index") is not None)
        return real(req, messages, given, out, output=output)

    monkeypatch.setattr(aead, "checked_batch", spy)
    m, n, key = 2, 32, bytes(range(16))
    layout, total = protocol.batch_layout(m, n, 16, 1, 16, 12, 3)

    def ask(change):
        region = np.zeros(total, dtype=np.uint8)
        v = protocol.batch_views(region, layout)
        v["text"][:] = np.arange(n, dtype=np.uint8)
        v["off"][:], v["keys"][:], v["aad"][:], v["aad_off"][:] = [0, 16, 32], list(key), 7, [0, 1, 3]
        v["nonces"][12:] = 1
        change(v)
        msg = {"op": "batch", "version": protocol.VERSION, "cipher": "aes-128-gcm",
               "encrypt": True, "tag_length": 16, "m": m, "n": n, "keys": 1,
               "nonce_length": 12, "aad_length": 3, "data": region.tobytes()}
        return _packed_by_hand(server.address, msg)

    def bad_index(v):
        v["index"][1] = 5

    def bad_aad(v):
        v["aad_off"][1] = 9

    def bad_off(v):
        v["off"][1] = 40

    for change, says in ((bad_index, "a batch's key index outside its key table"),
                         (bad_aad, "a batch's AAD offsets must rise from 0 to its size"),
                         (bad_off, "offsets must rise from 0 to the buffer's size")):
        reply = ask(change)
        assert reply["error"]["type"] == "InvalidArgument", reply
        assert says in reply["error"]["message"], reply
    reply = ask(lambda v: None)
    assert "error" not in reply, reply
    want = ciphergrid.encrypt_batch([bytes(range(16)), bytes(range(16, 32))], "aes-128-gcm",
                                    key=key, nonces=[bytes(12), bytes([1] * 12)],
                                    aad=[b"\x07", b"\x07\x07"], device="native")
    out = np.frombuffer(reply["data"], dtype=np.uint8)
    assert out[:n].tobytes() == want.data.tobytes()
    assert out[-(16 * m + m):-m].tobytes() == want.tags.tobytes()
    assert calls[:4] == [True] * 4   # (the service's; the last, this test's own batch)


def test_an_aead_message_is_one_request_routed_once(server, monkeypatch):
    """The aead op routed a sizes-only request, then built the one it ran: the message's request
    (key, nonce, AAD) is routed once and is the one that runs."""
    from ciphergrid import aead, route

    key, nonce, data = bytes(range(16)), bytes(12), b"m" * 100
    want = ciphergrid.encrypt(data, "aes-128-gcm", key=key, nonce=nonce, aad=b"a",
                              device="native")
    routed = record_first_args(monkeypatch, route, "route")
    ran = record_first_args(monkeypatch, aead, "crypt")
    with ciphergrid.connect(server.address) as c:
        assert c.encrypt(data, "aes-128-gcm", key=key, nonce=nonce, aad=b"a",
                         device="native") == want
    served = [r for r in routed if r.kind == "messages"]
    assert len(served) == 1 and ran and served[0] is ran[-1]
    assert (served[0].key, served[0].nonce, served[0].aad) == (key, nonce, b"a")


def test_many_clients_at_once_then_nothing_left_behind(server):
    """16 clients at once, mixed sizes (inline, shared memory) and ciphers, for ~2 s: every byte
    checked; afterwards the server holds no more descriptors than before (a short soak; the
    8-minute one is a benchmark)."""
    def fds():
        return len(os.listdir("/proc/self/fd"))

    with ciphergrid.connect(server.address) as c:   # (the engines set up before counting)
        c.encrypt(b"w" * (1 << 17), "aes-128-ctr", bytes(16), bytes(16))
    before = fds()
    errors, counts = [], []
    stop = time.monotonic() + 2.0

    def client(i):
        rng = random.Random(i)
        n = 0
        try:
            with ciphergrid.connect(server.address) as c:
                while time.monotonic() < stop:
                    name = rng.choice(["aes-128-ctr", "aes-256-cbc", "camellia-128-ctr"])
                    size = rng.choice([16, 4096, 70000, 300000]) // 16 * 16
                    key, iv = rng.randbytes(32 if "256" in name else 16), rng.randbytes(16)
                    data = rng.randbytes(size)
                    if c.encrypt(data, name, key, iv) != oracle.encrypt(data, name, key, iv):
                        errors.append(f"client {i}: {name} {size} bytes differ")
                    n += 1
        except Exception as e:
            errors.append(f"client {i}: {type(e).__name__}: {e}")
        counts.append(n)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    assert len(counts) == 16 and min(counts) >= 1
    deadline = time.monotonic() + 5
    while (fds() > before or server.status()["clients"]) and time.monotonic() < deadline:
        time.sleep(0.05)   # (the connections' threads ending)
    assert fds() <= before
    assert server.status()["clients"] == 0 and not any(server.running.values())


# -- remote clients (TCP + TLS) ------------------------------------------------------------------
def _pki(folder):
    """A CA, a server certificate for 127.0.0.1 / localhost and a client certificate, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(cn, key, issuer_cert=None, issuer_key=None, ca=False, san=None):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        b = (x509.CertificateBuilder().subject_name(name)
             .issuer_name(issuer_cert.subject if issuer_cert else name).public_key(key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key or key, hashes.SHA256())

    def write(name, obj):
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(obj.public_bytes(serialization.Encoding.PEM) if hasattr(obj, "public_bytes") and
                    not hasattr(obj, "private_bytes") else obj.private_bytes(
                        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                        serialization.NoEncryption()))
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = cert("test CA", ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = cert("localhost", srv_key, ca, ca_key, san=[x509.DNSName("localhost"),
                                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = cert("alice", cli_key, ca, ca_key)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_ca = cert("other CA", other_key, ca=True)
    return {"ca": write("ca.pem", ca), "cert": write("srv.pem", srv), "key": write("srv.key", srv_key),
            "client_cert": write("cli.pem", cli), "client_key": write("cli.key", cli_key),
            "other_ca": write("other.pem", other_ca)}


@pytest.fixture
def remote(folder):
    """A service with a TLS listener on 127.0.0.1 (any free port): tokens, or client certificates."""
    import ssl

    pki = _pki(folder)
    started = []

    def start(certs=False, tokens=("s3cret",)):
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(pki["cert"], pki["key"])
        if certs:
            tls.load_verify_locations(pki["ca"])
            tls.verify_mode = ssl.CERT_REQUIRED
        s = Server(os.path.join(folder, f"r{len(started)}.sock"))
        port = s.listen_remote("127.0.0.1", 0, tls=tls, tokens=None if certs else tokens)
        t = threading.Thread(target=s.serve_forever, daemon=True)
        t.start()
        started.append((s, t))
        return s, f"tls://127.0.0.1:{port}"

    yield start, pki
    for s, t in started:
        s.stop()
        t.join(15)


def test_remote_over_tls_with_a_token(remote, monkeypatch):
    """The server's certificate verified, a token; data in the messages, a large buffer in
    pieces (CBC's chaining value carried, CTR's counter, XTS's sectors): the in-process bytes."""
    start, pki = remote
    server, address = start()
    monkeypatch.setattr(protocol, "REMOTE_PIECE", 64 << 10)
    rng = random.Random(12)
    data = rng.randbytes((300 << 10) + 32)
    with ciphergrid.connect(address, cafile=pki["ca"], token="s3cret") as c:
        for name, opts in (("aes-128-cbc", {}), ("aes-128-ctr", {}), ("aes-128-xts", {"sector_size": 512})):
            key, iv, _ = oracle.random_inputs(name, rng.randbytes, opts.get("sector_size"))
            for enc in (True, False):
                f = c.encrypt if enc else c.decrypt
                assert f(data, name, key, iv, **opts) == oracle.crypt(name, key, iv, data, enc, **opts)
        ct = c.encrypt(b"m" * 1000, "aes-128-gcm", bytes(16), nonce=bytes(12))
        assert ct == ciphergrid.encrypt(b"m" * 1000, "aes-128-gcm", bytes(16), nonce=bytes(12))
        with pytest.raises(ciphergrid.InvalidArgument, match="local"):
            c.stream(None, 0, 1)
        assert "connections" not in c.status()   # (other clients' details: not for remote ones)
        assert server.status()["connections"][0]["uid"] == "remote token #1"


def test_remote_refusals(remote, folder):
    """A wrong token, no token, an unknown server certificate, no TLS: refused, with one line."""
    start, pki = remote
    server, address = start()
    with pytest.raises(ciphergrid.ServiceError, match="unknown token"):
        ciphergrid.connect(address, cafile=pki["ca"], token="guess")
    with pytest.raises(ciphergrid.ServiceError, match="unknown token"):
        ciphergrid.connect(address, cafile=pki["ca"])
    with pytest.raises(ciphergrid.ServiceError, match="TLS"):
        ciphergrid.connect(address, cafile=pki["other_ca"], token="s3cret")
    with pytest.raises(ciphergrid.InvalidArgument):
        ciphergrid.connect(address.replace("tls://", "tcp://"), token="s3cret")
    with pytest.raises(ciphergrid.InvalidArgument, match="TLS"):
        Server(os.path.join(folder, "x.sock")).listen_remote("0.0.0.0", 0, tokens=["t"])
    assert server.totals["refused"] == 2


def test_remote_with_client_certificates(remote):
    start, pki = remote
    server, address = start(certs=True)
    with ciphergrid.connect(address, cafile=pki["ca"], certfile=pki["client_cert"],
                            keyfile=pki["client_key"]) as c:
        assert c.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16)) == \
            oracle.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16))
        assert server.status()["connections"][0]["uid"] == "remote certificate alice"
    with pytest.raises(ciphergrid.ServiceError):
        ciphergrid.connect(address, cafile=pki["ca"], token="s3cret")   # (no certificate)


def test_an_os_error_keeps_its_errno_across_the_socket():
    """A full disk in the service is the same OSError for the command (its errno: the command
    names its output, as in process)."""
    import errno

    reply = protocol.error_reply(OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError) as got:
        protocol.raise_error(reply)
    assert got.value.errno == errno.ENOSPC and got.value.strerror == "No space left on device"


# -- every request checked against its op's schema before any work ---------------------------------
def _stream_msg(**fields):
    msg = {"op": "stream", "version": protocol.VERSION, "cipher": "aes-128-ctr", "key": bytes(16),
           "iv": bytes(16), "encrypt": True, "device": "auto", "nbytes": None, "chunk_bytes": None,
           "depth": None, "fresh_output": False}
    msg.update(fields)
    return msg


def _stream_fds(folder, data=b"q" * 4096):
    """(a pipe's read end holding ``data``, its writer closed; a fresh output file)."""
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    return r, os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)


def _threads():
    return len(os.listdir("/proc/self/task"))


@pytest.mark.parametrize("field,values", [
    ("depth", [65, 0, 1_000_000, (1 << 64) - 1, -1]),
    ("chunk_bytes", [8 << 30, 1 << 40, (1 << 64) - 1, 1, 0])])
def test_a_streams_depth_and_chunk_are_bounded(server, folder, field, values):
    """A stream's depth and chunk size from a client are the command line's (1-64 chunks, 4 KiB
    to 1 GiB): past them the request is refused at once, naming the field and the rule; no
    thread is started, the descriptors are not kept, and the server serves on."""
    before = _threads()
    for v in values:
        r, out = _stream_fds(folder)
        try:
            reply = _ask(server.address, _stream_msg(**{field: v}), [r, out])
        finally:
            os.close(r)
            os.close(out)
        assert reply["error"]["type"] == "InvalidArgument", (v, reply)
        text = reply["error"]["message"]
        assert f"stream: {field} must be an integer from" in text and str(v) in text, text
        assert _threads() <= before + 8   # (at most the connections' threads, ending)
    r, out = _stream_fds(folder)
    try:   # the edges are taken
        reply = _ask(server.address, _stream_msg(depth=64, chunk_bytes=4096), [r, out])
        assert reply["ok"] and reply["bytes"] == 4096 and os.pread(out, 8192, 0) == \
            oracle.encrypt(b"q" * 4096, "aes-128-ctr", bytes(16), bytes(16))
    finally:
        os.close(r)
        os.close(out)
    deadline = time.monotonic() + 5
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _threads() <= before


@pytest.mark.parametrize("field,value,rule", [
    ("nbytes", "12", "an integer from 0"), ("chunk_bytes", "1Mi", "an integer from 4096"),
    ("depth", "4", "an integer from 1"), ("depth", 2.5, "an integer from 1"),
    ("depth", True, "an integer from 1"), ("key", "00" * 16, "bin of 0 to"),
    ("encrypt", 1, "a boolean"), ("fresh_output", "yes", "a boolean"), ("padding", "pkcs7", "nil")])
def test_wrong_typed_fields_are_named_not_pythons_internals(server, folder, field, value, rule):
    """A field of the wrong type: InvalidArgument naming the op, the field and its rule (not
    "TypeError: '<' not supported ..."); a key's value is never echoed."""
    r, out = _stream_fds(folder)
    try:
        reply = _ask(server.address, _stream_msg(**{field: value}), [r, out])
    finally:
        os.close(r)
        os.close(out)
    text = reply["error"]["message"]
    assert reply["error"]["type"] == "InvalidArgument", reply
    assert text.startswith(f"stream: {field} must be {rule}") and "Error" not in text, text
    assert "00" * 8 not in text


def test_missing_and_unknown_fields_are_named(server):
    msg = {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr", "iv": bytes(16),
           "encrypt": True, "data": b"x" * 16}
    reply = _ask(server.address, msg)
    assert reply["error"]["message"].startswith("crypt: key is missing"), reply
    reply = _ask(server.address, dict(msg, key=bytes(16), colour="red"))
    assert reply["error"]["message"].startswith("crypt: unknown field 'colour'"), reply
    reply = _ask(server.address, dict(msg, key=bytes(16), length=16))
    assert "data (inline) or length (a memfd), not both" in reply["error"]["message"], reply
    reply = _ask(server.address, dict(msg, key=bytes(16)))
    assert reply["ok"] and reply["data"] == oracle.encrypt(b"x" * 16, "aes-128-ctr", bytes(16), bytes(16))


def test_memory_a_request_asks_for_is_admitted_before_it_is_allocated(server, folder, monkeypatch):
    """max_memory counts every field that sizes the service's memory: a stream's chunk_bytes x
    depth (the client's own buffers' size), a batch's tables: past the limit, refused at once in
    one line naming the fields, before anything is allocated (the server's RSS does not move);
    within it, served."""
    from ciphergrid.service.policy import Policy

    monkeypatch.setattr(server, "policy", Policy.load(
        _policy(folder, "[defaults]\nmax_memory = \"64Mi\"\n"), own_uid=os.getuid()))

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    before = rss()
    for fields in ({"chunk_bytes": 128 << 20, "depth": 1}, {"chunk_bytes": 16 << 20, "depth": 4},
                   {"chunk_bytes": 1 << 30}, {"depth": 64}):
        r, out = _stream_fds(folder)
        try:
            reply = _ask(server.address, _stream_msg(**fields), [r, out])
        finally:
            os.close(r)
            os.close(out)
        assert reply["error"]["type"] == "ServiceError", (fields, reply)
        assert "chunk_bytes x depth" in reply["error"]["message"] and "may hold 67108864" in \
            reply["error"]["message"], reply
    batch = {"op": "batch", "version": protocol.VERSION, "cipher": "aes-128-gcm", "encrypt": False,
             "tag_length": 16, "m": 1 << 30, "n": 1 << 40, "keys": 1 << 30, "nonce_length": 12,
             "aad_length": 0, "data": b""}
    reply = _ask(server.address, batch)
    assert "may hold 67108864" in reply["error"]["message"], reply
    assert rss() - before < 32 << 20
    r, out = _stream_fds(folder)
    try:
        reply = _ask(server.address, _stream_msg(chunk_bytes=1 << 20, depth=8), [r, out])
        assert reply["ok"] and reply["bytes"] == 4096
    finally:
        os.close(r)
        os.close(out)
    src = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)   # a file: buffers cut to its size
    out = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
    try:
        os.write(src, b"f" * 5000)
        os.lseek(src, 0, os.SEEK_SET)
        reply = _ask(server.address, _stream_msg(chunk_bytes=1 << 30, depth=64), [src, out])
        assert reply["ok"] and reply["bytes"] == 5000, reply
        assert os.pread(out, 8192, 0) == oracle.encrypt(b"f" * 5000, "aes-128-ctr", bytes(16), bytes(16))
    finally:
        os.close(src)
        os.close(out)
    assert rss() - before < 32 << 20
    assert server.status()["memory"] == {} and not any(server.running.values())


def _sealed(data: bytes, seal=True):
    fd = os.memfd_create("t", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def _refusals(folder, local: bool):
    """(what, request, its descriptors) for every way the service refuses a request: the
    schema's refusals of each op, a protocol error, the request's own checks, the memory limit,
    a job failing after it was admitted."""
    key, iv = bytes(range(16)), bytes(16)
    crypt = {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr", "key": key,
             "iv": iv, "encrypt": True, "data": b"d" * 32}
    aead = {"op": "aead", "version": protocol.VERSION, "cipher": "aes-128-gcm", "key": key,
            "nonce": bytes(12), "aad": b"", "tag_length": 16, "encrypt": False,
            "data": b"t" * 48}
    m, n = 2, 32
    layout, total = protocol.batch_layout(m, n, 16, 1, 16, 12, 0)
    region = np.zeros(total, dtype=np.uint8)
    v = protocol.batch_views(region, layout)
    v["off"][:] = [0, 16, 32]
    v["index"][1] = 5
    batch = {"op": "batch", "version": protocol.VERSION, "cipher": "aes-128-gcm", "encrypt": True,
             "tag_length": 16, "m": m, "n": n, "keys": 1, "nonce_length": 12, "aad_length": 0,
             "data": region.tobytes()}
    out = [("schema: crypt", dict(crypt, key="k"), None), ("schema: aead", dict(aead, tag_length="16"), None),
           ("schema: batch", dict(batch, m=-1), None),
           ("schema: stream", _stream_msg(depth=0), (lambda: _stream_fds(folder)) if local else None),
           ("schema: hello", {"op": "hello", "token": 5}, None),
           ("schema: status", {"op": "status", "extra": 1}, None),
           ("unknown op", {"op": "launch"}, None), ("version", dict(crypt, version=99), None),
           ("key size", dict(crypt, key=b"short"), None),
           ("length", dict(crypt, cipher="aes-128-cbc", data=b"d" * 17), None),
           ("tag", aead, None), ("batch tables", batch, None),
           ("memory", dict(aead, encrypt=True, data=b"t" * (600 << 10)), None)]
    if local:
        big = dict(aead, encrypt=True, length=600 << 10, text_length=(600 << 10) - 16)
        del big["data"]
        unsealed = dict(crypt, length=4096)
        del unsealed["data"]
        out[-1] = ("memory", big, lambda: (_sealed(bytes(600 << 10)),))
        out += [("unsealed memfd", unsealed, lambda: (_sealed(bytes(4096), seal=False),)),
                ("stream from a folder", _stream_msg(), lambda: (os.open(folder, os.O_RDONLY),
                                                                 os.open(folder, os.O_TMPFILE | os.O_RDWR)))]
    else:
        out.append(("stream over TLS", _stream_msg(), None))
        out.append(("memfd over TLS", dict({k: x for k, x in crypt.items() if k != "data"}, length=16), None))
    return out


@pytest.mark.parametrize("where", ["local", "remote"])
def test_every_refusal_gives_back_what_admission_took(server, remote, folder, monkeypatch, where):
    """One job slot (max_jobs 1, max_memory 1 MiB), a short job limit: after each kind of
    refused request -- refused by the schema, the protocol, the request's checks, the memory
    limit, or failing once admitted; over TLS a stream -- a normal job of the same identity runs
    at once (a slot not given back would make it wait the job limit, then fail)."""
    from ciphergrid.service.policy import Policy

    if where == "remote":
        start, pki = remote
        srv, address = start()
        who = "remote token #1"

        def connect():
            return ciphergrid.connect(address, cafile=pki["ca"], token="s3cret")
    else:
        srv, address, who = server, server.address, os.getuid()

        def connect():
            return ciphergrid.connect(address)
    monkeypatch.setattr(srv, "policy", Policy.load(_policy(
        folder, "[defaults]\nmax_jobs = 1\nmax_memory = \"1Mi\"\n"), own_uid=os.getuid()))
    monkeypatch.setattr(srv, "job_timeout", 3)
    for what, msg, make_fds in _refusals(folder, where == "local"):
        fds = make_fds() if make_fds else ()
        try:
            with connect() as c:
                c.ch.send(msg, fds)
                reply, _ = c.ch.recv()
        finally:
            protocol.close_fds(fds)
        assert reply is not None and "error" in reply, (what, reply)
        assert not srv.running.get(who) and not srv.memory.get(who), (what, srv.status())
        t0 = time.monotonic()
        with connect() as c:
            assert c.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16)) == \
                oracle.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16)), what
        assert time.monotonic() - t0 < 2, what


def test_serve_refuses_bad_options_in_one_line(folder):
    """Ports past 65535, a policy file that is not text, a job limit that is not a positive
    number, a socket in a folder that does not exist: one line, exit 2, before serving (no
    socket left, no folder made)."""
    binary = os.path.join(folder, "policy.bin")
    with open(binary, "wb") as f:
        f.write(b"\x00\xff\xfe\x80 binary")
    tokens = os.path.join(folder, "tokens")
    with open(tokens, "w") as f:
        f.write("t0ken\n")
    sock = os.path.join(folder, "v.sock")
    for args, says in ((["--metrics", "99999"], "--metrics"),
                       (["--listen", "127.0.0.1:99999", "--insecure-loopback", "--token-file", tokens], "--listen"),
                       (["--policy", binary], "policy"), (["--job-timeout", "-1"], "--job-timeout"),
                       (["--job-timeout", "nan"], "--job-timeout"), (["--job-timeout", "0"], "--job-timeout")):
        r = _cli("serve", "--socket", sock, *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert says in err and "Traceback" not in err, (args, err)
        assert not os.path.exists(sock)
    deep = os.path.join(folder, "a", "b", "c.sock")
    r = _cli("serve", "--socket", deep)
    assert r.returncode == 2 and b"no folder" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(folder, "a"))


def test_a_server_killed_mid_job_says_at_least_what_reached_stdout(folder):
    """The service writes the command's stdout itself and says how far it got every 0.2 s:
    when it dies mid-job the command cannot know the bytes written since, so its one line says
    "at least N bytes were written", N no more than what reached the pipe."""
    import re

    keyf = os.path.join(folder, "k")
    with open(keyf, "w") as f:
        f.write(KEY_HEX)
    p, address = _serve_process(folder, "--job-timeout", "60")
    client = subprocess.Popen([sys.executable, "-m", "ciphergrid", "encrypt", "-c", "aes-128-ctr",
                               "--key-file", keyf, "--iv", KEY_HEX, "--service", address, "-q"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    counted = [0]

    def feed():
        try:
            while True:
                client.stdin.write(b"s" * (1 << 16))
        except (BrokenPipeError, ValueError, OSError):
            pass

    def drain():
        while chunk := client.stdout.read1(1 << 16):
            counted[0] += len(chunk)

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while counted[0] < (1 << 20) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.4)   # (a progress message or two reached the command)
        p.kill()
        p.wait(10)
        assert client.wait(30) == 5
        threads[1].join(10)
        err = client.stderr.read().decode()
    finally:
        client.kill()
        p.kill()
    got = re.search(r"at least (\d+) bytes were written", err)
    assert got and 0 < int(got.group(1)) <= counted[0], (err, counted[0])
    assert len(err.strip().splitlines()) == 1, err


def test_the_docs_list_the_schema():
    """docs/service.md's table is the schema's (service/schema.py)."""
    from pathlib import Path

    from ciphergrid.service import schema

    doc = (Path(__file__).resolve().parent.parent / "docs" / "service.md").read_text()
    assert "\n".join(schema.doc_table()) in doc


def test_without_a_memory_limit_the_service_keeps_to_its_budget(server, folder, monkeypatch):
    """No max_memory in the policy: a job is still refused in one line when it alone would make
    the service hold more than its budget (half the machine's memory), before any allocation."""
    assert server.memory_budget > 0
    monkeypatch.setattr(server, "memory_budget", 64 << 20)
    r, out = _stream_fds(folder)   # (a pipe: its size unknown, its buffers as the client says)
    try:
        reply = _ask(server.address, _stream_msg(chunk_bytes=64 << 20, depth=2), [r, out])
    finally:
        os.close(r)
        os.close(out)
    assert reply["error"]["type"] == "ServiceError" and "may hold 67108864" in reply["error"]["message"], reply
    assert server.status()["memory"] == {}
