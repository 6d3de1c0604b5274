"""one_hot, cosine_similarity, pairwise_distance, cdist and group_norm against PyTorch
(float64): values and gradients, at generic points and at PyTorch's singular ones (zero
vectors, coincident points, ties of the infinity norm)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(17)


def close(actual, expect, rtol=1e-12, atol=1e-14):
    expect = expect.detach().numpy() if isinstance(expect, torch.Tensor) else expect
    actual = actual.detach().numpy() if isinstance(actual, tg.Tensor) else actual
    assert np.shape(actual) == np.shape(expect)
    np.testing.assert_allclose(actual, expect, rtol=rtol, atol=atol)


def agree(f, g, *arrays, rtol=1e-12, atol=1e-14):
    ts = [tg.tensor(a, requires_grad=True) for a in arrays]
    ps = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = f(*ts), g(*ps)
    close(out, ref, rtol, atol)
    w = RNG.standard_normal(tuple(ref.shape))
    (out * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ts, ps, strict=True):
        assert not np.isnan(a.grad.numpy()).any()
        close(a.grad, np.zeros(a.shape) if b.grad is None else b.grad, rtol, atol)


@pytest.mark.parametrize("num_classes", [-1, 6])
@pytest.mark.parametrize("shape", [(5,), (2, 3), ()])
def test_one_hot(shape, num_classes):
    idx = RNG.integers(0, 5, shape)
    out = F.one_hot(tg.tensor(idx), num_classes)
    ref = TF.one_hot(torch.tensor(idx), num_classes)
    assert out.dtype == np.int64 and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("idx, num_classes", [([0, -1], -1), ([0, 3], 3), ([], -1)])
def test_one_hot_errors(idx, num_classes):
    with pytest.raises(RuntimeError):
        TF.one_hot(torch.tensor(idx, dtype=torch.int64), num_classes)
    with pytest.raises(RuntimeError):
        F.one_hot(tg.tensor(np.array(idx, dtype=np.int64)), num_classes)
    with pytest.raises(RuntimeError, match="index tensor"):
        F.one_hot(tg.tensor([0.0, 1.0]))


@pytest.mark.parametrize(
    "s1, s2, dim",
    [((4, 3), (4, 3), 1), ((4, 3), (4, 3), 0), ((2, 4, 3), (4, 3), -1), ((5,), (1,), 0)],
)
def test_cosine_similarity(s1, s2, dim):
    x1, x2 = RNG.standard_normal(s1), RNG.standard_normal(s2)
    agree(
        lambda a, b: F.cosine_similarity(a, b, dim),
        lambda a, b: TF.cosine_similarity(a, b, dim),
        x1,
        x2,
    )
    agree(
        lambda a, b: nn.CosineSimilarity(dim)(a, b),
        lambda a, b: torch.nn.CosineSimilarity(dim)(a, b),
        x1,
        x2,
    )


def test_cosine_similarity_at_zero_and_tiny_vectors():
    x1 = np.array([[0.0, 0.0, 0.0], [1e-10, -2e-10, 0.0], [1.0, 2.0, 3.0]])
    x2 = np.array([[1.0, 2.0, 0.5], [0.3, 0.1, -0.2], [0.0, 0.0, 0.0]])
    agree(F.cosine_similarity, TF.cosine_similarity, x1, x2)
    agree(
        lambda a, b: F.cosine_similarity(a, b, eps=0.5),
        lambda a, b: TF.cosine_similarity(a, b, eps=0.5),
        x1,
        x2,
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5, 0.5, 0.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    x1, x2 = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    x2[0] = x1[0]  # a pair at distance eps
    x2[1, :2] = x1[1, :2] + 1e-6  # entries of the difference + eps near 0
    agree(
        lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim),
        lambda a, b: TF.pairwise_distance(a, b, p, keepdim=keepdim),
        x1,
        x2,
    )
    agree(
        lambda a, b: nn.PairwiseDistance(p, eps=0.0)(a, b),
        lambda a, b: torch.nn.PairwiseDistance(p, eps=0.0)(a, b),
        x1,
        x2,
    )


def test_pairwise_distance_ties_and_broadcast():
    x1 = np.array([[1.0, -1.0, 0.5], [2.0, 2.0, 2.0]])
    x2 = np.array([0.0, 0.0, 0.0])
    for p in (float("inf"), 2.0, 1.0):
        agree(
            lambda a, b, p=p: F.pairwise_distance(a, b, p, eps=0.0),
            lambda a, b, p=p: TF.pairwise_distance(a, b, p, eps=0.0),
            x1,
            x2,
        )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5, 0.5, 0.0, float("inf")])
@pytest.mark.parametrize("s1, s2", [((4, 3), (5, 3)), ((2, 4, 3), (2, 6, 3)), ((2, 4, 3), (6, 3))])
def test_cdist(p, s1, s2):
    x1, x2 = RNG.standard_normal(s1), RNG.standard_normal(s2)
    agree(lambda a, b: tg.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), x1, x2)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5, 0.5, 0.0, float("inf")])
def test_cdist_at_coincident_points_and_ties(p):
    x1 = np.array([[0.0, 0.0], [1.0, 2.0], [1.0, -1.0]])
    x2 = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])  # 0 -> 0 coincide; ties for inf
    agree(lambda a, b: tg.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), x1, x2)


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        tg.cdist(tg.zeros(2, 3), tg.zeros(2, 4))
    with pytest.raises(RuntimeError, match="at least 2D"):
        tg.cdist(tg.zeros(3), tg.zeros(2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        tg.cdist(tg.zeros(2, 3), tg.zeros(2, 3), p=-1.0)
    with pytest.raises(ValueError, match="compute_mode"):
        tg.cdist(tg.zeros(2, 3), tg.zeros(2, 3), compute_mode="fast")


@pytest.mark.parametrize(
    "shape, groups", [((3, 6), 3), ((2, 4, 5), 2), ((2, 6, 3, 2), 6), ((1, 4, 3), 1)]
)
def test_group_norm(shape, groups):
    x = RNG.standard_normal(shape) * 3 + 1
    c = shape[1]
    w, b = RNG.standard_normal(c), RNG.standard_normal(c)
    agree(
        lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-3),
        lambda x, w, b: TF.group_norm(x, groups, w, b, eps=1e-3),
        x,
        w,
        b,
    )
    agree(lambda x: F.group_norm(x, groups), lambda x: TF.group_norm(x, groups), x)
    ours, theirs = nn.GroupNorm(groups, c), torch.nn.GroupNorm(groups, c).double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    agree(ours, theirs, x)
    close(ours.weight.grad, theirs.weight.grad)
    close(ours.bias.grad, theirs.bias.grad)


def test_group_norm_errors():
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(tg.zeros(2, 6), 4)
