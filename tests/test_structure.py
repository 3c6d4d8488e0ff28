"""The shape of the package (DESIGN.md): modes compared by no one but themselves, and no option
passed through the environment by our own code (import cycles: test_imports.py)."""

from __future__ import annotations

import re
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ciphergrid"


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
    """Only the C libraries' own variables are set (the OpenCL loader's ICD list, PoCL's
    affinity, the command line's OpenBLAS thread count)."""
    bad = []
    for path in PKG.rglob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ\[[^]]+\]\s*=|os\.environ\.setdefault|os\.putenv", line):
                if ("OCL_ICD_VENDORS" not in line and "POCL_" not in line
                        and "OPENBLAS_NUM_THREADS" not in line):
                    bad.append(f"{path.relative_to(PKG)}:{i}: {line.strip()}")
    assert bad == []


def test_environment_is_read_in_settings_only():
    """Our own CIPHERGRID_* variables are read in settings.py alone (the OpenCL loader's own
    variables, and a passphrase the user names with --pass env:, are not options)."""
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel == "settings.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "os.environ" in line and "OCL_ICD_VENDORS" not in line and "POCL_" not in line:
                if rel == "keys.py":  # --pass env:VAR reads the variable the user named
                    continue
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert bad == []


TESTS = Path(__file__).resolve().parent

#: a numbered device spec: one machine's layout (opencl:0:0 is the wheel's PoCL on one machine,
#: the system's on another, absent on a third)
NUMBERED_SPEC = re.compile(r"\b(?:opencl|cuda):\d")

#: the tests that may name a numbered spec literally, as {(file, test): why}: only tests of the
#: spec language itself whose outcome cannot depend on the devices present (conftest.absent_spec
#: gives a spec that is certainly absent, so such a test rarely needs to be here)
SPEC_LITERALS_ALLOWED: dict[tuple[str, str], str] = {
    ("test_structure.py", "test_numbered_spec_literals_are_found"): "the check's own sample",
}


def numbered_spec_literals(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function or "", text) of every string constant of ``source`` (f-strings'
    literal parts included) that names a numbered device spec; docstrings, which show the
    language by example, are not looked at."""
    import ast

    found = []

    def visit(node, func):
        body = getattr(node, "body", None)
        doc = None
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                doc = body[0].value
            if not isinstance(node, (ast.Module, ast.ClassDef)):
                func = node.name
        for child in ast.iter_child_nodes(node):
            if child is doc or (isinstance(child, ast.Expr) and child.value is doc):
                continue
            if (isinstance(child, ast.Constant) and isinstance(child.value, str)
                    and NUMBERED_SPEC.search(child.value)):
                found.append((child.lineno, func, child.value))
            visit(child, func)

    visit(ast.parse(source), "")
    return sorted(found)


def test_numbered_spec_literals_are_found():
    """The check below sees a spec in a plain string, a command's argument list and an
    f-string's fixed part, and not in a docstring or a spec built from the devices present."""
    src = '''
def test_x(d):
    """Runs on opencl:0:0."""
    a = "opencl:0:0"
    b = ["--device", "cuda:0"]
    c = f"opencl:1:{d}"
    e = f"native,{d}"
    f = "opencl:" + d
'''
    assert [(line, func) for line, func, _ in numbered_spec_literals(src)] == [
        (4, "test_x"), (5, "test_x"), (6, "test_x")]


def test_tests_name_no_device_spec():
    """No test names a numbered device spec (``opencl:0:0``, ``cuda:0``): the devices a test runs
    on come from the conftest fixtures (``device``, ``gpu_device``, ``cpu_device``) or
    ``all_devices()``; a spec that must name no device (errors, fake devices and records) from
    ``absent_spec()``.  A machine whose PoCL is ``opencl:1:0`` (the wheel's PoCL refused by its CPU,
    the system's in its place) runs every test.  Role names (``native``, ``cpu``, ``gpu``,
    ``opencl``, ``cuda``, ``auto``, ``all``) resolve on any machine and are not counted."""
    bad = []
    for path in sorted(TESTS.glob("*.py")):
        for line, func, text in numbered_spec_literals(path.read_text()):
            if (path.name, func) not in SPEC_LITERALS_ALLOWED:
                bad.append(f"tests/{path.name}:{line}: {text!r}")
    assert bad == []



