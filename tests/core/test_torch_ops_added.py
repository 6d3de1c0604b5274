"""PyTorch Tensor operations added to tapegrad, side by side with PyTorch (float64).

Hunted: ``scatter_reduce`` / ``scatter_reduce_`` (every reduce, include_self both ways,
repeated indices, ties, zeros in a product, integer and float32 tensors), ``index_put`` /
``index_put_``, ``put`` / ``put_`` (accumulate, negative and boolean indices, repeated
positions), ``unfold`` (windows as a view: gradients, writes into the base seen through it,
writes through it), ``bucketize`` and ``searchsorted`` (integer results, NaN, sorter),
``unique`` / ``unique_consecutive`` (inverse, counts, dim; a backward through the values
raises as in PyTorch), ``histc`` and ``mode``.  Values, shapes, dtype kinds and the
gradients of a random weighting of every float output are compared with torch
(``tests/torch_programs.py``); second derivatives (create_graph) and ``tg.gradcheck``
against finite differences; where PyTorch raises, tapegrad must raise with a message that
names the function.  Where PyTorch's own gradient is wrong (scatter_reduce amax / amin with
include_self=False counts an x element that took no part), the closed form is the reference.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tests.torch_programs import _compare, _Lib, _raises  # noqa: E402

X = [[1.0, 5.0, 0.0], [2.0, 2.0, 7.0]]
SRC = [[5.0, 2.0, 0.0, 5.0], [2.0, 3.0, 2.0, 2.0]]  # ties and a zero
IDX1 = [[1, 0, 1, 2], [0, 0, 2, 2]]  # along dim 1, repeated
IDX0 = [[1, 0, 1], [1, 1, 0]]  # along dim 0
REDUCE = ["sum", "prod", "mean", "amax", "amin"]


def _scatter_reduce(reduce, include_self, dim):
    def prog(L):
        idx, src = (L.I(IDX1), L.T(SRC)) if dim == 1 else (L.I(IDX0), L.T(np.array(SRC)[:, :3]))
        return L.T(X).scatter_reduce(dim, idx, src, reduce, include_self=include_self)

    return prog


# amax / amin without self, where x's untouched element equals the extreme: PyTorch counts it
# among the ties and gives src part of the gradient only (checked by closed form below)
TORCH_MISCOUNTS = {("amax", False, 1), ("amin", False, 1), ("amin", False, 0)}


@pytest.mark.parametrize("dim", [1, 0])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCE)
def test_scatter_reduce_is_torchs(reduce, include_self, dim):
    if (reduce, include_self, dim) in TORCH_MISCOUNTS:
        pytest.skip("torch's gradient is wrong here: test_scatter_reduce_ties_without_self")
    _compare(_scatter_reduce(reduce, include_self, dim))


def test_scatter_reduce_ties_without_self_share_the_whole_gradient():
    """x.scatter_reduce(..., "amax", include_self=False): the value is the maximum of src at
    each position; tied maxima share the whole gradient (a subgradient sums to it).  PyTorch
    also counts x's element when it equals the maximum, and hands src half of it."""
    x = tg.tensor([1.0, 5.0, 3.0], requires_grad=True)
    src = tg.tensor([5.0, 2.0, 5.0, 4.0], requires_grad=True)
    y = x.scatter_reduce(0, tg.tensor([1, 0, 1, 2]), src, "amax", include_self=False)
    np.testing.assert_array_equal(y.numpy(), [2.0, 5.0, 4.0])
    y.backward(tg.tensor([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(src.grad.numpy(), [5.0, 1.0, 5.0, 100.0])  # 10 shared
    xt = torch.tensor([1.0, 5.0, 3.0], requires_grad=True)
    st = torch.tensor([5.0, 2.0, 5.0, 4.0], requires_grad=True)
    yt = xt.scatter_reduce(0, torch.tensor([1, 0, 1, 2]), st, "amax", include_self=False)
    yt.backward(torch.tensor([1.0, 10.0, 100.0]))
    assert st.grad[0] < 5.0  # (torch's: 10 / 3 each, a third lost to x's equal element)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCE)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_scatter_reduce_of_integers_and_float32_is_torchs(reduce, include_self, dtype):
    x = (np.array(X) * 3 - 4).astype(dtype)
    src = (np.array(SRC) * 5 - 7).astype(dtype)
    want = torch.from_numpy(x).scatter_reduce(
        1, torch.tensor(IDX1), torch.from_numpy(src), reduce, include_self=include_self
    )
    got = tg.from_numpy(x).scatter_reduce(
        1, tg.tensor(IDX1), tg.from_numpy(src), reduce, include_self=include_self
    )
    assert got.dtype == x.dtype  # (an integer mean rounds down, as PyTorch's)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_scatter_reduce_second_order_and_gradcheck():
    idx = tg.tensor([0, 0, 2, 2, 2])
    for reduce in REDUCE:
        for inc in (True, False):

            def f(x, s, reduce=reduce, inc=inc):
                return x.scatter_reduce(0, idx, s, reduce, include_self=inc)

            x = np.array([0.7, -1.3, 2.1])
            s = np.array([0.4, 1.9, -0.8, 1.2, 0.3])  # no ties: smooth here
            assert tg.gradcheck(f, (x, s))
            # second order against torch
            xg, sg = tg.tensor(x, requires_grad=True), tg.tensor(s, requires_grad=True)
            xt, st = torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)
            (gg,) = tg.autograd.grad((f(xg, sg) ** 2).sum(), sg, create_graph=True)
            yt = xt.scatter_reduce(0, torch.tensor([0, 0, 2, 2, 2]), st, reduce, include_self=inc)
            (gt,) = torch.autograd.grad((yt**2).sum(), st, create_graph=True)
            np.testing.assert_allclose(gg.detach().numpy(), gt.detach().numpy(), rtol=1e-10)
            h_g = tg.autograd.grad(gg.sum(), (xg, sg), allow_unused=True)
            h_t = torch.autograd.grad(gt.sum(), (xt, st), allow_unused=True)
            for a, b in zip(h_g, h_t, strict=True):
                if b is None:
                    assert a is None or not np.any(a.numpy())
                else:
                    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_scatter_reduce_prod_with_zeros_and_in_place():
    def prog(L):
        x = L.T([0.0, 2.0, 3.0])
        y = x * 1.0
        y.scatter_reduce_(0, L.I([0, 0, 1, 1]), L.T([0.0, 2.0, 0.0, 4.0]), "prod")
        return y

    _compare(prog)
    _compare(lambda L: L.T(2.0).scatter_reduce(0, L.I([0, 0]), L.T([5.0, 3.0]), "prod"))
    _compare(lambda L: L.T(2.0).scatter_add(0, L.I(0), L.T(1.0)))  # a 0-d tensor
    _compare(lambda L: L.T([1.0, 2.0]).scatter_reduce(0, L.I([]), L.T([]), "mean"))


@pytest.mark.parametrize(
    "prog,fragment",
    [
        (lambda L: L.T(X).scatter_reduce(1, L.I(IDX1), L.T(SRC), "max"), "reduce must be"),
        (lambda L: L.T(X).scatter_reduce(1, L.I([[0, -1]]), L.T(SRC), "sum"), "index -1"),
        (lambda L: L.T(X).scatter_reduce(1, L.I([[0, 3]]), L.T(SRC), "sum"), "out of range"),
        (lambda L: L.T(X).scatter_reduce(1, L.I(IDX1), L.T([[1.0]]), "sum"), "src of shape"),
        (lambda L: L.I(X).scatter_reduce(1, L.I(IDX1), L.T(SRC), "sum"), "dtype"),
        (lambda L: L.T(2.0).scatter_add(0, L.I(1), L.T(1.0)), "out of"),
    ],
)
def test_scatter_reduce_refuses_what_torch_refuses(prog, fragment):
    assert _raises(prog, "torch") is not None
    with pytest.raises((RuntimeError, IndexError, TypeError), match=fragment):
        prog(tg_lib())


def tg_lib():
    return _Lib("tg")


# ---- index_put, put ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "prog",
    [
        lambda L: L.T(np.zeros((3, 4))).index_put((L.I([0, 2]), L.I([1, -1])), L.T([5.0, 6.0])),
        lambda L: L.T(np.ones((3, 4))).index_put((L.I([0, 0]),), L.T([5.0]), accumulate=True),
        lambda L: L.T(np.ones((3, 4))).index_put((L.I([2, 0, 2]),), L.T([1.0, 2, 3, 4]), True),
        lambda L: L.T(np.ones((3, 4))).index_put((L.B([True, False, True]),), L.T(5.0)),
        lambda L: L.T(np.ones((3, 4))).index_put([L.I([1])], L.T([[1.0, 2, 3, 4]])),
        lambda L: L.T(np.ones((3, 4))).index_put((L.I([0, 0]),), L.T(5.0, rg=False)),
        lambda L: L.I(np.zeros((2, 2))).index_put((L.I([1]),), L.I([3, 4]), accumulate=True),
        lambda L: (lambda y: (y.index_put_((L.I([1]), L.I([0])), L.T([9.0])), y)[1])(
            L.T(np.ones((2, 2))) * 2.0
        ),
        lambda L: L.T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).put(L.I([0, -1]), L.T([7.0, 8.0])),
        lambda L: L.T(np.ones((2, 3))).put(L.I([[0, 5], [5, 5]]), L.T([1.0, 2, 3, 4]), True),
        lambda L: L.T(3.0).put(L.I([-1]), L.T([1.0])),
        lambda L: L.m.put(L.T(np.ones(4)), L.I([2]), L.T([[3.0]])),
        lambda L: L.m.index_put(L.T(np.ones(3)), (L.I([1]),), L.T(2.0)),
        lambda L: (lambda y: (y.put_(L.I([3, 1]), L.T([9.0, 8.0])), y)[1])(L.T(np.ones(4)) * 1.0),
    ],
)
def test_index_put_and_put_are_torchs(prog):
    _compare(prog)


