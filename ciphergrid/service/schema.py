"""The service's requests, one table per op: each field's type, range and presence
(docs/service.md lists them).  :func:`check` runs on every request before any work: a field that
breaks its rule is refused with InvalidArgument naming the op, the field and the rule; a field no
table names is refused the same way.  Values are never echoed (keys, tokens): an integer's value,
a string's or bin's length, another value's type.

The ranges bound what a request may make the service do: a stream's ``chunk_bytes`` and ``depth``
are the command line's (settings.MIN_CHUNK..MAX_CHUNK, MIN_DEPTH..MAX_DEPTH), every other count is
bounded by the size of what it counts; the memory a request holds is computed from them
(memory.need) and admitted against the policy's ``max_memory`` before anything is
allocated.
"""

from __future__ import annotations

from .. import settings
from ..errors import InvalidArgument
from ..formats.cobblestone import HEADER
from . import protocol

#: the largest value a MessagePack integer holds
U64 = (1 << 64) - 1
#: the largest shared buffer (a memfd) a request may name; its bytes are the client's memory
MAX_SHARED = 1 << 46
#: the longest key, IV, nonce or CBC chaining value a request may carry
MAX_KEY, MAX_IV, MAX_NONCE = 128, 64, 1024
#: the longest name (a cipher, an implementation, a device spec) and the longest token
MAX_NAME, MAX_TOKEN = 256, 4096

_WORDS = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", bytes: "bin",
          type(None): "nil", list: "an array", dict: "a map"}


def _n(n: int) -> str:
    """A bound as the rules write it: 2^k or 2^k-1 from 2^20 on."""
    if n >= 1 << 20 and not n & (n - 1):
        return f"2^{n.bit_length() - 1}"
    if n >= (1 << 20) - 1 and not (n + 1) & n:
        return f"2^{n.bit_length()}-1"
    return str(n)


def _what(v) -> str:
    """What a value is, never what it holds: an integer's value, a string's or bin's length."""
    if isinstance(v, bool) or v is None:
        return _WORDS[type(v)]
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (bytes, str)):
        return f"{_WORDS[type(v)]} of {len(v)} {'bytes' if isinstance(v, bytes) else 'characters'}"
    return _WORDS.get(type(v), type(v).__name__)


class Field:
    """One field's rule: its type (``int``, ``bool``, ``str``, ``bytes``; ``nil``: nil allowed,
    ``None``: only nil), its range (an integer's value, a string's or bin's length;
    ``hi_remote``: the bound over a remote connection) and whether it must be there."""

    def __init__(self, kind, lo: int = 0, hi: int = U64, *, required: bool = False,
                 nil: bool = False, hi_remote: int | None = None):
        self.kind, self.lo, self.hi, self.hi_remote = kind, lo, hi, hi_remote
        self.required, self.nil = required, nil

    def bound(self, local: bool) -> int:
        return self.hi if local or self.hi_remote is None else self.hi_remote

    def rule(self, local: bool = True) -> str:
        """The rule in words (an error's, the docs' table)."""
        if self.kind is None:
            return "nil"
        hi = self.bound(local)
        if self.kind is bool:
            out = "a boolean"
        elif self.kind is bytes and self.lo == hi:
            out = f"bin of {_n(hi)} bytes"
        elif self.kind is int:
            out = (f"the integer {self.lo}" if self.lo == hi
                   else f"an integer from {_n(self.lo)} to {_n(hi)}")
        else:
            unit = "bytes" if self.kind is bytes else "characters"
            out = f"{_WORDS[self.kind]} of {_n(self.lo)} to {_n(hi)} {unit}"
        return out + (" or nil" if self.nil else "")

    def accepts(self, v, local: bool = True) -> bool:
        if v is None:
            return self.nil or self.kind is None
        if self.kind is None or type(v) is not self.kind:   # (bool is not an int here)
            return False
        if self.kind is bool:
            return True
        n = v if self.kind is int else len(v)
        return self.lo <= n <= self.bound(local)


def _req(kind, lo=0, hi=U64, **kw) -> Field:
    return Field(kind, lo, hi, required=True, **kw)


def _opt(kind, lo=0, hi=U64, **kw) -> Field:
    return Field(kind, lo, hi, nil=True, **kw)


_VERSION = _req(int, protocol.VERSION, protocol.VERSION)
_DEVICE = _opt(str, 1, MAX_NAME)
_IMPL = _opt(str, 1, MAX_NAME)
#: a buffer's fields: inline (``data``) or a sealed memfd of ``length`` bytes (``arena``: the
#: connection's kept one)
_BUFFER = {"data": Field(bytes, 0, protocol.INLINE_MAX, hi_remote=protocol.REMOTE_PIECE),
           "length": Field(int, 0, MAX_SHARED), "arena": Field(bytes, 1, 64)}
#: a cipher·mode request's fields (protocol.request_fields)
_REQUEST = {"version": _VERSION, "cipher": _req(str, 1, MAX_NAME), "key": _req(bytes, 0, MAX_KEY),
            "iv": _opt(bytes, 0, MAX_IV), "encrypt": _req(bool), "padding": Field(None, nil=True),
            "sector_size": _opt(int, 16, 16 << 20), "start_sector": _opt(int), "impl": _IMPL,
            "allow_weak": _opt(bool), "device": _DEVICE}

