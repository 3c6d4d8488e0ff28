"""Cipher names, as OpenSSL spells them, resolved to their declarations: a block cipher·mode
(:class:`CipherSpec`: algorithm, key size, mode) or an AEAD (:class:`AEADSpec`), in one name
table; and the capability table: which kind of engine runs which (algorithm, mode, direction),
and how.

Every module of ``ciphergrid/algorithms/`` (block ciphers) and ``ciphergrid/aeads/`` (AEADs)
that defines ``CIPHER`` is registered by one loader the first time a name is looked up (a new
cipher touches no file here); ``register`` adds one more of either kind (tests register a toy
cipher).  ``lookup`` gives a block cipher·mode's spec, ``lookup_aead`` an AEAD's (``aeads.spec``
is its name there).  Every registered name is run by the test suite.

Engine kinds are open: ``register_engine_kind(kind, factory, can_run)`` adds one (the built-in
ones, ``device``: our kernels on OpenCL and CUDA devices, ``openssl`` and ``composite``, register
through the same call below).  ``can_run`` is the kind's column of the capability table; the
kind's ``factory`` makes its engine for a device whose ``runtime`` it serves (route.engine_of).
"""

from __future__ import annotations

import functools
import importlib
import threading
from dataclasses import dataclass

from .errors import UnsupportedCipher

DIRECTIONS = ("encrypt", "decrypt")


@dataclass(frozen=True)
class CipherSpec:
    name: str             # "aes-256-xts"
    algorithm: object     # the BlockCipher
    key_size: int         # bytes of ONE block-cipher key (XTS takes two of them); the largest
    mode: object          # the modes.Mode: modes.ECB, CBC, CTR, XTS
    key_sizes: tuple = () # every size ONE key may have under this name (CAST-128: 5..16); () = key_size

    @functools.cached_property
    def key_lens(self) -> tuple:
        """Every length the caller's key may have (XTS: two keys of one size each)."""
        return tuple(self.mode.key_count * k for k in (self.key_sizes or (self.key_size,)))

    @property
    def block_size(self) -> int:
        return self.algorithm.block_size

    @property
    def key_len(self) -> int:
        """Length of the key the caller gives (XTS: two concatenated block-cipher keys)."""
        return self.mode.key_count * self.key_size

    @property
    def iv_len(self) -> int:
        """Length of the IV / initial counter / tweak; 0 when the mode takes none."""
        return self.mode.iv_len(self.block_size)

    @property
    def openssl_name(self) -> str | None:
        """OpenSSL's EVP name, or None when OpenSSL lacks this cipher·mode."""
        return self.algorithm.openssl_name(self)

    def capability(self, engine: str, encrypt: bool) -> str | None:
        """How an engine of kind ``engine`` ("device", "openssl", or a registered kind) runs
        this cipher·mode in one direction: "parallel", "serial" (one block after the other: CBC
        encryption on a device), or None."""
        return engine_kind(engine).capability(self, self.mode, _direction(encrypt))

    def capabilities(self) -> dict[str, dict[str, str | None]]:
        """{"encrypt": {"device": ..., "openssl": ...}, "decrypt": {...}}: every kind's column."""
        return {d: {k.name: k.capability(self, self.mode, d) for k in table_kinds()}
                for d in DIRECTIONS}


@dataclass(frozen=True)
class AEADSpec:
    """One AEAD cipher name: its declaration and what each engine does with it."""

    name: str          # "aes-128-gcm"
    aead: object       # the aeads.base.AEAD declaration

    @property
    def key_len(self) -> int:
        return self.aead.names[self.name]

    def capability(self, engine: str, encrypt: bool = True, count: int = 1,
                   nonce_len: int | None = None, tag_length: int | None = None) -> str | None:
        """How an engine of kind ``engine`` ("device", "openssl", or a registered kind; the
        capability table: EngineKind) runs ``count`` messages: "parallel", "serial" (one
        message of a serial AEAD on a device: one work-item) or None; with the nonce and tag
        sizes, whether it runs those."""
        return engine_kind(engine).capability(self, None, _direction(encrypt), count=count,
                                              nonce_len=nonce_len, tag_length=tag_length)

    def capabilities(self) -> dict:
        """{"encrypt": {"device": ..., "openssl": ...}, "decrypt": {...}}: every kind's column."""
        return {d: {k.name: k.capability(self, None, d) for k in table_kinds()}
                for d in DIRECTIONS}


