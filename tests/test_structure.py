"""The shape of the package (DESIGN.md): modes compared by no one but themselves, and no option
passed through the environment by our own code (import cycles: test_imports.py)."""

from __future__ import annotations

import ast
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
LONG_MODULES_ALLOWED: dict[str, str] = {}


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


# ------------------------------------------------------------------ process-wide state (one runtime)
#: calls whose result is a mutable container or a per-thread holder
STATE_CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter",
                    "local", "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "bytearray"}
#: what makes a class's instances keep state (a module-level instance of it is state)
STATE_HOLDERS = STATE_CONTAINERS | {"Lock", "RLock", "Condition", "Event", "Semaphore",
                                    "BoundedSemaphore", "ThreadPoolExecutor"}
STATE_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem",
                  "clear", "remove", "discard", "move_to_end", "appendleft", "__setitem__"}


def _called(node) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _made_mutable(value, calls=STATE_CONTAINERS) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _called(value) in calls


def _owner_key(node) -> str | None:
    """'NAME' or 'Class.attr' for the object a store or a call goes to."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _keeps_state(cls) -> bool:
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                   and t.value.id == "self" for t in targets) and _made_mutable(node.value, STATE_HOLDERS):
                return True
    return False


def stateful_classes(sources) -> set[str]:
    """The names of the classes of ``sources`` whose instances keep state (locks, containers):
    those every class of that name keeps (a name two classes share, one without state, is
    judged by the module's own class only)."""
    keeps: dict[str, bool] = {}
    for source in sources:
        for n in ast.walk(ast.parse(source)):
            if isinstance(n, ast.ClassDef):
                keeps[n.name] = keeps.get(n.name, True) and _keeps_state(n)
    return {name for name, k in keeps.items() if k}


def state_sites(source: str, stateful: set[str] = frozenset()) -> dict[str, int]:
    """{site: line} of a module's process-wide state: ``global NAME`` statements; module-level
    mutable containers that a function mutates, and module-level ``threading.local()``
    (``NAME``); class attributes rebound or mutated by a function (``Class.attr``); module-level
    instances of classes that keep state (the module's, or those named in ``stateful``: ``NAME``);
    ``functools.lru_cache``/``cache`` (``@cache NAME``).  A table the module's own top-level
    statements fill is a constant."""
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    containers: dict[str, int] = {}
    sites: dict[str, int] = {}
    for n in tree.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if not isinstance(t, ast.Name):
                    continue
                if _made_mutable(n.value):
                    containers[t.id] = n.lineno
                    if isinstance(n.value, ast.Call) and _called(n.value) == "local":
                        sites[t.id] = n.lineno
                elif isinstance(n.value, ast.Call) and (
                        _called(n.value) in stateful or _called(n.value) in classes
                        and _keeps_state(classes[_called(n.value)])):
                    sites[t.id] = n.lineno
    for name, cls in classes.items():
        for m in cls.body:
            if isinstance(m, (ast.Assign, ast.AnnAssign)) and m.value is not None:
                for t in m.targets if isinstance(m, ast.Assign) else [m.target]:
                    if isinstance(t, ast.Name) and _made_mutable(m.value):
                        containers[f"{name}.{t.id}"] = m.lineno
    functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for f in functions:
        for d in f.decorator_list:
            d = d.func if isinstance(d, ast.Call) else d
            if (d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", None)) in ("lru_cache", "cache"):
                sites.setdefault(f"@cache {f.name}", f.lineno)
    for node in (n for f in functions for n in ast.walk(f)):
        if isinstance(node, ast.Global):
            for name in node.names:
                sites.setdefault(f"global {name}", node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in STATE_MUTATORS and _owner_key(node.func.value) in containers):
            k = _owner_key(node.func.value)
            sites.setdefault(k, containers[k])
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, (ast.Subscript, ast.Attribute)):
                        k = _owner_key(sub.value)
                        if k in containers:
                            sites.setdefault(k, containers[k])
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id in classes):
                    sites.setdefault(f"{t.value.id}.{t.attr}", node.lineno)
    return sites


