"""``ciphergrid serve``: one process that owns a runtime (device contexts, compiled kernels,
page-locked staging, the scheduler's speeds) and runs the requests of many local clients.

Each connection is served by a thread of its own, under the server's one :class:`Runtime`
(what a client's job sets up -- a GPU's kernels, its pipeline -- serves the next client too).
Who may connect: the peer's user id (SO_PEERCRED) must be the server's own.  A job's keys live in
its Request for the job only and are dropped with it; every error goes back as one line.

Ops (protocol.py, docs/service.md): ``hello``, ``status``, ``crypt`` (a buffer: inline, or a
sealed memfd enciphered in place), ``stream`` (the client's input and output descriptors: the
server reads and writes the client's own open files; progress messages while it runs),
``sealed`` (a sealed file, C2SP chunked encryption, between the client's descriptors as a stream;
the input key already derived by the client, a passphrase never sent), ``aead``, ``batch``.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import mmap
import os
import socket
import threading
import time

from .. import errors
from ..runtime import Runtime
from . import protocol, schema

#: a job running longer than this is given up: its connection is closed (a silent pipe cannot
#: hold a client's connection for ever)
JOB_TIMEOUT_S = 3600.0
#: seconds between two progress messages of a stream job
PROGRESS_EVERY_S = 0.2
#: seconds a stopping server waits for the jobs running to end
STOP_GRACE_S = 10.0


class Server:
    """A service on the Unix socket ``address`` (created; removed by :meth:`close`)."""

    def __init__(self, address: str | None, *, job_timeout: float = JOB_TIMEOUT_S, policy=None,
                 socket_mode: int = 0o600, socket_group: str | None = None,
                 inherited: socket.socket | None = None):
        from .policy import Policy

        self.address = address
        self.job_timeout = check_job_timeout(job_timeout)
        self.runtime = Runtime("service", serving=True)
        self.uid = os.getuid()
        self.policy = policy or Policy(self.uid)
        self.running: dict = {}      # uid -> jobs running now
        self.memory: dict = {}       # uid -> bytes of the service's memory its running jobs hold
        #: what all the running jobs together may hold, whatever the policy allows each user
        self.memory_budget = _memory_budget()
        from .fair import Fair

        self.fair = Fair()           # the devices' bytes shared by the clients' weights
        self.started = time.time()
        self.lock = threading.Lock()
        self.slots = threading.Condition(self.lock)   # (a job waiting for its user's slot)
        self.stopping = threading.Event()
        self.clients: dict = {}      # connection id -> {"uid", "pid", "jobs", "bytes", "since"}
        self.totals = {"connections": 0, "jobs": 0, "bytes": 0, "errors": 0, "refused": 0}
        self._next = 0
        self._threads: list = []
        self.metrics = None          # metrics.Metrics once serve_metrics() ran
        self._conn = threading.local()   # the connection this thread serves: its mapped arena
        #: a socket systemd made and passed (socket activation) stays systemd's: not removed
        self.owns_socket = inherited is None
        if inherited is not None:
            if inherited.family != socket.AF_UNIX or inherited.type != socket.SOCK_SEQPACKET:
                raise errors.InvalidArgument("the socket passed by systemd must be a Unix "
                                             "SOCK_SEQPACKET one (ListenSequentialPacket=)")
            inherited.settimeout(0.2)
            self.sock = inherited
            self.address = inherited.getsockname()
        else:
            self.sock = self._listen(address, socket_mode, socket_group)

    # -- the socket ---------------------------------------------------------------------------
    @staticmethod
    def _listen(address: str, mode: int = 0o600, group: str | None = None) -> socket.socket:
        from ..settings import default_service_address

        folder = os.path.dirname(os.path.abspath(address))
        if not os.path.isdir(folder):   # (the per-user default's folder is made; another is not)
            if os.path.abspath(address) != os.path.abspath(default_service_address()):
                raise errors.InvalidArgument(f"--socket {address}: no folder {folder}")
            os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.path.exists(address):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                probe.connect(address)
                raise errors.ServiceError(f"a service is already running at {address}")
            except (ConnectionRefusedError, FileNotFoundError):
                os.unlink(address)   # a stale socket, left by a server that was killed
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        old = os.umask(0o177)        # the socket file: its owner only (rw-------) until chmod
        try:
            sock.bind(address)
        finally:
            os.umask(old)
        if group is not None:        # (a system service: its group's members may connect)
            import grp

            try:
                os.chown(address, -1, grp.getgrnam(group).gr_gid)
            except KeyError:
                sock.close()
                os.unlink(address)
                raise errors.InvalidArgument(f"no group {group!r} on this machine") from None
        os.chmod(address, mode)
        sock.listen(64)
        sock.settimeout(0.2)         # (the accept loop looks at stopping this often)
        return sock

    def listen_remote(self, host: str, port: int, *, tls=None, tokens=None,
                      insecure_loopback: bool = False) -> int:
        """Also serve remote clients on TCP ``host:port`` (0: any free port; the port is
        returned): over TLS (``tls``: a server ``ssl.SSLContext``; clients known by their
        certificate when it requires one, else by a token), or -- on the loopback address only,
        and only with ``insecure_loopback`` -- without TLS, a token required."""
        import ipaddress
        import ssl

        check_port(port, "--listen")
        if tls is None:
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = host == "localhost"
            if not (insecure_loopback and loopback):
                raise errors.InvalidArgument("a remote listener needs TLS (--tls-cert, --tls-key); "
                                             "without it only the loopback address, with "
                                             "--insecure-loopback")
        certs = tls is not None and tls.verify_mode == ssl.CERT_REQUIRED
        if not certs and not tokens:
            raise errors.InvalidArgument("remote clients need client certificates (--tls-client-ca) "
                                         "or a token (--token-file)")
        self.remote = {"tls": tls, "tokens": [t for t in tokens or () if t], "certs": certs}
        try:
            tcp = socket.create_server((host, port))
        except OSError as e:   # (an address not here, a port taken)
            raise errors.InvalidArgument(f"--listen {host}:{port}: {e.strerror or e}") from None
        tcp.settimeout(0.2)
        self.tcp = tcp
        return tcp.getsockname()[1]

    remote = None
    tcp = None

    def serve_forever(self) -> None:
        """Accept and serve until :meth:`stop`; then wait for the running jobs (STOP_GRACE_S)."""
        import select

        _limit_arenas()
        try:
            while not self.stopping.is_set():
                socks = [self.sock] + ([self.tcp] if self.tcp is not None else [])
                try:
                    ready, _, _ = select.select(socks, [], [], 0.2)
                except (OSError, ValueError):
                    if self.stopping.is_set():
                        break
                    raise
                for lst in ready:
                    try:
                        conn, _ = lst.accept()
                    except (socket.timeout, BlockingIOError):
                        continue
                    except OSError:
                        if self.stopping.is_set():
                            break
                        raise
                    serve = self._serve_connection if lst is self.sock else self._serve_remote
                    t = threading.Thread(target=serve, args=(conn,), daemon=True,
                                         name="ciphergrid-service-client")
                    self._threads = [x for x in self._threads if x.is_alive()] + [t]
                    t.start()
        finally:
            self.close()

    def stop(self) -> None:
        """Stop accepting (a signal handler may call this)."""
        self.stopping.set()

    def close(self) -> None:
        """Remove the socket; give the jobs running STOP_GRACE_S to end."""
        self.stopping.set()
        for lst in (self.sock, self.tcp):
            try:
                if lst is not None:
                    lst.close()
            except OSError:
                pass
        if self.owns_socket:
            try:
                os.unlink(self.address)
            except OSError:
                pass
        if self.metrics is not None and self.metrics.server is not None:
            self.metrics.server.shutdown()
            self.metrics.server.server_close()
        deadline = time.monotonic() + STOP_GRACE_S
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))

    # -- one client ---------------------------------------------------------------------------
    def _serve_connection(self, conn: socket.socket) -> None:
        from .policy import peer_groups

        with conn, self.runtime:
            ch = protocol.Channel(conn)
            try:
                pid, uid, gid = protocol.peer_creds(conn)
                grant = self.policy.grant(uid, peer_groups(conn, gid))
            except OSError:
                return
            if grant is None:
                self._count("refused")
                try:   # (its first message read, so that the refusal reaches it)
                    conn.settimeout(5)
                    _, fds = ch.recv()
                    protocol.close_fds(fds)
                    who = (f"its policy ({self.policy.source})" if self.policy.source
                           else f"it serves user {self.uid} only")
                    ch.send({"error": {"type": "ServiceError",
                                       "message": f"user {uid} may not use this service ({who})"}})
                except (OSError, protocol.ProtocolError):
                    pass
                return
            self._serve_client(ch, uid, pid, grant)

    def _serve_client(self, ch, uid, pid, grant) -> None:
        """An admitted client: listed in the status while it is served."""
        with self.lock:
            self._next += 1
            cid = self._next
            self.clients[cid] = {"uid": uid, "pid": pid, "jobs": 0, "bytes": 0,
                                 "since": time.time(), "weight": grant.weight}
        self._count("connections")
        self._conn.maps = {}   # (this connection's arena, mapped)
        try:
            self._loop(ch, cid, uid, grant)
        finally:
            for mm in self._conn.maps.values():
                _unmap(mm)
            self._conn.maps = {}
            with self.lock:
                self.clients.pop(cid, None)
            _trim_heap()

    def _serve_remote(self, raw: socket.socket) -> None:
        """A remote client: TLS (its certificate, else a token in its hello), then as a local
        one, the data inside the messages (no descriptors, no shared memory)."""
        import hmac

        from .policy import Grant

        conn = raw
        with self.runtime:
            try:
                raw.settimeout(10)   # (the handshake and the hello: no slow loris)
                if self.remote["tls"] is not None:
                    conn = self.remote["tls"].wrap_socket(raw, server_side=True)
                ch = protocol.StreamChannel(conn)
                who = None
                if self.remote["certs"]:
                    subject = dict(x[0] for x in conn.getpeercert().get("subject", ()))
                    who = f"certificate {subject.get('commonName', '?')}"
                hello, _ = ch.recv()
                if not hello or hello.get("op") != "hello":
                    raise protocol.ProtocolError("a remote connection starts with hello")
                if who is None:
                    token = hello.get("token")
                    known = [i for i, t in enumerate(self.remote["tokens"])
                             if isinstance(token, str) and hmac.compare_digest(token, t)]
                    if not known:
                        self._count("refused")
                        ch.send({"error": {"type": "ServiceError",
                                           "message": "not allowed: an unknown token"}})
                        return
                    who = f"token #{known[0] + 1}"
                conn.settimeout(None)
                d = self.policy.defaults
                grant = Grant(d.weight, d.max_jobs, f"remote client ({who})", d.max_memory)
                ch.send(self._hello())
                self._serve_client(ch, f"remote {who}", None, grant)
            except (OSError, protocol.ProtocolError, ValueError):
                return   # (a failed handshake, a client gone: that connection only)
            finally:
                try:
                    conn.close()
                except OSError:
                    pass

    def _loop(self, ch, cid, uid, grant) -> None:
        while True:
            try:
                msg, fds = ch.recv()
            except protocol.ProtocolError as e:   # a malformed message: say so, close
                try:
                    ch.send(protocol.error_reply(e))
                except OSError:
                    pass
                return
            except OSError:
                return
            if msg is None:
                return
            if self.stopping.is_set() and msg.get("op") not in ("hello", "status"):
                protocol.close_fds(fds)
                ch.send({"error": {"type": "ServiceError", "message": "the service is stopping"}})
                return
            try:
                reply = self._handle(ch, cid, msg, fds, uid, grant)
            except (BrokenPipeError, ConnectionResetError):
                return   # the client went away mid-job: the job is given up, nothing else
            except BaseException as e:
                if not isinstance(e, Exception):
                    raise
                self._count("errors")
                reply = protocol.error_reply(e)
                if isinstance(e, protocol.ProtocolError):   # (not the protocol: said, closed)
                    try:
                        ch.send(reply)
                    except (OSError, protocol.ProtocolError):
                        pass
                    return
            finally:
                protocol.close_fds(fds)
            try:
                ch.send(reply)
            except (OSError, protocol.ProtocolError):
                return

    def _handle(self, ch, cid, msg: dict, fds: list, uid, grant) -> dict:
        """One request: checked against its op's schema, its memory computed from its fields
        and admitted against the user's limits, all before any work; what admission took is
        given back however the job ends (:meth:`_admitted`)."""
        op = schema.check(msg, fds, ch.local)
        if op == "hello":
            return self._hello()
        if op == "status":   # (the other clients' connections: for the server's user and root)
            return {"ok": True, **self.status(full=uid in (self.uid, 0))}
        req = _request(msg) if op in ("crypt", "stream") else None
        if op == "stream":   # (its buffers sized for its input, before they are counted)
            msg["chunk_bytes"], msg["depth"] = _stream_tuning(msg, fds[0])
        pieces = None
        if op == "sealed":   # (its workers cut to its input and to what the user may hold)
            limit = self.memory_budget if grant.max_memory is None \
                else min(grant.max_memory, self.memory_budget)
            pieces = _sealed_plan(msg, fds[0], limit)
        need = _memory_need(op, msg) if pieces is None else pieces[2]
        if grant.max_memory is not None and need > grant.max_memory:
            raise errors.ServiceError(f"this job would hold {need} bytes of the service's memory "
                                      f"({_memory_fields(op)}); user {uid} may hold "
                                      f"{grant.max_memory} ({grant.why}): {_memory_hint(op)}")
        if need > self.memory_budget:
            raise errors.ServiceError(f"this job would hold {need} bytes of the service's memory "
                                      f"({_memory_fields(op)}); its jobs together may hold "
                                      f"{self.memory_budget} (half this machine's memory): "
                                      f"{_memory_hint(op)}")
        with self._admitted(cid, uid, grant, need), self._job(ch, grant) as job:
            reply = (self._crypt(msg, req, fds, job, ch.local) if op == "crypt"
                     else self._aead(msg, fds, job, ch.local) if op == "aead"
                     else self._batch(msg, fds, job, ch.local) if op == "batch"
                     else self._sealed(ch, msg, fds, job, pieces) if op == "sealed"
                     else self._stream(ch, msg, req, fds, job))
        with self.lock:
            self.clients[cid]["bytes"] += reply["bytes"]
            self.totals["bytes"] += reply["bytes"]
        if self.metrics is not None:
            self.metrics.job(op, reply["bytes"], reply.get("device"))
        return {"ok": True, **reply}

    @contextlib.contextmanager
    def _admitted(self, cid, uid, grant, need: int):
        """One of the user's job slots and ``need`` bytes of its memory, for the block: waits
        past ``max_jobs`` or ``max_memory`` (up to the job time limit); given back when the
        block ends, whatever ends it."""
        with self.slots:
            deadline = time.monotonic() + self.job_timeout
            while (self.running.get(uid, 0) >= grant.max_jobs
                   or (grant.max_memory is not None
                       and self.memory.get(uid, 0) + need > grant.max_memory)
                   or sum(self.memory.values()) + need > self.memory_budget):
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    raise errors.ServiceError(f"user {uid} runs {self.running.get(uid, 0)} jobs "
                                              f"holding {self.memory.get(uid, 0)} bytes, its "
                                              f"limits ({grant.why}; all jobs hold "
                                              f"{sum(self.memory.values())} of "
                                              f"{self.memory_budget}), and none ended in time")
                self.slots.wait(min(left, 0.5))
            self.running[uid] = self.running.get(uid, 0) + 1
            self.memory[uid] = self.memory.get(uid, 0) + need
            self.clients[cid]["jobs"] += 1
            self.totals["jobs"] += 1
        try:
            yield
        finally:
            with self.slots:
                self.running[uid] -= 1
                self.memory[uid] -= need
                self.slots.notify_all()

    @contextlib.contextmanager
    def _job(self, ch, grant):
        """A running job: its time limit and its place among the fair shares, for the block."""
        timer = threading.Timer(self.job_timeout, self._overdue, args=(ch,))
        timer.daemon = True
        timer.start()
        job = object()
        self.fair.join(job, grant.weight)
        try:
            yield job
        finally:
            self.fair.leave(job)
            timer.cancel()

    def _hello(self) -> dict:
        return {"ok": True, "version": protocol.VERSION, "pid": os.getpid(), "uid": self.uid}

    def _count(self, what: str) -> None:
        with self.lock:
            self.totals[what] += 1
        if self.metrics is not None:
            self.metrics.count(what)

    def _overdue(self, ch) -> None:
        """A job past the time limit (a pipe that never delivers, say): the client is told and
        its connection closed; the job's thread ends when its descriptor does."""
        try:
            ch.send({"error": {"type": "ServiceError", "message":
                               f"the job ran past the service's limit of "
                               f"{self.job_timeout:g} s (an input that never ends?)"}})
        except (OSError, protocol.ProtocolError):
            pass
        ch.shutdown()

    def _crypt(self, msg, req, fds, job, local: bool = True) -> dict:
        """A buffer: inline (the reply carries the result) or a sealed memfd, in place."""
        if "data" in msg:
            buf = _inline(msg, local)
            device = self._run_host(req, buf, msg.get("device"), job)
            return {"bytes": buf.nbytes, "data": buf.tobytes(), "device": device}
        buf, mm = self._map(fds[0], msg)
        n = buf.nbytes
        if n == 0:
            return {"bytes": 0, "device": None}
        try:
            device = self._run_host(req, buf, msg.get("device"), job)
        finally:
            del buf
            _unmap(mm)
        return {"bytes": n, "device": device}

    def _map(self, fd: int, msg: dict):
        """A client's sealed memfd as (an array of the request's ``length`` bytes, the mapping to
        close after the request or None).  A memfd the request names as the connection's
        ``arena`` (a token of the client's) stays mapped for its next requests: its pages are
        not faulted in again each time; a new arena replaces the connection's old one."""
        import numpy as np

        n = _sealed_size(fd, msg.get("length"), arena="arena" in msg)
        if "arena" not in msg:
            mm = mmap.mmap(fd, n) if n else None
            return (np.frombuffer(mm, dtype=np.uint8) if mm is not None
                    else np.zeros(0, dtype=np.uint8)), mm
        token, st = msg["arena"], os.fstat(fd)
        if not isinstance(token, bytes):
            raise protocol.ProtocolError("arena must be bytes")
        maps = self._conn.maps
        key = (token, st.st_dev, st.st_ino, st.st_size)
        mm = maps.get(key)
        if mm is None:
            for old in maps.values():
                _unmap(old)
            maps.clear()
            mm = maps[key] = mmap.mmap(fd, st.st_size)
        return np.frombuffer(mm, dtype=np.uint8, count=n), None

    def _aead(self, msg, fds, job, local: bool = True) -> dict:
        """One AEAD message: inline, or in a sealed memfd (encryption: the text, room for the tag
        after it; decryption: text and tag, the plaintext written over them only once the tag
        verified -- else zeroed, and InvalidTag)."""
        import numpy as np

        from .. import aead, aeads

        spec = aeads.spec(msg["cipher"])   # (the fields: checked by schema.check)
        encrypt, tl = msg["encrypt"], msg["tag_length"]
        key, nonce = msg["key"], msg["nonce"]
        aad = msg.get("aad") or b""
        spec.aead.check(spec.name, len(key), len(nonce), tl)
        impl = aead._implementation(spec.aead, False, msg.get("impl"))
        shared = None
        if "data" in msg:
            src = _inline(msg, local)
            n = src.nbytes
        else:
            n = msg["text_length"]
            room = _sealed_size(fds[0], msg["length"], arena="arena" in msg)
            shared = fds[0]
            src = np.empty(n, dtype=np.uint8)   # (read, then written back: no mapping outlives it)
            if n and os.preadv(shared, [memoryview(src)], 0) != n:
                raise errors.InvalidArgument("aead: the shared buffer is shorter than "
                                             "text_length")
        try:
            if not encrypt and n < tl:
                raise errors.InvalidTag(f"{spec.name}: the input ({n} bytes) is shorter than its tag")
            text = n if encrypt else n - tl
            aead._check_limits(spec, text, len(aad))
            out_n = n + tl if encrypt else n - tl
            if shared is not None and out_n > room:
                raise errors.InvalidArgument("aead: length leaves no room for the tag")
            dst = np.empty(out_n, dtype=np.uint8)
            self.fair.take(job, n)
            device = msg.get("device") or "auto"
            aead._one(spec, encrypt, key, nonce, aad, tl, src, text, dst, device, impl, "array")
            reply = {"bytes": text, "device": device}
            if shared is None:
                reply["data"] = dst.tobytes()
            elif out_n and os.pwritev(shared, [memoryview(dst)], 0) != out_n:
                raise OSError("a short write into the shared buffer")
            return reply
        finally:
            src[:] = 0   # (the client's plaintext or unverified text: not kept)

    def _batch(self, msg, fds, job, local: bool = True) -> dict:
        """A batch of AEAD messages in one buffer (protocol.batch_layout): inline, or a sealed
        memfd.  Its tables (offsets, key indices, keys, nonces, AAD) are copied out and checked as
        the library checks its own, so a client changing the buffer meanwhile changes only its
        own results; decryption runs into a buffer of the service's, and only verified texts
        (zeros for the others) are written back."""
        from .. import aead, aeads

        spec = aeads.spec(msg["cipher"])   # (the fields: checked by schema.check)
        encrypt, tl, m, n = msg["encrypt"], msg["tag_length"], msg["m"], msg["n"]
        k, nl, kl = msg["keys"], msg["nonce_length"], spec.key_len
        spec.aead.check(spec.name, kl, nl, tl)
        impl = aead._implementation(spec.aead, False, msg.get("impl"))
        layout, total = protocol.batch_layout(m, n, tl, k, kl, nl, msg["aad_length"])
        mm, inline = None, "data" in msg
        if inline:
            region = _inline(msg, local)
        else:
            region, mm = self._map(fds[0], msg)
        if region.nbytes != total:
            size = region.nbytes
            del region
            _unmap(mm)
            raise errors.InvalidArgument(f"batch: a buffer of {size} bytes; m, n, keys, "
                                         f"nonce_length, aad_length and tag_length say {total}")
        v = protocol.batch_views(region, layout)
        table = v["keys"].reshape(k, kl).copy()
        try:
            index = v["index"].copy()
            if m and (k == 0 or int(index.min()) < 0 or int(index.max()) >= k):
                raise errors.InvalidArgument("a batch's key index outside its key table")
            src, off, got, longest = aead._texts(
                spec, v["text"], v["off"].copy(), encrypt,
                None if encrypt else v["tags"].reshape(m, tl).copy(), tl)
            non = aead._nonce_table(spec, v["nonces"].reshape(m, nl).copy(), m, tl, kl)
            aad, aad_off = v["aad"].copy(), v["aad_off"].copy()
            if (aad_off.size != m + 1 or aad_off[0] != 0 or aad_off[-1] != aad.nbytes
                    or not bool((aad_off[1:] >= aad_off[:-1]).all())):
                raise errors.InvalidArgument("a batch's AAD offsets must rise from 0 to its size")
            self.fair.take(job, n)
            device = msg.get("device") or "auto"
            res = aead._run_tables(spec, encrypt, tl, impl, src, off, got, longest, table, index,
                                   non, aad, aad_off, device,
                                   out=v["out"] if encrypt else None)
            if encrypt:
                v["tags"][:] = res.tags.reshape(-1)
            else:
                v["out"][:] = res.data
                v["ok"][:] = res.ok
                res.data[...] = 0
            reply = {"bytes": n, "device": device}
            if inline:
                start = layout["out"][0]
                reply["data"] = region[start:layout["ok"][0] + m].tobytes()
            return reply
        finally:
            table.fill(0)
            if inline:
                region[:] = 0   # (the client's texts and keys: not kept)
            del v, region
            _unmap(mm)

    def _run_host(self, req, buf, device, job) -> str:
        """``req`` over host bytes ``buf`` in place on the engine the route picks, in slices of
        fair.SLICE, each after its turn (fair.py); the engine's spec."""
        from ..route import route
        from .fair import SLICE

        n = buf.nbytes
        req.check_length(n)
        req.admit(n)
        if not n:
            return ""
        plan = route(req, device or "auto", n)
        plan.run(buf, buf, slice_bytes=SLICE, turn=lambda k: self.fair.take(job, k))
        return plan.device

    def _stream(self, ch, msg, req, fds, job) -> dict:
        """The client's input descriptor to its output descriptor, progress sent as it goes."""
        from ..route import route

        # the size the client says is a hint for the route; what sizes work here (the output's
        # pages faulted in ahead) is the input's own size, where it is a regular file
        size = _remaining(fds[0])
        n = size if size is not None else msg.get("nbytes")
        r = route(req, msg.get("device") or "auto", n, path="stream")
        progress = _Progress(self.fair, ch, job)
        t0 = time.perf_counter()
        prefault = None
        if msg.get("fresh_output") and r.prefaults_output and size is not None:
            from ..transfer.files import prefault_output

            prefault = prefault_output(fds[1], n, new=True)   # (a RAM disk's pages, ahead)
        try:
            if prefault is not None:
                prefault.wait()
            done = r.stream(fds[0], fds[1], progress=progress, nbytes=n,
                            chunk_bytes=msg.get("chunk_bytes"), depth=msg.get("depth"))
        finally:
            if prefault is not None:
                prefault.close()
        return {"bytes": done, "device": r.device, "reason": r.reason,
                "seconds": round(time.perf_counter() - t0, 6)}

    def _sealed(self, ch, msg, fds, job, pieces) -> dict:
        """A sealed file from the client's input descriptor to its output descriptor
        (transfer/sealed.py, as ``ciphergrid seal`` / ``open`` run it in process): sealing writes
        the C2SP header first; opening checks the key commitment of the header the client read
        (CommitmentMismatch) before any chunk.  Progress (the bytes written, header included) is
        sent as it goes; a failure carries the bytes written before it (``service_done``)."""
        from ..formats import cobblestone as cb
        from ..transfer import files, sealed

        sch = _scheme(msg["cipher"])
        device = msg.get("device") or "auto"
        context = msg.get("context") or b""
        piece, workers, _ = pieces   # (_sealed_plan's)
        progress = _Progress(self.fair, ch, job)
        t0 = time.perf_counter()
        try:
            if msg["encrypt"]:
                sealer = cb.Sealer(sch, msg["key"], context, device=device, path="stream")
                head = sealer.header()
                files.write_all(fds[1], memoryview(head), None)
                progress(len(head))
                sealed.seal(fds[0], fds[1], sealer, piece=piece, threads=workers,
                            progress=progress)
            else:
                opener = cb.Opener(sch, msg["key"], context, msg["header"], device=device,
                                   path="stream")
                sealed.open_(fds[0], fds[1], opener, piece=piece, threads=workers,
                             progress=progress)
        except Exception as e:
            e.service_done = progress.done   # (what reached the output: the client says so)
            raise
        where, reason = _sealed_where(sch, device, piece, workers)
        return {"bytes": progress.done, "device": where, "reason": reason,
                "seconds": round(time.perf_counter() - t0, 6)}

    def status(self, full: bool = True) -> dict:
        """What the service does; ``full``: with each connection's user, pid, jobs and bytes
        (not shown to other users' clients)."""
        from ..devices import all_devices

        with self.lock:
            out = {"version": protocol.VERSION, "pid": os.getpid(), "uid": self.uid,
                    "address": self.address, "uptime_s": round(time.time() - self.started, 3),
                    "clients": len(self.clients), "totals": dict(self.totals),
                    "connections": [{"uid": c["uid"], "pid": c["pid"], "jobs": c["jobs"],
                                     "bytes": c["bytes"], "weight": c["weight"]}
                                    for c in self.clients.values()],
                    "running": {str(u): n for u, n in self.running.items() if n},
                    "memory": {str(u): n for u, n in self.memory.items() if n},
                    "policy": self.policy.source or None,
                    "devices": [d.spec for d in all_devices()],
                    "engines": sorted(self.runtime.engines), "pinned_bytes": self.runtime.pinned_bytes()}
        if not full:
            out.pop("connections")
            out.pop("running")
            out.pop("memory")
        return out

    def serve_metrics(self, port: int, addr: str = "127.0.0.1"):
        """Prometheus metrics (text format) on http://ADDR:PORT/metrics (prometheus-client)."""
        from .metrics import Metrics

        check_port(port, "--metrics")
        self.metrics = Metrics(self)
        return self.metrics.start(port, addr)