#: op -> {field: rule} ("op" itself: one of these names)
SCHEMA = {
    "hello": {"version": _opt(int), "token": _opt(str, 0, MAX_TOKEN)},
    "status": {"version": _opt(int)},
    "crypt": {**_REQUEST, **_BUFFER, "first_block": _opt(int), "chain": _opt(bytes, 0, MAX_IV)},
    "stream": {**_REQUEST, "nbytes": _opt(int, 0, 1 << 62),
               "chunk_bytes": _opt(int, settings.MIN_CHUNK, settings.MAX_CHUNK),
               "depth": _opt(int, settings.MIN_DEPTH, settings.MAX_DEPTH),
               "fresh_output": _opt(bool)},
    "aead": {"version": _VERSION, "cipher": _req(str, 1, MAX_NAME), "key": _req(bytes, 0, MAX_KEY),
             "nonce": _req(bytes, 0, MAX_NONCE), "aad": _opt(bytes, 0, protocol.REMOTE_PIECE),
             "tag_length": _req(int, 0, 64), "encrypt": _req(bool), "device": _DEVICE,
             "impl": _IMPL, **_BUFFER, "text_length": Field(int, 0, MAX_SHARED)},
    "sealed": {"version": _VERSION, "cipher": _req(str, 1, MAX_NAME),
               "key": _req(bytes, 0, MAX_KEY), "encrypt": _req(bool),
               "context": _opt(bytes, 0, protocol.INLINE_MAX), "header": _opt(bytes, HEADER, HEADER),
               "device": _DEVICE},
    "batch": {"version": _VERSION, "cipher": _req(str, 1, MAX_NAME), "encrypt": _req(bool),
              "tag_length": _req(int, 0, 64), "impl": _IMPL, "device": _DEVICE,
              "m": _req(int, 0, (1 << 31) - 1), "n": _req(int, 0, MAX_SHARED),
              "keys": _req(int, 0, (1 << 31) - 1), "nonce_length": _req(int, 0, MAX_NONCE),
              "aad_length": _req(int, 0, MAX_SHARED), **_BUFFER},
}
#: the ops that run a job (a version, the user's job slots and memory)
JOBS = ("crypt", "stream", "aead", "batch", "sealed")


def check(msg: dict, fds, local: bool = True) -> str:
    """``msg`` against its op's table (with ``fds``, the descriptors beside it); its op.  An
    unknown op or a wrong version: ProtocolError (the connection is closed); any other field
    breaking its rule: InvalidArgument naming it."""
    op = msg.get("op")
    if not isinstance(op, str) or op not in SCHEMA:
        raise protocol.ProtocolError(f"op must be one of {', '.join(SCHEMA)}, not {_what(op)}")
    table = SCHEMA[op]
    if op in JOBS and not _VERSION.accepts(msg.get("version")):
        raise protocol.ProtocolError(f"{op}: version must be {_VERSION.rule()}, not "
                                     f"{_what(msg.get('version'))} (this service speaks "
                                     f"{protocol.VERSION})")
    for name in msg:
        if name != "op" and name not in table:
            shown = name if isinstance(name, str) else repr(name)
            raise InvalidArgument(f"{op}: unknown field {shown[:64]!r} (its fields: "
                                  f"{', '.join(table)})")
    for name, field in table.items():
        if name not in msg:
            if field.required:
                raise InvalidArgument(f"{op}: {name} is missing (it must be {field.rule(local)})")
            continue
        v = msg[name]
        if not field.accepts(v, local):
            raise InvalidArgument(f"{op}: {name} must be {field.rule(local)}, not {_what(v)}")
    _shape(op, msg, len(fds), local)
    return op


def _shape(op: str, msg: dict, nfds: int, local: bool) -> None:
    """The rules between fields: a buffer inline or in one memfd; a stream's or a sealed file's
    two descriptors (an opening's header)."""
    if op in ("hello", "status"):
        if nfds:
            raise InvalidArgument(f"{op}: carries no descriptors, not {nfds}")
        return
    if op in ("stream", "sealed"):
        if not local:
            raise InvalidArgument(f"{op}: files and pipes pass only over a local socket")
        if nfds != 2:
            raise InvalidArgument(f"{op}: carries two descriptors (input, output), not {nfds}")
        if op == "sealed" and (msg.get("header") is None) == (not msg["encrypt"]):
            raise InvalidArgument("sealed: header (the input's C2SP header, read by the client) "
                                  "comes with encrypt false (opening) only")
        return
    inline, shared = "data" in msg, "length" in msg
    if inline == shared:
        raise InvalidArgument(f"{op}: carries data (inline) or length (a memfd), "
                              f"not {'both' if inline else 'neither'}")
    if inline and (nfds or "arena" in msg or "text_length" in msg):
        raise InvalidArgument(f"{op}: data (inline) comes with no descriptor, arena or "
                              "text_length")
    if shared:
        if not local:
            raise InvalidArgument(f"{op}: length (a memfd) passes only over a local socket")
        if nfds != 1:
            raise InvalidArgument(f"{op}: length (a memfd) comes with one descriptor, not {nfds}")
        if op == "aead" and "text_length" not in msg:
            raise InvalidArgument("aead: text_length is missing (a memfd's text)")
        if op == "aead" and msg["text_length"] > msg["length"]:
            raise InvalidArgument(f"aead: text_length ({msg['text_length']}) must fit length "
                                  f"({msg['length']})")


def doc_table() -> list[str]:
    """The schema as docs/service.md's table (Markdown rows): each field's rule once, with the
    ops that take it under that rule."""
    rows: dict = {}
    for op, table in SCHEMA.items():
        for name, f in table.items():
            rule = f.rule() + (f" ({_n(f.bound(False))} remote)" if f.hi_remote is not None else "")
            rows.setdefault((name, rule, "yes" if f.required else ""), []).append(op)
    out = ["| field | ops | rule | required |", "|---|---|---|---|"]
    out += [f"| `{name}` | {', '.join(ops)} | {rule} | {req} |"
            for (name, rule, req), ops in rows.items()]
    return out
