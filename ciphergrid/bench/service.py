"""``ciphergrid bench service``: the encryption service under load (docs/service.md).

A service of its own (``ciphergrid serve`` on a temporary socket, stopped at the end), or the one at
``--svc-socket``; requests of AES-128-CTR on ``--device`` (default: the service's choice), every
response compared with pyca/cryptography's ciphertext of the same input (a wrong byte fails the
row).  Phases, one row each (kind ``api``, the phase in ``implementation``):

* ``round trip 4 KiB``: one 4 KiB request at a time on a warm connection (median, p90 in the note);
* ``1 client`` / ``N clients``: mixed sizes (``--svc-sizes``) for ``--svc-seconds``, one
  connection per client thread; the sum's GB/s, its ratio to one client's, each client's share;
* ``2 equal clients``: the same load twice; each client's share of the sum (fair: 0.5 each);
* ``1 MiB under load``: one client's 1 MiB requests alone, then while another client's stream job
  runs (a sparse file to /dev/null): the added latency.  The job's bytes: ``--svc-big``, or sized
  from its rate measured first (a short stream job) so that it outlasts the 1 MiB requests with
  margin (:data:`SLOWDOWN` times their time alone, plus :data:`MARGIN_S`); a sized job that still
  ends first is run again :data:`GROWTH` times larger (at most :data:`RETRIES` times);
* ``remote TLS, 1 connection`` / ``remote TLS, N connections``: the service's own TLS listener on
  the loopback address (a throwaway self-signed certificate, a token), ``--svc-remote-size``
  requests (32 MiB) for ``--svc-seconds``, one connection, then ``--svc-remote-clients`` (8);
  only with the benchmark's own service;
* ``AEAD batch``: one AES-128-GCM batch of 16 KiB messages (``--svc-batch`` of them) through
  ``connect().encrypt_batch`` against the same batch in the client's own process, every message's
  ciphertext and tag compared with pyca's;
* ``soak``: the mixed clients for ``--svc-soak-seconds``; the server's resident memory,
  descriptors and page-locked bytes before and after (the growth in the note), both sampled
  once the same load's connections are gone (a first round of at most 10 s before it).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from ..settings import bytes_option, parse_bytes
from . import suites
from .preflight import signed_ms, size_text
from .records import Record

CIPHER = "aes-128-ctr"
DEFAULT_SIZES = "4Ki,64Ki,1Mi,4Mi"
#: the latency phase's sized job lasts SLOWDOWN x the 1 MiB requests' time alone + MARGIN_S
SLOWDOWN, MARGIN_S = 10.0, 1.0
#: a sized job that ended before the requests did: run again GROWTH x larger, at most RETRIES times
GROWTH, RETRIES = 4, 2
#: the smallest job, and the bytes of the first job that measures the stream's rate
MIN_BIG, PROBE = 64 << 20, 64 << 20


def add_arguments(p) -> None:
    p.add_argument("--svc-socket", metavar="PATH",
                   help="a running service's socket (default: start one, stop it at the end)")
    p.add_argument("--svc-clients", type=int, metavar="N", help="concurrent clients (default 64; --quick 4)")
    p.add_argument("--svc-seconds", type=float, metavar="S",
                   help="seconds of each load phase (default 60; --quick 2)")
    p.add_argument("--svc-soak-seconds", type=float, metavar="S",
                   help="seconds of the soak (default 480; --quick 3; 0: no soak)")
    p.add_argument("--svc-big", type=bytes_option("--svc-big"), metavar="BYTES",
                   help="the other client's job in the latency phase (default: sized from its "
                        "measured rate to outlast the 1 MiB requests)")
    p.add_argument("--svc-sizes", default=DEFAULT_SIZES, metavar="LIST",
                   help=f"request sizes of the load phases (default {DEFAULT_SIZES})")
    p.add_argument("--svc-remote-clients", type=int, metavar="N",
                   help="TLS connections of the remote phase (default 8; --quick 2)")
    p.add_argument("--svc-remote-size", type=bytes_option("--svc-remote-size"), metavar="BYTES",
                   help="request size of the remote phase (default 32Mi; --quick 1Mi)")
    p.add_argument("--svc-batch", type=int, metavar="N",
                   help="16 KiB messages of the AEAD batch phase (default 4096; --quick 64)")


# ------------------------------------------------------------------------- the service
@contextlib.contextmanager
def _service(path: str | None, log):
    """The socket of a service: ``path``'s, or one started here and stopped on leaving."""
    import ciphergrid

    if path:
        yield path, None
        return
    folder = tempfile.mkdtemp(prefix="cg-bench-svc-")
    remote = _tls_files(folder)
    try:
        with served(folder, log, "--listen", f"127.0.0.1:{remote['port']}", "--tls-cert",
                    remote["cafile"], "--tls-key", remote["keyfile"], "--token-file",
                    remote["tokens"]) as (sock, why):
            if sock is None:
                raise ciphergrid.ServiceError(why)
            yield sock, remote
    finally:
        for name in (remote["cafile"], remote["keyfile"], remote["tokens"]):
            with contextlib.suppress(OSError):
                os.unlink(name)
        with contextlib.suppress(OSError):
            os.rmdir(folder)


