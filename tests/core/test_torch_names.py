"""Tensor methods with PyTorch's names mean what PyTorch's mean: each one runs side by side
with torch on the same inputs, and values and gradients must agree.

A method whose name torch.Tensor also has must appear in CASES (or, for attributes and
methods a value comparison cannot cover, in OTHER with the test that covers it), so a new
method with a PyTorch name cannot slip in with another meaning.
"""

import pickle

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))  # no ties, no zeros
Y = RNG.standard_normal((3, 4))
POS = np.abs(X) + 0.5
UNIT = np.tanh(X) * 0.9  # in (-1, 1)
BIG = np.abs(X) + 1.5  # > 1
X3 = RNG.standard_normal((3, 1, 4))
V = RNG.standard_normal(4)
SQ = RNG.standard_normal((4, 4))
ZEROS = np.where(X > 0.3, X, 0.0)
IDX = np.array([[0, 5], [11, 2]])
MASK = X > 0.3
GIDX = np.array([[0, 3], [1, 1], [2, 0]])  # gather along dim 1 (a repeat: gradients add)
SEL = np.array([3, 0, 3])
M42 = RNG.standard_normal((4, 2))
B3 = RNG.standard_normal((2, 3, 4))
B34 = RNG.standard_normal((2, 4, 2))
# index writes: SIDX repeats positions (scatter_add adds them), UIDX does not (scatter's
# value at a repeated position is unspecified in PyTorch); the sources are larger than index
SIDX = np.array([[0, 0], [3, 1], [2, 2]])
SIDX0 = np.array([[0, 1, 1, 2], [2, 2, 0, 0]])
UIDX = np.array([[3, 0], [1, 2], [0, 3]])
IIDX = np.array([2, 0, 2])
UIDX1 = np.array([3, 0, 1])
MROW = np.array([True, False, False, True])
V3 = RNG.standard_normal(3)
XNEAR = X + 1e-9
# float arguments whose gradients are compared with torch's too
SRC = RNG.standard_normal((3, 3))
SRC32 = RNG.standard_normal((3, 2))
SRC24 = RNG.standard_normal((2, 4))
SRC4 = RNG.standard_normal((3, 4))
T1 = RNG.standard_normal((3, 4))
T2 = np.abs(RNG.standard_normal((3, 4))) + 0.5
W = RNG.uniform(0.1, 0.9, (3, 4))
V2 = RNG.standard_normal(2)
B42 = RNG.standard_normal((2, 4, 2))
X34 = RNG.standard_normal((3, 4, 3))  # a dim of 3 for cross
GRAD_ARGS = ("SRC", "SRC32", "SRC24", "SRC4", "T1", "T2", "W", "V2", "B42", "X34")
SRCBIG = SRC4  # larger than the index: its leading block is read (values only, as torch)
XNAN = np.where(np.abs(X) < 0.4, np.nan, X)  # some NaN, no lane all NaN
YNAN = np.where(np.abs(Y) < 0.4, np.nan, Y)
ALLNAN = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 0.5]])
SPD = SQ @ SQ.T + 4.0 * np.eye(4)
NEGDET = np.diag([1.0, -2.0, 3.0]) + 0.1
SEQ = np.sort(RNG.standard_normal((3, 5)), axis=1)
Q = np.array([0.0, 0.3, 0.5, 1.0])
TIDX = np.array([[0, 3], [1, 1], [2, 0]])
SIGNED = np.array([-1.5, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])


def c(name, *args, x=X, **kwargs):
    return pytest.param(name, x, args, kwargs, id=f"{name}{args}{kwargs}".replace(" ", ""))


UNARY = [
    c(n)
    for n in "abs ceil cos cosh deg2rad erf erfc exp exp2 expm1 floor neg rad2deg relu "
    "round sigmoid sign sin sinc sinh square tan tanh trunc arctan atan arcsinh asinh "
    "nan_to_num clone".split()
]
UNARY += [c(n, x=UNIT) for n in "acos arccos asin arcsin atanh arctanh erfinv".split()]
UNARY += [c(n, x=BIG) for n in "acosh arccosh".split()]
UNARY += [c(n, x=POS) for n in "log log10 log1p log2 sqrt reciprocal digamma lgamma".split()]
UNARY += [c(n) for n in "frac sgn fix negative positive i0 contiguous is_contiguous".split()]
UNARY += [c("logit", x=W), c("logit", 0.2, x=W), c("logit", eps=0.3, x=W)]
UNARY += [
    c(n, x=SIGNED) for n in "isnan isinf isfinite isposinf isneginf signbit logical_not".split()
]

BINARY = [
    c(n, "Y")
    for n in "add sub mul div atan2 arctan2 hypot maximum minimum fmod remainder "
    "logaddexp logaddexp2 max min".split()
]
BINARY += [
    c("pow", "Y", x=POS),
    c("pow", 2.0),
    c("add", "Y", alpha=2.0),
    c("sub", "Y", alpha=3.0),
    c("div", "Y", rounding_mode="floor"),
    c("div", "Y", rounding_mode="trunc"),
    c("clamp", -0.5, 0.5),
    c("clamp", min=-0.5),
    c("clamp", max=0.25),
    c("clip", -0.5, 0.5),
    c("polygamma", 1, x=POS),
    c("matmul", "SQ"),
    c("dot", "V", x=V),
    c("subtract", "Y"),
    c("subtract", "T1", alpha=2.0),
    c("multiply", "T1"),
    c("divide", "T2"),
    c("divide", "Y", rounding_mode="trunc"),
    c("divide", "Y", rounding_mode="floor"),
    c("true_divide", "T2"),
    c("float_power", 2.0, x=POS),
    c("float_power", "T1", x=POS),
    c("fmax", "T1"),
    c("fmin", "T1"),
    c("fmax", "YNAN", x=XNAN),
    c("fmin", "YNAN", x=XNAN),
    c("fmax", "X"),
    c("outer", "V2", x=V3),
    c("ger", "V2", x=V3),
    c("inner", "T1"),
    c("inner", "V", x=V),
    c("kron", "SRC24"),
    c("kron", "V2", x=V3),
    c("cross", "X34", x=X34[::-1].copy()),
    c("cross", "X34", dim=2, x=X34[:, ::-1].copy()),
    c("baddbmm", "B3", "B42", x=np.ones((2, 3, 2)), beta=0.5, alpha=2.0),
    c("addbmm", "B3", "B42", x=np.ones((3, 2))),
    c("addr", "V3", "V2", x=np.ones((3, 2)), alpha=3.0),
    c("det", x=SQ),
    c("logdet", x=SPD),
    c("logdet", x=NEGDET),
    c("inverse", x=SQ),
    c("pinverse", x=M42),
    c("cholesky", x=SPD),
    c("cholesky", upper=True, x=SPD),
]
BINARY += [
    c(n, "Y") for n in "eq ne lt le gt ge greater less greater_equal less_equal not_equal".split()
]
BINARY += [
    c(n, "ZEROS", x=np.where(Y > 0, Y, 0.0)) for n in "logical_and logical_or logical_xor".split()
]

