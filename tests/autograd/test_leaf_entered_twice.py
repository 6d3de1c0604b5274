"""A leaf read through ``.data`` between two uses is entered on the tape again (its value may
have changed); its gradient is the sum over every row it holds, in each backward path: the
compiled sweep, ``create_graph`` (first and second order) and ``backward(inputs=)``."""

import numpy as np
import pytest

import tapegrad as tg

V = np.array([0.5, -1.3, 2.0])


def _program():
    leaf = tg.tensor(V, requires_grad=True)
    p = leaf.sin()
    leaf.data  # noqa: B018 - the read enters the leaf again at its next use
    return leaf, (p + leaf * leaf).sum()


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_sums_the_rows_of_a_leaf_entered_twice(create_graph):
    leaf, y = _program()
    (g,) = tg.autograd.grad(y, leaf, create_graph=create_graph)
    np.testing.assert_allclose(g.detach().numpy(), np.cos(V) + 2 * V, rtol=1e-14)
    if create_graph:
        (h,) = tg.autograd.grad(g.sum(), leaf)
        np.testing.assert_allclose(h.numpy(), -np.sin(V) + 2, rtol=1e-14)


@pytest.mark.parametrize("inputs", [False, True])
def test_backward_with_create_graph_sums_them_too(inputs):
    leaf, y = _program()
    y.backward(create_graph=True, inputs=[leaf] if inputs else None)
    np.testing.assert_allclose(leaf.grad.detach().numpy(), np.cos(V) + 2 * V, rtol=1e-14)
    (h,) = tg.autograd.grad(leaf.grad.sum(), leaf)
    np.testing.assert_allclose(h.numpy(), -np.sin(V) + 2, rtol=1e-14)
