"""The one decision point: which engine runs a request (either kind of request.py's family: a
block cipher·mode's message, an AEAD's batch), and on which path.

The command line and the API describe what they have (a request, a device spec, a size, where the
data lives) and take the answer, a plan (plan.py) they run and say; nothing below re-decides.  The
answer comes from the capability table (registry: per algorithm, mode, direction and engine kind;
the kinds are open) and the devices present:

* a service (``service``, ``service:PATH``: the remote engine kind, engines/remote.py) runs the
  request when the device names it, or when the caller was asked to use one
  (``remote.service_asked``: ``CIPHERGRID_SERVICE`` for the package's functions): the service's
  runtime routes it there;
* an explicit device (``native``, ``cpu``, ``gpu``, ``opencl:P:N``, ``cuda:N``, or a device of a
  registered engine kind) runs the request
  when its engine can; when it cannot for this request (XTS units that are not whole blocks, on a
  device), or can only serially (CBC encryption: one work-item) while OpenSSL has the cipher,
  OpenSSL runs it instead, and the plan says why (``Plan.reason``, ``-v``);
* ``auto``: a file or pipe of a cipher the CPU has instructions for (AES) goes to OpenSSL on a
  host of AUTO_FILES_OPENSSL_MIN_CORES cores or more (it keeps up with the filesystem, measured);
  a parallel request of at least AUTO_GPU_MIN_BYTES goes to a GPU (CUDA first); then
  OpenSSL where it has the cipher·mode; then an OpenCL CPU device; then a GPU of any size.  A
  serial request (CBC encryption) runs on the fastest engine that has it: OpenSSL, else one
  work-item on an OpenCL CPU device, else a GPU;
* GPU-resident data runs on its own CUDA device unless told otherwise, or through host copies on
  OpenSSL when the device cannot run the request.

AEADs (an ``AEADRequest``), the batch as the unit: host data of an AEAD OpenSSL has (GCM,
ChaCha20-Poly1305) goes to OpenSSL on every core (faster end to end than the GPU's unpipelined
AEAD path, measured); otherwise a GPU for batches or messages of at least AUTO_GPU_MIN_BYTES, then
an OpenCL CPU device, then a GPU; one message of an AEAD that is serial within a message (Ascon,
AEGIS) goes to a CPU device before a GPU (one work-item of a CPU core is the faster stream).
With ``all`` or a list, a batch is dealt by whole messages; one message of GCM or
ChaCha20-Poly1305 of AEAD_SPLIT_MIN_BYTES or more, in ranges of its blocks where every member
runs them (engines/scheduler/message_range.py).  GPU-resident messages run on the data's own
device (``resident_device``) under ``auto``, ``gpu``, ``cuda`` and a list, as blocks do.
"""

from __future__ import annotations

import functools
import sys

from .devices import first_cpu, first_gpu, is_multi, member_specs, resolve
from .runtime import current
from .errors import Error
from .settings import scheduler_fence
from .errors import InvalidArgument, UnsupportedCipher
from .plan import Plan
from .registry import kind_of_runtime

#: below this many bytes a GPU launch costs more than OpenSSL on the host
AUTO_GPU_MIN_BYTES = 1 << 20
#: a file or pipe (path "stream") of a cipher the CPU has instructions for (AES-NI, ARMv8 AES)
#: goes to OpenSSL from this many cores on: the filesystem bounds the stream and OpenSSL keeps up
#: with it where the GPU's file path does not (docs/benchmarks.md, 'Figures moved from code
#: comments')
AUTO_FILES_OPENSSL_MIN_CORES = 8
#: one message of GCM or ChaCha20-Poly1305 of at least this many bytes of text, with ``all`` or
#: a list of devices, runs in ranges of its blocks over them (composite.CompositeEngine's
#: ``message_ranges``) where every member runs such ranges; smaller ones run whole on one
AEAD_SPLIT_MIN_BYTES = 16 << 20

#: paths: data on the host (arrays), on the GPU ("resident"), or a file / pipe ("stream")
PATHS = ("array", "resident", "stream")
#: bytes per piece where a file's data go through a streaming context (route_file's "array")
FILE_PIECE = 64 << 20