def _direction(encrypt) -> str:
    return encrypt if encrypt in DIRECTIONS else ("encrypt" if encrypt else "decrypt")


# --------------------------------------------------------------------------- engine kinds

@dataclass(frozen=True)
class EngineKind:
    """One kind of engine (see the module docstring)."""

    name: str              # Engine.kind and the capability table's column: "device", "openssl"
    factory: object        # DeviceInfo -> Engine; or "module:Class" of ciphergrid, imported on use
    can_run: object        # (spec, mode, direction, **details) -> "parallel" | "serial" | None;
    #                        None: no column (a composite runs what its members run)
    runtimes: tuple        # the DeviceInfo.runtime values its engines run on
    devices: object = None # () -> its DeviceInfos, for kinds devices.py does not enumerate
    label: str = ""        # what it is, in words (`ciphergrid list`)

    def capability(self, spec, mode, direction: str, **details) -> str | None:
        """The kind's answer for ``spec`` (a CipherSpec and its mode, or an aeads.AEADSpec and
        None) in ``direction``; ``details`` of AEADs: count, nonce_len, tag_length."""
        if self.can_run is None:
            raise ValueError(f"engines of kind {self.name!r} run what their members run")
        return self.can_run(spec, mode, direction, **details)

    def make(self, info):
        """The engine of device ``info``."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            factory = getattr(importlib.import_module(module, __package__), attr)
        return factory(info)


_KINDS: dict[str, EngineKind] = {}
_kinds_lock = threading.Lock()


def register_engine_kind(kind: str, factory, can_run, *, runtimes=None, devices=None,
                         label: str = "") -> EngineKind:
    """Add an engine kind: its engines are made by ``factory(info)`` for the devices of the
    ``runtimes`` named (default: ``kind``), listed by ``devices()`` where devices.py does not
    enumerate them; ``can_run(spec, mode, direction, **details)`` is its column of the
    capability table ("parallel", "serial" or None; ``spec`` is a CipherSpec with its Mode, or
    an aeads.AEADSpec with None and the details count, nonce_len, tag_length).  A kind or a
    runtime registered already is refused (ValueError)."""
    runtimes = tuple(runtimes or (kind,))
    with _kinds_lock:
        taken = {r for k in _KINDS.values() for r in k.runtimes}
        if kind in _KINDS or taken.intersection(runtimes):
            raise ValueError(f"engine kind {kind!r} or one of its runtimes is registered already")
        k = _KINDS[kind] = EngineKind(kind, factory, can_run, runtimes, devices, label)
    _kinds_changed()
    return k


def _kinds_changed() -> None:
    """Route's kept plans of the current and the default runtime dropped (the kinds decide)."""
    from . import runtime

    for rt in {runtime.current(), runtime.default()}:
        rt.plans.clear()


def unregister_engine_kind(kind: str) -> None:
    """Remove an engine kind, and its engines from the current and the default runtime."""
    from . import runtime

    with _kinds_lock:
        k = _KINDS.pop(kind, None)
    if k is None:
        return
    for rt in {runtime.current(), runtime.default()}:
        with rt.lock:
            for spec in [s for s, e in rt.engines.items() if e.info.runtime in k.runtimes]:
                del rt.engines[spec]
    _kinds_changed()


def engine_kind(kind: str) -> EngineKind:
    """The registered kind ``kind`` (ValueError when there is none)."""
    try:
        return _KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown engine kind {kind!r}") from None


def engine_kinds() -> list[EngineKind]:
    """Every registered kind, the built-in ones first."""
    return list(_KINDS.values())


def table_kinds() -> list[EngineKind]:
    """The kinds that have a column in the capability table (all but composite)."""
    return [k for k in _KINDS.values() if k.can_run is not None]


def kind_of_runtime(runtime: str) -> EngineKind | None:
    """The kind whose engines run on devices of ``runtime``, or None."""
    return next((k for k in _KINDS.values() if runtime in k.runtimes), None)


