"""A plan: what ``route`` decided for one request, and how to run it.

``route.route(req, device, nbytes, path=)`` returns a :class:`Plan` for either kind of request
(request.py: a block ``Request`` or an ``AEADRequest``); its callers run it (``plan.run``: a
block request's message or an AEAD request's batch, by the request's kind of work; ``plan.stream``
for a block request's file or pipe) and say it (``plan.describe()``, the line ``-v`` prints)
instead of deciding again.  A plan holds:

* the request it was routed for (the runtime keeps route's plans as templates without one:
  ``template``, ``bound``);
* the engine (one device's, OpenSSL's, or a composite over several: ``engines`` and ``shares``);
* the path: "array" (host memory), "resident" (GPU arrays on the engine's own device; data that
  is resident but routed to a host engine has path "array": it runs through host copies),
  "stream" (a file or pipe to a file or pipe);
* the fallback: the device asked for when another runs the request, and ``reason``, why;
* ``choice``: why ``auto`` chose this engine.

``Route`` (route.py) is the same class under its first name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .request import Batch, MessageRange


@dataclass(frozen=True)
class Plan:
    engine: object                 # engines.Engine: what runs it (a CompositeEngine for several)
    path: str                      # "array" | "resident" | "stream"
    how: str                       # "parallel" | "serial"
    reason: str = ""               # why this engine, when it is not the one asked for
    request: object = field(default=None, repr=False, compare=False)  # request.py's, either kind
    cipher: str = ""               # the cipher's name ("aes-128-ctr", "aes-256-gcm")
    encrypt: bool | None = None    # the direction (None: an AEAD plan routed without one)
    asked: str = "auto"            # the device spec asked for
    choice: str = ""               # why auto chose this engine ("" when a device was named)
    nbytes: int | None = None      # the size routed for

    @property
    def device(self) -> str:
        """The spec of what runs it (a composite: the spec asked for, ``all`` or a list)."""
        return self.engine.info.spec

    @property
    def fallback(self) -> str | None:
        """The device asked for that does not run the request (another runs it: ``reason``
        says why), else None."""
        if not self.reason or self.engine.kind == "composite" or self.asked in ("auto", ""):
            return None
        return self.asked

    @property
    def engines(self) -> list:
        """The engines that run it: a composite's members, else the one engine."""
        return list(getattr(self.engine, "engines", None) or [self.engine])

    @property
    def shares(self) -> list[tuple[str, float]]:
        """(engine spec, expected fraction of the bytes) per engine: a composite's shares by the
        speeds its scheduler expects (measured, else defaults per kind of device); one engine:
        all of them."""
        engines = self.engines
        if len(engines) == 1 or not self.cipher:
            return [(e.info.spec, 1.0 / len(engines)) for e in engines]
        from .engines.scheduler.speeds import expected_speed

        path = "resident" if self.path == "resident" else "array"
        enc = True if self.encrypt is None else self.encrypt
        speeds = [expected_speed(e, self.cipher, enc, path=path)[0] for e in engines]
        total = sum(speeds) or 1.0
        return [(e.info.spec, s / total) for e, s in zip(engines, speeds)]

    @property
    def prefaults_output(self) -> bool:
        """Whether a new output file's pages are best faulted in ahead (a RAM disk) for this
        plan: a stream on a device engine (its pipeline writes faster than the kernel faults
        pages in; the host engines' writes allocate as they go)."""
        return self.path == "stream" and self.engine.kind == "device"

    def describe(self) -> str:
        """One line: what runs where, and why (``-v``): "aes-128-ctr encrypt on cuda:0 (chosen
        by auto: ...)"; "... by the service at PATH" where a service runs it."""
        what = self.cipher + ("" if self.encrypt is None else
                              " encrypt" if self.encrypt else " decrypt")
        if self.engine.kind == "remote":   # (the service's runtime chooses its engine)
            there = self.engine.remote_device
            return (f"{what.strip()} by the service at {self.engine.address}"
                    + ("" if there == "auto" else f" on its {there}"))
        why = self.reason or (f"chosen by auto: {self.choice}" if self.choice else
                              "chosen by auto" if self.asked == "auto" else "")
        if self.engine.kind == "composite":   # (its calibration: together, or one member alone)
            said = self.engine.verdict(self.cipher, self.encrypt, self.nbytes, self.path,
                                       getattr(self.request, "count", None))
            why = "; ".join(w for w in (why, said) if w)
        return f"{what.strip()} on {self.device}" + (f" ({why})" if why else "")

    # -- kept by route ---------------------------------------------------------------------------
    def template(self) -> "Plan":
        """This plan without its request (route keeps templates: a kept plan holds no key, IV
        or batch)."""
        return self.bound(None)

    def bound(self, request) -> "Plan":
        """A template's plan for ``request`` (one with the template's plan key)."""
        p = object.__new__(Plan)
        p.__dict__.update(self.__dict__)
        p.__dict__["request"] = request
        return p

    # -- running it ----------------------------------------------------------------------------
    def run(self, data=None, out=None, **opts):
        """The plan's request on ``data``, by its kind of work:

        * a block request (its message's blocks, request.BlockRange): ``data`` the whole message
          (host or GPU array) into ``out`` (the same size; default: ``data`` itself, in place)
          on the "array" or "resident" path (a stream's plan runs through :meth:`stream`);
          options ``stats``, ``wait``, ``slice_bytes``, ``turn`` (:meth:`_run_blocks`);
        * an AEAD request (its batch's messages, request.MessageRange): ``data`` the batch
          (request.Batch; default: the request's) sealed (returns the tags) or opened against
          ``tags`` (returns the verified mask), its output texts into ``out`` (default: the
          batch's ``dst``); options ``tags``, ``impl``, ``beside``, ``stats``
          (:meth:`_run_messages`).

        An option of the other kind is a TypeError, as is data of the other kind."""
        req = self.request
        if req is None:
            raise TypeError("a plan without its request does not run (route binds one)")
        if req.kind == "messages":
            return self._run_messages(data, out, **opts)
        return self._run_blocks(data, out, **opts)

    def _run_blocks(self, src, dst=None, *, stats=None, wait: bool = True,
                    slice_bytes: int | None = None, turn=None) -> None:
        """A block request's whole message ``src`` into ``dst`` (``src`` where None): host arrays
        on the "array" path; GPU arrays on the "resident" path (queued on the caller's CuPy
        stream when ``wait`` is False), or -- GPU arrays routed to a host engine -- through host
        copies.  ``stats``: a SchedulerStats to fill in.

        ``slice_bytes`` (host arrays): the message runs in block ranges of about that many bytes
        through one session where the request splits (a parallel mode), whole otherwise;
        ``turn(nbytes)`` is called before each range (before the whole message when unsliced):
        a service's fair share."""
        req = self.request
        if isinstance(src, Batch) or src is None:
            raise TypeError(f"a plan of {req.what} runs a message's array, not an AEAD batch")
        if self.path == "stream":
            raise TypeError("a stream's plan runs through Plan.stream")
        if dst is None:
            dst = src
        if self.path == "resident":
            self.engine.crypt_resident(req, src, dst, wait, stats=stats)
            return
        if _on_gpu(src):
            import cupy

            host = cupy.asnumpy(src)
            self.engine.crypt(req, host, host, stats=stats)
            dst.set(host)
            return
        n = src.nbytes
        unit = req.mode.split_unit(req) if slice_bytes else None
        if unit is None or n <= slice_bytes or self.how != "parallel":
            if turn is not None:
                turn(n)
            self.engine.crypt(req, src, dst, stats=stats)
            return
        bs = req.block_size
        step = max(unit, slice_bytes // unit * unit) // bs
        rest = req.work(n)
        with self.engine.session(req) as session:
            while rest is not None:
                if rest.count > step:
                    # (in place: the next range's chaining value is read from the input now,
                    # before this range is run over it)
                    part, rest = req.split(rest, step, src)
                else:
                    part, rest = rest, None
                a, b = part.span(bs, n)
                if turn is not None:
                    turn(b - a)
                part.run(session, src[a:b], dst[a:b])

    def _run_messages(self, batch=None, out=None, *, tags=None, impl: str | None = None,
                      beside=None, stats=None):
        """An AEAD plan on ``batch`` (request.Batch; default: its request's) as one
        MessageRange of all its messages: sealed (the tags) or opened against ``tags`` (the
        verified mask), by implementation ``impl`` (default: the request's), output texts into
        ``out`` (default: the batch's); ``beside``: the caller's host work, started once the
        engine's device is busy (Engine.seal); ``stats``: a SchedulerStats filled in (a
        composite: its scheduler's shares; one engine: what it ran).  The batch's key material
        is wiped after, whatever happens."""
        import time

        req = self.request
        if batch is None:
            batch = req.batch
        if not isinstance(batch, Batch):
            raise TypeError(f"a plan of {req.what} runs an AEAD batch (request.Batch), "
                            f"not {type(batch).__name__}")
        if impl is None:
            impl = req.impl
        eng = self.engine
        composite = eng.kind == "composite"
        kw = {"stats": stats} if composite and stats is not None else {}
        if batch.encrypt:
            kw["beside"] = beside
        t0 = time.perf_counter()
        try:
            res = MessageRange(batch, 0, batch.count).run(eng, impl, tags, out, **kw)
        finally:
            batch.wipe()
        if stats is not None and not composite:
            stats.ran(eng.info.spec, int(batch.off[-1]), time.perf_counter() - t0)
        return res

    def stream(self, src, dst, **kw) -> int:
        """A block request from file or pipe ``src`` to ``dst`` (objects or descriptors) on the
        engine's stream (``progress``, ``chunk_bytes``, ``depth``, ``nbytes``: Engine.stream's);
        the bytes written."""
        return self.engine.stream(self.request, src, dst, **kw)

    def sealed_file(self, seal: bool, scheme: str, key, context, src, dst, **kw) -> int:
        """A sealed file (C2SP chunked encryption, ``scheme`` by name: this plan's AEAD request
        is its chunks) from ``src`` into ``dst`` on the engine's sealed-file entry (the remote
        engine's: a service runs it; ``header``, ``progress``: RemoteEngine.sealed_file's); the
        bytes written."""
        return self.engine.sealed_file(seal, scheme, key, context, src, dst, **kw)


def _on_gpu(a) -> bool:
    """Whether ``a`` is a CuPy array (without importing CuPy)."""
    import sys

    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(a, cupy.ndarray)