@pytest.mark.parametrize(
    "prog,fragment",
    [
        (lambda L: L.T(np.zeros(3)).index_put((L.I([3]),), L.T(5.0)), "out of bounds"),
        (lambda L: L.T(np.zeros(3)).index_put(L.I([1]), L.T(5.0)), "tuple of index"),
        (lambda L: L.T(np.zeros(3)).index_put((L.T([1.0], rg=False),), L.T(5.0)), "long, int"),
        (lambda L: L.T(np.zeros((3, 4))).index_put((L.I([1]),), L.T([1.0, 2.0])), "broadcast"),
        (lambda L: L.T(np.zeros(3)).index_put((L.I([1]), L.I([0])), L.T(5.0)), "too many"),
        (lambda L: L.I([0, 0]).index_put((L.I([1]),), L.T(5.0)), "dtype"),
        (lambda L: L.T(np.zeros((2, 3))).put(L.I([6]), L.T([1.0])), "out of range"),
        (lambda L: L.T(np.zeros((2, 3))).put(L.I([-7]), L.T([1.0])), "out of range"),
        (lambda L: L.T(np.zeros((2, 3))).put(L.I([0, 5]), L.T([1.0, 2, 3])), "same number"),
        (lambda L: L.T(np.zeros(3)).put(L.T([0.0], rg=False), L.T([1.0])), "integer"),
    ],
)
def test_index_put_and_put_refuse_what_torch_refuses(prog, fragment):
    assert _raises(prog, "torch") is not None
    with pytest.raises((RuntimeError, IndexError, TypeError), match=fragment):
        prog(tg_lib())


def test_repeated_positions_without_accumulate():
    """PyTorch keeps one write of a repeated position (which one is unspecified) and sends
    the gradient to all of them: tapegrad refuses unless the writes agree and carry no
    gradient (then the value is the same whichever write is kept)."""
    x = tg.zeros(3)
    with pytest.raises(RuntimeError, match="index_put: flat position 1 is written more than"):
        x.index_put((tg.tensor([1, 1]),), tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="put: flat position 0 is written more than"):
        x.put(tg.tensor([0, -3]), tg.tensor([1.0, 2.0]))
    v = tg.tensor([2.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="index_put: a position is written more than once"):
        x.index_put((tg.tensor([1, 1]),), v)
    np.testing.assert_array_equal(
        x.index_put((tg.tensor([1, 1]),), tg.tensor([2.0, 2.0])).numpy(), [0.0, 2.0, 0.0]
    )
    np.testing.assert_array_equal(
        x.put(tg.tensor([2, 2]), tg.tensor([np.nan, np.nan])).numpy(), [0.0, 0.0, np.nan]
    )


def test_index_put_second_order_and_gradcheck():
    idx = (tg.tensor([0, 2, 2]), tg.tensor([1, 0, 0]))

    def f(x, v):
        return (x.index_put(idx, v, accumulate=True) ** 3).sum() + x.put(
            tg.tensor([1, 4]), v[:2] * v[1:]
        ).prod()

    x = np.array([[0.3, -0.7], [1.1, 0.5], [0.9, -1.2]])
    v = np.array([0.4, -0.6, 1.3])
    assert tg.gradcheck(f, (x, v)) and tg.gradgradcheck(f, (x, v))


# ---- unfold -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,args",
    [
        ((7,), (0, 3, 2)),
        ((7,), (0, 7, 1)),
        ((7,), (0, 0, 1)),
        ((7,), (-1, 2, 3)),
        ((3, 4), (0, 2, 1)),
        ((2, 3, 4), (1, 2, 1)),
        ((2, 3, 4), (-1, 3, 2)),
        ((), (0, 1, 1)),
    ],
)
def test_unfold_is_torchs(shape, args):
    data = np.arange(np.prod(shape, dtype=int), dtype=float).reshape(shape) ** 1.5
    _compare(lambda L: L.T(data).unfold(*args))
    _compare(lambda L: L.T(data).unfold(*args) ** 2)


def test_unfold_is_a_view():
    def prog_base_write(L):
        y = L.T(np.arange(7.0)) * 1.0
        u = y.unfold(0, 3, 2)
        y.mul_(10.0)  # seen through the windows
        return u

    def prog_window_write(L):
        y = L.T(np.arange(7.0)) * 1.0
        u = y.unfold(0, 2, 2)  # windows apart: a write through them reaches y
        u.mul_(L.T([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        u[1, 0] = 100.0
        return y, u

    _compare(prog_base_write)
    _compare(prog_window_write)
    y = tg.arange(7.0)
    assert not y.unfold(0, 3, 1).is_contiguous() and y.unfold(0, 2, 2).is_contiguous()
    for write in (lambda u: u.mul_(2.0), lambda u: u.__setitem__((0, 0), 1.0)):
        with pytest.raises(RuntimeError, match="unfold with overlapping windows.*clone"):
            write(y.unfold(0, 3, 2))  # (PyTorch changes an element twice)
    np.testing.assert_array_equal(y.numpy(), np.arange(7.0))


def test_unfold_derivatives():
    def f(x):
        return x.unfold(1, 2, 1) ** 3

    x = np.array([[0.2, -0.5, 1.1], [0.7, 0.3, -0.9]])
    assert tg.gradcheck(f, (x,)) and tg.gradgradcheck(f, (x,))


@pytest.mark.parametrize(
    "args,fragment",
    [((0, 8, 1), "maximum size"), ((0, 2, 0), "step is 0"), ((1, 2, 1), "out of range")],
)
def test_unfold_refuses_what_torch_refuses(args, fragment):
    with pytest.raises((RuntimeError, IndexError)):
        torch.arange(7.0).unfold(*args)
    with pytest.raises((RuntimeError, IndexError), match=f"Tensor.unfold.*{fragment}"):
        tg.arange(7.0).unfold(*args)


# ---- bucketize, searchsorted ------------------------------------------------------------

BOUNDS = [1.0, 3.0, 5.0, 7.0]


@pytest.mark.parametrize(
    "prog",
    [
        lambda L: L.m.bucketize(L.T([[0.0, 1.0, 3.5], [5.0, 7.0, 9.0]]), L.T(BOUNDS)),
        lambda L: L.m.bucketize(L.T([[0.0, 1.0, 3.5], [5.0, 7.0, 9.0]]), L.T(BOUNDS), right=True),
        lambda L: L.m.bucketize(L.T([0.0, 3.0]), L.T(BOUNDS), out_int32=True),
        lambda L: L.m.bucketize(3.0, L.T(BOUNDS)),
        lambda L: L.m.bucketize(L.T([np.nan, -np.inf, np.inf]), L.T(BOUNDS)),
        lambda L: L.m.bucketize(L.I([1, 3, 4]), L.T(BOUNDS)),
        lambda L: L.m.bucketize(L.T([2.0, 3.0]), L.I([1, 3])),
        lambda L: L.m.searchsorted(L.T(BOUNDS), 3.0),
        lambda L: L.m.searchsorted(L.T(BOUNDS), L.T([np.nan, 3.0]), side="right"),
        lambda L: L.m.searchsorted(L.T([[1.0, 2], [3, 4]]), L.T([[2.5], [2.5]]), right=True),
        lambda L: L.m.searchsorted(L.T([3.0, 1, 2]), L.T([2.5]), sorter=L.I([1, 2, 0])),
        lambda L: L.m.searchsorted(L.I([1, 2, 3]), L.T([2.5])),
        lambda L: L.m.searchsorted(L.T([1.0, 2, 3]), L.T([2.0]), right=False, side="right"),
        lambda L: L.m.searchsorted(L.T([1.0, 2, 3]), L.T([[2.0, 3.0]])),
        lambda L: L.m.searchsorted(L.T([1.0, 2, 3]), L.T([[2.0, 3.0]]), out_int32=True),
    ],
)
def test_bucketize_and_searchsorted_are_torchs(prog):
    _compare(prog)  # integer results, no gradient (the inputs' gradients are None in both)


@pytest.mark.parametrize(
    "prog,fragment",
    [
        (lambda L: L.m.bucketize(L.T([1.0]), L.T([[1.0, 2.0]])), "1-D"),
        (lambda L: L.m.searchsorted(L.T([3.0, 1, 2]), L.T([2.5]), sorter=L.I([1, 2])), "shape"),
        (lambda L: L.m.searchsorted(L.T([3.0, 1, 2]), L.T([2.5]), sorter=L.I([1, 2, -1])), "rang"),
        (lambda L: L.m.searchsorted(L.T([3.0, 1, 2]), L.T([2.5]), sorter=L.I([1, 2, 5])), "rang"),
        (lambda L: L.m.searchsorted(L.T([1.0, 2]), L.T([2.0]), right=True, side="left"), "contra"),
        (lambda L: L.m.searchsorted(L.T([[1.0, 2, 3]]), L.T([2.0, 3.0])), "leading dims"),
        (lambda L: L.m.searchsorted(L.T(3.0), L.T([2.0])), "at least 1 dim"),
    ],
)
def test_bucketize_and_searchsorted_refuse_what_torch_refuses(prog, fragment):
    assert _raises(prog, "torch") is not None
    with pytest.raises((RuntimeError, ValueError), match=f"(searchsorted|bucketize).*{fragment}"):
        prog(tg_lib())


# ---- unique, unique_consecutive -----------------------------------------------------------

UNIQUE_INPUTS = [
    [3, 1, 2, 1, 5, 0],
    [[1, 2], [0, 5], [1, 2]],
    [[1.0, 1.0], [2.0, 3.0]],
    [1.0, np.nan, 1.0, np.nan],
    3.0,
    [],
]
UNIQUE_KW = [
    {},
    {"return_inverse": True},
    {"return_inverse": True, "return_counts": True},
    {"return_counts": True, "dim": 0},
    {"return_inverse": True, "dim": -1},
]


@pytest.mark.parametrize("kw", UNIQUE_KW)
@pytest.mark.parametrize("data", UNIQUE_INPUTS)
@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
def test_unique_is_torchs(name, data, kw):
    a = np.array(data)
    if "dim" in kw and a.dtype.kind == "f" and np.isnan(a).any():
        pytest.skip("torch's unique(dim=) sorts slices holding NaN in no defined order")

    def prog(L):
        t = L.I(a) if a.dtype.kind == "i" else L.T(a, rg=False)
        return getattr(L.m, name)(t, **kw)

    if _raises(prog, "torch") is not None:
        with pytest.raises((RuntimeError, IndexError), match=name):
            prog(tg_lib())
        return
    _compare(prog)


def test_unique_values_have_no_gradient_as_in_torch():
    x = tg.tensor([3.0, 1.0, 3.0], requires_grad=True)
    for name in ("unique", "unique_consecutive"):
        u = getattr(x, name)()
        assert u.requires_grad  # (as torch's)
        with pytest.raises(RuntimeError, match=f"Tensor.{name}: the derivative.*not implemented"):
            u.sum().backward()
        with pytest.raises(RuntimeError, match=f"Tensor.{name}: the derivative"):
            tg.grad(lambda a, name=name: getattr(a, name)().sum())(tg.tensor([1.0, 2.0]))
        with pytest.raises(RuntimeError, match=f"Tensor.{name}: the derivative"):
            tg.jvp(lambda a, name=name: getattr(a, name)(), (tg.tensor([1.0]),), (tg.ones(1),))
    assert x.grad is None  # never a silent zero
    with tg.no_grad():
        assert not x.unique().requires_grad
    np.testing.assert_array_equal(x.detach().unique().numpy(), [1.0, 3.0])
    xt = torch.tensor([3.0, 1.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError):
        xt.unique().sum().backward()


def test_float32_that_requires_grad_keeps_its_gradient():
    """A float32 x (or src) that requires grad: scatter_reduce went the no-gradient NumPy way
    (x.grad of x.sum() + y.sum() was 1, the scatter's part silently 0), unique's values were
    detached, and a recorded (float64) src was refused as another dtype."""
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 4.0, 1.0]], dtype=tg.float32, requires_grad=True)
    y = x.scatter_reduce(1, tg.tensor([[0, 0], [1, 1]]), x[:, :2] * 1, "amax")
    (y.sum() + x.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 3, 2], [7 / 3, 5 / 3, 2]], rtol=1e-6)
    src = tg.tensor([5.0, 2.0], dtype=tg.float32, requires_grad=True)
    tg.ones(3, dtype=tg.float32).scatter_reduce(0, tg.tensor([0, 0]), src, "prod").sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), [2.0, 5.0])
    for name in ("unique", "unique_consecutive"):
        with pytest.raises(RuntimeError, match=f"Tensor.{name}: the derivative"):
            (getattr(x, name)().sum() + x.sum()).backward()


def test_unique_sorted_false_and_method():
    got = tg.tensor([3, 1, 2, 1]).unique(sorted=False, return_counts=True)
    want = torch.tensor([3, 1, 2, 1]).unique(sorted=False, return_counts=True)
    # (PyTorch leaves the order unspecified; tapegrad sorts)
    assert sorted(zip(*[g.tolist() for g in got], strict=True)) == sorted(
        zip(*[w.tolist() for w in want], strict=True)
    )


# ---- histc, mode --------------------------------------------------------------------------

RNG = np.random.default_rng(5)
HIST_DATA = [
    RNG.standard_normal(40),
    np.array([1.0, 1.0, 1.0]),
    np.array([0.0, 1.0, 2.0, 2.5, 3.0]),
    np.array([0.1, 0.2, 0.3, 0.7]) * 3.0,  # elements near the bin edges
    RNG.standard_normal((3, 5)).astype(np.float32),
]
HIST_KW = [{}, {"bins": 7}, {"bins": 3, "min": 0, "max": 3}, {"bins": 4, "min": -1, "max": 0.5}]


@pytest.mark.parametrize("kw", HIST_KW)
@pytest.mark.parametrize("k", range(len(HIST_DATA)))
def test_histc_is_torchs(k, kw):
    a = HIST_DATA[k]
    got = tg.histc(tg.from_numpy(a), **kw)
    want = torch.histc(torch.from_numpy(a), **kw)
    assert got.dtype == a.dtype and not got.requires_grad
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = tg.tensor(np.asarray(a, float), requires_grad=True)
    assert not x.histc(**kw).requires_grad  # (torch's histc has no gradient)


@pytest.mark.parametrize(
    "data,kw,fragment",
    [
        ([1.0, np.nan], {}, "not finite"),
        ([1.0, np.inf], {}, "not finite"),
        ([1.0, 2.0], {"min": 3, "max": 2}, "larger than min"),
        ([1.0, 2.0], {"bins": 0}, "bins"),
        ([1, 2], {}, "dtype"),
    ],
)
def test_histc_refuses_what_torch_refuses(data, kw, fragment):
    with pytest.raises(RuntimeError):
        torch.histc(torch.tensor(data), **kw)
    with pytest.raises(RuntimeError, match=f"histc.*{fragment}"):
        tg.histc(tg.tensor(data), **kw)


MODE_DATA = [
    np.array([[1.0, 2.0, 2.0, 3.0, 3.0, 1.0], [5.0, 5.0, 4.0, 4.0, 6.0, 6.0]]),
    RNG.integers(0, 3, (4, 7)).astype(float),
    np.array([3.0, 1.0, 3.0, 1.0, 2.0]),
    np.array(5.0),
]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("k", range(len(MODE_DATA)))
def test_mode_is_torchs(k, dim, keepdim):
    a = MODE_DATA[k]
    _compare(lambda L: L.T(a).mode(dim, keepdim=keepdim))
    _compare(lambda L: L.m.mode(L.I(a.astype(int)), dim=dim, keepdim=keepdim))


def test_mode_refuses_an_empty_dim_and_has_second_derivatives():
    with pytest.raises(IndexError):
        torch.zeros(0).mode()
    with pytest.raises(IndexError, match="Tensor.mode.*empty"):
        tg.zeros(0).mode()
    x = np.array([[0.5, 0.2, -1.0], [2.0, 0.3, 0.4]])  # distinct: the mode is smooth here
    assert tg.gradgradcheck(lambda x: x.mode(1).values ** 3, (x,))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCE)
def test_scatter_reduce_forward_mode_is_the_finite_difference(reduce, include_self):
    """tg.jvp against a central difference (torch.func.jvp of scatter_reduce "prod" gives
    zeros, so torch is no reference here)."""
    idx = tg.tensor([0, 0, 2, 2, 2])
    x, s = np.array([0.7, -1.3, 2.1]), np.array([0.4, 1.9, -0.8, 1.2, 0.3])
    dx, ds = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0, 1.0, 3.0])

    def f(a, b):
        return a.scatter_reduce(0, idx, b, reduce, include_self=include_self)

    def at(h):
        return f(tg.tensor(x + h * dx), tg.tensor(s + h * ds)).numpy()

    _, tangent = tg.jvp(f, (tg.tensor(x), tg.tensor(s)), (tg.tensor(dx), tg.tensor(ds)))
    eps = 1e-6
    fd = (at(eps) - at(-eps)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-7, atol=1e-8)
