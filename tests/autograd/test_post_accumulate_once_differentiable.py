"""``Tensor.register_post_accumulate_grad_hook`` and ``@once_differentiable``, against PyTorch.

Post-accumulate hooks: called with the leaf after a backward updated its ``.grad`` (the
compiled sweep, the hand-off of large gradients, ``create_graph``, ``backward(inputs=)``), not
by ``autograd.grad``, with grad mode as the backward's (on only under ``create_graph``), must
return None; refused on non-leaves.
``once_differentiable``: first derivatives as without it; under ``create_graph`` the gradient
refuses to be differentiated again (PyTorch raises there too), naming the Function.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd.function import OffGraphDerivativeError, once_differentiable

torch = pytest.importorskip("torch")


def _pair(values):
    return (
        tg.tensor(np.array(values), requires_grad=True),
        torch.tensor(np.array(values), requires_grad=True),
    )


def _record(log, grad_enabled):
    def hook(p):
        log.append((p.grad.tolist(), grad_enabled()))

    return hook


@pytest.mark.parametrize(
    "program",
    [
        lambda x: (x**2).sum().backward(),
        lambda x: (x**2).sum().backward(create_graph=True),
        lambda x: (x**3).sum().backward(inputs=[x]),
        lambda x: (x * 2 + x * 3).sum().backward(),  # one hook call for two uses
    ],
    ids=["backward", "create_graph", "inputs", "two_uses"],
)
def test_post_accumulate_hook_sees_the_accumulated_grad_as_in_torch(program):
    mine, theirs = [], []
    x, xt = _pair([1.0, -2.0, 0.5])
    x.register_post_accumulate_grad_hook(_record(mine, tg.is_grad_enabled))
    xt.register_post_accumulate_grad_hook(_record(theirs, torch.is_grad_enabled))
    for _ in range(2):  # the second call sees the sum of both backwards
        program(x)
        program(xt)
    assert len(mine) == len(theirs) == 2
    for (g, on), (gt, on_t) in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(g, gt, rtol=1e-14)
        assert on is on_t  # grad mode inside the hook: the backward's


def test_the_hook_runs_after_register_hook_and_its_in_place_change_stays():
    order = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: order.append(("post", p.grad.tolist())))
    x.register_hook(lambda g: order.append(("pre", g.tolist())))
    (x * 3).sum().backward()
    assert order == [("pre", [3.0, 3.0]), ("post", [3.0, 3.0])]

    def halve(p):
        p.grad.mul_(0.5)

    y = tg.tensor([1.0, 2.0], requires_grad=True)
    y.register_post_accumulate_grad_hook(halve)
    (y**2).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 2.0])


def test_an_optimizer_step_in_the_hook_matches_torch():
    w, wt = _pair(np.linspace(-1.0, 1.0, 6))
    opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD([wt], lr=0.1, momentum=0.9)

    def stepper(o):
        def step(p):
            o.step()
            o.zero_grad()

        return step

    w.register_post_accumulate_grad_hook(stepper(opt))
    wt.register_post_accumulate_grad_hook(stepper(opt_t))
    for _ in range(3):
        (tg.sin(w) * w).sum().backward()
        (torch.sin(wt) * wt).sum().backward()
    np.testing.assert_allclose(w.detach().numpy(), wt.detach().numpy(), rtol=1e-13)
    assert w.grad is None and wt.grad is None


def test_large_gradients_handed_off_still_call_the_hook():
    w = tg.tensor(np.ones(200_000), requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(float(p.grad.sum())))
    (w * 3.0).sum().backward()
    assert seen == [600_000.0]


def test_autograd_grad_and_unreached_leaves_call_no_hook_and_remove_works():
    calls = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    z = tg.tensor([1.0], requires_grad=True)
    h = x.register_post_accumulate_grad_hook(lambda p: calls.append("x"))
    z.register_post_accumulate_grad_hook(lambda p: calls.append("z"))
    tg.autograd.grad((x**2).sum(), x)
    (x.sum() + 0 * z.detach()).backward()
    assert calls == ["x"]
    h.remove()
    (x**2).sum().backward()
    assert calls == ["x"]


def test_post_accumulate_hook_errors_as_torch():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.tensor([1.0]).register_post_accumulate_grad_hook(lambda p: None)
    x.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="should return None"):
        (x**2).sum().backward()


class _CubeNumPy(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return tg.tensor(3.0 * x.numpy() ** 2 * g.numpy())


class _SquareOps(tg.Function):
    """Written with tapegrad ops, but marked: the mark is honoured."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class _CubeTorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(3.0 * x.numpy() ** 2 * g.numpy())


def test_once_differentiable_first_derivative_as_torch():
    x, xt = _pair([0.5, -1.5, 2.0])
    (_CubeNumPy.apply(x) * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    (_CubeTorch.apply(xt) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(tg.grad(lambda v: _SquareOps.apply(v).sum())(np.ones(2)), [2, 2])


@pytest.mark.parametrize("fn", [_CubeNumPy, _SquareOps], ids=["numpy", "tapegrad_ops"])
def test_once_differentiable_refuses_a_second_derivative_as_torch(fn):
    x, xt = _pair([0.5, -1.5])
    # PyTorch hands back a constant here (the incoming gradient needed no grad), so a later
    # term through x silently drops 6x: (g.sum() + x.sum()) differentiates to [1, 1]
    (gt,) = torch.autograd.grad(_CubeTorch.apply(xt).sum(), xt, create_graph=True)
    (gt.sum() + xt.sum()).backward()
    np.testing.assert_allclose(xt.grad.numpy(), [1.0, 1.0])
    (g,) = tg.autograd.grad(fn.apply(x).sum(), x, create_graph=True)
    with pytest.raises(OffGraphDerivativeError, match=r"_?\w+Backward.*remove @once_differ"):
        g.sum().backward()
    with pytest.raises(OffGraphDerivativeError, match="once_differentiable"):
        tg.hessian(lambda v: fn.apply(v).sum())(np.array([0.5, -1.5]))


def test_once_differentiable_backward_runs_with_grad_mode_off():
    seen = []

    class Probe(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            seen.append(tg.is_grad_enabled())
            return g * 2

    x = tg.tensor([1.0], requires_grad=True)
    Probe.apply(x).sum().backward(create_graph=True)
    assert seen == [False]
    assert tg.is_grad_enabled()
