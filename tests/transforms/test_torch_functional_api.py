"""PyTorch's functional autograd names on tapegrad, side by side with PyTorch.

Hunted: ``tg.autograd.functional`` (``jacobian`` with create_graph / strict / vectorize /
forward-mode, ``hessian`` with both outer strategies, ``vjp``, ``jvp``, ``hvp``, ``vhp``),
``tg.func`` (``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian`` with has_aux and argnums, ``functional_call``, ``vmap``), ``tg.vmap`` (JAX's
names), ``tg.autograd.set_detect_anomaly``.  Every program is
written once against ``L`` (``tests/torch_programs.py``) and run in tapegrad and in PyTorch
(float64): the results' structure (Tensor vs tuple vs list, as PyTorch returns them),
requires_grad, values, and the gradient of a fixed weighting of every output that requires
grad (a second derivative where the results were taken with create_graph / inside grad).
Where PyTorch raises, tapegrad raises the same error type with the same message (PyTorch's
text, or a fragment where tapegrad's names differ).  ``tg.gradcheck`` checks the
create_graph results against finite differences.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tests.torch_programs import _compare, _Lib, _raises  # noqa: E402

X3 = [0.3, -1.2, 0.7]
Y2 = [1.1, 0.4]
M23 = [[0.5, -0.3, 1.2], [0.8, 0.1, -0.7]]


def _f2(L):
    """Two inputs, two outputs: a vector and a scalar."""

    def f(x, y):
        return (L.m.sin(x) * y[0] + x**2, (x * y.sum()).exp().sum())

    return f


def _scalar(L):
    def f(x, y):
        return (L.m.sin(x) * y[0]).sum() * y[1] + (x**3).sum() + (x.sum() * y).prod()

    return f


def _cube(L):
    """A custom Function (x ** 3) with its own backward."""

    class Cube(L.m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x**2

    return Cube.apply


def _kinds(r):
    """The container types of a result, to compare tuples and lists exactly."""
    if isinstance(r, (tuple, list)):
        return (type(r).__name__, [_kinds(x) for x in r])
    return "T" if isinstance(r, (tg.Tensor, torch.Tensor)) else type(r).__name__


def _same_structure(prog):
    a, b = prog(_Lib("tg")), prog(_Lib("torch"))
    assert _kinds(a) == _kinds(b)


# ---- tg.autograd.functional ----------------------------------------------------------------------

AF = {
    # name: program(L, create_graph) -> results; the leaves require grad so that the
    # gradient of create_graph results (a second or third derivative) is compared too
    "jacobian_tuple_tuple": lambda L, cg: L.m.autograd.functional.jacobian(
        _f2(L), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
    "jacobian_tensor_tensor": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: L.m.tanh(x) * x[0], L.T(X3), create_graph=cg
    ),
    "jacobian_tensor_tuple_out": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: (x.sin(), x.prod()), L.T(M23), create_graph=cg
    ),
    "jacobian_tuple_in_tensor_out": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x, y: x * y.sum(), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
    "jacobian_unused_input": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x, y: x.exp(), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
    "jacobian_returns_input": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x, y: (x, y * 2), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
    "jacobian_vectorize": lambda L, cg: L.m.autograd.functional.jacobian(
        _f2(L), (L.T(X3), L.T(Y2)), create_graph=cg, vectorize=True
    ),
    "jacobian_0d": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: x**3, L.T(0.7), create_graph=cg
    ),
    "jacobian_linear": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: 3 * x, L.T(X3), create_graph=cg
    ),
    "jacobian_closure_param": lambda L, cg: (
        lambda w: L.m.autograd.functional.jacobian(lambda x: x * w, L.T(X3, rg=False), cg)
    )(L.T(X3)),
    "jacobian_view_output": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: (x.t()[0], x[:, 1:]), L.T(M23), create_graph=cg
    ),
    "jacobian_bool_output": lambda L, cg: L.m.autograd.functional.jacobian(
        lambda x: (x > 0, x * 2), L.T(X3), create_graph=cg
    ),
    "jacobian_same_output_twice": lambda L, cg: (
        lambda x: L.m.autograd.functional.jacobian(lambda x: (x.sin(), x.sin()), x, cg)
    )(L.T(X3)),
    "jacobian_custom_function": lambda L, cg: L.m.autograd.functional.jacobian(
        _cube(L), L.T(X3), create_graph=cg
    ),
    "hessian_custom_function": lambda L, cg: L.m.autograd.functional.hessian(
        lambda x: (_cube(L)(x) * x[0]).sum(), L.T(X3), create_graph=cg
    ),
    "jvp_identity": lambda L, cg: L.m.autograd.functional.jvp(
        lambda x: x, L.T(X3), L.T([1.0, 2.0, 3.0]), create_graph=cg
    ),
    "hessian_tuple": lambda L, cg: L.m.autograd.functional.hessian(
        _scalar(L), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
    "hessian_tensor": lambda L, cg: L.m.autograd.functional.hessian(
        lambda x: (x**3).prod() + x.sin().sum(), L.T(X3), create_graph=cg
    ),
    "hessian_linear": lambda L, cg: L.m.autograd.functional.hessian(
        lambda x: x.sum() * 2, L.T(X3), create_graph=cg
    ),
    "hessian_one_element_output": lambda L, cg: L.m.autograd.functional.hessian(
        lambda x: (x**2).sum().reshape(1, 1), L.T(X3), create_graph=cg
    ),
    "vjp_tuple": lambda L, cg: L.m.autograd.functional.vjp(
        _f2(L), (L.T(X3), L.T(Y2)), (L.T([1.0, -2.0, 0.5]), L.T(1.5)), create_graph=cg
    ),
    "vjp_tensor_v_none": lambda L, cg: L.m.autograd.functional.vjp(
        lambda x: (x**2).sum(), L.T(X3), create_graph=cg
    ),
    "vjp_unused": lambda L, cg: L.m.autograd.functional.vjp(
        lambda x, y: x.exp(), (L.T(X3), L.T(Y2)), L.T([1.0, 2.0, 3.0]), create_graph=cg
    ),
    "jvp_tuple": lambda L, cg: L.m.autograd.functional.jvp(
        _f2(L), (L.T(X3), L.T(Y2)), (L.T([1.0, -2.0, 0.5]), L.T([0.3, 0.2])), create_graph=cg
    ),
    "jvp_tensor_v_none": lambda L, cg: L.m.autograd.functional.jvp(
        lambda x: x.sin() * x, L.T(0.4), create_graph=cg
    ),
    "hvp_tuple": lambda L, cg: L.m.autograd.functional.hvp(
        _scalar(L), (L.T(X3), L.T(Y2)), (L.T([1.0, -2.0, 0.5]), L.T([0.3, 0.2])), create_graph=cg
    ),
    "vhp_tuple": lambda L, cg: L.m.autograd.functional.vhp(
        _scalar(L), (L.T(X3), L.T(Y2)), (L.T([1.0, -2.0, 0.5]), L.T([0.3, 0.2])), create_graph=cg
    ),
    "hvp_tensor": lambda L, cg: L.m.autograd.functional.hvp(
        lambda x: (x.exp() * x).sum(), L.T(X3), L.T([0.1, 0.2, 0.3]), create_graph=cg
    ),
    "vhp_tensor_v_none": lambda L, cg: L.m.autograd.functional.vhp(
        lambda x: x.exp() * x, L.T([0.4]), create_graph=cg
    ),
    "hvp_unused": lambda L, cg: L.m.autograd.functional.hvp(
        lambda x, y: (x**3).sum(), (L.T(X3), L.T(Y2)), (L.T(X3), L.T(Y2)), create_graph=cg
    ),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", sorted(AF))
def test_autograd_functional_matches_torch(name, create_graph):
    prog = AF[name]
    _compare(lambda L: prog(L, create_graph))
    _same_structure(lambda L: prog(L, create_graph))


FORWARD = {
    "jacobian_fwd_tuple_tuple": lambda L: L.m.autograd.functional.jacobian(
        _f2(L), (L.T(X3, rg=False), L.T(Y2, rg=False)), vectorize=True, strategy="forward-mode"
    ),
    "jacobian_fwd_tensor_tuple": lambda L: L.m.autograd.functional.jacobian(
        lambda x: (x.sin(), x.prod()), L.T(M23, rg=False), vectorize=True, strategy="forward-mode"
    ),
    "jacobian_fwd_tuple_tensor": lambda L: L.m.autograd.functional.jacobian(
        lambda x, y: x * y.sum(),
        (L.T(X3, rg=False), L.T(Y2, rg=False)),
        vectorize=True,
        strategy="forward-mode",
    ),
    "jacobian_fwd_unused": lambda L: L.m.autograd.functional.jacobian(
        lambda x, y: x.exp(),
        (L.T(X3, rg=False), L.T(Y2, rg=False)),
        vectorize=True,
        strategy="forward-mode",
    ),
    # an output that is the input itself (entered on the tape by the output's row lookup)
    "jacobian_fwd_identity": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3, rg=False), vectorize=True, strategy="forward-mode"
    ),
    "jacobian_fwd_input_and_more": lambda L: L.m.autograd.functional.jacobian(
        lambda x, y: (x, y * 2, x.sum()),
        (L.T(X3, rg=False), L.T(Y2, rg=False)),
        vectorize=True,
        strategy="forward-mode",
    ),
    "jacobian_fwd_view_and_constant": lambda L: L.m.autograd.functional.jacobian(
        lambda x: (x.t(), L.T(Y2, rg=False)), L.T(M23, rg=False), False, False, True, "forward-mode"
    ),
    "jacobian_fwd_0d": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x.exp() * 2, L.T(0.5, rg=False), vectorize=True, strategy="forward-mode"
    ),
    "hessian_fwd_outer": lambda L: L.m.autograd.functional.hessian(
        _scalar(L),
        (L.T(X3, rg=False), L.T(Y2, rg=False)),
        vectorize=True,
        outer_jacobian_strategy="forward-mode",
    ),
    "hessian_fwd_outer_tensor": lambda L: L.m.autograd.functional.hessian(
        lambda x: (x**3).prod(),
        L.T(X3, rg=False),
        vectorize=True,
        outer_jacobian_strategy="forward-mode",
    ),
}


def _detached(r):
    if isinstance(r, (tuple, list)):
        return type(r)(_detached(x) for x in r)
    return r.detach()


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_autograd_functional_forward_mode_matches_torch(name):
    """(PyTorch's forward-mode Hessian requires grad, connected to its internal copies of the
    inputs only: the values are compared, detached.)"""
    prog = FORWARD[name]
    _compare(lambda L: _detached(prog(L)))
    _same_structure(prog)  # PyTorch's forward mode gives lists for tuples of inputs


def _raised(prog):
    e_t, e_g = _raises(prog, "torch"), _raises(prog, "tg")
    assert e_t is not None, "torch computes this program"
    assert e_g is not None, f"tapegrad computes where torch raises {e_t!r}"
    return e_g, e_t


AF_ERRORS = {
    # PyTorch raises: the same type and message
    "strict_unused_input": lambda L: L.m.autograd.functional.jacobian(
        lambda x, y: x.exp(), (L.T(X3), L.T(Y2)), strict=True
    ),
    "strict_output_constant": lambda L: L.m.autograd.functional.jacobian(
        lambda x: L.T(X3, rg=False), L.T(X3), strict=True
    ),
    "strict_linear_create_graph": lambda L: L.m.autograd.functional.jacobian(
        lambda x: 3 * x, L.T(X3), strict=True, create_graph=True
    ),
    "strict_vectorize": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3), strict=True, vectorize=True
    ),
    "strict_vjp_unused": lambda L: L.m.autograd.functional.vjp(
        lambda x, y: x.exp(), (L.T(X3), L.T(Y2)), L.T(X3), strict=True
    ),
    "strict_jvp_unused": lambda L: L.m.autograd.functional.jvp(
        lambda x, y: x.exp(), (L.T(X3), L.T(Y2)), (L.T(X3), L.T(Y2)), strict=True
    ),
    "strict_hessian_linear": lambda L: L.m.autograd.functional.hessian(
        lambda x: x.sum() * 2, L.T(X3), strict=True
    ),
    "strict_vhp_linear": lambda L: L.m.autograd.functional.vhp(
        lambda x: x.sum(), L.T(X3), L.T(X3), strict=True
    ),
    "strict_hvp_unused": lambda L: L.m.autograd.functional.hvp(
        lambda x, y: (x**3).sum(), (L.T(X3), L.T(Y2)), (L.T(X3), L.T(Y2)), strict=True
    ),
    "fwd_without_vectorize": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3), strategy="forward-mode"
    ),
    "fwd_create_graph": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3), strategy="forward-mode", vectorize=True, create_graph=True
    ),
    "fwd_strict": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3), strategy="forward-mode", vectorize=True, strict=True
    ),
    "bad_strategy": lambda L: L.m.autograd.functional.jacobian(
        lambda x: x, L.T(X3), strategy="fwd"
    ),
    "v_none_vector_output": lambda L: L.m.autograd.functional.vjp(lambda x: x * 2, L.T(X3)),
    "v_none_vector_input": lambda L: L.m.autograd.functional.jvp(lambda x: x * 2, L.T(X3)),
    "v_wrong_count": lambda L: L.m.autograd.functional.vjp(_f2(L), (L.T(X3), L.T(Y2)), (L.T(X3),)),
    "v_single_for_tuple": lambda L: L.m.autograd.functional.jvp(
        lambda x: x, L.T(X3), (L.T(X3), L.T(X3))
    ),
    "hessian_vector_output": lambda L: L.m.autograd.functional.hessian(lambda x: x * 2, L.T(X3)),
    "hessian_tuple_output": lambda L: L.m.autograd.functional.hessian(
        lambda x: (x.sum(),), L.T(X3)
    ),
    "hvp_vector_output": lambda L: L.m.autograd.functional.hvp(lambda x: x, L.T(X3), L.T(X3)),
    "vhp_tuple_output": lambda L: L.m.autograd.functional.vhp(
        lambda x: (x.sum(),), L.T(X3), L.T(X3)
    ),
    "input_not_tensor": lambda L: L.m.autograd.functional.jacobian(lambda x: x, [1.0, 2.0]),
    "tuple_input_not_tensor": lambda L: L.m.autograd.functional.vjp(
        lambda x, y: x, (L.T(X3), 2.0), L.T(X3)
    ),
    "output_not_tensor": lambda L: L.m.autograd.functional.jacobian(lambda x: 3.0, L.T(X3)),
    "tuple_output_not_tensor": lambda L: L.m.autograd.functional.vjp(
        lambda x: (x, 3.0), L.T(X3), (L.T(X3), L.T(X3))
    ),
}


@pytest.mark.parametrize("name", sorted(AF_ERRORS))
def test_autograd_functional_errors_match_torch(name):
    e_g, e_t = _raised(AF_ERRORS[name])
    assert type(e_g) is type(e_t), (e_g, e_t)
    assert str(e_g) == str(e_t).replace("isonly", "is only")  # (a typo in PyTorch's)


def test_autograd_functional_v_size_error_names_the_entry():
    e_g, e_t = _raised(
        lambda L: L.m.autograd.functional.vjp(_f2(L), (L.T(X3), L.T(Y2)), (L.T(Y2), L.T(1.0)))
    )
    assert type(e_g) is type(e_t) is RuntimeError
    assert str(e_g).startswith("Entry 0 in v has invalid size: should be ")
    assert str(e_t).startswith("Entry 0 in v has invalid size: should be ")


def test_autograd_functional_integer_input_is_refused():
    with pytest.raises(RuntimeError, match="jacobian: input 0 has dtype int64.*x.double"):
        tg.autograd.functional.jacobian(lambda x: x * 2, tg.tensor([1, 2]))


def test_autograd_functional_results_pass_gradcheck():
    """The create_graph results differentiated again, against finite differences."""

    def jac(x, y):
        return tg.autograd.functional.jacobian(_f2(_Lib("tg")), (x, y), create_graph=True)

    def hvp(x, v):
        return tg.autograd.functional.hvp(
            lambda x: (x.sin() * x.prod()).sum(), x, v, create_graph=True
        )[1]

    x = tg.tensor(X3, requires_grad=True)
    y = tg.tensor(Y2, requires_grad=True)
    assert tg.gradcheck(jac, (x, y))
    assert tg.gradcheck(hvp, (x, tg.tensor([0.1, -0.2, 0.3], requires_grad=True)))


def test_func_under_no_grad():
    """torch.func's transforms differentiate under no_grad too; so do tg.func's."""
    x = tg.tensor(X3)
    with tg.no_grad():
        g = tg.func.grad(lambda x: (x**3).sum())(x)
        _, t = tg.func.jvp(lambda x: x.sin(), (x,), (tg.ones(3),))
        J = tg.func.vmap(tg.func.jacrev(lambda r: r * r.sum()))(tg.tensor(M23))
    np.testing.assert_allclose(g.numpy(), 3 * np.array(X3) ** 2)
    np.testing.assert_allclose(t.numpy(), np.cos(X3))
    Jt = torch.func.vmap(torch.func.jacrev(lambda r: r * r.sum()))(
        torch.tensor(M23, dtype=torch.float64)
    )
    np.testing.assert_allclose(J.numpy(), Jt.numpy(), rtol=1e-14)


def test_autograd_functional_under_no_grad():
    """As PyTorch: the derivatives are taken under no_grad too (func runs with grad enabled);
    the results are detached."""
    x = tg.tensor(X3)
    with tg.no_grad():
        J = tg.autograd.functional.jacobian(lambda x: x**2, x)
        _, hv = tg.autograd.functional.hvp(lambda x: (x**3).sum(), x, tg.ones(3))
    np.testing.assert_allclose(J.numpy(), np.diag(2 * np.array(X3)))
    np.testing.assert_allclose(hv.numpy(), 6 * np.array(X3))
    assert not J.requires_grad and not hv.requires_grad


# ---- tg.func -------------------------------------------------------------------------------------


def _aux_pair(L):
    return lambda x: ((x.sin() * x).sum(), x.cos())


FUNC = {
    "grad": lambda L: L.m.func.grad(lambda x: (x.sin() * x).sum())(L.T(X3)),
    "grad_argnums_tuple": lambda L: L.m.func.grad(_scalar(L), argnums=(0, 1))(L.T(X3), L.T(Y2)),
    "grad_argnums_1": lambda L: L.m.func.grad(_scalar(L), argnums=1)(L.T(X3), L.T(Y2)),
    "grad_has_aux": lambda L: L.m.func.grad(_aux_pair(L), has_aux=True)(L.T(X3)),
    "grad_of_grad": lambda L: L.m.func.grad(L.m.func.grad(lambda x: x.sin() * x**2))(L.T(0.7)),
    "grad_closure_param": lambda L: (
        lambda w: L.m.func.grad(lambda x: (x * w).sin().sum())(L.T(X3, rg=False))
    )(L.T(X3)),
    "grad_tuple_arg": lambda L: L.m.func.grad(lambda p: (p[0] * p[1].sum()).sum())(
        (L.T(X3), L.T(Y2))
    ),
    "grad_and_value": lambda L: L.m.func.grad_and_value(lambda x: (x.exp() * x).sum())(L.T(X3)),
    "grad_and_value_aux": lambda L: L.m.func.grad_and_value(_aux_pair(L), has_aux=True)(L.T(X3)),
    "vjp": lambda L: (lambda r: (r[0], r[1](L.T([1.0, 2.0, -1.0], rg=False))))(
        L.m.func.vjp(lambda x, y: x * y.sum(), L.T(X3), L.T(Y2))
    ),
    "vjp_tuple_out": lambda L: (lambda r: (r[0], r[1]((L.T(X3, rg=False), L.T(2.0, rg=False)))))(
        L.m.func.vjp(_f2(L), L.T(X3), L.T(Y2))
    ),
    "vjp_has_aux": lambda L: (lambda r: (r[0], r[1](L.T(X3, rg=False)), r[2]))(
        L.m.func.vjp(lambda x: (x.exp(), x.sum()), L.T(X3), has_aux=True)
    ),
    "jvp": lambda L: L.m.func.jvp(_f2(L), (L.T(X3), L.T(Y2)), (L.T(X3), L.T([0.5, -1.0]))),
    "jvp_has_aux": lambda L: L.m.func.jvp(
        lambda x: (x.exp() * x, x.sum()), (L.T(X3),), (L.T([1.0, 0.0, 2.0]),), has_aux=True
    ),
    "jvp_integer_output": lambda L: L.m.func.jvp(
        lambda x: (x * 2, (x > 0).long()), (L.T(X3),), (L.T(X3),)
    ),
    "jacrev_dict_input": lambda L: (lambda r: (r["a"], r["b"]))(
        L.m.func.jacrev(lambda d: d["a"] * d["b"].sum())({"a": L.T(X3), "b": L.T(Y2)})
    ),
    "hessian_0d": lambda L: L.m.func.hessian(lambda x: x.sin() * x**2)(L.T(0.3)),
    "grad_of_constant": lambda L: L.m.func.grad(lambda x: x.detach().sum())(L.T(X3)),
    "grad_kwargs_unbatched": lambda L: L.m.func.grad(lambda x, s=1.0: (x * s).sin().sum())(
        L.T(X3), s=L.T(2.0)
    ),
    "vjp_fn_twice": lambda L: (
        lambda r: (r[1](L.T(X3, rg=False)), r[1](L.T([1.0, 1.0, 1.0], rg=False)))
    )(L.m.func.vjp(lambda x: x.exp() * x, L.T(X3))),
    "jvp_identity": lambda L: L.m.func.jvp(lambda x: x, (L.T(X3),), (L.T([1.0, 2.0, 3.0]),)),
    "jacfwd_identity": lambda L: L.m.func.jacfwd(lambda x: x)(L.T(X3)),
    "jacrev_identity": lambda L: L.m.func.jacrev(lambda x, y: (x, y), argnums=(0, 1))(
        L.T(X3), L.T([1.0])
    ),
    "hessian_linear": lambda L: L.m.func.hessian(lambda x: x.sum())(L.T(X3)),
    "jvp_unbatched_no_graph": lambda L: L.m.func.jvp(
        lambda x: x.sin(), (L.T(X3, rg=False),), (L.T(Y2 + [1.0], rg=False),)
    ),
    "jacrev": lambda L: L.m.func.jacrev(lambda x: x.sin() * x.sum())(L.T(X3)),
    "jacrev_argnums": lambda L: L.m.func.jacrev(_f2(L), argnums=(0, 1))(L.T(X3), L.T(Y2)),
    "jacrev_has_aux": lambda L: L.m.func.jacrev(lambda x: (x.sin(), x.sum()), has_aux=True)(
        L.T(X3)
    ),
    "jacfwd": lambda L: L.m.func.jacfwd(lambda x: x.sin() * x.sum())(L.T(X3)),
    "jacfwd_argnums": lambda L: L.m.func.jacfwd(_f2(L), argnums=(0, 1))(L.T(X3), L.T(Y2)),
    "jacfwd_has_aux": lambda L: L.m.func.jacfwd(lambda x: (x.sin(), x.sum()), has_aux=True)(
        L.T(X3)
    ),
    "jacrev_of_jacfwd": lambda L: L.m.func.jacrev(L.m.func.jacfwd(lambda x: x.sin() * x.prod()))(
        L.T(X3)
    ),
    "hessian": lambda L: L.m.func.hessian(lambda x: (x**3).prod() + x.sin().sum())(L.T(X3)),
    "hessian_argnums": lambda L: L.m.func.hessian(_scalar(L), argnums=(0, 1))(L.T(X3), L.T(Y2)),
}


@pytest.mark.parametrize("name", sorted(FUNC))
def test_func_matches_torch(name):
    _compare(FUNC[name])
    _same_structure(FUNC[name])


FUNC_ERRORS = {
    "grad_vector_output": lambda L: L.m.func.grad(lambda a: a * 2)(L.T(X3)),
    "grad_one_element_vector": lambda L: L.m.func.grad(lambda a: a[:1])(L.T(X3)),
    "grad_float_output": lambda L: L.m.func.grad(lambda a: 2.0)(L.T(X3)),
    "grad_aux_not_pair": lambda L: L.m.func.grad(lambda a: a.sum(), has_aux=True)(L.T(X3)),
    "grad_and_value_aux_triple": lambda L: L.m.func.grad_and_value(
        lambda a: (a.sum(), 1, 2), has_aux=True
    )(L.T(X3)),
    "jvp_primals_list": lambda L: L.m.func.jvp(lambda a: a, [L.T(X3)], [L.T(X3)]),
}


@pytest.mark.parametrize("name", sorted(FUNC_ERRORS))
def test_func_errors_match_torch(name):
    e_g, e_t = _raised(FUNC_ERRORS[name])
    assert type(e_g) is type(e_t) and str(e_g) == str(e_t), (e_g, e_t)


@pytest.mark.parametrize(
    "prog, fragment",
    [
        (lambda L: L.m.func.grad(lambda a: a.sum(), argnums=1)(L.T(X3)), "argnums 1 is out"),
        (lambda L: L.m.func.jvp(lambda a: a, (L.T(X3),), (L.T(X3), L.T(X3))), "same python"),
        (lambda L: L.m.func.jvp(lambda a: a, (L.T(X3),), [L.T(X3)]), "same python"),
        (lambda L: L.m.func.jvp(lambda a: a, (L.T(X3),), (L.T(Y2),)), "tangent 0 has shape"),
        (lambda L: L.m.func.vjp(lambda a: a * 2, L.T(X3))[1](L.T(Y2)), "cotangent leaf 0"),
        (lambda L: L.m.func.grad(lambda a: a.sum())(L.m.ones(3).long()), "integer"),
    ],
)
def test_func_errors_raise_where_torch_does(prog, fragment):
    e_g, _ = _raised(prog)
    assert fragment in str(e_g)


def _modules():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    tm = tm.double()
    gm = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    for (_, p), (_, q) in zip(tm.named_parameters(), gm.named_parameters(), strict=True):
        q.data = tg.tensor(p.detach().numpy().copy())
    return {"torch": tm, "tg": gm}


@pytest.fixture(scope="module")
def modules():
    return _modules()


def _fc_program(mods, kind):
    def prog(L):
        mod = mods["tg" if L.m is tg else "torch"]
        names = [n for n, _ in mod.named_parameters()]
        params = {
            n: L.T(np.cos(np.arange(np.prod(p.shape)) + k).reshape(tuple(p.shape)))
            for k, (n, p) in enumerate(mod.named_parameters())
        }
        x = L.T(M23, rg=False)
        if kind == "call":
            return L.m.func.functional_call(mod, params, (x,))
        if kind == "partial":  # only the first layer's weight replaced
            return L.m.func.functional_call(mod, {names[0]: params[names[0]]}, x)
        if kind == "grad":  # the gradient with respect to the parameters, differentiated again
            g = L.m.func.grad(lambda p, x: (L.m.func.functional_call(mod, p, (x,)) ** 2).sum())(
                params, x
            )
            return tuple(g[n] for n in names)
        if kind == "two_dicts":
            a = {n: params[n] for n in names[:2]}
            b = {n: params[n] for n in names[2:]}
            return L.m.func.functional_call(mod, (a, b), (x,))
        if kind == "vmap_per_sample_grad":
            loss = lambda p, xi: L.m.func.functional_call(mod, p, (xi,)).sin().sum()  # noqa: E731
            g = L.m.func.vmap(L.m.func.grad(loss), in_dims=(None, 0))(params, x)
            return tuple(g[n] for n in names)
        raise AssertionError(kind)

    return prog


@pytest.mark.parametrize("kind", ["call", "partial", "grad", "two_dicts", "vmap_per_sample_grad"])
def test_functional_call_matches_torch(modules, kind):
    _compare(_fc_program(modules, kind))
    # the module's own parameters are back
    for (_, p), (_, q) in zip(
        modules["torch"].named_parameters(), modules["tg"].named_parameters(), strict=True
    ):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        assert q.requires_grad


def test_functional_call_restores_after_an_exception():
    lin = tg.nn.Linear(3, 2)
    w = lin.weight

    class Boom(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin
            self.register_buffer("scale", tg.tensor(2.0))

        def forward(self, x):
            self.lin(x)
            raise ValueError(f"boom {float(self.scale)}")

    m = Boom()
    with pytest.raises(ValueError, match="boom 5.0"):
        tg.func.functional_call(
            m, {"lin.weight": tg.zeros(2, 3), "scale": tg.tensor(5.0)}, tg.ones(3)
        )
    assert m.lin.weight is w and float(m.scale) == 2.0


def test_functional_call_tied_weights():
    """A parameter shared under two names takes the value given for either (tie_weights)."""

    class Tied(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tg.nn.Linear(2, 2, bias=False)
            self.b = tg.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    W = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    x = tg.tensor([1.0, -1.0])
    out = tg.func.functional_call(m, {"a.weight": W}, (x,))
    np.testing.assert_allclose(out.numpy(), W.numpy() @ W.numpy() @ x.numpy())
    with pytest.raises(ValueError, match="multiple values for keys"):
        tg.func.functional_call(m, {"a.weight": W, "b.weight": W * 2}, (x,))


@pytest.mark.parametrize(
    "params, kwargs, error, text",
    [
        ({"0.weight": "W"}, {"strict": True}, RuntimeError, "Missing key(s): '0.bias', "),
        ({"nope": "W"}, {"strict": True}, RuntimeError, "Unexpected key(s): 'nope'."),
        ([{"0.weight": "W"}, {"0.weight": "W"}], {}, ValueError, "appeared in multiple"),
        ([1], {}, ValueError, "Expected all elements of parameter_and_buffer_dicts"),
    ],
)
def test_functional_call_errors_match_torch(modules, params, kwargs, error, text):
    def make(L, mod):
        W = L.T(np.ones((4, 3)), rg=False)
        if isinstance(params, dict):
            return {k: W for k in params}
        return [{k: W for k in d} if isinstance(d, dict) else d for d in params]

    for name, L in (("torch", torch), ("tg", tg)):
        mod = modules[name]
        with pytest.raises(error) as e:
            L.func.functional_call(mod, make(_Lib(name), mod), (L.ones(2, 3).double(),), **kwargs)
        assert text in str(e.value)


def test_functional_call_updates_passed_batchnorm_buffers():
    """BatchNorm's running statistics are updated in the Tensors passed in, as PyTorch's."""
    x = np.array(M23 * 2)
    res = {}
    for name, L in (("torch", torch), ("tg", tg)):
        bn = L.nn.BatchNorm1d(3)
        bn = bn.double() if name == "torch" else bn
        T = torch.tensor if name == "torch" else tg.tensor
        bufs = {"running_mean": T(np.zeros(3)), "running_var": T(np.ones(3))}
        out = L.func.functional_call(bn, bufs, (T(x),))
        res[name] = [out.detach().numpy(), *(b.numpy() for b in bufs.values())]
        assert float(bn.running_mean.abs().sum()) == 0.0  # the module's own: untouched
    for a, b in zip(res["tg"], res["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


# ---- vmap ----------------------------------------------------------------------------------------

VMAP = {
    "dim0": lambda L: L.m.func.vmap(lambda r: (r * r).sum() + r.sin())(L.T(M23)),
    "dim1": lambda L: L.m.func.vmap(lambda c: c.prod(), in_dims=1)(L.T(M23)),
    "dim_negative": lambda L: L.m.func.vmap(lambda c: c.exp() * c[0], in_dims=-1)(L.T(M23)),
    "none_dim": lambda L: L.m.func.vmap(lambda r, w: r @ w, in_dims=(0, None))(
        L.T(M23), L.T([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]])
    ),
    "out_dims_1": lambda L: L.m.func.vmap(lambda r: r.sin() * 2, out_dims=1)(L.T(M23)),
    "out_dims_negative": lambda L: L.m.func.vmap(lambda r: r.outer(r), out_dims=-1)(L.T(M23)),
    "out_dims_tuple": lambda L: L.m.func.vmap(lambda r: (r.sum(), r * 3), out_dims=(0, 1))(
        L.T(M23)
    ),
    "out_none_unbatched": lambda L: L.m.func.vmap(
        lambda r, w: (r * w, w.exp()), in_dims=(0, None), out_dims=(0, None)
    )(L.T(M23), L.T(X3)),
    "tuple_input": lambda L: L.m.func.vmap(lambda p: p[0] * p[1], in_dims=((0, 1),))(
        (L.T(M23), L.T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    ),
    "dict_input": lambda L: L.m.func.vmap(lambda d: d["a"] * d["b"].sum())(
        {"a": L.T(M23), "b": L.T([[1.0, 2.0], [3.0, 4.0]])}
    ),
    "tuple_output": lambda L: L.m.func.vmap(lambda r: (r.max(), r.argmax(), r.sort()[0]))(L.T(M23)),
    "constant_output": lambda L: L.m.func.vmap(lambda r: L.T([1.0, 2.0], rg=False))(L.T(M23)),
    "kwargs_unbatched": lambda L: L.m.func.vmap(lambda r, s=1.0: r * s)(L.T(M23), s=L.T(X3)),
    "nested": lambda L: L.m.func.vmap(
        L.m.func.vmap(lambda a, b: a * b.exp(), (0, None)), (None, 0)
    )(L.T(X3), L.T(Y2)),
    "nested_matrix": lambda L: L.m.func.vmap(L.m.func.vmap(lambda v: v.sin() * v))(L.T(M23)),
    "vmap_of_grad": lambda L: L.m.func.vmap(L.m.func.grad(lambda r: (r**3).sum() * r[0]))(L.T(M23)),
    "grad_of_vmap": lambda L: L.m.func.grad(
        lambda x: L.m.func.vmap(lambda r: (r.sin() * r).sum())(x).prod()
    )(L.T(M23)),
    "jacrev_of_vmap": lambda L: L.m.func.jacrev(L.m.func.vmap(lambda r: r.exp() * r.sum()))(
        L.T(M23)
    ),
    "vmap_of_jacrev": lambda L: L.m.func.vmap(L.m.func.jacrev(lambda r: r.sin() * r.sum()))(
        L.T(M23)
    ),
    "vmap_of_hessian": lambda L: L.m.func.vmap(L.m.func.hessian(lambda r: (r**3).prod()))(L.T(M23)),
    "vmap_of_jvp": lambda L: L.m.func.vmap(lambda x, t: L.m.func.jvp(L.m.sin, (x,), (t,))[1])(
        L.T(M23), L.T([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]])
    ),
    "nested_in_dims": lambda L: L.m.func.vmap(lambda p, q: p[0] * p[1] + q, in_dims=((0, None), 1))(
        (L.T(M23), L.T(X3)), L.T([[1.0, 2.0]] * 3)
    ),
    "writes_through_to_the_input": lambda L: (lambda x: (L.m.func.vmap(lambda r: r.mul_(2))(x), x))(
        L.T(M23) * 1
    ),
    "identity_dim1": lambda L: L.m.func.vmap(lambda r: r, in_dims=1, out_dims=1)(L.T(M23)),
    "grad_with_closure_param": lambda L: (
        lambda w: L.m.func.vmap(lambda r: L.m.func.grad(lambda z: (z * w).sin().sum())(r))(L.T(M23))
    )(L.T(X3)),
    "batched_matmul": lambda L: L.m.func.vmap(lambda a, b: a @ b)(
        L.T([M23, M23]), L.T([[[1.0], [2.0], [3.0]], [[0.0], [1.0], [-1.0]]])
    ),
    "vmap_of_jacfwd": lambda L: L.m.func.vmap(L.m.func.jacfwd(lambda r: r.sin() * r[0]))(L.T(M23)),
    "jacfwd_of_vmap": lambda L: L.m.func.jacfwd(L.m.func.vmap(lambda r: r.sin() * r[0]))(L.T(M23)),
    "hessian_of_vmap": lambda L: L.m.func.hessian(
        lambda x: L.m.func.vmap(lambda r: (r**3).prod())(x).sum()
    )(L.T(M23)),
    "per_sample_cross_entropy_grad": lambda L: L.m.func.vmap(
        L.m.func.grad(lambda x, t: L.F.cross_entropy(x[None], t[None]))
    )(L.T(M23), L.I([2, 0])),
    "integer_batched_index": lambda L: L.m.func.vmap(lambda x, i: x[i] * x.sum())(
        L.T(M23), L.I([2, 0])
    ),
    "vmap_of_vjp": lambda L: L.m.func.vmap(lambda x, c: L.m.func.vjp(L.m.exp, x)[1](c)[0])(
        L.T(M23), L.T(M23)
    ),
    "vmap_of_jacrev_argnums": lambda L: L.m.func.vmap(
        L.m.func.jacrev(lambda a, b: a * b.sum(), argnums=(0, 1))
    )(L.T(M23), L.T(M23)),
    "int_output": lambda L: L.m.func.vmap(lambda r: (r > 0).sum())(L.T(M23)),
    "empty_batch": lambda L: L.m.func.vmap(lambda r: r * 2)(L.T(np.zeros((0, 3)))),
    "in_dims_int_for_two": lambda L: L.m.func.vmap(lambda a, b: a * b, in_dims=1)(
        L.T(M23), L.T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ),
    "randomness_same": lambda L: (
        L.m.manual_seed(0),
        L.m.func.vmap(lambda r: r + L.m.rand(3).double() * 0, randomness="same")(L.T(M23)),
    )[1],
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_torch(name):
    _compare(VMAP[name])
    _same_structure(VMAP[name])


def test_vmap_randomness_modes():
    """ "same" draws once for every item; "different" per item; "error" refuses a draw."""
    x = tg.zeros(3, 2)
    tg.manual_seed(0)
    same = tg.func.vmap(lambda r: r + tg.rand(2), randomness="same")(x).numpy()
    assert np.array_equal(same[0], same[1]) and np.array_equal(same[0], same[2])
    diff = tg.func.vmap(lambda r: r + tg.rand(2), randomness="different")(x).numpy()
    assert not np.array_equal(diff[0], diff[1])
    with pytest.raises(RuntimeError, match="called random operation while in randomness error"):
        tg.func.vmap(lambda r: r + tg.rand(2))(x)


VMAP_ERRORS = {
    "mismatched_sizes": lambda L: L.m.func.vmap(lambda a, b: a + b)(
        L.T(np.ones((2, 3))), L.T(np.ones((3, 3)))
    ),
    "non_tensor_batched": lambda L: L.m.func.vmap(lambda a, b: a * b)(L.T(M23), 2.0),
    "in_dims_none": lambda L: L.m.func.vmap(lambda a: a, in_dims=None)(L.T(M23)),
    "nothing_batched": lambda L: L.m.func.vmap(lambda a: a, in_dims=(None,))(L.T(M23)),
    "dim_out_of_range": lambda L: L.m.func.vmap(lambda a: a, in_dims=2)(L.T(M23)),
    "dim_of_0d": lambda L: L.m.func.vmap(lambda a: a)(L.T(1.0)),
    "in_dims_str": lambda L: L.m.func.vmap(lambda a: a, in_dims="a")(L.T(M23)),
    "in_dims_list": lambda L: L.m.func.vmap(lambda a, b: a, in_dims=[0, None])(L.T(M23), 1.0),
    "in_dims_float": lambda L: L.m.func.vmap(lambda a: a, in_dims=0.0)(L.T(M23)),
    "float_output": lambda L: L.m.func.vmap(lambda a: 1.0)(L.T(M23)),
    "none_output": lambda L: L.m.func.vmap(lambda a: None)(L.T(M23)),
    "out_dims_out_of_range": lambda L: L.m.func.vmap(lambda a: a, out_dims=2)(L.T(M23)),
    "random_in_error_mode": lambda L: L.m.func.vmap(lambda a: a + L.m.rand(3).double())(L.T(M23)),
    "bad_randomness": lambda L: L.m.func.vmap(lambda a: a, randomness="foo"),
    "chunk_size_0": lambda L: L.m.func.vmap(lambda a: a, chunk_size=0),
    "no_inputs": lambda L: L.m.func.vmap(lambda: L.T(X3))(),
}


@pytest.mark.parametrize("name", sorted(VMAP_ERRORS))
def test_vmap_errors_match_torch(name):
    e_g, e_t = _raised(VMAP_ERRORS[name])
    assert type(e_g) is type(e_t) and str(e_g) == str(e_t), (e_g, e_t)


@pytest.mark.parametrize(
    "prog",
    [
        lambda L: L.m.func.vmap(lambda a, b: a, in_dims=(0,))(L.T(M23), L.T(M23)),
        lambda L: L.m.func.vmap(lambda a: (a, a), out_dims=(0, 1, 0))(L.T(M23)),
    ],
)
def test_vmap_structure_errors_match_torch(prog):
    e_g, e_t = _raised(prog)
    assert type(e_g) is type(e_t) is ValueError
    assert str(e_g).split(" has structure")[0] == str(e_t).split(" has structure")[0]


def test_vmap_out_dims_none_of_a_batched_output_raises():
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        tg.func.vmap(lambda a: a * 2, out_dims=None)(tg.tensor(M23))


def test_vmap_refuses_an_in_place_write_into_an_unbatched_input():
    """PyTorch's vmap writes once (``a.add_(1.0)``: [[1, 1, 1], [1, 1, 1]], acc = 1); a loop
    would write per item ([[1, 1, 1], [2, 2, 2]], acc = 2): refused."""
    acc = tg.zeros(3)
    with pytest.raises(RuntimeError, match="wrote in place into an input that is not batched"):
        tg.func.vmap(lambda r, a: a.add_(1.0) * r, in_dims=(0, None))(tg.ones(2, 3), acc)
    at = torch.zeros(3)
    out = torch.func.vmap(lambda r, a: a.add_(1.0) * r, in_dims=(0, None))(torch.ones(2, 3), at)
    assert out.tolist() == [[1.0] * 3] * 2 and at.tolist() == [1.0] * 3


def test_vmap_data_dependent_shapes_raise():
    with pytest.raises(ValueError, match="different shapes for different batch items"):
        tg.func.vmap(lambda a: a[a > 0.2])(tg.tensor(M23))


def test_jax_vmap_on_numpy_code():
    """``tg.vmap``: JAX's in_axes / out_axes, NumPy arrays in and out, keyword arguments
    batched along axis 0, composed with tg.grad both ways."""
    X = np.array(M23)

    def f(r):
        return np.sum(np.sin(r) * r**2)

    def df(r):
        return np.cos(r) * r**2 + 2 * r * np.sin(r)

    np.testing.assert_allclose(tg.vmap(f)(X), [f(r) for r in X], rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(X), df(X), rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(f), in_axes=1, out_axes=1)(X), df(X), rtol=1e-14)
    np.testing.assert_allclose(tg.grad(lambda x: tg.vmap(f)(x).sum())(X), df(X), rtol=1e-14)
    got = tg.vmap(lambda a, b, *, s: a * b + s, in_axes=[0, None])(X, 2.0, s=np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, X * 2 + np.array([[1.0], [2.0]]))
    with pytest.raises(ValueError, match="in_axis=0 .* non-array arguments"):
        tg.vmap(lambda a, b: a * b)(X, 2.0)


# ---- the other names -----------------------------------------------------------------------------


def test_set_detect_anomaly():
    x = tg.tensor([1.0, 0.0], requires_grad=True)
    with tg.autograd.set_detect_anomaly(True):
        assert tg.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            tg.sqrt(x).sum().backward()
    assert not tg.is_anomaly_enabled()
    mode = tg.autograd.set_detect_anomaly(True)  # a call switches at once, as PyTorch's
    try:
        assert tg.is_anomaly_enabled()
    finally:
        tg.autograd.set_detect_anomaly(False)
    assert not tg.is_anomaly_enabled() and mode.mode
