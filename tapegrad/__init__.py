"""tapegrad: automatic differentiation on a flat Wengert tape.

The forward pass appends op codes and operand rows to preallocated arrays; compiled sweeps,
generated from one op spec (``tapegrad/ops``), run over them: reverse, forward replay,
tangent and second order.  See README.md for a tour and docs/ARCHITECTURE.md for the layers:
``ops`` (the spec), ``kernels`` (generated sweeps), ``core`` (tape, Tensor, differentiable
functions), ``autograd`` (the engine), ``transforms``, ``trace``, ``numpy``, ``nn``, ``optim``.
"""

from . import _numba_cache  # noqa: F401  (first: a writable Numba cache before any kernel)
from .autograd import graph as _graph  # noqa: F401  (grad_fn views)
from .core.creation import (
    arange,
    eye,
    full,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .core.functions import (
    abs_ as abs,
    amax,
    amin,
    broadcast_to,
    concatenate,
    dot,
    expand_dims,
    leaky_relu,
    log_softmax,
    logsumexp,
    matmul,
    mean,
    mul,
    power,
    prod,
    reshape,
    softmax,
    stack,
    sum,
    where,
)
from .core.ufuncs import *  # noqa: F403  (the declared elementwise functions: tg.exp ...)
from .core.methods import broadcasting as _broadcasting
from .core.tape import Tape, current_tape
from .core.tensor import ConversionError
from .tensor_class import Tensor
from . import autograd
from .autograd.engine import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import inference_mode
from .testing import gradcheck, gradgradcheck


# PyTorch's names and meanings (as the Tensor methods'); dim= / keepdim= wherever NumPy's
# axis= / keepdims= are taken
from .core.torch_functions import (  # noqa: E402
    add,
    addbmm,
    addcdiv,
    addcmul,
    addmm,
    addmv,
    addr,
    all_ as all,
    allclose,
    aminmax,
    any_ as any,
    argmax,
    argmin,
    argsort,
    argwhere,
    as_tensor,
    baddbmm,
    bmm,
    bucketize,
    cat,
    chunk,
    clamp,
    clamp_max,
    clamp_min,
    count_nonzero,
    cross,
    cummax,
    cummin,
    diag,
    diag_embed,
    diagflat,
    div,
    divide,
    double,
    dsplit,
    eq,
    equal,
    fix,
    flatten,
    flip,
    fliplr,
    flipud,
    float32,
    float64,
    float_power,
    floor_divide,
    fmax,
    fmin,
    frac,
    from_numpy,
    gather,
    ge,
    ger,
    greater,
    greater_equal,
    gt,
    histc,
    hsplit,
    index_add,
    index_copy,
    index_fill,
    index_put,
    index_select,
    inner,
    int32,
    int64,
    is_floating_point,
    isclose,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    kron,
    kthvalue,
    le,
    lerp,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logit,
    long,
    lt,
    masked_fill,
    masked_scatter,
    masked_select,
    max,
    median,
    min,
    mm,
    mode,
    moveaxis,
    movedim,
    msort,
    multiply,
    mv,
    nanmean,
    nanmedian,
    nanquantile,
    nansum,
    narrow,
    ne,
    negative,
    norm,
    not_equal,
    numel,
    permute,
    positive,
    put,
    repeat_interleave,
    roll,
    rot90,
    rsqrt,
    scatter,
    scatter_add,
    scatter_reduce,
    searchsorted,
    select,
    sgn,
    signbit,
    sort,
    split,
    squeeze,
    std,
    std_mean,
    sub,
    subtract,
    swapaxes,
    swapdims,
    take_along_dim,
    tensor_split,
    tile,
    topk,
    transpose,
    tril,
    triu,
    true_divide,
    unbind,
    unflatten,
    unique,
    unique_consecutive,
    var,
    var_mean,
    vsplit,
    xlogy,
    dims_keyword as _dims_keyword,
    nonzero_alone as _nonzero_alone,
    operand_list as _operand_list,
    recorder as _recorder,
    torch_nan_to_num as _torch_nan_to_num,
    torch_keyword_names as _torch_keyword_names,
    torch_quantile as _torch_quantile,
    torch_scan as _torch_scan,
    torch_vectors as _torch_vectors,
    with_dim as _with_dim,
)

pow = power  # noqa: A001 - PyTorch's name
broadcast_to = _broadcasting(broadcast_to)  # a view of x, as PyTorch's and NumPy's
atan2 = arctan2  # noqa: F405 - PyTorch's name (tg.arctan2 comes from core.ufuncs)
clip = clamp
unsqueeze = expand_dims

from ._version import __version__  # noqa: E402

from . import nn, optim  # noqa: E402  (built on the namespace above)
from .nn.distance import cdist  # noqa: E402  (PyTorch's torch.cdist)
from .core.torch_functions import (  # noqa: E402  (the functions of more Tensor methods)
    absolute,
    adjoint,
    bincount,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    copysign,
    corrcoef,
    cov,
    diagonal_scatter,
    frexp,
    gcd,
    heaviside,
    histogram,
    index_reduce,
    is_complex,
    is_nonzero,
    is_same_size,
    is_signed,
    isreal,
    lcm,
    ldexp,
    matrix_exp,
    matrix_power,
    lgamma,
    mvlgamma,
    nextafter,
    renorm,
    select_scatter,
    slice_scatter,
    split_with_sizes,
    vdot,
)
from .nn.distance import cosine_similarity, pairwise_distance  # noqa: E402  (PyTorch's too)
from .core.creation import (  # noqa: E402  (more of PyTorch's constructors and draws)
    Generator,
    empty,
    empty_like,
    full_like,
    logspace,
    multinomial,
    rand_like,
    randint,
    randint_like,
    randn_like,
    randperm,
    tril_indices,
    triu_indices,
)
from .core.torch_extra_functions import (  # noqa: E402  (more of PyTorch's functions)
    atleast_1d,
    atleast_2d,
    atleast_3d,
    bernoulli,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    can_cast,
    cartesian_prod,
    chain_matmul,
    clone,
    column_stack,
    combinations,
    concat,
    cumulative_trapezoid,
    diagonal,
    dist,
    dstack,
    gradient,
    hstack,
    is_tensor,
    isin,
    meshgrid,
    nonzero,
    normal,
    pdist,
    poisson,
    promote_types,
    result_type,
    row_stack,
    take,
    trapezoid,
    vander,
    vstack,
)

# ---- functional transforms and NumPy dispatch ----
from . import numpy  # noqa: E402  (`import tapegrad.numpy as tnp`)
from . import linalg  # noqa: E402  (PyTorch's torch.linalg, on tapegrad.numpy's)
from .numpy.tensor_methods import (  # noqa: E402  (PyTorch's, as the methods)
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    det,
    i0,
    inverse,
    logdet,
    pinverse,
    qr,
    slogdet,
    svd,
    triangular_solve,
)
from .core.functions import square  # noqa: E402
from .core.functions import (  # noqa: E402
    around,
    deg2rad,
    degrees,
    mod,
    nan_to_num,
    polygamma,
    rad2deg,
    radians,
    reciprocal,
)
from .numpy.complex_parts import angle, conj, imag, real  # noqa: E402
from .numpy.contractions import einsum, outer, tensordot  # noqa: E402
from .numpy.statistics import (  # noqa: E402
    average,
    diff,
    partition,
    percentile,
    ptp,
    quantile,
)

round = around  # noqa: A001 - NumPy's name
where = _nonzero_alone(where)  # tg.where(condition): its nonzero indices
einsum = _operand_list(einsum)  # PyTorch's tg.einsum(eq, [a, b]) too
tensordot = _dims_keyword(tensordot)  # PyTorch's dims= too
quantile = _torch_quantile(quantile)  # PyTorch's signature on Tensors outside NumPy code
nan_to_num = _torch_nan_to_num(nan_to_num)  # (the same)
dot, outer = _torch_vectors(dot), _torch_vectors(outer)  # 1-D Tensors outside NumPy code

# dim= / keepdim= as on the methods
sum, mean, prod, amax, amin = (_with_dim(f) for f in (sum, mean, prod, amax, amin))  # noqa: A001
logsumexp, softmax, log_softmax = (_with_dim(f) for f in (logsumexp, softmax, log_softmax))
concatenate, stack = (_with_dim(f) for f in (concatenate, stack))
diff = _with_dim(diff)
expand_dims = unsqueeze = _with_dim(expand_dims)
from .transforms.functional import (  # noqa: E402
    elementwise_grad,
    grad,
    jacobian,
    value_and_grad,
    vjp,
)


# ---- custom Functions, checkpointing, inspection, anomaly mode ----
from .autograd.anomaly import detect_anomaly, is_anomaly_enabled  # noqa: E402
from .autograd.checkpoint import checkpoint  # noqa: E402
from .autograd.function import Function, FunctionCtx  # noqa: E402

# ---- forward mode and second order ----
from .errors import ForwardModeError  # noqa: E402
from .transforms.second_order import hessian, hvp, jacfwd, jacrev, jvp  # noqa: E402
from .transforms.vmap import vmap_jax as vmap  # noqa: E402  (JAX's names; tg.func.vmap: PyTorch's)
from . import func  # noqa: E402  (PyTorch's torch.func)

# ---- record once, replay many ----
from .trace import RetraceRequired, Traced, load_trace, trace, traced  # noqa: E402

trace = _recorder(trace)  # a matrix in the place of f: a TypeError naming x.trace()

# ---- functional toolkit: pytrees, custom rules, implicit fixed points, optimizers ----
from . import optimizers, tree  # noqa: E402
from .transforms.custom import custom_jvp, custom_vjp  # noqa: E402
from .transforms.fixed_point import fixed_point  # noqa: E402

# PyTorch's scans (a positional dim, dtype=) and PyTorch's keyword names (input=, other= ...)
cumsum, cumprod = _torch_scan(cumsum), _torch_scan(cumprod)  # noqa: F405
_torch_keyword_names(globals())

import importlib as _importlib  # noqa: E402
import types as _types  # noqa: E402

# submodules loaded on first use, like tapegrad.scipy's: PyTorch's torch.distributions and
# torch.special, which a first gradient does not need (they would add to every import)
_LAZY_SUBMODULES = ("distributions", "special")

# the public API: every name above without a leading underscore, and the public submodules
__all__ = sorted(
    [
        _n
        for _n, _v in list(globals().items())
        if not _n.startswith("_") and not isinstance(_v, _types.ModuleType)
    ]
    + ["autograd", "func", "linalg", "nn", "numpy", "optim", "optimizers", "testing", "tree"]
    + list(_LAZY_SUBMODULES)
)
del _types


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    """The public API only (the internal layers stay importable by their full names)."""
    return list(__all__)
