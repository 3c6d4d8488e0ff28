"""``ciphergrid serve``: the encryption service in the foreground, or --status."""

from __future__ import annotations

import os
import signal
import sys

from ..errors import InvalidArgument
from .common import EXIT_OK


def cmd_serve(args) -> int:
    """``ciphergrid serve``: run the service in the foreground until SIGTERM / SIGINT (the
    socket removed, the running jobs given STOP_GRACE_S to end); ``--status``: ask one."""
    import json

    from ..service import connect
    from ..settings import default_service_address

    address = args.socket or default_service_address()
    if args.status:
        with connect(address, timeout=10) as c:
            print(json.dumps(c.status(), indent=2, sort_keys=True))
        return EXIT_OK
    from ..service.policy import Policy
    from ..service.server import JOB_TIMEOUT_S, Server

    try:
        mode = int(args.socket_mode, 8)
    except ValueError:
        raise InvalidArgument(f"--socket-mode: {args.socket_mode!r} is not an octal mode") from None
    metrics = None
    if args.metrics:
        host, _, port = args.metrics.rpartition(":")
        if not port.isdigit():
            raise InvalidArgument(f"--metrics: {args.metrics!r} is not [ADDR:]PORT")
        metrics = (host or "127.0.0.1", int(port))
    import socket

    from ..settings import activation_fds

    policy = Policy.load(args.policy, os.getuid())
    fds = activation_fds()   # (systemd's socket activation: its socket, not ours to make)
    inherited = socket.socket(fileno=fds[0]) if fds else None
    timeout = JOB_TIMEOUT_S if args.job_timeout is None else args.job_timeout   # (0: refused)
    server = Server(address, job_timeout=timeout, policy=policy,
                    socket_mode=mode, socket_group=args.socket_group, inherited=inherited)
    address = server.address
    remote = None
    try:
        if metrics is not None:
            server.serve_metrics(metrics[1], metrics[0])
        if args.listen:
            remote = _serve_remote_options(args, server)
    except BaseException:
        server.close()
        raise
    print(f"ciphergrid: serving on {address} (pid {os.getpid()}; SIGTERM or Ctrl-C stops it)"
          + (f"; metrics on http://{metrics[0]}:{metrics[1]}/metrics" if metrics else "")
          + (f"; remote clients on {remote}" if remote else ""),
          file=sys.stderr, flush=True)
    previous = {s: signal.signal(s, lambda *_: server.stop()) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.serve_forever()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    print("ciphergrid: service stopped", file=sys.stderr)
    return EXIT_OK


def _serve_remote_options(args, server) -> str:
    """--listen and its TLS options: the remote listener started; its address."""
    host, _, port = args.listen.rpartition(":")
    if not port.isdigit() or not host:
        raise InvalidArgument(f"--listen: {args.listen!r} is not HOST:PORT")
    tls = None
    if args.tls_cert or args.tls_key or args.tls_client_ca:
        import ssl

        if not (args.tls_cert and args.tls_key):
            raise InvalidArgument("TLS needs --tls-cert and --tls-key")
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            tls.load_cert_chain(args.tls_cert, args.tls_key)
            if args.tls_client_ca:
                tls.load_verify_locations(args.tls_client_ca)
                tls.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as e:
            raise InvalidArgument(f"TLS: {getattr(e, 'strerror', None) or e}") from None
    tokens = None
    if args.token_file:
        try:
            with open(args.token_file) as f:
                tokens = [line.strip() for line in f if line.strip()]
        except OSError as e:
            raise InvalidArgument(f"--token-file: {e.strerror}: {args.token_file}") from None
    got = server.listen_remote(host.strip("[]"), int(port), tls=tls, tokens=tokens,
                               insecure_loopback=args.insecure_loopback)
    return f"{'tls' if tls else 'tcp'}://{host}:{got}"

