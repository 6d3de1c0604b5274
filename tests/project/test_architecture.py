"""The architecture as tests: layers point one way, no import cycles, no imports hidden in
functions to dodge one, and the generated kernel module is the only compiled code."""

import ast
import importlib
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2] / "tapegrad"


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


def _jit_decorated(tree, names=("njit", "jit", "vectorize")):
    for node in ast.walk(tree):
        for d in getattr(node, "decorator_list", ()):
            f = d.func if isinstance(d, ast.Call) else d
            if getattr(f, "id", getattr(f, "attr", "")) in names:
                yield node.name


def test_compiled_code_lives_in_the_generated_module_only():
    jitted = [
        f"{path.relative_to(PKG.parent)}:{fn}"
        for name, path, tree in _modules()
        if name != "tapegrad.kernels.sweeps"
        for fn in _jit_decorated(tree)
    ]
    assert not jitted, f"@njit outside tapegrad/kernels/sweeps.py: {jitted}"
    # the generated module notes its kernels (@_kernel), made dispatchers on first use
    kernels = ("_kernel", "_kernel_parallel")
    sweeps = ast.parse((PKG / "kernels" / "sweeps.py").read_text())
    assert len(list(_jit_decorated(sweeps, kernels))) > 50


def test_kernels_pass_each_other_no_literal_int_or_bool():
    """A literal int or bool in a call from one kernel to another (``f(x, 0, True)``) makes
    Numba compile the callee again for those literal types, beside the plain int64 / bool
    that calls from Python compile: a second copy of a whole sweep.  Kernels pass the typed
    constants ZERO, ONE, TRUE, FALSE instead."""
    sweeps = ast.parse((PKG / "kernels" / "sweeps.py").read_text())
    names = set(_jit_decorated(sweeps, ("_kernel", "_kernel_parallel")))
    kernels = [n for n in ast.walk(sweeps) if isinstance(n, ast.FunctionDef) and n.name in names]

    def is_literal(arg):
        if isinstance(arg, ast.UnaryOp):  # -1
            arg = arg.operand
        return isinstance(arg, ast.Constant) and type(arg.value) in (int, bool)

    calls = [
        f"{fn.name}: {ast.unparse(call)}"
        for fn in kernels
        for call in ast.walk(fn)
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) in names
        if any(is_literal(arg) for arg in call.args)
    ]
    assert not calls, "\n".join(calls[:10])


def test_import_linter_contracts_hold():
    import importlinter.cli as cli  # in the dev extra; a missing tool fails, never skips

    assert cli.lint_imports(config_filename=str(PKG.parent / "pyproject.toml")) == 0


def test_no_class_is_patched_from_outside_its_body():
    """Methods live in class bodies (mixins included): no ``Cls.attr = ...`` or
    ``setattr(Cls, ...)`` on a tapegrad class anywhere, so what a class can do is what its
    definition and its bases say."""
    trees = list(_modules())
    classes = {
        n.name for _, _, tree in trees for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
    }
    patched = []
    for _, path, tree in trees:
        aliases = classes | {  # M = Tensor; M.method = ...
            t.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and getattr(n.value, "id", None) in classes
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
                targets = [ast.Attribute(value=node.args[0], attr="?")] if node.args else []
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id in aliases
                ):
                    patched.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {t.value.id}")
    assert not patched, f"classes patched from outside their bodies: {patched}"


def test_tensor_is_assembled_from_mixins_and_registered():
    """The public class is the one the lower layers make handles of, and every method it has
    comes from its own bases."""
    import tapegrad as tg
    from tapegrad.core.tensor import TensorBase

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    made = [
        x * 2.0,
        tg.sin(x),
        x.sum(),
        tg.zeros(2),
        x.detach(),
        (x * 1.0).clone(),
        x.astype("float64"),
    ]
    assert all(type(t) is tg.Tensor for t in made)
    assert issubclass(tg.Tensor, TensorBase)
    for name in ("backward", "grad_fn", "register_hook", "__array_ufunc__", "sum", "to_dot"):
        owner = next(c for c in tg.Tensor.__mro__ if name in vars(c))
        assert owner is not tg.Tensor and owner.__module__.startswith("tapegrad.")
    assert {x: 1}[x] == 1  # hashable by identity though __eq__ is elementwise


def test_dir_of_the_package_is_the_public_api():
    import tapegrad as tg

    assert sorted(dir(tg)) == sorted(tg.__all__)
    assert not [n for n in dir(tg) if n.startswith("_")]
    assert "core" not in dir(tg) and tg.core is not None  # internals stay importable


@pytest.mark.parametrize("name", ["stats", "special", "linalg", "signal", "integrate"])
def test_dir_of_a_scipy_module_is_its_public_names(name):
    # not the helpers it imports (np, math, Tensor, ...), which tab completion would offer
    pytest.importorskip("scipy")
    mod = importlib.import_module(f"tapegrad.scipy.{name}")
    assert sorted(dir(mod)) == sorted(mod.__all__)
    assert not [n for n in mod.__all__ if type(getattr(mod, n)).__name__ == "module"]