REDUCTIONS = [
    c("sum"),
    c("sum", 1),
    c("sum", dim=0, keepdim=True),
    c("sum", 1, True),
    c("sum", dtype="float64"),
    c("prod", 1, dtype="float64"),
    c("mean", 1),
    c("prod", 1),
    c("amax", 1),
    c("amin", 0),
    c("max"),
    c("min"),
    c("max", 1),
    c("max", dim=0, keepdim=True),
    c("min", 1),
    c("min", dim=1, keepdim=True),
    c("std"),
    c("std", 1),
    c("std", 1, unbiased=False),
    c("std", False),
    c("var", True),
    c("std", dim=0, correction=0),
    c("std", dim=(0, 1), keepdim=True),
    c("var"),
    c("var", 1, keepdim=True),
    c("var", unbiased=False),
    c("var", dim=0, correction=2),
    c("logsumexp", 1),
    c("softmax", 1),
    c("log_softmax", 0),
    c("cumsum", 1),
    c("cumprod", 0),
    c("logcumsumexp", 1),
    c("logcumsumexp", dim=0),
    c("argmax"),
    c("argmax", 1),
    c("argmin", 0, keepdim=True),
    c("argsort", 1),
    c("argsort", dim=0, descending=True),
    c("sort"),
    c("sort", 0, descending=True),
    c("all", x=ZEROS),
    c("any", 1, x=ZEROS),
    c("all", dim=0, x=ZEROS),
    c("nonzero", x=ZEROS),
    c("trace", x=SQ),
    c("nansum", x=XNAN),
    c("nansum", 1, x=XNAN),
    c("nansum", dim=0, keepdim=True, x=XNAN),
    c("nanmean", x=XNAN),
    c("nanmean", 1, True, x=XNAN),
    c("nanmedian", x=XNAN),
    c("nanmedian", 1, x=XNAN),
    c("nanmedian", 0, keepdim=True, x=XNAN),
    c("nanmedian", 1, x=ALLNAN),
    c("nanmedian", x=X),
    c("quantile", 0.3),
    c("quantile", 0.5, 1),
    c("quantile", "Q", 0, True),
    c("quantile", "Q", dim=1, interpolation="lower"),
    c("quantile", 0.4, dim=1, interpolation="higher"),
    c("quantile", 0.7, dim=1, interpolation="nearest"),
    c("quantile", 0.5, dim=1, interpolation="nearest"),
    c("quantile", 0.3, dim=0, interpolation="midpoint"),
    c("quantile", 0.3, keepdim=True),
    c("quantile", 0.6, 1, x=XNAN),
    c("nanquantile", 0.6, 1, x=XNAN),
    c("nanquantile", "Q", x=XNAN),
    c("nanquantile", 0.5, 1, x=ALLNAN),
    c("nanquantile", 0.25, 0, interpolation="midpoint", x=XNAN),
    c("msort"),
    c("argwhere", x=ZEROS),
]

SHAPES = [
    c("reshape", 4, 3),
    c("reshape", (2, 6)),
    c("view", -1),
    c("view", 2, 6),
    c("flatten"),
    c("flatten", 0, 1, x=X3),
    c("flatten", 1, x=X3),
    c("ravel"),
    c("transpose", 0, 1),
    c("transpose", 0, 2, x=X3),
    c("permute", 1, 0),
    c("permute", (2, 0, 1), x=X3),
    c("t"),
    c("t", x=V),
    c("squeeze", x=X3),
    c("squeeze", 1, x=X3),
    c("squeeze", 0, x=X3),
    c("unsqueeze", 0),
    c("unsqueeze", -1),
    c("expand", 2, 3, 4),
    c("expand", 3, -1, 4, x=X3),
    c("broadcast_to", (2, 3, 4)),
    c("repeat", 2, 3),
    c("repeat", 2, 1, 1),
    c("repeat", (1, 2)),
    c("repeat_interleave", 2),
    c("repeat_interleave", 3, dim=1),
    c("diagonal"),
    c("diagonal", 1),
    c("diagonal", -1, x=SQ),
    c("median", x=SQ),
    c("median", 1),
    c("median", dim=0, keepdim=True),
    c("norm"),
    c("norm", 1),
    c("norm", 3, 1),
    c("norm", float("inf"), dim=(0, 1), keepdim=True),
    c("swapaxes", 0, 1),
    c("take", "IDX"),
    c("flip", 1),
    c("flip", (0, 1)),
    c("flip", 0, 1),
    c("roll", 1),
    c("roll", (1, -2), (0, 1)),
    c("tril"),
    c("tril", -1),
    c("triu", 1),
    c("narrow", 1, 1, 2),
    c("select", 0, 2),
    c("index_select", 1, "SEL"),
    c("masked_fill", "MASK", 0.5),
    c("gather", 1, "GIDX"),
    c("mm", "M42"),
    c("mv", "V"),
    c("bmm", "B34", x=B3),
    c("rsqrt", x=POS),
    c("unbind", 1),
    c("chunk", 3, 1),
    c("chunk", 2),
    c("new_full", (2,), 3.0),
    c("new_zeros", 2, 2),
    c("new_ones", (3,)),
    c("expand_as", "B34", x=np.ones((4, 1))),
    c("view_as", "SQ", x=np.ones((2, 8))),
    c("reshape_as", "M42", x=np.ones((2, 4))),
    c("size"),
    c("size", 1),
    c("size", -1),
    c("numel"),
    c("dim"),
    c("float"),
    c("double"),
    c("long"),
    c("int"),
    c("bool", x=ZEROS),
    c("to", "float64"),
    c("to", "int64"),
    c("to", "cpu"),
    c("detach"),
    c("tolist"),
    c("cpu"),
    c("scatter_add", 1, "SIDX", "SRC32"),
    c("scatter_add", 0, "SIDX0", "SRC24"),
    c("scatter_add", 1, "SIDX", "SRCBIG"),
    c("scatter", 1, "UIDX", "SRC32"),
    c("scatter", 0, "SIDX0", "SRCBIG"),
    c("scatter", 1, "UIDX", 2.5),
    c("scatter", 1, "UIDX", value=-1.0),
    c("index_add", 0, "IIDX", "SRC4"),
    c("index_add", 1, "SEL", "SRC", alpha=2.0),
    c("index_copy", 1, "UIDX1", "SRC"),
    c("index_fill", 1, "SEL", -1.0),
    c("masked_select", "MASK"),
    c("masked_select", "MROW"),
    c("masked_scatter", "MASK", "SRC4"),
    c("topk", 2),
    c("topk", 2, 0, largest=False),
    c("topk", 3, dim=1, sorted=True),
    c("kthvalue", 2),
    c("kthvalue", 1, 0, True),
    c("cummax", 1),
    c("cummax", 0),
    c("cummin", 1),
    c("aminmax"),
    c("aminmax", dim=1, keepdim=True),
    c("movedim", 0, 2, x=X3),
    c("movedim", (0, 1), (2, 0), x=X3),
    c("moveaxis", -1, 0, x=X3),
    c("swapdims", 0, 1),
    c("split", 1, 1),
    c("split", 2),
    c("split", [1, 3], 1),
    c("tensor_split", 3, 1),
    c("tensor_split", [1, 2]),
    c("tile", 2),
    c("tile", (2, 1, 2)),
    c("unflatten", 1, (2, 2)),
    c("unflatten", 1, (-1, 2)),
    c("diff"),
    c("diff", 2, 0),
    c("where", "MASK", "T1"),
    c("addmm", "T1", "SQ", beta=0.5, alpha=2.0),
    c("addmm", "T1", "SQ"),
    c("addmv", "T1", "V", x=V3, alpha=3.0),
    c("addcmul", "T1", "T2", value=0.5),
    c("addcdiv", "T1", "T2", value=2.0),
    c("lerp", "T1", 0.3),
    c("lerp", "T1", "W"),
    c("xlogy", "T2", x=ZEROS),
    c("xlogy", 2.0),
    c("clamp_min", 0.1),
    c("clamp_max", 0.1),
    c("type_as", "IDX"),
    c("type_as", "T1"),
    c("new_tensor", [1, 2]),
    c("nelement"),
    c("element_size"),
    c("is_floating_point"),
    c("count_nonzero", x=ZEROS),
    c("count_nonzero", 1, x=ZEROS),
    c("isclose", "XNEAR"),
    c("allclose", "XNEAR"),
    c("allclose", "Y"),
    c("equal", "Y"),
    c("equal", "X"),
    c("diag"),
    c("diag", 1),
    c("diag", -2),
    c("diag", x=V),
    c("diag", 2, x=V),
    c("diag", -1, x=V),
    c("diag_embed"),
    c("diag_embed", 1),
    c("diag_embed", -1, 0, 2),
    c("diag_embed", dim1=0, dim2=1, x=V),
    c("diagflat"),
    c("diagflat", -1),
    c("rot90"),
    c("rot90", 2),
    c("rot90", 3, (0, 2), x=X3),
    c("rot90", -1, [1, 0]),
    c("fliplr"),
    c("flipud"),
    c("flipud", x=V),
    c("take_along_dim", "TIDX", 1),
    c("take_along_dim", "IDX"),
    c("take_along_dim", "SEL", x=V),
    c("ndimension"),
    c("hsplit", 2),
    c("hsplit", [1, 3]),
    c("vsplit", 3),
    c("vsplit", [2]),
    c("dsplit", 2, x=X3),
    c("short", x=BIG * 3),
    c("byte", x=BIG * 3),
    c("char", x=X * 3),
]

