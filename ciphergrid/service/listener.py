"""The service's sockets: the Unix one (made here with its owner-only mode, or passed by systemd),
a TCP one for remote clients (TLS, or on the loopback address alone a token without it), the
accept loop and a thread per connection; the C heap kept small while connections come and go.

Who a connection is and what it may do is session.py's; the listener only accepts, secures a
remote connection (its TLS handshake, the client's certificate) and starts the thread."""

from __future__ import annotations

import os
import socket
import threading
import time

from .. import errors

#: malloc arenas the service's threads share (glibc's default is 8 per core): each connection
#: has a thread, and with one arena per few threads their free memory scatters over many arenas
#: and the server's resident memory grows (docs/benchmarks.md 0v)
ARENAS = 2


class Listener:
    """The Unix socket at ``address`` (created; removed by :meth:`close`), or ``inherited``
    (systemd's: kept), and the remote one once :meth:`listen_remote` ran."""

    def __init__(self, address: str | None, mode: int = 0o600, group: str | None = None,
                 inherited: socket.socket | None = None):
        self.address = address
        self.tcp = None
        self.remote = None     # {"tls", "tokens", "certs"} once listen_remote ran
        self._threads: list = []
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
            self.sock = _unix(address, mode, group)

    def listen_remote(self, host: str, port: int, *, tls=None, tokens=None,
                      insecure_loopback: bool = False) -> int:
        """Also accept remote clients on TCP ``host:port`` (0: any free port; the port is
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

    def secure(self, raw: socket.socket):
        """A remote connection's transport: (the connection, its TLS handshake done where the
        listener has TLS; who its certificate names where clients are known by one, else
        None).  Raises OSError (ssl.SSLError) for a failed handshake."""
        conn = raw
        if self.remote["tls"] is not None:
            conn = self.remote["tls"].wrap_socket(raw, server_side=True)
        who = None
        if self.remote["certs"]:
            subject = dict(x[0] for x in conn.getpeercert().get("subject", ()))
            who = f"certificate {subject.get('commonName', '?')}"
        return conn, who

    def accept(self, stopping: threading.Event, serve_local, serve_remote) -> None:
        """Accept until ``stopping`` is set: each connection served on a thread of its own by
        ``serve_local(conn)`` (the Unix socket) or ``serve_remote(conn)`` (TCP)."""
        import select

        limit_arenas()
        while not stopping.is_set():
            socks = [self.sock] + ([self.tcp] if self.tcp is not None else [])
            try:
                ready, _, _ = select.select(socks, [], [], 0.2)
            except (OSError, ValueError):
                if stopping.is_set():
                    break
                raise
            for lst in ready:
                try:
                    conn, _ = lst.accept()
                except (socket.timeout, BlockingIOError):
                    continue
                except OSError:
                    if stopping.is_set():
                        break
                    raise
                serve = serve_local if lst is self.sock else serve_remote
                t = threading.Thread(target=serve, args=(conn,), daemon=True,
                                     name="ciphergrid-service-client")
                self._threads = [x for x in self._threads if x.is_alive()] + [t]
                t.start()

    def close(self) -> None:
        """Close the sockets; remove the Unix one's file where it is ours."""
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

    def join(self, deadline: float) -> None:
        """Wait for the connections' threads until ``deadline`` (time.monotonic's)."""
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))


def _unix(address: str, mode: int = 0o600, group: str | None = None) -> socket.socket:
    """The Unix SOCK_SEQPACKET socket at ``address``, listening: a stale socket file (a server
    killed) replaced, a live one refused; its file the owner's only until ``mode`` (and
    ``group``) are set."""
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


def check_port(port, flag: str) -> int:
    """A TCP port: 0 (any free one) to 65535 (InvalidArgument naming ``flag`` otherwise)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise errors.InvalidArgument(f"{flag}: the port must be 0 to 65535, not {port!r}")
    return port


def _glibc(name: str):
    """glibc's function ``name`` (None where the C library is not glibc)."""
    import ctypes
    import ctypes.util

    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def limit_arenas() -> None:
    """glibc's M_ARENA_MAX for the threads to come (unless the user's MALLOC_ARENA_MAX says)."""
    from ..settings import malloc_arena_max_set

    mallopt = None if malloc_arena_max_set() else _glibc("mallopt")
    if mallopt is not None:
        mallopt(-8, ARENAS)   # M_ARENA_MAX


def trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim) when a connection
    ends: its thread and buffers leave free memory in malloc's arenas, which a resident process
    would otherwise keep for good (bench service's soak)."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        _MALLOC_TRIM = _glibc("malloc_trim") or False   # (False: not glibc, nothing to trim)
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM = None
