#!/usr/bin/env python3
"""Import cycles in ciphergrid: none allowed.

    python3 scripts/dev/import_check.py [--static-only]

Two checks:

* static: every ``import`` statement of every module under ciphergrid/ (module level and inside
  functions: a deferred import is still a dependency) makes a graph of ciphergrid modules; its
  strongly connected components of more than one module are the cycles;
* dynamic: each module is imported first, in an interpreter with no ciphergrid module loaded
  (every one removed from sys.modules before the next), with ``__import__`` watched: an import
  that reaches a ciphergrid module still being initialised (other than the importer's own
  packages) is a cycle taken at import time; after each import no ciphergrid module may be left
  partially initialised.

Prints the cycles found and exits 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PKG = "ciphergrid"


def modules(root: str = ROOT) -> dict[str, str]:
    """Module name -> file, for every .py under ciphergrid/."""
    out = {}
    base = os.path.join(root, PKG)
    for d, dirs, files in os.walk(base):
        dirs[:] = [x for x in dirs if not x.startswith((".", "__pycache__"))]
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(d, f)
    return out


def _package(name: str, path: str) -> str:
    return name if path.endswith("__init__.py") else name.rpartition(".")[0]


def imports_of(name: str, path: str, known) -> set[str]:
    """The ciphergrid modules ``name`` imports (anywhere in its file)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    pkg = _package(name, path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == PKG:
                    found.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.split(".")[0] != PKG:
                continue
            for a in node.names:  # `from . import x`: x may be a module
                sub = f"{mod}.{a.name}"
                found.add(sub if sub in known else mod)
    # importing a module runs its packages' __init__ first: those edges are not cycles
    return {m for m in found if m in known and m != name and not name.startswith(m + ".")}


def static_cycles(root: str = ROOT) -> list[list[str]]:
    mods = modules(root)
    graph = {m: sorted(imports_of(m, p, mods)) for m, p in mods.items()}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def dynamic_problems(names) -> list[str]:
    """Import each module with no ciphergrid module loaded; report import-time cycles and modules
    left partially initialised (modules whose dependencies are missing are skipped)."""
    problems = []
    real = builtins.__import__
    current: list[str] = []

    def initialising(mod) -> bool:
        return bool(getattr(getattr(mod, "__spec__", None), "_initializing", False))

    def watch(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__", "")
        if importer.split(".")[0] == PKG:
            if level:
                pkg = (globals or {}).get("__package__") or importer.rpartition(".")[0]
                parts = pkg.split(".")
                target = ".".join(parts[: len(parts) - level + 1])
                target = f"{target}.{name}" if name else target
            else:
                target = name
            targets = [target] + [f"{target}.{f}" for f in (fromlist or ()) if f != "*"]
            for t in targets:
                mod = sys.modules.get(t)
                if (mod is not None and initialising(mod) and t != importer
                        and not importer.startswith(t + ".")):
                    problems.append(f"{current[0]}: {importer} imports {t} while {t} is "
                                    "still initialising (an import cycle)")
        return real(name, globals, locals, fromlist, level)

    builtins.__import__ = watch
    try:
        for name in names:
            for m in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
                del sys.modules[m]
            current[:] = [name]
            try:
                importlib.import_module(name)
            except ImportError as e:
                if (e.name or "").split(".")[0] == PKG:
                    problems.append(f"{name}: {e}")
                continue  # an optional dependency (cupy, pynvml...) missing here
            half = [m for m, mod in sys.modules.items()
                    if (m == PKG or m.startswith(PKG + ".")) and initialising(mod)]
            if half:
                problems.append(f"{name}: left partially initialised: {', '.join(sorted(half))}")
    finally:
        builtins.__import__ = real
    return sorted(set(problems))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--static-only", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(ROOT))
    bad = 0
    for comp in static_cycles():
        print("static cycle:", " <-> ".join(comp))
        bad += 1
    if not a.static_only:
        names = sorted(m for m in modules() if not m.endswith(".__main__"))  # (runs the CLI)
        for p in dynamic_problems(names):
            print("import-time:", p)
            bad += 1
    if not bad:
        print(f"no import cycles among {len(modules())} modules")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