INPLACE = [
    c("add_", "Y"),
    c("sub_", "Y"),
    c("mul_", "Y"),
    c("div_", "Y"),
    c("clamp_", -0.5, 0.5),
    c("zero_"),
    c("fill_", 2.5),
    c("add_", "T1", alpha=2.0),
    c("sub_", "T1", alpha=0.5),
    c("scatter_add_", 1, "SIDX", "SRC32"),
    c("scatter_", 1, "UIDX", "SRC32"),
    c("index_add_", 0, "IIDX", "SRC4"),
    c("index_copy_", 1, "UIDX1", "SRC"),
    c("index_fill_", 1, "SEL", -1.0),
    c("masked_fill_", "MASK", 0.5),
    c("masked_scatter_", "MASK", "SRC4"),
    c("clamp_min_", 0.1),
    c("clamp_max_", 0.1),
    c("lerp_", "T1", "W"),
    c("addcmul_", "T1", "T2"),
    c("addcdiv_", "T1", "T2", value=0.5),
    c("exp_"),
    c("abs_"),
    c("neg_"),
    c("negative_"),
    c("sqrt_", x=POS),
    c("sin_"),
    c("cos_"),
    c("tanh_"),
    c("sigmoid_"),
    c("relu_"),
    c("log_", x=POS),
    c("square_"),
    c("reciprocal_", x=POS),
    c("pow_", 3.0),
    c("pow_", "T1", x=POS),
    c("t_", x=SQ),
    c("copy_", "T1"),
    c("copy_", "V2", x=np.zeros((3, 2))),
    c("detach_"),
]

CASES = UNARY + BINARY + REDUCTIONS + SHAPES + INPLACE

# torch's trigamma (digamma's derivative, polygamma(1)) is good to ~5e-10 only (tapegrad's
# agrees with mpmath to 1 ulp at these points); torch's x.float() is float32, tapegrad's
# float64 (its only differentiable dtype)
RTOL = {"digamma": 1e-8, "polygamma": 1e-8, "float": 1e-6}

# torch.Tensor names covered by other tests (attributes, autograd machinery, conversions
# whose result is NumPy's by contract): name -> where
OTHER = {
    "T": "test_attributes",
    "shape": "test_attributes",
    "ndim": "test_attributes",
    "dtype": "a NumPy dtype by contract (test_attributes)",
    "data": "test_tensor_semantics",
    "grad": "test_tensor_semantics",
    "grad_fn": "test_inspect",
    "is_leaf": "test_tensor_semantics",
    "requires_grad": "test_tensor_semantics",
    "requires_grad_": "test_tensor_semantics",
    "backward": "every gradient check here",
    "register_hook": "test_hooks",
    "register_post_accumulate_grad_hook": "test_post_accumulate_once_differentiable",
    "retain_grad": "test_hooks",
    "numpy": "test_tensor_semantics",
    "item": "test_scalar_protocols",
    "real": "complex values are refused; a real Tensor is its own real part",
    "imag": "complex values are refused; the imaginary part of a real Tensor is zeros",
    "conj": "test_silent_wrong (a real Tensor's conjugate is a copy)",
    "mT": "test_matrix_attributes",
    "mH": "test_matrix_attributes",
    "H": "test_matrix_attributes",
    "nbytes": "test_matrix_attributes",
    "itemsize": "test_matrix_attributes",
    "half": "test_lower_precision_floats_refuse_a_gradient",
    "bfloat16": "test_lower_precision_floats_refuse_a_gradient",
    "floor_divide": "test_floor_divide_is_piecewise_constant (torch has no derivative there)",
    "slogdet": "test_slogdet (torch's sign output requires grad, with no gradient)",
    "new_empty": "test_new_empty (torch's memory is uninitialised; tapegrad's zeros)",
}
OTHER.update(  # compared with torch in tests/core/test_factories_signatures_torch.py
    dict.fromkeys(
        "cholesky_inverse cholesky_solve qr svd triangular_solve".split(),
        "test_factories_signatures_torch",
    )
)
OTHER.update(  # compared with torch in tests/core/test_torch_ops_added.py
    dict.fromkeys(
        "scatter_reduce scatter_reduce_ index_put index_put_ put put_ unfold unique "
        "unique_consecutive histc mode".split(),
        "test_torch_ops_added",
    )
)
OTHER.update(  # compared with torch in tests/core/test_torch_methods_added.py
    dict.fromkeys(
        [f"{n}_" for n in tg.core.methods._INPLACE_VARIANTS]
        + "squeeze_ unsqueeze_ transpose_ swapaxes_ swapdims_ normal_ uniform_ exponential_ "
        "geometric_ log_normal_ cauchy_ random_ bernoulli_ fill_diagonal_ retains_grad "
        "absolute adjoint copysign heaviside frexp ldexp nextafter gcd lcm bitwise_and "
        "bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift "
        "matrix_power matrix_exp renorm vdot dist cov corrcoef bincount histogram mvlgamma "
        "multinomial bernoulli sum_to_size split_with_sizes slice_scatter select_scatter "
        "diagonal_scatter index_reduce is_complex is_signed is_cpu is_same_size is_nonzero "
        "isreal".split(),
        "test_torch_methods_added",
    )
)


