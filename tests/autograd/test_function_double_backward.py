"""Custom ``tg.Function`` under double and triple backward, side by side with PyTorch.

Hunted: what forward sees (an input that requires grad reports it, grad mode is off, NumPy
conversions of inputs work there and in a first-order backward, a gradient taken inside it
under enable_grad), and create_graph through a Function's backward: saved inputs and
outputs, Tensors kept as ctx attributes (also in a tuple), masks, constant backwards
(``g * 3``), ``needs_input_grad``, several outputs, ``mark_dirty``,
``mark_non_differentiable``, ``set_materialize_grads(False)``, ``setup_context``, the same
input twice, Functions whose backward calls Functions, ``backward(create_graph=True)``,
``tg.checkpoint`` and the transforms (``tg.grad`` of ``tg.grad``, ``tg.hessian``) over
NumPy code.

Each program in ``PROGRAMS`` is written once against the adapter ``L`` of
``tests/torch_programs.py`` and run in tapegrad and PyTorch (float64): ``_compare`` checks the
values and ``requires_grad`` of what it returns and the gradient of a random weighting of its
float outputs, so a program returning ``y, g = dy/dx, g2 = dg/dx`` (create_graph) checks the
third derivative too.

The refusals: a backward that takes a value off the graph during create_graph (``.detach()``,
``.numpy()``, ``.item()``, ``float()``, ``.data``, ``.tolist()``, ``tg.tensor(x)``, or a
float Tensor forward computed from the inputs and kept on ctx or saved) gives the right first
derivative, and a second one raises, naming the Function and the fix; PyTorch silently drops
that term (its numbers are checked against the closed form).  A NumPy array of an input kept
on ctx by forward is not refused (a strict xfail: such arrays usually are masks).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tests.torch_programs import _compare, _Lib  # noqa: E402


def _grad(L, y, x, **kw):
    return L.m.autograd.grad(y, x, create_graph=True, **kw)


def _flags(L, seen):
    return L.T([float(v) for s in seen for v in s], rg=False)


def _square(L):
    class Sq(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    return Sq


def _linear(L):
    """3 a, saving a though its backward (g * 3) does not need it."""

    class Lin(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 3

    return Lin


# ---- programs ------------------------------------------------------------------------------


def p_saved_input_triple(L):
    x = L.T([0.5, -1.5, 2.0])
    y = _square(L).apply(x.sin())
    (g,) = _grad(L, (y * y).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_saved_output_triple(L):
    class Ex(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            r = a.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return r * g

    x = L.T([0.1, -0.3])
    y = Ex.apply(x * x)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_constant_backward(L):
    x = L.T([0.5, 1.5])
    y = _linear(L).apply(x.sin())
    (g,) = _grad(L, (y * y).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_constant_backward_second_is_constant(L):
    x = L.T([0.5, 1.5])
    (g,) = _grad(L, _linear(L).apply(x).sum(), x)  # 3: carries no graph, as in PyTorch
    return [g]


def p_constant_backward_via_backward_api(L):
    x = L.T([0.5, 1.5])
    y = _linear(L).apply(x * x)
    (y * y).sum().backward(create_graph=True)
    return [x.grad]


def p_relu_mask(L):
    class R(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * (a > 0).to(a.dtype) if L.name == "torch" else g * (a > 0)

    x = L.T([-1.0, 2.0, 3.0])
    y = R.apply(x * x - 2)
    (g,) = _grad(L, (y * y).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_ctx_attribute_input(L):
    class Sq(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.a = a
            return a * a

        @staticmethod
        def backward(ctx, g):
            return 2 * ctx.a * g

    x = L.T([1.0, -2.0, 0.5])
    y = Sq.apply(x.cos())
    (g,) = _grad(L, (y * y).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_ctx_attribute_output(L):
    class Ex(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            r = a.exp()
            ctx.r = r
            return r

        @staticmethod
        def backward(ctx, g):
            return g * ctx.r

    x = L.T([0.1, 0.3])
    y = Ex.apply(x * x)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_ctx_attribute_tuple(L):
    class Mul(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.ab = (a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.ab
            return g * b, g * a

    x, w = L.T([0.1, 0.3]), L.T([2.0, -1.0])
    y = Mul.apply(x.sin(), w * x)
    (g,) = _grad(L, (y * y).sum(), x)
    g2 = _grad(L, g.sum(), [x, w])
    return [y, g, *g2]


def p_number_argument_on_ctx(L):
    class Scale(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            ctx.save_for_backward(a)
            return a * a * k

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * ctx.k * a * g, None

    x = L.T([0.5, 1.5])
    y = Scale.apply(x.cos(), 3.0)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_needs_input_grad(L):
    seen = []

    class F(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(list(ctx.needs_input_grad))
            a, b = ctx.saved_tensors
            return (
                g * b if ctx.needs_input_grad[0] else None,
                g * a if ctx.needs_input_grad[1] else None,
            )

    x, w = L.T([1.0, 2.0]), L.T([3.0, 4.0], rg=False)
    y = F.apply(x * x, w)
    (g,) = _grad(L, (y * x).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2, _flags(L, seen)]


def p_two_outputs(L):
    class SinCos(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sin(), a.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            (a,) = ctx.saved_tensors
            return gs * a.cos() - gc * a.sin()

    x = L.T([0.1, 0.7])
    s, c = SinCos.apply(x * 2)
    (g,) = _grad(L, (s * c).sum() + (c * c * x).sum(), x)
    (g2,) = _grad(L, (g * g).sum(), x)
    return [s, c, g, g2]


def p_backward_calls_functions(L):
    class Sin(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sin()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * Cos.apply(a)

    class Cos(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.cos()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return -g * Sin.apply(a)

    x = L.T([0.2, 1.1])
    y = Sin.apply(x)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    (g3,) = _grad(L, g2.sum(), x)
    return [y, g, g2, g3]


def p_mark_dirty(L):
    class Dbl(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            ctx.save_for_backward(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = L.T([0.5, 1.5])
    y = Dbl.apply(x * x)
    (g,) = _grad(L, (y * y * x).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_mark_non_differentiable(L):
    class F(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            m = (a > 0).to(a.dtype) if L.name == "torch" else (a > 0) * 1.0
            ctx.mark_non_differentiable(m)
            return a * a * a, m

        @staticmethod
        def backward(ctx, g, gm):
            (a,) = ctx.saved_tensors
            return 3 * a * a * g

    x = L.T([-0.5, 1.5])
    y, m = F.apply(x.sin())
    (g,) = _grad(L, (y * m).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, m, g, g2]


def p_materialize_grads_false(L):
    class F(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(a)
            return a * a, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            (a,) = ctx.saved_tensors
            out = 0
            if g1 is not None:
                out = out + 2 * a * g1
            if g2 is not None:
                out = out + 3 * g2
            return out

    x = L.T([0.5, 1.5])
    y1, _ = F.apply(x.exp())
    (g,) = _grad(L, (y1 * y1).sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y1, g, g2]


def p_setup_context(L):
    class F(L.m.autograd.Function):
        @staticmethod
        def forward(a, k):
            return a * a * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            a, k = inputs
            ctx.save_for_backward(a)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * ctx.k * a * g, None

    x = L.T([0.5, 1.5])
    y = F.apply(x.cos(), 3.0)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_same_input_twice(L):
    class Mul(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    x = L.T([0.5, 1.5])
    h = x.exp()
    y = Mul.apply(h, h)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_checkpoint_of_a_function(L):
    Sq = _square(L)

    def f(a):
        return Sq.apply(a.sin()) * a

    x = L.T([0.5, 1.5])
    # (PyTorch runs f itself: its checkpoint's first call costs seconds of imports)
    y = tg.checkpoint(f, x) if L.name == "tg" else f(x)
    (g,) = _grad(L, y.sum(), x)
    (g2,) = _grad(L, g.sum(), x)
    return [y, g, g2]


def p_what_forward_and_backward_see(L):
    seen = []

    class F(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append((a.requires_grad, b.requires_grad, L.m.is_grad_enabled()))
            v = np.asarray(a) * 2 + float(a[0]) + a.numpy() + a[1].item()
            ctx.save_for_backward(a)
            return L.m.tensor(v, dtype=L.m.float64)

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            seen.append((a.requires_grad, L.m.is_grad_enabled()))
            return g * float(np.asarray(a).sum()), None

    x, w = L.T([1.0, 2.0]), L.T([1.0, 1.0], rg=False)
    y = F.apply(x, w)
    y.sum().backward()
    return [y.detach(), x.grad, _flags(L, seen)]


def p_grad_inside_forward(L):
    class F(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            with L.m.enable_grad():  # the input itself, and a detached copy made a leaf
                (ga,) = L.m.autograd.grad((a * a).sum(), a)
                a2 = a.detach().requires_grad_()
                (gb,) = L.m.autograd.grad((a2**3).sum(), a2)
            ctx.save_for_backward(a)
            return ga.detach() + gb.detach()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * (2 + 6 * a)

    x = L.T([0.5, 1.5])
    y = F.apply(x)
    (g,) = _grad(L, (y * y).sum(), x)
    return [y, g]


PROGRAMS = [
    p_saved_input_triple,
    p_saved_output_triple,
    p_constant_backward,
    p_constant_backward_second_is_constant,
    p_constant_backward_via_backward_api,
    p_relu_mask,
    p_ctx_attribute_input,
    p_ctx_attribute_output,
    p_ctx_attribute_tuple,
    p_number_argument_on_ctx,
    p_needs_input_grad,
    p_two_outputs,
    p_backward_calls_functions,
    p_mark_dirty,
    p_mark_non_differentiable,
    p_materialize_grads_false,
    p_setup_context,
    p_same_input_twice,
    p_checkpoint_of_a_function,
    p_what_forward_and_backward_see,
    p_grad_inside_forward,
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__[2:])
def test_same_values_and_derivatives_as_torch(prog):
    _compare(prog)


def test_ctx_attribute_input_changed_after_forward_differentiates_at_the_forward_value():
    """ctx.a = a, a *= 10 before the double backward: tapegrad differentiates the forward that
    ran (PyTorch reads the new a, without a version check): d/dx of 2 a g at a = x * 1."""

    class Sq(tg.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.a = a
            return a * a

        @staticmethod
        def backward(ctx, g):
            return 2 * ctx.a * g

    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    y = Sq.apply(h)
    h.mul_(10)
    (g,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)  # 4 x^3
    (g2,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.numpy(), 4 * x.numpy() ** 3, rtol=1e-13)
    np.testing.assert_allclose(g2.numpy(), 12 * x.numpy() ** 2, rtol=1e-13)


# ---- transforms over NumPy code, gradcheck ------------------------------------------------


class _Cube(tg.Function):
    """x^3 computed on NumPy (np.asarray of an input that requires grad), backward in ops."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return tg.tensor(np.asarray(a) ** 3)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 3 * a * a * g


