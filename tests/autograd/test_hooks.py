import numpy as np
import pytest

import tapegrad as tg


def test_retain_grad_on_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    y.retain_grad()
    y.retain_grad()  # idempotent
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


def test_non_leaf_hook_changes_gradient_downstream_in_order():
    calls = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    y.retain_grad()
    y.register_hook(lambda g: calls.append(("first", g.numpy().tolist())) or g * 2.0)
    y.register_hook(lambda g: calls.append(("second", g.numpy().tolist())))
    h = y.register_hook(lambda g: g + 1.0)
    (y * y).sum().backward()
    assert calls == [("first", [6.0, 12.0]), ("second", [12.0, 24.0])]
    np.testing.assert_allclose(y.grad.numpy(), [13.0, 25.0])
    np.testing.assert_allclose(x.grad.numpy(), [39.0, 75.0])
    h.remove()


def test_leaf_hook_and_removal():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 10.0)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])
    h.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_hook_on_custom_function_outputs():
    class Split(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2.0 + gb * 3.0

    x = tg.tensor([1.0], requires_grad=True)
    a, b = Split.apply(x)
    a.register_hook(lambda g: g * 0.0)
    (a + b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0])


def _hooked(where):
    """a -> b = a * a -> b.sum(), with a hook multiplying the gradient by 5 on a or on b."""
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    if where == "leaf":
        a.register_hook(lambda g: g * 5.0)
    b = a * a
    if where == "non-leaf":
        b.register_hook(lambda g: g * 5.0)
    return a, b.sum()


HOOKED_PATHS = {
    "backward": lambda a, y: (y.backward(), a.grad)[1],
    "backward(create_graph)": lambda a, y: (y.backward(create_graph=True), a.grad)[1],
    "backward(inputs)": lambda a, y: (y.backward(inputs=[a]), a.grad)[1],
    "backward(inputs, create_graph)": lambda a, y: (
        y.backward(inputs=[a], create_graph=True),
        a.grad,
    )[1],
    "autograd.grad": lambda a, y: tg.autograd.grad(y, a)[0],
    "autograd.grad(create_graph)": lambda a, y: tg.autograd.grad(y, a, create_graph=True)[0],
}


@pytest.mark.parametrize("where", ["leaf", "non-leaf"])
@pytest.mark.parametrize("path", list(HOOKED_PATHS))
def test_hooks_run_on_every_backward_path(where, path):
    """A hook changes the gradient (2a * 5) whichever way it is computed, as in PyTorch: also
    with create_graph (the sweep on Tensors) and in autograd.grad of the hooked leaf."""
    a, y = _hooked(where)
    g = HOOKED_PATHS[path](a, y)
    np.testing.assert_allclose(np.asarray(g.detach().numpy()), [10.0, 20.0])


@pytest.mark.parametrize("where", ["leaf", "non-leaf"])
@pytest.mark.parametrize("path", list(HOOKED_PATHS))
def test_a_hook_returning_another_shape_raises_on_every_backward_path(where, path):
    """A hook that sums the gradient to a number raises, as in PyTorch, instead of leaving a
    scalar .grad on a leaf of shape (2,)."""
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    (a if where == "leaf" else b).register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match=r"hook .* shape \(\) for a tensor of shape \(2,\)"):
        HOOKED_PATHS[path](a, b.sum())


def test_a_hook_on_the_create_graph_path_keeps_the_gradient_differentiable():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    b.register_hook(lambda g: g * a)  # a differentiable hook: d/da sum(2a * a) = 4a
    (g,) = tg.autograd.grad(b.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 8.0])
    (h,) = tg.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), [4.0, 8.0])


@pytest.mark.parametrize("how", ["backward", "grad", "grad-create-graph"])
def test_hook_changing_its_gradient_in_place_changes_it(how):
    # as in PyTorch: a hook that changes its argument in place and returns None passes the
    # changed gradient on (d/dx sum((2x)^2) = 8x, times 10)
    def hook(g):
        g.mul_(10.0)

    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    y.register_hook(hook)
    z = (y * y).sum()
    if how == "backward":
        z.backward()
        g = x.grad
    else:
        (g,) = tg.autograd.grad(z, [x], create_graph=how == "grad-create-graph")
    np.testing.assert_allclose(g.numpy(), [80.0, 160.0, 240.0], rtol=1e-14)


def test_hook_changing_a_scalar_gradient_in_place_changes_it():
    def hook(g):
        g.add_(1.0)

    x = tg.tensor(2.0, requires_grad=True)
    y = x * 3.0
    y.register_hook(hook)
    (y * y).backward()  # dz/dy = 2y = 12, +1 = 13; dx = 13 * 3
    assert x.grad.item() == 39.0