class _Progress:
    """A streamed job's progress callback (called from its workers' threads, one at a time under
    a lock): the bytes written counted, the job's fair share taken before it goes on, the count
    sent to the client every PROGRESS_EVERY_S (a client gone: raises)."""

    def __init__(self, fair, ch, job):
        self.done = 0
        self._fair, self._ch, self._job = fair, ch, job
        self._sent = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, k: int) -> None:
        with self._lock:
            self.done += k
            self._fair.take(self._job, k)
            now = time.monotonic()
            if now - self._sent >= PROGRESS_EVERY_S:
                self._sent = now
                self._ch.send({"progress": self.done})


def check_job_timeout(seconds) -> float:
    """A job time limit: a finite number of seconds above 0 (InvalidArgument naming
    --job-timeout otherwise)."""
    ok = (isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
          and math.isfinite(seconds) and seconds > 0)
    if not ok:
        raise errors.InvalidArgument(f"--job-timeout must be a number of seconds above 0, not "
                                     f"{seconds!r}")
    return float(seconds)


def check_port(port, flag: str) -> int:
    """A TCP port: 0 (any free one) to 65535 (InvalidArgument naming ``flag`` otherwise)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise errors.InvalidArgument(f"{flag}: the port must be 0 to 65535, not {port!r}")
    return port


#: malloc arenas the service's threads share (glibc's default is 8 per core): each connection
#: has a thread, and with one arena per few threads their free memory scatters over many arenas
#: and the server's resident memory grows (docs/benchmarks.md 0v)
ARENAS = 2


def _glibc(name: str):
    """glibc's function ``name`` (None where the C library is not glibc)."""
    import ctypes
    import ctypes.util

    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def _limit_arenas() -> None:
    """glibc's M_ARENA_MAX for the threads to come (unless the user's MALLOC_ARENA_MAX says)."""
    from ..settings import malloc_arena_max_set

    mallopt = None if malloc_arena_max_set() else _glibc("mallopt")
    if mallopt is not None:
        mallopt(-8, ARENAS)   # M_ARENA_MAX


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim) when a connection
    ends: its thread and buffers leave free memory in malloc's arenas, which a resident process
    would otherwise keep for good (bench service's soak)."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        _MALLOC_TRIM = _glibc("malloc_trim") or False   # (False: not glibc, nothing to trim)
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None


def _memory_budget() -> int:
    """Half the machine's physical memory: what the service's running jobs may hold together."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 8 << 30


#: a stream's chunk and depth counted where the client sizes one of them and not the other
#: (the largest of the engines' defaults: transfer.chunking.DEFAULTS, transfer.pieces)
STREAM_CHUNK, STREAM_DEPTH = 16 << 20, 4


def _memory_need(op: str, msg: dict) -> int:
    """Bytes of the service's own memory a job holds (the policy's max_memory counts them),
    from every field that sizes an allocation (schema.py has bounded each): its inline data and
    reply; an AEAD message's copies (the text in, the text and tag out); a batch's tables (keys,
    nonces, tags, offsets, indices, AAD) and, decrypting, its private output; a stream's buffers
    where the client sizes them (``chunk_bytes`` x ``depth``, in and out).  Buffers in the
    client's shared memory, files and pipes cost none, nor does a stream the service sizes
    itself (the devices' staging is the service's, shared by every job)."""
    def count(key: str) -> int:
        v = msg.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    data = msg.get("data")
    inline = 2 * len(data) if isinstance(data, bytes) else 0
    if op == "aead":
        return inline + 2 * count("text_length") + count("tag_length")
    if op == "batch":
        from .. import aeads

        m = count("m")
        tables = (m * (count("nonce_length") + count("tag_length") + 8 + 4 + 8 + 1)
                  + count("keys") * aeads.spec(msg["cipher"]).key_len + count("aad_length"))
        return inline + tables + (0 if msg.get("encrypt") else count("n"))
    if op == "stream" and (count("chunk_bytes") or count("depth")):
        return 2 * (count("chunk_bytes") or STREAM_CHUNK) * (count("depth") or STREAM_DEPTH)
    return inline


def _memory_fields(op: str) -> str:
    """The fields that make a job's memory (for its refusal)."""
    return {"aead": "data, text_length, tag_length",
            "batch": "data, m, nonce_length, tag_length, keys, aad_length, n",
            "stream": "chunk_bytes x depth",
            "sealed": "one worker's pieces in and out, its device and context"}.get(op, "data")


def _memory_hint(op: str) -> str:
    """What a refused job may do instead (for its refusal)."""
    if op == "sealed":
        return "open it in the client's own process (--service off)"
    return "smaller messages or chunks, or a sealed file"


def _scheme(name: str):
    """The sealed files' scheme a request names (``cobblestone-128``, ``cobblestone-256``)."""
    from ..formats import cobblestone as cb

    for sch in (cb.COBBLESTONE_128, cb.COBBLESTONE_256):
        if name == sch.name:
            return sch
    raise errors.InvalidArgument("sealed: cipher must be cobblestone-128 or cobblestone-256")


def _sealed_plan(msg: dict, fd: int, limit: int) -> tuple[int, int, int]:
    """(plaintext bytes per piece, workers, bytes of the service's memory) of a sealed job, from
    its fields and its input: transfer.sealed.plan's pieces and workers (a worker per core where
    OpenSSL's C loop runs the chunks, two for a device's batches), no more workers than a
    regular input has pieces, nor than ``limit`` bytes hold (at least one: a job whose one
    worker passes the limit is refused by its need).  Each worker holds a piece in and its
    sealed or opened form out; a device's batches one more batch of texts; the request its
    context."""
    from types import SimpleNamespace

    from ..formats import cobblestone as cb
    from ..transfer import sealed

    sch = _scheme(msg["cipher"])
    probe = SimpleNamespace(sch=sch, device=msg.get("device") or "auto", path="stream")
    piece, workers, per = sealed.plan(probe)
    sealed_piece = piece // cb.CHUNK * cb.SEALED_CHUNK
    size = _remaining(fd)
    if size is not None:
        step = piece if msg["encrypt"] else sealed_piece
        workers = min(workers, size // step + 1)
    each = piece + sealed_piece
    fixed = len(msg.get("context") or b"") + (0 if per == 1 else piece)
    workers = max(1, min(workers, (limit - fixed) // each))
    return piece, workers, fixed + workers * each


def _sealed_where(sch, device: str, piece: int, workers: int) -> tuple[str, str]:
    """(where a sealed job's chunks ran, how): OpenSSL's C loop, or a device's AEAD batches."""
    from ..transfer import sealed

    native, where, reason = sealed.runs_on(sch, device, piece)
    if native:
        return "native", f"OpenSSL's C loop, {workers} worker{'s' if workers > 1 else ''}"
    return where, f"AEAD batches of {piece >> 20} MiB" + (f", {reason}" if reason else "")


def _request(msg: dict):
    """The client's Request, made again here (its checks and the use policy run here too).
    Padding is the client's (it pads and unpads; the service runs whole blocks)."""
    from ..registry import lookup
    from ..request import make_request

    req = make_request(lookup(msg["cipher"]), msg["key"], msg.get("iv"), msg["encrypt"],
                       None, msg.get("sector_size"), msg.get("start_sector"),
                       msg.get("impl"), bool(msg.get("allow_weak")))
    first = msg.get("first_block") or 0   # (a piece of a longer message: its place in it)
    if first:
        try:
            req = req.at(first, msg.get("chain"))
        except ValueError as e:
            raise errors.InvalidArgument(str(e)) from None
    return req


def _stream_tuning(msg: dict, fd: int) -> tuple[int | None, int | None]:
    """A stream's ``chunk_bytes`` and ``depth`` as the client gave them, cut to its input where
    that is a regular file: no chunk larger than the input (at least settings.MIN_CHUNK), no
    more chunks in flight than it holds."""
    from ..settings import MIN_CHUNK

    chunk, depth = msg.get("chunk_bytes"), msg.get("depth")
    size = _remaining(fd)
    if size is None or (chunk is None and depth is None):
        return chunk, depth
    if chunk is not None:
        chunk = min(chunk, max(MIN_CHUNK, -(-size // MIN_CHUNK) * MIN_CHUNK))
    if depth is not None:
        depth = max(1, min(depth, -(-size // (chunk or MIN_CHUNK))))
    return chunk, depth


def _remaining(fd: int) -> int | None:
    """The bytes of a regular file from the descriptor's offset to its end; None for a pipe,
    a socket, a device."""
    import stat

    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return max(0, st.st_size - os.lseek(fd, 0, os.SEEK_CUR))
    except OSError:
        return None


def _sealed_size(fd: int, length, arena: bool = False) -> int:
    """The bytes of a client's shared buffer a request uses: sealed against shrinking (else a
    client could shrink it under the server's mapping), and the size the request says (an
    arena's first ``length`` bytes: at most its size)."""
    seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    if not seals & fcntl.F_SEAL_SHRINK:
        raise errors.InvalidArgument("the shared buffer must be sealed against shrinking "
                                     "(F_SEAL_SHRINK)")
    n = os.fstat(fd).st_size
    if not isinstance(length, int) or not (0 <= length <= n if arena else length == n):
        raise errors.InvalidArgument(f"the shared buffer holds {n} bytes, the request says {length}")
    return length


def _unmap(mm) -> None:
    """Close a mapping of a client's buffer (None: nothing; one still viewed somewhere is
    unmapped when the view goes)."""
    if mm is not None:
        try:
            mm.close()
        except BufferError:
            pass


def _inline(msg: dict, local: bool):
    """A request's inline data, as a writable array of its own (at most INLINE_MAX bytes on a
    local connection, REMOTE_PIECE on a remote one)."""
    import numpy as np

    data = msg["data"]
    limit = protocol.INLINE_MAX if local else protocol.REMOTE_PIECE
    if not isinstance(data, bytes) or len(data) > limit:
        raise protocol.ProtocolError(f"inline data must be bytes of at most {limit}")
    return np.frombuffer(bytearray(data), dtype=np.uint8)
