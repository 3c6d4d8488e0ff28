"""Shared test machinery.

Parametrization (done at collection time, so every case shows in the test ids):

* ``cipher_name``: every name of ``ciphergrid.registry.names()``.
* ``device``: the ``spec`` of every device of ``ciphergrid.devices()``
  (``test_kat[aes-128-cbc-opencl:0:0]``).  GPU devices carry the ``gpu`` marker; a GPU that is not
  present simply has no test, so no GPU test can pass without a GPU.
  ``CIPHERGRID_TEST_DEVICES=native,opencl:0:0`` restricts the run to the listed specs.
* ``gpu_device``: only the GPU devices; with none present the test is reported as skipped
  ("no GPU device present").  A test marked ``gpu`` by hand is skipped the same way.

No test names a device spec of the machine it was written on (``opencl:0:0``, ``cuda:0``: the
numbers are one machine's layout; tests/test_structure.py checks): a test takes the devices present
from ``device``, ``gpu_device``, ``cpu_device`` (the first OpenCL CPU device selected, e.g. PoCL;
skipped when there is none), ``cpu_spec()`` or ``all_devices()``, and a spec that must name no
device (errors, fake devices, fake benchmark records) from ``absent_spec()``.

Fixtures: ``rng`` (seeded random source with helpers; the seed is printed when a test fails;
``CIPHERGRID_TEST_SEED`` changes the base seed), ``ref`` (the one reference,
``ciphergrid.testing.oracle``: pyca/cryptography where it has the cipher·mode; same arguments as
ciphergrid.encrypt/decrypt), ``device_is_fast``.  ``lean(spec)``: whether kernel variants get the
lean check on that device (CPU OpenCL: one key size, few modes; ``CIPHERGRID_TEST_FULL=1``: never).

Shared scaffolding: ``cpu_backend`` (the OpenCL CPU device's backend), ``wrap_methods`` (a
recording wrapper of a backend's methods), ``record_first_args`` (a spy on one function),
``break_downloads`` (a device lost mid-way), ``cl_buffer`` / ``cl_read`` (an OpenCL buffer from
bytes and back), ``folder`` / ``server`` (a service in a thread of the test's process, on a
socket in a fresh short folder), ``cli_main`` (the command line in this process).
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parent.parent

# Make the checkout importable when pytest is run as `pytest` (`python -m pytest` already puts the
# working directory first).  Appended, so an explicitly chosen PYTHONPATH / installed copy wins.
if str(_REPO) not in sys.path:
    sys.path.append(str(_REPO))

DEFAULT_SEED = 20240601
_NO_GPU = "no GPU device present (or none selected by CIPHERGRID_TEST_DEVICES)"


# --------------------------------------------------------------------------- devices

@functools.lru_cache(maxsize=None)
def all_devices() -> tuple:
    import ciphergrid

    devs = tuple(ciphergrid.devices())
    wanted = os.environ.get("CIPHERGRID_TEST_DEVICES", "").strip()
    if wanted:
        keep = {w.strip() for w in wanted.split(",") if w.strip()}
        unknown = keep - {d.spec for d in devs}
        if unknown:
            raise pytest.UsageError(
                f"CIPHERGRID_TEST_DEVICES names devices that are not present: {sorted(unknown)}; "
                f"present: {[d.spec for d in devs]}"
            )
        devs = tuple(d for d in devs if d.spec in keep)
    return devs


def device_info(spec: str):
    for d in all_devices():
        if d.spec == spec:
            return d
    raise KeyError(spec)


def lean(spec: str) -> bool:
    """Whether a kernel VARIANT (an implementation other than a cipher's default and its
    constant-time one: the ablation steps and alternatives) gets the lean check on device
    ``spec``: on CPU OpenCL devices (PoCL) a variant's test time is compiling its kernels (one per
    mode, direction and key size, 1-3 s each on CI's two cores, where these tests took 10 of the
    suite's 18 minutes), so there it runs one key size and the fewest modes that take its block
    function both ways; GPUs run every variant's whole matrix (scripts/gpu-suite.sh).
    ``CIPHERGRID_TEST_FULL=1`` runs the whole matrix everywhere."""
    if os.environ.get("CIPHERGRID_TEST_FULL", "").strip() not in ("", "0"):
        return False
    try:
        d = device_info(spec)
    except KeyError:
        return False
    return d.runtime == "opencl" and d.kind == "cpu"


LEAN_MODES = ("ecb", "ctr")


def lean_names(spec: str, names) -> list:
    """``names`` as a variant test runs them on device ``spec``: all of them, or with ``lean``
    those of the modes that take the block function both ways with one kernel compile each
    (ECB, CTR)."""
    from ciphergrid import registry

    if not lean(spec):
        return list(names)
    return [n for n in names if registry.lookup(n).mode.name in LEAN_MODES]


def gpu_specs() -> list[str]:
    return [d.spec for d in all_devices() if d.kind == "gpu"]


_NO_CPU = "no OpenCL CPU device present (or none selected by CIPHERGRID_TEST_DEVICES)"


def cpu_spec() -> str | None:
    """The spec of the first OpenCL CPU device selected (PoCL: the wheel's or the system's,
    whichever platform number it has), or None."""
    return next((d.spec for d in all_devices() if d.runtime == "opencl" and d.kind == "cpu"), None)


@pytest.fixture
def cpu_device() -> str:
    """``cpu_spec()``; the test is reported as skipped when there is none."""
    spec = cpu_spec()
    if spec is None:
        pytest.skip(_NO_CPU)
    return spec


def absent_spec(runtime: str, depth: int = 1, *, on_present_platform: bool = False) -> str:
    """A well-formed spec of ``runtime`` ("cuda" or "opencl") that names no device on this
    machine, whatever CIPHERGRID_TEST_DEVICES selects: depth 1 ``cuda:N`` / ``opencl:P``;
    depth 2 ``opencl:P:N`` of a platform that is absent, or with ``on_present_platform`` of the
    first OpenCL platform present (0 where there is none) and a device number it lacks."""
    import ciphergrid

    present = [d.spec for d in ciphergrid.devices()]
    head = f"{runtime}:"
    if depth == 2 and on_present_platform:
        first = next((s for s in present if s.startswith(head)), None)
        head += (first.split(":")[1] if first else "0") + ":"
    for n in range(7, 1000):
        s = f"{head}{n}" + (":0" if depth == 2 and not on_present_platform else "")
        cut = f"{head}{n}"
        if not any(p == cut or p.startswith(cut + ":") for p in present):
            return s
    raise AssertionError(f"every {runtime} device number up to 999 is present")


def base_seed() -> int:
    return int(os.environ.get("CIPHERGRID_TEST_SEED", DEFAULT_SEED))


def pytest_report_header(config):
    lines = [f"ciphergrid test seed: {base_seed()} (set CIPHERGRID_TEST_SEED to change)"]
    try:
        import ciphergrid

        lines.append(f"ciphergrid under test: {os.path.dirname(ciphergrid.__file__)}")
        for d in all_devices():
            lines.append(
                f"  device {d.spec}: {d.runtime} {d.kind} {d.name!r} "
                f"({d.compute_units} CU, {d.memory} B)"
            )
    except Exception as e:  # collection will fail loudly with the full traceback
        lines.append(f"ciphergrid devices unavailable: {type(e).__name__}: {e}")
    return lines


def pytest_generate_tests(metafunc):
    if "cipher_name" in metafunc.fixturenames:
        from ciphergrid import registry

        metafunc.parametrize("cipher_name", registry.names())
    if "device" in metafunc.fixturenames:
        params = [
            pytest.param(d.spec, id=d.spec, marks=[pytest.mark.gpu] if d.kind == "gpu" else [])
            for d in all_devices()
        ]
        if not params:
            raise pytest.UsageError("ciphergrid.devices() returned no device")
        metafunc.parametrize("device", params)
    if "gpu_device" in metafunc.fixturenames:
        specs = gpu_specs()
        if specs:
            params = [pytest.param(s, id=s, marks=[pytest.mark.gpu]) for s in specs]
        else:
            params = [pytest.param(None, id="no-gpu", marks=[
                pytest.mark.gpu, pytest.mark.skip(reason=_NO_GPU)])]
        metafunc.parametrize("gpu_device", params)


def _openssl_lacks(item) -> str | None:
    """Why a case of a registered name on the ``native`` (OpenSSL) device cannot run: OpenSSL
    lacks the cipher·mode in both directions (SEED-CTR, ciphers OpenSSL does not have); else None."""
    cs = getattr(item, "callspec", None)
    if cs is None or cs.params.get("device") != "native":
        return None
    from ciphergrid import registry

    for key in ("cipher_name", "name"):
        n = cs.params.get(key)
        if isinstance(n, str) and n in registry.names():
            spec = registry.lookup(n)
            if all(spec.capability("openssl", e) is None for e in (True, False)):
                return f"OpenSSL lacks {n}: the native engine does not run it"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        why = _openssl_lacks(item)
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=why))
    try:
        have_gpu = bool(gpu_specs())
    except Exception:
        return  # the device-parametrized modules already failed to collect, loudly
    if have_gpu:
        return
    skip = pytest.mark.skip(reason=_NO_GPU)
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


def watch_launches(device: str, monkeypatch) -> list:
    """The names of the kernels launched on ``device`` from now on in this test (a spy on its
    backend's launch), in order."""
    from ciphergrid import route

    backend = route.engine(device).backend
    seen: list[str] = []
    real = backend.launch

    def spy(program, name, *args, **kw):
        seen.append(name)
        return real(program, name, *args, **kw)

    monkeypatch.setattr(backend, "launch", spy)
    return seen


@pytest.fixture(scope="session")
def cpu_backend():
    """The backend of the OpenCL CPU device that ``route.engine("cpu")`` picks; the test is
    reported as skipped when there is none."""
    from ciphergrid.errors import DeviceNotFound, Error
    from ciphergrid.route import engine as get_engine

    try:
        return get_engine("cpu").backend
    except (DeviceNotFound, Error) as e:
        pytest.skip(f"no OpenCL CPU device: {e}")


def wrap_methods(obj, names, monkeypatch, on_call) -> None:
    """Each of ``obj``'s methods ``names`` (those it has) wrapped for this test:
    ``on_call(name, args, kwargs, call)`` runs in its place, where ``call()`` runs the real
    method and returns its result; the wrapper returns what ``on_call`` returns."""
    for name in names:
        fn = getattr(obj, name, None)
        if fn is None or not callable(fn):
            continue

        def wrapped(*a, _fn=fn, _name=name, **k):
            return on_call(_name, a, k, lambda: _fn(*a, **k))

        monkeypatch.setattr(obj, name, wrapped)


def record_first_args(monkeypatch, owner, name: str) -> list:
    """``owner.name`` replaced for this test by a spy that records each call's first argument
    (in a list, returned) and calls the function it replaced."""
    real = getattr(owner, name)
    seen: list = []

    def spy(first, *a, **kw):
        seen.append(first)
        return real(first, *a, **kw)

    monkeypatch.setattr(owner, name, spy)
    return seen


def break_downloads(monkeypatch, b) -> None:
    """Backend ``b``'s downloads, for this test, complete and then raise DeviceError (a device
    lost once its results are on the way)."""
    from ciphergrid.errors import DeviceError

    download = b.download

    def broken(host, *a, **kw):
        download(host, *a, **kw)
        raise DeviceError("the device fell off the bus")

    monkeypatch.setattr(b, "download", broken)


def cl_buffer(b, data: bytes, size: int | None = None):
    """An OpenCL buffer of backend ``b`` of ``size`` bytes (at least ``len(data)``, at least 16)
    starting with ``data``."""
    import numpy as np
    import pyopencl as cl

    buf = cl.Buffer(b.ctx, cl.mem_flags.READ_WRITE, max(size or len(data), 16))
    if data:
        cl.enqueue_copy(b.default_queue, buf, np.frombuffer(data, dtype=np.uint8))
        b.finish()
    return buf


def cl_read(b, buf, n: int) -> bytes:
    """The first ``n`` bytes of OpenCL buffer ``buf`` of backend ``b``."""
    import numpy as np
    import pyopencl as cl

    h = np.empty(n, dtype=np.uint8)
    if n:
        cl.enqueue_copy(b.default_queue, h, buf)
        b.finish()
    return h.tobytes()


@pytest.fixture
def folder():
    """A fresh short folder (a socket's path is at most 107 bytes), removed at the end."""
    from ciphergrid.testing import services

    with services.short_folder("cg-svc-") as d:
        yield d


@pytest.fixture
def server(folder):
    """A service in a thread of this process on ``folder``/s.sock; stopped (and its socket gone)
    at the end."""
    from ciphergrid.testing import services

    with services.threaded(folder) as s:
        yield s


def cli_main(*args) -> int:
    """``ciphergrid.cli.main`` in this process (no interpreter start-up), arguments as strings."""
    from ciphergrid.cli import main

    return main([str(a) for a in args])


@pytest.fixture(autouse=True)
def _weak_ciphers_allowed(request, monkeypatch):
    """The generic tests encrypt with random keys of every registered name, 2-key TDEA and
    multi-MiB TDEA inputs included: they run as with allow_weak=True and without the
    WeakCipherWarning.  Tests marked ``policy`` (tests/test_policy.py) see the policy in force;
    CLI subprocesses get ``--allow-weak`` from test_cli's helpers where they need it."""
    if request.node.get_closest_marker("policy") is not None:
        yield
        return
    from ciphergrid import request as req_mod

    monkeypatch.setattr(req_mod, "check_policy", lambda spec, key, allow_weak: None)
    monkeypatch.setattr(req_mod.Request, "admit", lambda self, total_bytes: None)
    yield


@pytest.fixture(scope="session")
def openssl() -> str:
    """The openssl command (skipped, and reported as skipped, when there is none)."""
    import shutil

    path = shutil.which("openssl")
    if path is None:
        pytest.skip("no openssl binary on PATH: the byte-for-byte comparison with `openssl enc` is not run")
    return path


@pytest.fixture
def device_is_fast(device) -> bool:
    """True on GPUs and the native (OpenSSL) engine, where multi-MiB inputs are cheap;
    False for OpenCL/CUDA on a CPU (PoCL in CI)."""
    d = device_info(device)
    return d.kind == "gpu" or d.runtime == "native"


# --------------------------------------------------------------------------- seeded randomness

def derive_seed(*parts) -> int:
    h = hashlib.sha256(repr((base_seed(),) + parts).encode()).digest()
    return int.from_bytes(h[:8], "little")


class Rng(random.Random):
    """random.Random with helpers for keys, IVs and data."""

    def data(self, n: int) -> bytes:
        import numpy as np

        return np.random.default_rng(self.getrandbits(64)).bytes(n)

    def key(self, name: str) -> bytes:
        """A key of the right length for ``name`` (XTS: two different halves)."""
        from ciphergrid import registry

        spec = registry.lookup(name)
        while True:
            k = self.randbytes(spec.key_len)
            if spec.mode.name != "xts" or k[: spec.key_size] != k[spec.key_size:]:
                return k

    def iv(self, name: str) -> bytes | None:
        from ciphergrid import registry

        n = registry.lookup(name).iv_len
        return self.randbytes(n) if n else None


@pytest.fixture
def rng(request) -> Rng:
    """Seeded from the base seed and the test id; the seed is printed when the test fails."""
    s = derive_seed(request.node.nodeid)
    request.node._ciphergrid_seed = s
    return Rng(s)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    s = getattr(item, "_ciphergrid_seed", None)
    if s is not None and rep.failed:
        rep.sections.append((
            "ciphergrid seed",
            f"case seed {s} (derived from CIPHERGRID_TEST_SEED={base_seed()} and {item.nodeid!r})",
        ))


# --------------------------------------------------------------------------- reference model

class _Ref:
    """The one reference, ``ciphergrid.testing.oracle``, in the call shapes the tests use:
    ``encrypt(data, name, key, iv, padding=..., sector_size=..., start_sector=...)``, ``decrypt``
    likewise, and ``crypt(encrypt, data, name, key, iv, ...)`` (the oracle's own ``crypt`` takes
    ``(name, key, iv, data, encrypt)``)."""

    def __init__(self):
        from ciphergrid.testing import oracle

        self.oracle = oracle
        self.encrypt = oracle.encrypt
        self.decrypt = oracle.decrypt

    def crypt(self, encrypt: bool, data, name: str, key: bytes, iv: bytes | None = None, **kw) -> bytes:
        return self.oracle.crypt(name, key, iv, data, encrypt, **kw)


@pytest.fixture(scope="session")
def ref() -> _Ref:
    return _Ref()


def first_difference(a: bytes, b: bytes) -> str:
    """Short description of where two outputs differ (for assertion messages)."""
    a, b = bytes(a), bytes(b)
    if len(a) != len(b):
        return f"length {len(a)} != {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at byte {i} (block {i // 16}): {a[i:i+16].hex()} != {b[i:i+16].hex()}"
    return "equal"


@pytest.fixture(scope="session")
def diff():
    return first_difference