#: seconds a started service has to answer on its socket
SERVICE_START_S = 60.0


@contextlib.contextmanager
def served(folder: str, log, *options: str):
    """``(socket, None)`` of a service (``ciphergrid serve`` with ``options``) started on a socket
    in ``folder`` and stopped on leaving (its socket and stderr file removed); ``(None, why)``
    where it did not start.  Its stderr goes to a file in ``folder`` (a file, not a pipe: a
    service that says much never blocks)."""
    import ciphergrid

    sock, err = os.path.join(folder, "s.sock"), os.path.join(folder, "service.err")
    with open(err, "wb") as f:
        srv = subprocess.Popen([sys.executable, "-m", "ciphergrid", "serve", "--socket", sock,
                                *options],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f)
    why = None
    try:
        deadline = time.monotonic() + SERVICE_START_S
        while True:
            try:
                ciphergrid.connect(sock).close()
                break
            except ciphergrid.ServiceError:
                if srv.poll() is not None or time.monotonic() > deadline:
                    srv.kill()
                    srv.wait()
                    with open(err, errors="replace") as f:
                        why = f"the benchmark's service did not start: {f.read().strip()[-300:]}"
                    break
                time.sleep(0.05)
        yield (None, why) if why else (sock, None)
    finally:
        if srv.poll() is None:
            srv.terminate()
            try:
                srv.wait(30)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
                log("the benchmark's service did not stop in 30 s: killed")
        for name in (sock, err):
            with contextlib.suppress(OSError):
                os.unlink(name)


