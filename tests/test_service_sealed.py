"""Sealed files through the service (issues 47, 49): ``ciphergrid seal`` / ``open`` with
``--service`` or ``CIPHERGRID_SERVICE``, the service's ``sealed`` op, its refusals and its
errors across the socket.

The service is a thread of the test's own process on a socket in a fresh folder, stopped at the
end; the commands run in this process (no interpreter start-up) except where a pipe is the
point.  Native engine (OpenSSL), messages of a few chunks, small Argon2id costs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pytest

import ciphergrid
from ciphergrid import cobblestone as cb
from ciphergrid.errors import ChunkFailed, CommitmentMismatch, InvalidTag, ServiceError, Truncated
from ciphergrid.formats import cobblestone as fcb, lone
from ciphergrid.service import protocol
from ciphergrid.service.server import Server
from ciphergrid.testing.services import ask as _ask
from conftest import cli_main as _main

K = 16384
SEALED = K + 16
ARGON = ["--argon2-memory", "64Ki", "--argon2-iterations", "1", "--argon2-lanes", "1"]


def _cli(*args, **kw):
    kw.setdefault("timeout", 60)
    return subprocess.run([sys.executable, "-m", "ciphergrid", *map(str, args)],
                          capture_output=True, **kw)


def _files(folder, n=3 * K + 100):
    key = os.urandom(16)
    kf = os.path.join(folder, "k")
    with open(kf, "w") as f:
        f.write(key.hex())
    msg = os.urandom(n)
    src = os.path.join(folder, "m")
    with open(src, "wb") as f:
        f.write(msg)
    return kf, key, msg, src


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_seal_and_open_through_the_service_equal_in_process(server, folder, capfd):
    """Sealed by the service: what this process and pyca open; opened by the service: what
    this process and pyca sealed; Cobblestone-256 and an empty message too; -v names the
    service, and the service counted the jobs."""
    pyca = pytest.importorskip("cryptography.cobblestone", reason="cryptography >= 50 has cobblestone")
    kf, key, msg, src = _files(folder)
    out, back = os.path.join(folder, "m.cg"), os.path.join(folder, "back")
    svc = ["--service", server.address, "-q"]
    assert _main("seal", "--key-file", kf, "--context", "ctx", "--in", src, "--out", out, *svc, "-v") == 0
    assert "by the service at " + server.address in capfd.readouterr().err
    sealed = _read(out)
    assert len(sealed) == cb.sealed_length(len(msg))
    assert cb.decrypt(sealed, key, b"ctx", device="native") == msg
    d = pyca.Cobblestone128Decryptor(key, b"ctx")
    assert d.update(sealed) + d.finalize() == msg
    # what pyca sealed, opened by the service
    e = pyca.Cobblestone128Encryptor(key, b"ctx")
    with open(out, "wb") as f:
        f.write(e.update(msg) + e.finalize())
    assert _main("open", "--key-file", kf, "--context", "ctx", "--in", out, "--out", back, *svc, "-v") == 0
    assert "by the service at" in capfd.readouterr().err and _read(back) == msg
    # Cobblestone-256, an empty message
    key256 = os.urandom(32)
    kf256 = os.path.join(folder, "k256")
    with open(kf256, "w") as f:
        f.write(key256.hex())
    empty = os.path.join(folder, "empty")
    open(empty, "wb").close()
    for k, flags, data, path in ((kf256, ["--aes256"], msg, src), (kf, [], b"", empty)):
        assert _main("seal", "--key-file", k, *flags, "--in", path, "--out", out, *svc) == 0
        assert cb.decrypt(_read(out), bytes.fromhex(_read(k).decode()), aes256=bool(flags)) == data
        assert _main("open", "--key-file", k, *flags, "--in", out, "--out", back, *svc) == 0
        assert _read(back) == data
    assert server.status()["totals"]["jobs"] == 6


def test_a_passphrase_wrapped_file_through_the_service(server, folder, capfd):
    """The wrapper is the command's (Argon2id runs there: no passphrase reaches the service);
    the body the service's.  Sealed in process, opened by the service, and the other way; a
    wrong passphrase is exit 8."""
    _, _, msg, src = _files(folder, 2 * K + 5)
    out, back = os.path.join(folder, "p.cg"), os.path.join(folder, "back")
    svc = ["--service", server.address, "-q"]
    assert _main("seal", "--pass", "pass:pw", *ARGON, "--in", src, "--out", out, "--service", "off", "-q") == 0
    assert _main("open", "--pass", "pass:pw", "--in", out, "--out", back, *svc, "-v") == 0
    err = capfd.readouterr().err
    assert "Argon2id" in err and "by the service at" in err and _read(back) == msg
    assert _main("seal", "--pass", "pass:pw", *ARGON, "--in", src, "--out", out, *svc) == 0
    assert _read(out).startswith(b"CG-PASS\n")
    assert cb.decrypt_with_passphrase(_read(out), "pw") == msg
    os.unlink(back)
    assert _main("open", "--pass", "pass:nope", "--in", out, "--out", back, *svc) == 8
    assert not os.path.exists(back)


def test_failures_through_the_service_keep_their_exit_codes(server, folder, capfd):
    """A changed chunk 9, a wrong key or context 8, a file cut at a chunk boundary 10: one
    line, nothing under --out (and the service serves on)."""
    kf, key, msg, src = _files(folder)
    good = cb.encrypt(msg, key, b"c", device="native")
    bad = bytearray(good)
    bad[56 + SEALED + 7] ^= 1                      # chunk 1
    cut = good[:56 + 2 * SEALED]                   # at a chunk boundary
    back = os.path.join(folder, "back")
    cases = ((bytes(bad), "c", 9, "chunk 1 does not verify"), (good, "other", 8, "key commitment"),
             (cut, "c", 10, "truncated"))
    for data, ctx, code, says in cases:
        f = os.path.join(folder, "x.cg")
        with open(f, "wb") as g:
            g.write(data)
        capfd.readouterr()
        assert _main("open", "--key-file", kf, "--context", ctx, "--in", f, "--out", back,
                     "--service", server.address, "-q") == code, says
        err = capfd.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, err
        assert not os.path.exists(back)
    with ciphergrid.connect(server.address) as c:   # (its slots given back)
        assert c.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16)) == \
            ciphergrid.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16))
    assert not any(server.running.values()) and not any(server.memory.values())


def test_a_pipe_gets_the_verified_prefix_and_the_line_says_how_much(server, folder, monkeypatch):
    """To stdout (a pipe) the service writes each verified piece as it goes; a later chunk
    that fails is exit 9 and the line says exactly how many verified bytes reached the pipe
    (the service's count, not its last progress report).  One worker: the pieces in order."""
    monkeypatch.setenv("CIPHERGRID_HOST_THREADS", "1")   # (the service's workers: this process's)
    kf, key, msg, src = _files(folder, (2 << 20) + 3 * K)
    good = cb.encrypt(msg, key, b"", device="native")
    bad = bytearray(good)
    bad[56 + (2 << 20) // K * SEALED + 100] ^= 1   # the first chunk of the third 1 MiB piece
    f = os.path.join(folder, "x.cg")
    with open(f, "wb") as g:
        g.write(bad)
    r = _cli("open", "--key-file", kf, "--in", f, "--service", server.address, "-q")
    err = r.stderr.decode()
    assert r.returncode == 9 and len(err.strip().splitlines()) == 1, err
    assert r.stdout == msg[:2 << 20]
    got = re.search(r"(\d+) verified bytes were written to <stdout> before chunk (\d+) failed", err)
    assert got and int(got.group(1)) == 2 << 20 and int(got.group(2)) == (2 << 20) // K, err
    # stdin to stdout, whole, through the service: the bytes sealed in process
    r = _cli("open", "--key-file", kf, "--service", server.address, "-q", input=good)
    assert r.returncode == 0 and r.stdout == msg, r.stderr


def test_the_service_setting_and_one_that_does_not_answer(server, folder, capfd, monkeypatch):
    """CIPHERGRID_SERVICE=PATH runs seal/open through that service, off in this process; a
    named service that does not answer: exit 5, one line, before the passphrase is asked for
    and with nothing written.  A range stays in this process (-v says so)."""
    kf, key, msg, src = _files(folder)
    out = os.path.join(folder, "m.cg")
    monkeypatch.setenv("CIPHERGRID_SERVICE", server.address)
    assert _main("seal", "--key-file", kf, "--in", src, "--out", out, "-q", "-v") == 0
    assert "by the service at" in capfd.readouterr().err
    monkeypatch.setenv("CIPHERGRID_SERVICE", "off")
    assert _main("open", "--key-file", kf, "--in", out, "--out", os.devnull, "-q", "-v") == 0
    assert "by the service" not in capfd.readouterr().err
    monkeypatch.setenv("CIPHERGRID_SERVICE", server.address)
    part = os.path.join(folder, "part")
    assert _main("open", "--key-file", kf, "--in", out, "--offset", K + 3, "--length", 10,
                 "--out", part, "-v", "-q") == 0
    assert "--offset / --length: run in this process" in capfd.readouterr().err
    assert _read(part) == msg[K + 3:K + 13]
    monkeypatch.delenv("CIPHERGRID_SERVICE")
    jobs = server.status()["totals"]["jobs"]
    assert jobs == 1
    for cmd, key_args in (("seal", ["--pass", "fd:999"]), ("open", ["--key-file", kf])):
        dst = os.path.join(folder, "never")
        code = _main(cmd, *key_args, "--in", src if cmd == "seal" else out, "--out", dst,
                     "--service", "/nonexistent.sock", "-q")
        err = capfd.readouterr().err
        assert code == 5 and "no service at /nonexistent.sock" in err, err
        assert len(err.strip().splitlines()) == 1 and not os.path.exists(dst)


def test_errors_keep_their_class_and_chunk_across_the_socket():
    """The error reply carries a sealed file's failure class, a ChunkFailed's chunk number and
    a file job's bytes written before it; the client raises the same."""
    for exc in (ChunkFailed("cobblestone-128: chunk 7 does not verify", 7),
                CommitmentMismatch("the key commitment does not match"), Truncated("cut")):
        exc.service_done = 1234
        with pytest.raises(type(exc)) as got:
            protocol.raise_error(protocol.error_reply(exc))
        assert isinstance(got.value, InvalidTag) and str(got.value) == str(exc)
        assert got.value.service_done == 1234
        assert getattr(got.value, "chunk", None) == getattr(exc, "chunk", None)
    with pytest.raises(ChunkFailed) as got:
        protocol.raise_error(protocol.error_reply(ChunkFailed("c", 0)))
    assert got.value.chunk == 0 and not hasattr(got.value, "service_done")


def _sealed_msg(**fields):
    msg = {"op": "sealed", "version": protocol.VERSION, "cipher": "cobblestone-128",
           "key": bytes(16), "encrypt": True, "context": b"", "device": "native"}
    msg.update(fields)
    return msg


def test_sealed_requests_are_checked_and_admitted(server, folder, monkeypatch):
    """The schema's rules (a header exactly when opening, its size, the scheme's name, two
    descriptors), the key's size; the memory a job's workers hold admitted against the user's
    max_memory (a limit one worker passes: refused in one line; one that holds one worker: the
    job runs on one); every refusal leaves nothing held."""
    from ciphergrid.service.policy import Grant, Policy

    def fds():
        r, w = os.pipe()
        os.write(w, b"s" * 1000)
        os.close(w)
        return r, os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)

    refusals = ((_sealed_msg(header=bytes(56)), "header"), (_sealed_msg(encrypt=False), "header"),
                (_sealed_msg(encrypt=False, header=bytes(55)), "header must be bin of 56 bytes"),
                (_sealed_msg(cipher="aes-128-gcm"), "cobblestone-128 or cobblestone-256"),
                (_sealed_msg(key=bytes(15)), "16-byte key"),
                (_sealed_msg(context=b"c" * 70000), "context"))
    for msg, says in refusals:
        pair = fds()
        try:
            reply = _ask(server.address, msg, pair)
        finally:
            protocol.close_fds(pair)
        assert "error" in reply and says in reply["error"]["message"], (says, reply)
    reply = _ask(server.address, _sealed_msg(), [os.open(os.devnull, os.O_RDONLY)])
    assert "two descriptors" in reply["error"]["message"]

    def limit(n):
        grant = Grant(max_memory=n)
        monkeypatch.setattr(server, "policy", Policy(os.getuid(), defaults=grant))

    limit(1 << 20)   # (one native worker holds a 1 MiB piece in and its sealed form out)
    pair = fds()
    try:
        reply = _ask(server.address, _sealed_msg(), pair)
    finally:
        protocol.close_fds(pair)
    assert reply["error"]["type"] == "ServiceError" and "--service off" in reply["error"]["message"]
    limit(3 << 20)
    r, out = fds()
    try:
        reply = _ask(server.address, _sealed_msg(key=bytes(range(16))), [r, out])
        loop = ("pyca's Cobblestone loop" if lone.runs(fcb.scheme(False), 1, True)
                else "OpenSSL's C loop")   # (one worker: each piece alone, formats/lone.py)
        assert reply.get("ok") and reply["reason"] == f"{loop}, 1 worker", reply
        sealed = os.pread(out, 1 << 20, 0)
    finally:
        protocol.close_fds([r, out])
    assert cb.decrypt(sealed, bytes(range(16)), device="native") == b"s" * 1000
    # the service checks the commitment and the chunks itself (a client that skipped its checks)
    body = bytearray(sealed[56:])
    for key, data, kind in ((bytes(16), body, "CommitmentMismatch"),
                            (bytes(range(16)), body[:-1] + bytes([body[-1] ^ 1]), "ChunkFailed")):
        r, w = os.pipe()
        os.write(w, bytes(data))
        os.close(w)
        out = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
        try:
            reply = _ask(server.address, _sealed_msg(key=key, encrypt=False, header=sealed[:56]),
                         [r, out])
            assert os.fstat(out).st_size == 0
        finally:
            protocol.close_fds([r, out])
        assert reply["error"]["type"] == kind and reply["error"].get("done") == 0, reply
        assert reply["error"].get("chunk") == (0 if kind == "ChunkFailed" else None), reply
    assert not any(server.running.values()) and not any(server.memory.values())


def test_a_remote_identity_is_refused_files_and_gets_its_slot_back(folder):
    """Over TLS a sealed file is refused as a stream is (descriptors pass only over a local
    socket), before admission: the identity's one job slot is free at once."""
    import ssl
    import time

    from ciphergrid.service.policy import Grant, Policy

    from test_service import _pki

    pki = _pki(folder)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pki["cert"], pki["key"])
    s = Server(os.path.join(folder, "r.sock"), job_timeout=3,
               policy=Policy(os.getuid(), defaults=Grant(max_jobs=1)))
    port = s.listen_remote("127.0.0.1", 0, tls=tls, tokens=["s3cret"])
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    try:
        address = f"tls://127.0.0.1:{port}"
        with ciphergrid.connect(address, cafile=pki["ca"], token="s3cret") as c:
            with pytest.raises(ciphergrid.InvalidArgument, match="local"):
                c.sealed(True, "cobblestone-128", bytes(16), b"", 0, 1)
            for msg in (_sealed_msg(), _sealed_msg(encrypt=False, header=bytes(56))):
                c.ch.send(msg)
                reply, _ = c.ch.recv()
                assert "sealed: files and pipes pass only over a local socket" in \
                    reply["error"]["message"], reply
        assert not any(s.running.values())
        t0 = time.monotonic()
        with ciphergrid.connect(address, cafile=pki["ca"], token="s3cret") as c:
            assert c.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16)) == \
                ciphergrid.encrypt(b"n" * 32, "aes-128-ctr", bytes(16), bytes(16))
        assert time.monotonic() - t0 < 2
    finally:
        s.stop()
        t.join(15)
    with pytest.raises(ServiceError):
        ciphergrid.connect(address, cafile=pki["ca"], token="s3cret", timeout=2)


