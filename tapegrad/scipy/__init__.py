"""SciPy's names, differentiable: ``tapegrad.scipy.special``, ``.stats``, ``.integrate`` ...

Each submodule mirrors SciPy's module of the same name: with a Tensor among the arguments the
functions record tapegrad ops (differentiable in reverse and forward mode, at any order);
on plain numbers and arrays they return exactly what SciPy returns.  SciPy is an optional
dependency (``pip install tapegrad[scipy]``): importing ``tapegrad`` never imports it, and the
submodules here are imported on first use.
"""

import importlib

_SUBMODULES = ("special", "stats", "integrate", "linalg", "signal")
__all__ = list(_SUBMODULES)


def require_scipy(module: str):
    """Import SciPy's ``module``, or raise an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"tapegrad.scipy needs SciPy ({module} could not be imported): "
            "install the extra with  pip install 'tapegrad[scipy]'",
            name=getattr(exc, "name", None) or module,
        ) from exc


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
