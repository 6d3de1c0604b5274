"""tg.autograd.functional against torch.autograd.functional (float64): jacobian, hessian, vjp,
jvp, hvp and vhp on single and tuple inputs and outputs, with create_graph (differentiating the
results again) and strict mode; and tg.inference_mode beside torch's."""

import re

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as AF

torch = pytest.importorskip("torch")
TAF = torch.autograd.functional

RNG = np.random.default_rng(23)


def close(actual, expect, rtol=1e-12, atol=1e-13):
    if isinstance(expect, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expect)
        for a, e in zip(actual, expect, strict=True):
            close(a, e, rtol, atol)
        return
    assert isinstance(actual, tg.Tensor)
    assert tuple(actual.shape) == tuple(expect.shape)
    np.testing.assert_allclose(actual.numpy(), expect.detach().numpy(), rtol=rtol, atol=atol)


def f_vec(lib):
    return lambda x: lib.sin(x) * x.sum() + x**3


def f_two(lib):
    return lambda x, y: (x[:, None] * lib.exp(y) + x[:, None] ** 2 * y, (x**2).sum())


def f_scalar(lib):
    return lambda x: (lib.sin(x) * x**2).sum() + x.prod()


def f_scalar_two(lib):
    return lambda x, y: (lib.tanh(x)[:, None] * y**2).sum() + (x**3).sum() * y.sum()


X = RNG.standard_normal(3)
Y = RNG.standard_normal((3, 2))


def _args(lib, *arrays):
    return tuple(lib.tensor(a) for a in arrays)


CASES = [
    (f_vec, (X,), False),
    (f_two, (X[:2], Y[:1]), True),
    (f_scalar, (X,), False),
    (f_scalar_two, (X, Y), True),
]


@pytest.mark.parametrize("f, arrays, as_tuple", CASES)
def test_jacobian(f, arrays, as_tuple):
    ta, pa = _args(tg, *arrays), _args(torch, *arrays)
    ta, pa = (ta, pa) if as_tuple else (ta[0], pa[0])
    close(AF.jacobian(f(tg), ta), TAF.jacobian(f(torch), pa))
    close(AF.jacobian(f(tg), ta, vectorize=True), TAF.jacobian(f(torch), pa, vectorize=True))


@pytest.mark.parametrize("f, arrays, as_tuple", [CASES[2], CASES[3]])
def test_hessian(f, arrays, as_tuple):
    ta, pa = _args(tg, *arrays), _args(torch, *arrays)
    ta, pa = (ta, pa) if as_tuple else (ta[0], pa[0])
    close(AF.hessian(f(tg), ta), TAF.hessian(f(torch), pa))


def _v_like(lib, shapes_from):
    out = tuple(lib.tensor(RNG.standard_normal(tuple(s.shape))) for s in shapes_from)
    return out


@pytest.mark.parametrize("f, arrays, as_tuple", CASES)
@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_and_jvp(f, arrays, as_tuple, create_graph):
    ta, pa = _args(tg, *arrays), _args(torch, *arrays)
    out = f(torch)(*pa)
    outs = out if isinstance(out, tuple) else (out,)
    ws = [RNG.standard_normal(tuple(o.shape)) for o in outs]
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    tw = tuple(tg.tensor(w) for w in ws) if isinstance(out, tuple) else tg.tensor(ws[0])
    pw = tuple(torch.tensor(w) for w in ws) if isinstance(out, tuple) else torch.tensor(ws[0])
    tv = tuple(tg.tensor(v) for v in vs) if as_tuple else tg.tensor(vs[0])
    pv = tuple(torch.tensor(v) for v in vs) if as_tuple else torch.tensor(vs[0])
    ti, pi = (ta, pa) if as_tuple else (ta[0], pa[0])
    got = AF.vjp(f(tg), ti, tw, create_graph=create_graph)
    ref = TAF.vjp(f(torch), pi, pw, create_graph=create_graph)
    close(got, ref)
    got = AF.jvp(f(tg), ti, tv, create_graph=create_graph)
    ref = TAF.jvp(f(torch), pi, pv, create_graph=create_graph)
    close(got, ref)


@pytest.mark.parametrize("name", ["hvp", "vhp"])
@pytest.mark.parametrize("f, arrays, as_tuple", [CASES[2], CASES[3]])
def test_hvp_and_vhp(name, f, arrays, as_tuple):
    ta, pa = _args(tg, *arrays), _args(torch, *arrays)
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    tv = tuple(tg.tensor(v) for v in vs) if as_tuple else tg.tensor(vs[0])
    pv = tuple(torch.tensor(v) for v in vs) if as_tuple else torch.tensor(vs[0])
    ti, pi = (ta, pa) if as_tuple else (ta[0], pa[0])
    close(getattr(AF, name)(f(tg), ti, tv), getattr(TAF, name)(f(torch), pi, pv))


