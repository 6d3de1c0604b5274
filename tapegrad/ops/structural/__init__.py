"""Structural ops: reductions, shape, indexing and linear algebra, each declared once.

Kernels are plain functions; the generator copies their source into the generated kernel
module (so Numba's cache, keyed on that file, sees them) and calls them from every sweep.
Argument conventions (see ``decl.Structural``):

    forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool)
    backward(G, A, B, V, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)

``lo``/``n``: the row's value offset and size; ``pa``/``pb``: the operands' offsets; ``p``:
the start of the row's integer parameters in ``ipool``.  ``kind`` is 0 in a plain backward
(a large matmul may hand itself to NumPy's BLAS) and 1 inside higher-order sweeps.

The Tensor-level rules ``vjp(rows, r, g)`` and ``jvp(rows, r, tangent)`` receive ``rows``, a
view of the tape with differentiable ops (``rows.ops``); see ``autograd/rows.py``.
"""

import math

from ..decl import Structural
from .choice import where_backward, where_forward, where_jvp, where_vjp
from .file_checks import (
    concat_check,
    gather_check,
    matmul_check,
    no_params_check,
    reduce_check,
    scatter_check,
    setitem_check,
    view_check,
    where_check,
)
from .helpers import HIT_MATMUL as HIT_MATMUL  # (the generator writes it in)
from .helpers import SMALL_MATMUL as SMALL_MATMUL
from .helpers import pairwise_sum, reduce_groups, strided_offsets
from .index_maps import linear, strided_move
from .indexing import (
    index_list,
    index_offsets,
    setitem_backward,
    setitem_forward,
    setitem_jvp,
    setitem_vjp,
)
from .linalg import (
    lane_matmul,
    matmul_backward,
    matmul_backward_tangent_lanes,
    matmul_forward,
    matmul_jvp,
    matmul_layout,
    matmul_tangent_lanes,
    matmul_vjp,
)
from .reductions import (
    amax_forward,
    amin_forward,
    extreme_backward,
    extreme_backward_tangent_lanes,
    extreme_into,
    extreme_jvp,
    extreme_tangent,
    extreme_tangent_lanes,
    extreme_vjp,
    extreme_weights,
    prod_backward,
    prod_backward_tangent,
    prod_forward,
    prod_jvp,
    prod_tangent,
    prod_vjp,
    reduce_index,
    reduce_offsets,
    sum_scatter,
    sum_take,
)
from .scans import scan
from .shape import (
    concat_backward,
    concat_forward,
    concat_jvp,
    concat_operands,
    concat_vjp,
    view_index,
    view_offsets,
    view_scatter,
    view_take,
)

S = Structural
_EXTREME_HELPERS = (extreme_weights, extreme_into, reduce_offsets, strided_offsets)