NAMED = (
    "Y SQ V IDX MASK GIDX SEL M42 B34 SIDX SIDX0 UIDX IIDX UIDX1 MROW XNEAR X SRCBIG "
    "ZEROS YNAN SEQ Q TIDX B3 V3"
).split()


def _arg(lib, a, sources=None):
    """A case argument for ``lib`` (torch or tapegrad): named arrays become its tensors
    (those of GRAD_ARGS requiring grad, listed in ``sources``), dtype names its dtypes."""
    if isinstance(a, str) and a in GRAD_ARGS:
        t = lib.tensor(globals()[a], requires_grad=True)
        sources.append(t)
        return t
    if isinstance(a, str) and a in NAMED:
        return lib.tensor(globals()[a])
    if a in ("float64", "int64"):
        return getattr(lib, a)
    if isinstance(a, dict):  # keyword values
        return {k: _arg(lib, v, sources) for k, v in a.items()}
    return a


def _parts(out):
    """An output as a list of arrays / numbers (named tuples and tuples unpacked)."""
    if isinstance(out, tuple) and not isinstance(out, torch.Size) and not _is_shape(out):
        return [p for o in out for p in _parts(o)]
    if isinstance(out, torch.Tensor):
        return [out.detach().numpy()]
    if isinstance(out, tg.Tensor):
        return [np.asarray(out.detach().numpy())]
    if isinstance(out, torch.Size):
        return [tuple(out)]
    return [out]


def _is_shape(out):
    return all(isinstance(d, int) for d in out) and type(out).__name__ in ("Size", "tuple")


def _first_float(out):
    """The first float result of an output (what a loss is built from), or None."""
    if isinstance(out, tuple):
        for o in out:
            f = _first_float(o)
            if f is not None:
                return f
        return None
    if isinstance(out, torch.Tensor) and out.is_floating_point() and out.requires_grad:
        return out
    if isinstance(out, tg.Tensor) and out.dtype == np.float64 and out.requires_grad:
        return out
    return None


def _run(lib, name, x, args, kwargs, inplace):
    """``(x, sources, result)``: the method run on x and the case arguments."""
    xt = lib.tensor(x, requires_grad=True)
    target = xt * 1.0 if inplace else xt
    sources = []
    args = [_arg(lib, a, sources) for a in args]
    res = getattr(target, name)(*args, **_arg(lib, kwargs, sources))
    return [xt, *sources], res


@pytest.mark.parametrize("name,x,args,kwargs", CASES)
def test_method_agrees_with_torch(name, x, args, kwargs):
    inplace = name.endswith("_")
    xt, rt = _run(torch, name, x, args, kwargs, inplace)
    xg, rg = _run(tg, name, x, args, kwargs, inplace)
    pt, pg = _parts(rt), _parts(rg)
    assert len(pt) == len(pg), (rt, rg)
    for a, b in zip(pt, pg, strict=True):
        if isinstance(a, np.ndarray):
            assert np.shape(a) == np.shape(b), (a, b)
            if a.dtype.kind in "iub":
                assert np.asarray(b).dtype.kind == a.dtype.kind, (a.dtype, b)
                np.testing.assert_array_equal(b, a)
            else:
                np.testing.assert_allclose(b, a, rtol=RTOL.get(name, 1e-12), atol=1e-14)
        else:
            assert a == b or np.allclose(a, b, rtol=1e-12), (a, b)
    ft, fg = _first_float(rt), _first_float(rg)
    assert (ft is None) == (fg is None), (ft, fg)
    if ft is None:
        return
    w = RNG.standard_normal(tuple(ft.shape))
    (ft * torch.tensor(w)).sum().backward()
    (fg * w).sum().backward()
    for at, ag in zip(xt, xg, strict=True):  # x's gradient and the sources'
        if at.grad is None:
            assert ag.grad is None or not np.any(ag.grad.numpy())
        else:
            rtol = RTOL.get(name, 1e-10)
            np.testing.assert_allclose(
                ag.grad.numpy(), at.grad.numpy(force=True), rtol=rtol, atol=1e-12
            )


def test_every_pytorch_named_method_is_compared():
    names = {p.values[0] for p in CASES}
    x = tg.tensor([[1.0]])  # (names that raise AttributeError here are not Tensor methods)
    shared = {
        n
        for n in dir(tg.Tensor)
        if not n.startswith("_") and hasattr(torch.Tensor, n) and hasattr(x, n)
    }
    missing = shared - names - set(OTHER)
    assert not missing, f"Tensor methods with PyTorch names not compared with torch: {missing}"


def test_attributes():
    x = tg.tensor(X3)
    assert x.shape == (3, 1, 4) and x.ndim == 3 and x.dtype == np.float64
    assert x.size == 12 and x.size() == (3, 1, 4) and x.size(0) == 3 and x.size().numel() == 12
    np.testing.assert_array_equal(x.T.numpy(), X3.T)
    with pytest.raises(IndexError, match="dim out of range"):
        tg.tensor(1.0).size(0)  # as torch's
    assert pickle.loads(pickle.dumps(x.size)) == 12 and np.zeros(x.size).shape == (12,)


def test_max_dim_gradient_goes_to_the_picked_element_and_max_shares_ties():
    v = np.array([[3.0, 1.0, 3.0]])
    x, xt = tg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    x.max(dim=1).values.sum().backward()
    xt.max(dim=1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    x.grad = xt.grad = None
    x.max().backward()
    xt.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())  # [0.5, 0, 0.5]


