"""PyTorch-API hunt for dtypes and integer / boolean semantics: small programs run in tapegrad
and in PyTorch (float64 by default, as tapegrad's).

Each program is written once against the library module ``m`` (``tapegrad`` or ``torch``)
and run in both.  The results must agree in structure, dtype (by name: ``int32`` is
``torch.int32``), shape and value (exact for integers and booleans, to the dtype's rounding
for floats), and Python scalars (``.item()``, ``int(t)``) in type and value; where PyTorch
raises, tapegrad must raise too.  Gradients are compared by programs that return ``x.grad``.

Disagreements are kept at the end as strict xfails that assert PyTorch's result
(``DISAGREE``); what tapegrad computes where PyTorch refuses is checked against its own
documented value (``ACCEPTS``).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402

I64_MIN = -(2**63)


def D(m, name):
    """The dtype ``name`` of library ``m`` (tapegrad has no ``tg.bool`` / ``tg.uint8`` ...:
    NumPy's dtype of that name)."""
    if m is torch:
        return getattr(torch, name)
    return getattr(tg, name, None) or np.dtype(name)


def T(m, data, dtype=None, **kw):
    """``m.tensor(data, dtype=<name>)``; a float dtype left out is float64 in both."""
    if dtype is None and m is torch and np.asarray(data).dtype.kind == "f":
        dtype = "float64"
    return m.tensor(data, dtype=None if dtype is None else D(m, dtype), **kw)


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _flat(r, path="out"):
    if isinstance(r, (tg.Tensor, torch.Tensor)):
        return [(path, "tensor", r)]
    if isinstance(r, (tuple, list)) and not isinstance(r, torch.Size):
        items = [(path, "seq", len(r))]
        for k, x in enumerate(r):
            items += _flat(x, f"{path}[{k}]")
        return items
    if isinstance(r, (torch.Size, tuple)):
        return [(path, "value", tuple(r))]
    return [(path, "value", r)]


_RTOL = {"float64": 1e-12, "float32": 2e-7, "float16": 1e-3}


def _run(prog, m):
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # tapegrad's default float dtype
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _flat(prog(m))
    finally:
        torch.set_default_dtype(old)


def _raises(prog, m):
    try:
        _run(prog, m)
    except Exception as e:  # noqa: BLE001
        return e
    return None


def _compare(prog):
    __tracebackhide__ = True
    try:
        want = _run(prog, torch)
    except Exception as e:  # noqa: BLE001
        err = _raises(prog, tg)
        assert err is not None, f"PyTorch raises {type(e).__name__}: {e}; tapegrad does not"
        return
    got = _run(prog, tg)
    assert [(p, k) for p, k, _ in got] == [(p, k) for p, k, _ in want], (got, want)
    for (path, kind, a), (_, _, b) in zip(got, want, strict=True):
        if kind == "seq":
            assert a == b, f"{path}: length {a} vs torch {b}"
        elif kind == "value":
            assert type(a) is type(b), f"{path}: {a!r} vs torch {b!r}"
            assert a == b or (a != a and b != b), f"{path}: {a!r} vs torch {b!r}"
        else:
            name = _dtype_name(b)
            assert _dtype_name(a) == name, f"{path}: dtype {a.dtype} vs torch {b.dtype}"
            assert tuple(a.shape) == tuple(b.shape), f"{path}: shape {a.shape} vs {b.shape}"
            assert bool(a.requires_grad) == bool(b.requires_grad), f"{path}: requires_grad"
            va, vb = np.asarray(a.detach().numpy()), b.detach().numpy()
            if name in _RTOL:
                np.testing.assert_allclose(va, vb, rtol=_RTOL[name], equal_nan=True, err_msg=path)
            else:
                np.testing.assert_array_equal(va, vb, err_msg=path)


# ---- programs ----------------------------------------------------------------------------
P = {}


def progs(**kw):
    for k, f in kw.items():
        assert k not in P, k
        P[k] = f


# operands: n-d tensors of each dtype, 0-d tensors, Python scalars
ND = {
    "i64": lambda m: T(m, [1, -2, 3]),
    "i32": lambda m: T(m, [1, -2, 3], "int32"),
    "b": lambda m: T(m, [True, False, True]),
    "f64": lambda m: T(m, [1.5, -2.5, 0.5]),
    "f32": lambda m: T(m, [1.5, -2.5, 0.1], "float32"),
}
ZD = {
    "i64_0d": lambda m: T(m, 3),
    "i32_0d": lambda m: T(m, 3, "int32"),
    "b_0d": lambda m: T(m, True),
    "f64_0d": lambda m: T(m, 0.1),
    "f32_0d": lambda m: T(m, 0.1, "float32"),
}
PY = {"int": lambda m: 3, "float": lambda m: 0.1, "bool": lambda m: True}
OPERANDS = {**ND, **ZD, **PY}


def _binop(op, a, b):
    return lambda m: op(OPERANDS[a](m), OPERANDS[b](m))


for _opname, _op in {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "lt": lambda x, y: x < y,
}.items():
    for _a in ND:
        for _b in OPERANDS:
            progs(**{f"{_opname}_{_a}_{_b}": _binop(_op, _a, _b)})
        for _b in PY:  # the scalar on the left
            progs(**{f"{_opname}_{_b}_{_a}": _binop(_op, _b, _a)})
# n-d with n-d of another shape (broadcast), and 0-d with 0-d
for _a, _b in [("i32_0d", "i64_0d"), ("f32_0d", "f64_0d"), ("i64_0d", "f32_0d"), ("b_0d", "b_0d")]:
    progs(**{f"add_{_a}_{_b}": _binop(lambda x, y: x + y, _a, _b)})
progs(
    add_i32_col_i64_row=lambda m: T(m, [[1], [2]], "int32") + T(m, [10, 20]),
    add_f32_col_f64_row=lambda m: T(m, [[1.0], [2.0]], "float32") + T(m, [0.1, 0.2]),
    sub_b_b=lambda m: T(m, [True, False]) - T(m, [True, True]),
    sub_i_b=lambda m: T(m, [1, 2]) - T(m, [True, True]),
    sub_b_int=lambda m: T(m, [True, False]) - 1,
    mul_i32_big_int=lambda m: T(m, [1, 2], "int32") * 2**40,
    mul_f32_big_float=lambda m: T(m, [1.0, 2.0], "float32") * 1e300,
    mul_i8_f=lambda m: T(m, [3, 2]).char() * 0.1,
    add_u8_wrap=lambda m: T(m, [250, 3]).byte() + 10,
    add_i16_int=lambda m: T(m, [3, 2]).short() + 1,
)

# comparisons, where, clamp, abs, neg
progs(
    eq_i_f=lambda m: T(m, [1, 2]) == T(m, [1.0, 2.5]),
    eq_b_i=lambda m: T(m, [True, False]) == T(m, [1, 0]),
    eq_big_i_float=lambda m: T(m, [2**53 + 1]) == float(2**53),
    eq_big_i_i=lambda m: T(m, [2**53 + 1]) == T(m, [2**53]),
    ge_i32_0d=lambda m: T(m, [1, 5], "int32") >= T(m, 2),
    ne_f32_f64=lambda m: T(m, [0.1], "float32") != T(m, [0.1]),
    isclose_i=lambda m: m.isclose(T(m, [1, 2]), T(m, [1, 3])),
    maximum_i_f=lambda m: m.maximum(T(m, [1, 5]), T(m, [2.5, 0.5])),
    maximum_i32_i64=lambda m: m.maximum(T(m, [1, 5], "int32"), T(m, [2, 0])),
    minimum_b_b=lambda m: m.minimum(T(m, [True, False]), T(m, [True, True])),
    where_i_f=lambda m: m.where(T(m, [True, False]), T(m, [1, 2]), T(m, [0.5, 0.5])),
    where_i_float=lambda m: m.where(T(m, [True, False]), T(m, [1, 2]), 2.5),
    where_i_int=lambda m: m.where(T(m, [True, False]), T(m, [1, 2]), 7),
    where_i32_i64=lambda m: m.where(T(m, [True, False]), T(m, [1, 2], "int32"), T(m, [7, 8])),
    where_int_int=lambda m: m.where(T(m, [True, False]), 1, 0),
    where_float_float=lambda m: m.where(T(m, [True, False]), 1.0, 0.0),
    where_b_b=lambda m: m.where(T(m, [True, False]), T(m, [False, False]), T(m, [True, True])),
    where_f32_float=lambda m: m.where(T(m, [True, False]), T(m, [1.0, 2.0], "float32"), 0.1),
    where_method=lambda m: T(m, [1, 2]).where(T(m, [True, False]), T(m, [5, 6])),
    clamp_i_int=lambda m: T(m, [1, 5, -3]).clamp(0, 2),
    clamp_i_float=lambda m: T(m, [1, 5, -3]).clamp(0.5, 2.5),
    clamp_i_min_only=lambda m: T(m, [1, 5, -3]).clamp(min=0),
    clamp_i32=lambda m: T(m, [1, 5, -3], "int32").clamp(0, 2),
    clamp_f32=lambda m: T(m, [0.1, 5.0], "float32").clamp(0.0, 1.0),
    clamp_b=lambda m: T(m, [True, False]).clamp(0, 1),
    abs_i=lambda m: T(m, [-3, 0, 2]).abs(),
    abs_i32=lambda m: T(m, [-3, 0, 2], "int32").abs(),
    abs_int_min=lambda m: T(m, [I64_MIN, 5]).abs(),
    abs_int32_min=lambda m: T(m, [-(2**31), 5], "int32").abs(),
    abs_b=lambda m: T(m, [True, False]).abs(),
    neg_i=lambda m: -T(m, [-3, 0, 2]),
    neg_int_min=lambda m: -T(m, [I64_MIN]),
    neg_b=lambda m: -T(m, [True, False]),
    neg_method_b=lambda m: T(m, [True, False]).neg(),
    sign_i=lambda m: T(m, [-3, 0, 2]).sign(),
    sign_b=lambda m: T(m, [True, False]).sign(),
    square_i=lambda m: T(m, [-3, 2]).square(),
    square_b=lambda m: T(m, [True, False]).square(),
    pow_b_2=lambda m: T(m, [True, False]) ** 2,
    logical_not_i=lambda m: m.logical_not(T(m, [0, 3])),
    logical_and_i_f=lambda m: m.logical_and(T(m, [0, 3]), T(m, [1.0, 0.5])),
)

# reductions on int and bool, with dtype=
progs(
    sum_b=lambda m: T(m, [True, False, True]).sum(),
    sum_b_dim=lambda m: T(m, [[True, True], [False, True]]).sum(1),
    sum_i32=lambda m: T(m, [1, 2], "int32").sum(),
    sum_i32_dim=lambda m: T(m, [[1, 2]], "int32").sum(1),
    sum_i32_big=lambda m: T(m, [2**30, 2**30], "int32").sum(),
    sum_i64_wrap=lambda m: T(m, [2**62, 2**62]).sum(),
    sum_f32=lambda m: T(m, [0.1, 0.2], "float32").sum(),
    sum_dtype_f64=lambda m: T(m, [1, 2]).sum(dtype=D(m, "float64")),
    sum_f_dtype_i=lambda m: T(m, [1.7, 2.6]).sum(dtype=D(m, "int64")),
    sum_i32_dtype_i32=lambda m: T(m, [1, 2], "int32").sum(dtype=D(m, "int32")),
    sum_b_dtype_i32=lambda m: T(m, [True, True]).sum(dtype=D(m, "int32")),
    prod_b=lambda m: T(m, [True, False]).prod(),
    prod_i32=lambda m: T(m, [2, 3], "int32").prod(),
    prod_i32_dim=lambda m: T(m, [[2, 3]], "int32").prod(1),
    prod_dtype=lambda m: T(m, [2, 3]).prod(dtype=D(m, "float64")),
    prod_i_wrap=lambda m: T(m, [2**32, 2**32]).prod(),
    cumsum_b=lambda m: T(m, [True, True, False]).cumsum(0),
    cumsum_i32=lambda m: T(m, [1, 2], "int32").cumsum(0),
    cumsum_dtype=lambda m: T(m, [1, 2]).cumsum(0, dtype=D(m, "float64")),
    cumsum_f32=lambda m: T(m, [0.1, 0.2], "float32").cumsum(0),
    cumprod_i32=lambda m: T(m, [2, 3], "int32").cumprod(0),
    cumprod_b=lambda m: T(m, [True, True]).cumprod(0),
    mean_i=lambda m: T(m, [1, 2]).mean(),
    mean_b=lambda m: T(m, [True, False]).mean(),
    mean_i_dim=lambda m: T(m, [[1, 2]]).mean(1),
    mean_dtype=lambda m: T(m, [1, 2]).mean(dtype=D(m, "float64")),
    mean_dim_dtype=lambda m: T(m, [[1, 2]]).mean(1, dtype=D(m, "float64")),
    mean_f32=lambda m: T(m, [0.1, 0.2], "float32").mean(),
    mean_after_float=lambda m: T(m, [True, False, True]).double().mean(),
    max_b=lambda m: T(m, [True, False]).max(),
    max_b_dim=lambda m: T(m, [[True, False], [False, False]]).max(1),
    min_b_dim=lambda m: T(m, [[True, False]]).min(1),
    amax_b=lambda m: T(m, [[True, False]]).amax(1),
    max_i32_dim=lambda m: T(m, [[1, 5, 5]], "int32").max(1),
    max_i_ties=lambda m: T(m, [[1, 5, 5]]).max(1),
    argmax_i_ties=lambda m: T(m, [1, 5, 5]).argmax(),
    argmin_i_ties=lambda m: T(m, [3, 1, 1]).argmin(),
    argmax_b=lambda m: T(m, [False, True]).argmax(),
    argmax_i_dim=lambda m: T(m, [[1, 5, 5], [7, 7, 0]]).argmax(1),
    argsort_stable=lambda m: T(m, [2, 1, 2, 1, 2]).argsort(stable=True),
    argsort_desc_stable=lambda m: T(m, [2, 1, 2, 1, 2]).argsort(descending=True, stable=True),
    sort_i_stable=lambda m: T(m, [2, 1, 2, 1, 2]).sort(stable=True),
    sort_i32=lambda m: T(m, [3, -1, 2], "int32").sort(),
    sort_b=lambda m: T(m, [True, False, True]).sort(stable=True),
    sort_i_desc=lambda m: T(m, [3, -1, 2]).sort(descending=True),
    topk_i=lambda m: T(m, [3, 1, 4, 1, 5]).topk(2),
    topk_i32=lambda m: T(m, [3, 1, 4, 1, 5], "int32").topk(2),
    topk_i_smallest=lambda m: T(m, [3, 1, 4, 0, 5]).topk(2, largest=False),
    count_nonzero_i=lambda m: m.count_nonzero(T(m, [0, 3, 0, -1])),
    any_i=lambda m: T(m, [0, 3]).any(),
    all_i=lambda m: T(m, [0, 3]).all(),
    nansum_i=lambda m: T(m, [1, 2]).nansum(),
    aminmax_i32=lambda m: T(m, [3, -1, 2], "int32").aminmax(),
    cummax_i=lambda m: T(m, [1, 3, 2, 3]).cummax(0),
    var_i=lambda m: T(m, [1, 2, 4]).var(),
    std_i=lambda m: T(m, [1, 2, 4]).std(),
    median_i=lambda m: T(m, [1, 2, 4, 3]).median(),
)

# integer division, remainders, powers, wrapping, bit operations
_NUM = [-7, 7, -8, 8, 0, -1]
progs(
    floordiv_pos=lambda m: T(m, _NUM) // 2,
    floordiv_neg=lambda m: T(m, _NUM) // -2,
    floordiv_tensor=lambda m: T(m, _NUM) // T(m, [2, -2, 3, -3, 5, 2]),
    rfloordiv=lambda m: 7 // T(m, [2, -2, 3]),
    floordiv_i_float=lambda m: T(m, _NUM) // 2.5,
    floordiv_i32=lambda m: T(m, _NUM, "int32") // -3,
    floor_divide_fn=lambda m: m.floor_divide(T(m, _NUM), -3),
    mod_pos=lambda m: T(m, _NUM) % 3,
    mod_neg=lambda m: T(m, _NUM) % -3,
    rmod=lambda m: -7 % T(m, [2, -2, 3]),
    mod_float=lambda m: T(m, _NUM) % 2.5,
    remainder_fn=lambda m: m.remainder(T(m, _NUM), -3),
    remainder_method=lambda m: T(m, _NUM).remainder(3),
    fmod_fn=lambda m: m.fmod(T(m, _NUM), 3),
    fmod_neg=lambda m: T(m, _NUM).fmod(-3),
    fmod_float=lambda m: T(m, _NUM).fmod(2.5),
    div_trunc=lambda m: m.div(T(m, _NUM), 2, rounding_mode="trunc"),
    div_floor=lambda m: m.div(T(m, _NUM), 2, rounding_mode="floor"),
    div_floor_neg=lambda m: T(m, _NUM).div(-3, rounding_mode="floor"),
    div_trunc_neg=lambda m: T(m, _NUM).div(-3, rounding_mode="trunc"),
    div_trunc_i32=lambda m: T(m, _NUM, "int32").div(T(m, 3), rounding_mode="trunc"),
    div_true=lambda m: m.div(T(m, _NUM), 2),
    true_divide_i=lambda m: m.true_divide(T(m, [1, -3]), T(m, [2, 2])),
    true_divide_method=lambda m: T(m, [1, -3]).true_divide(2),
    div_i_by_zero=lambda m: T(m, [1, -1, 0]) / 0,
    floordiv_zero=lambda m: T(m, _NUM) // 0,
    floordiv_zero_tensor=lambda m: T(m, [5, 7]) // T(m, [0, 2]),
    rfloordiv_zero=lambda m: 7 // T(m, [0, 2]),
    floor_divide_zero=lambda m: m.floor_divide(T(m, [5, 7]), T(m, [0, 1])),
    mod_zero=lambda m: T(m, _NUM) % 0,
    remainder_zero=lambda m: T(m, [5, 7]).remainder(T(m, [1, 0])),
    fmod_zero=lambda m: m.fmod(T(m, [5, 7]), 0),
    fmod_zero_tensor=lambda m: T(m, [5, 7]).fmod(T(m, [0, 2])),
    remainder_fn_zero=lambda m: m.remainder(T(m, [5, 7]), 0),
    divmod_zero=lambda m: divmod(T(m, [5, 7]), 0),
    floordiv_i_by_float_zero=lambda m: T(m, [5, -7, 0]) // 0.0,
    mod_i_by_float_zero=lambda m: T(m, [5, -7]) % 0.0,
    floordiv_f_by_int_zero=lambda m: T(m, [5.0, -7.0]) // 0,
    div_i_by_i_zero=lambda m: T(m, [5, -7, 0]) / T(m, [0, 0, 0]),
    div_floor_zero=lambda m: T(m, [5, 7]).div(0, rounding_mode="floor"),
    div_trunc_zero=lambda m: T(m, [5, 7]).div(T(m, [1, 0]), rounding_mode="trunc"),
    floordiv_b_zero=lambda m: T(m, [True, True]) // T(m, [False, True]),
    floordiv_f_zero=lambda m: T(m, [1.0, -1.0, 0.0]) // 0.0,
    mod_f_zero=lambda m: T(m, [1.0, -1.0]) % 0.0,
    floordiv_min_neg1=lambda m: T(m, [I64_MIN]) // -1,
    pow_i_2=lambda m: T(m, [-3, 2]) ** 2,
    pow_i_0=lambda m: T(m, [-3, 0]) ** 0,
    pow_i_neg=lambda m: T(m, [1, 2]) ** -1,
    pow_i_neg_tensor=lambda m: T(m, [2, 3]).pow(T(m, [-1, 1])),
    pow_i_float=lambda m: T(m, [2, 3]) ** 0.5,
    pow_i_0d_i=lambda m: T(m, [2, 3]).pow(T(m, 2)),
    pow_i32=lambda m: T(m, [2, 3], "int32") ** 2,
    pow_i_wrap=lambda m: T(m, [3]) ** 41,
    rpow_int=lambda m: 2 ** T(m, [1, 2, 62]),
    rpow_float=lambda m: 2.0 ** T(m, [1, 2]),
    rpow_neg_base=lambda m: (-8) ** T(m, [0, 1, 2]),
    rpow_zero_neg=lambda m: 0 ** T(m, [-1]),
    pow_i_b=lambda m: T(m, [2, 3]) ** T(m, [True, False]),
    float_power_i=lambda m: m.float_power(T(m, [2, 3]), 2),
    add_wrap_i64=lambda m: T(m, [2**63 - 1]) + 1,
    sub_wrap_i64=lambda m: T(m, [I64_MIN]) - 1,
    mul_wrap_i64=lambda m: T(m, [2**62]) * 4,
    add_wrap_i32=lambda m: T(m, [2**31 - 1], "int32") + T(m, [1], "int32"),
    mul_wrap_i32=lambda m: T(m, [2**16], "int32") * T(m, [2**16], "int32"),
    i32_plus_int_stays=lambda m: T(m, [2**31 - 1], "int32") + 1,
    and_i=lambda m: T(m, [12, -3]) & T(m, [10, 7]),
    or_i=lambda m: T(m, [12, -3]) | 5,
    xor_i=lambda m: T(m, [12, -3]) ^ T(m, [10, 7]),
    invert_i=lambda m: ~T(m, [0, -1, 5]),
    invert_i32=lambda m: ~T(m, [0, -1, 5], "int32"),
    invert_b=lambda m: ~T(m, [True, False]),
    and_b_b=lambda m: T(m, [True, False]) & T(m, [True, True]),
    or_b_true=lambda m: T(m, [True, False]) | True,
    xor_b_i=lambda m: T(m, [True, False]) ^ T(m, [3, 3]),
    and_i32_i64=lambda m: T(m, [12], "int32") & T(m, [10]),
    lshift_i=lambda m: T(m, [1, -2]) << 2,
    rshift_neg=lambda m: T(m, [-8, 8, -1]) >> 1,
    lshift_tensor=lambda m: T(m, [1, 1]) << T(m, [3, 62]),
    rlshift=lambda m: 1 << T(m, [3, 4]),
    and_f=lambda m: T(m, [1.0]) & T(m, [1.0]),
    invert_f=lambda m: ~T(m, [1.0]),
)

# float32 tensors
progs(
    f32_mul_int=lambda m: T(m, [0.1, 2.0], "float32") * 3,
    f32_add_float=lambda m: T(m, [0.1, 2.0], "float32") + 0.1,
    f32_div_int=lambda m: T(m, [0.1, 2.0], "float32") / 3,
    f32_exp=lambda m: T(m, [0.1, 2.0], "float32").exp(),
    f32_sqrt=lambda m: T(m, [0.1, 2.0], "float32").sqrt(),
    f32_sin=lambda m: T(m, [0.1, 2.0], "float32").sin(),
    f32_neg=lambda m: -T(m, [0.1, 2.0], "float32"),
    f32_abs=lambda m: T(m, [-0.1, 2.0], "float32").abs(),
    f32_round=lambda m: T(m, [2.5, -0.5], "float32").round(),
    f32_floor=lambda m: T(m, [2.5, -0.5], "float32").floor(),
    f32_pow=lambda m: T(m, [0.1, 2.0], "float32") ** 2,
    f32_max=lambda m: T(m, [0.1, 2.0], "float32").max(),
    f32_softmax=lambda m: T(m, [0.1, 2.0], "float32").softmax(0),
    f32_matmul=lambda m: T(m, [[0.1, 2.0]], "float32") @ T(m, [[1.0], [3.0]], "float32"),
    f32_add_i=lambda m: T(m, [0.1, 2.0], "float32") + T(m, [1, 2]),
    f32_add_b=lambda m: T(m, [0.1, 2.0], "float32") + T(m, [True, False]),
    f32_where=lambda m: m.where(T(m, [0.1, 2.0], "float32") > 1, T(m, [0.1, 2.0], "float32"), 0),
    f32_to_f64=lambda m: T(m, [0.1], "float32").double(),
    f32_item=lambda m: T(m, [0.1], "float32").item(),
    f32_rg=lambda m: T(m, [0.1, 2.0], "float32", requires_grad=True),
)


def _grad(build, dtype="float64", data=(1.5, -2.0)):
    """A program: x.grad of build(m, x).sum() at a leaf x of dtype."""

    def prog(m):
        x = T(m, list(data), dtype, requires_grad=True)
        build(m, x).sum().backward()
        return x.grad

    return prog


progs(
    grad_f32_mul=_grad(lambda m, x: x * x, "float32"),
    grad_f32_exp=_grad(lambda m, x: x.exp(), "float32"),
    grad_f32_plus_f64=_grad(lambda m, x: x + T(m, [0.1, 0.2]), "float32"),
    grad_f64_float=_grad(lambda m, x: x.float() * 3),
    grad_f64_double=_grad(lambda m, x: x.double() * 3),
    grad_f64_to_f64=_grad(lambda m, x: x.to(D(m, "float64")) * 3),
    grad_times_long=_grad(lambda m, x: x * x.long()),
    grad_times_bool=_grad(lambda m, x: x * (x > 0)),
    grad_plus_i32=_grad(lambda m, x: (x + T(m, [1, 2], "int32")) ** 2),
    grad_where_int=_grad(lambda m, x: m.where(x > 0, x, T(m, [7, 8]))),
    grad_div_int=_grad(lambda m, x: x / T(m, [2, 4])),
    grad_int_div_x=_grad(lambda m, x: T(m, [2, 4]) / x),
    grad_pow_int_exp=_grad(lambda m, x: x ** T(m, [2, 3])),
    grad_int_pow_x=_grad(lambda m, x: T(m, [2, 3]) ** x),
    grad_masked_fill=_grad(lambda m, x: x.masked_fill(T(m, [True, False]), 0)),
    grad_clamp_int=_grad(lambda m, x: x.clamp(-1, 1)),
    grad_floordiv=lambda m: T(m, [1.5, -2.0], requires_grad=True) // 1,
    long_of_rg=lambda m: T(m, [1.5, 2.0], requires_grad=True).long(),
    bool_of_rg=lambda m: T(m, [1.5, 0.0], requires_grad=True).bool(),
    cmp_of_rg=lambda m: T(m, [1.5, 0.0], requires_grad=True) > 1,
    argmax_of_rg=lambda m: T(m, [1.5, 0.0], requires_grad=True).argmax(),
    long_double_of_rg=lambda m: T(m, [1.5, 2.0], requires_grad=True).long().double(),
    to_int_of_rg=lambda m: T(m, [1.5, 2.0], requires_grad=True).to(D(m, "int64")),
    to_f32_of_rg=lambda m: T(m, [1.5, 2.0], requires_grad=True).to(D(m, "float32")),
    rg_int=lambda m: T(m, [1, 2], requires_grad=True),
    rg_bool=lambda m: T(m, [True], requires_grad=True),
    rg_int_method=lambda m: T(m, [1, 2]).requires_grad_(),
    rg_float_of_int=lambda m: T(m, [1, 2]).double().requires_grad_(),
)

# conversions
_F = [1.7, -1.7, 2.5, -2.5, 0.0, -0.0]
progs(
    long_trunc=lambda m: T(m, _F).long(),
    int_trunc=lambda m: T(m, _F).int(),
    short_trunc=lambda m: T(m, _F).short(),
    bool_f=lambda m: T(m, [0.0, -0.0, 0.1, float("nan")]).bool(),
    bool_i=lambda m: T(m, [0, -3]).bool(),
    double_i=lambda m: T(m, [1, 2]).double(),
    double_b=lambda m: T(m, [True, False]).double(),
    float_i=lambda m: T(m, [1, 2]).float(),
    float_b=lambda m: T(m, [True, False]).float(),
    float_f64=lambda m: T(m, [0.1]).float(),
    long_nan_inf=lambda m: T(m, [float("nan"), float("inf"), -float("inf")]).long(),
    long_huge=lambda m: T(m, [1e19, -1e19]).long(),
    int_huge=lambda m: T(m, [3e9, -3e9, 2.0**31]).int(),
    int_of_i64_wraps=lambda m: T(m, [2**31, 2**32 + 5, -(2**31) - 1]).int(),
    long_of_i32=lambda m: T(m, [-5], "int32").long(),
    to_int32=lambda m: T(m, [1.5, -2.5]).to(D(m, "int32")),
    to_bool=lambda m: T(m, [1.5, 0.0]).to(D(m, "bool")),
    to_f32=lambda m: T(m, [0.1, 2.5]).to(D(m, "float32")),
    to_f64_of_f32=lambda m: T(m, [0.1], "float32").to(D(m, "float64")),
    to_int64_of_b=lambda m: T(m, [True, False]).to(D(m, "int64")),
    to_other_tensor=lambda m: T(m, [1.7, -1.7]).to(T(m, [1])),
    type_as_i=lambda m: T(m, [1.7, -1.7]).type_as(T(m, [1], "int32")),
    half=lambda m: T(m, [0.1, 2.5]).half(),
    half_of_rg=lambda m: T(m, [0.1, 2.5], requires_grad=True).half(),
    byte_wraps=lambda m: T(m, [-1, 256, 3]).byte(),
    char_wraps=lambda m: T(m, [255, 3]).char(),
    tensor_mixed=lambda m: m.tensor([1, 2.5, True]),
    tensor_int_bool=lambda m: m.tensor([1, True]),
    tensor_bools=lambda m: m.tensor([False, True]),
    tensor_ints=lambda m: m.tensor([[1, 2], [3, 4]]),
    tensor_nested_mixed=lambda m: m.tensor([[1, 2], [3.5, 4]]),
    tensor_2_63=lambda m: m.tensor(2**63),
    tensor_2_63_list=lambda m: m.tensor([1, 2**63]),
    tensor_2_64=lambda m: m.tensor(2**64),
    tensor_max=lambda m: m.tensor(2**63 - 1),
    tensor_2_63_with_float=lambda m: m.tensor([1.5, 2**63]),
    tensor_2_63_dtype_f64=lambda m: m.tensor([1, 2**63], dtype=D(m, "float64")),
    tensor_min=lambda m: m.tensor(I64_MIN),
    tensor_dtype_i_from_float=lambda m: m.tensor([1.7, -1.7], dtype=D(m, "int64")),
    tensor_dtype_f32=lambda m: m.tensor([0.1], dtype=D(m, "float32")),
    tensor_dtype_bool=lambda m: m.tensor([0, 2], dtype=D(m, "bool")),
    tensor_dtype_f64_ints=lambda m: m.tensor([1, 2], dtype=D(m, "float64")),
    tensor_i32_overflow=lambda m: m.tensor([2**31], dtype=D(m, "int32")),
    tensor_int_scalar=lambda m: m.tensor(5),
    tensor_bool_scalar=lambda m: m.tensor(True),
    tensor_np_i32=lambda m: m.tensor(np.array([1, 2], dtype=np.int32)),
    tensor_np_i64=lambda m: m.tensor(np.array([1, 2], dtype=np.int64)),
    tensor_np_u8=lambda m: m.tensor(np.array([1, 255], dtype=np.uint8)),
    tensor_np_i16=lambda m: m.tensor(np.array([1, -2], dtype=np.int16)),
    tensor_np_bool=lambda m: m.tensor(np.array([True, False])),
    tensor_np_f32=lambda m: m.tensor(np.array([0.1], dtype=np.float32)),
    tensor_np_f16=lambda m: m.tensor(np.array([0.1], dtype=np.float16)),
    tensor_np_f64_0d=lambda m: m.tensor(np.float64(2.5)),
    tensor_np_i32_scalar=lambda m: m.tensor(np.int32(2)),
    tensor_np_bool_scalar=lambda m: m.tensor(np.bool_(True)),
    tensor_np_f32_dtype_f64=lambda m: m.tensor(np.array([0.1], np.float32), dtype=D(m, "float64")),
    as_tensor_np_i32=lambda m: m.as_tensor(np.array([1, 2], dtype=np.int32)),
    from_numpy_i32=lambda m: m.from_numpy(np.array([1, 2], dtype=np.int32)),
    from_numpy_f32=lambda m: m.from_numpy(np.array([0.1], dtype=np.float32)),
    item_i=lambda m: T(m, [3]).item(),
    item_i32=lambda m: T(m, [3], "int32").item(),
    item_b=lambda m: T(m, [True]).item(),
    item_f32=lambda m: T(m, [0.1], "float32").item(),
    item_big=lambda m: T(m, [2**63 - 1]).item(),
    int_of_f=lambda m: int(T(m, [3.7])),
    int_of_neg_f=lambda m: int(T(m, [-3.7])),
    int_of_i=lambda m: int(T(m, [-3])),
    int_of_nan=lambda m: int(T(m, float("nan"))),
    float_of_i=lambda m: float(T(m, 3)),
    float_of_big_i=lambda m: float(T(m, 2**53 + 1)),
    bool_of_i=lambda m: bool(T(m, 3)),
    bool_of_two=lambda m: bool(T(m, [1, 2])),
    index_of_i=lambda m: [10, 20, 30][T(m, 2)],
    index_of_f=lambda m: [10, 20, 30][T(m, 2.0)],
    tolist_i32=lambda m: T(m, [3, -1], "int32").tolist(),
    tolist_b=lambda m: T(m, [True, False]).tolist(),
    round_i=lambda m: T(m, [3, -2]).round(),
    floor_i=lambda m: T(m, [3, -2]).floor(),
    ceil_i=lambda m: T(m, [3, -2]).ceil(),
    trunc_i=lambda m: T(m, [3, -2]).trunc(),
    round_half_even=lambda m: T(m, [2.5, -0.5, 1.5, 0.5]).round(),
    round_decimals=lambda m: T(m, [2.55, 1.234, -1.25]).round(decimals=1),
    round_i_decimals=lambda m: T(m, [1234, -1250]).round(decimals=-2),
    floor_b=lambda m: T(m, [True]).floor(),
    round_b=lambda m: T(m, [True]).round(),
    is_floating_point_i=lambda m: T(m, [1]).is_floating_point(),
    is_floating_point_f32=lambda m: T(m, [1.0], "float32").is_floating_point(),
    element_size_i32=lambda m: T(m, [1], "int32").element_size(),
    element_size_b=lambda m: T(m, [True]).element_size(),
    new_tensor_keeps=lambda m: T(m, [1], "int32").new_tensor([1.5, 2.5]),
    new_zeros_dtype=lambda m: T(m, [1], "int32").new_zeros(2),
    new_full_float=lambda m: T(m, [1]).new_full((2,), 2.5),
    full_int=lambda m: m.full((2,), 3),
    full_bool=lambda m: m.full((2,), True),
    full_float=lambda m: m.full((2,), 2.5),
    zeros_like_i=lambda m: m.zeros_like(T(m, [1, 2], "int32")),
    ones_like_b=lambda m: m.ones_like(T(m, [True])),
    arange_int=lambda m: m.arange(5),
    arange_float_step=lambda m: m.arange(0, 1, 0.25),
    arange_int_float=lambda m: m.arange(0, 3.0),
)

# names tapegrad does not have
progs(
    unique_i=lambda m: m.unique(T(m, [3, 1, 3, 2])),
    unique_counts=lambda m: T(m, [3, 1, 3, 2]).unique(return_counts=True),
    bincount_i=lambda m: m.bincount(T(m, [0, 1, 1, 3])),
    bincount_weights=lambda m: T(m, [0, 1, 1]).bincount(weights=T(m, [0.5, 1.0, 2.0])),
    histc_f=lambda m: T(m, [1.0, 2.0, 1.0]).histc(bins=4, min=0, max=3),
    type_dtype=lambda m: T(m, [1.5, -2.5]).type(D(m, "int32")),
)

# unary math on integer and boolean tensors: PyTorch's default float dtype
for _u in ("exp", "sin", "sqrt", "log1p", "sigmoid", "tanh", "reciprocal", "rsqrt"):
    progs(
        **{
            f"{_u}_i64": (lambda u: lambda m: getattr(T(m, [1, 2]), u)())(_u),
            f"{_u}_i32": (lambda u: lambda m: getattr(T(m, [1, 2], "int32"), u)())(_u),
            f"{_u}_b": (lambda u: lambda m: getattr(T(m, [True, False]), u)())(_u),
            f"{_u}_u8": (lambda u: lambda m: getattr(T(m, [1, 2]).byte(), u)())(_u),
            f"{_u}_i16": (lambda u: lambda m: getattr(T(m, [1, 2]).short(), u)())(_u),
        }
    )


# in-place ops with dtype clashes
def _ip(make, op, other):
    def prog(m):
        x = make(m)
        o = other(m) if callable(other) else other
        if op == "+=":
            x += o
        elif op == "-=":
            x -= o
        elif op == "*=":
            x *= o
        elif op == "/=":
            x /= o
        elif op == "//=":
            x //= o
        elif op == "%=":
            x %= o
        elif op == "|=":
            x |= o
        elif op == "&=":
            x &= o
        elif op == "**=":
            x **= o
        return x

    return prog


def _I(m):
    return T(m, [1, -3])


def _B(m):
    return T(m, [True, False])


def _F32(m):
    return T(m, [1.0, 2.0], "float32")


def _setitem(make, key, value):
    def prog(m):
        x = make(m)
        x[key(m) if callable(key) else key] = value(m) if callable(value) else value
        return x

    return prog


progs(
    ip_i_add_float=_ip(_I, "+=", 1.5),
    ip_i_mod_zero=_ip(_I, "%=", 0),
    ip_i_floordiv_zero=_ip(_I, "//=", 0),
    ip_i_add_int=_ip(_I, "+=", 1),
    ip_i_mul_int=_ip(_I, "*=", 2),
    ip_i_mul_float=_ip(_I, "*=", 2.0),
    ip_i_div_int=_ip(_I, "/=", 2),
    ip_i_floordiv=_ip(_I, "//=", 2),
    ip_i_mod=_ip(_I, "%=", 2),
    ip_i_pow=_ip(_I, "**=", 2),
    ip_i_add_f_tensor=_ip(_I, "+=", lambda m: T(m, [1.0, 1.0])),
    ip_i_add_b=_ip(_I, "+=", lambda m: T(m, [True, False])),
    ip_i32_add_i64=_ip(lambda m: T(m, [1, 2], "int32"), "+=", lambda m: T(m, [2**40, 1])),
    ip_i32_add_int=_ip(lambda m: T(m, [1, 2], "int32"), "+=", 2**31 - 1),
    ip_i32_mul_i64_0d=_ip(lambda m: T(m, [2, 3], "int32"), "*=", lambda m: T(m, 2**31)),
    ip_b_or_b=_ip(_B, "|=", lambda m: T(m, [False, True])),
    ip_b_or_int=_ip(_B, "|=", 1),
    ip_b_or_true=_ip(_B, "|=", True),
    ip_b_and_i=_ip(_B, "&=", lambda m: T(m, [1, 1])),
    ip_b_add_int=_ip(_B, "+=", 1),
    ip_b_add_true=_ip(_B, "+=", True),
    ip_b_mul_b=_ip(_B, "*=", lambda m: T(m, [True, True])),
    ip_f32_add_f64=_ip(_F32, "+=", lambda m: T(m, [0.1, 0.1])),
    ip_f32_add_float=_ip(_F32, "+=", 0.1),
    ip_f32_mul_float=_ip(_F32, "*=", 0.1),
    ip_f32_add_i=_ip(_F32, "+=", lambda m: T(m, [1, 2])),
    ip_f64_add_f32=_ip(lambda m: T(m, [0.1, 0.2]), "+=", lambda m: _F32(m)),
    ip_f_add_i=_ip(lambda m: T(m, [1.0, 2.0]), "+=", lambda m: T(m, [1, 1])),
    ip_f_sub_b=_ip(lambda m: T(m, [1.0, 2.0]), "-=", lambda m: T(m, [True, False])),
    set_i_float=_setitem(_I, 0, 1.7),
    set_i_neg_float=_setitem(_I, 0, -1.7),
    set_i_nan=_setitem(_I, 0, float("nan")),
    set_i_inf=_setitem(_I, 1, float("inf")),
    set_i_2_63=_setitem(_I, 0, 2**63),
    set_i32_big=_setitem(lambda m: T(m, [1, 2], "int32"), 0, 2**40),
    set_i32_big_float=_setitem(lambda m: T(m, [1, 2], "int32"), 0, 3e9),
    set_i_true=_setitem(_I, 0, True),
    set_b_int=_setitem(lambda m: T(m, [False, False]), 0, 2),
    set_b_float=_setitem(lambda m: T(m, [False, False]), 0, 0.5),
    set_i_slice_f_tensor=_setitem(_I, slice(None), lambda m: T(m, [1.9, -1.9])),
    set_i_slice_nan_tensor=_setitem(_I, slice(None), lambda m: T(m, [float("nan"), 1e30])),
    set_i32_from_i64_tensor=_setitem(lambda m: T(m, [1, 2], "int32"), 0, lambda m: T(m, 2**32)),
    set_i_mask_float=_setitem(_I, lambda m: T(m, [True, False]), 2.5),
    set_i_index_tensor=_setitem(_I, lambda m: T(m, [1]), -2.5),
    set_f32_float=_setitem(_F32, 0, 0.1),
    set_f32_slice_f64=_setitem(_F32, slice(None), lambda m: T(m, [0.1, 0.2])),
    set_f_int=_setitem(lambda m: T(m, [0.5, 0.5]), 0, 3),
    masked_fill_i_float=lambda m: _I(m).masked_fill(T(m, [True, False]), 2.5),
    masked_fill_i_int=lambda m: _I(m).masked_fill(T(m, [True, False]), 7),
    masked_fill_b_int=lambda m: _B(m).masked_fill(T(m, [False, True]), 2),
    masked_fill_b_true=lambda m: _B(m).masked_fill(T(m, [False, True]), True),
    masked_fill_f32=lambda m: _F32(m).masked_fill(T(m, [False, True]), 0.1),
    masked_fill_i_0d=lambda m: _I(m).masked_fill(T(m, [True, False]), T(m, 9)),
    masked_fill__i_float=lambda m: _I(m).masked_fill_(T(m, [True, False]), 2.5),
    masked_fill__i_int=lambda m: _I(m).masked_fill_(T(m, [True, False]), 7),
    fill__i_float=lambda m: _I(m).fill_(2.5),
    fill__b=lambda m: _B(m).fill_(3),
    zero__i32=lambda m: T(m, [1, 2], "int32").zero_(),
    clamp__i_float=lambda m: _I(m).clamp_(0.5, 1.5),
    clamp__i_int=lambda m: _I(m).clamp_(0, 1),
    add__alpha_i=lambda m: _I(m).add_(T(m, [1, 1]), alpha=2),
    add_alpha_float_i=lambda m: _I(m).add(T(m, [1, 1]), alpha=0.5),
    sub_alpha_i=lambda m: _I(m).sub(T(m, [1, 1]), alpha=2),
    mul__i_float=lambda m: _I(m).mul_(0.5),
    div__i=lambda m: _I(m).div_(2),
    div__floor_i=lambda m: _I(m).div_(2, rounding_mode="floor"),
    pow__i=lambda m: _I(m).pow_(2),
    exp__i=lambda m: _I(m).exp_(),
    abs__i=lambda m: _I(m).abs_(),
    neg__i=lambda m: _I(m).neg_(),
    copy__b_from_f=lambda m: _B(m).copy_(T(m, [0.0, 0.5])),
    copy__i_from_nan=lambda m: _I(m).copy_(T(m, [float("nan"), 1e30])),
    copy__i32_from_i64=lambda m: T(m, [1, 2], "int32").copy_(T(m, [2**32 + 3, -1])),
    copy__f32_from_f64=lambda m: _F32(m).copy_(T(m, [0.1, 0.2])),
    copy__f_from_i=lambda m: T(m, [0.5, 0.5]).copy_(T(m, [3, 4])),
    index_fill_i_float=lambda m: _I(m).index_fill(0, T(m, [0]), 2.5),
    scatter_i=lambda m: _I(m).scatter(0, T(m, [0]), 7),
    scatter_add_i=lambda m: _I(m).scatter_add(0, T(m, [0, 0]), T(m, [5, 6])),
    index_add_i_alpha=lambda m: _I(m).index_add(0, T(m, [0, 0]), T(m, [5, 6]), alpha=2),
    lerp_i=lambda m: _I(m).lerp(T(m, [3, 4]), 0.5),
    gather_i=lambda m: T(m, [[1, 2], [3, 4]], "int32").gather(1, T(m, [[1], [0]])),
    set_i_big_exact=_setitem(_I, 0, 2**53 + 1),
    set_i_big_tensor_exact=_setitem(_I, slice(None), lambda m: T(m, [2**53 + 1, 3])),
    set_i_repeated_index=_setitem(_I, lambda m: T(m, [0, 0]), lambda m: T(m, [5, 6])),
    copy__i_big_exact=lambda m: _I(m).copy_(T(m, [2**53 + 1, 2**62 + 1])),
    fill__i_big_exact=lambda m: _I(m).fill_(2**53 + 1),
    fill__i_nan=lambda m: _I(m).fill_(float("nan")),
    masked_fill_i_big_exact=lambda m: _I(m).masked_fill(T(m, [True, False]), 2**53 + 1),
    masked_fill_i_nan=lambda m: _I(m).masked_fill(T(m, [True, False]), float("nan")),
    where_i_big_exact=lambda m: m.where(T(m, [True, False]), T(m, [2**53 + 1, 1]), 0),
    where_method_big_exact=lambda m: T(m, [2**53 + 1, 1]).where(T(m, [True, False]), 0),
    where_rg_int=lambda m: m.where(
        T(m, [True, False]), T(m, [1.5, 2.0], requires_grad=True), T(m, [7, 8])
    ),
    index_fill_i_big=lambda m: _I(m).index_fill(0, T(m, [0]), 2**53 + 1),
    cat_i_big_exact=lambda m: m.cat([T(m, [2**53 + 1]), T(m, [1])]),
    cat_i_f=lambda m: m.cat([T(m, [1, 2]), T(m, [0.5])]),
    cat_i32_i64=lambda m: m.cat([T(m, [1, 2], "int32"), T(m, [3])]),
    cat_b_i=lambda m: m.cat([T(m, [True]), T(m, [3])]),
    stack_f32_f64=lambda m: m.stack([T(m, [1.0], "float32"), T(m, [0.1])]),
)


# ---- tapegrad's documented choices -----------------------------------------------------------
# tapegrad computes floats in float64 ("Floating point tensors are float64", docs/reference/
# tensors.md; "x.float() and x.double() both give float64", docs/REFUSALS.md): an op of a
# float32 tensor with another tensor, a unary op or reduction of one, x.float(), a float32 or
# float16 NumPy array given to tg.tensor, and a float32 leaf's gradient are float64, where
# PyTorch's are float32 (float16).  Checked: tapegrad's float64 value is PyTorch's to its
# dtype's rounding.  (A float32 tensor times a Python number stays float32 in both, and an
# in-place op or an assignment keeps a float32 tensor float32, as PyTorch's.)
FLOAT64 = [
    "add_i64_f32",
    "add_i64_f32_0d",
    "add_i32_f32",
    "add_i32_f32_0d",
    "add_f32_i64",
    "add_f32_i32",
    "add_f32_f32",
    "add_f32_i64_0d",
    "add_f32_i32_0d",
    "add_f32_f64_0d",
    "add_f32_f32_0d",
    "add_f32_bool",
    "add_bool_f32",
    "mul_i64_f32",
    "mul_i64_f32_0d",
    "mul_i32_f32",
    "mul_i32_f32_0d",
    "mul_f32_i64",
    "mul_f32_i32",
    "mul_f32_f32",
    "mul_f32_i64_0d",
    "mul_f32_i32_0d",
    "mul_f32_f64_0d",
    "mul_f32_f32_0d",
    "mul_f32_bool",
    "mul_bool_f32",
    "div_i64_f32",
    "div_i64_f32_0d",
    "div_i32_f32",
    "div_i32_f32_0d",
    "div_f32_i64",
    "div_f32_i32",
    "div_f32_f32",
    "div_f32_i64_0d",
    "div_f32_i32_0d",
    "div_f32_f64_0d",
    "div_f32_f32_0d",
    "div_f32_bool",
    "div_int_f32",
    "div_float_f32",
    "div_bool_f32",
    "add_i64_0d_f32_0d",
    "sum_f32",
    "cumsum_f32",
    "mean_f32",
    "f32_exp",
    "f32_sqrt",
    "f32_sin",
    "f32_neg",
    "f32_abs",
    "f32_round",
    "f32_floor",
    "f32_pow",
    "f32_max",
    "f32_softmax",
    "f32_matmul",
    "f32_add_i",
    "grad_f32_mul",
    "grad_f32_exp",
    "grad_f32_plus_f64",
    "float_i",
    "float_b",
    "float_f64",
    "tensor_np_f32",
    "tensor_np_f16",
]

# ---- disagreements -------------------------------------------------------------------------
_ZERO_D_INT = (
    "a 0-d int64 tensor promotes an n-d int32 one to int64 (NumPy 2's rule, which "
    "elementwise.numpy_exact follows: a 0-d array is not weak); PyTorch keeps int32 (a 0-d "
    "tensor does not promote an n-d tensor of its category)"
)
DISAGREE = {
    "add_i32_i64_0d": _ZERO_D_INT,
    "mul_i32_i64_0d": _ZERO_D_INT,
    "div_trunc_i32": _ZERO_D_INT + " (x.div(tensor(3), rounding_mode='trunc'))",
    "sign_b": "x.sign() of a bool tensor raises NumPy's UFuncTypeError (no loop for bool); "
    "PyTorch gives x",
    "round_b": "round of a bool tensor: PyTorch refuses; tapegrad gives NumPy's rint "
    "(1.0, in float64)",
    "mul_i32_big_int": "int32 tensor * 2**40: PyTorch wraps (0); tapegrad raises NumPy 2's "
    "OverflowError (a refusal, not a wrong number)",
    "pow_i_neg_tensor": "int ** a tensor holding -1: PyTorch's integer power is 0 (2 ** -1 "
    "truncated); tapegrad raises NumPy's ValueError (a refusal)",
    "rpow_zero_neg": "0 ** int tensor [-1]: PyTorch 0; tapegrad raises NumPy's ValueError",
    "to_f32_of_rg": "x.to(float32) of a Tensor that requires grad: a documented refusal "
    "(docs/REFUSALS.md: tapegrad differentiates float64)",
    "half_of_rg": "x.half() of a Tensor that requires grad: a documented refusal",
    "type_dtype": "Tensor.type does not exist (AttributeError); x.to(dtype) does it",
}

# tapegrad computes what PyTorch refuses: name -> (why, tapegrad's dtype, tapegrad's values)
ACCEPTS = {
    "sub_i_b": ("int - bool: NumPy's arithmetic", "int64", [0, 1]),
    "sub_b_int": ("bool - int: NumPy's arithmetic", "int64", [0, -1]),
    "ip_f_sub_b": ("float -= bool", "float64", [0.0, 2.0]),
    "abs_b": ("abs of bool is the identity", "bool", [True, False]),
    "floor_b": ("floor of bool is the identity", "bool", [True]),
    "mean_i": ("mean of ints is their float64 mean (NumPy's)", "float64", 1.5),
    "mean_b": ("mean of bools is the fraction of True", "float64", 0.5),
    "mean_i_dim": ("mean of ints over a dim", "float64", [1.5]),
    "var_i": ("var of ints (float64)", "float64", 7.0 / 3.0),
    "std_i": ("std of ints (float64)", "float64", (7.0 / 3.0) ** 0.5),
    "argmax_b": ("argmax of bools: the first True", "int64", 1),
    "round_i_decimals": ("round(decimals=-2) of ints, half to even", "int64", [1200, -1200]),
    "add_alpha_float_i": ("int + 0.5 * int: float64", "float64", [1.5, -2.5]),
    "lerp_i": ("lerp of ints: float64", "float64", [2.0, 0.5]),
}

AGREE = [n for n in P if n not in DISAGREE and n not in ACCEPTS and n not in FLOAT64]


@pytest.mark.parametrize("name", AGREE)
def test_agrees_with_torch(name):
    _compare(P[name])


@pytest.mark.parametrize("name", FLOAT64)
def test_float64_where_torch_is_float32(name):
    want = _run(P[name], torch)
    got = _run(P[name], tg)
    assert [(p, k) for p, k, _ in got] == [(p, k) for p, k, _ in want]
    for (path, kind, a), (_, _, b) in zip(got, want, strict=True):
        if kind != "tensor":
            continue
        assert _dtype_name(a) == "float64", path
        assert _dtype_name(b) in ("float32", "float16"), path
        assert tuple(a.shape) == tuple(b.shape), path
        rtol = 1e-3 if _dtype_name(b) == "float16" else 1e-6
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy().astype(float), rtol=rtol, err_msg=path
        )


@pytest.mark.parametrize("name", list(ACCEPTS))
def test_computes_what_torch_refuses(name):
    assert _raises(P[name], torch) is not None
    (_, _, out), *_ = _run(P[name], tg)
    _, dtype, values = ACCEPTS[name]
    assert _dtype_name(out) == dtype
    np.testing.assert_allclose(np.asarray(out.tolist(), dtype=float), values, rtol=1e-14)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, id=n, marks=pytest.mark.xfail(strict=True, reason=r))
        for n, r in DISAGREE.items()
    ],
)
def test_disagreement_with_torch(name):
    _compare(P[name])


def test_every_program_is_classified():
    groups = (set(DISAGREE), set(ACCEPTS), set(FLOAT64))
    assert all(g <= set(P) for g in groups)
    assert sum(map(len, groups)) == len(set().union(*groups))
