"""one_hot, cosine_similarity, pairwise_distance, cdist and group_norm on worked examples,
without PyTorch."""

import math

import numpy as np

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F


def test_one_hot_worked_example():
    out = F.one_hot(tg.tensor([[1, 0], [2, 1]]))
    assert out.dtype == np.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy()[1, 0], [0, 0, 1])


def test_cosine_similarity_worked_example():
    x1 = tg.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    x2 = tg.tensor([[4.0, 3.0], [1.0, 1.0]], requires_grad=True)
    out = F.cosine_similarity(x1, x2)
    np.testing.assert_allclose(out.numpy(), [24.0 / 25.0, 0.0], rtol=1e-15)
    out.sum().backward()
    # d/dx1 of x1.u2 / |x1| = u2 / |x1| - (x1.u2) x1 / |x1|^3 at x1 = (3, 4), u2 = (0.8, 0.6)
    expect = np.array([0.8, 0.6]) / 5 - 4.8 * np.array([3.0, 4.0]) / 125
    np.testing.assert_allclose(x1.grad.numpy()[0], expect, rtol=1e-14)
    # at the zero vector: PyTorch's derivative x2 / (eps |x2|), the norm's own derivative 0
    np.testing.assert_allclose(x1.grad.numpy()[1], np.array([1.0, 1.0]) / math.sqrt(2) / 1e-8)
    np.testing.assert_array_equal(x2.grad.numpy()[1], [0.0, 0.0])


def test_distances_worked_example():
    a = tg.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    b = tg.tensor([[0.0, 0.0], [0.0, 0.0], [6.0, 8.0]])
    d = tg.cdist(a, b)
    np.testing.assert_allclose(d.numpy(), [[0, 0, 10], [5, 5, 5]], rtol=1e-15)
    d.sum().backward()
    # coincident points contribute 0; otherwise (a - b) / |a - b|
    np.testing.assert_allclose(a.grad.numpy(), [[-0.6, -0.8], [0.6, 0.8]], rtol=1e-15)
    np.testing.assert_allclose(
        F.pairwise_distance(tg.tensor([[3.0, 4.0]]), tg.tensor([[0.0, 0.0]]), eps=0.0).numpy(),
        [5.0],
    )
    np.testing.assert_allclose(tg.cdist(a, b, p=float("inf")).numpy()[1], [4.0, 4.0, 4.0])
    assert nn.PairwiseDistance(p=1.0, keepdim=True)(a, a).shape == (2, 1)


def test_group_norm_worked_example():
    gn = nn.GroupNorm(2, 4, eps=0.0)
    x = tg.tensor([[1.0, 3.0, 10.0, 30.0]])
    np.testing.assert_allclose(gn(x).numpy(), [[-1.0, 1.0, -1.0, 1.0]], rtol=1e-15)
    assert [n for n, _ in gn.named_parameters()] == ["weight", "bias"]
    assert nn.GroupNorm(1, 3, affine=False).weight is None