#: what ``route`` returns (plan.py); its first name, kept for the callers that use it
Route = Plan


#: engines/remote.py's module name (a context asks for a service only once it is imported)
_REMOTE = __package__ + ".engines.remote"


def _remote():
    """engines/remote.py, imported on use (as the registry's engine factories are: it is a client
    of the service, whose client takes the API's checks, which route)."""
    import importlib

    return importlib.import_module(".engines.remote", __package__)


def engine_of(info):
    """The engine of a device (one per device and runtime: ``runtime.current()``), made by the
    engine kind that serves its runtime (registry.register_engine_kind)."""
    rt = current()
    with rt.lock:
        e = rt.engines.get(info.spec)
        if e is None:
            kind = kind_of_runtime(info.runtime)
            if kind is None:
                raise InvalidArgument(f"no engine kind runs devices of {info.runtime!r} ({info.spec})")
            e = rt.engines[info.spec] = kind.make(info)
        return e


def engine(device: str):
    """The engine of an explicit device spec (``native``, ``cpu``, ``cuda:0``...)."""
    return engine_of(resolve(device))


def _openssl():
    return engine_of(resolve("native"))


@functools.lru_cache(maxsize=None)
def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def host_keeps_up_with_files(spec) -> bool:
    """Whether OpenSSL on this host's cores runs a file of ``spec`` at the filesystem's speed:
    the CPU has instructions for the cipher (``BlockCipher.cpu_flag``) and the runtime's thread
    budget has enough cores."""
    flag = getattr(spec.algorithm, "cpu_flag", None)
    return (flag is not None and flag in _cpu_flags()
            and current().threads.budget >= AUTO_FILES_OPENSSL_MIN_CORES)


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _auto(req, nbytes: int | None, path: str):
    """(engine, how, why) for ``auto``."""
    spec, enc = req.spec, req.encrypt
    dev_cap = spec.capability("device", enc)
    ossl = spec.capability("openssl", enc)
    if path == "stream" and ossl == "parallel" and host_keeps_up_with_files(spec):
        return _openssl(), "parallel", (f"OpenSSL on {current().threads.budget} cores keeps up with "
                                        f"files of {spec.name}")
    fits = nbytes is None or req.mode.device_runs(req, nbytes)
    large = nbytes is None or nbytes >= AUTO_GPU_MIN_BYTES
    looked = dev_cap == "parallel" and fits and (large or path == "resident")
    if looked:
        gpu = first_gpu()
        if gpu is not None:
            return engine_of(gpu), dev_cap, (
                "GPU-resident data on its own GPU" if path == "resident" else
                f"a GPU for parallel work of {_mib(AUTO_GPU_MIN_BYTES)} or more")
    if ossl is not None:
        if ossl == "serial":
            why = "serial: OpenSSL on one core before one work-item"
        elif dev_cap != "parallel" or not fits:
            why = "OpenSSL has it"
        elif looked:
            why = "OpenSSL has it and no GPU is present"
        else:
            why = f"below {_mib(AUTO_GPU_MIN_BYTES)}: OpenSSL before a GPU"
        return _openssl(), ossl, why
    if dev_cap is not None and fits:
        cpu = first_cpu()
        if cpu is not None:
            return engine_of(cpu), dev_cap, "OpenSSL lacks it: the OpenCL CPU device"
        gpu = first_gpu()
        if gpu is not None:
            return engine_of(gpu), dev_cap, "OpenSSL lacks it and no OpenCL CPU device is present"
    raise UnsupportedCipher(f"no engine present runs {spec.name} {'encryption' if enc else 'decryption'}"
                            + ("" if fits else f" of {nbytes} bytes in these data units"))