def test_scalar_protocols():
    loss = tg.tensor(1.23456, requires_grad=True) * 2.0
    assert f"{loss:.3f}" == "2.469" and f"{loss}" == str(loss)
    assert round(loss) == 2 and isinstance(round(loss), int)
    assert round(loss, 2).item() == 2.47
    with pytest.raises(TypeError, match="0-d Tensor"):
        f"{tg.tensor([1.0, 2.0]):.3f}"
    assert tg.tensor([2.5]).item() == 2.5


def test_numpy_namespace_keeps_numpy_meanings():
    x = tg.tensor(X)
    np.testing.assert_allclose(tnp.std(x).item(), X.std(), rtol=1e-13)
    np.testing.assert_allclose(tnp.var(x, axis=1).numpy(), X.var(axis=1), rtol=1e-13)
    np.testing.assert_array_equal(tnp.max(x, axis=1).numpy(), X.max(axis=1))
    np.testing.assert_array_equal(tnp.repeat(x, 2, axis=0).numpy(), X.repeat(2, axis=0))
    np.testing.assert_array_equal(tnp.sort(x).numpy(), np.sort(X))
    with pytest.raises(TypeError, match="repeat_interleave"):
        x.repeat(2, axis=0)


def test_tg_functions_take_pytorch_names_and_dim():
    m = tg.tensor(X)
    values, indices = tg.max(m, dim=1)
    vt, it = torch.max(torch.tensor(X), dim=1)
    np.testing.assert_array_equal(values.numpy(), vt.numpy())
    np.testing.assert_array_equal(indices.numpy(), it.numpy())
    np.testing.assert_allclose(tg.std(m, dim=0).numpy(), X.std(axis=0, ddof=1), rtol=1e-13)
    assert tg.stack([m, m], dim=1).shape == (3, 2, 4)
    assert tg.concatenate([m, m], dim=1).shape == (3, 8) == tg.cat([m, m], dim=1).shape
    assert tg.sum(m, dim=1, keepdim=True).shape == (3, 1)
    np.testing.assert_array_equal(tg.clamp(m, min=0.0).numpy(), np.maximum(X, 0.0))
    assert tg.tensor([1, 2], dtype=tg.float64).dtype == np.float64 == tg.float64
    assert isinstance(tg.float64, np.dtype)
    a = np.arange(3.0)
    t = tg.from_numpy(a)
    a[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0]
    assert tg.as_tensor(t) is t and tg.as_tensor([1, 2]).dtype == np.int64
    assert tg.empty(2, 3).shape == (2, 3)
    tg.manual_seed(3)
    r = tg.randint(2, 5, (100,))
    assert r.dtype == np.int64 and set(r.tolist()) == {2, 3, 4}
    assert sorted(tg.randperm(6).tolist()) == list(range(6))


def test_integer_tensors_keep_numpy_integer_arithmetic():
    u = tg.tensor(np.array([250], dtype=np.uint8))
    assert (u + 10).dtype == np.uint8 and (u + 10).tolist() == [4]  # wraps, as NumPy's
    big = tg.tensor(2**53 + 1)
    assert (big + 1).item() == 2**53 + 2 and (big * 1).item() == 2**53 + 1
    i = tg.tensor([5, 7, 9])
    assert (i // 2).tolist() == [2, 3, 4] and (i % 4).dtype == np.int64
    assert i.sum().item() == 21 and i.sum().dtype == np.int64
    assert ((i > 5) & (i < 9)).tolist() == [False, True, False]
    for where in (np.where, tnp.where):
        w = where(i > 5, i, 0)
        assert w.dtype == np.int64 and w.tolist() == [0, 7, 9]
    assert np.concatenate([i, i]).dtype == np.int64 and tnp.sum([i, i]).item() == 42
    assert (i.max(dim=0).values.dtype, i.sort().values.dtype) == (np.int64, np.int64)
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x[np.mod(i, 4)]  # an integer Tensor from np.mod is an index
    y.sum().backward()
    assert y.tolist() == [2.0, 4.0, 2.0] and x.grad.tolist() == [0.0, 2.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="floating point"):
        tg.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="bitwise"):
        x & x


def test_max_dim_and_sort_replay_in_a_trace_or_ask_for_a_retrace():
    def f(x):
        return (x.max(dim=0).values ** 2).sum() + (x.sort(dim=1).values * np.arange(3.0)).sum()

    a = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 0.0]])
    tr = tg.trace(f, a)
    nearby = a + 0.1 * np.array([[1.0, -1.0, 2.0], [0.0, 1.0, -1.0]])  # same order
    value, grad = tr.value_and_grad(nearby)
    want_value, want_grad = tg.value_and_grad(f)(nearby)
    assert value == pytest.approx(want_value, rel=1e-15)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-15)
    with pytest.raises(tg.RetraceRequired):
        tr.value_and_grad(np.array([[5.0, 1.0, 3.0], [4.0, 2.0, 0.0]]))  # another maximum


M = [[1.0, -2.0, 3.0, 0.5], [0.5, 5.0, -1.0, 2.0], [4.0, 4.0, -3.0, 1.0]]


def test_tg_median_is_pytorchs_lower_median_with_indices_along_a_dim():
    """tg.median / x.median: the lower middle value (NumPy's median averages: tnp.median),
    with dim a (values, indices) pair; the gradient goes to that element."""
    x = tg.tensor(M, requires_grad=True)
    m = tg.median(x)
    assert m.item() == 1.0  # sorted: -3 -2 -1 .5 .5 1 | 1 2 3 4 4 5 -> the 6th, not 1.0 avg
    values, indices = tg.median(x, dim=1)
    np.testing.assert_array_equal(values.detach().numpy(), [0.5, 0.5, 1.0])
    np.testing.assert_array_equal(indices.numpy(), [3, 0, 3])
    assert x.median(0, keepdim=True).values.shape == (1, 4)
    assert tg.median(tg.tensor([3.0, 1.0, 2.0, 4.0])).item() == 2.0
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 0, 1]])
    assert float(tnp.median(tg.tensor([3.0, 1.0, 2.0, 4.0]))) == 2.5  # NumPy's meaning there


@pytest.mark.parametrize(
    "args, value",
    [
        ((), np.sqrt(np.sum(np.square(M)))),
        (("fro",), np.sqrt(np.sum(np.square(M)))),
        ((1,), np.sum(np.abs(M))),  # a vector norm of all elements, not the matrix 1-norm (11)
        ((3,), np.sum(np.abs(M) ** 3) ** (1 / 3)),
        ((float("inf"),), 5.0),
        ((-float("inf"),), 0.5),
        ((0,), 12.0),
        ((2, 1), np.sqrt(np.sum(np.square(M), axis=1))),
        ((1, (0, 1)), np.sum(np.abs(M))),
        ((2.5, 0, True), (np.sum(np.abs(M) ** 2.5, axis=0, keepdims=True)) ** 0.4),
    ],
)
def test_tg_norm_is_pytorchs_vector_norm(args, value):
    x = tg.tensor(M, requires_grad=True)
    y = tg.norm(x, *args)
    np.testing.assert_allclose(y.detach().numpy(), value, rtol=1e-14)
    np.testing.assert_allclose(x.norm(*args).detach().numpy(), value, rtol=1e-14)
    tg.testing.gradcheck(lambda t: tg.norm(t, *args), (tg.tensor(M, requires_grad=True),))


