"""``gradcheck`` / ``gradgradcheck``: tapegrad's derivatives against central finite differences.

The whole Jacobian is compared, as PyTorch's ``torch.autograd.gradcheck`` does: one backward per
output element (reverse mode), one tangent sweep per input element with
``check_forward_ad=True`` (forward mode) and two evaluations of ``f`` per input element
(central differences).  A wrong entry anywhere fails, whatever its weight in a sum.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from .autograd.engine import grad as _grad
from .autograd.function import OffGraphDerivativeError
from .tensor_class import Tensor
from .transforms.second_order import jvp as _jvp

__all__ = ["gradcheck", "gradgradcheck"]


def _checked(x):
    """Whether gradcheck differentiates this input (else it is passed to f as given): floating
    arrays, Python floats, sequences of floats and Tensors that require grad, as PyTorch checks
    only the Tensors that require grad."""
    if isinstance(x, Tensor):
        return bool(x._rg)
    if isinstance(x, (bool, int, np.integer, np.bool_, str, bytes)) or x is None:
        return False
    if isinstance(x, (float, np.floating, np.ndarray, list, tuple)):
        try:
            kind = np.asarray(x).dtype.kind
        except (ValueError, TypeError):
            return False
        if kind == "c":
            raise TypeError(
                "gradcheck: complex inputs are not supported (tapegrad refuses complex values); "
                "check the real and imaginary parts as separate float inputs"
            )
        return kind == "f"
    return False


def _as_input(x):
    # C order: the checks perturb entries through a flat view (a Fortran array's reshape
    # would be a copy, and the perturbation would change nothing)
    if isinstance(x, Tensor):
        return np.array(x._v, dtype=np.float64, order="C")
    return np.array(x, dtype=np.float64, order="C")


def _leaves(out, path="output"):
    """``[(path, leaf)]`` of f's result: Tensors, arrays and numbers in tuples, lists, dicts."""
    if isinstance(out, (tuple, list)):
        return [item for k, o in enumerate(out) for item in _leaves(o, f"{path}[{k}]")]
    if isinstance(out, dict):
        return [item for k, o in out.items() for item in _leaves(o, f"{path}[{k!r}]")]
    return [(path, out)]


def _float_kind(o):
    if isinstance(o, Tensor):
        return np.asarray(o._v).dtype.kind == "f"
    if isinstance(o, (bool, np.bool_, int, np.integer, str, bytes)) or o is None:
        return False  # not differentiable: skipped, as PyTorch skips non-Tensor outputs
    if isinstance(o, (float, np.floating, np.ndarray)):
        return np.asarray(o).dtype.kind == "f"
    raise TypeError(
        f"gradcheck: f returned {type(o).__name__}; it must return Tensors, arrays or numbers "
        "(or tuples, lists or dicts of them)"
    )


def _outputs(out):
    """The floating outputs of f's result: ``[(path, value array, leaf)]``."""
    res = []
    for path, o in _leaves(out):
        if _float_kind(o):
            v = o._v if isinstance(o, Tensor) else o
            res.append((path, np.array(v, dtype=np.float64), o))
    return res


class _Problem:
    """f with its checked inputs separated from the arguments passed as given."""

    def __init__(self, name, f, inputs):
        if isinstance(inputs, (Tensor, np.ndarray, float, int, np.floating, np.integer)):
            inputs = (inputs,)
        inputs = tuple(inputs)
        self.name, self.f, self.inputs = name, f, inputs
        self.pos = [i for i, x in enumerate(inputs) if _checked(x)]
        if not self.pos:
            raise ValueError(
                f"{name}: no input to check; pass float arrays, Python floats or Tensors that "
                "require grad (integers, integer arrays and Tensors without requires_grad are "
                "passed to f as given)"
            )
        self.values = [_as_input(inputs[i]) for i in self.pos]

    def call(self, xs):
        args = list(self.inputs)
        for i, x in zip(self.pos, xs, strict=True):
            args[i] = x
        return self.f(*args)

    def run(self, values):
        """f at ``values`` (Tensors that require grad, so that f may take gradients itself)."""
        ts = [Tensor(v.copy(), requires_grad=True) for v in values]
        return ts, self.call(ts)

    def output_values(self, values, shapes):
        outs = _outputs(self.run(values)[1])
        if [o[1].shape for o in outs] != shapes:
            raise AssertionError(
                f"{self.name}: f's floating outputs changed shape under a perturbation of its "
                f"inputs ({shapes} -> {[o[1].shape for o in outs]})"
            )
        return [o[1] for o in outs]

    def input_name(self, k):
        return f"input {self.pos[k]} (shape {self.values[k].shape})"


