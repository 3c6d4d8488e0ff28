"""Who may use the service, and how much (``ciphergrid serve --policy FILE``; docs/service.md).

A TOML file::

    [defaults]            # for every client the file allows (and the server's own user)
    weight = 1            # its share when clients compete for the devices
    max_jobs = 4          # jobs it may run at once (over all its connections)
    max_memory = "8Gi"    # the service's memory its running jobs may hold at once (default: no
                          # limit): its copies of AEAD messages, batch decryptions' outputs

    [[allow]]
    user = "alice"        # or uid = 1001
    weight = 2

    [[allow]]
    group = "crypto"      # or gid = 2000: the peer's primary group or a supplementary one

With no file only the server's own user is served (with the defaults).  The server's own user is
always served.  Credentials are the kernel's (SO_PEERCRED, SO_PEERGROUPS), not what a client says.
"""

from __future__ import annotations

import grp
import pwd
import socket
import struct
from dataclasses import dataclass

from ..errors import InvalidArgument

#: the defaults where neither the file nor an entry says
WEIGHT = 1.0
MAX_JOBS = 4
MAX_MEMORY = None   # (no limit)


@dataclass(frozen=True)
class Grant:
    """What one client may do."""

    weight: float = WEIGHT
    max_jobs: int = MAX_JOBS
    why: str = "the server's own user"
    max_memory: int | None = MAX_MEMORY


@dataclass(frozen=True)
class _Entry:
    uid: int | None
    gid: int | None
    weight: float
    max_jobs: int
    text: str
    max_memory: int | None


class Policy:
    """The rules of a policy file (or the default: the server's own user only)."""

    def __init__(self, own_uid: int, entries=(), defaults: Grant | None = None, source: str = ""):
        self.own_uid = own_uid
        self.entries = list(entries)
        self.defaults = defaults or Grant()
        self.source = source

    @classmethod
    def load(cls, path: str | None, own_uid: int) -> "Policy":
        if not path:
            return cls(own_uid)
        import tomllib

        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except OSError as e:
            raise InvalidArgument(f"cannot read the policy file {path}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise InvalidArgument(f"the policy file {path} is not TOML: {e}") from None
        except UnicodeDecodeError:
            raise InvalidArgument(f"the policy file {path} is not TOML: not UTF-8 text") from None
        d = doc.get("defaults", {})
        unknown = set(doc) - {"defaults", "allow"}
        if unknown:
            raise InvalidArgument(f"{path}: unknown tables {sorted(unknown)} (defaults, allow)")
        defaults = Grant(_number(d, "weight", WEIGHT, path), int(_number(d, "max_jobs", MAX_JOBS, path)),
                         "the policy's defaults", _memory(d, MAX_MEMORY, path))
        entries = []
        if not isinstance(doc.get("allow", []), list):
            raise InvalidArgument(f"{path}: allow is a list of tables ([[allow]])")
        for i, e in enumerate(doc.get("allow", [])):
            if not isinstance(e, dict):
                raise InvalidArgument(f"{path}: allow[{i}] must be a table")
            extra = set(e) - {"user", "uid", "group", "gid", "weight", "max_jobs", "max_memory"}
            if extra:
                raise InvalidArgument(f"{path}: allow[{i}] has unknown keys {sorted(extra)}")
            uid = _id(e, "user", "uid", pwd.getpwnam, "pw_uid", path, i)
            gid = _id(e, "group", "gid", grp.getgrnam, "gr_gid", path, i)
            if (uid is None) == (gid is None):
                raise InvalidArgument(f"{path}: allow[{i}] names one user (user/uid) or one group "
                                      "(group/gid)")
            text = (f"user {e.get('user', uid)}" if uid is not None else f"group {e.get('group', gid)}")
            entries.append(_Entry(uid, gid, _number(e, "weight", defaults.weight, path),
                                  int(_number(e, "max_jobs", defaults.max_jobs, path)), text,
                                  _memory(e, defaults.max_memory, path)))
        return cls(own_uid, entries, defaults, path)

    def grant(self, uid: int, gids) -> Grant | None:
        """What the client of user ``uid`` in groups ``gids`` may do; None: refused."""
        for e in self.entries:   # (a user's own entry before a group's)
            if e.uid is not None and e.uid == uid:
                return Grant(e.weight, e.max_jobs, f"{self.source}: {e.text}", e.max_memory)
        for e in self.entries:
            if e.gid is not None and e.gid in gids:
                return Grant(e.weight, e.max_jobs, f"{self.source}: {e.text}", e.max_memory)
        if uid == self.own_uid:
            return Grant(self.defaults.weight, self.defaults.max_jobs, "the server's own user",
                         self.defaults.max_memory)
        return None


def _number(d: dict, key: str, default, path: str):
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise InvalidArgument(f"{path}: {key} must be a positive number, not {v!r}")
    return v


def _memory(d: dict, default, path: str):
    """``max_memory``: bytes (a number, or a string such as "8Gi"), positive; absent: ``default``."""
    from ..settings import parse_bytes

    v = d.get("max_memory", default)
    if v is None:
        return None
    try:
        n = parse_bytes(v, "max_memory") if isinstance(v, str) else v
    except InvalidArgument:
        n = None
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise InvalidArgument(f"{path}: max_memory must be a positive byte count (e.g. 8Gi), "
                              f"not {v!r}")
    return n


def _id(e: dict, name_key: str, id_key: str, lookup, attr: str, path: str, i: int):
    if name_key in e and id_key in e:
        raise InvalidArgument(f"{path}: allow[{i}] gives both {name_key} and {id_key}")
    if id_key in e:
        v = e[id_key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidArgument(f"{path}: allow[{i}].{id_key} must be a number")
        return v
    if name_key in e:
        try:
            return getattr(lookup(str(e[name_key])), attr)
        except KeyError:
            raise InvalidArgument(f"{path}: allow[{i}]: no {name_key} {e[name_key]!r} on this "
                                  "machine") from None
    return None


def peer_groups(sock: socket.socket, primary: int) -> set:
    """The peer's groups: its primary one (SO_PEERCRED) and its supplementary ones
    (SO_PEERGROUPS, Linux 4.13+; where missing: the primary one only)."""
    out = {primary}
    opt = getattr(socket, "SO_PEERGROUPS", 59)
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, opt, 4 * 256)
        out.update(struct.unpack(f"{len(raw) // 4}I", raw[: len(raw) // 4 * 4]))
    except OSError:
        pass
    return out

