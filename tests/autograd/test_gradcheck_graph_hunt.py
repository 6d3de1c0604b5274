"""The testing helper and the graph views must never pass or show something wrong.

``tg.gradcheck`` / ``tg.testing.gradgradcheck``: custom rules (``tg.Function``,
``tg.custom_vjp``, ``tg.custom_jvp``) with planted wrong derivatives (a factor 1.01, a
transposed Jacobian, an ignored input, wrong only for negative inputs, wrong only for one of
several outputs, a wrong broadcasting reduction, a wrong second derivative only, a backward
returning None, a wrong forward-mode rule under a right reverse one, a wrong entry hidden
under a large one) must fail, naming the input, its element and the output element, and the
right rules must pass; each verdict is compared with ``torch.autograd.gradcheck`` /
``gradgradcheck`` (``check_forward_ad=True``) on the torch translation, or with the closed
form.  Inputs: several, non-Tensor arguments, 0-d, integers (refused), Tensors without
requires_grad (passed as given), tuple / list / dict outputs, integer outputs, a kink near the
point and an eps too large (a message saying so), NaN outputs (fail), constant outputs (pass).

Graph views: ``grad_fn.name()`` and ``next_functions`` of ~40 programs against PyTorch's
(names where tapegrad's ops are PyTorch's, else the structure: which inputs lead where, the
leaves through ``AccumulateGrad.variable``), custom Functions' multi-output nodes, in-place
ops, views, checkpoint, ``register_prehook``; ``tape.dump()`` / ``stats()`` / ``to_dot()``
counts and edges on a tape of the program's own (nothing left from earlier programs).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fresh_tape import on_fresh_tape  # noqa: E402

import tapegrad as tg  # noqa: E402
from tapegrad.testing import gradgradcheck  # noqa: E402

A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 4.0], [2.0, -3.0, 1.5]])


def _lib(name):
    return tg if name == "tg" else torch


def _fn_base(name):
    return tg.Function if name == "tg" else torch.autograd.Function


def _cast(name, a, rg=True):
    a = np.array(a, dtype=float)
    if name == "tg":
        return a
    return torch.tensor(a, dtype=torch.float64, requires_grad=rg)


# ---- custom rules, right and wrong, written once for both libraries ------------------------------


def _square(L, k=2.0):
    class Square(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return k * x * g

    return Square.apply


def _matvec(L, transposed):
    M = A if L == "tg" else torch.tensor(A)

    class MatVec(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            return M @ x

        @staticmethod
        def backward(ctx, g):
            return (M if transposed else M.T) @ g

    return MatVec.apply


def _mul(L, second):
    class Mul(_fn_base(L)):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            if second == "zero":
                return g * y, g * 0.0 * x
            if second == "none":
                return g * y, None
            return g * y, g * x

    return Mul.apply


def _leaky(L, neg_slope):
    lib = _lib(L)

    class Leaky(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.where(x > 0, x, 0.3 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return lib.where(x > 0, g, neg_slope * g)

    return Leaky.apply


def _sincos(L, sign):
    lib = _lib(L)

    class SinCos(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.sin(x), lib.cos(x)

        @staticmethod
        def backward(ctx, g1, g2):
            (x,) = ctx.saved_tensors
            return g1 * lib.cos(x) + sign * g2 * lib.sin(x)

    return lambda x: SinCos.apply(x)


def _addbias(L, reduce):
    class AddBias(_fn_base(L)):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, g):
            gb = g.sum(0, keepdims=True) if reduce == "sum" else g.mean(0, keepdims=True)
            return g, gb

    return AddBias.apply


def _hidden(L, wrong):
    """(1000 x0, x0): a wrong d y1/d x0 under a large d y0/d x0 (a weighted sum would hide it)."""
    lib = _lib(L)

    class Hidden(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            return lib.stack([1000.0 * x[0], x[0]])

        @staticmethod
        def backward(ctx, g):
            d = 1.5 if wrong else 1.0
            return lib.stack([1000.0 * g[0] + d * g[1], 0.0 * g[1]])

    return Hidden.apply


def _detached_second(L, detach):
    """sin with backward g cos(x): right first derivative; with ``detach`` its second is 0."""
    lib = _lib(L)

    class Sin(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * lib.cos(x.detach() if detach else x)

    return Sin.apply


def _fwd_wrong(L, factor):
    """Cube with a right backward and a forward-mode rule off by ``factor``."""

    class Cube(_fn_base(L)):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            if L == "torch":
                ctx.save_for_forward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3.0 * x * x * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return factor * 3.0 * x * x * t

    return Cube.apply


X3 = [0.7, -1.3, 2.1]
RULES = {
    # name: (factory(L), inputs, gradcheck passes, forward-mode passes or None: no jvp rule)
    "square_right": (lambda L: _square(L), [X3], True, None),
    "square_1.01": (lambda L: _square(L, 2.02), [X3], False, None),
    "matvec_right": (lambda L: _matvec(L, False), [X3], True, None),
    "matvec_transposed": (lambda L: _matvec(L, True), [X3], False, None),
    "mul_right": (lambda L: _mul(L, "right"), [X3, [1.5, 0.2, -0.4]], True, None),
    "mul_ignores_y": (lambda L: _mul(L, "zero"), [X3, [1.5, 0.2, -0.4]], False, None),
    "mul_none_for_y": (lambda L: _mul(L, "none"), [X3, [1.5, 0.2, -0.4]], False, None),
    "leaky_right": (lambda L: _leaky(L, 0.3), [[0.5, -0.7, 1.2]], True, None),
    "leaky_wrong_neg": (lambda L: _leaky(L, 0.25), [[0.5, -0.7, 1.2]], False, None),
    "leaky_wrong_neg_unseen": (lambda L: _leaky(L, 0.25), [[0.5, 0.7, 1.2]], True, None),
    "sincos_right": (lambda L: _sincos(L, -1.0), [X3], True, None),
    "sincos_wrong_2nd_out": (lambda L: _sincos(L, 1.0), [X3], False, None),
    "bias_sum": (
        lambda L: _addbias(L, "sum"),
        [np.ones((2, 3)) * 0.5, [[0.1, 0.2, 0.3]]],
        True,
        None,
    ),
    "bias_mean": (
        lambda L: _addbias(L, "mean"),
        [np.ones((2, 3)) * 0.5, [[0.1, 0.2, 0.3]]],
        False,
        None,
    ),
    "hidden_right": (lambda L: _hidden(L, False), [[0.3, 0.4]], True, None),
    "hidden_wrong": (lambda L: _hidden(L, True), [[0.3, 0.4]], False, None),
    "fwd_right": (lambda L: _fwd_wrong(L, 1.0), [X3], True, True),
    "fwd_wrong": (lambda L: _fwd_wrong(L, 1.01), [X3], True, False),
    "second_detached": (lambda L: _detached_second(L, True), [X3], True, None),
}


def _torch_verdict(fn, inputs, forward=False):
    args = tuple(_cast("torch", a) for a in inputs)
    try:
        return torch.autograd.gradcheck(
            fn,
            args,
            eps=1e-6,
            atol=1e-5,
            rtol=1e-3,
            check_forward_ad=forward,
            raise_exception=False,
        )
    except RuntimeError:
        return False


@pytest.mark.parametrize("name", sorted(RULES))
def test_gradcheck_verdict_matches_torch(name):
    factory, inputs, passes, _ = RULES[name]
    assert _torch_verdict(factory("torch"), inputs) is passes
    args = [np.array(a, dtype=float) for a in inputs]
    if passes:
        assert tg.gradcheck(factory("tg"), args) is True
    else:
        with pytest.raises(AssertionError, match=r"gradcheck failed for input \d .*element"):
            tg.gradcheck(factory("tg"), args)
        assert tg.gradcheck(factory("tg"), args, raise_exception=False) is False


@pytest.mark.parametrize("name", sorted(k for k, v in RULES.items() if v[3] is not None))
def test_forward_mode_verdict_matches_torch(name):
    factory, inputs, _, fwd_passes = RULES[name]
    assert _torch_verdict(factory("torch"), inputs, forward=True) is fwd_passes
    args = [np.array(a, dtype=float) for a in inputs]
    assert tg.gradcheck(factory("tg"), args) is True  # reverse mode is right
    if fwd_passes:
        assert tg.gradcheck(factory("tg"), args, check_forward_ad=True) is True
    else:
        with pytest.raises(AssertionError, match=r"forward-mode .* vs numeric"):
            tg.gradcheck(factory("tg"), args, check_forward_ad=True)


def test_forward_mode_without_a_jvp_rule_names_it():
    with pytest.raises(Exception, match=r"(?i)square.*jvp|jvp.*square"):
        tg.gradcheck(_square("tg"), np.array(X3), check_forward_ad=True)


def test_message_names_input_worst_element_and_output():
    f = _mul("tg", "zero")
    with pytest.raises(AssertionError) as e:
        tg.gradcheck(f, [np.array(X3), np.array([1.5, 0.2, -0.4])])
    msg = str(e.value)
    # d/dy of x*y is x: worst where |x| is largest, x[2] = 2.1
    assert "input 1 (shape (3,)) at element (2,), output (shape (3,)) element (2,)" in msg
    assert "analytic 0.0 vs numeric 2.09999" in msg and "3 of 9 entries differ" in msg


@pytest.mark.parametrize(
    "name, passes", [("right", True), ("detached", False)], ids=["right", "detached"]
)
def test_gradgradcheck_verdict_matches_torch(name, passes):
    detach = name == "detached"
    args = (_cast("torch", X3),)
    assert (
        torch.autograd.gradgradcheck(_detached_second("torch", detach), args, raise_exception=False)
        is passes
    )
    if passes:
        assert gradgradcheck(_detached_second("tg", detach), np.array(X3)) is True
    else:
        # tapegrad refuses the second derivative of a backward that left the graph
        with pytest.raises(AssertionError, match=r"gradgradcheck failed: .* \(.detach\(\)\)"):
            gradgradcheck(_detached_second("tg", detach), np.array(X3))
        assert (
            gradgradcheck(_detached_second("tg", detach), np.array(X3), raise_exception=False)
            is False
        )


@pytest.mark.parametrize(
    "f",
    [
        lambda x: tg.sin(x) * x,
        lambda x: tg.tanh(x).sum() * x,
        lambda x: (tg.tensor(A) @ x) ** 2,
        lambda x: tg.exp(x[0] * x[1]),
        lambda x: _square("tg")(x) * x,
        lambda x: (tg.sin(x), x * x.sum()),
    ],
    ids=["sinx", "tanh_sum", "matvec_sq", "exp_prod", "function", "tuple"],
)
def test_gradgradcheck_right_functions_pass(f):
    assert gradgradcheck(f, np.array(X3)) is True


def test_gradgradcheck_wrong_second_derivative_in_a_function():
    # first derivative right (3x^2) but written with a detached value: second derivative 0
    class Cube(tg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * tg.tensor(x.numpy() ** 2)

    assert tg.gradcheck(Cube.apply, np.array(X3))
    with pytest.raises(AssertionError, match=r"gradgradcheck failed: .*\(.numpy\(\)\)"):
        gradgradcheck(Cube.apply, np.array(X3))


def test_gradgradcheck_given_grad_outputs_and_linear_function():
    assert gradgradcheck(lambda x: 3.0 * x, np.array(X3), grad_outputs=np.ones(3))
    with pytest.raises(ValueError, match="grad_outputs"):
        gradgradcheck(lambda x: 3.0 * x, np.array(X3), grad_outputs=np.ones(2))


# ---- custom_vjp / custom_jvp -------------------------------------------------------------------


def _cvjp(factor):
    @tg.custom_vjp
    def h(x):
        return np.sin(x)

    h.defvjp(lambda x: (np.sin(x), x), lambda x, g: (np.cos(x) * g * factor,))
    return h


def _cjvp(factor):
    @tg.custom_jvp
    def h(x):
        return np.sin(x)

    @h.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return h(x), np.cos(x) * t * factor

    return h


@pytest.mark.parametrize("make", [_cvjp, _cjvp], ids=["custom_vjp", "custom_jvp"])
@pytest.mark.parametrize("factor", [1.0, 1.01])
def test_custom_rules(make, factor):
    x = np.array(X3)
    if factor == 1.0:
        assert tg.gradcheck(make(factor), x)
    else:
        with pytest.raises(AssertionError, match="input 0"):
            tg.gradcheck(make(factor), x)


@pytest.mark.parametrize("factor", [1.0, 1.01])
def test_custom_jvp_forward_mode(factor):
    h = _cjvp(factor)
    if factor == 1.0:
        assert tg.gradcheck(h, np.array(X3), check_forward_ad=True)
    else:
        with pytest.raises(AssertionError, match="input 0"):
            tg.gradcheck(h, np.array(X3), check_forward_ad=True, check_backward_ad=False)


# ---- inputs and outputs -------------------------------------------------------------------------


def test_several_inputs_and_scalars():
    assert tg.gradcheck(lambda a, b, c: a * tg.sin(b) + c, [0.3, np.array([1.0, 2.0]), 0.5])


def test_zero_d_inputs():
    assert tg.gradcheck(lambda x: tg.exp(x) * x, np.float64(0.4))
    assert tg.gradcheck(lambda x: tg.exp(x) * x, 0.4)
    assert tg.gradcheck(lambda x: tg.exp(x) * x, np.array(0.4))


def test_non_tensor_arguments_are_passed_as_given():
    seen = []

    def f(x, n, mode, w):
        seen.append((type(n), mode, w))
        return x**n if mode == "pow" else x

    w = tg.tensor([1.0, 2.0])
    assert tg.gradcheck(f, (np.array([0.5, 1.5]), 3, "pow", w))
    assert all(s == (int, "pow", w) for s in seen)
    with pytest.raises(AssertionError, match="input 0"):
        tg.gradcheck(lambda x, n: tg.tensor(x.numpy() ** n) + 0.0 * x, (np.array([0.5]), 2))


def test_tensor_without_requires_grad_is_a_constant_as_in_torch():
    w0 = tg.tensor([3.0, 4.0])

    def f(x, w):
        assert w is w0
        return x * tg.tensor(w.numpy())  # w used as a constant: fine, it is not checked

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert tg.gradcheck(f, (x, w0))
    assert x.grad is None and w0.grad is None
    assert torch.autograd.gradcheck(
        lambda a, b: a * b.detach(), (_cast("torch", [1.0, 2.0]), torch.tensor([3.0, 4.0]).double())
    )


@pytest.mark.parametrize(
    "inputs",
    [np.array([1, 2]), 3, (np.array([1, 2]), 4), tg.tensor([1.0, 2.0])],
    ids=["int_array", "int", "ints", "tensor_no_grad"],
)
def test_nothing_to_check_is_refused(inputs):
    with pytest.raises(ValueError, match="gradcheck: no input to check"):
        tg.gradcheck(lambda *a: a[0] * 1.0, inputs)
    with pytest.raises(ValueError, match="at least one input"):
        torch.autograd.gradcheck(lambda a: a * 1.0, (torch.tensor([1.0, 2.0]).double(),))


def test_complex_input_is_refused():
    with pytest.raises(TypeError, match="complex"):
        tg.gradcheck(lambda x: x, np.array([1.0 + 1j]))


@pytest.mark.parametrize(
    "f, passes",
    [
        (lambda x: (tg.sin(x), tg.cos(x) * x), True),
        (lambda x: [x * 2.0, x.sum()], True),
        (lambda x: {"a": x * 2.0, "b": tg.exp(x)}, True),
        (lambda x: (tg.sin(x), tg.tensor(np.cos(x.numpy()))), False),
        (lambda x: (x * 2.0, x.argmax()), True),  # integer output skipped
        (lambda x: (x * 2.0, None, "tag"), True),
    ],
    ids=["tuple", "list", "dict", "tuple_2nd_detached", "int_out", "none_str"],
)
def test_structured_outputs(f, passes):
    x = np.array([0.4, -0.9, 1.3])
    if passes:
        assert tg.gradcheck(f, x)
    else:
        with pytest.raises(AssertionError, match=r"output\[1\]"):
            tg.gradcheck(f, x)


def test_bad_output_type_names_gradcheck():
    with pytest.raises(TypeError, match="gradcheck: f returned object"):
        tg.gradcheck(lambda x: object(), np.array([1.0]))
    with pytest.raises(ValueError, match="no floating-point output"):
        tg.gradcheck(lambda x: 3, np.array([1.0]))


def test_kink_near_the_point_gives_a_clear_message():
    with pytest.raises(AssertionError, match="kink") as e:
        tg.gradcheck(lambda x: abs(x), np.array([1e-7, 1.0]))
    assert "element (0,)" in str(e.value)
    assert not torch.autograd.gradcheck(
        torch.abs, (_cast("torch", [1e-7, 1.0]),), raise_exception=False
    )


def test_eps_too_large_gives_a_clear_message():
    with pytest.raises(AssertionError, match="eps is too large"):
        tg.gradcheck(tg.exp, np.array([-1.0, 1.0]), eps=0.5)
    assert tg.gradcheck(tg.exp, np.array([-1.0, 1.0]))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: tg.log(x),  # log(-1): NaN value, NaN numeric derivative
        lambda x: tg.sqrt(x) * 0.0 + x,  # value fine for x>0 but NaN at -1
        lambda x: x * np.nan,
    ],
    ids=["log_neg", "sqrt_neg", "nan_times"],
)
def test_nan_outputs_fail(f):
    with np.errstate(all="ignore"):
        with pytest.raises(AssertionError, match="not finite|NaN"):
            tg.gradcheck(f, np.array([-1.0, 1.0]))


def test_nan_gradient_only_fails():
    # value finite everywhere, the rule's gradient NaN at 0 (sqrt(x^2) at 0)
    with np.errstate(all="ignore"):
        with pytest.raises(AssertionError, match="NaN|nan"):
            tg.gradcheck(lambda x: tg.sqrt(x * x + 0.0), np.array([0.0, 1.0]))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: tg.tensor([1.0, 2.0]),
        lambda x: 3.0,
        lambda x: np.array([1.0, 2.0]),
        lambda x: x.detach() * 0.0 + 1.0,
    ],
    ids=["const_tensor", "float", "array", "detached"],
)
def test_output_independent_of_input_passes(f):
    assert tg.gradcheck(f, np.array([0.5, 1.5]))


def test_output_read_without_graph_fails():
    with pytest.raises(AssertionError, match="analytic 0.0"):
        tg.gradcheck(lambda x: x.detach() * 2.0, np.array([0.5, 1.5]))


def test_inputs_left_alone():
    x0 = np.array([0.5, 1.5])
    kept = x0.copy()
    t = tg.tensor([0.3, 0.7], requires_grad=True)
    assert tg.gradcheck(lambda a, b: tg.sin(a) * b, (x0, t))
    np.testing.assert_array_equal(x0, kept)
    assert t.grad is None and t.item if t.ndim == 0 else True
    np.testing.assert_array_equal(t.numpy(), [0.3, 0.7])


def test_in_place_in_f_does_not_corrupt_the_check():
    def f(x):
        y = x * 1.0
        y.mul_(2.0)
        return y

    assert tg.gradcheck(f, np.array([0.5, 1.5]))


# ---- graph views against PyTorch ---------------------------------------------------------------


def _struct(fn, leaves, names=True):
    if fn is None:
        return None
    if type(fn).__name__ == "AccumulateGrad" or fn.name() == "torch::autograd::AccumulateGrad":
        return ("leaf", leaves[id(fn.variable)])
    kids = tuple((_struct(f, leaves, names), k) for f, k in fn.next_functions if f is not None)
    return (fn.name() if names else "op", kids)


def _leaf_set(fn, leaves):
    if fn is None:
        return frozenset()
    if fn.name() == "torch::autograd::AccumulateGrad":
        return frozenset([leaves[id(fn.variable)]])
    out = frozenset()
    for f, _ in fn.next_functions:
        out |= _leaf_set(f, leaves)
    return out


def _inplace(y, op, arg):
    getattr(y, op)(arg)
    return y


def _setitem(y, i, v):
    y[i] = v
    return y


# program(L, x, w, c) -> tensor; level: "same" names and structure, "shape" structure with
# names masked (tapegrad's op differs: the names are documented in the second column),
# "leaves" only which leaves each input of the root reaches (tapegrad decomposes the op)
GRAPH_PROGRAMS = {
    "mul": (lambda L, x, w, c: x * w, "same"),
    "mul_const_tensor": (lambda L, x, w, c: x * c, "same"),
    "mul_scalar": (lambda L, x, w, c: x * 2.0, "same"),  # torch adds a (None, 0)
    "sin": (lambda L, x, w, c: L.sin(x), "same"),
    "add_inplace_nonleaf": (lambda L, x, w, c: _inplace(x * 2.0, "add_", w), "same"),
    "add_inplace_const": (lambda L, x, w, c: _inplace(x * w, "add_", 1.0), "same"),
    "mul_inplace": (lambda L, x, w, c: _inplace(x.sin(), "mul_", w), "same"),
    "sub_inplace": (lambda L, x, w, c: _inplace(x.sin(), "sub_", w), "same"),
    "div_inplace": (lambda L, x, w, c: _inplace(x.sin(), "div_", w), "same"),
    "view": (lambda L, x, w, c: (x * w).view(3, 1), "shape"),  # Reshape vs View
    "reshape": (lambda L, x, w, c: (x * w).reshape(1, 3), "shape"),
    "select": (lambda L, x, w, c: (x * w)[1], "shape"),  # View vs Select
    "slice": (lambda L, x, w, c: (x * w)[1:], "shape"),  # View vs Slice
    "leaf_select": (lambda L, x, w, c: x[1], "shape"),
    "flip": (lambda L, x, w, c: x.flip(0), "shape"),
    "unsqueeze": (lambda L, x, w, c: x.unsqueeze(0), "shape"),
    "clone": (lambda L, x, w, c: x.clone(), "shape"),
    "transpose": (lambda L, x, w, c: (x * w).reshape(3, 1).T, "shape"),
    "expand": (lambda L, x, w, c: x.reshape(3, 1).expand(3, 2), "shape"),
    "sum": (lambda L, x, w, c: (x * w).sum(), "same"),
    "exp_sum": (lambda L, x, w, c: L.exp(x).sum(), "same"),
    "dot": (lambda L, x, w, c: x @ w, "shape"),  # Mm vs Dot
    "cat": (lambda L, x, w, c: L.cat([x, w, c]), "same"),
    "stack": (lambda L, x, w, c: L.stack([x, w]), "leaves"),  # Cat of Reshapes
    "pow_tensor": (lambda L, x, w, c: x**w, "shape"),  # PowBackward0 vs 1
    "pow_scalar": (lambda L, x, w, c: x**2, "same"),
    "div": (lambda L, x, w, c: x / w, "same"),
    "sub": (lambda L, x, w, c: x - w, "same"),
    "neg": (lambda L, x, w, c: -x, "same"),
    "where": (lambda L, x, w, c: L.where(c > 3.5, x, w), "same"),
    "detach": (lambda L, x, w, c: x.detach() * w, "same"),
    "x_plus_x": (lambda L, x, w, c: x + x, "same"),
    "x_times_x": (lambda L, x, w, c: x * x, "same"),
    "abs": (lambda L, x, w, c: x.abs(), "same"),
    "relu": (lambda L, x, w, c: L.relu(x), "same"),
    "tanh": (lambda L, x, w, c: L.tanh(x), "same"),
    "mean": (lambda L, x, w, c: x.mean(), "leaves"),  # Mul(Sum)
    "index_array": (lambda L, x, w, c: x[L.tensor([0, 2])], "same"),
    "log_softmax": (lambda L, x, w, c: L.log_softmax(x, 0), "leaves"),
    "max_dim": (lambda L, x, w, c: (x * w).reshape(1, 3).max(dim=1)[0], "leaves"),
    "unbind": (lambda L, x, w, c: (lambda a: a[0] * a[2])((x * w).unbind(0)), "leaves"),
    "setitem": (lambda L, x, w, c: _setitem(x * 1.0, 1, w[0]), "shape"),  # IndexPut vs Copy
    "chain": (lambda L, x, w, c: L.tanh(L.exp(x * w) + c).sum() * x[0], "shape"),
    "shared_subexpr": (lambda L, x, w, c: (lambda s: s * s + s)(L.sin(x * w)), "same"),
    "matmul_2d": (lambda L, x, w, c: x.reshape(1, 3) @ w.reshape(3, 1), "leaves"),
}


def _graph_run(L, prog):
    lib = _lib(L)
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True, dtype=lib.float64)
    w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True, dtype=lib.float64)
    c = lib.tensor([3.0, 4.0, 5.0], dtype=lib.float64)
    y = prog(lib, x, w, c)
    return y, {id(x): "x", id(w): "w"}, (x, w)  # tapegrad's graph holds its leaves weakly


@pytest.mark.parametrize("name", sorted(GRAPH_PROGRAMS))
def test_graph_views_match_torch(name):
    prog, level = GRAPH_PROGRAMS[name]
    ty, tleaves, tkeep = _graph_run("tg", prog)
    oy, oleaves, okeep = _graph_run("torch", prog)
    if level == "leaves":
        tk = [_leaf_set(f, tleaves) for f, _ in ty.grad_fn.next_functions if f is not None]
        ok = [_leaf_set(f, oleaves) for f, _ in oy.grad_fn.next_functions if f is not None]
        assert frozenset().union(*tk) == frozenset().union(*ok)
    else:
        names = level == "same"
        assert _struct(ty.grad_fn, tleaves, names) == _struct(oy.grad_fn, oleaves, names)
    # the views agree with backward: the leaves reached are the leaves that get a gradient
    reached = _leaf_set(ty.grad_fn, tleaves)
    ty.sum().backward()
    assert reached == {n for n, t in zip("xw", tkeep, strict=True) if t.grad is not None}


def test_accumulate_grad_of_a_dropped_leaf():
    # PyTorch's graph keeps its leaves alive; tapegrad's holds them weakly: variable is None
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.sin(x)
    del x
    ((acc, _),) = y.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is None
    y.sum().backward()


def test_accumulate_grad_variable_is_the_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (acc, k), (none, k2) = (x * tg.tensor([3.0, 4.0])).grad_fn.next_functions
    assert acc.variable is x and acc.next_functions == () and k == 0
    assert none is None and k2 == 0
    assert x.grad_fn is None and (x * 2.0).detach().grad_fn is None
    with tg.no_grad():
        assert (x * 2.0).grad_fn is None


@pytest.mark.parametrize("L", ["tg", "torch"])
def test_custom_function_node_with_two_outputs(L):
    lib = _lib(L)

    class Pair(_fn_base(L)):
        @staticmethod
        def forward(ctx, a, b):
            return a * b, a + b

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2, g1 + g2

    x = lib.tensor([1.0, 2.0], requires_grad=True, dtype=lib.float64)
    p, q = Pair.apply(x, x.detach() * 2.0)
    assert p.grad_fn.name() == q.grad_fn.name() == "PairBackward"
    assert p.grad_fn == q.grad_fn
    nf = (q + p).grad_fn.next_functions
    assert [(f.name(), k) for f, k in nf] == [("PairBackward", 1), ("PairBackward", 0)]
    assert nf[0][0] == nf[1][0]
    assert len({nf[0][0], nf[1][0]}) == 1
    (acc,) = [f for f, _ in p.grad_fn.next_functions if f is not None]
    assert acc.variable is x


def test_checkpoint_node_matches_torch():
    import torch.utils.checkpoint as tc

    def body(lib):
        return lambda v: lib.tanh(lib.sin(v) * 2.0)

    x = tg.tensor(np.ones(3), requires_grad=True)
    y = tg.checkpoint(body(tg), x)
    xo = torch.ones(3, dtype=torch.float64, requires_grad=True)
    yo = tc.checkpoint(body(torch), xo, use_reentrant=True)
    assert y.grad_fn.name() == yo.grad_fn.name() == "CheckpointFunctionBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    assert yo.grad_fn.next_functions[0][0].variable is xo


@pytest.mark.parametrize("L", ["tg", "torch"])
def test_grad_fn_prehook(L):
    lib = _lib(L)
    x = lib.tensor([1.0, 2.0], requires_grad=True, dtype=lib.float64)
    y = x * x
    seen = []

    def hook(gs):
        seen.append(np.array(gs[0].detach().numpy()))
        return (gs[0] * 10.0,)

    h = y.grad_fn.register_prehook(hook)
    (y * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [60.0, 120.0])
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    h.remove()
    x.grad = None
    y = x * x
    (y * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


def test_grad_fn_hook_errors_name_the_fix():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"MulBackward0.register_hook.*tensor.register"):
        (x * x).grad_fn.register_hook(lambda gi, go: None)

    class Pair(tg.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2.0, a * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            return 2.0 * g1 + 3.0 * g2

    p, _ = Pair.apply(x)
    with pytest.raises(NotImplementedError, match="PairBackward.register_prehook"):
        p.grad_fn.register_prehook(lambda g: None)
    with pytest.raises(TypeError, match="pre-hook of MulBackward0"):
        y = x * x
        y.grad_fn.register_prehook(lambda g: g[0])
        y.sum().backward()


def test_inplace_on_view_changes_the_base_graph():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    v = y[0:2]
    v.mul_(3.0)
    # torch: CopySlices(MulBackward0(x), ...); tapegrad: an IndexPut of the new view values
    leaves = {id(x): "x"}
    assert y.grad_fn.name() == "IndexPutBackward0"
    assert _leaf_set(y.grad_fn, leaves) == {"x"}
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 2.0])


def test_grad_fn_of_a_kept_result_survives_other_programs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    kept = tg.sin(x * 3.0)
    for _ in range(50):  # other programs run backward and reclaim their rows
        z = tg.tensor(np.ones(4), requires_grad=True)
        (tg.exp(z) * 2.0).sum().backward()
    assert kept.grad_fn.name() == "SinBackward0"
    ((mul, _),) = kept.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and mul.next_functions[0][0].variable is x
    kept.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.cos([3.0, 6.0]))


# ---- tape inspection ----------------------------------------------------------------------------


def _program(x, w):
    return (tg.sin(x) * w).sum()


@on_fresh_tape
def test_stats_dump_dot_count_the_program_only():
    for _ in range(3):  # earlier programs, freed by their backward
        a = tg.tensor([1.0, 2.0], requires_grad=True)
        (tg.exp(a) * a).sum().backward()
        del a
    x = tg.tensor([0.5, 1.0, 1.5], requires_grad=True)
    w = tg.tensor([2.0, 3.0, 4.0], requires_grad=True)
    y = _program(x, w)
    t = tg.current_tape()
    st = t.stats()
    counts = {k: v["count"] for k, v in st["by_op"].items()}
    assert counts == {"LEAF": 2, "SIN": 1, "MUL": 1, "SUM": 1}, t.dump()
    assert st["rows"] == len(t) == 5
    lines = t.dump().splitlines()
    assert len(lines) == 6 and "EXP" not in t.dump()
    ops = [ln.split()[1] for ln in lines[1:]]
    assert ops == ["LEAF", "SIN", "LEAF", "MUL", "SUM"]
    assert "shape=() " in lines[-1] and f"{y.item():.4g}" in lines[-1]
    dot = t.to_dot()
    assert dot.count("->") == 4  # x->sin, sin->mul, w->mul, mul->sum
    assert dot.count("leaf %") == 2
    ydot = y.to_dot()
    assert ydot.count("->") == 4 and "SumBackward0" in ydot


@on_fresh_tape
def test_tensor_to_dot_shows_only_its_own_graph():
    x = tg.tensor([0.5, 1.0], requires_grad=True)
    a = tg.exp(x) * 2.0
    b = tg.cos(x)  # on the tape, not in a's graph
    dot = a.to_dot()
    assert "CosBackward0" not in dot and dot.count("->") == 2
    assert b.to_dot().count("->") == 1


@on_fresh_tape
def test_custom_rows_in_dump_and_dot():
    x = tg.tensor([0.5, 1.0], requires_grad=True)
    y = _square("tg")(x)
    z = y.sum()
    text = tg.current_tape().dump()
    assert "SquareBackward" in text
    dot = z.to_dot()
    assert "SquareBackward" in dot and dot.count("->") == 2