class _CubeNumpyBackward(tg.Function):
    """The same with a backward on NumPy: right once, refused when differentiated again."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return tg.tensor(np.asarray(a) ** 3)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * tg.tensor(3 * a.numpy() ** 2)


class _ScaleBySum(tg.Function):
    """x * sum(x), reading float(x.sum()) in forward (inside a transform too)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * float(a.sum())

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a.sum() + (g * a).sum()


X = np.array([0.5, -1.2, 2.0])


def _times_x(fn):
    return lambda x: (fn.apply(x) * x).sum()


def test_transforms_differentiate_a_function_on_numpy_inputs_three_times():
    f = _times_x(_Cube)  # x^4 summed
    np.testing.assert_allclose(tg.grad(f)(X), 4 * X**3, rtol=1e-13)
    np.testing.assert_allclose(np.diag(tg.hessian(f)(X)), 12 * X**2, rtol=1e-13)
    second = tg.grad(lambda v: tg.grad(f)(v).sum())
    np.testing.assert_allclose(second(X), 12 * X**2, rtol=1e-13)
    third = tg.grad(lambda v: second(v).sum())
    np.testing.assert_allclose(third(X), 24 * X, rtol=1e-13)
    g = tg.grad(lambda v: _ScaleBySum.apply(v).sum())
    np.testing.assert_allclose(g(X), np.full(3, 2 * X.sum()), rtol=1e-13)
    np.testing.assert_allclose(tg.grad(lambda v: g(v).sum())(X), np.full(3, 6.0), rtol=1e-13)