def _numeric(p, shapes, eps):
    """Central-difference Jacobian blocks ``num[k][o]`` of shape out_o.shape + in_k.shape."""
    num = []
    for v in p.values:
        blocks = [np.zeros(s + v.shape) for s in shapes]
        flat = v.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            plus = p.output_values(p.values, shapes)
            flat[j] = old - eps
            minus = p.output_values(p.values, shapes)
            flat[j] = old
            idx = np.unravel_index(j, v.shape)
            for o, (a, b) in enumerate(zip(plus, minus, strict=True)):
                blocks[o][(Ellipsis, *idx)] = (a - b) / (2 * eps)
        num.append(blocks)
    return num


def _reverse(p, ts, outs):
    """Reverse-mode Jacobian blocks, one backward per output element."""
    ana = [[np.zeros(o[1].shape + v.shape) for o in outs] for v in p.values]
    live = [(o, leaf) for o, (_, _, leaf) in enumerate(outs) if isinstance(leaf, Tensor)]
    live = [(o, leaf) for o, leaf in live if leaf._rg]
    for o, leaf in live:
        shape = outs[o][1].shape
        for i in range(int(np.prod(shape, dtype=np.int64))):
            seed = np.zeros(shape)
            seed.reshape(-1)[i] = 1.0
            grads = _grad([leaf], ts, grad_outputs=[seed], retain_graph=True, allow_unused=True)
            idx = np.unravel_index(i, shape)
            for k, g in enumerate(grads):
                if g is not None:
                    gv = np.asarray(g._v, dtype=np.float64)
                    if gv.shape != p.values[k].shape:
                        raise AssertionError(
                            f"{p.name} failed for {p.input_name(k)}: the gradient has shape "
                            f"{gv.shape}"
                        )
                    ana[k][o][idx] = gv
    return ana


def _forward(p, shapes):
    """Forward-mode Jacobian blocks, one tangent sweep per input element."""
    fwd = [[np.zeros(s + v.shape) for s in shapes] for v in p.values]

    def g(*xs):
        return tuple(o[2] for o in _outputs(p.call(xs)))

    for k, v in enumerate(p.values):
        for j in range(v.size):
            tangents = [np.zeros_like(w) for w in p.values]
            tangents[k].reshape(-1)[j] = 1.0
            _, tan = _jvp(g, [w.copy() for w in p.values], tangents)
            idx = np.unravel_index(j, v.shape)
            for o, t in enumerate(tan):
                fwd[k][o][(Ellipsis, *idx)] = np.zeros(shapes[o]) if t is None else t
    return fwd


def _one_sided(p, k, j, o, i, eps, shapes):
    """The forward and backward differences of output element (o, i) in input element (k, j)."""
    v = p.values[k].reshape(-1)
    old = v[j]
    base = p.output_values(p.values, shapes)[o].reshape(-1)[i]
    v[j] = old + eps
    plus = p.output_values(p.values, shapes)[o].reshape(-1)[i]
    v[j] = old - eps
    minus = p.output_values(p.values, shapes)[o].reshape(-1)[i]
    v[j] = old
    return float((plus - base) / eps), float((base - minus) / eps)


def _compare(p, mode, got, num, outs, eps, atol, rtol):
    """None, or the message naming the worst element of the worst input."""
    shapes = [o[1].shape for o in outs]
    for k in range(len(p.values)):
        for o in range(len(outs)):
            a, n = got[k][o], num[k][o]
            err = np.abs(a - n)
            tol = atol + rtol * np.abs(n)
            bad = ~(err <= tol)
            if not np.any(bad):
                continue
            worst = np.where(np.isnan(err), np.inf, err - tol)
            flat = int(np.argmax(worst))
            ii = np.unravel_index(flat, a.shape)
            out_idx, in_idx = ii[: len(shapes[o])], ii[len(shapes[o]) :]
            av, nv = float(a[ii]), float(n[ii])
            msg = (
                f"{p.name} failed for {p.input_name(k)} at element "
                f"{tuple(int(x) for x in in_idx)}, {outs[o][0]} (shape {shapes[o]}) element "
                f"{tuple(int(x) for x in out_idx)}: {mode} {av!r} vs numeric {nv!r} "
                f"({int(bad.sum())} of {bad.size} entries differ)"
            )
            if not np.isfinite(outs[o][1]).all():
                msg += f"; f's {outs[o][0]} is not finite at the point checked"
            elif np.isnan(av) or np.isnan(nv):
                msg += "; a derivative is NaN at the point checked"
            else:
                j = int(np.ravel_multi_index(in_idx, p.values[k].shape)) if in_idx else 0
                i = int(np.ravel_multi_index(out_idx, shapes[o])) if out_idx else 0
                dp, dm = _one_sided(p, k, j, o, i, eps, shapes)
                if not abs(dp - dm) <= atol + rtol * max(abs(dp), abs(dm)):
                    msg += (
                        f"; the one-sided differences disagree ({dp!r} ahead, {dm!r} behind): "
                        "f has a kink or a jump within eps of this point, or eps is too large; "
                        "check at a point where f is smooth"
                    )
            return msg
    return None