def test_tg_norm_refuses_matrix_norms_by_name():
    with pytest.raises(ValueError, match="nuc.*tnp.linalg.norm"):
        tg.norm(tg.tensor(M), "nuc")


@pytest.mark.parametrize("p", [2, "fro", 3, 1.5])
def test_tg_norm_has_pytorchs_zero_gradient_at_zero(p):
    """The root's infinite slope at 0 times a zero would be nan: 0 there, as PyTorch's."""
    z = np.array([[0.0, 0.0], [1.0, -2.0]])
    x = tg.tensor(z, requires_grad=True)
    tg.norm(x, p, 1).sum().backward()
    xt = torch.tensor(z, requires_grad=True)
    torch.norm(xt, p, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14)
    assert np.all(np.isfinite(x.grad.numpy()))


def test_cummax_and_cummin_follow_torch_at_ties_and_nan():
    v = np.array([[1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan], [2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 4.0]])
    for name in ("cummax", "cummin"):
        for dim in (0, 1):
            x, xt = tg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
            (values, indices), (vt, it) = getattr(x, name)(dim), getattr(xt, name)(dim)
            np.testing.assert_array_equal(indices.numpy(), it.numpy())
            np.testing.assert_array_equal(values.detach().numpy(), vt.detach().numpy())
            values.sum().backward()
            vt.sum().backward()
            np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def _check_orders_and_forward_mode(cases):
    """Each ``f(*inputs)``: gradients of first and second order checked by finite
    differences, and its forward-mode tangent (all-ones) against a central difference."""
    for f, inputs in cases:
        assert tg.gradcheck(f, inputs)
        assert tg.gradcheck(
            lambda *a, f=f: tg.autograd.grad(f(*a).sum(), a[0], create_graph=True)[0], inputs
        )
        tangents = tuple(np.ones_like(a) for a in inputs)
        _, tangent = tg.jvp(lambda *a, f=f: f(*a), inputs, tangents)
        eps = 1e-6
        plus = f(*(tg.tensor(a + eps * t) for a, t in zip(inputs, tangents, strict=True)))
        minus = f(*(tg.tensor(a - eps * t) for a, t in zip(inputs, tangents, strict=True)))
        np.testing.assert_allclose(
            tangent, (plus - minus).numpy() / (2 * eps), rtol=1e-5, atol=1e-6
        )


def test_index_writes_have_derivatives_of_every_order_and_forward_mode():
    idx = tg.tensor(SIDX)
    cases = [
        (lambda x, s: x.scatter_add(1, idx, s) ** 3, (X, SRC32)),
        (lambda x, s: x.index_add(0, tg.tensor(IIDX), s, alpha=0.5) ** 3, (X, SRC4)),
        (lambda x, s: x.scatter(1, tg.tensor(UIDX), s) ** 3, (X, SRC32)),
        (lambda x, s: x.masked_scatter(tg.tensor(MASK), s) ** 3, (X, SRC4)),
        (lambda x, s: x.lerp(s, 0.3) ** 3, (X, SRC4)),
        (lambda x, s: x.xlogy(s) ** 2, (ZEROS, T2)),
        (lambda x, s: x.addcdiv(s, s * s + 1.0) ** 3, (X, SRC4)),
        (lambda x, s: (x.topk(2, dim=1).values * s[:, :2]) ** 3, (X, SRC4)),
        (lambda x, s: (x.cummax(1).values * s) ** 3, (X, SRC4)),
    ]
    _check_orders_and_forward_mode(cases)


def test_scatter_add_and_index_add_repeated_indices_match_torch_second_order():
    def f(lib, x, s):
        return (x.scatter_add(1, lib.tensor(SIDX), s).index_add(0, lib.tensor(IIDX), x) ** 3).sum()

    x, s = tg.tensor(X, requires_grad=True), tg.tensor(SRC32, requires_grad=True)
    xt, st = torch.tensor(X, requires_grad=True), torch.tensor(SRC32, requires_grad=True)
    g = tg.autograd.grad(f(tg, x, s), (x, s), create_graph=True)
    gt = torch.autograd.grad(f(torch, xt, st), (xt, st), create_graph=True)
    for a, b in zip(g, gt, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    h = tg.autograd.grad(g[0].sum() + g[1].sum(), (x, s))
    ht = torch.autograd.grad(gt[0].sum() + gt[1].sum(), (xt, st))
    for a, b in zip(h, ht, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11)


def test_index_methods_refuse_what_they_cannot_do_exactly():
    x = tg.tensor(X)
    with pytest.raises(TypeError, match="reduce='multiply' is not supported.*scatter_add"):
        x.scatter(1, tg.tensor(UIDX), tg.tensor(SRC32), reduce="multiply")
    with pytest.raises(TypeError, match="index must be an integer"):
        x.scatter_add(1, tg.tensor(UIDX.astype(float)), tg.tensor(SRC32))
    with pytest.raises(TypeError, match="mask must be boolean"):
        x.masked_select(tg.tensor(X))
    with pytest.raises(RuntimeError, match="source of shape"):
        x.index_add(0, tg.tensor(IIDX), tg.tensor(SRC))
    with pytest.raises(RuntimeError, match="split_size or sizes|add up to 4"):
        x.split([1, 2], 1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tg.tensor(X, requires_grad=True).scatter_add_(1, tg.tensor(SIDX), tg.tensor(SRC32))


def test_in_place_index_writes_keep_the_sources_gradient():
    s = tg.tensor(SRC32, requires_grad=True)
    st = torch.tensor(SRC32, requires_grad=True)
    y, yt = tg.zeros(3, 4), torch.zeros(3, 4, dtype=torch.float64)
    y.scatter_add_(1, tg.tensor(SIDX), s)
    yt.scatter_add_(1, torch.tensor(SIDX), st)
    (y**2).sum().backward()
    (yt**2).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), st.grad.numpy(), rtol=1e-13)
    i = tg.tensor([1, 2, 3])
    i.index_add_(0, tg.tensor([0, 0]), tg.tensor([5, 6]))
    assert i.dtype == np.int64 and i.tolist() == [12, 2, 3]
    w = tg.tensor([1.0, 2.0])
    w.add_(tg.tensor([10.0, 10.0]), alpha=-0.1)  # an optimizer step's form
    assert w.tolist() == pytest.approx([0.0, 1.0], abs=1e-15)