def test_transforms_refuse_the_second_derivative_of_a_numpy_backward():
    f = _times_x(_CubeNumpyBackward)
    np.testing.assert_allclose(tg.grad(f)(X), 4 * X**3, rtol=1e-13)
    with pytest.raises(RuntimeError, match=r"_CubeNumpyBackwardBackward .*\.numpy\(\)"):
        tg.grad(lambda v: tg.grad(f)(v).sum())(X)
    with pytest.raises(RuntimeError, match=r"_CubeNumpyBackwardBackward"):
        tg.hessian(f)(X)


def test_gradcheck_and_gradgradcheck_of_functions():
    assert tg.gradcheck(_Cube.apply, X)
    assert tg.testing.gradgradcheck(_Cube.apply, X)
    assert tg.testing.gradgradcheck(_ScaleBySum.apply, X)
    assert tg.testing.gradgradcheck(_square(_Lib("tg")).apply, X)


# ---- refusals: a backward that takes a value off the graph ----------------------------------


def _escaping(kind):
    """x^2 whose backward (2 x g) reads x off the graph in the way ``kind`` names."""

    class Esc(tg.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            if kind == "ctx_intermediate":
                ctx.t = a * 2.0
            elif kind == "ctx_numpy":
                ctx.t = a.numpy() * 2.0
            elif kind == "saved_intermediate":
                ctx.save_for_backward(a, a * 2.0)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a = ctx.saved_tensors[0]
            n = a.shape[0]
            if kind == "detach":
                c = a.detach() * 2
            elif kind == "numpy":
                c = tg.tensor(a.numpy() * 2)
            elif kind == "item":
                c = tg.tensor([2 * a[i].item() for i in range(n)])
            elif kind == "float":
                c = tg.tensor([2 * float(a[i]) for i in range(n)])
            elif kind == "data":
                c = tg.tensor(a.data * 2)
            elif kind == "tolist":
                c = tg.tensor(a.tolist()) * 2
            elif kind == "tensor":
                c = tg.tensor(a) * 2
            elif kind == "ctx_intermediate":
                c = ctx.t
            elif kind == "ctx_numpy":
                c = tg.tensor(ctx.t)
            elif kind == "no_grad":
                with tg.no_grad():
                    c = a * 2
            elif kind == "no_grad_decorator":
                c = tg.no_grad()(lambda: a * 2)()
            elif kind == "set_grad_enabled":
                with tg.set_grad_enabled(False):
                    c = a * 2
            else:  # saved_intermediate
                c = ctx.saved_tensors[1]
            return g * c

    return Esc


ESCAPES = {
    "detach": r"\.detach\(\)",
    "numpy": r"\.numpy\(\)",
    "item": r"\.item\(\)",
    "float": r"float\(\)",
    "data": r"\.data",
    "tolist": r"\.tolist\(\)",
    "tensor": r"tg\.tensor\(x\)",
    "ctx_intermediate": r"ctx\.t, computed by forward",
    "saved_intermediate": r"a saved tensor forward computed",
    "no_grad": r"tg\.no_grad\(\)",
    "no_grad_decorator": r"tg\.no_grad\(\)",
    "set_grad_enabled": r"tg\.no_grad\(\)",
}


@pytest.mark.parametrize("loss", ["sum", "square"])
@pytest.mark.parametrize("kind", sorted(ESCAPES))
def test_a_backward_off_the_graph_refuses_a_second_derivative(kind, loss):
    x = tg.tensor([0.5, -1.5, 2.0], requires_grad=True)
    y = _escaping(kind).apply(x)
    (g,) = tg.autograd.grad(y.sum() if loss == "sum" else (y * y).sum(), x, create_graph=True)
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), 2 * xv if loss == "sum" else 4 * xv**3, rtol=1e-13)
    assert g.requires_grad  # (False would let g * g + ... drop its term silently)
    with pytest.raises(RuntimeError, match=r"the backward of EscBackward .*" + ESCAPES[kind]):
        tg.autograd.grad(g.sum(), x)
    with pytest.raises(RuntimeError, match=r"ctx\.save_for_backward\(x\)"):
        tg.autograd.grad((g * g).sum() + (x * x).sum(), x)


