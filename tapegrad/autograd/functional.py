"""PyTorch's ``torch.autograd.functional`` on tapegrad Tensors (``tg.autograd.functional``):
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp`` and ``vhp``.

The functions follow PyTorch's: ``inputs`` is a Tensor or a tuple of Tensors, and so is what
``func`` returns; each result is a Tensor or a tuple as the inputs / outputs were given
(``jacobian`` nests a tuple of outputs over a tuple of inputs).  Every derivative is an
``autograd.grad`` call (with ``create_graph=True`` where a derivative is differentiated
again, as ``jvp``'s double-backward trick and ``hessian``'s Jacobian of a Jacobian), so
``create_graph=True`` results can be differentiated to any order.  ``strict=True`` raises
PyTorch's RuntimeError where an output does not depend on an input; without it those blocks
are zeros.  ``vectorize=True`` gives the same values (tapegrad sweeps every row in one
batched backward); ``strategy="forward-mode"`` (which PyTorch allows only with
``vectorize=True``) takes the Jacobian by tapegrad's forward mode on the tape.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import functions as _ops
from ..core.tensor import STATE
from ..core.tensor import TensorBase as Tensor
from . import forward as _forward
from .engine import enable_grad, is_grad_enabled, row_for, set_grad_enabled
from .engine import grad as _grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

TensorOrTensors = Any  # a Tensor or a tuple of Tensors


# ---- helpers (PyTorch's, step for step) ----------------------------------------------------------


def _as_tuple(inp, arg_name, fn_name):
    """(whether ``inp`` was a tuple, ``inp`` as a tuple of Tensors); raise as PyTorch does."""
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _check_float_inputs(inputs, fn_name):
    for i, x in enumerate(inputs):
        if x.dtype.kind != "f":
            raise RuntimeError(
                f"{fn_name}: input {i} has dtype {x.dtype}; only floating point Tensors can "
                "be differentiated (as PyTorch: an integer Tensor cannot require grad); "
                "pass x.double() or x.float()"
            )


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh Tensor objects for the inputs: a differentiable alias (``view_as``) of those that
    require grad when ``create_graph``, else detached copies requiring grad if ``need_graph``."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
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
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i}"
                    " is independent of the input. This is not allowed in strict mode."
                    " You should ensure that your function is thrice differentiable and that"
                    " the hessian depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided"
                    f" function with respect to input {i} is independent of the input. This is"
                    " not allowed in strict mode. You should ensure that your function is twice"
                    " differentiable and that the jacobian depends on the inputs (this would be"
                    " violated by a linear function for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients."
                " The outputs must be computed in a differentiable manner from the input"
                " when running in strict mode."
            )


def _autograd_grad(
    outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None, batched=False
):
    """``autograd.grad`` over the outputs that require grad (None for every input if none)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, grad_out in zip(outputs, grad_outputs, strict=True):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    if all(g is None for g in new_grad_outputs):
        new_grad_outputs = None
    elif any(g is None for g in new_grad_outputs):
        new_grad_outputs = [
            Tensor._const(np.ones(o.shape, dtype=o.dtype)[()]) if g is None else g
            for o, g in zip(new_outputs, new_grad_outputs, strict=True)
        ]
    return _grad(
        new_outputs,
        list(inputs),
        new_grad_outputs,
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
        is_grads_batched=batched,
    )


_STRICT_NONE = {
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


def _zeros_like(x):
    z = np.zeros(x.shape, dtype=x.dtype)
    return Tensor._const(z[()] if z.ndim == 0 else z)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            grads_i = _zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(grads_i)
    return tuple(res)


def _need_one_element(inputs, what):
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            f"The vector v can only be None if the {what} a single Tensor with a single element."
        )


# ---- the functions -------------------------------------------------------------------------------