def _tls_files(folder: str) -> dict:
    """A throwaway self-signed certificate for 127.0.0.1 (its own CA), its key, a token file and
    a free loopback port: the benchmark's own service's TLS listener."""
    import datetime
    import ipaddress
    import secrets
    import socket

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ciphergrid bench")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    out = {"cafile": os.path.join(folder, "cert.pem"), "keyfile": os.path.join(folder, "key.pem"),
           "tokens": os.path.join(folder, "tokens"), "token": secrets.token_hex(16)}
    with open(os.open(out["keyfile"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(out["cafile"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.open(out["tokens"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(out["token"] + "\n")
    with socket.socket() as s:   # (a free port: bound, read, let go)
        s.bind(("127.0.0.1", 0))
        out["port"] = s.getsockname()[1]
    out["address"] = f"tls://127.0.0.1:{out['port']}"
    return out


def _settled(pid: int, client, wait_s: float = 30.0) -> dict:
    """The server's use once the load's connections are gone (only ``client``'s left) and a
    second has passed: their threads ended, the heap trimmed."""
    deadline = time.monotonic() + wait_s
    while client.status()["clients"] > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    return _server_use(pid, client)


def _server_use(pid: int, client) -> dict:
    """The server's resident bytes, open descriptors and page-locked bytes now."""
    rss = None
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
    fds = None
    with contextlib.suppress(OSError):
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    return {"rss_bytes": rss, "fds": fds, "pinned_bytes": client.status().get("pinned_bytes")}


# ------------------------------------------------------------------------- the load
class Load:
    """Client threads, each with its own connection, sending requests of the sizes in turn until
    ``stop`` is set; every response checked against pyca's ciphertext of the same input."""

    def __init__(self, sock: str, sizes: list[int], device: str, **connect):
        import numpy as np
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        rng = np.random.default_rng()
        self.sock, self.device, self.connect = sock, device, connect
        self.key, self.iv = os.urandom(16), os.urandom(16)
        self.inputs = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
        c = Cipher(algorithms.AES(self.key), modes.CTR(self.iv))
        self.expected = [c.encryptor().update(a.tobytes()) for a in self.inputs]

    def client(self, stop: threading.Event, out: dict, i: int) -> None:
        import numpy as np

        import ciphergrid

        moved = done = 0
        try:
            with ciphergrid.connect(self.sock, **self.connect) as c:
                while not stop.is_set():
                    k = done % len(self.inputs)
                    got = c.encrypt(self.inputs[k], CIPHER, self.key, self.iv, device=self.device)
                    got = np.frombuffer(got, np.uint8) if isinstance(got, bytes) else np.asarray(got)
                    if got.tobytes() != self.expected[k]:
                        raise AssertionError(f"client {i}: a response of {got.nbytes} bytes differs "
                                             "from pyca/cryptography's")
                    moved += got.nbytes
                    done += 1
        except BaseException as e:   # (reported in the row)
            out[i] = {"bytes": moved, "requests": done, "error": f"{type(e).__name__}: {e}"[:200]}
            stop.set()
            return
        out[i] = {"bytes": moved, "requests": done}

    def run(self, clients: int, seconds: float) -> tuple[dict, float]:
        stop, out = threading.Event(), {}
        threads = [threading.Thread(target=self.client, args=(stop, out, i), daemon=True)
                   for i in range(clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        stop.wait(seconds)
        stop.set()
        for t in threads:
            t.join()
        return out, time.perf_counter() - t0


def _record(device: str, phase: str, size: int, cipher: str = CIPHER) -> Record:
    return Record(cipher=cipher, algorithm="aes", key_bits=128, mode=cipher.rpartition("-")[2],
                  direction="encrypt",
                  device=device, device_name=f"the service ({device})", device_kind="service",
                  runtime="service", kind="api", size=size, implementation=phase,
                  timer="wall-clock", verification={"status": "passed",
                                                     "oracle": "pyca/cryptography, every response"})


def _load_row(device, phase, out: dict, seconds: float) -> Record:
    total = sum(v["bytes"] for v in out.values())
    rec = _record(device, phase, max(total, 1))
    bad = [v["error"] for v in out.values() if "error" in v]
    if bad:
        return rec.fail(bad[0])
    if not total:
        return rec.fail("no request completed")
    rec.set_times([seconds])
    shares = sorted(v["bytes"] / total for v in out.values())
    rec.note = (f"{len(out)} clients, {sum(v['requests'] for v in out.values())} requests in "
                f"{seconds:.1f} s; each client's share of the bytes {shares[0]:.3f}..{shares[-1]:.3f}")
    return rec


def _one_then_many(load: Load, n: int, seconds: float, device: str, prefix: str,
                   unit: str) -> list:
    """The load from one client, then from ``n`` at once: two rows, the second noting its ratio
    to the first ("1.11 x one client")."""
    one, t1 = load.run(1, seconds)
    first = _load_row(device, f"{prefix}1 {unit}", one, t1)
    many, tn = load.run(n, seconds)
    rec = _load_row(device, f"{prefix}{n} {unit}s", many, tn)
    if rec.status == "ok" and first.status == "ok":
        rec.note += f"; {rec.throughput_bps / first.throughput_bps:.2f} x one {unit}"
    return [first, rec]


# ------------------------------------------------------------------------- the suite
def run(args, ctx: suites.Context) -> dict:
    import numpy as np

    import ciphergrid

    quick = bool(args.quick)
    clients = args.svc_clients or (4 if quick else 64)
    seconds = args.svc_seconds or (2.0 if quick else 60.0)
    soak = args.svc_soak_seconds if args.svc_soak_seconds is not None else (3.0 if quick else 480.0)
    big = args.svc_big   # (None: sized from the stream's measured rate)
    sizes = [parse_bytes(s, "--svc-sizes") for s in args.svc_sizes.split(",") if s.strip()]
    device = ",".join(args.device) if args.device else "auto"
    rows: list[Record] = []
    phases = 6 + (0 if args.svc_socket else 2) + (1 if soak > 0 else 0)

    def add(rec: Record) -> None:
        rows.append(rec)
        ctx.add(rec)
        bar.advance(1)
        if rec.status != "ok":
            bar.log(f"FAILED {rec.implementation}: {rec.error}")

    with ctx.progress(phases) as bar, _service(args.svc_socket, ctx.log) as (sock, remote), \
            ciphergrid.connect(sock) as c:
        pid = c.status()["pid"]
        load = Load(sock, sizes, device)
        # -- one 4 KiB request at a time
        data, key = np.frombuffer(os.urandom(4096), np.uint8), os.urandom(16)
        for _ in range(50):
            c.encrypt(data, CIPHER, key, key, device=device)
        times = []
        for _ in range(200 if quick else 2000):
            t0 = time.perf_counter()
            c.encrypt(data, CIPHER, key, key, device=device)
            times.append(time.perf_counter() - t0)
        rec = _record(device, "round trip 4 KiB", 4096)
        rec.set_times(times)
        rec.note = f"p90 {sorted(times)[int(0.9 * len(times))] * 1e3:.3f} ms"
        add(rec)
        # -- one client, N clients, two equal clients
        for rec in _one_then_many(load, clients, seconds, device, "", "client"):
            add(rec)
        two, t2 = load.run(2, seconds)
        add(_load_row(device, "2 equal clients", two, t2))
        # -- a 1 MiB request alone, then beside another client's long job
        rec = _latency(sock, load, device, big, quick, bar.log)
        big = rec.resources["other_job_bytes"] if rec.resources else big
        add(rec)
        # -- remote clients over TLS on the loopback address (the benchmark's own service)
        if remote is not None:
            far = Load(remote["address"], [args.svc_remote_size or ((1 << 20) if quick else 32 << 20)],
                       device, cafile=remote["cafile"], token=remote["token"])
            n_far = args.svc_remote_clients or (2 if quick else 8)
            for rec in _one_then_many(far, n_far, seconds, device, "remote TLS, ", "connection"):
                add(rec)
        else:
            ctx.log("remote TLS phases: only with the benchmark's own service (no --svc-socket)")
        # -- an AEAD batch, through the service and in this process
        add(_batch_row(c, device, args.svc_batch or (64 if quick else 4096), 3 if quick else 10))
        # -- soak
        if soak > 0:   # (both samples after the same load ended: its connections closed)
            load.run(clients, min(10.0, soak))
            before = _settled(pid, c)
            out, ts = load.run(clients, soak)
            after = _settled(pid, c)
            rec = _load_row(device, "soak", out, ts)
            if rec.status == "ok":
                grew = {k: (after[k] - before[k]) for k in before if before[k] is not None and after[k] is not None}
                rss = (after["rss_bytes"] / before["rss_bytes"] - 1) if before["rss_bytes"] else None
                rec.note += (f"; server before/after: RSS {before['rss_bytes']}/{after['rss_bytes']} B"
                             + (f" ({rss * 100:+.1f} %)" if rss is not None else "")
                             + f", descriptors {before['fds']}/{after['fds']}, page-locked "
                               f"{before['pinned_bytes']}/{after['pinned_bytes']} B")
                rec.resources = {"server_before": before, "server_after": after, "growth": grew}
            add(rec)
    _print(rows)
    return {"devices": [], "options": {"clients": clients, "seconds": seconds, "soak_seconds": soak,
                                       "big": big, "sizes": sizes, "device": device,
                                       "socket": args.svc_socket or "(its own)"}}


def _batch_row(c, device: str, m: int, repeats: int) -> Record:
    """``m`` AES-128-GCM messages of 16 KiB in one batch: through the service (the row's times)
    and in this process (the note), each checked against pyca before it is timed."""
    import numpy as np
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    import ciphergrid

    name, size = "aes-128-gcm", 16 << 10
    key = os.urandom(16)
    texts = np.frombuffer(os.urandom(m * size), dtype=np.uint8)
    off = np.arange(m + 1, dtype=np.int64) * size
    nonces = np.frombuffer(os.urandom(12 * m), dtype=np.uint8).reshape(m, 12)
    rec = _record(device, "AEAD batch", m * size, cipher=name)
    rec.verification = {"status": "passed", "oracle": "pyca/cryptography AESGCM, every message"}
    rec.messages = m
    ref = AESGCM(key)
    runs = {"service": lambda: c.encrypt_batch(texts, name, key=key, nonces=nonces, offsets=off,
                                                device=device),
            "in process": lambda: ciphergrid.aead.encrypt_batch(texts, name, key=key, nonces=nonces,
                                                                offsets=off, device=device)}
    times = {}
    for how, run in runs.items():
        got = run()
        for i in range(m):
            want = ref.encrypt(nonces[i].tobytes(), texts[i * size:(i + 1) * size].tobytes(), None)
            if got.data[i * size:(i + 1) * size].tobytes() + got.tags[i].tobytes() != want:
                return rec.fail(f"{how}: message {i} differs from pyca's")
        times[how] = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run()
            times[how].append(time.perf_counter() - t0)
    rec.set_times(times["service"])
    here = m * size / statistics.median(times["in process"]) / 1e9
    rec.note = (f"{m} x 16 KiB; in this process {here:.3f} GB/s: the service "
                f"{statistics.median(times['in process']) / statistics.median(times['service']):.2f} x that")
    return rec


def big_for(rate_bps: float, alone_s: list[float]) -> int:
    """The sized job's bytes: at ``rate_bps`` (its stream's rate measured alone) it lasts
    SLOWDOWN x the 1 MiB requests' time alone plus MARGIN_S; whole 64 MiB, at least MIN_BIG."""
    need = rate_bps * (SLOWDOWN * sum(alone_s) + MARGIN_S)
    return max(MIN_BIG, -(-int(need) // MIN_BIG) * MIN_BIG)


def _latency(sock: str, load: Load, device: str, big: int | None, quick: bool, log=print) -> Record:
    """1 MiB requests alone, then while a stream job runs in another client: ``big`` bytes, or
    (None) sized from the job's rate measured first to outlast the requests (big_for)."""
    import numpy as np

    import ciphergrid
    from ..registry import lookup
    from ..request import make_request

    n = 1 << 20
    data = np.frombuffer(os.urandom(n), np.uint8)
    reps = 20 if quick else 100

    def timed(c) -> list[float]:
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            c.encrypt(data, CIPHER, load.key, load.iv, device=device)
            out.append(time.perf_counter() - t0)
        return out

    rec = _record(device, "1 MiB under load", n)
    folder = tempfile.mkdtemp(prefix="cg-bench-big-")
    src_path = os.path.join(folder, "sparse")
    req = make_request(lookup(CIPHER), load.key, load.iv, True)

    def stream(other, nbytes: int, job: dict, started: threading.Event) -> None:
        with open(src_path, "wb") as f:
            f.truncate(nbytes)   # (a sparse file: zeros at memory speed, no space used)
        src = os.open(src_path, os.O_RDONLY)
        dst = os.open(os.devnull, os.O_WRONLY)
        try:
            t0 = time.perf_counter()
            r = other.stream(req, src, dst, device=device, nbytes=nbytes,
                             progress=lambda k: started.set())
            job.update(bytes=r.get("bytes"), seconds=time.perf_counter() - t0)
        except BaseException as e:
            job["error"] = f"{type(e).__name__}: {e}"[:200]
        finally:
            started.set()
            os.close(src)
            os.close(dst)

    sized = big is None
    rate = None
    try:
        with ciphergrid.connect(sock) as c, ciphergrid.connect(sock) as other:
            timed(c)
            alone = timed(c)
            if sized:   # (the job's rate alone: a short job first, doubled until it lasts 0.2 s)
                probe, job = PROBE, {}
                while True:
                    stream(other, probe, job, threading.Event())
                    if "error" in job or job["seconds"] >= 0.2 or probe >= (1 << 30):
                        break
                    probe *= 2
                if "error" in job:
                    return rec.fail(f"the other client's job: {job['error']}")
                rate = job["bytes"] / job["seconds"]
                big = big_for(rate, alone)
            for attempt in range(RETRIES + 1 if sized else 1):
                job, started = {}, threading.Event()
                th = threading.Thread(target=stream, args=(other, big, job, started), daemon=True)
                th.start()
                started.wait(120)
                loaded = timed(c) if "error" not in job and "seconds" not in job else []
                running = "seconds" not in job
                th.join()
                if "error" in job or (loaded and running) or attempt == RETRIES or not sized:
                    break
                log(f"bench service: the other client's job of {size_text(big)} ended before the "
                    f"1 MiB requests did: again with {size_text(big * GROWTH)}")
                big *= GROWTH
    finally:
        with contextlib.suppress(OSError):
            os.unlink(src_path)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    if "error" in job:
        return rec.fail(f"the other client's job: {job['error']}")
    if not loaded or not running:
        return rec.fail(f"the other client's job of {size_text(big)} ended before the 1 MiB "
                        "requests did: give a larger --svc-big")
    rec.set_times(loaded)
    a, b = statistics.median(alone), statistics.median(loaded)
    rec.note = (f"alone {a * 1e3:.3f} ms, beside a {size_text(big)} stream job "
                f"({job['bytes'] / job['seconds'] / 1e9:.2f} GB/s) {b * 1e3:.3f} ms: "
                f"{signed_ms(b - a)} (median of {reps})")
    rec.resources = {"alone_median_s": a, "loaded_median_s": b, "added_s": b - a,
                     "other_job_gbps": job["bytes"] / job["seconds"] / 1e9,
                     "other_job_bytes": big,
                     "other_job_sized_from_gbps": rate / 1e9 if rate else None}
    return rec


def estimate(args, rate: float, api=None) -> tuple[str, float]:
    """Its phases' seconds: five loads of --svc-seconds, the latency phase (its job at ``rate``
    when --svc-big gives it), the soak and its first round; the service's start."""
    quick = bool(args.quick)
    clients = args.svc_clients or (4 if quick else 64)
    seconds = args.svc_seconds or (2.0 if quick else 60.0)
    soak = args.svc_soak_seconds if args.svc_soak_seconds is not None else (3.0 if quick else 480.0)
    latency = (args.svc_big / rate) if args.svc_big else 2 * MARGIN_S + 1
    total = 3 + 5 * seconds + latency + ((min(10.0, soak) + soak + 3) if soak > 0 else 0)
    return (f"loads of {seconds:g} s from 1, {clients} and 2 clients and over TLS, 1 MiB latency "
            f"beside a long job, an AEAD batch, a soak of {soak:g} s", total)


def _print(rows) -> None:
    print(f"{'phase':<26} {'GB/s':>8} {'median ms':>10}  note")
    for r in rows:
        if r.status != "ok":
            print(f"{r.implementation:<26} {'FAILED':>8}  {r.error}")
            continue
        print(f"{r.implementation:<26} {r.gbps:8.3f} {r.median_s * 1e3:10.3f}  {r.note or ''}")


suites.register("service", run, add_arguments=add_arguments, estimate=estimate,
                help="the encryption service under load: round trips, many clients, fairness, "
                     "latency beside a long job, a soak (docs/service.md)")