def test_v_says_one_batch_through_the_service_as_in_process(server, folder, capfd, monkeypatch):
    """seal/open -v through a service said "AEAD batches of 64 MiB" for a device's job between
    regular files, where the command in process said (and both ran) one batch over the mapped
    files: both say it by transfer.sealed's one rule (one_batch) in its one wording (said).
    The device is a name here (runs_on's answer); OpenSSL runs the chunks."""
    from ciphergrid.transfer import sealed

    monkeypatch.delenv("CIPHERGRID_STREAM_MMAP", raising=False)
    monkeypatch.setattr(sealed, "runs_on", lambda sch, device, piece=0: (False, "the-device", ""))
    kf, key, msg, src = _files(folder, K + 5)
    out, back = os.path.join(folder, "m.cg"), os.path.join(folder, "back")
    whole = "the-device (the whole message one AEAD batch over the mapped files)"
    for verb, i, o in (("seal", src, out), ("open", out, back)):
        for where, said in ((["--service", server.address], f"{whole}, by the service at"),
                            (["--service", "off"], f"{whole}\n")):
            assert _main(verb, "--key-file", kf, "--in", i, "--out", o, "-q", "-v", *where) == 0
            err = capfd.readouterr().err
            assert f"cobblestone-128 {verb} on {said}" in err, err
    assert _read(back) == msg
    monkeypatch.setenv("CIPHERGRID_STREAM_MMAP", "0")
    assert _main("seal", "--key-file", kf, "--in", src, "--out", out, "-q", "-v",
                 "--service", server.address) == 0
    assert "on the-device (AEAD batches of " in capfd.readouterr().err   # (the service's piece)