def vjp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[TensorOrTensors, TensorOrTensors]:
    """``(func(*inputs), v @ J)``: PyTorch's ``torch.autograd.functional.vjp``.

    ``v`` has the structure of ``func``'s output (it may be left out when the output is one
    element); the result has the structure of ``inputs`` (a Tensor for a Tensor, a tuple for a
    tuple).  Results are detached unless ``create_graph=True``; ``strict=True`` raises where an
    input is unused instead of returning zeros.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0])
        >>> tg.autograd.functional.vjp(lambda x: x ** 2, x, tg.tensor([1.0, 1.0]))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        _check_float_inputs(inputs, "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        else:
            _need_one_element(outputs, "user-provided function returns")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def jvp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[TensorOrTensors, TensorOrTensors]:
    """``(func(*inputs), J @ v)``: PyTorch's ``torch.autograd.functional.jvp``, by the
    double-backward trick as PyTorch's (``tg.func.jvp`` / ``tg.jvp`` use forward mode).

    ``v`` has the structure of ``inputs`` (optional for one single-element input); the result
    has the structure of the output.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0])
        >>> tg.autograd.functional.jvp(lambda x: x ** 2, x, tg.tensor([1.0, 0.0]))
        (tensor([1., 4.]), tensor([2., 0.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        _check_float_inputs(inputs, "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            _need_one_element(inputs, "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward is linear in grad_outputs: their value does not matter
        grad_outputs = tuple(_zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_outputs_tuple)


def _jacfwd(func, inputs, strict, vectorize):
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` "
            'and `strategy="forward-mode"` are not supported together (yet). '
            "Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
            "only implemented for `vectorize=True`."
        )
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    _check_float_inputs(inputs, "jacobian")
    with enable_grad():
        # a differentiable alias when the input requires grad (an outer jacobian of
        # hessian(outer_jacobian_strategy="forward-mode") runs through the inner graph)
        ins = tuple(
            x.view_as(x) if x.requires_grad else x.detach().requires_grad_() for x in inputs
        )
        is_outputs_tuple, outputs = _as_tuple(func(*ins), "outputs", "jacobian")
    t = STATE.tape
    in_sizes = [x.numel() for x in ins]
    out_sizes = [y.numel() for y in outputs]
    # an output that is an input itself (func returned its argument) enters the tape here
    keep = [
        k
        for k, y in enumerate(outputs)
        if y.requires_grad and (y._tape is t or any(y is x for x in ins))
    ]
    J = np.zeros((sum(out_sizes), sum(in_sizes)))
    if keep:
        starts = np.concatenate([[0], np.cumsum(out_sizes)]).astype(int)
        sel = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in keep])
        out_rows = [row_for(t, outputs[k]) for k in keep]  # first: it enters such an input
        J[sel] = _forward.jacobian_forward(
            t,
            [x._row if x._tape is t else -1 for x in ins],
            in_sizes,
            out_rows,
            [out_sizes[k] for k in keep],
        )
    rows = np.cumsum([0, *out_sizes])
    cols = np.cumsum([0, *in_sizes])
    # lists, as PyTorch's forward-mode jacobian returns for tuples of inputs
    jac = list(
        list(
            Tensor._const(
                J[rows[i] : rows[i + 1], cols[j] : cols[j + 1]]
                .reshape(tuple(y.shape) + tuple(x.shape))
                .astype(y.dtype)
            )
            for j, x in enumerate(ins)
        )
        for i, y in enumerate(outputs)
    )
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jacobian(
    func: Callable,
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: PyTorch's ``torch.autograd.functional.jacobian``.

    One input and one output give one Tensor of shape ``out.shape + in.shape``; a tuple of
    either gives a tuple, both a tuple of tuples ``J[i][j]`` (output i, input j).
    ``strategy="forward-mode"`` (with ``vectorize=True``, as PyTorch requires) takes it by
    forward mode.

    Examples:
        >>> import tapegrad as tg
        >>> tg.autograd.functional.jacobian(lambda x: x ** 2, tg.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        _check_float_inputs(inputs, "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` "
                "and `vectorized=True` are not supported together. "
                "Please either set `strict=False` or "
                "`vectorize=False`."
            )
        jac = []
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad(
                    (flat[j],), inputs, retain_graph=True, create_graph=create_graph
                )
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(
                    zip(jac_i, vj, inputs, strict=True)
                ):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {el_idx}. This is not allowed in strict mode."
                            )
                        jac_i_el.append(_zeros_like(inp_el))
            jac.append(
                tuple(
                    _stacked(jac_i_el, tuple(out.shape) + tuple(inputs[el_idx].shape), out)
                    for el_idx, jac_i_el in enumerate(jac_i)
                )
            )
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _stacked(rows, shape, out):
    """The rows of one Jacobian block stacked and shaped ``shape`` (zeros for an empty output)."""
    if not rows:
        return Tensor._const(np.zeros(shape, dtype=out.dtype))
    return _ops.reshape(_ops.stack(rows), shape)


def hessian(
    func: Callable,
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of scalar ``func``: PyTorch's ``torch.autograd.functional.hessian``, the
    Jacobian of its Jacobian.

    One input gives one Tensor of shape ``in.shape + in.shape``; a tuple of inputs a tuple of
    tuples ``H[i][j]``.  ``func`` must return a Tensor of one element.

    Examples:
        >>> import tapegrad as tg
        >>> tg.autograd.functional.hessian(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

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
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
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


def _scalar_output(func, inputs, name, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )
    return is_outputs_tuple, outputs


def _hessian_setup(func, inputs, v, create_graph, strict, name):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    _check_float_inputs(inputs, name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    else:
        _need_one_element(inputs, "input to the user-provided function is")
    is_outputs_tuple, outputs = _scalar_output(func, inputs, name, strict)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, TensorOrTensors]:
    """``(func(*inputs), v @ H)`` for scalar ``func``: PyTorch's
    ``torch.autograd.functional.vhp``.  The result has the structure of ``inputs``.

    Examples:
        >>> import tapegrad as tg
        >>> f = lambda x: (x ** 3).sum()
        >>> tg.autograd.functional.vhp(f, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))
        (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hessian_setup(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)


def hvp(
    func: Callable,
    inputs: TensorOrTensors,
    v: TensorOrTensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, TensorOrTensors]:
    """``(func(*inputs), H @ v)`` for scalar ``func``: PyTorch's
    ``torch.autograd.functional.hvp`` (the double-backward trick, as PyTorch's).  The result
    has the structure of ``inputs``.

    Examples:
        >>> import tapegrad as tg
        >>> f = lambda x: x[0] ** 2 * x[1]
        >>> tg.autograd.functional.hvp(f, tg.tensor([1.0, 2.0]), tg.tensor([1.0, 0.0]))
        (tensor(2.), tensor([4., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hessian_setup(
            func, inputs, v, create_graph, strict, "hvp"
        )
        grad_jac = tuple(_zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_inputs_tuple)
