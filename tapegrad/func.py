"""PyTorch's ``torch.func`` on tapegrad (``tg.func``): ``grad``, ``grad_and_value``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``functional_call`` and ``vmap``.

Each is tapegrad's transform of the same meaning (``tg.grad``, ``tg.vjp``, ``tg.jvp``,
``tg.jacrev``...) with PyTorch's signatures, return structures and errors: results are
Tensors (differentiable again when the inputs carry a graph, or inside another transform),
``has_aux`` everywhere PyTorch has it, and ``grad`` requires a 0-d Tensor output as
PyTorch's does.  ``vmap`` is a loop over the batch (see ``tg.func.vmap``);
``functional_call`` is ``tg.nn.utils.stateless.functional_call``.
"""

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import pytree as _pytree
from .core.tensor import TensorBase as _TensorBase
from .nn.utils.stateless import functional_call
from .tensor_class import Tensor
from .transforms import functional as _functional
from .transforms import second_order as _second_order
from .transforms.vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "vjp",
    "vmap",
]


def _as_tensor(v):
    """A result leaf as a Tensor (tapegrad's transforms give arrays / floats outside a graph)."""
    if isinstance(v, _TensorBase) or v is None:
        return v
    if isinstance(v, (np.ndarray, np.generic, float, int)) and not isinstance(v, bool):
        return Tensor._const(np.asarray(v)[()] if np.ndim(v) == 0 else np.asarray(v))
    return v


def _tensors(tree):
    return _pytree.map_leaves(tree, _as_tensor)


def _scalar_checked(func, has_aux, name):
    """``func`` with PyTorch's checks of its output for ``grad`` / ``grad_and_value``."""

    @functools.wraps(func)
    def checked(*args, **kwargs):
        out = func(*args, **kwargs)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    f"{name}(f)(*args): output of function f should be a tuple: (output, aux) "
                    "if has_aux is True"
                )
            value = out[0]
        else:
            value = out
        if not isinstance(value, _TensorBase):
            raise RuntimeError(
                f"{name}(f)(*args): Expected f(*args) to return a Tensor, got {type(value)}"
            )
        if value.ndim != 0:
            raise RuntimeError(
                f"{name}(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                f"with {value.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
                "instead?"
            )
        return out

    return checked


def grad_and_value(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable:
    """PyTorch's ``torch.func.grad_and_value``: ``(gradient, value)`` of scalar ``func`` with
    respect to ``args[argnums]`` (``(gradient, (value, aux))`` with ``has_aux``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.func.grad_and_value(lambda x: (x ** 2).sum())(tg.tensor([1.0, 2.0]))
        (tensor([2., 4.]), tensor(5.))
    """
    vg = _functional.value_and_grad(
        _scalar_checked(func, has_aux, "grad_and_value"), argnums, has_aux
    )

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        if has_aux:
            return _tensors(g), (_as_tensor(value[0]), _tensors(value[1]))
        return _tensors(g), _as_tensor(value)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """PyTorch's ``torch.func.grad``: the gradient of scalar ``func`` (a 0-d Tensor) with
    respect to ``args[argnums]``, in their structure (``(gradient, aux)`` with ``has_aux``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.func.grad(lambda x: (x ** 3).sum())(tg.tensor([1.0, 2.0]))
        tensor([ 3., 12.])
        >>> tg.func.grad(tg.func.grad(lambda x: x.sin()))(tg.tensor(0.5))     # -sin(x)
        tensor(-0.4794)
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """PyTorch's ``torch.func.vjp``: ``(func(*primals), vjp_fn)`` (``(..., aux)`` with
    ``has_aux``); ``vjp_fn(cotangents)`` returns a tuple with one cotangent per primal.

    Examples:
        >>> import tapegrad as tg
        >>> out, vjp_fn = tg.func.vjp(lambda x: x ** 2, tg.tensor([1.0, 2.0]))
        >>> vjp_fn(tg.tensor([1.0, 1.0]))
        (tensor([2., 4.]),)
    """
    res = _functional.vjp(func, *primals, has_aux=has_aux)
    inner = res[1]

    def vjp_fn(cotangents: Any) -> tuple:
        return _tensors(inner(cotangents))

    out = (_tensors(res[0]), vjp_fn)
    return out + (_tensors(res[2]),) if has_aux else out


def _with_aux(func, has_aux, name):
    """``func`` returning its output only, with its aux kept in ``box`` (PyTorch's check of
    the pair)."""
    box = []
    if not has_aux:
        return func, box

    @functools.wraps(func)
    def main(*args, **kwargs):
        out = func(*args, **kwargs)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(
                f"{name}(f, ...): output of function f should be a tuple: (output, aux) if "
                "has_aux is True"
            )
        box.append(out[1])
        return out[0]

    return main, box


def jvp(
    func: Callable,
    primals: tuple,
    tangents: tuple,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> tuple:
    """PyTorch's ``torch.func.jvp``: ``(func(*primals), J @ tangents)`` by forward mode
    (``(..., aux)`` with ``has_aux``); ``primals`` and ``tangents`` are tuples.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0])
        >>> tg.func.jvp(lambda x: x ** 2, (x,), (tg.tensor([1.0, 0.0]),))
        (tensor([1., 4.]), tensor([2., 0.]))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be "
            "valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple) or len(primals) != len(tangents):
        got = (
            f"a {type(tangents).__name__}"
            if not isinstance(tangents, tuple)
            else (f"{len(tangents)} tangents")
        )
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must "
            f"be. Got {len(primals)} primals and {got}"
        )
    main, box = _with_aux(func, has_aux, "jvp")
    value, tangent = _second_order.jvp(main, primals, tangents)
    value, tangent = _tensors(value), _tensors(tangent)
    # an integer / boolean output's tangent: zeros of its dtype, as PyTorch's
    outs = _pytree.leaves(value)
    tans = [
        t.to(v.dtype) if isinstance(v, _TensorBase) and v.dtype.kind in "biu" else t
        for v, t in zip(outs, _pytree.leaves(tangent), strict=True)
    ]
    out = (value, _pytree.unflatten(tangent, tans))
    return out + (_aux_out(_take(box), (primals, tangents)),) if has_aux else out


