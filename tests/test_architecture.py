"""The package's import graph: layers import only downwards, no cycles, no experiments."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Each layer may import itself and the layers listed after it.
ALLOWED = {
    "base": {"base"},
    "result": {"result", "base"},
    "utility": {"utility", "result", "base"},
    "methods": {"methods", "utility", "result", "base"},
    "cut": {"cut", "utility", "result", "base"},
    "cleansing": {"cleansing", "cut", "utility", "result", "base"},
    "torch": {"torch", "utility", "result", "base"},
    "app": {"app", "methods", "cleansing", "cut", "utility", "result", "base"},
    "root": {"root", "app", "methods", "cleansing", "cut", "torch", "utility", "result",
             "base"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    head = parts[1]
    if head in ("_io", "_validation", "intervals", "cross_fit"):
        return "base"
    return head if head in ALLOWED else "root"


def _imports(path: Path, known: set[str]) -> set[str]:
    """Every tdshap module ``path`` imports, lazy imports inside functions included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found.update(n for n in names if n in known or n.split(".")[0] == "experiments")
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(path, set(mods)) for name, path in mods.items()}


def test_no_module_imports_a_higher_layer_or_the_experiments() -> None:
    bad = []
    for module, deps in _graph().items():
        for dep in deps:
            if dep.split(".")[0] == "experiments":
                bad.append(f"{module} -> {dep}")
            elif _layer(dep) not in ALLOWED[_layer(module)]:
                bad.append(f"{module} ({_layer(module)}) -> {dep} ({_layer(dep)})")
    assert not bad, "imports against the layers:\n" + "\n".join(sorted(bad))


def test_import_graph_has_no_cycle() -> None:
    graph = _graph()
    # a package's __init__ re-exporting its own submodules is not a cycle of logic
    edges = {m: {d for d in deps if not m or not d.startswith(m + ".")}
             for m, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in edges.get(node, ()):
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep):], dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_the_layer_check_catches_an_upward_import() -> None:
    assert _layer("tdshap.utility.base") == "utility"
    assert "app" not in ALLOWED[_layer("tdshap.methods.tdshap")]