#: what state the package keeps outside a Runtime (DESIGN.md, "One runtime"), as {"path under
#: ciphergrid/:site": why}.  Caches of pure functions (tables computed once from constants, the
#: package's own files, the loaded libraries, the machine) and the catalogues of what exists
#: (ciphers, engine kinds, suites) are fine; everything that runs requests belongs to the runtime.
STATE_ALLOWED: dict[str, str] = {
    "runtime.py:_default": "the library's default runtime: the root the rest hangs off",
    "registry.py:_SPECS": "the catalogue of cipher names, both kinds (register() adds)",
    "registry.py:_modules_seen": "the algorithms/ and aeads/ modules and packages registered",
    "registry.py:_KINDS": "the catalogue of engine kinds (register_engine_kind adds)",
    "bench/suites.py:_SUITES": "the catalogue of benchmark suites",
    "bench/suites.py:_import_errors": "the suites whose modules could not be imported, for the catalogue",
    "bench/suites.py:global _loaded": "the suites' catalogue filled once",
    "algorithms/des.py:@cache _plan": "pure: the key schedule's bit plan per key length and layout",
    "algorithms/des.py:@cache _policy": "pure: the use policy per kind of key bundle (no key)",
    "algorithms/base.py:@cache _birthday_policy": "pure: a 64-bit block cipher's use policy",
    "modes/gf128.py:@cache pow_table": "pure: powers of x in GF(2^128)",
    "modes/xts.py:@cache _layout": "pure: an immutable XTS layout per message shape",
    "modes/xts.py:@cache _seg_args": "pure: a kernel's scalar arguments per shape",
    "modes/xts.py:@cache _unit_args": "pure: a kernel's scalar arguments per shape",
    "backends/base.py:@cache kernel_text": "pure: the text of the package's kernel files",
    "vectors/__init__.py:@cache _read": "pure: the package's vector files (both kinds), parsed",
    "vectors/__init__.py:@cache _all": "pure: the package's vectors of a kind (block, AEAD)",
    "vectors/__init__.py:@cache _all_mct": "pure: the package's Monte Carlo vectors, by cipher",
    "route.py:@cache _cpu_flags": "pure: the CPU's instruction flags (/proc/cpuinfo)",
    "algorithms/aes.py:_OPENSSL_SCHEDULE": "the loaded libcrypto's AES key schedule, checked once",
    "algorithms/seed.py:_NATIVE": "the loaded libcrypto's SEED key schedule, checked once",
    "algorithms/cast5.py:_NATIVE": "the loaded libcrypto's CAST5 key schedule, checked once",
    "algorithms/camellia.py:_NATIVE": "the loaded libcrypto's Camellia key schedule, checked once",
    "engines/openssl/libcrypto.py:_CIPHERS": "the loaded libcrypto's EVP cipher handles by name",
    "engines/openssl/libcrypto.py:_PROVIDERS": "the OpenSSL providers loaded into the process",
    "engines/openssl/libcrypto.py:global _LOOP": "the C helper loop, a shared library loaded once",
    "engines/openssl/aead.py:global _FNS": "the loaded libcrypto's function addresses",
    "_libcrypto.py:global _PYCA_NEWER": "pure: the two loaded OpenSSL releases compared",
    "backends/cuda.py:global _cp": "CuPy, imported at first use",
    "backends/opencl.py:global _cl": "PyOpenCL, imported at first use",
    "backends/icd.py:global _done": "the OpenCL loader's driver list, set once in the environment",
    "bench/energy.py:global _nvml": "NVML, initialised once per process",
    "bench/energy.py:global _nvml_error": "why NVML could not be initialised",
    "service/listener.py:global _MALLOC_TRIM": "glibc's malloc_trim, looked up once",
    "bench/preflight.py:_RATE": "the host's speed for the benchmark's time estimates, once",
    "interrupts.py:_state": "signals are the process's: one handler state per process",
}


def test_state_sites_are_found():
    """The scan below sees globals, mutated module-level containers, thread-locals, class
    attributes rebound, state-keeping singletons and lru_caches; constant tables and stateless
    instances pass."""
    src = '''
import functools, threading
TABLE = {"a": 1}
TABLE["b"] = 2                      # (filled at import: a constant)
CACHE = {}
POOL = []
LOCAL = threading.local()
class Pool:
    size = 0
    def __init__(self):
        self.lock = threading.Lock()
class Plain:
    pass
THE_POOL = Pool()
PLAIN = Plain()
OTHER = Imported()
_n = 0
def f(k):
    global _n
    CACHE[k] = TABLE[k]
    POOL.append(k)
    Pool.size = 1
@functools.lru_cache(maxsize=None)
def g(x):
    return x
'''
    assert sorted(state_sites(src)) == ["@cache g", "CACHE", "LOCAL", "POOL", "Pool.size",
                                        "THE_POOL", "global _n"]
    assert "OTHER" in state_sites(src, {"Imported"}) and stateful_classes([src]) == {"Pool"}


def test_state_lives_in_the_runtime():
    """Outside the Runtime the package keeps only what STATE_ALLOWED lists, each with why; an
    entry no longer found is taken off the list."""
    sources = {path.relative_to(PKG).as_posix(): path.read_text() for path in sorted(PKG.rglob("*.py"))}
    stateful = stateful_classes(sources.values())
    found = {f"{rel}:{site}" for rel, source in sources.items() for site in state_sites(source, stateful)}
    assert sorted(found - set(STATE_ALLOWED)) == []
    assert sorted(set(STATE_ALLOWED) - found) == []


#: the modules that reach a service only through the remote engine (engines/remote.py, which
#: route plans on): they import nothing of ciphergrid.service
THROUGH_THE_REMOTE_ENGINE = ("front.py", "cli/crypt.py", "cli/aead.py")


def test_the_service_is_reached_through_the_remote_engine():
    """front.py and the command line's encrypt/decrypt neither call the service's client nor
    decide on a service themselves: route's plan runs on the remote engine."""
    bad = []
    for rel in THROUGH_THE_REMOTE_ENGINE:
        path = PKG / rel
        bad += layer_violations(path.read_text(), path, ("service",))
    assert bad == []
    src = "def f():\n    from ..service import connect\n"
    assert layer_violations(src, PKG / "cli" / "crypt.py", ("service",)) == [
        "cli/crypt.py:2: ciphergrid.service", "cli/crypt.py:2: ciphergrid.service.connect"]
