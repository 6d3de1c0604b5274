"""Griffe extension of the API reference (``extensions:`` in mkdocs.yml).

Griffe reads tapegrad's source without importing it, so a name bound by assignment
(``exp = O.exp`` in Tensor's method mixins, ``relu = _ops.relu`` in ``tg.nn.functional``,
the ops made by factories, ``norm = _Norm()`` in ``tapegrad.scipy.stats``) is to it an
attribute without a docstring, and the reference would skip it.  This extension imports the
package once it is loaded and describes each such public attribute as what it is at run time:
a function (with its signature and docstring), a property, or an object whose class's
docstring and public methods are listed.  A method added to Tensor this way therefore shows
up in the reference without editing the docs.
"""

from __future__ import annotations

import importlib
import inspect

import griffe

KINDS = {kind.value: kind for kind in griffe.ParameterKind}
SELF_KINDS = (griffe.ParameterKind.positional_only, griffe.ParameterKind.positional_or_keyword)


def _parameters(obj) -> griffe.Parameters | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return griffe.Parameters(
        *(
            griffe.Parameter(
                p.name,
                kind=KINDS[p.kind.description],
                default=None if p.default is inspect.Parameter.empty else repr(p.default),
            )
            for p in signature.parameters.values()
        )
    )


def _docstring(text, parent):
    return griffe.Docstring(text, parent=parent, parser=griffe.Parser.google) if text else None


def _function(name, obj, parent, *, method):
    """A griffe function from a runtime callable; a method's first parameter shown as self."""
    params = _parameters(obj)
    if params is None:
        params = griffe.Parameters(
            griffe.Parameter("args", kind=griffe.ParameterKind.var_positional),
            griffe.Parameter("kwargs", kind=griffe.ParameterKind.var_keyword),
        )
    elif method:
        first = next(iter(params), None)
        if first is not None and first.kind in SELF_KINDS:  # the Tensor the method is bound to
            params = griffe.Parameters(griffe.Parameter("self"), *list(params)[1:])
    function = griffe.Function(name, parameters=params, parent=parent)
    function.docstring = _docstring(inspect.getdoc(obj), function)
    return function


def _object_doc(name, obj) -> str:
    """The class docstring of an instance (a distribution) and its public methods."""
    cls = type(obj)
    lines = [inspect.getdoc(cls) or ""]
    methods = [n for n in dir(cls) if not n.startswith("_") and callable(getattr(obj, n))]
    if methods:
        lines += ["", f"**Methods of `{name}`**", ""]
        for method in methods:
            doc = inspect.getdoc(getattr(cls, method)) or ""
            summary = f": {doc.splitlines()[0]}" if doc else ""
            lines.append(f"- `{method}{_signature_text(getattr(obj, method))}`{summary}")
    return "\n".join(lines).strip()


def _signature_text(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _runtime_member(name, value, parent, *, in_class):
    """The griffe object describing ``value`` (a runtime attribute), or None to keep griffe's."""
    if isinstance(value, property):
        attribute = griffe.Attribute(name, parent=parent)
        attribute.labels |= {"property"}
        attribute.docstring = _docstring(inspect.getdoc(value.fget), attribute)
        return attribute
    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value):
        return _function(name, value, parent, method=in_class)
    if inspect.isclass(value) or inspect.ismodule(value):
        return None
    if type(value).__module__.startswith("tapegrad."):  # an object such as a distribution
        attribute = griffe.Attribute(name, parent=parent)
        attribute.docstring = _docstring(_object_doc(name, value), attribute)
        return attribute
    return _function(name, value, parent, method=False) if callable(value) else None


def _described_at_runtime(obj: griffe.Object, runtime) -> None:
    if obj.is_class:  # names griffe does not see at all (``exp, log = O.exp, O.log``)
        for name, value in vars(runtime).items():
            if not name.startswith("_") and name not in obj.members:
                member = _runtime_member(name, value, obj, in_class=True)
                if member is not None:
                    obj.set_member(name, member)
    for name, member in list(obj.members.items()):
        if name.startswith("_") or member.is_alias:
            continue
        if member.is_class:
            value = getattr(runtime, name, None)
            if inspect.isclass(value):
                _described_at_runtime(member, value)
            continue
        if not member.is_attribute or member.docstring is not None:
            continue
        if not hasattr(runtime, name):
            continue
        value = inspect.getattr_static(runtime, name) if obj.is_class else getattr(runtime, name)
        replacement = _runtime_member(name, value, obj, in_class=obj.is_class)
        if replacement is not None:
            replacement.lineno, replacement.endlineno = member.lineno, member.endlineno
            obj.set_member(name, replacement)


class RuntimeMembers(griffe.Extension):
    """Describe the assigned public names of every tapegrad module from the imported objects."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.name != "tapegrad":
            return
        stack = [pkg]
        while stack:
            module = stack.pop()
            stack += [m for m in module.modules.values() if not m.is_alias]
            try:
                runtime = importlib.import_module(module.path)
            except ImportError:  # an optional extra (SciPy) that is not installed
                continue
            _described_at_runtime(module, runtime)