def registered_devices() -> list:
    """The devices of the kinds that list their own (``devices=``), in registration order."""
    return [d for k in list(_KINDS.values()) if k.devices is not None for d in k.devices()]


def _device_can_run(spec, mode, direction: str, count: int = 1, **_) -> str | None:
    """Our kernels: a cipher with an implementation; parallel where the mode is (an AEAD: many
    messages, or one of an AEAD parallel within a message), else serial (one work-item)."""
    aead = getattr(spec, "aead", None)
    if aead is not None:
        if not aead.implementations:
            return None
        return "parallel" if (aead.parallel_message or count > 1) else "serial"
    if not spec.algorithm.implementations:
        return None
    return "parallel" if mode.parallel(direction == "encrypt") else "serial"


def _openssl_can_run(spec, mode, direction: str, nonce_len: int | None = None,
                     tag_length: int | None = None, **_) -> str | None:
    """OpenSSL: the cipher·mode it has (XTS also composed from its ECB); an AEAD it has, with
    these nonce and tag sizes."""
    aead = getattr(spec, "aead", None)
    if aead is not None:
        if spec.name not in aead.openssl:
            return None
        if nonce_len is not None and not aead.openssl_takes(
                spec.name, nonce_len, tag_length or aead.default_tag_length):
            return None
        return "parallel"
    if spec.openssl_name is not None:
        return "parallel" if mode.parallel(direction == "encrypt") else "serial"
    from . import modes as _modes

    if mode is _modes.XTS and spec.algorithm.openssl_name(_ecb_of(spec)) is not None:
        return "parallel"  # composed from OpenSSL's ECB
    return None


register_engine_kind("device", ".engines.device:DeviceEngine", _device_can_run,
                     runtimes=("opencl", "cuda"), label="our kernels on OpenCL / CUDA devices")
register_engine_kind("openssl", ".engines.openssl:OpenSSLEngine", _openssl_can_run,
                     runtimes=("native",), label="OpenSSL on every core")
# (a composite is made by route from its members' engines, not for a device of its own)
register_engine_kind("composite", ".engines.composite:CompositeEngine", None,
                     label="several engines at once (the scheduler)")


def _ecb_of(spec: CipherSpec) -> CipherSpec:
    from . import modes as _modes

    return CipherSpec(spec.name.rsplit("-", 1)[0] + "-ecb", spec.algorithm, spec.key_size, _modes.ECB,
                      spec.key_sizes)


_SPECS: dict = {}   # name -> CipherSpec or AEADSpec: every registered name of either kind
_lock = threading.Lock()
#: what the loader has imported: modules ("algorithms.aes", "aeads.gcm") and whole packages
_modules_seen: set[str] = set()
#: the packages of declarations: block ciphers, AEADs
PACKAGES = ("algorithms", "aeads")


def register(declaration) -> list[str]:
    """Register a declaration's names; returns them.  A block cipher (``variants``) registers
    ``prefix-mode`` names for each variant; an AEAD (aeads.base.AEAD) its ``names``.

    A block cipher's variant is (prefix, key size in bytes, mode names); the key size may be a
    tuple or range of sizes when one name takes many (CAST-128: 5..16 bytes), the largest being
    the nominal one (the CLI's key files and passphrase derivation use it, as ``openssl enc``
    does)."""
    if not hasattr(declaration, "variants"):
        for n in declaration.names:
            _SPECS[n] = AEADSpec(n, declaration)
        return list(declaration.names)
    from . import modes as _modes

    algorithm = declaration
    added = []
    for prefix, key_size, mode_names in algorithm.variants:
        sizes = (key_size,) if isinstance(key_size, int) else tuple(key_size)
        if not sizes or any(k not in algorithm.key_sizes for k in sizes):
            raise ValueError(f"{algorithm.name}: variant {prefix} has a key size it does not take")
        for mode_name in mode_names:
            mode = _modes.by_name(mode_name)
            if not mode.available_for(algorithm):
                raise ValueError(f"{mode_name} is not defined for {algorithm.name}")
            if mode.key_count > 1 and len(sizes) > 1:
                raise ValueError(f"{prefix}-{mode_name}: a two-key mode needs one key size")
            spec = CipherSpec(f"{prefix}-{mode_name}", algorithm, max(sizes), mode,
                              sizes if len(sizes) > 1 else ())
            _SPECS[spec.name] = spec
            added.append(spec.name)
    return added


def unregister(names) -> None:
    for n in names:
        _SPECS.pop(n, None)


def _load(package: str | None = None) -> None:
    """Register the CIPHER of every module of the declarations' ``package`` (both when None),
    once."""
    for pkg in PACKAGES if package is None else (package,):
        if pkg in _modules_seen:
            continue
        with _lock:
            if pkg in _modules_seen:
                continue
            import pkgutil

            found = importlib.import_module(f".{pkg}", __package__).__path__
            for info in pkgutil.iter_modules(found):
                _load_module(pkg, info.name)
            _modules_seen.add(pkg)


def _load_module(package: str, name: str) -> None:
    """Register the CIPHER of ``<package>/<name>.py`` (once; no such module: nothing)."""
    key = f"{package}.{name}"
    if key in _modules_seen or name == "base":
        return
    _modules_seen.add(key)
    try:
        mod = importlib.import_module(f"{__package__}.{key}")
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.{key}":
            raise
        return
    if hasattr(mod, "CIPHER"):
        register(mod.CIPHER)


def _load_for(key: str) -> None:
    """The module a name most likely comes from (``aes-128-ctr``: ``algorithms/aes.py``) first;
    every module only where that one does not define the name.  A command that enciphers with one
    cipher does not import (and build the tables of) the others in its start-up."""
    if not known(key):
        _load("algorithms")


#: OpenSSL's short names, as ``openssl enc`` takes them (``openssl list -cipher-algorithms``:
#: "aes128 => AES-128-CBC"; ``openssl enc -list``: -des-ede, -des-ede3, which are ECB), where the
#: name they stand for is ours (not desx, bf, rc2, aria, sm4...).  ``lookup`` resolves them, so
#: the API and the command line take them alike; a spec keeps its full name.
ALIASES = {
    "aes128": "aes-128-cbc", "aes192": "aes-192-cbc", "aes256": "aes-256-cbc",
    "camellia128": "camellia-128-cbc", "camellia192": "camellia-192-cbc",
    "camellia256": "camellia-256-cbc",
    "des": "des-cbc", "des3": "des-ede3-cbc", "des-ede": "des-ede-ecb", "des-ede3": "des-ede3-ecb",
    "cast": "cast5-cbc", "cast-cbc": "cast5-cbc", "seed": "seed-cbc",
}


def canonical(name: str) -> str:
    """The registered spelling of ``name``: lower case, an OpenSSL short name (ALIASES) resolved."""
    key = name.strip().lower()
    return ALIASES.get(key, key)


def aliases() -> dict[str, list[str]]:
    """{registered name: its OpenSSL short names} for the names that have some."""
    _load()
    out: dict[str, list[str]] = {}
    for short, full in sorted(ALIASES.items()):
        if full in _SPECS:
            out.setdefault(full, []).append(short)
    return out


def known(name: str) -> bool:
    """Whether ``name`` is registered, having imported at most the module it most likely comes
    from (a cheap test before the AEADs are looked at: False may still be a name of another
    module, which ``lookup`` finds)."""
    key = canonical(name)
    if "algorithms" not in _modules_seen and key not in _SPECS:
        head = key.split("-", 1)[0]
        if head.isidentifier():
            with _lock:
                _load_module("algorithms", head)
    return isinstance(_SPECS.get(key), CipherSpec)


def _of_kind(kind: type) -> list:
    """The registered specs of ``kind`` (CipherSpec or AEADSpec), by name."""
    _load("algorithms" if kind is CipherSpec else "aeads")
    return [s for _, s in sorted(_SPECS.items()) if isinstance(s, kind)]


def names() -> list[str]:
    """Every registered block cipher·mode name, sorted (:func:`aead_names`: the AEADs')."""
    return [s.name for s in _of_kind(CipherSpec)]


def specs() -> list[CipherSpec]:
    return _of_kind(CipherSpec)


def lookup(name: str) -> CipherSpec:
    """The spec of a block cipher·mode name (or of an OpenSSL short name, ALIASES);
    ``UnsupportedCipher`` (:func:`unknown`) when it names none."""
    spec = _SPECS.get(name) if type(name) is str else None   # (a registered name as spelled)
    if isinstance(spec, CipherSpec) and name not in ALIASES:
        return spec
    key = canonical(name)
    _load_for(key)
    spec = _SPECS.get(key)
    if not isinstance(spec, CipherSpec):
        raise unknown(name)
    return spec


