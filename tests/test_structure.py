"""The shape of the package (DESIGN.md): no import cycle among its modules, modes compared by no
one but themselves, and no option passed through the environment by our own code."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ciphergrid"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (at module level or inside functions)."""
    graph = {m: set() for m in mods}
    for m, path in mods.items():
        pkg_parts = m.split(".") if path.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(pkg_parts[: len(pkg_parts) - node.level + 1]
                                    + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m:
                    graph[m].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
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

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    mods = _modules()
    graph = _imports(mods)
    assert graph["ciphergrid.api"], "the import graph came out empty: the checker is broken"
    assert _cycles(graph) == []


def test_modes_are_asked_not_compared():
    """Outside modes/ (and the independent oracle), nothing compares a mode's name."""
    names = "(ecb|cbc|ctr|xts|gcm)"
    pat = re.compile(rf"""mode(\.name)?\s*(==|!=)\s*["']{names}["']|mode(\.name)?\s+in\s+\(["']{names}["']""")
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("modes/", "testing/", "vectors")):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pat.search(line):
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert bad == []


def test_options_do_not_travel_through_the_environment():
    """Only the OpenCL loader's own variables are set (its ICD list, PoCL's affinity)."""
    bad = []
    for path in PKG.rglob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ\[[^]]+\]\s*=|os\.environ\.setdefault|os\.putenv", line):
                if "OCL_ICD_VENDORS" not in line and "POCL_" not in line:
                    bad.append(f"{path.relative_to(PKG)}:{i}: {line.strip()}")
    assert bad == []