@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_create_graph_results_differentiate_again(name):
    """With create_graph the results carry the graph back to inputs that require grad: the
    gradient of a weighted sum of them matches torch's."""
    x0 = RNG.standard_normal(3)
    v0 = RNG.standard_normal(3)
    res = []
    for lib in (tg, torch):
        x = lib.tensor(x0, requires_grad=True)
        f = f_scalar(lib) if name in ("hessian", "hvp", "vhp") else f_vec(lib)
        fn = getattr(tg.autograd.functional if lib is tg else TAF, name)
        if name in ("jacobian", "hessian"):
            out = fn(f, x, create_graph=True)
        elif name == "vjp":
            out = fn(f, x, lib.tensor(v0), create_graph=True)[1]
        else:
            out = fn(f, x, lib.tensor(v0), create_graph=True)[1]
        w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        res.append((out, x.grad))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_unused_inputs_give_zeros_or_strict_errors():
    def f(lib):
        return lambda x, y: x * 2.0

    for lib, mod in ((tg, AF), (torch, TAF)):
        args = (lib.tensor([1.0, 2.0]), lib.tensor([3.0]))
        j = mod.jacobian(f(lib), args)
        np.testing.assert_array_equal(np.asarray(j[1]), np.zeros((2, 1)))
        _, g = mod.vjp(f(lib), args, lib.tensor([1.0, 1.0]))
        np.testing.assert_array_equal(np.asarray(g[1]), [0.0])

    def strict_errors(lib, mod):
        args = (lib.tensor([1.0, 2.0]), lib.tensor([3.0]))
        lin = lambda x: (x * 2.0).sum()  # noqa: E731
        v = (lib.tensor([1.0, 1.0]), lib.tensor([1.0]))
        return _errors(
            lambda: mod.jacobian(f(lib), args, strict=True),
            lambda: mod.vjp(f(lib), args, lib.tensor([1.0, 1.0]), strict=True),
            lambda: mod.jvp(f(lib), args, v, strict=True),
            lambda: mod.hessian(lin, lib.tensor([1.0, 2.0]), strict=True),
            lambda: mod.hvp(lin, lib.tensor([1.0]), strict=True),
            lambda: mod.vhp(lin, lib.tensor([1.0]), strict=True),
        )

    messages = [strict_errors(tg, AF), strict_errors(torch, TAF)]
    assert messages[0] == messages[1]


def _errors(*calls):
    """The messages of the RuntimeErrors the calls raise, torch's sizes written as tuples."""
    out = []
    for call in calls:
        with pytest.raises(RuntimeError) as err:
            call()
        out.append(re.sub(r"torch\.Size\(\[(\d+)\]\)", r"(\1,)", str(err.value)))
    return out


def test_v_checks_match_torch():
    def v_errors(lib, mod):
        x = lib.tensor([1.0, 2.0])
        double = lambda t: t * 2.0  # noqa: E731
        return _errors(
            lambda: mod.vjp(double, x),
            lambda: mod.vjp(double, x, lib.tensor([1.0])),
            lambda: mod.jvp(double, x),
            lambda: mod.jvp(double, (x,), (x, x)),
            lambda: mod.hvp(double, x, x),
            lambda: mod.hessian(double, x),
        )

    messages = [v_errors(tg, AF), v_errors(torch, TAF)]
    assert messages[0] == messages[1]


def test_scalar_input_defaults_v():
    for name in ("jvp", "hvp", "vhp"):
        got = getattr(AF, name)(lambda t: (t**3).sum(), tg.tensor([2.0]))
        ref = getattr(TAF, name)(lambda t: (t**3).sum(), torch.tensor([2.0], dtype=torch.float64))
        close(got, ref)
    close(
        AF.vjp(lambda t: (t**3).sum(), tg.tensor([2.0, 1.0])),
        TAF.vjp(lambda t: (t**3).sum(), torch.tensor([2.0, 1.0], dtype=torch.float64)),
    )


def test_inference_mode_as_torch():
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.inference_mode():
            assert not lib.is_grad_enabled()
            assert not (x * 2).requires_grad
            with lib.inference_mode(False):
                assert lib.is_grad_enabled()
                assert (x * 2).requires_grad
        assert lib.is_grad_enabled()

        @lib.inference_mode
        def a(t):
            return t * 2

        @lib.inference_mode()
        def b(t):
            return t * 2

        assert not a(x).requires_grad and not b(x).requires_grad
        assert lib.is_grad_enabled()
