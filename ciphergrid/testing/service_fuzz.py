"""A protocol fuzzer for the service (``ciphergrid serve``): tests/test_service_fuzz.py runs it
briefly with a fixed seed, scripts/dev/fuzz_service.py for as long and with the seed you say.

:class:`ServerProcess` starts a service of its own on a socket in a temporary folder (a process:
its threads and descriptors are counted from /proc) and stops it.  :func:`cases` makes requests
from a valid one of each op (hello, status, crypt inline and in a memfd, aead, batch, stream),
changed: a field of another type, an integer past its range, a huge size, a field missing or
one no op has, a descriptor too many or too few; and frames that are not requests (random
bytes, cut MessagePack, a list, ext types, a frame past the protocol's size, descriptors
without a message).  :class:`Fuzzer` sends them and checks every reply (:func:`problems`):
a success, or one clean line -- a ciphergrid error class, no Python internals -- that names the
broken field where a field broke its op's rule (schema.SCHEMA); and between cases that the
service answers a normal request, holds a bounded number of threads, and ends with no more
descriptors than it began with.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from .. import errors
from ..service import protocol, schema

#: what a clean error's type may be: a ciphergrid error class (the failed-tag ones made or not
#: yet: errors.TAG_ERRORS), or an OS error
CLEAN_TYPES = {n for n, c in vars(errors).items()
               if isinstance(c, type) and issubclass(c, errors.Error)} \
    | set(errors.TAG_ERRORS) | {"OSError", "ProtocolError"}
#: a message that shows Python's internals rather than the request's fault
_INTERNAL = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Exit|Interrupt)\b:|Traceback|"
                       r"not supported between|object has no attribute|NoneType|unhashable|"
                       r"object is not|argument must be|cannot be interpreted")
#: the service's threads past its count at rest a fuzzed request may leave running at once:
#: a stream's workers (settings.MAX_DEPTH) and a few connections ending
THREADS_SLACK = 64 + 16

KEY, IV = bytes(range(16)), bytes(range(16, 32))

_ODD = [None, True, False, 0, -1, 1, 7, 1 << 31, 1 << 40, (1 << 63) - 1, (1 << 64) - 1, -(1 << 63),
        1.5, float("nan"), float("inf"), "", "x", "aes-128-ctr", "0" * 300, b"", b"\x00" * 17,
        b"\xff" * 300, [], [1, 2], {}, {"a": 1}]


class Case:
    """One thing sent: a request (``msg``, with descriptors made by ``make_fds``) or a raw
    frame (``body``); ``named``: fields one of which the error must name (a field that broke
    its op's rule)."""

    def __init__(self, what: str, msg=None, make_fds=None, body: bytes | None = None,
                 named=(), fd_count: int | None = None):
        self.what, self.msg, self.make_fds, self.body = what, msg, make_fds, body
        self.named, self.fd_count = set(named), fd_count

    def __repr__(self) -> str:
        return f"<case {self.what}>"


# -- valid requests -------------------------------------------------------------------------------
def _memfd(data: bytes, seal: bool = True) -> int:
    import fcntl

    fd = os.memfd_create("fuzz", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def _pipe_with(data: bytes) -> int:
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    return r


def _batch_region(rng: random.Random, encrypt: bool):
    import numpy as np

    m = rng.randrange(0, 4)
    sizes = [rng.randrange(0, 64) for _ in range(m)]
    n = sum(sizes)
    layout, total = protocol.batch_layout(m, n, 16, 1, 16, 12, 0)
    region = np.zeros(total, dtype=np.uint8)
    v = protocol.batch_views(region, layout)
    v["text"][:] = np.frombuffer(rng.randbytes(n), dtype=np.uint8)
    v["off"][:] = np.concatenate(([0], np.cumsum(sizes))) if m else [0]
    v["keys"][:] = np.frombuffer(KEY, dtype=np.uint8)
    v["nonces"][:] = np.frombuffer(rng.randbytes(12 * m), dtype=np.uint8)
    if not encrypt:
        v["tags"][:] = np.frombuffer(rng.randbytes(16 * m), dtype=np.uint8)
    fields = {"op": "batch", "version": protocol.VERSION, "cipher": "aes-128-gcm",
              "encrypt": encrypt, "tag_length": 16, "impl": None, "device": "auto", "m": m,
              "n": n, "keys": 1, "nonce_length": 12, "aad_length": 0}
    return fields, region.tobytes()


def valid(rng: random.Random, folder: str, op: str):
    """(a valid request of ``op``'s kind, a function making its descriptors or None)."""
    req = {"version": protocol.VERSION, "cipher": "aes-128-ctr", "key": KEY, "iv": IV,
           "encrypt": rng.random() < 0.5, "padding": None, "device": "auto"}
    if op == "hello":
        return {"op": "hello", "version": protocol.VERSION}, None
    if op == "status":
        return {"op": "status"}, None
    if op == "crypt":
        return {"op": "crypt", **req, "data": rng.randbytes(rng.randrange(0, 300))}, None
    if op == "crypt-memfd":
        n = rng.randrange(1, 9000)
        msg = {"op": "crypt", **req, "length": n}
        if rng.random() < 0.3:
            msg["arena"] = rng.randbytes(8)
        data = rng.randbytes(n)
        return msg, lambda: (_memfd(data),)
    if op in ("aead", "aead-memfd"):
        encrypt = rng.random() < 0.7
        n = rng.randrange(16 if not encrypt else 0, 400)
        msg = {"op": "aead", "version": protocol.VERSION, "cipher": "aes-128-gcm", "key": KEY,
               "nonce": rng.randbytes(12), "aad": rng.randbytes(rng.randrange(0, 40)),
               "tag_length": 16, "encrypt": encrypt, "device": "auto", "impl": None}
        data = rng.randbytes(n)
        if op == "aead":
            return dict(msg, data=data), None
        room = n + 16 if encrypt else n
        return dict(msg, length=room, text_length=n), lambda: (_memfd(data + bytes(room - n)),)
    if op in ("batch", "batch-memfd"):
        fields, region = _batch_region(rng, rng.random() < 0.6)
        if op == "batch":
            return dict(fields, data=region), None
        return dict(fields, length=len(region)), lambda: (_memfd(region),)
    if op == "stream":
        data = rng.randbytes(rng.randrange(0, 20000))
        msg = {"op": "stream", **req, "nbytes": None, "chunk_bytes": None, "depth": None,
               "fresh_output": rng.random() < 0.5}
        if rng.random() < 0.5:
            msg.update(chunk_bytes=rng.choice([4096, 65536, 1 << 20]), depth=rng.randrange(1, 9))

        def fds():
            return _pipe_with(data), os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
        return msg, fds
    if op == "sealed":   # (a sealed file: sealing a pipe's bytes, or opening what was sealed)
        from ..formats import cobblestone as cb

        aes256 = rng.random() < 0.3
        key = rng.randbytes(32 if aes256 else 16)
        context = rng.randbytes(rng.randrange(0, 40))
        data = rng.randbytes(rng.randrange(0, 40000))   # (within a pipe's buffer, sealed too)
        msg = {"op": "sealed", "version": protocol.VERSION, "key": key, "context": context,
               "cipher": "cobblestone-256" if aes256 else "cobblestone-128",
               "encrypt": rng.random() < 0.5, "device": "native"}
        if not msg["encrypt"]:
            whole = cb.encrypt(data, key, context, aes256=aes256, device="native")
            msg["header"], data = whole[:cb.HEADER], whole[cb.HEADER:]

        def fds():
            return _pipe_with(data), os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
        return msg, fds
    raise ValueError(op)


OPS = ("hello", "status", "crypt", "crypt-memfd", "aead", "aead-memfd", "batch", "batch-memfd",
       "stream", "sealed")


# -- changes --------------------------------------------------------------------------------------
def _odd_for(rng: random.Random, field: schema.Field):
    """A value the field's rule may refuse: another type, past its range, huge."""
    pick = rng.random()
    if field.kind is int and pick < 0.6:
        return rng.choice([field.lo - 1, field.hi + 1 if field.hi < schema.U64 else -1,
                           (1 << 64) - 1, -(1 << 63), 1 << 40, field.lo, field.hi])
    if field.kind in (bytes, str) and pick < 0.5:
        n = rng.choice([field.hi + 1, 0, field.hi, min(field.hi + 1, 70000)])
        n = min(n, 100 << 10)   # (a frame of at most MAX_MESSAGE)
        return rng.randbytes(n) if field.kind is bytes else "c" * n
    return rng.choice(_ODD)


def _plausible(rng: random.Random, name: str, value):
    """A value within the field's rule that may still be wrong for the request."""
    choices = {
        "cipher": ["aes-128-cbc", "aes-256-ctr", "aes-128-xts", "aes-128-gcm", "chacha20-poly1305",
                   "no-such-cipher", "AES-128-CTR", "des-ede3-cbc"],
        "key": [rng.randbytes(rng.randrange(0, 70)), bytes(16), bytes(32)],
        "iv": [rng.randbytes(rng.randrange(0, 33)), None],
        "nonce": [rng.randbytes(rng.randrange(0, 40))],
        "tag_length": [rng.randrange(0, 65), 4, 12, 16],
        "sector_size": [16, 512, 4096, 17, rng.randrange(16, 1 << 24)],
        "start_sector": [0, 1, (1 << 64) - 1, None],
        "impl": ["fast", "reference", "constant-time", "nope"],
        "device": ["nonesuch", "gpu:99", " ", "auto"],
        "first_block": [1, 2, 1 << 40, (1 << 64) - 1],
        "chain": [rng.randbytes(16), rng.randbytes(rng.randrange(0, 65)), None],
        "nbytes": [0, 1, 1 << 40, 1 << 62],
        "chunk_bytes": [4096, 1 << 20, 1 << 26],
        "depth": [1, 2, 64],
        "length": [0, 1, 4096, 1 << 40],
        "text_length": [0, 1, 1 << 20],
        "m": [0, 1, 5, 1 << 20], "n": [0, 1, 999, 1 << 30], "keys": [0, 1, 2, 1 << 20],
        "nonce_length": [0, 12, 16, 1024], "aad_length": [0, 1, 1 << 20],
        "arena": [rng.randbytes(8)],
        "data": [rng.randbytes(rng.randrange(0, 1000))],
        "aad": [rng.randbytes(rng.randrange(0, 100))],
        "encrypt": [True, False], "allow_weak": [True, False, None], "fresh_output": [True, False],
        "token": ["t", ""], "version": [protocol.VERSION],
        "context": [rng.randbytes(rng.randrange(0, 100)), None],
        "header": [rng.randbytes(56), None],
    }
    return rng.choice(choices.get(name, [value]))


def mutate(rng: random.Random, msg: dict) -> tuple[dict, set, str]:
    """``msg`` with one to three changes; (the changed request, the fields one of which a
    refusal must name, what was done)."""
    msg = dict(msg)
    table = schema.SCHEMA.get(msg.get("op"), {})
    named, done = set(), []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        how = rng.choice(["odd", "odd", "odd", "plausible", "plausible", "missing", "extra", "op"])
        names = list(table) or ["version"]
        name = rng.choice(names)
        field = table.get(name)
        if how == "odd" and field is not None:
            msg[name] = _odd_for(rng, field)
            if not field.accepts(msg[name]):
                named.add(name)
        elif how == "plausible":
            msg[name] = _plausible(rng, name, msg.get(name))
            if field is not None and not field.accepts(msg[name]):
                named.add(name)
        elif how == "missing":
            if name in msg:
                del msg[name]
                if field is not None and field.required:
                    named.add(name)
        elif how == "extra":
            name = rng.choice(["colour", "keys_", "Op", "x" * 40, "cipher ", "\u00e9"])
            msg[name] = rng.choice(_ODD)
            if name not in table:
                named.add(name)
        else:
            msg["op"] = rng.choice(["crypt", "stream", "aead", "batch", "sealed", "hello", "status",
                                    "nope", None, 5, b"crypt"])
            return msg, {"op"} if msg["op"] not in schema.SCHEMA else set(), "op changed"
        done.append(f"{how} {name}")
    still = set()   # (a later change may have undone an earlier one)
    for name in named:
        field = table.get(name)
        if field is None:
            still.update([name] if name in msg else [])
        elif name not in msg:
            still.update([name] if field.required else [])
        elif not field.accepts(msg[name]):
            still.add(name)
    return msg, still, ", ".join(done)


def _frames(rng: random.Random) -> Case:
    """A frame that is not a request."""
    import msgpack

    kind = rng.randrange(9)
    good = msgpack.packb({"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr",
                          "key": KEY, "iv": IV, "encrypt": True, "data": b"z" * 64},
                         use_bin_type=True)
    if kind == 0:
        return Case("random bytes", body=rng.randbytes(rng.randrange(1, 400)))
    if kind == 1:
        return Case("cut MessagePack", body=good[: rng.randrange(1, len(good))])
    if kind == 2:
        return Case("not a map", body=msgpack.packb(rng.choice([[1, 2], 5, "op", None, b"x"])))
    if kind == 3:
        return Case("a map with integer keys", body=msgpack.packb({1: 2, "op": "crypt"}))
    if kind == 4:
        return Case("an ext type", body=msgpack.packb(
            {"op": "crypt", "version": protocol.VERSION, "cipher": "aes-128-ctr", "key": KEY,
             "iv": IV, "encrypt": True, "data": msgpack.ExtType(5, b"abc")}), named={"data"})
    if kind == 5:
        return Case("a frame past MAX_MESSAGE", body=msgpack.packb(
            {"op": "crypt", "data": bytes(protocol.MAX_MESSAGE + 100)}, use_bin_type=True))
    if kind == 6:
        return Case("deep nesting", body=b"\x91" * 5000 + b"\xc0")
    if kind == 7:
        return Case("descriptors without a message", body=b"",
                    make_fds=lambda: (os.open("/dev/null", os.O_RDONLY),), fd_count=1)
    return Case("too many descriptors", body=good,
                make_fds=lambda: tuple(os.open("/dev/null", os.O_RDONLY) for _ in range(6)))


def cases(rng: random.Random, folder: str):
    """Endless cases: a valid request now and then, mostly changed ones, frames, descriptors."""
    while True:
        pick = rng.random()
        op = rng.choice(OPS)
        msg, make_fds = valid(rng, folder, op)
        if pick < 0.08:
            yield Case(f"valid {op}", msg, make_fds)
        elif pick < 0.18:
            yield _frames(rng)
        elif pick < 0.26:   # a descriptor too many, too few, another kind
            how = rng.randrange(3)
            if how == 0:
                extra = make_fds

                def more(extra=extra):
                    return (*(extra() if extra else ()), os.open("/dev/null", os.O_RDONLY))
                yield Case(f"{op} with a descriptor more", msg, more)
            elif how == 1:
                yield Case(f"{op} without its descriptors", msg, None)
            else:
                yield Case(f"{op} with a folder for a descriptor", msg,
                           lambda: (os.open(folder, os.O_RDONLY),) * (2 if op in ("stream", "sealed")
                                                                      else 1))
        else:
            changed, named, what = mutate(rng, msg)
            yield Case(f"{op}: {what}", changed, make_fds, named=named)


# -- the replies ----------------------------------------------------------------------------------
def problems(case: Case, reply) -> list[str]:
    """What is wrong with the service's reply to ``case`` (none: a success or a clean error)."""
    if reply is None:
        return [] if case.body == b"" else [f"{case}: the connection closed without a reply"]
    if reply.get("ok") is True:
        return [f"{case}: accepted, yet it breaks the rule of {sorted(case.named)}"] if case.named else []
    err = reply.get("error")
    if not isinstance(err, dict):
        return [f"{case}: a reply without ok or error: {str(reply)[:200]}"]
    kind, text = err.get("type"), err.get("message")
    out = []
    if kind not in CLEAN_TYPES:
        out.append(f"{case}: error type {kind!r}")
    if not isinstance(text, str) or "\n" in text or not text.strip():
        out.append(f"{case}: not one line: {text!r}")
    elif _INTERNAL.search(text):
        out.append(f"{case}: Python's internals: {text}")
    elif case.named and not any(str(n) in text for n in case.named):
        out.append(f"{case}: the error names none of {sorted(case.named)}: {text}")
    return out


# -- a service of its own ---------------------------------------------------------------------------
class ServerProcess:
    """``ciphergrid serve`` on a socket in a new folder, a process of its own, under ``policy``
    (by default a memory limit: a request within the schema may still ask for 64 GiB of
    buffers), with ``env`` (None: this process's).  A context manager that stops it (SIGTERM, then SIGKILL) and removes the folder."""

    def __init__(self, policy: str = "[defaults]\nmax_jobs = 4\nmax_memory = \"256Mi\"\n",
                 job_timeout: float = 10, start_timeout: float = 60, env: dict | None = None):
        self.folder = tempfile.mkdtemp(prefix="cg-fuzz-")
        self.address = os.path.join(self.folder, "f.sock")
        path = os.path.join(self.folder, "policy.toml")
        with open(path, "w") as f:
            f.write(policy)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ciphergrid", "serve", "--socket", self.address,
             "--job-timeout", str(job_timeout), "--policy", path],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                if self.ask({"op": "hello", "version": protocol.VERSION}, timeout=5).get("pid") == self.proc.pid:
                    break
            except (OSError, protocol.ProtocolError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the service did not start")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def fds(self) -> int:
        """The service's descriptors of the kinds a client passes or makes it open: sockets,
        pipes, memfds, files in this folder, /dev/null (not its own caches' files, which the
        libraries it loads open once)."""
        out = 0
        for name in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{self.pid}/fd/{name}")
            except OSError:
                continue
            out += (target.startswith(("socket:", "pipe:", "/memfd:", "anon_inode:", self.folder))
                    or target == "/dev/null")
        return out

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, msg: dict, fds=(), timeout: float = 30):
        """One request on a connection of its own; the reply (progress skipped)."""
        from .services import ask

        return ask(self.address, msg, fds, timeout)

    def close(self) -> str:
        """Stop it; its stderr."""
        err = ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stderr is not None:
            err = self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        return err

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Fuzzer:
    """Cases against a ServerProcess: ``run(seconds, max_cases)`` -> a summary; ``problems``:
    every fault found (an unclean reply, a silent service, threads past the bound, descriptors
    left behind)."""

    def __init__(self, server: ServerProcess, seed: int, reply_timeout: float = 30):
        self.server, self.seed = server, seed
        self.rng = random.Random(seed)
        self.reply_timeout = reply_timeout
        self.problems: list[str] = []
        self.counts = {"cases": 0, "ok": 0, "errors": 0, "closed": 0}
        self.max_threads = 0
        self.slowest = (0.0, "")

    def _send(self, case: Case):
        fds = case.make_fds() if case.make_fds else ()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.settimeout(self.reply_timeout)
                s.connect(self.server.address)
                body = case.body
                if body is None:
                    import msgpack

                    body = msgpack.packb(case.msg, use_bin_type=True)
                    if len(body) > protocol.MAX_MESSAGE:   # (refused as a frame, unread)
                        case.named = set()
                if fds:
                    socket.send_fds(s, [body], list(fds))
                else:
                    s.sendall(body)
                if body == b"" and not fds:
                    return None
                while True:
                    try:
                        reply, extra = protocol.recv(s)
                    except protocol.ProtocolError as e:   # (the service's reply is not a map)
                        return {"error": {"type": "unreadable reply", "message": str(e)}}
                    protocol.close_fds(extra)
                    if reply is None or set(reply) != {"progress"}:
                        return reply
        finally:
            protocol.close_fds(fds)

    def normal(self) -> list[str]:
        """A normal request answers at once, with the right bytes."""
        from . import oracle

        data = self.rng.randbytes(100)
        try:
            reply = self.server.ask({"op": "crypt", "version": protocol.VERSION,
                                     "cipher": "aes-128-ctr", "key": KEY, "iv": IV,
                                     "encrypt": True, "data": data}, timeout=self.reply_timeout)
        except OSError as e:
            return [f"a normal request failed: {e}"]
        if not reply or reply.get("data") != oracle.encrypt(data, "aes-128-ctr", KEY, IV):
            return [f"a normal request got {str(reply)[:200]}"]
        return []

    def warm_up(self) -> tuple[int, int]:
        """Each op once (the engines and their threads set up); (threads, descriptors) at rest."""
        for op in OPS:
            msg, make_fds = valid(self.rng, self.server.folder, op)
            self._send(Case(f"warm-up {op}", msg, make_fds))
        self.problems += self.normal()
        return self.settle(10 ** 6, 10 ** 6, 2.0)

    def settle(self, threads: int, fds: int, seconds: float) -> tuple[int, int]:
        """Wait up to ``seconds`` for the service to be back to ``threads`` and ``fds``."""
        deadline = time.monotonic() + seconds
        while True:
            t, f = self.server.threads(), self.server.fds()
            if (t <= threads and f <= fds) or time.monotonic() > deadline:
                return t, f
            time.sleep(0.05)

    def run(self, seconds: float, max_cases: int | None = None, check_every: int = 20) -> dict:
        """Cases for ``seconds`` (at most ``max_cases``); the service's state checked after each,
        a normal request every ``check_every``; at the end its threads and descriptors back to
        where they were after the warm-up."""
        threads0, fds0 = self.warm_up()
        folder = self.server.folder
        deadline = time.monotonic() + seconds
        gen = cases(self.rng, folder)
        for case in gen:
            if time.monotonic() > deadline or (max_cases and self.counts["cases"] >= max_cases):
                break
            self.counts["cases"] += 1
            t0 = time.monotonic()
            try:
                reply = self._send(case)
            except (socket.timeout, TimeoutError):
                self.problems.append(f"{case}: no reply in {self.reply_timeout} s")
                reply = False
            except OSError as e:
                self.problems.append(f"{case}: the connection failed: {e}")
                reply = False
            took = time.monotonic() - t0
            if took > self.slowest[0]:
                self.slowest = (took, case.what)
            if reply is not False:
                self.counts["ok" if reply and reply.get("ok") else "errors"] += 1
                self.counts["closed"] += reply is None
                self.problems += problems(case, reply)
            t = self.server.threads()
            self.max_threads = max(self.max_threads, t)
            if t > threads0 + THREADS_SLACK:
                self.problems.append(f"after {case}: {t} threads (at rest {threads0})")
            if not self.server.alive():
                self.problems.append(f"{case}: the service died")
                break
            if self.counts["cases"] % check_every == 0:
                self.problems += [f"after {case}: {p}" for p in self.normal()]
            if len(self.problems) > 20:
                break
        if self.server.alive():
            self.problems += self.normal()
            t, f = self.settle(threads0, fds0, 10.0)
            if t > threads0:
                self.problems.append(f"{t} threads left running (at rest {threads0})")
            if f > fds0:
                self.problems.append(f"{f} descriptors held (at rest {fds0})")
        return {"seed": self.seed, **self.counts, "threads_at_rest": threads0,
                "threads_max": self.max_threads, "fds_at_rest": fds0,
                "slowest_s": round(self.slowest[0], 3), "slowest": self.slowest[1],
                "problems": len(self.problems)}
