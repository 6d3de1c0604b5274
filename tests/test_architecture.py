"""The architecture as tests: layers point one way, no import cycles, no imports hidden in
functions to dodge one, and the generated kernel module is the only compiled code."""

import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "tapegrad"


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        yield name, path, ast.parse(path.read_text())


def _resolve(module, node):
    """The absolute tapegrad module an ImportFrom / Import names (None if outside)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("tapegrad")]
    if node.level == 0:
        return [node.module] if (node.module or "").startswith("tapegrad") else []
    base = module.split(".")
    is_pkg = (PKG.parent / pathlib.Path(*base) / "__init__.py").exists()
    parts = base if is_pkg else base[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    target = ".".join(parts + ([node.module] if node.module else []))
    if node.module:
        return [target]
    return [f"{target}.{a.name}" for a in node.names]


def _module_level_imports(tree):
    """Imports executed when the module is imported (not inside functions or classes)."""
    out = []
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try)):
            todo += (
                node.body
                + node.orelse
                + getattr(node, "finalbody", [])
                + [s for h in getattr(node, "handlers", []) for s in h.body]
            )
    return out


def test_no_tapegrad_import_inside_functions():
    hidden = []
    for name, path, tree in _modules():
        top = set(map(id, _module_level_imports(tree)))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                if _resolve(name, node):
                    hidden.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert not hidden, f"imports hidden inside functions (dodging a cycle?): {hidden}"


def test_no_import_cycles():
    known = {name for name, _, _ in _modules()}
    graph = {}
    for name, _, tree in _modules():
        deps = set()
        for node in _module_level_imports(tree):
            for target in _resolve(name, node):
                while target and target not in known:  # `from pkg import module`
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    deps.add(target)
        graph[name] = deps
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                cycle = stack[stack.index(m) :] + [m]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def _jit_decorated(tree):
    for node in ast.walk(tree):
        for d in getattr(node, "decorator_list", ()):
            f = d.func if isinstance(d, ast.Call) else d
            if getattr(f, "id", getattr(f, "attr", "")) in ("njit", "jit", "vectorize"):
                yield node.name


def test_compiled_code_lives_in_the_generated_module_only():
    jitted = [
        f"{path.relative_to(PKG.parent)}:{fn}"
        for name, path, tree in _modules()
        if name != "tapegrad.kernels.sweeps"
        for fn in _jit_decorated(tree)
    ]
    assert not jitted, f"@njit outside tapegrad/kernels/sweeps.py: {jitted}"
    assert list(_jit_decorated(ast.parse((PKG / "kernels" / "sweeps.py").read_text())))


def test_import_linter_contracts_hold():
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is in the dev extra")
    assert cli.lint_imports(config_filename=str(PKG.parent / "pyproject.toml")) == 0
