import numpy as np

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
