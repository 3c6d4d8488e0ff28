"""The OpenSSL engine: OpenSSL's EVP ciphers (AES-NI) on every core of the host.  Host keys
only: a session keeps the request, and OpenSSL expands the key per context.

The package, one concern per module:

* ``libcrypto``  libcrypto through ctypes (loading, declarations, cipher lookup, error queue,
  version), the optional C helper loop; the ``BACKEND_NAME`` in use;
* ``contexts``   the one context setup of every concern below: EVP cipher contexts (``EvpCtx``),
  the pyca/cryptography fallback (``PycaCtx``, ``PycaAead``), a request's parts each on a context
  of its own over the threads (``run_parts``);
* ``threads``    the thread pool, runs of jobs with one cancel event, the cut into parts (bytes on
  a unit's boundaries, or messages of about equal bytes);
* ``bulk``       ``crypt`` (one-shot, any buffer) and ``run`` (a Request over host arrays):
  block modes split over threads;
* ``xts``        XTS: one data unit, data units (sectors) over threads, XTS composed from ECB;
* ``aead``       AEAD batches (GCM, ChaCha20-Poly1305) and C2SP chunks: message ranges in the C
  loop, pyca's calls without it;
* here           the engine (``OpenSSLEngine``), its sessions and ``stream``.
"""

from __future__ import annotations

import os

from ..base import Engine, Session

__all__ = ["OpenSSLEngine", "OpenSSLSession", "crypt", "run", "openssl_version",
           "BACKEND_NAME", "speed_loop"]

#: the package's names from its modules, imported at first use (PEP 562): a sealed file's chunks
#: (``aead``, ``contexts``) take neither the block modes (``bulk``, ``xts``) nor the registry
_LAZY = {"crypt": "bulk", "run": "bulk", "BACKEND_NAME": "libcrypto",
         "openssl_version": "libcrypto", "speed_loop": "libcrypto"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def device_info():
    """The OpenSSL engine as a device: ``native``, every core of the host."""
    from ...backends.base import DeviceInfo
    from ...runtime import usable_cores

    from .libcrypto import BACKEND_NAME, openssl_version

    try:
        ver = openssl_version()
    except Exception:
        ver = "OpenSSL"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return DeviceInfo(spec="native", runtime="native", name=f"{ver} ({_cpu_name()})", kind="cpu",
                      compute_units=usable_cores(), memory=int(mem), vendor="OpenSSL",
                      platform=BACKEND_NAME)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


class OpenSSLSession(Session):
    #: threads a call runs on (None: its runtime's budget); the scheduler gives the GPUs'
    #: pipelines theirs
    threads: int | None = None

    def crypt(self, src, dst, first_block: int = 0, chain: bytes | None = None) -> None:
        req = self.req.at(first_block, chain) if first_block else self.req
        req.check_length(src.nbytes)
        if src.nbytes:
            from .bulk import run

            host = self.engine.host
            run(req, src, dst, self.threads or host.budget, host)


class OpenSSLEngine(Engine):
    kind = "openssl"

    def __init__(self, info=None, host=None):
        from .threads import host_threads

        self.info = info or device_info()
        #: the host threads of the runtime that made it (a runtime.Threads: budget and pool)
        self.host = host_threads(host)

    @property
    def device(self):
        return self.info

    def session(self, req) -> OpenSSLSession:
        return OpenSSLSession(self, req)

    def stream(self, req, src, dst, *, progress=None, chunk_bytes=None, depth=None,
               nbytes: int | None = None) -> int:
        """The file path (transfer.pieces): pieces read, enciphered by one EVP context each on
        every core, written, all at once; ``chunk_bytes``: bytes per piece, ``depth``: workers."""
        from ...transfer import pieces
        from .bulk import run

        def crypt(r, a, b):
            r.check_length(a.nbytes)
            run(r, a, b, threads=1)

        return pieces.stream(req, src, dst, crypt, piece=chunk_bytes, threads=depth,
                             progress=progress, cores=self.host.budget)

    # -- AEADs (aeads/): the ones OpenSSL has ------------------------------------------------------
    def seal(self, batch, impl: str | None = None, beside=None):
        """Encrypt every message of ``batch`` (aeads.base.Batch) into ``batch.dst``; the tags
        (``beside`` started at once: OpenSSL's calls release the interpreter lock)."""
        from ..base import start_beside
        from . import aead

        start_beside(beside)
        return aead.seal(batch, self.host)

    def open(self, batch, tags, impl: str | None = None):
        """Decrypt and verify every message; the mask of those whose tag verified (the others'
        plaintext is zeroed)."""
        from . import aead

        return aead.open_(batch, tags, self.host)
