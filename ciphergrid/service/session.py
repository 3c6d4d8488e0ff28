"""One client connection, from its first message to its last: who the client is (a local peer's
credentials against the policy; a remote client's certificate or token), what the policy grants
it, its requests one after another, and what is the client's own while it is connected:

* its use-policy state (``runtime.PolicyState``): the weak-cipher warnings said once and the
  depth of ``weak_use_allowed`` are this session's, not the service's: one client's warning or
  decision is never another's (DESIGN.md: policy travels with the request);
* its arena: a shared buffer the client named, kept mapped for its next requests;
* its line in the status (jobs, bytes, weight).

Each request is checked against its op's schema, its memory computed from its fields and
admitted against the user's limits (memory.py), all before any work (handlers.py runs it);
whatever ends a job gives back what admission took.
"""

from __future__ import annotations

import contextlib
import threading
import time

from ..runtime import PolicyState
from . import handlers, protocol, schema
from .listener import trim_heap


class Session:
    """An admitted client on channel ``ch``: ``uid`` (a number, or ``"remote ..."``), ``pid``
    (None remotely), ``grant`` (policy.Grant)."""

    def __init__(self, server, ch, uid, pid, grant):
        self.server, self.ch = server, ch
        self.uid, self.pid, self.grant = uid, pid, grant
        self.policy = PolicyState()
        self.maps: dict = {}      # this connection's arena, mapped (handlers.Buffer)
        self.cid = None

    def serve(self) -> None:
        """Serve its requests until it goes; listed in the status meanwhile."""
        srv = self.server
        with srv.lock:
            srv.next_id += 1
            self.cid = srv.next_id
            srv.clients[self.cid] = {"uid": self.uid, "pid": self.pid, "jobs": 0, "bytes": 0,
                                     "since": time.time(), "weight": self.grant.weight}
        srv.count("connections")
        try:
            with srv.runtime.policy_of(self.policy):
                self._loop()
        finally:
            handlers.unmap_all(self.maps)
            with srv.lock:
                srv.clients.pop(self.cid, None)
            trim_heap()

    def _loop(self) -> None:
        ch = self.ch
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
            if self.server.stopping.is_set() and msg.get("op") not in ("hello", "status"):
                protocol.close_fds(fds)
                ch.send({"error": {"type": "ServiceError", "message": "the service is stopping"}})
                return
            try:
                reply = self.handle(msg, fds)
            except (BrokenPipeError, ConnectionResetError):
                return   # the client went away mid-job: the job is given up, nothing else
            except BaseException as e:
                if not isinstance(e, Exception):
                    raise
                self.server.count("errors")
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

    def handle(self, msg: dict, fds: list) -> dict:
        """One request: checked against its op's schema, its memory computed from its fields
        and admitted against the user's limits, all before any work; what admission took is
        given back however the job ends."""
        srv = self.server
        op = schema.check(msg, fds, self.ch.local)
        if op == "hello":
            return srv.hello()
        if op == "status":   # (the other clients' connections: for the server's user and root)
            return {"ok": True, **srv.status(full=self.uid in (srv.uid, 0))}
        adm = srv.admission
        prepared, need = handlers.prepare(op, msg, fds, adm.limit(self.grant))
        adm.check(op, need, self.uid, self.grant)
        with adm.held(self.uid, self.grant, need, self._admitted), self._job() as job:
            reply = handlers.run(op, job, msg, fds, prepared)
        with srv.lock:
            srv.clients[self.cid]["bytes"] += reply["bytes"]
            srv.totals["bytes"] += reply["bytes"]
        if srv.metrics is not None:
            srv.metrics.job(op, reply["bytes"], reply.get("device"))
        return {"ok": True, **reply}

    def _admitted(self) -> None:
        """A job admitted (under the server's lock): counted."""
        self.server.clients[self.cid]["jobs"] += 1
        self.server.totals["jobs"] += 1

    @contextlib.contextmanager
    def _job(self):
        """A running job: its time limit and its place among the fair shares, for the block."""
        timer = threading.Timer(self.server.job_timeout, self._overdue)
        timer.daemon = True
        timer.start()
        job = handlers.Job(self)
        self.server.fair.join(job, self.grant.weight)
        try:
            yield job
        finally:
            self.server.fair.leave(job)
            timer.cancel()

    def _overdue(self) -> None:
        """A job past the time limit (a pipe that never delivers, say): the client is told and
        its connection closed; the job's thread ends when its descriptor does."""
        try:
            self.ch.send({"error": {"type": "ServiceError", "message":
                                    f"the job ran past the service's limit of "
                                    f"{self.server.job_timeout:g} s (an input that never ends?)"}})
        except (OSError, protocol.ProtocolError):
            pass
        self.ch.shutdown()


def serve_local(server, conn) -> None:
    """A connection on the Unix socket: its peer's credentials against the policy (refused:
    told in one line after its first message), then a session."""
    from .policy import peer_groups

    with conn, server.runtime:
        ch = protocol.Channel(conn)
        try:
            pid, uid, gid = protocol.peer_creds(conn)
            grant = server.policy.grant(uid, peer_groups(conn, gid))
        except OSError:
            return
        if grant is None:
            server.count("refused")
            try:   # (its first message read, so that the refusal reaches it)
                conn.settimeout(5)
                _, fds = ch.recv()
                protocol.close_fds(fds)
                who = (f"its policy ({server.policy.source})" if server.policy.source
                       else f"it serves user {server.uid} only")
                ch.send({"error": {"type": "ServiceError",
                                   "message": f"user {uid} may not use this service ({who})"}})
            except (OSError, protocol.ProtocolError):
                pass
            return
        Session(server, ch, uid, pid, grant).serve()


def serve_remote(server, raw) -> None:
    """A remote connection: TLS (the listener's; its certificate, else a token in its hello),
    then a session as a local one's, the data inside the messages (no descriptors, no shared
    memory)."""
    import hmac

    from .policy import Grant

    conn = raw
    with server.runtime:
        try:
            raw.settimeout(10)   # (the handshake and the hello: no slow loris)
            conn, who = server.listener.secure(raw)
            ch = protocol.StreamChannel(conn)
            hello, _ = ch.recv()
            if not hello or hello.get("op") != "hello":
                raise protocol.ProtocolError("a remote connection starts with hello")
            if who is None:
                tokens = server.listener.remote["tokens"]
                token = hello.get("token")
                known = [i for i, t in enumerate(tokens)
                         if isinstance(token, str) and hmac.compare_digest(token, t)]
                if not known:
                    server.count("refused")
                    ch.send({"error": {"type": "ServiceError",
                                       "message": "not allowed: an unknown token"}})
                    return
                who = f"token #{known[0] + 1}"
            conn.settimeout(None)
            d = server.policy.defaults
            grant = Grant(d.weight, d.max_jobs, f"remote client ({who})", d.max_memory)
            ch.send(server.hello())
            Session(server, ch, f"remote {who}", None, grant).serve()
        except (OSError, protocol.ProtocolError, ValueError):
            return   # (a failed handshake, a client gone: that connection only)
        finally:
            try:
                conn.close()
            except OSError:
                pass
