"""``tg.autograd.functional``: PyTorch's ``torch.autograd.functional`` (``jacobian``,
``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``) with its signatures ``(func, inputs, v=None,
create_graph=False, strict=False)`` and its results.

``inputs`` is a Tensor or a tuple of Tensors, and results follow that structure (and the
output's): ``jacobian`` gives, per output and input, a Tensor of shape ``output.shape +
input.shape``, ``hessian`` one of shape ``input_i.shape + input_j.shape``.  They are built as
PyTorch builds them, from reverse-mode ``tg.autograd.grad``: ``jvp`` and ``hvp`` with the
double-backward trick, so their numbers are PyTorch's.  Without ``create_graph`` the results
are detached; with it they keep the graph to ``inputs`` (which may themselves require grad),
for differentiating again.  An input the outputs do not depend on gets zeros, or with
``strict=True`` a RuntimeError as in PyTorch.  For JAX-style transforms over arrays and
pytrees see ``tg.jacobian``, ``tg.hessian``, ``tg.jvp``, ``tg.vjp``, ``tg.hvp``.

Examples:
    >>> import tapegrad as tg
    >>> from tapegrad.autograd.functional import jacobian, hvp
    >>> jacobian(lambda x: x ** 2, tg.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    >>> hvp(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))[1]
    tensor([ 6., 12.])
"""

from collections.abc import Callable

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from ..core.tensor import TensorBase as Tensor
from .engine import enable_grad, grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

Inputs = Tensor | tuple[Tensor, ...]