def aead_names() -> list[str]:
    """Every registered AEAD name, sorted."""
    return [s.name for s in _of_kind(AEADSpec)]


def aead_specs() -> list[AEADSpec]:
    return _of_kind(AEADSpec)


def is_aead(name) -> bool:
    """Whether ``name`` is an AEAD's name (imports the AEADs' declarations, not the block
    ciphers'; a registered block cipher·mode's name as spelled is answered without them)."""
    if type(name) is str and isinstance(_SPECS.get(name), CipherSpec):
        return False
    _load("aeads")
    return isinstance(name, str) and isinstance(_SPECS.get(name.strip().lower()), AEADSpec)


def lookup_aead(name: str) -> AEADSpec:
    """The spec of an AEAD name (``UnsupportedCipher`` when it names none)."""
    _load("aeads")
    spec = _SPECS.get(name.strip().lower()) if isinstance(name, str) else None
    if not isinstance(spec, AEADSpec):
        raise UnsupportedCipher(f"unknown AEAD {name!r}")
    return spec


def aead_family(family: str):
    """The AEAD declaration of a family ("aes-gcm")."""
    for s in _of_kind(AEADSpec):
        if s.aead.family == family:
            return s.aead
    raise UnsupportedCipher(f"unknown AEAD family {family!r}")


def unknown(name) -> UnsupportedCipher:
    """The error for a name that is neither a block cipher·mode nor an AEAD, one line: the
    closest names (a misspelling), the block ciphers', the AEADs' and OpenSSL's short names
    alike, and where every name is listed (``ciphergrid list``)."""
    _load()
    short = [a for a in sorted(ALIASES) if ALIASES[a] in _SPECS]
    shown = str(name) if len(str(name)) <= 40 else str(name)[:37] + "..."
    close = suggest(str(name), sorted(_SPECS) + short)
    hint = f" (did you mean {', '.join(close[:-1])} or {close[-1]}?)" if len(close) > 1 else \
        f" (did you mean {close[0]}?)" if close else ""
    return UnsupportedCipher(f"unknown cipher {shown!r}{hint}; `ciphergrid list` gives every name")


def key_words(lens, parts: int = 1) -> str:
    """The key sizes ``lens`` (bytes) as every message says them: "a 16-byte (128-bit) key",
    "a 16-, 24- or 32-byte (128-, 192- or 256-bit) key", "a 5- to 16-byte (40- to 128-bit) key";
    ``parts`` keys in one (XTS): "a 32-byte (256-bit) key (two 128-bit keys)"."""
    lens = sorted(set(lens))

    span = len(lens) > 2 and lens == list(range(lens[0], lens[-1] + 1))

    def said(xs, unit):
        if span:
            return f"{xs[0]}- to {xs[-1]}-{unit}"
        head = ", ".join(f"{x}-" for x in xs[:-1])
        return f"{head} or {xs[-1]}-{unit}" if head else f"{xs[-1]}-{unit}"

    words = f"a {said(lens, 'byte')} ({said([8 * k for k in lens], 'bit')}) key"
    if parts > 1 and len(lens) == 1:
        count = {2: "two", 3: "three"}.get(parts, str(parts))
        words += f" ({count} {8 * lens[0] // parts}-bit keys)"
    return words


def suggest(name: str, candidates, n: int = 3) -> list[str]:
    """The ``n`` candidates closest to ``name`` (difflib's ratio of at least 0.6; of equal ratios,
    the longer common start first: aes-128-cbx suggests aes-128-cbc before aes-128-ecb)."""
    import difflib
    import os.path

    key = name.strip().lower()
    scored = []
    for c in candidates:
        m = difflib.SequenceMatcher(None, key, c)
        if m.real_quick_ratio() >= 0.6 and m.quick_ratio() >= 0.6 and (r := m.ratio()) >= 0.6:
            scored.append((-round(r, 6), -len(os.path.commonprefix([key, c])), c))
    return [c for *_, c in sorted(scored)[:n]]