OPS = (
    S(
        "WHERE",
        where_forward,
        where_backward,
        where_vjp,
        where_jvp,
        numpy=("where",),
        operand_adjoints_only=True,
        arity=2,
        same_size=True,
        check=where_check,
    ),
    # linear ops: an index map each (index_maps.py writes kernels, transpose and rules from it)
    linear(
        "VIEW",
        offsets=view_offsets,
        index=view_index,
        scatter=view_scatter,
        take=view_take,
        helpers=(strided_offsets, strided_move, pairwise_sum),
        numpy=("broadcast_to", "transpose", "__getitem__"),
        check=view_check,
    ),
    linear(
        "RESHAPE",
        numpy=("reshape", "ravel", "squeeze", "expand_dims"),
        same_size=True,
        check=no_params_check,
    ),
    linear(
        "SUM",
        gather=False,
        offsets=reduce_offsets,
        index=reduce_index,
        scatter=sum_scatter,
        take=sum_take,
        helpers=(strided_offsets, strided_move, pairwise_sum),
        numpy=("sum",),
        check=reduce_check,
    ),
    S(
        "PROD",
        prod_forward,
        prod_backward,
        prod_vjp,
        prod_jvp,
        tangent=prod_tangent,
        backward_tangent=prod_backward_tangent,
        helpers=(reduce_groups, reduce_offsets, strided_offsets),
        numpy=("prod",),
        domain=(0.3, 2.0),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "AMAX",
        amax_forward,
        extreme_backward,
        extreme_vjp,
        extreme_jvp,
        tangent=extreme_tangent,
        tangent_lanes=extreme_tangent_lanes,
        backward_tangent_lanes=extreme_backward_tangent_lanes,
        helpers=_EXTREME_HELPERS,
        numpy=("max", "amax"),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "AMIN",
        amin_forward,
        extreme_backward,
        extreme_vjp,
        extreme_jvp,
        tangent=extreme_tangent,
        tangent_lanes=extreme_tangent_lanes,
        backward_tangent_lanes=extreme_backward_tangent_lanes,
        helpers=_EXTREME_HELPERS,
        numpy=("min", "amin"),
        operand_adjoints_only=True,
        check=reduce_check,
    ),
    S(
        "MATMUL",
        matmul_forward,
        matmul_backward,
        matmul_vjp,
        matmul_jvp,
        tangent="bilinear",
        backward_tangent="bilinear",
        tangent_lanes=matmul_tangent_lanes,
        backward_tangent_lanes=matmul_backward_tangent_lanes,
        helpers=(matmul_layout, lane_matmul),
        zeroes_operands=True,
        graph="MmBackward0",
        numpy=("matmul", "dot", "__matmul__"),
        operand_adjoints_only=True,
        arity=2,
        check=matmul_check,
    ),
    S(
        "CONCAT",
        concat_forward,
        concat_backward,
        concat_vjp,
        concat_jvp,
        graph="CatBackward0",
        operands=concat_operands,
        numpy=("concatenate", "stack"),
        arity=0,
        check=concat_check,
    ),
    linear(
        "GATHER",
        offsets=index_offsets,
        index=index_list,
        graph="IndexBackward0",
        numpy=("__getitem__",),
        check=gather_check,
    ),
    S(
        "SETITEM",
        setitem_forward,
        setitem_backward,
        setitem_vjp,
        setitem_jvp,
        graph="IndexPutBackward0",
        numpy=("__setitem__",),
        operand_adjoints_only=True,
        arity=2,
        check=setitem_check,
    ),
    linear(
        "SCATTER",
        gather=False,
        offsets=index_offsets,
        index=index_list,
        check=scatter_check,
    ),
    # scans: one combine formula each (scans.py writes the kernels and the rules from it);
    # LINREC, the linear recurrence, is the one the others' derivatives are written with
    scan("LINREC", "a * s + b", 0.0),
    scan(
        "CUMSUM",
        "s + a",
        0.0,
        ufunc="add",
        numpy=("cumsum",),
        doc="np.cumsum (one CUMSUM row; its backward is a running sum the other way).",
        example=("[1.0, 2.0, 3.0]", "[1., 3., 6.]", "[3., 2., 1.]"),
    ),
    scan(
        "CUMPROD",
        "s * a",
        1.0,
        ufunc="multiply",
        numpy=("cumprod",),
        doc="np.cumprod (one CUMPROD row); gradients exact with zeros, at every order.",
        example=("[1.0, 2.0, 3.0]", "[1., 2., 6.]", "[9., 4., 2.]"),
    ),
    scan(
        "LOGCUMSUMEXP",
        "logaddexp(s, a)",
        -math.inf,
        ufunc="logaddexp",
        doc="log(cumsum(exp(x))) along an axis, computed stably (np.logaddexp.accumulate's "
        "value); the gradient of out_k in x_j is the softmax weight exp(x_j - out_k).",
        example=("[0.0, 0.0, 0.0]", "[0.0000, 0.6931, 1.0986]", "[1.8333, 0.8333, 0.3333]"),
    ),
)