def route(req, device: str | None = "auto", nbytes: int | None = None, *, path: str = "array",
          resident_device: str | None = None) -> Plan:
    """The plan of request ``req`` (request.py: a block ``Request``, or an ``AEADRequest``: a
    batch of messages, or their sizes) for ``nbytes`` of data (an AEAD's: its texts, without
    tags) on ``path`` ("array", "resident", "stream"): which engine runs it, on which path, and
    why (plan.py).  ``resident_device``: the CUDA device holding GPU-resident data (its spec).

    The plans of one device are kept by the runtime (``rt.plans``) by everything the decision
    reads: the request's ``plan_key`` (its fields but key, IV and batch), the device spec, the
    size (exact: an engine kind's capability may depend on any size), the path, the resident
    device and the thread budget; a kept plan is used while its engine is still the runtime's
    engine of its device.  Not kept: plans over several devices (a composite is made per call)
    and plans where a service may run the request (whether one answers changes)."""
    rt = current()
    key = _plan_key(rt, req, device, nbytes, path, resident_device)
    if key is not None:
        kept = rt.plans.get(key)
        if kept is not None and rt.engines.get(kept.engine.info.spec) is kept.engine:
            return kept.bound(req)
    plan = _route(req, device, nbytes, path, resident_device)
    if key is not None and plan.engine.kind not in ("composite", "remote"):
        rt.plans.put(key, plan.template())
    return plan


def _plan_key(rt, req, device: str | None, nbytes: int | None, path: str,
              resident_device: str | None):
    """The key of ``route``'s kept plan for these arguments, or None where none is kept (the
    route docstring says which)."""
    spec = (device or "auto").strip().lower()
    if spec == "all" or "," in spec or spec.startswith("service") or path not in PATHS:
        return None
    if path != "resident" and not (rt.serving or rt.service.in_process):
        remote = sys.modules.get(_REMOTE)
        if remote is not None and remote.asks_service():
            return None
    return (req.plan_key, spec, nbytes, path, resident_device, rt.threads.budget)


