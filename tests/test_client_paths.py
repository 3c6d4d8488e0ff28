"""The service client's one op path (service/client.py): a block cipher's message, a context's
piece, one AEAD message and a batch each go as ONE request through Client._exchange (inline or
through the shared buffer), over a remote connection in its requests of at most REMOTE_PIECE;
a reply of the wrong size is a ProtocolError whatever the op; the internals take a request."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import ciphergrid
from ciphergrid.service import client as client_mod
from ciphergrid.service import protocol
from ciphergrid.service.client import RemoteClient
from ciphergrid.testing import oracle, services

BIG = protocol.INLINE_MAX + 4096   # (past inline: the shared buffer)


@pytest.fixture
def server():
    with services.short_folder("cg-cli-") as d, services.threaded(d) as s:
        yield s


def _recorded(c, monkeypatch):
    """The (op, inline, descriptors) of every request ``c`` sends."""
    sent = []
    real = c._call

    def call(msg, fds=(), progress=None):
        if msg["op"] != "hello":
            sent.append((msg["op"], "data" in msg, len(fds)))
        return real(msg, fds, progress)

    monkeypatch.setattr(c, "_call", call)
    return sent


def _batch_case(rng, m, size):
    msgs = [rng.bytes(int(rng.integers(0, size))) for _ in range(m)]
    nonces = [rng.bytes(12) for _ in range(m)]
    aad = [rng.bytes(i % 4) for i in range(m)]
    return msgs, nonces, aad


@pytest.mark.parametrize("n", [1000, BIG])
def test_every_buffer_op_is_one_request(server, monkeypatch, n):
    """Each kind of buffer op, small (inline) and past INLINE_MAX (one shared buffer): one
    request, the bytes the library gives in this process."""
    rng = np.random.default_rng(n)
    data = rng.bytes(n - n % 16)
    key, iv, nonce = rng.bytes(16), rng.bytes(16), rng.bytes(12)
    inline = n <= protocol.INLINE_MAX
    with ciphergrid.connect(server.address) as c:
        sent = _recorded(c, monkeypatch)
        ct = c.encrypt(data, "aes-128-cbc", key, iv, device="native")
        assert ct == oracle.encrypt(data, "aes-128-cbc", key, iv)
        assert c.decrypt(ct, "aes-128-cbc", key, iv, padding=None) == data
        sealed = c.encrypt(data, "aes-128-gcm", key, nonce=nonce, aad=b"h")
        assert sealed == ciphergrid.encrypt(data, "aes-128-gcm", key, nonce=nonce, aad=b"h",
                                            device="native")
        assert c.decrypt(sealed, "aes-128-gcm", key, nonce=nonce, aad=b"h") == data
        with pytest.raises(ciphergrid.InvalidTag):
            c.decrypt(sealed[:-1] + bytes([sealed[-1] ^ 1]), "aes-128-gcm", key, nonce=nonce,
                      aad=b"h")
        ctx = c.Cipher("aes-128-ctr", key, iv).encryptor()
        assert ctx.update(data) + ctx.finalize() == oracle.encrypt(data, "aes-128-ctr", key, iv)
        msgs, nonces, aad = _batch_case(rng, 8, n // 8)
        got = c.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces, aad=aad)
        want = ciphergrid.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces, aad=aad,
                                        device="native")
        assert got.messages == want.messages
        broken = list(got.messages)
        broken[3] = broken[3][:-1] + bytes([broken[3][-1] ^ 1])
        back = c.decrypt_batch(broken, "aes-128-gcm", key=key, nonces=nonces, aad=aad)
        assert back.failed == [3] and back.messages[:3] == msgs[:3] and back.messages[4:] == msgs[4:]
    ops = ["crypt", "crypt", "aead", "aead", "aead", "crypt", "batch", "batch"]
    assert [s[0] for s in sent] == ops
    batch_inline = sent[-1][1]
    for op, was_inline, fds in sent:
        expect = batch_inline if op == "batch" else inline
        assert was_inline == expect and fds == (0 if expect else 1), (op, was_inline, fds)


@pytest.mark.parametrize("op", ["crypt", "aead", "batch"])
def test_a_reply_of_the_wrong_size_is_a_protocol_error(server, monkeypatch, op):
    """An inline reply whose data is not the output's size: ProtocolError, for every op (the
    output is never a short or long buffer handed to the caller)."""
    with ciphergrid.connect(server.address) as c:
        monkeypatch.setattr(c, "_call", lambda msg, fds=(), progress=None:
                            {"ok": True, "data": b"short"})
        with pytest.raises(protocol.ProtocolError, match="wrong size"):
            if op == "crypt":
                c.encrypt(bytes(64), "aes-128-ctr", bytes(16), bytes(16))
            elif op == "aead":
                c.encrypt(bytes(64), "aes-128-gcm", bytes(16), nonce=bytes(12))
            else:
                c.encrypt_batch([bytes(64)], "aes-128-gcm", key=bytes(16), nonces=[bytes(12)])


@pytest.fixture
def remote(server):
    port = server.listen_remote("127.0.0.1", 0, tokens=["t0ken"], insecure_loopback=True)
    with RemoteClient("127.0.0.1", port, token="t0ken", insecure=True) as c:
        yield c


def test_remote_requests_of_at_most_remote_piece(remote, monkeypatch):
    """Over a remote connection: one XTS data unit past INLINE_MAX (within REMOTE_PIECE) is one
    request; a CBC message past REMOTE_PIECE goes in pieces (the chain carried); a batch in
    groups of whole messages (a failed tag found in its group); one AEAD message past
    REMOTE_PIECE refused with one line."""
    rng = np.random.default_rng(5)
    sent = _recorded(remote, monkeypatch)
    data = rng.bytes(BIG)
    key = rng.bytes(32)
    iv = rng.bytes(16)
    ct = remote.encrypt(data, "aes-128-xts", key, iv)
    assert ct == oracle.encrypt(data, "aes-128-xts", key, iv)
    assert remote.decrypt(ct, "aes-128-xts", key, iv) == data
    assert sent == [("crypt", True, 0)] * 2
    monkeypatch.setattr(protocol, "REMOTE_PIECE", 32 << 10)
    sent.clear()
    assert remote.encrypt(data, "aes-128-cbc", key[:16], iv) == \
        oracle.encrypt(data, "aes-128-cbc", key[:16], iv)
    assert len(sent) == -(-len(data) // (32 << 10))
    msgs, nonces, aad = _batch_case(rng, 40, 4000)
    got = remote.encrypt_batch(msgs, "chacha20-poly1305", key=key, nonces=nonces, aad=aad)
    assert got.messages == ciphergrid.encrypt_batch(msgs, "chacha20-poly1305", key=key,
                                                    nonces=nonces, aad=aad,
                                                    device="native").messages
    broken = list(got.messages)
    broken[30] = bytes([broken[30][0] ^ 1]) + broken[30][1:]
    back = remote.decrypt_batch(broken, "chacha20-poly1305", key=key, nonces=nonces, aad=aad)
    assert back.failed == [30] and [x for i, x in enumerate(back.messages) if i != 30] == \
        [x for i, x in enumerate(msgs) if i != 30]
    with pytest.raises(ciphergrid.InvalidArgument, match="remote service is at most"):
        remote.encrypt(bytes(40 << 10), "aes-128-gcm", key[:16], nonce=bytes(12))


def test_batches_are_checked_by_the_librarys_check(server, monkeypatch):
    """The client's batch functions checked their tables with a copy of the library's code; they
    go through aead.checked_batch (no output texts: the reply is the output): the same
    refusals, the library's bytes, the client's copy of the key table wiped once sent."""
    from ciphergrid import aead

    calls, real = [], aead.checked_batch

    def spy(req, messages, given, out=None, *, output=True):
        batch, got = real(req, messages, given, out, output=output)
        calls.append((output, batch))
        return batch, got

    monkeypatch.setattr(aead, "checked_batch", spy)
    rng = np.random.default_rng(7)
    msgs, nonces, aad = _batch_case(rng, 6, 300)
    key = rng.bytes(16)
    with ciphergrid.connect(server.address) as c:
        got = c.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces, aad=aad)
        back = c.decrypt_batch(got.messages, "aes-128-gcm", key=key, nonces=nonces, aad=aad)
        for bad, error, says in (
                ({"nonces": nonces[:-1]}, ciphergrid.InvalidArgument, "5 nonces for 6 messages"),
                ({"key": key[:5]}, ciphergrid.errors.InvalidKeySize, "got 5 bytes")):
            with pytest.raises(error, match=says):
                c.encrypt_batch(msgs, "aes-128-gcm", **{"key": key, "nonces": nonces, **bad})
    assert got.messages == ciphergrid.encrypt_batch(msgs, "aes-128-gcm", key=key, nonces=nonces,
                                                    aad=aad).messages
    assert back.messages == msgs
    mine = [b for output, b in calls if not output]
    assert len(mine) == 2 and all(not b.keys.any() for b in mine)


def test_internals_take_a_request():
    """No internal function or method of the client takes more than 7 parameters (the request
    object carries the cipher, key, IV or nonce, AAD, tag length and options)."""
    many = []
    for cls in [v for v in vars(client_mod).values() if inspect.isclass(v)] + [client_mod]:
        for name, fn in vars(cls).items():
            if inspect.isfunction(fn) and name.startswith("_") and not name.startswith("__"):
                if len(inspect.signature(fn).parameters) > 7:
                    many.append(f"{getattr(cls, '__name__', '')}.{name}")
    assert not many, many


def test_past_the_arena_a_memfd_of_its_own(server, monkeypatch):
    """A request past ARENA_MAX gets a memfd of its own (its result not copied out), closed
    after its reply."""
    monkeypatch.setattr(client_mod, "ARENA_MAX", BIG - 1)
    data = bytes(BIG - BIG % 16)
    with ciphergrid.connect(server.address) as c:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            assert c.encrypt(data, "aes-128-ctr", bytes(16), bytes(16)) == \
                oracle.encrypt(data, "aes-128-ctr", bytes(16), bytes(16))
        assert c._arena is None and len(os.listdir("/proc/self/fd")) <= before