def imported_modules(source: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement of ``source``, the module at
    ``path`` in the package (in functions too): ``from .x import y`` as ``ciphergrid....x`` and
    ``...x.y`` (y may be a module), ``import a.b`` as ``a.b``."""
    import ast

    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    package = parts[:-1]          # (of __init__.py too: the package itself)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append((node.lineno, mod))
            found += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return found


#: (the packages whose modules are checked, the packages they may not import from)
LAYERS = [
    (("algorithms", "aeads"), ("engines", "backends", "transfer", "service")),
    (("engines",), ("testing", "bench")),
]


def layer_violations(source: str, path: Path, forbidden) -> list[str]:
    return [f"{path.relative_to(PKG).as_posix()}:{line}: {mod}"
            for line, mod in imported_modules(source, path)
            if any(mod == f"ciphergrid.{f}" or mod.startswith(f"ciphergrid.{f}.") for f in forbidden)]


def test_layer_check_sees_relative_and_deferred_imports():
    """The check below resolves relative imports at any depth and sees imports inside
    functions; absolute ones too; a name that merely starts like a package is not one."""
    src = ("from ..backends.base import X\n"
           "import ciphergrid.transfer.runs\n"
           "from ..enginesque import Y\n"
           "def f():\n    from ...bench import kernels\n    from ... import testing\n")
    engine = PKG / "engines" / "device_aead" / "sample.py"
    got = [v.split(": ")[1] for v in layer_violations(src, engine, ("backends", "transfer",
                                                                     "bench", "testing"))]
    assert got == ["ciphergrid.transfer.runs", "ciphergrid.bench", "ciphergrid.bench.kernels",
                   "ciphergrid.testing"]
    declaration = PKG / "aeads" / "sample.py"
    got = [v.split(": ")[1] for v in layer_violations(src, declaration, ("engines", "backends",
                                                                          "transfer"))]
    assert got == ["ciphergrid.backends.base", "ciphergrid.backends.base.X",
                   "ciphergrid.transfer.runs"]

def test_layers_import_downwards():
    """Declarations (algorithms/, aeads/) import no engine, backend, transfer or service code;
    engines import neither the testing oracle nor the benchmark (every import statement of a
    module, those inside functions included)."""
    bad = []
    for checked, forbidden in LAYERS:
        for top in checked:
            for path in sorted((PKG / top).rglob("*.py")):
                bad += layer_violations(path.read_text(), path, forbidden)
    assert bad == []


#: the most lines a module of the package may have: one a person can hold in their head
MODULE_LINES_MAX = 650

#: modules over MODULE_LINES_MAX for now, as {path under ciphergrid/: why}
LONG_MODULES_ALLOWED: dict[str, str] = {
    "service/server.py": "being split",
    "mpi.py": "being reworked (issue 47): to split",
    "algorithms/des.py": "to split (DES, its bitsliced layout and TDEA in one module)",
}


def test_modules_fit_in_a_head():
    """No module of the package is longer than MODULE_LINES_MAX lines, but those listed."""
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        n = len(path.read_text().splitlines())
        if n > MODULE_LINES_MAX and rel not in LONG_MODULES_ALLOWED:
            bad.append(f"{rel}: {n} lines")
    assert bad == []


#: what marks a comment or docstring line as history or a measurement, not a rule: a date, a
#: session, an issue number, a host's model or core count, a figure with a rate or time unit
#: (approximate, a range or compared), a ratio against another variant, "was N", "no longer"
_NUM = r"\d+(?:\.\d+)?"
_TIME = r"(?:ms|us|µs|ns|s)\b"
HISTORY_MARKERS = {
    "date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "session": re.compile(r"\bsession\s+\d", re.I),
    "issue": re.compile(r"\bissue\s+#?\d|\(issues?\s+\W", re.I),
    "measured": re.compile(r"\bmeasured\s+(?:on\s+\d|at\s+\d|\d|faster|slower|the same|no different)"
                           r"|\bby measurement\b", re.I),
    "rate": re.compile(rf"{_NUM}\s*(?:[GMK]i?B|Gbit|Gb)/s\b"),
    "time": re.compile(rf"(?:~|\babout\s+|\bcosts?\s+~?|\btook\s+~?|\bran\s+){_NUM}\s*{_TIME}"
                       rf"|{_NUM}\s*-\s*{_NUM}\s*{_TIME}|{_NUM}\s*{_TIME}\s+(?:against|vs\b|of a )"
                       rf"|\(~?{_NUM}\s*{_TIME}\s*:"),
    "host": re.compile(r"\b(?:H100|H200|A100|V100|EPYC|Xeon|Ryzen|Threadripper|Zen\s*\d\s+core"
                       r"|\d+-core\s+(?:machine|VM|host)|(?:on|with)\s+\d+\s+cores)\b"),
    "compared": re.compile(rf"\b{_NUM}\s+(?:against|vs\.?)\s+{_NUM}|\b{_NUM}x\s+\w"
                           rf"|\b{_NUM}\s*x\s+(?:faster|slower)\b|{_NUM}\s*%\s*(?:faster|slower)"
                           rf"|\s[+-]{_NUM}\s*%|\b{_NUM}\s*-\s*{_NUM}\s*%|\b(?:two|three|four)fold\b", re.I),
    "was": re.compile(r"\bbefore:\s*[~\d]|\b(?:was|were)\s+~?\d|\bused to be\b|\bpreviously\b|\bformerly\b"
                      r"|\bno longer\b|\buntil now\b", re.I),
}

#: lines of the package that match a marker and are rules all the same, as {(path, text): why}
HISTORY_ALLOWED: dict[tuple[str, str], str] = {
    ("algorithms/des.py", "2024-01-01"): "the day a standard was withdrawn: the policy's source",
}


def comment_and_docstring_lines(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment (tokenize) and every line of a module's, class's or
    function's docstring (ast) of ``source``; ````literal```` spans (examples of output) left out."""
    import ast
    import io
    import tokenize

    found = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                found += [(body[0].lineno + i, text)
                          for i, text in enumerate(body[0].value.value.splitlines())]
    return sorted((line, re.sub(r"``.*?``", "", text)) for line, text in found)


def history_lines(source: str, rel: str) -> list[str]:
    bad = []
    for line, text in comment_and_docstring_lines(source):
        if any(pat in text for (path, pat) in HISTORY_ALLOWED if path == rel):
            continue
        for name, marker in HISTORY_MARKERS.items():
            if marker.search(text):
                bad.append(f"{rel}:{line}: [{name}] {text.strip()}")
                break
    return bad


def test_history_markers_are_found():
    """The check below sees dates, sessions, hosts, figures and "was" in comments and docstrings,
    and passes rules that name a unit or a bound, and code that is neither."""
    src = '''
"""Seals files.  Measured 0.38 s on the 2-core machine (session 12)."""
X = "2026-11-24 4.9 GB/s"   # bytes per call; at most 10 s
def f():
    """The key schedule (about 3 us for AES-128)."""
    # 64 MiB pieces: 4.9 GB/s against 3.2 (H100 host); was 16 MiB before
    # a page is 4096 bytes; 90% of the plateau; keys are wiped at once
    # on PoCL direct is 4x staged (issue "speed"); 2026-11-25
    return 0
'''
    got = [v.split(": ")[1].split("]")[0] + "]" for v in history_lines(src, "x.py")]
    assert got == ["[session]", "[time]", "[rate]", "[date]"]
    for text in ("# 16 MiB pieces were 1.7x cat", "# was 16 MiB", "# ~4 ms on a Zen 5 core",
                 "# the fastest on the H200", "# 0.14 vs 0.21 (4 KiB)", "# by measurement",
                 "# the goal (issue \"one job\")", "# as in issue 47",
                 "# without importing it (0.26 s: it pulls in SciPy)"):
        assert len(history_lines(text + "\n", "x.py")) == 1, text
    assert history_lines('# NIST withdrew it on 2024-01-01\n', "algorithms/des.py") == []


def test_comments_state_rules_not_history():
    """Comments and docstrings of the package say what the code guarantees and why, in the
    present tense: no dates, sessions, hosts or measured figures (those belong in
    docs/benchmarks.md, to which a comment points: "(docs/benchmarks.md, 'Files')")."""
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        bad += history_lines(path.read_text(), path.relative_to(PKG).as_posix())
    assert bad == []


ARCHITECTURE = PKG.parent / "docs" / "architecture.md"
#: the most lines docs/architecture.md may have: a map, not a history
ARCHITECTURE_LINES_MAX = 150


def test_architecture_is_a_map_of_every_module():
    """docs/architecture.md fits in ARCHITECTURE_LINES_MAX lines and names every module of the
    package: by its file name (``jobs.py``), or, for a package's ``__init__.py``, by its package
    (``transfer/``)."""
    text = ARCHITECTURE.read_text()
    assert len(text.splitlines()) <= ARCHITECTURE_LINES_MAX
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if path.name == "__init__.py" and rel.parent.parts:
            named = f"{rel.parent.as_posix()}/" in text or f"{rel.parent.name}/" in text
        else:
            named = re.search(rf"(?<![\w.]){re.escape(path.name)}\b", text) is not None
        if not named:
            missing.append(rel.as_posix())
    assert missing == []