def _route(req, device: str | None, nbytes: int | None, path: str,
           resident_device: str | None) -> Plan:
    """``route``'s decision, made now."""
    if path not in PATHS:
        raise InvalidArgument(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    remote = _remote().chosen(device, path)
    asked = (device or "auto").strip()
    if remote is not None:   # (a service runs it, its runtime on its engines: engines/remote.py)
        how = req.capability_on(remote, nbytes)
        if how is None:
            raise _remote().cannot(remote, req.what)
        return Plan(remote, path, how, request=req, cipher=req.name, encrypt=req.encrypt,
                    asked=asked, nbytes=nbytes)
    device = asked.lower()

    def plan(eng, path_, how, reason="", choice=""):
        return Plan(eng, path_, how, reason, request=req, cipher=req.name, encrypt=req.encrypt,
                    asked=device, choice=choice, nbytes=nbytes)

    if req.kind == "messages":
        return _route_messages(req, device, nbytes, path, plan, resident_device)
    reason = ""
    if is_multi(device):
        if path != "resident":
            eng = for_request(device, req, nbytes)
            return plan(eng, path, eng.capability(req, nbytes), f"scheduled over {eng.info.name}")
        eng = _resident_composite(device, req, nbytes, resident_device)
        if eng is not None:
            return plan(eng, path, "parallel", f"scheduled over {eng.info.name} (peer copies)")
        reason = "GPU-resident data runs on its own device (one GPU of this spec runs the request)"
        device = resident_device or "gpu"
    if path == "resident" and device in ("auto", "gpu", "cuda") and resident_device:
        device = resident_device
    if device == "auto":
        eng, how, choice = _auto(req, nbytes, path)
        if path == "resident" and eng.info.runtime != "cuda":
            path = "array"  # (through host copies)
        return plan(eng, path, how, choice=choice)
    eng = engine(device)
    how = eng.capability(req, nbytes)
    if how is not None and reason:
        return plan(eng, path, how, reason)
    if path == "resident" and eng.info.runtime != "cuda":
        raise InvalidArgument(f"GPU-resident data needs a CUDA device, not {eng.info.spec}")
    ossl = req.spec.capability("openssl", req.encrypt) if eng.kind != "openssl" else None
    what = req.what
    if how == "serial" and ossl is not None:
        # serial on a device is one work-item: OpenSSL on one core is the faster engine with it
        return plan(_openssl(), "array" if path == "resident" else path, ossl,
                    f"{what} is serial: OpenSSL runs it, not one work-item of {eng.info.spec}")
    if how is not None:
        return plan(eng, path, how)
    if ossl is not None:
        why = (f"{eng.info.spec} cannot run {what}"
               + (f" of {nbytes} bytes in these data units" if nbytes is not None else "")
               + ": OpenSSL runs it")
        return plan(_openssl(), "array" if path == "resident" else path, ossl, why)
    raise UnsupportedCipher(f"{eng.info.spec} cannot run {what} and OpenSSL lacks it")


def file_streams(req, nbytes: int | None, framed: bool = False) -> bool:
    """Whether a block request's file or pipe of ``nbytes`` bytes (None: unknown) runs as a
    stream (path "stream": the engine's own file path): its mode streams, the bytes are the
    cipher's own (not ``framed`` by base64 text decoded or encoded around them), and the size
    is known or no block limit under one key needs counting.  Otherwise it goes through a
    streaming context, which counts."""
    return req.mode.streams(req) and not framed and (nbytes is not None or not req.limit_refuses)


def route_file(req, device: str | None, nbytes: int | None, *, framed: bool = False) -> Plan:
    """The plan of a command's file or pipe (``nbytes`` bytes, None: unknown; ``framed``: base64
    text around the cipher's bytes): the path decided from what the input is (file_streams),
    so the caller runs ``plan.stream`` or, on path "array", a context's pieces of at most
    FILE_PIECE bytes (routed for one).  An AEAD's file is one message read whole: "stream"."""
    if req.kind == "messages" or file_streams(req, nbytes, framed):
        return route(req, device, nbytes, path="stream")
    return route(req, device, min(nbytes or FILE_PIECE, FILE_PIECE), path="array")


def for_request(device: str, req, nbytes: int | None):
    """The composite engine (the scheduler, engines/composite.py) of a multi-device spec for
    request ``req`` (either kind): the named engines that run it; with ``all``, OpenSSL where it
    has the cipher, else the OpenCL CPU device (never both: they would share the same cores)."""
    from .engines.composite import CompositeEngine

    everything = device.strip().lower() == "all"
    engines = []
    for s in member_specs(device):
        try:
            engines.append(engine(s))
        except Error:
            if not everything:   # (all: "cpu" where no OpenCL CPU device is present)
                raise
    engines = [e for e in engines if req.capability_on(e, nbytes)]
    if everything and any(e.kind == "openssl" for e in engines):
        engines = [e for e in engines if not (e.info.kind == "cpu" and e.kind != "openssl")]
    if not engines:
        raise UnsupportedCipher(f"no engine of {device!r} runs {req.name}")
    return CompositeEngine(engines, spec=device.strip().lower(), fence=scheduler_fence())


def _resident_composite(device: str, req, nbytes: int | None, resident_device: str | None):
    """The composite engine of a multi-device spec for GPU-resident data on ``resident_device``:
    the spec's CUDA GPUs that run ``req`` and the data's own GPU (it runs its ranges where the
    data are; the others through peer copies); None when that is one GPU."""
    from .engines.composite import CompositeEngine

    if not resident_device:
        return None
    try:
        everything = for_request(device, req, nbytes).engines
    except UnsupportedCipher:
        return None
    gpus = [e for e in everything if e.info.runtime == "cuda"]
    home = engine(resident_device)
    if home.capability(req, nbytes) is None:
        return None
    if all(e.info.spec != home.info.spec for e in gpus):
        gpus.insert(0, home)
    if len(gpus) < 2:
        return None
    return CompositeEngine(gpus, spec=device.strip().lower(), fence=scheduler_fence())


def _splits_message(eng, req, nbytes: int | None) -> bool:
    """Whether the one message of AEADRequest ``req`` runs in ranges of its blocks over the
    composite ``eng``'s members: at least AEAD_SPLIT_MIN_BYTES, two members or more, each
    running such ranges."""
    from .engines.scheduler.message_range import engine_runs_ranges

    if req.count != 1 or nbytes is None or nbytes < AEAD_SPLIT_MIN_BYTES or len(eng.engines) < 2:
        return False
    return all(engine_runs_ranges(e, req.name, req.nonce_len, req.tag_length, nbytes)
               for e in eng.engines)


def _gpu_takes_host_aead(spec, gpu, nbytes: int | None, count: int) -> bool:
    """Whether host data of a parallel AEAD that OpenSSL also has goes to ``gpu`` rather than
    to OpenSSL: a batch (its pieces overlapped, transfer/batches.py) from AUTO_GPU_MIN_BYTES on;
    one message from the AEAD's ``gpu_one_message_min`` on, up to a quarter of the GPU's memory
    (its job holds its texts in and out on the device; from two slices on they move in slices,
    overlapped): there the GPU is faster host -> host than OpenSSL on every core, below it
    slower (docs/benchmarks.md 0l).  A CUDA GPU only: an OpenCL GPU's runtime copies the texts
    through its own staging (not compared with OpenSSL)."""
    if getattr(gpu, "runtime", None) != "cuda":
        return False
    if nbytes is None:
        return True
    if count >= 2:
        return nbytes >= AUTO_GPU_MIN_BYTES
    return spec.aead.gpu_one_message_min <= nbytes <= (gpu.memory or 0) // 4


def _route_messages(req, device: str, nbytes: int | None, path: str, plan,
                    resident_device: str | None = None) -> Plan:
    """``route`` of an AEADRequest (a batch of ``req.count`` messages, ``nbytes`` of text in
    all) on a device of this process (the module docstring says how).  GPU-resident data runs
    on ``resident_device`` where the spec names no one device (one message or batch is not dealt
    over several GPUs)."""
    spec, count = req.spec, req.count
    nonce_len, tag_length = req.nonce_len, req.tag_length
    dev_cap = spec.capability("device", count=count)
    ossl = spec.capability("openssl", count=count, nonce_len=nonce_len, tag_length=tag_length)
    if is_multi(device):
        if path != "resident":
            eng = for_request(device, req, nbytes)
            if _splits_message(eng, req, nbytes):
                from .engines.composite import CompositeEngine

                eng = CompositeEngine(eng.engines, spec=eng.info.spec, fence=eng.fence,
                                      message_ranges=True)
                return plan(eng, "array", "parallel",
                            f"one message in ranges of its blocks over {eng.info.name}")
            return plan(eng, "array", "parallel", f"scheduled over {eng.info.name}")
        device = "gpu"   # (GPU-resident data runs on its own device)
    if path == "resident" and device in ("auto", "gpu", "cuda") and resident_device:
        device = resident_device
    if device != "auto":
        eng = engine(device)
        how = req.capability_on(eng, nbytes)
        if how is None:
            lacks = spec.capability("openssl") is None
            raise UnsupportedCipher(f"{eng.info.spec} cannot run {spec.name}" + (
                "" if eng.kind != "openssl" else ": OpenSSL lacks it" if lacks else
                f" with {nonce_len}-byte nonces and {tag_length}-byte tags"))
        if path == "resident" and eng.info.runtime != "cuda":
            path = "array"
        return plan(eng, path, how)
    # a file's message (the command line) goes to OpenSSL where it has the AEAD: a one-shot
    # process pays the GPU's start-up and the locking of the file's pages, which cost more than
    # OpenSSL's whole run (docs/benchmarks.md 0l)
    if ossl is not None and path == "stream":
        return plan(_openssl(), "array", ossl, choice="a file's message: OpenSSL has it")
    large = nbytes is None or nbytes >= AUTO_GPU_MIN_BYTES or path == "resident"
    if dev_cap == "parallel" and large:
        gpu = first_gpu()
        if gpu is not None and (path == "resident" or ossl is None
                                or _gpu_takes_host_aead(spec, gpu, nbytes, count)):
            return plan(engine_of(gpu), path if gpu.runtime == "cuda" else "array", dev_cap,
                        choice=("GPU-resident data on its own GPU" if path == "resident" else
                                "a GPU for this much parallel work"))
    if ossl is not None:
        return plan(_openssl(), "array", ossl, choice="OpenSSL has it")
    if dev_cap is not None:
        for dev in (first_cpu(), first_gpu()):
            if dev is not None:
                return plan(engine_of(dev), path if dev.runtime == "cuda" else "array", dev_cap,
                            choice="OpenSSL lacks it")
    raise UnsupportedCipher(f"no engine present runs {spec.name}")