def _take(box):
    """The aux of the last call of ``func`` (a transform may call it more than once)."""
    aux = box[-1]
    box.clear()
    return aux


def _aux_out(aux, args):
    """The aux a transform's ``func`` returned, as PyTorch gives it: outside any transform and
    graph, its Tensors detached from the recording (which the transform discards)."""
    if _functional._DEPTH.n > 0 or any(
        isinstance(x, _TensorBase) and x.requires_grad for x in _pytree.leaves(args)
    ):
        return aux
    return _pytree.map_leaves(aux, lambda v: v.detach() if isinstance(v, _TensorBase) else v)


def _jacobian(transform, func, argnums, has_aux, name):
    main, box = _with_aux(func, has_aux, name)
    jac = transform(main, argnums)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        res = _tensors(jac(*args, **kwargs))
        return (res, _aux_out(box.pop(), args)) if has_aux else res

    return wrapper


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """PyTorch's ``torch.func.jacrev``: the Jacobian by reverse mode, for each output (in
    ``func``'s output structure) the blocks of ``args[argnums]`` (``(jacobian, aux)`` with
    ``has_aux``).  ``chunk_size`` is accepted (every row is swept in one compiled call).

    Examples:
        >>> import tapegrad as tg
        >>> tg.func.jacrev(lambda x: x ** 2)(tg.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if chunk_size is not None and not (
        isinstance(chunk_size, int) and not isinstance(chunk_size, bool) and chunk_size > 0
    ):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(_second_order.jacrev, func, argnums, has_aux, "jacrev")


def jacfwd(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """PyTorch's ``torch.func.jacfwd``: the Jacobian by forward mode, laid out as
    ``jacrev``'s (``(jacobian, aux)`` with ``has_aux``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.func.jacfwd(lambda x: x.sin())(tg.tensor([0.0]))
        tensor([[1.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    return _jacobian(_second_order.jacfwd, func, argnums, has_aux, "jacfwd")


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """PyTorch's ``torch.func.hessian``: the matrix of second derivatives of scalar ``func``
    with respect to ``args[argnums]`` (shape ``x.shape + x.shape`` for one input).

    Examples:
        >>> import tapegrad as tg
        >>> tg.func.hessian(lambda x: (x ** 3).sum())(tg.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    h = _second_order.hessian(func, argnums)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _tensors(h(*args, **kwargs))

    return wrapper