def gradcheck(
    f: Callable,
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    *,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    raise_exception: bool = True,
    _name: str = "gradcheck",
) -> bool:
    """Check the Jacobian of f at ``inputs`` against central differences, entry by entry.

    Every entry d output[i] / d input[j] of every floating output (f may return a Tensor, an
    array, a number or tuples, lists, dicts of them; integer outputs are skipped) is compared:
    reverse mode (one backward per output element) and, with ``check_forward_ad=True``, forward
    mode (``tg.jvp``, one tangent per input element, which checks a custom ``jvp`` rule).
    Returns True, or raises AssertionError naming the input, its worst element and the output
    element (``raise_exception=False``: returns False instead).

    Args:
        f: a function of Tensors.
        inputs: one input or a sequence of them.  Float arrays, Python floats, sequences of
            floats and Tensors that require grad are checked (through float64 copies);
            everything else (ints, integer or boolean arrays, Tensors without requires_grad,
            strings...) is passed to f as given, as PyTorch's gradcheck checks only Tensors
            that require grad.
        eps: finite difference step.
        atol: absolute tolerance.
        rtol: relative tolerance, of the numeric derivative.
        check_forward_ad: also check forward mode.
        check_backward_ad: check reverse mode (default).

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.gradcheck(lambda x, y: tg.sin(x) * y, [np.array([0.5, 1.0]), np.array([2.0, 3.0])])
        True
        >>> def wrong(x):                       # the value without its graph: gradient 1, not 2x
        ...     return tg.tensor(x.numpy() ** 2) + x
        >>> tg.gradcheck(wrong, np.array([1.0]))
        Traceback (most recent call last):
        ...
        AssertionError: gradcheck failed for input 0 (shape (1,)) at element (0,), output ...
    """
    p = _Problem(_name, f, inputs)
    ts, out = p.run(p.values)
    outs = _outputs(out)
    if not outs:
        raise ValueError(
            f"{_name}: f returned no floating-point output to check (got {type(out).__name__})"
        )
    shapes = [o[1].shape for o in outs]
    num = _numeric(p, shapes, eps)
    checks = []
    if check_backward_ad:
        checks.append(("analytic", lambda: _reverse(p, ts, outs)))
    if check_forward_ad:
        checks.append(("forward-mode", lambda: _forward(p, shapes)))
    for mode, compute in checks:
        msg = _compare(p, mode, compute(), num, outs, eps, atol, rtol)
        if msg is not None:
            if raise_exception:
                raise AssertionError(msg)
            return False
    return True


def gradgradcheck(
    f: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    *,
    check_fwd_over_rev: bool = False,
    raise_exception: bool = True,
) -> bool:
    """Check second derivatives: ``gradcheck`` of ``(inputs, v) -> vjp of f(inputs) with v``,
    the backward taken with ``create_graph=True``, as PyTorch's ``gradgradcheck``.

    ``grad_outputs`` (one per floating output of f) are the cotangents v; by default fixed
    random ones, which are checked as inputs too.  ``check_fwd_over_rev=True`` also checks the
    forward mode of the backward.  The message names "input i" counting the inputs of f first,
    then the grad_outputs.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> tg.testing.gradgradcheck(lambda x: tg.sin(x) * x, np.array([0.5, 1.0]))
        True
    """
    p = _Problem("gradgradcheck", f, inputs)
    outs = _outputs(p.run(p.values)[1])
    if not outs:
        raise ValueError("gradgradcheck: f returned no floating-point output to check")
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        vs = [rng.standard_normal(o[1].shape) for o in outs]
    else:
        if isinstance(grad_outputs, (Tensor, np.ndarray, float)):
            grad_outputs = (grad_outputs,)
        vs = [_as_input(v) for v in grad_outputs]
        if [v.shape for v in vs] != [o[1].shape for o in outs]:
            raise ValueError(
                f"gradgradcheck: grad_outputs have shapes {[v.shape for v in vs]}, f's floating "
                f"outputs {[o[1].shape for o in outs]}; pass one per floating output"
            )
    n = len(p.values)

    def first(*args):
        xs, gs = args[:n], args[n:]
        res = _outputs(p.call(xs))
        pairs = [
            (o[2], g) for o, g in zip(res, gs, strict=True) if isinstance(o[2], Tensor) and o[2]._rg
        ]
        if not pairs:
            return tuple(x * 0.0 for x in xs)
        grads = _grad(
            [o for o, _ in pairs],
            list(xs),
            grad_outputs=[g for _, g in pairs],
            create_graph=True,
            allow_unused=True,
        )
        return tuple(x * 0.0 if g is None else g for x, g in zip(xs, grads, strict=True))

    try:
        return gradcheck(
            first,
            [*p.values, *vs],
            eps,
            atol,
            rtol,
            check_forward_ad=check_fwd_over_rev,
            raise_exception=raise_exception,
            _name="gradgradcheck",
        )
    except OffGraphDerivativeError as e:  # a custom backward that left the graph: a failure
        if raise_exception:
            raise AssertionError(
                f"gradgradcheck failed: the second derivative is refused: {e}"
            ) from e
        return False