def test_a_numpy_value_kept_by_forward_is_refused_in_a_second_derivative():
    # forward keeps ctx.t = a.numpy() * 2 and backward returns g * tg.tensor(ctx.t): the
    # second derivative of sum(y^2) missed the term through ctx.t (8 x^2 = [2, 18, 32] for
    # 12 x^2, PyTorch's number too); a float array kept after forward read an input that
    # requires grad now counts as taken off the graph
    x = tg.tensor([0.5, -1.5, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad((_escaping("ctx_numpy").apply(x) ** 2).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 4 * x.numpy() ** 3, rtol=1e-13)
    with pytest.raises(RuntimeError, match=r"the backward of EscBackward .*ctx\.t, computed"):
        tg.autograd.grad(g.sum(), x)


def test_a_mask_or_a_number_kept_by_forward_is_no_escape():
    # a boolean array (x > 0) and a float computed from a constant argument are decisions and
    # constants: the second derivative goes through, as PyTorch's
    class Relu3(tg.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.mask = a.numpy() > 0
            ctx.k = np.asarray(k) * 1.0  # a NumPy scalar from a plain argument, not from a
            ctx.save_for_backward(a)
            return a * a * a * tg.tensor(ctx.mask) * k

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 3 * a * a * tg.tensor(ctx.mask) * tg.tensor(ctx.k), None

    x = tg.tensor([0.5, -1.5, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(Relu3.apply(x, 2.0).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 12 * x.numpy() * (x.numpy() > 0), rtol=1e-13)


def test_printing_and_branching_in_backward_are_no_escape():
    class Sq(tg.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            repr(a)
            return 2 * a * g if bool((a > -100).all()) else None

    x = tg.tensor([0.5, -1.5], requires_grad=True)
    (g,) = tg.autograd.grad((Sq.apply(x) ** 2).sum(), x, create_graph=True)
    (g2,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), 12 * x.numpy() ** 2, rtol=1e-13)


def _torch_detaching_square():
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * torch.tensor(2 * a.detach().numpy())

    return Sq


def test_refuses_where_torch_silently_drops_the_term():
    """y = x^2 with a backward on NumPy, loss sum(y^2): d2/dx2 = 12 x^2; PyTorch gives 8 x^2
    (the term through the saved x is lost), tapegrad refuses."""
    xv = np.array([1.0, 2.0])
    xt = torch.tensor(xv, requires_grad=True)
    y = _torch_detaching_square().apply(xt)
    (g,) = torch.autograd.grad((y**2).sum(), xt, create_graph=True)
    (g2,) = torch.autograd.grad(g.sum(), xt)
    np.testing.assert_allclose(g2.numpy(), 8 * xv**2)  # not 12 x^2: silently wrong
    x = tg.tensor(xv, requires_grad=True)
    (g,) = tg.autograd.grad((_escaping("numpy").apply(x) ** 2).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 4 * xv**3, rtol=1e-13)
    with pytest.raises(RuntimeError, match="EscBackward"):
        tg.autograd.grad(g.sum(), x)
