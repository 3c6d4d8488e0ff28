"""The service's metrics in Prometheus's text format (``ciphergrid serve --metrics PORT``), through
``prometheus-client``: a registry of the server's own (two servers in one process share nothing)."""

from __future__ import annotations

from ..errors import InvalidArgument


class Metrics:
    def __init__(self, server):
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge
        except ImportError:
            raise InvalidArgument("--metrics needs prometheus-client (pip install "
                                  "'ciphergrid[service]')") from None
        self.registry = reg = CollectorRegistry()
        self.jobs = Counter("ciphergrid_service_jobs", "jobs run", ["op", "device"], registry=reg)
        self.bytes = Counter("ciphergrid_service_bytes", "bytes enciphered", ["op", "device"],
                             registry=reg)
        self.events = Counter("ciphergrid_service_events", "connections, refusals, errors",
                              ["event"], registry=reg)
        clients = Gauge("ciphergrid_service_clients", "client connections open", registry=reg)
        clients.set_function(lambda: len(server.clients))
        running = Gauge("ciphergrid_service_jobs_running", "jobs running now", registry=reg)
        running.set_function(lambda: sum(server.running.values()))
        self.server = None

    def job(self, op: str, nbytes: int, device) -> None:
        self.jobs.labels(op, device or "").inc()
        self.bytes.labels(op, device or "").inc(nbytes)

    def count(self, event: str) -> None:
        self.events.labels(event).inc()

    def start(self, port: int, addr: str = "127.0.0.1"):
        from prometheus_client import start_http_server

        try:
            self.server, _thread = start_http_server(port, addr, registry=self.registry)
        except OSError as e:   # (an address not here, a port taken)
            raise InvalidArgument(f"--metrics {addr}:{port}: {e.strerror or e}") from None
        return self.server