def _as_tuple(inp, arg_name, fn_name):
    if isinstance(inp, tuple):
        is_tuple, items = True, inp
    else:
        is_tuple, items = False, (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the given {arg_name} has type {type(el)}."
            )
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh differentiable stand-ins for ``inputs``: with ``create_graph`` an input that
    requires grad stays linked to its own graph (a copy recorded from it)."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(_ops.mul(inp, 1.0))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other, strict=True)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got "
                f"{tuple(el_v.shape)}."
            )


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should "
                    "ensure that your function is thrice differentiable and that the hessian "
                    "depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is "
                    "not allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."
            )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False):
    """``tg.autograd.grad`` over the outputs that require grad (None for every input when
    none does), unused inputs giving None."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [
        (out, go)
        for out, go in zip(outputs, grad_outputs, strict=True)
        if out is not None and out.requires_grad
    ]
    if not pairs:
        return (None,) * len(inputs)
    outs = [o for o, _ in pairs]
    gos = [_creation.ones_like(o) if g is None else g for o, g in pairs]
    return tuple(
        grad(
            outs, list(inputs), gos, retain_graph=True, create_graph=create_graph, allow_unused=True
        )
    )


_STAGE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise RuntimeError(_STAGE_MESSAGES[stage].format(i=i))
            g = _creation.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            if "double" not in stage:
                raise RuntimeError(
                    "The jacobian of the user-provided function is independent of input "
                    f"{i}. This is not allowed in strict mode when create_graph=True."
                )
            raise RuntimeError(
                f"The hessian of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _single_element_v(v, items, create_graph, is_tuple, fn_name, against):
    """``v`` as a tuple checked against ``items`` (PyTorch's rules for v=None)."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, items, is_tuple)
        return v
    if len(items) != 1 or items[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the "
            f"{against} is a single Tensor with a single element."
        )
    return None


def vjp(
    func: Callable,
    inputs: Inputs,
    v: Inputs | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product, one result per input.  ``v``
    (the output's shape) may be None when the output has one element.

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import vjp
        >>> vjp(lambda x: x ** 2, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.5]))
        (tensor([1., 4.]), tensor([2., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            v = _single_element_v(v, outputs, create_graph, is_outputs_tuple, "vjp", "")
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )


def jvp(
    func: Callable,
    inputs: Inputs,
    v: Inputs | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), J v)``: the Jacobian-vector product, one result per output, computed
    as PyTorch does with the double-backward trick.  ``v`` (the inputs' shapes) may be None
    when the input is a single one-element Tensor.

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import jvp
        >>> jvp(lambda x: x ** 2, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.5]))
        (tensor([1., 4.]), tensor([2., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(
            v, inputs, create_graph, is_inputs_tuple, "jvp", "input to the user-provided function"
        )
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(_creation.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
        if create_graph:
            grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=True)
            res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    if not create_graph:
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=False)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_outputs_tuple),
    )


def _check_strategy(name, strategy, vectorize, strict):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            f'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            f'function has more outputs than inputs, "forward-mode" tends to be more '
            f'performant. Otherwise, prefer to use "reverse-mode". (got {strategy!r} in {name})'
        )
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(
            'torch.autograd.functional.jacobian: `strategy="forward-mode"` is only '
            "implemented with `vectorize=True`; tapegrad follows PyTorch and refuses it too"
        )
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`."
        )


def jacobian(
    func: Callable,
    inputs: Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Tensor | tuple:
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a Tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (a Tensor, a tuple, or a tuple of tuples, as
    PyTorch's).  ``vectorize`` and ``strategy`` choose how PyTorch computes it (their checks
    are PyTorch's); tapegrad always takes one reverse sweep per output element, which gives
    the same numbers.

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import jacobian
        >>> J = jacobian(lambda x, y: x * y, (tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])))
        >>> J[1]
        tensor([[1., 0.],
                [0., 2.]])
    """
    _check_strategy("jacobian", strategy, vectorize, strict)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = _ops.reshape(out, (-1,))
            for j in range(out.numel()):
                vj = _autograd_grad((_ops.getitem(flat, j),), inputs, create_graph=create_graph)
                for el_idx, (row, g, inp) in enumerate(zip(rows, vj, inputs, strict=True)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent of "
                                f"input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                    elif strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is independent of "
                            f"input {el_idx}. This is not allowed in strict mode."
                        )
                    else:
                        g = _creation.zeros_like(inp)
                    row.append(g)
            blocks = []
            for row, inp in zip(rows, inputs, strict=True):
                shape = tuple(out.shape) + tuple(inp.shape)
                if row:
                    blocks.append(_ops.reshape(_ops.stack(row, 0), shape))
                else:
                    blocks.append(_creation.tensor(np.zeros(shape)))
            jac.append(tuple(blocks))
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(
    func: Callable,
    inputs: Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Tensor | tuple:
    """The Hessian of the scalar ``func`` at ``inputs``: for inputs i and j a Tensor of shape
    ``inputs[i].shape + inputs[j].shape`` (a Tensor for a single input, else a tuple of
    tuples), the Jacobian of the Jacobian as PyTorch computes it.

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import hessian
        >>> hessian(lambda x: (x[0] ** 2) * x[1], tg.tensor([1.0, 3.0]))
        tensor([[6., 2.],
                [2., 0.]])
    """
    _check_strategy("hessian", outer_jacobian_strategy, vectorize, strict)
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return _ops.reshape(out, ())

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac if isinstance(jac, tuple) else (jac,), "jacobian", strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_jac(func, inputs, v, create_graph, strict, fn_name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _single_element_v(
        v, inputs, create_graph, is_inputs_tuple, fn_name, "input to the user-provided function"
    )
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac


def vhp(
    func: Callable,
    inputs: Inputs,
    v: Inputs | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), v^T H)`` for a scalar ``func``: the vector-Hessian product, one
    result per input (the gradient of ``<grad func, v>``).

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import vhp
        >>> vhp(lambda x: (x[0] ** 2) * x[1], tg.tensor([1.0, 3.0]), tg.tensor([1.0, 0.0]))
        (tensor(3.), tensor([6., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_function_jac(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )


def hvp(
    func: Callable,
    inputs: Inputs,
    v: Inputs | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """``(func(*inputs), H v)`` for a scalar ``func``: the Hessian-vector product, one result
    per input, with PyTorch's double-backward trick.

    Examples:
        >>> import tapegrad as tg
        >>> from tapegrad.autograd.functional import hvp
        >>> hvp(lambda x: (x[0] ** 2) * x[1], tg.tensor([1.0, 3.0]), tg.tensor([1.0, 0.0]))
        (tensor(3.), tensor([6., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, is_outputs_tuple, jac = _scalar_function_jac(
            func, inputs, v, create_graph, strict, "hvp"
        )
        grad_jac = tuple(_creation.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )
