"""PyTorch's top-level functions added to ``tg``, side by side with PyTorch (float64).

Hunted: the stacking family (``hstack``, ``vstack``, ``row_stack``, ``dstack``,
``column_stack``, ``atleast_1d/2d/3d``, ``concat``), grids and products (``meshgrid`` with
``indexing=``, ``broadcast_tensors``, ``broadcast_shapes``, ``block_diag``,
``cartesian_prod``, ``combinations``, ``vander``, ``chain_matmul``), integration and
differences (``trapezoid``, ``cumulative_trapezoid``, ``gradient`` with every kind of
``spacing``, ``dim`` and ``edge_order``), distances (``pdist``, ``dist``, and the existing
``cdist`` at coincident points and ties, ``cosine_similarity``, ``pairwise_distance``), the
dtype questions (``result_type``, ``promote_types``, ``can_cast``, ``is_tensor``), the
functions of methods (``clone``, ``take``, ``nonzero``, ``diagonal``, ``isin``,
``count_nonzero``), constructors (``logspace``, ``full_like``, ``empty_like``,
``tril_indices``, ``triu_indices``) and random draws (``rand_like``, ``randn_like``,
``randint_like``, ``normal``'s four overloads, ``bernoulli``, ``multinomial``, ``poisson``:
shapes, dtypes, seeding, moments and PyTorch's zero derivative, not values).
References: torch (values, shapes, dtype kinds, first derivatives through
``tests/torch_programs.py``'s adapter, second derivatives with ``create_graph``, the errors
PyTorch raises), ``tg.gradcheck`` (finite differences), NumPy and closed forms.
"""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tests.torch_programs import _compare, _raises  # noqa: E402

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal((3, 2))
V = RNG.standard_normal(4)
C3 = RNG.standard_normal((2, 3, 4))
PTS = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [3.0, -1.0], [1.0, 0.5]])
INF = math.inf

PROGRAMS = {
    # ---- stacking
    "hstack_1d": lambda L: L.m.hstack([L.T([1.0, 2.0]), L.T(3.0), L.T([4.0])]),
    "hstack_2d": lambda L: L.m.hstack((L.T(A), L.T(A[:, :1]))),
    "hstack_int_float": lambda L: L.m.hstack([L.I([1, 2]), L.T([3.0])]),
    "vstack": lambda L: L.m.vstack([L.T(A[0]), L.T(A), L.T(3.0 + A[1])]),
    "row_stack": lambda L: L.m.row_stack([L.T([1.0, 2.0]), L.T([3.0, 4.0])]),
    "dstack": lambda L: L.m.dstack([L.T(A), L.T(A[..., None] * 2)]),
    "dstack_1d": lambda L: L.m.dstack([L.T(V), L.T(V + 1)]),
    "column_stack": lambda L: L.m.column_stack([L.T(A[0]), L.T(A.T[:, :1]), L.T(B)]),
    "column_stack_0d": lambda L: L.m.column_stack([L.T(2.0), L.T([3.0])]),
    "atleast_1d": lambda L: L.m.atleast_1d(L.T(2.0)),
    "atleast_1d_many": lambda L: L.m.atleast_1d(L.T(2.0), L.T(V)),
    "atleast_1d_list": lambda L: L.m.atleast_1d([L.T(2.0)]),
    "atleast_2d": lambda L: L.m.atleast_2d(L.T(2.0), L.T(V), L.T(A)),
    "atleast_3d": lambda L: L.m.atleast_3d((L.T(2.0), L.T(V), L.T(A), L.T(A[None]))),
    "atleast_3d_one": lambda L: L.m.atleast_3d(L.T(A)),
    "concat": lambda L: L.m.concat([L.T(A), L.T(B.T)], dim=1),
    "concatenate": lambda L: L.m.concatenate([L.T(A), L.T(B.T)], 0),
    # ---- grids and products
    "meshgrid_ij": lambda L: L.m.meshgrid(L.T(V[:2]), L.T(V), indexing="ij"),
    "meshgrid_xy": lambda L: L.m.meshgrid(L.T(V[:2]), L.T(V), indexing="xy"),
    "meshgrid_xy3": lambda L: L.m.meshgrid([L.T(V[:2]), L.T(V), L.T(V[:3])], indexing="xy"),
    "meshgrid_0d": lambda L: L.m.meshgrid(L.T(2.0), L.T(V), indexing="ij"),
    "meshgrid_one": lambda L: L.m.meshgrid(L.T(V), indexing="xy"),
    "meshgrid_default": lambda L: L.m.meshgrid(L.T(V[:2]), L.T(V[:3])),
    "broadcast_tensors": lambda L: L.m.broadcast_tensors(L.T(V[:3]), L.T(B[:, :1]), L.T(1.0)),
    "broadcast_shapes": lambda L: L.m.broadcast_shapes((2, 1), (3,), 1, ()),
    "broadcast_shapes_none": lambda L: len(L.m.broadcast_shapes()),
    "block_diag": lambda L: L.m.block_diag(L.T(A), L.T(2.0), L.T(V[:2]), L.T(B)),
    "block_diag_empty_block": lambda L: L.m.block_diag(L.T(np.zeros((0, 2))), L.T(B)),
    "block_diag_int_float": lambda L: L.m.block_diag(L.I([[1, 2]]), L.T([[3.0], [4.0]])),
    "block_diag_int": lambda L: L.m.block_diag(L.I([[1, 2]]), L.I(3)),
    "cartesian_prod": lambda L: L.m.cartesian_prod(L.T(V[:2]), L.T(V[:3])),
    "cartesian_prod3": lambda L: L.m.cartesian_prod(L.T(V[:2]), L.T(V[:3]), L.T(V[:2])),
    "cartesian_prod_one": lambda L: L.m.cartesian_prod(L.T(V)),
    "combinations": lambda L: L.m.combinations(L.T(V)),
    "combinations_3": lambda L: L.m.combinations(L.T(V), 3),
    "combinations_repl": lambda L: L.m.combinations(L.T(V[:3]), 2, with_replacement=True),
    "combinations_0": lambda L: L.m.combinations(L.T(V), 0),
    "combinations_too_many": lambda L: L.m.combinations(L.T(V), 5),
    "combinations_int": lambda L: L.m.combinations(L.I([1, 2, 3]), r=2),
    # (values only: PyTorch's own vander backward fails, an in-place error; see below)
    "vander": lambda L: L.m.vander(L.T(V, rg=False)),
    "vander_zero": lambda L: L.m.vander(L.T([0.0, 2.0, -1.5], rg=False), N=5, increasing=True),
    "vander_N1": lambda L: L.m.vander(L.T(V, rg=False), N=1),
    "vander_N0": lambda L: L.m.vander(L.T(V, rg=False), N=0),
    "vander_int": lambda L: L.m.vander(L.I([1, 2, 3])),
    "vander_bool": lambda L: L.m.vander(L.B([True, False])),
    "chain_matmul": lambda L: L.m.chain_matmul(L.T(A), L.T(B), L.T(A)),
    "chain_matmul_one": lambda L: L.m.chain_matmul(L.T(A)),
    # ---- integration and differences
    "trapezoid": lambda L: L.m.trapezoid(L.T(A)),
    "trapezoid_dx": lambda L: L.m.trapezoid(L.T(A), dx=0.3, dim=0),
    "trapezoid_x": lambda L: L.m.trapezoid(L.T(A), L.T([0.0, 0.5, 2.0])),
    "trapezoid_x_dim0": lambda L: L.m.trapezoid(L.T(A), L.T([0.0, 0.5]), dim=0),
    "trapezoid_x_2d": lambda L: L.m.trapezoid(L.T(A), L.T([[0.0, 0.5, 2.0]])),
    "trapezoid_x_full": lambda L: L.m.trapezoid(L.T(A), L.T(np.cumsum(np.abs(A), 1))),
    "trapezoid_int": lambda L: L.m.trapezoid(L.I([1, 2, 4])),
    "trapezoid_one": lambda L: L.m.trapezoid(L.T([3.0])),
    "trapezoid_empty": lambda L: L.m.trapezoid(L.T(np.zeros((2, 0))), dim=1),
    "cumulative_trapezoid": lambda L: L.m.cumulative_trapezoid(L.T(A)),
    "cumulative_trapezoid_dx": lambda L: L.m.cumulative_trapezoid(L.T(A), dx=2.0, dim=0),
    "cumulative_trapezoid_x": lambda L: L.m.cumulative_trapezoid(L.T(A), L.T([0.0, 1.0, 3.0])),
    "cumulative_trapezoid_one": lambda L: L.m.cumulative_trapezoid(L.T([3.0])),
    "gradient": lambda L: L.m.gradient(L.T(V)),
    "gradient_2d": lambda L: L.m.gradient(L.T(np.vstack([A, B.T]))),
    "gradient_edge2": lambda L: L.m.gradient(L.T(np.vstack([A, B.T])), edge_order=2),
    "gradient_scalar": lambda L: L.m.gradient(L.T(V), spacing=0.5, edge_order=2),
    "gradient_list": lambda L: L.m.gradient(L.T(np.vstack([A, B.T])), spacing=[2.0, 0.5]),
    "gradient_dim": lambda L: L.m.gradient(L.T(A), dim=1),
    "gradient_dim_list": lambda L: L.m.gradient(L.T(A), spacing=[3.0], dim=[-1]),
    "gradient_coords": lambda L: L.m.gradient(L.T(V), spacing=(L.T([0.0, 1.0, 3.0, 4.5]),)),
    "gradient_coords2": lambda L: L.m.gradient(
        L.T(V), spacing=[L.T([0.0, 1.0, 3.0, 4.5])], edge_order=2
    ),
    "gradient_coords_2d": lambda L: L.m.gradient(
        L.T(A), spacing=(L.T([0.0, 2.0]), L.T([-1.0, 0.0, 0.5])), dim=(0, 1)
    ),
    "gradient_int": lambda L: L.m.gradient(L.I([1, 2, 4, 7])),
    "gradient_0d": lambda L: L.m.gradient(L.T(2.0)),
    # ---- distances
    "dist": lambda L: L.m.dist(L.T(A), L.T(A[::-1])),
    "dist_broadcast": lambda L: L.m.dist(L.T(A), L.T(V[:3]), 1),
    "dist_zero": lambda L: [L.m.dist(L.T(V), L.T(V), p) for p in (0.5, 1, 2, 3, INF, -1)],
    "dist_inf_ties": lambda L: L.m.dist(L.T([0.0, 0.0]), L.T([1.0, -1.0]), INF),
    "dist_0": lambda L: L.m.dist(L.T(A), L.T(A[::-1]).detach(), 0),
    "dist_p": lambda L: [L.m.dist(L.T(A), L.T(B.T), p) for p in (0.5, 1.5, 3, INF, -INF)],
    "pdist": lambda L: [L.m.pdist(L.T(PTS), p) for p in (0.5, 1, 2, 3, INF, 0)],
    "pdist_one_row": lambda L: L.m.pdist(L.T([[1.0, 2.0]])),
    "cdist_ties_and_zero": lambda L: [
        L.m.cdist(L.T(PTS), L.T(PTS[1:3]), p) for p in (0.5, 1, 2, 3, INF)
    ],
    "cosine_similarity": lambda L: L.m.cosine_similarity(L.T(A), L.T(V[:3]), dim=-1),
    "cosine_similarity_zero": lambda L: L.m.cosine_similarity(L.T(np.zeros((2, 3))), L.T(A)),
    "pairwise_distance": lambda L: L.m.pairwise_distance(L.T(A), L.T(A[::-1]), p=3),
    # ---- functions of methods
    "clone": lambda L: L.m.clone(L.T(A)),
    "take": lambda L: L.m.take(L.T(A), L.I([[0, -1], [4, 2]])),
    "take_0d": lambda L: L.m.take(L.T(A), L.I(5)),
    "nonzero": lambda L: L.m.nonzero(L.T([[0.0, 1.0], [2.0, 0.0]])),
    "nonzero_tuple": lambda L: L.m.nonzero(L.T([[0.0, 1.0], [2.0, 0.0]]), as_tuple=True),
    "diagonal": lambda L: L.m.diagonal(L.T(A), 1),
    "diagonal_dims": lambda L: L.m.diagonal(L.T(C3), -1, 2, 0),
    "isin": lambda L: L.m.isin(L.I([[1, 2], [3, 4]]), L.I([2, 5, 4])),
    "isin_invert": lambda L: L.m.isin(L.T([1.0, 2.0, math.nan]), L.T([2.0, math.nan]), invert=True),
    "isin_scalar_test": lambda L: L.m.isin(L.I([1, 2, 3]), 2),
    "isin_scalar_elem": lambda L: L.m.isin(2, L.I([1, 2, 3])),
    "isin_mixed": lambda L: L.m.isin(L.I([1, 2, 3]), L.T([2.0, 3.5])),
    "count_nonzero": lambda L: L.m.count_nonzero(L.T([[0.0, 1.0], [2.0, 0.0]]), dim=0),
    "count_nonzero_all": lambda L: L.m.count_nonzero(L.T([[0.0, 1.0], [2.0, 0.0]])),
    "is_tensor": lambda L: [L.m.is_tensor(L.T(1.0)), L.m.is_tensor([1.0])],
    # ---- constructors
    "logspace": lambda L: L.m.logspace(-1.0, 2.0, 7, dtype=L.m.float64),
    "logspace_base": lambda L: L.m.logspace(0, 3, 4, base=2.0, dtype=L.m.float64),
    "logspace_int": lambda L: L.m.logspace(0, 2, 3, dtype=L.m.int64),
    "logspace_one": lambda L: L.m.logspace(1.0, 5.0, 1, dtype=L.m.float64),
    "full_like": lambda L: L.m.full_like(L.T(A), 2.5),
    "full_like_int": lambda L: L.m.full_like(L.I([1, 2]), 2.7),
    "full_like_neg_int": lambda L: L.m.full_like(L.I([1, 2]), -2.7),
    "full_like_bool": lambda L: L.m.full_like(L.B([True, False]), 0),
    "full_like_dtype": lambda L: L.m.full_like(L.I([1, 2]), 2.7, dtype=L.m.float64),
    "full_like_rg": lambda L: L.m.full_like(L.T(V), 1.0, requires_grad=True),
    "empty_like": lambda L: [
        L.m.empty_like(L.T(A)).shape,
        L.m.empty_like(L.I([1])).dtype == L.m.int64,
    ],
    "tril_indices": lambda L: L.m.tril_indices(3, 4, 1),
    "tril_indices_neg": lambda L: L.m.tril_indices(4, 3, -1),
    "triu_indices": lambda L: L.m.triu_indices(3, 4, -1),
    "triu_indices_far": lambda L: L.m.triu_indices(3, 3, 5),
    "triu_indices_empty": lambda L: L.m.triu_indices(0, 4),
}

# programs PyTorch refuses: tapegrad must refuse too (with the same kind of exception, and a
# message naming the function)
ERRORS = {
    "hstack_tensor": (lambda L: L.m.hstack(L.T(V)), "hstack"),
    "hstack_empty": (lambda L: L.m.hstack([]), "hstack"),
    "vstack_empty": (lambda L: L.m.vstack([]), "vstack"),
    "column_stack_ndim": (
        lambda L: L.m.column_stack([L.T(V[:2]), L.T(np.ones((2, 1, 2)))]),
        "column_stack",
    ),
    "hstack_ndim": (lambda L: L.m.hstack([L.T(A), L.T(np.ones((2, 1, 1)))]), "hstack"),
    "atleast_float": (lambda L: L.m.atleast_1d(1.0), "atleast_1d"),
    "meshgrid_indexing": (lambda L: L.m.meshgrid(L.T(V), indexing="yx"), "meshgrid"),
    "meshgrid_2d": (lambda L: L.m.meshgrid(L.T(A), indexing="ij"), "meshgrid"),
    "meshgrid_dtypes": (lambda L: L.m.meshgrid(L.T(V), L.I([1]), indexing="ij"), "meshgrid"),
    "meshgrid_empty": (lambda L: L.m.meshgrid(indexing="ij"), "meshgrid"),
    "broadcast_tensors": (lambda L: L.m.broadcast_tensors(L.T(V), L.T(V[:3])), "broadcast"),
    "broadcast_shapes": (lambda L: L.m.broadcast_shapes((2, 1), (3, 2)), "broadcast_shapes"),
    "broadcast_shapes_neg": (lambda L: L.m.broadcast_shapes((-1,)), "broadcast_shapes"),
    "block_diag_3d": (lambda L: L.m.block_diag(L.T(np.ones((2, 2, 2)))), "block_diag"),
    "cartesian_prod_2d": (lambda L: L.m.cartesian_prod(L.T(A)), "cartesian_prod"),
    "cartesian_prod_none": (lambda L: L.m.cartesian_prod(), "meshgrid"),
    "combinations_2d": (lambda L: L.m.combinations(L.T(A)), "combinations"),
    "combinations_neg": (lambda L: L.m.combinations(L.T(V), -1), "combinations"),
    "vander_2d": (lambda L: L.m.vander(L.T(A)), "vander"),
    "vander_neg": (lambda L: L.m.vander(L.T(V), -1), "vander"),
    "chain_matmul_none": (lambda L: L.m.chain_matmul(), "chain_matmul"),
    "chain_matmul_1d": (lambda L: L.m.chain_matmul(L.T(A), L.T(V[:3])), "chain_matmul"),
    "chain_matmul_shapes": (lambda L: L.m.chain_matmul(L.T(A), L.T(A)), "chain_matmul"),
    "trapezoid_0d": (lambda L: L.m.trapezoid(L.T(1.0)), "trapezoid"),
    "trapezoid_x_len": (lambda L: L.m.trapezoid(L.T(V), L.T([0.0, 1.0])), "trapezoid"),
    "trapezoid_x_number": (lambda L: L.m.trapezoid(L.T(V), 2.0), "trapezoid"),
    "trapezoid_dim": (lambda L: L.m.trapezoid(L.T(V), dim=1), "trapezoid"),
    "trapezoid_x_shape": (
        lambda L: L.m.trapezoid(L.T([[1.0, 2.0, 4.0]]), L.T([[0.0], [1.0]])),
        "trapezoid",
    ),
    "cumulative_trapezoid_x_len": (
        lambda L: L.m.cumulative_trapezoid(L.T([[1.0, 2.0, 4.0]]), L.T([1.0, 3.0]), dim=0),
        "cumulative_trapezoid",
    ),
    "column_stack_rows": (
        lambda L: L.m.column_stack([L.T([1.0, 2.0]), L.T([1.0, 2.0, 3.0])]),
        "column_stack",
    ),
    "vstack_cols": (lambda L: L.m.vstack([L.T([1.0, 2.0]), L.T([1.0])]), "vstack"),
    "dist_shapes": (lambda L: L.m.dist(L.T([[1.0, 2.0]]), L.T([1.0, 2.0, 3.0])), "dist"),
    "take_range": (lambda L: L.m.take(L.T([1.0, 2.0]), L.I([2])), "take"),
    "take_float_index": (lambda L: L.m.take(L.T([1.0, 2.0]), L.T([1.0])), "take"),
    "gradient_edge3": (lambda L: L.m.gradient(L.T(V), edge_order=3), "gradient"),
    "gradient_short": (lambda L: L.m.gradient(L.T([1.0, 2.0]), edge_order=2), "gradient"),
    "gradient_one": (lambda L: L.m.gradient(L.T([1.0])), "gradient"),
    "gradient_spacing_len": (lambda L: L.m.gradient(L.T(V), spacing=[1.0, 2.0]), "gradient"),
    "pdist_3d": (lambda L: L.m.pdist(L.T(np.ones((2, 2, 2)))), "pdist"),
    "pdist_neg_p": (lambda L: L.m.pdist(L.T(A), p=-1), "pdist"),
    "dist_int": (lambda L: L.m.dist(L.I([1, 2]), L.I([3, 4])), "dist"),
    "isin_numbers": (lambda L: L.m.isin(2, 3), "isin"),
    "promote_tensor": (lambda L: L.m.promote_types(L.T(1.0), L.m.int64), "promote_types"),
    "can_cast_tensor": (lambda L: L.m.can_cast(L.T(1.0), L.m.int64), "can_cast"),
    "logspace_no_steps": (lambda L: L.m.logspace(0, 2), "logspace"),
    "tril_indices_neg": (lambda L: L.m.tril_indices(-1, 4), "tril_indices"),
    "full_like_overflow": (lambda L: L.m.full_like(L.I([1]), math.nan), "full_like"),
    "full_like_big": (lambda L: L.m.full_like(L.I([1]), 1e30), "full_like"),
    "rand_like_int": (lambda L: L.m.rand_like(L.I([1, 2])), "rand_like"),
    "randn_like_int": (lambda L: L.m.randn_like(L.I([1, 2])), "randn_like"),
    "randint_like_empty": (lambda L: L.m.randint_like(L.T(V), 3, 3), "randint_like"),
    "normal_numbers": (lambda L: L.m.normal(2.0, 3.0), "normal"),
    "normal_neg_std": (lambda L: L.m.normal(L.T(V), L.T(-np.ones(4))), "normal"),
    "normal_neg_std_number": (lambda L: L.m.normal(2.0, -1.0, (2,)), "normal"),
    "normal_shapes": (lambda L: L.m.normal(L.T(V), L.T(np.ones(3))), "normal"),
    "normal_int_mean": (lambda L: L.m.normal(L.I([1, 2]), 1.0), "normal"),
    "bernoulli_range": (lambda L: L.m.bernoulli(L.T([0.5, 1.5])), "bernoulli"),
    "bernoulli_nan": (lambda L: L.m.bernoulli(L.T([0.5, math.nan])), "bernoulli"),
    "poisson_neg": (lambda L: L.m.poisson(L.T([1.0, -1.0])), "poisson"),
    "poisson_int": (lambda L: L.m.poisson(L.I([1, 2])), "poisson"),
    "multinomial_too_many": (lambda L: L.m.multinomial(L.T([1.0, 2.0]), 3), "multinomial"),
    "multinomial_negative": (lambda L: L.m.multinomial(L.T([1.0, -2.0]), 1), "multinomial"),
    "multinomial_inf": (lambda L: L.m.multinomial(L.T([1.0, INF]), 1), "multinomial"),
    "multinomial_zero_sum": (lambda L: L.m.multinomial(L.T([0.0, 0.0]), 1), "multinomial"),
    "multinomial_int": (lambda L: L.m.multinomial(L.I([1, 2]), 1), "multinomial"),
    "multinomial_0d": (lambda L: L.m.multinomial(L.T(1.0), 1), "multinomial"),
    "multinomial_none": (lambda L: L.m.multinomial(L.T([1.0, 2.0]), 0), "multinomial"),
}

# the differentiable programs whose second derivative is compared with PyTorch's
SECOND = [
    "hstack_2d",
    "column_stack",
    "atleast_3d",
    "meshgrid_xy3",
    "broadcast_tensors",
    "block_diag",
    "cartesian_prod",
    "combinations_repl",
    "chain_matmul",
    "trapezoid_x",
    "cumulative_trapezoid_x",
    "gradient_edge2",
    "gradient_coords2",
    "gradient_coords_2d",
    "dist",
    "dist_p",
    "take",
    "diagonal_dims",
]


@pytest.mark.parametrize("name", PROGRAMS)
def test_function_matches_torch(name):
    _compare(PROGRAMS[name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ERRORS)
def test_refused_as_torch_refuses(name):
    prog, fragment = ERRORS[name]
    e_torch = _raises(prog, "torch")
    assert e_torch is not None, "torch computes it"
    e = _raises(prog, "tg")
    assert e is not None, f"tapegrad computes what torch refuses ({e_torch!r})"
    torch_kind = type(e_torch) if type(e_torch) is not ValueError else (ValueError,)
    assert isinstance(e, torch_kind), f"tapegrad {e!r} vs torch {e_torch!r}"
    assert fragment in str(e), str(e)


def _second_order(prog, lib):
    class L:
        m = lib
        leaves = []

        @staticmethod
        def T(data, rg=True):
            t = lib.tensor(np.array(data, dtype=float), requires_grad=rg)
            if rg:
                L.leaves.append(t)
            return t

        @staticmethod
        def I(data):  # noqa: E743
            return lib.tensor(np.array(data, dtype=np.int64))

    out = prog(L)
    outs = [o for o in (out if isinstance(out, (list, tuple)) else [out]) if o.requires_grad]
    loss = sum(
        (o * o * o * lib.tensor(np.cos(np.arange(o.numel()) + 0.5).reshape(o.shape))).sum()
        for o in outs
    )
    g = lib.autograd.grad(loss, L.leaves, create_graph=True, allow_unused=True)
    second = sum((gi * gi).sum() for gi in g if gi is not None)
    h = lib.autograd.grad(second, L.leaves, allow_unused=True)
    return [None if t is None else t.detach().numpy() for t in h]


@pytest.mark.parametrize("name", SECOND)
def test_second_derivative_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _second_order(PROGRAMS[name], torch)
    for a, b in zip(_second_order(PROGRAMS[name], tg), expected, strict=True):
        if a is None or b is None:
            assert not np.any(a if b is None else b)
            continue
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "f,x",
    [
        (lambda x: tg.vander(x, N=4), np.array([0.0, 1.5, -0.7])),
        (lambda x: tg.gradient(x, spacing=(x[0] * 0 + tg.tensor([0.0, 1.0, 2.5, 3.0]),))[0], V),
        (lambda x: tg.gradient(x, spacing=(x,), edge_order=2)[0], np.array([0.0, 1.0, 2.5, 3.0])),
        (lambda x: tg.cumulative_trapezoid(x, x[0] * 0 + tg.tensor([0.0, 1.0, 3.0])), A),
        (lambda x: tg.pdist(x, 3), PTS[1:] + 0.25),
        (lambda x: tg.block_diag(x, x[0], 2 * x[0, 0]), A),
        (lambda x: tg.combinations(x, 3, True), V[:3]),
    ],
)
def test_gradcheck(f, x):
    assert tg.gradcheck(f, (tg.tensor(x, requires_grad=True),))


# ---- dtype questions: PyTorch's answers with tapegrad's NumPy dtypes ----------------------

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _np_name(dt):
    return np.dtype(dt).name


def _torch_name(dt):
    return str(dt).removeprefix("torch.")


@pytest.mark.parametrize("a", _DTYPES)
def test_promote_types_and_can_cast_match_torch(a):
    for b in _DTYPES + ["complex64", "complex128"]:
        ta, tb = getattr(torch, a), getattr(torch, b)
        assert _np_name(tg.promote_types(np.dtype(a), np.dtype(b))) == _torch_name(
            torch.promote_types(ta, tb)
        ), (a, b)
        assert tg.can_cast(np.dtype(a), np.dtype(b)) == torch.can_cast(ta, tb), (a, b)
        assert tg.can_cast(np.dtype(b), np.dtype(a)) == torch.can_cast(tb, ta), (b, a)


_OPERANDS = [
    ("int32 1d", lambda m: m.tensor([1, 2], dtype=m.int32)),
    ("int64 1d", lambda m: m.tensor([1, 2])),
    ("float64 1d", lambda m: m.tensor([1.0, 2.0], dtype=m.float64)),
    ("bool 1d", lambda m: m.tensor([True, False])),
    ("int32 0d", lambda m: m.tensor(1, dtype=m.int32)),
    ("int64 0d", lambda m: m.tensor(3)),
    ("float64 0d", lambda m: m.tensor(1.5, dtype=m.float64)),
    ("bool 0d", lambda m: m.tensor(True)),
    ("int", lambda m: 2),
    ("float", lambda m: 2.5),
    ("bool", lambda m: True),
    ("complex", lambda m: 1j),
]


@pytest.mark.parametrize("first", [n for n, _ in _OPERANDS])
def test_result_type_matches_torch(first):
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # tapegrad's default float
    try:
        make_a = dict(_OPERANDS)[first]
        for name, make_b in _OPERANDS:
            expected = _torch_name(torch.result_type(make_a(torch), make_b(torch)))
            assert _np_name(tg.result_type(make_a(tg), make_b(tg))) == expected, (first, name)
    finally:
        torch.set_default_dtype(prev)


def test_is_tensor_and_clone_are_new_values():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.clone(x)
    assert tg.is_tensor(y) and not tg.is_tensor(np.ones(2)) and y is not x
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_meshgrid_gradients_add_up():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    X, Y = tg.meshgrid(x, x, indexing="xy")
    (X * Y).sum().backward()  # d/dx_k sum_ij x_i x_j = 2 sum(x)
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_gradient_and_trapezoid_closed_forms():
    """gradient is exact for quadratics with edge_order=2 (also on uneven grids), trapezoid of
    a line is exact, and cumulative_trapezoid ends at trapezoid."""
    xs = np.array([0.0, 0.3, 1.0, 1.2, 2.0])
    f = 3 * xs**2 - xs + 1
    (g,) = tg.gradient(tg.tensor(f), spacing=(tg.tensor(xs),), edge_order=2)
    np.testing.assert_allclose(g.numpy(), 6 * xs - 1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(float(tg.trapezoid(tg.tensor(2 * xs + 1), tg.tensor(xs))), 6.0)
    c = tg.cumulative_trapezoid(tg.tensor(f), tg.tensor(xs))
    np.testing.assert_allclose(float(c[-1]), float(tg.trapezoid(tg.tensor(f), tg.tensor(xs))))
    np.testing.assert_allclose(g.numpy(), np.gradient(f, xs, edge_order=2), rtol=1e-12, atol=1e-12)


def test_second_derivatives_through_transforms():
    """The new functions are compositions, so tg.hessian and forward mode see through them."""
    x0 = np.array([0.5, -1.0, 2.0])

    def f(x):
        v = tg.vander(x, 3)
        return tg.trapezoid(v * v).sum() + tg.pdist(tg.column_stack([x, x * x])).sum()

    h = tg.hessian(f)(tg.tensor(x0))
    xt = torch.tensor(x0, requires_grad=True)

    def ft(x):  # (PyTorch's vander has no backward and its pdist no double backward)
        v = x[:, None] ** torch.arange(2, -1, -1)
        pts = torch.column_stack([x, x * x])
        i, j = torch.triu_indices(3, 3, 1)
        return torch.trapezoid(v * v).sum() + (pts[i] - pts[j]).norm(dim=1).sum()

    np.testing.assert_allclose(
        np.asarray(h), torch.autograd.functional.hessian(ft, xt).numpy(), rtol=1e-10
    )
    _, tangent = tg.jvp(f, (tg.tensor(x0),), (tg.tensor([1.0, 0.0, 0.0]),))
    _, tt = torch.func.jvp(ft, (xt.detach(),), (torch.tensor([1.0, 0.0, 0.0]),))
    np.testing.assert_allclose(float(tangent), float(tt), rtol=1e-10)


# ---- random draws: shapes, dtypes, seeding, moments, PyTorch's zero derivative ------------


def _draws():
    return [
        tg.normal(tg.zeros(3), tg.ones(2, 1)),
        tg.normal(tg.zeros(4), 2.0),
        tg.normal(1.0, tg.ones(2, 2)),
        tg.normal(1.0, 2.0, (2, 3)),
        tg.normal(1.0, 2.0, size=5),
        tg.bernoulli(tg.full((3,), 0.5)),
        tg.bernoulli(tg.zeros(2, 2), 0.5),
        tg.poisson(tg.full((2, 3), 2.0)),
        tg.multinomial(tg.tensor([1.0, 2.0, 3.0]), 2),
        tg.multinomial(tg.tensor([[1.0, 2.0], [0.0, 1.0]]), 5, replacement=True),
        tg.rand_like(tg.zeros(2, 3)),
        tg.randn_like(tg.zeros(3)),
        tg.randint_like(tg.zeros(4), 10),
        tg.randint_like(tg.tensor([1, 2]), 3, 5),
    ]


def _torch_draws():
    z = torch.zeros
    return [
        torch.normal(z(3), torch.ones(2, 1)),
        torch.normal(z(4), 2.0),
        torch.normal(1.0, torch.ones(2, 2)),
        torch.normal(1.0, 2.0, (2, 3)),
        torch.normal(1.0, 2.0, size=(5,)),
        torch.bernoulli(torch.full((3,), 0.5)),
        torch.bernoulli(z(2, 2), 0.5),
        torch.poisson(torch.full((2, 3), 2.0)),
        torch.multinomial(torch.tensor([1.0, 2.0, 3.0]), 2),
        torch.multinomial(torch.tensor([[1.0, 2.0], [0.0, 1.0]]), 5, replacement=True),
        torch.rand_like(z(2, 3)),
        torch.randn_like(z(3)),
        torch.randint_like(z(4), 10),
        torch.randint_like(torch.tensor([1, 2]), 3, 5),
    ]


def test_random_shapes_dtypes_and_seeding():
    tg.manual_seed(3)
    first = _draws()
    tg.manual_seed(3)
    again = _draws()
    for a, b, t in zip(first, again, _torch_draws(), strict=True):
        assert tuple(a.shape) == tuple(t.shape)
        assert (np.dtype(a.dtype).kind == "f") == t.is_floating_point(), (a.dtype, t.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(np.unique(first[5].numpy())) <= {0.0, 1.0}
    assert np.all(first[12].numpy() == np.floor(first[12].numpy()))
    assert np.all((first[13].numpy() >= 3) & (first[13].numpy() < 5))
    m = first[8].numpy()
    assert m.dtype == np.int64 and m[0] != m[1]


def test_random_moments():
    tg.manual_seed(5)
    n = 20000
    s = tg.normal(tg.full((n,), 2.0), tg.full((n,), 3.0)).numpy()
    assert abs(s.mean() - 2.0) < 0.1 and abs(s.std() - 3.0) < 0.1
    assert abs(tg.bernoulli(tg.full((n,), 0.3)).numpy().mean() - 0.3) < 0.02
    p = tg.poisson(tg.full((n,), 4.0)).numpy()
    assert abs(p.mean() - 4.0) < 0.1 and abs(p.var() - 4.0) < 0.3
    w = np.array([1.0, 0.0, 3.0])
    counts = np.bincount(tg.multinomial(tg.tensor(w), n, True).numpy(), minlength=3) / n
    np.testing.assert_allclose(counts, w / w.sum(), atol=0.02)
    # without replacement: the first pick has the weights' distribution, zero weights last
    firsts = np.array(
        [tg.multinomial(tg.tensor([1.0, 0.0, 3.0, 0.0]), 4).numpy() for _ in range(2000)]
    )
    np.testing.assert_allclose(
        np.bincount(firsts[:, 0], minlength=4) / 2000, [0.25, 0, 0.75, 0], atol=0.04
    )
    assert set(map(tuple, firsts[:, 2:])) <= {(1, 3), (3, 1)}
    ri = tg.randint_like(tg.zeros(n), 2, 6).numpy()
    assert set(np.unique(ri)) == {2.0, 3.0, 4.0, 5.0}


def test_random_draws_have_zero_derivative_as_torch():
    mean = tg.tensor([1.0, 2.0], requires_grad=True)
    std = tg.tensor([0.5, 1.0], requires_grad=True)
    probs = tg.tensor([0.2, 0.7], requires_grad=True)
    rates = tg.tensor([1.0, 3.0], requires_grad=True)
    outs = [tg.normal(mean, std), tg.normal(mean, 2.0), tg.normal(0.0, std)]
    outs += [tg.bernoulli(probs), tg.poisson(rates)]
    assert all(o.requires_grad for o in outs)
    g = tg.autograd.grad(sum(o.sum() for o in outs), [mean, std, probs, rates])
    for x in g:
        np.testing.assert_array_equal(x.numpy(), 0.0)
    tm = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.normal(tm, 1.0).sum().backward()
    np.testing.assert_array_equal(tm.grad.numpy(), 0.0)


def test_random_draws_in_a_trace_are_refused():
    def f(x):
        return x + tg.normal(x, 1.0)

    with pytest.raises(RuntimeError, match="random"):
        tg.trace(f, tg.tensor([0.0, 1.0]))


@pytest.mark.parametrize("increasing", [False, True])
def test_vander_derivatives_against_powers(increasing):
    """PyTorch's own vander fails in backward (an in-place modification error), so its
    derivatives are compared with PyTorch's x[:, None] ** k (0 ** 0 has derivative 0 there,
    as the products here give)."""
    x0 = np.array([0.0, 2.0, -1.5])  # (at 0 PyTorch's second derivative of x ** k is nan)
    k = np.arange(5) if increasing else np.arange(4, -1, -1)
    w = np.cos(np.arange(15.0)).reshape(3, 5)
    xt = torch.tensor(x0, requires_grad=True)
    loss_t = ((xt[:, None] ** torch.tensor(k)) ** 2 * torch.tensor(w)).sum()
    (gt,) = torch.autograd.grad(loss_t, xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    x = tg.tensor(x0, requires_grad=True)
    v = tg.vander(x, N=5, increasing=increasing)
    (g,) = tg.autograd.grad((v * v * tg.tensor(w)).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad((g * g).sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy()[1:], ht.numpy()[1:], rtol=1e-12)
    assert np.isfinite(h.numpy()[0])


def test_pdist_second_derivative_by_finite_differences():
    """PyTorch has no double backward for pdist; tapegrad's is checked numerically."""
    for p in (1.5, 2.0, 3.0):
        x = tg.tensor(A.T, requires_grad=True)  # (no two rows share a coordinate)
        assert tg.gradgradcheck(lambda x, p=p: tg.pdist(x, p), (x,))


JVP = {
    "gradient_coords": lambda m, x: m.gradient(
        x * x, spacing=(m.cumsum(m.exp(x), 0),), edge_order=2
    )[0],
    "block_diag": lambda m, x: m.block_diag(x[:2], x[2:].reshape(2, 1)) ** 2,
    "cartesian_prod": lambda m, x: m.cartesian_prod(x[:2], x[2:]) ** 3,
    "combinations": lambda m, x: m.combinations(x, 2).prod(1),
    "meshgrid": lambda m, x: m.meshgrid(x[:2], x, indexing="xy")[0] * x[:2],
    "cumulative_trapezoid": lambda m, x: m.cumulative_trapezoid(x * x, m.cumsum(m.exp(x), 0)),
    "dist": lambda m, x: m.dist(x, x.flip(0), 3),
    "stacks": lambda m, x: m.vstack([x, x**2]).sum(0) * m.dstack([x, x])[0, :, 1],
    "chain_matmul": lambda m, x: m.chain_matmul(x.reshape(2, 2), x.reshape(2, 2)),
}


@pytest.mark.parametrize("name", JVP)
def test_forward_mode_matches_torch_func_jvp(name):
    x0, t0 = np.array([0.5, -1.0, 2.0, 0.3]), np.array([1.0, 0.5, -0.2, 0.7])
    f = JVP[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tt = torch.func.jvp(lambda x: f(torch, x), (torch.tensor(x0),), (torch.tensor(t0),))
    _, tangent = tg.jvp(lambda x: f(tg, x), (tg.tensor(x0),), (tg.tensor(t0),))
    np.testing.assert_allclose(np.asarray(tangent), tt.numpy(), rtol=1e-10, atol=1e-12)


def test_traces_of_value_dependent_choices_ask_for_a_retrace():
    """isin and the tied maxima of pdist's infinity norm read values: a replay whose values
    choose differently retraces instead of reusing the recorded choice."""
    tr = tg.trace(lambda x: tg.isin(x, tg.tensor([1.0, 2.0])) * x, tg.tensor([1.0, 3.0]))
    with pytest.raises(tg.RetraceRequired):
        tr(tg.tensor([3.0, 1.0]))
    tr = tg.trace(lambda x: tg.pdist(x.reshape(2, 2), INF), tg.tensor([0.0, 0.0, 1.0, 2.0]))
    with pytest.raises(tg.RetraceRequired):
        tr(tg.tensor([0.0, 0.0, 1.0, 1.0]))