FUNCTIONS = set(tg.core.torch_functions.__dict__) & {
    n for n in dir(tg) if callable(getattr(tg, n)) and hasattr(torch, n)
}


@pytest.mark.parametrize(
    "name,x,args,kwargs", [p for p in CASES if p.values[0] in FUNCTIONS and p.values[0] in dir(tg)]
)
def test_tg_function_agrees_with_torch(name, x, args, kwargs):
    """``tg.NAME(x, ...)`` is torch's ``torch.NAME(x, ...)`` (the method's meaning)."""

    def run(lib):
        args_ = [_arg(lib, a, []) for a in args]
        return _parts(getattr(lib, name)(lib.tensor(x), *args_, **_arg(lib, kwargs, [])))

    try:
        pt = run(torch)
    except TypeError:  # torch.permute(x, 1, 0), torch.flip(x, 1): the method's forms only
        pytest.skip(f"torch.{name} takes these arguments as a method only")
    pg = run(tg)
    assert len(pt) == len(pg)
    for a, b in zip(pt, pg, strict=True):
        np.testing.assert_allclose(
            np.asarray(b, dtype=float), np.asarray(a, dtype=float), rtol=1e-12
        )


def test_tg_atan2_and_diff_take_pytorch_names():
    a, b = tg.tensor(X), tg.tensor(Y)
    np.testing.assert_allclose(tg.atan2(a, b).numpy(), np.arctan2(X, Y), rtol=1e-15)
    np.testing.assert_array_equal(tg.diff(a, dim=0).numpy(), np.diff(X, axis=0))


def test_order_and_index_methods_replay_in_a_trace_or_ask_for_a_retrace():
    def f(x):
        written = x.scatter_add(0, tg.tensor([0, 0, 1]), x[:3] * 2.0).pow(2).sum()
        return (x.topk(2).values ** 2).sum() + written + (x - 1.0).xlogy(x * x + 1.0).sum()

    a = np.array([1.0, 3.0, 2.0, 5.0])
    tr = tg.trace(f, a)
    nearby = np.array([1.0, 2.9, 2.2, 5.0])  # the same order, x - 1 zero at the same place
    value, grad = tr.value_and_grad(nearby)
    want_value, want_grad = tg.value_and_grad(f)(nearby)
    assert value == pytest.approx(want_value, rel=1e-15)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-15)
    for other in ([1.0, 3.0, 6.0, 5.0], [1.5, 3.0, 2.0, 5.0]):  # another top 2, no zero
        with pytest.raises(tg.RetraceRequired):
            tr.value_and_grad(np.array(other))
    # cummax's indices are pinned to the values they were read from
    tr = tg.trace(lambda x: (x.cummax(0).values ** 2).sum(), a)
    assert tr.value_and_grad(a)[0] == pytest.approx(44.0)
    with pytest.raises(tg.RetraceRequired):
        tr.value_and_grad(np.array([4.0, 3.0, 2.0, 5.0]))


def test_matrix_attributes():
    x, xt = tg.tensor(B3, requires_grad=True), torch.tensor(B3, requires_grad=True)
    for name in ("mT", "mH"):
        np.testing.assert_array_equal(getattr(x, name).detach().numpy(), getattr(xt, name).detach())
    m, mt = tg.tensor(X), torch.tensor(X)
    np.testing.assert_array_equal(m.H.numpy(), mt.H.numpy())
    w = np.arange(24.0).reshape(2, 4, 3)
    (x.mT * tg.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.transpose(0, 2, 1))
    with pytest.raises(RuntimeError, match="mT: a matrix"):
        _ = tg.tensor(V).mT
    with pytest.raises(RuntimeError, match="H: a matrix"):
        _ = tg.tensor(B3).H
    assert (m.nbytes, m.itemsize) == (mt.nbytes, mt.itemsize) == (96, 8)
    v = m.mT  # a view: a write reaches m
    v[0, 0] = 100.0
    assert m[0, 0].item() == 100.0


def test_lower_precision_floats_refuse_a_gradient():
    """tapegrad differentiates float64 only: half() of a Tensor that requires grad is refused
    (as x.to(float16)); bfloat16 does not exist in NumPy."""
    with pytest.raises(TypeError, match="float16.*float64"):
        tg.tensor(X, requires_grad=True).half()
    h = tg.tensor(X).half()
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h.numpy(), torch.tensor(X).half().numpy())
    with pytest.raises(TypeError, match="bfloat16"):
        tg.tensor(X).bfloat16()


def test_floor_divide_is_piecewise_constant():
    x = tg.tensor(X, requires_grad=True)
    y = x.floor_divide(tg.tensor(T2))
    np.testing.assert_array_equal(
        y.detach().numpy(), torch.tensor(X).floor_divide(torch.tensor(T2)).numpy()
    )
    np.testing.assert_array_equal(tg.floor_divide(x, 0.5).detach().numpy(), np.floor(X / 0.5))
    y.sum().backward()
    assert not np.any(x.grad.numpy())  # torch raises here: "not implemented"


def test_new_empty():
    e = tg.tensor([1, 2]).new_empty(2, 3)
    assert e.shape == (2, 3) and e.dtype == np.int64 and not e.numpy().any()
    assert tg.tensor(X).new_empty((4,), requires_grad=True).requires_grad


def test_slogdet():
    x, xt = tg.tensor(SQ, requires_grad=True), torch.tensor(SQ, requires_grad=True)
    (sign, logabsdet), (st, lt) = x.slogdet(), xt.slogdet()
    assert sign.item() == st.item() and logabsdet.item() == pytest.approx(lt.item(), rel=1e-13)
    logabsdet.backward()
    lt.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-11)
    np.testing.assert_allclose(tg.slogdet(SQ).logabsdet.item(), lt.item(), rtol=1e-13)


