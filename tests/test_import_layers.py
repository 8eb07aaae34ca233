"""The house follows the pipeline (issue 25): nkirun's parts import one way,

    base -> hw -> limits -> ir -> views -> control -> isa -> source -> checker
         -> runner/schedule -> show
         -> pipeline -> api -> nkirun -> cli

and no modules import each other in a cycle. Every import counts, module-level or inside a
function (a lazy import is still a dependency), but those under `if TYPE_CHECKING:`
(annotations, never run). The few upward imports left are listed in
KNOWN_UPWARD with the reason each is still there; the test fails on any other, and on a
listed one that is gone (so the list only shrinks)."""
from __future__ import annotations

import ast

from repo_paths import ROOT

PACKAGE = ROOT / "nkirun"
LAYERS = [
    {"_startup", "diagnostics", "codes", "safeio", "gc_policy", "terminal", "speed", "records"},
    {"hw"},
    {"limits", "progress"},  # the instruction budget and the progress line of long passes
    {"ir"},
    {"views"},  # the IR's operand model: views as text, boxes and access patterns
    {"control"},  # the order a program's runtime loops run in: IR semantics
    {"isa"},
    {"source"},
    {"checker"},
    {"runner", "schedule"},
    {"show"},
    {"pipeline"},
    {"api", "api_kernel", "testing", "dropin", "sweep"},
    {"__init__"},  # `import nkirun`: the public functions
    {"cli", "entry", "__main__"},
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}

# (importer, imported): why it still runs upward. None is left: a new one needs its reason
# here (an instruction module asks its machine rather than importing the runner).
KNOWN_UPWARD: dict = {}


def _modules() -> dict[str, object]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = ["nkirun", *f.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path, known: set[str]) -> set[str]:
    """The nkirun modules `name` imports (absolute and relative, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def add(mod: str) -> None:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        if mod and mod != name:
            found.add(mod)
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:  # `from nkirun import api`: the module nkirun.api
                add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in found if m.startswith("nkirun")}


def _nodes(tree):
    """Every node but those under `if TYPE_CHECKING:` (annotations only: not run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) \
                    and child.test.id == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(m, f, set(mods)) for m, f in mods.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def test_every_part_has_a_layer():
    assert {_part(m) for m in _modules()} <= set(RANK)


# Cycles still there, each a set of modules: the test fails on any other, and when one
# is gone. None is left: the kernel front end's handle (tensor.py) is given its operators
# at set-up (tensor.provide) rather than importing the modules built on it.
KNOWN_CYCLES: list = []


def test_the_kernel_handle_is_given_every_operator():
    """tensor.py imports none of the modules built on it: they hand it ndarray's operators
    (tensor.provide); `nki.language` and a trace's session load them, so none is missing."""
    from nkirun.source.kernel import lang, session, tensor  # noqa: F401 (what loads them)
    hooks = [n for n in vars(tensor) if n.startswith("_") and n[1:] in _PROVIDED]
    assert sorted(hooks) == sorted("_" + n for n in _PROVIDED)
    assert [n for n in hooks if not callable(getattr(tensor, n))] == []


_PROVIDED = ("index_view", "view_method", "nkirun_dtype", "assign", "inplace", "block_buffer",
             "binary", "negative", "broadcast_to")


def test_no_import_cycle_but_the_known_ones():
    found = [set(c) for c in _cycles(_graph())]
    assert [c for c in found if c not in KNOWN_CYCLES] == [], "a new import cycle"
    assert [c for c in KNOWN_CYCLES if c not in found] == [], "gone: drop it"


def test_no_upward_import_but_the_known_ones():
    upward = {(m, i) for m, deps in _graph().items() for i in deps
              if RANK[_part(i)] > RANK[_part(m)]}
    assert upward - set(KNOWN_UPWARD) == set(), "a new upward import"
    assert set(KNOWN_UPWARD) - upward == set(), "gone: drop it from KNOWN_UPWARD"


def test_the_checker_finds_what_it_should(tmp_path):
    """The test's own machinery: a cycle and an upward import in a toy graph."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert RANK["cli"] > RANK["api"] > RANK["pipeline"] > RANK["show"] > RANK["source"]


def test_front_ends_stop_at_the_ir():
    """No module of source/ prints, writes files or reads command-line options (those are
    cli/'s and pipeline/'s); nl.device_print is the kernel's own output (to stderr, as
    NKI's simulator prints it)."""
    bad = []
    for f in (PACKAGE / "source").rglob("*.py"):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if any(n.split(".")[0] in ("click", "argparse") for n in names):
                    bad.append(f"{f.name}: imports {names}")
            elif isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr \
                    if isinstance(fn, ast.Attribute) else ""
                mode = node.args[1] if name == "open" and len(node.args) > 1 else None
                if name == "print" and f.name != "lang.py" or name in ("write_text",
                                                                       "write_bytes") \
                        or isinstance(mode, ast.Constant) and "w" in str(mode.value):
                    bad.append(f"{f.name}:{node.lineno}: {name}")
    assert bad == []