@pytest.mark.parametrize(
    "name,args,kwargs",
    [
        ("std_mean", (), {}),
        ("std_mean", (1,), {"keepdim": True}),
        ("var_mean", (0,), {"correction": 0}),
        ("var_mean", (), {"unbiased": False}),
    ],
)
def test_std_mean_and_var_mean_are_torchs(name, args, kwargs):
    x, xt = tg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out, want = getattr(x, name)(*args, **kwargs), getattr(torch, name)(xt, *args, **kwargs)
    for a, b in zip(out, want, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-13)
    (out[0] * 2.0 + out[1] * 3.0).sum().backward()
    (want[0] * 2.0 + want[1] * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    for a, b in zip(getattr(tg, name)(X, *args, **kwargs), out, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


@pytest.mark.parametrize(
    "seq,values,kwargs",
    [
        (np.sort(V), SEQ, {}),
        (np.sort(V), SEQ, {"right": True}),
        (np.sort(V), 0.1, {"side": "right"}),
        (SEQ, SEQ[:, ::-1] + 0.1, {}),
        (np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 0.0, 9.0]), {"side": "right"}),
        (np.array([3.0, 1.0, 2.0]), np.array([2.0, 2.5]), {"sorter": np.array([1, 2, 0])}),
        (np.sort(V), SEQ, {"out_int32": True}),
    ],
)
def test_searchsorted_is_torchs(seq, values, kwargs):
    def run(lib):
        kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        vals = lib.tensor(values) if isinstance(values, np.ndarray) else values
        return lib.searchsorted(lib.tensor(seq), vals, **kw).numpy()

    got, want = run(tg), run(torch)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    vals = values if np.ndim(values) == 0 else tg.tensor(values)
    kw = {k: tg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    np.testing.assert_array_equal(tg.tensor(seq).searchsorted(vals, **kw).numpy(), want)


def test_tg_transpose_and_squeeze_are_torchs():
    x = tg.tensor(B3, requires_grad=True)
    np.testing.assert_array_equal(
        tg.transpose(x, 0, 2).detach().numpy(), torch.transpose(torch.tensor(B3), 0, 2).numpy()
    )
    assert tg.transpose(x, -1, 0).shape == (4, 3, 2)
    assert tg.transpose(x).shape == (4, 3, 2)  # NumPy's forms still work
    assert tg.transpose(x, (1, 0, 2)).shape == tg.transpose(x, axes=[1, 0, 2]).shape == (3, 2, 4)
    tg.transpose(x, 0, 1).sum().backward()
    assert x.grad.shape == B3.shape
    with pytest.raises(TypeError, match="dim0, dim1"):
        tg.transpose(x, 0, 1, 2)
    z = tg.tensor(X3)
    for dim in (0, 1, -2, None):
        want = (
            torch.squeeze(torch.tensor(X3)) if dim is None else torch.squeeze(torch.tensor(X3), dim)
        )
        assert tg.squeeze(z, dim).shape == tuple(want.shape)
        assert z.squeeze(dim).shape == tuple(want.shape)
    assert tg.squeeze(z, dim=0).shape == (3, 1, 4)


def test_tg_functions_of_the_linalg_methods_are_torchs():
    for name in ("det", "logdet", "inverse", "pinverse", "cholesky", "i0"):
        a = SPD if name in ("cholesky", "logdet") else SQ
        np.testing.assert_allclose(
            getattr(tg, name)(a).numpy(),
            getattr(torch, name)(torch.tensor(a)).numpy(),
            rtol=1e-11,
            atol=1e-13,
        )


def test_in_place_methods_write_into_x_and_refuse_what_torch_refuses():
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tg.tensor(X, requires_grad=True).exp_()
    with pytest.raises(TypeError, match="cannot be written into a Tensor of dtype int64"):
        tg.tensor([1, 2]).exp_()
    with pytest.raises(RuntimeError, match="x = x.t"):
        tg.tensor(X).t_()
    i = tg.tensor([1, 2, 3])
    i.copy_(tg.tensor([1.7, -2.7, 3.2]))  # cast to x's dtype, as torch's
    assert i.dtype == np.int64 and i.tolist() == [1, -2, 3]
    with pytest.raises(RuntimeError, match="does not broadcast"):
        tg.zeros(2).copy_(tg.zeros(3))
    # copy_: the gradient reaches src, none reaches what x was
    x, s = tg.tensor(X, requires_grad=True), tg.tensor(V, requires_grad=True)
    y = x * 2.0
    y.copy_(s)
    (y * y).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), 2 * 3 * V)
    assert x.grad is None or not np.any(x.grad.numpy())
    # detach_: later uses are constants, what was recorded before still differentiates
    x = tg.tensor(X, requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()
    y.detach_()
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * X)
    base = x * 1.0
    with pytest.raises(RuntimeError, match="view"):
        base[0].detach_()
    w = tg.tensor(X, requires_grad=True)
    w.detach_()
    assert not w.requires_grad


def test_methods_refuse_what_they_cannot_do():
    x = tg.tensor(X)
    with pytest.raises(RuntimeError, match=r"range \[0, 1\]"):
        x.quantile(1.5)
    with pytest.raises(ValueError, match="interpolation"):
        x.quantile(0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="no dim of size 3"):
        tg.zeros(2, 4).cross(tg.zeros(2, 4))
    with pytest.raises(RuntimeError, match="do not divide"):
        x.hsplit(3)
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        tg.tensor(B3).diag()
    with pytest.raises(RuntimeError, match="two 1-D"):
        x.outer(x)


def test_new_methods_have_derivatives_of_every_order_and_forward_mode():
    cases = [
        (lambda x, s: x.quantile(0.3, dim=1) * s[:, 0] ** 2, (X, SRC4)),
        (lambda x, s: x.nanquantile(tg.tensor(Q), 0, interpolation="midpoint") * s[0], (X, SRC4)),
        (lambda x, s: x.fmax(s) ** 3, (X, SRC4)),
        (lambda x, s: x.kron(s[:2, :2]) ** 2, (X, SRC4)),
        (lambda x, s: x[:, :3].cross(s[:, :3]) ** 2, (X, SRC4)),
        (lambda x, s: (x.diag_embed(1) * 2.0) ** 3 + s.sum(), (X, SRC4)),
        (lambda x, s: x.logit(eps=0.2).mul(s) ** 2, (W, SRC4)),
        (lambda x, s: x.inner(s) ** 2, (X, SRC4)),
        (lambda x, s: (x * 1.0).copy_(s).exp_() * x, (X, SRC4)),
        (
            lambda x, s: (
                x.rot90().take_along_dim(tg.tensor([[2], [0], [1], [1]]), 1) ** 3 * s[0, 0]
            ),
            (X, SRC4),
        ),
        (lambda x, s: (x[:, :3] @ x[:, :3].T + 5.0 * tg.eye(3)).logdet() * s[0, 0], (X, SRC4)),
    ]
    _check_orders_and_forward_mode(cases)


def test_sort_and_argsort_take_numpys_axis_as_well_as_dim():
    # axis= alone was refused as "dim= and axis= both given" (dim defaulted to -1)
    x = tg.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
    for axis in (0, 1, -1):
        by_axis, by_dim = tg.sort(x, axis=axis), x.sort(dim=axis)
        assert by_axis.values.tolist() == by_dim.values.tolist()
        assert by_axis.indices.tolist() == by_dim.indices.tolist()
        assert x.argsort(axis=axis).tolist() == np.argsort(x.numpy(), axis=axis).tolist()
    assert x.sort().values.tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]  # default: last
    with pytest.raises(TypeError, match="not both"):
        x.sort(0, axis=1)
    (tg.sort(x, axis=0).values * tg.tensor([[1.0], [10.0]])).sum().backward()
    assert x.grad.tolist() == [[10.0, 1.0, 1.0], [1.0, 10.0, 10.0]]
