"""PyTorch's factory functions, their keyword arguments, and the linear-algebra Tensor methods,
side by side with PyTorch.

Hunted: every way a PyTorch user calls the factories (``zeros / ones / empty / full / eye /
arange / linspace / logspace / randn / rand / randint / randperm``, the ``*_like`` ones and
``tensor``): the size as integers, one tuple / list / ``torch.Size`` or ``size=``; ``dtype=``
(float32 stays float32, an integer ``arange`` truncates its arguments first, ...);
``device=`` / ``layout=`` / ``pin_memory=`` / ``memory_format=`` accepted at their CPU,
strided, unpinned, contiguous defaults and refused otherwise; ``out=`` refused;
``generator=`` (``tg.Generator``); the errors PyTorch raises for bad sizes, bad dtypes and
``requires_grad`` with an integer dtype.  Compared with PyTorch (its default dtype set to
float64 for this module, as tapegrad's): dtype names, shapes, values and ``requires_grad``;
where PyTorch raises, tapegrad must raise an error naming the function.  The signatures of
the factories are checked to take PyTorch's keyword names.

The linear-algebra methods (``det, logdet, slogdet, inverse, pinverse, cholesky,
cholesky_inverse, cholesky_solve, qr, svd, triangular_solve, matrix_power, matrix_exp``) are
compared with PyTorch in value, first derivative (``tests/torch_programs.py``'s weighted
loss) and second derivative (``create_graph``), batched too, with ``tg.gradcheck`` where
cheap, and in their errors for non-square or 1-D input.

PyTorch's keyword names for the leading arguments of ``tg``'s functions (``input=``,
``other=``, ``exponent=``, ``tensors=``, ``condition=``, ``dim0=`` ...) are checked against
torch, values and derivatives, as are the fill methods' refusals of a value the dtype cannot
hold (``fill_``, ``__setitem__``, ``masked_fill``, ``index_fill``, ``scatter``,
``fill_diagonal_``, ``new_full``, ``full_like``, ``where``) and the dtype the ``new_*``
methods keep.
Found and fixed: ``new_full`` / ``index_fill`` / ``scatter`` wrote 2**40 into int32 as
-2**31 or 0 and NaN into int64 as -2**63; ``fill_`` / ``masked_fill`` / ``x[i] = v`` / ``tg.where``
wrote 1e300 into float32 as inf; ``index_fill`` / ``scatter`` of a float32 tensor gave float64,
``fill_diagonal_`` of a float32 or int32 tensor raised; ``new_ones(dtype=float32)`` and
``new_zeros`` / ``new_full`` of a float32 tensor gave float64; ``tg.exp(input=x)`` & co. a
TypeError, ``tg.unsqueeze(input=x, dim=0)`` a bare IndexError.
"""

import inspect
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_programs import _compare, _Lib, _raises  # noqa: E402

import tapegrad as tg  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _torch_float64():
    """PyTorch's default float dtype as tapegrad's (float64) for this module."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def D(m, name):
    """The dtype ``name`` of library ``m`` (tapegrad's are NumPy's)."""
    if m is torch:
        return getattr(torch, name)
    return getattr(tg, name, None) or np.dtype(name)


def _dev(m):
    return torch.device("cpu") if m is torch else "cpu"


def _desc(v):
    """A comparable description of a result: dtype name, shape, values, requires_grad."""
    if isinstance(v, (tg.Tensor, torch.Tensor)):
        a = v.detach().numpy()
        return ("T", str(v.dtype).replace("torch.", ""), a.shape, a, bool(v.requires_grad))
    if isinstance(v, (tuple, list)):
        if all(isinstance(i, int) for i in v):
            return tuple(v)
        return tuple(_desc(x) for x in v)
    if isinstance(v, (np.dtype, torch.dtype)) or type(v).__name__.endswith("DType"):
        return str(v).replace("torch.", "")
    return v


def _same(a, b, path="out"):
    if isinstance(b, tuple) and b[:1] == ("T",):
        assert isinstance(a, tuple) and a[:1] == ("T",), f"{path}: tapegrad {a!r}, torch {b!r}"
        assert a[1] == b[1], f"{path}: dtype {a[1]} vs torch {b[1]}"
        assert a[2] == b[2], f"{path}: shape {a[2]} vs torch {b[2]}"
        assert a[4] == b[4], f"{path}: requires_grad {a[4]} vs torch {b[4]}"
        rtol = 2e-7 if a[1] == "float32" else 1e-14
        np.testing.assert_allclose(a[3], b[3], rtol=rtol, atol=0, err_msg=path)
    elif isinstance(b, tuple) and not all(isinstance(i, int) for i in b):
        assert isinstance(a, tuple) and len(a) == len(b), f"{path}: {a!r} vs torch {b!r}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{k}]")
    else:
        assert a == b, f"{path}: tapegrad {a!r} vs torch {b!r}"


def _both(prog):
    out = []
    for m in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(_desc(prog(m)))
    return out


def _error(prog, m):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog(m)
    except Exception as e:  # noqa: BLE001
        return e
    return None


# ---- deterministic factories: the same dtype, shape, values and requires_grad -----------------
SAME = dict(
    zeros_ints=lambda m: m.zeros(2, 3),
    zeros_tuple=lambda m: m.zeros((2, 3)),
    zeros_list=lambda m: m.zeros([2, 3]),
    zeros_size_kw=lambda m: m.zeros(size=(2, 3)),
    zeros_0d=lambda m: m.zeros(()),
    zeros_f32=lambda m: m.zeros(2, dtype=D(m, "float32")),
    zeros_i64=lambda m: m.zeros(2, dtype=D(m, "int64")),
    zeros_bool=lambda m: m.zeros(2, dtype=bool),
    zeros_py_int=lambda m: m.zeros(2, dtype=int),
    zeros_py_float=lambda m: m.zeros(2, dtype=float),
    zeros_device=lambda m: m.zeros(2, device="cpu"),
    zeros_device_obj=lambda m: m.zeros(2, device=_dev(m)),
    zeros_layout=lambda m: m.zeros(2, layout=torch.strided),
    zeros_f32_rg=lambda m: m.zeros(2, dtype=D(m, "float32"), requires_grad=True),
    zeros_np_ints=lambda m: m.zeros(np.int64(2), np.int32(3)),
    zeros_0d_tensor_size=lambda m: m.zeros(m.tensor(2)),
    zeros_torch_size=lambda m: m.zeros(torch.Size([2, 1])),
    zeros_shape_of=lambda m: m.zeros(m.ones(2, 3).shape),
    ones_i32=lambda m: m.ones(2, 2, dtype=D(m, "int32")),
    ones_f32_rg=lambda m: m.ones([3], dtype=D(m, "float32"), requires_grad=True),
    ones_size_kw=lambda m: m.ones(size=[1, 2]),
    empty_shape=lambda m: m.empty(2, 3).shape,
    empty_dtype=lambda m: m.empty((2,), dtype=D(m, "int64")).dtype,
    empty_size_kw=lambda m: m.empty(size=(4,)).shape,
    empty_contiguous=lambda m: m.empty(2, memory_format=torch.contiguous_format).shape,
    empty_rg=lambda m: m.empty(2, requires_grad=True).requires_grad,
    full_float=lambda m: m.full((2,), 1.5),
    full_int=lambda m: m.full((2,), 3),
    full_bool=lambda m: m.full((2,), True),
    full_size_kw=lambda m: m.full(size=(2, 2), fill_value=2.5),
    full_f32=lambda m: m.full((2,), 0.1, dtype=D(m, "float32")),
    full_int_trunc=lambda m: m.full((3,), -1.5, dtype=D(m, "int64")),
    full_0d_tensor=lambda m: m.full((2,), m.tensor(2.5)),
    full_device=lambda m: m.full((1,), 2.0, device="cpu", layout=torch.strided),
    full_f32_inf=lambda m: m.full((1,), float("inf"), dtype=D(m, "float32")),
    full_f32_tiny=lambda m: m.full((1,), 1e-50, dtype=D(m, "float32")),
    full_bool_of_float=lambda m: m.full((2,), 0.5, dtype=bool),
    full_i64_of_bool=lambda m: m.full((2,), True, dtype=D(m, "int64")),
    full_like_bool=lambda m: m.full_like(m.tensor([True, False]), 2),
    eye3=lambda m: m.eye(3),
    eye_nm=lambda m: m.eye(2, 3),
    eye_m_kw=lambda m: m.eye(3, m=2),
    eye_n_kw=lambda m: m.eye(n=2),
    eye_f32=lambda m: m.eye(2, dtype=D(m, "float32")),
    eye_i64=lambda m: m.eye(2, 3, dtype=D(m, "int64")),
    eye_bool=lambda m: m.eye(2, dtype=bool),
    eye_rg=lambda m: m.eye(2, requires_grad=True),
    eye_0=lambda m: m.eye(0),
    eye_device=lambda m: m.eye(2, device="cpu"),
    arange_int=lambda m: m.arange(5),
    arange_float=lambda m: m.arange(0, 1, 0.25),
    arange_end_kw=lambda m: m.arange(end=4),
    arange_start_end_kw=lambda m: m.arange(start=1, end=4),
    arange_i64_of_floats=lambda m: m.arange(0.5, 3, dtype=D(m, "int64")),
    arange_i64_truncates_start=lambda m: m.arange(-0.5, 2, dtype=D(m, "int64")),
    arange_i64_truncates_step=lambda m: m.arange(-2.5, 2, 1.5, dtype=D(m, "int64")),
    arange_f32=lambda m: m.arange(0, 1, 0.1, dtype=D(m, "float32")),
    arange_f64=lambda m: m.arange(0, 1, 0.1, dtype=D(m, "float64")),
    arange_f64_of_ints=lambda m: m.arange(3, dtype=D(m, "float64")),
    arange_np_int=lambda m: m.arange(np.int64(3)),
    arange_np_float=lambda m: m.arange(np.float64(2.5)),
    arange_0d_int=lambda m: m.arange(m.tensor(3)),
    arange_0d_float=lambda m: m.arange(m.tensor(1.5)),
    arange_f32_rg=lambda m: m.arange(3.0, dtype=D(m, "float32"), requires_grad=True),
    arange_device=lambda m: m.arange(3, device="cpu"),
    linspace=lambda m: m.linspace(0, 1, 5),
    linspace_kw=lambda m: m.linspace(start=0, end=2, steps=3),
    linspace_i64=lambda m: m.linspace(0, 10, 4, dtype=D(m, "int64")),
    linspace_i64_negative=lambda m: m.linspace(-10, 0, 4, dtype=D(m, "int64")),
    linspace_f32=lambda m: m.linspace(0, 1, 7, dtype=D(m, "float32")),
    linspace_0d=lambda m: m.linspace(m.tensor(0.0), m.tensor(1.0), 3),
    linspace_rg=lambda m: m.linspace(0, 1, 3, requires_grad=True),
    linspace_device=lambda m: m.linspace(0, 1, 3, device="cpu"),
    logspace=lambda m: m.logspace(0, 2, 3),
    logspace_base=lambda m: m.logspace(0, 3, 4, base=2),
    logspace_f32=lambda m: m.logspace(-1, 1, 3, dtype=D(m, "float32")),
    logspace_i64=lambda m: m.logspace(0, 2, 3, dtype=D(m, "int64")),
    logspace_device=lambda m: m.logspace(0, 2, 3, device="cpu"),
    zeros_like_input_kw=lambda m: m.zeros_like(input=m.ones(2)),
    zeros_like_device=lambda m: m.zeros_like(
        m.ones(2), device="cpu", memory_format=torch.preserve_format
    ),
    zeros_like_f32=lambda m: m.zeros_like(m.ones(2), dtype=D(m, "float32")),
    zeros_like_of_f32=lambda m: m.zeros_like(m.ones(2, dtype=D(m, "float32"))),
    ones_like_of_f32=lambda m: m.ones_like(m.ones(2, dtype=D(m, "float32"))),
    ones_like_of_i32=lambda m: m.ones_like(m.ones(2, dtype=D(m, "int32"))),
    full_like_f32=lambda m: m.full_like(m.zeros(2), 0.1, dtype=D(m, "float32")),
    full_like_of_f32=lambda m: m.full_like(m.zeros(2, dtype=D(m, "float32")), 0.1),
    empty_like_int=lambda m: m.empty_like(m.tensor([1, 2])).dtype,
    empty_like_layout=lambda m: m.empty_like(m.ones(2), layout=torch.strided).shape,
    rand_like_f32=lambda m: m.rand_like(m.ones(2), dtype=D(m, "float32")).dtype,
    randn_like_of_f32=lambda m: m.randn_like(m.ones(2, dtype=D(m, "float32"))).dtype,
    randint_like_of_float=lambda m: m.randint_like(m.ones(3), 5).dtype,
    tensor_device=lambda m: m.tensor([1.0], device="cpu", pin_memory=False),
    tensor_i64=lambda m: m.tensor([1, 2], dtype=D(m, "int64")),
    tril_indices_device=lambda m: m.tril_indices(3, 3, device="cpu"),
    triu_indices_layout=lambda m: m.triu_indices(2, 3, 1, layout=torch.strided),
    # random draws: what does not depend on the stream
    randn_shape=lambda m: m.randn(3, 4).shape,
    randn_tuple=lambda m: m.randn((3, 4)).shape,
    randn_list_f32_rg=lambda m: (lambda t: (t.shape, t.dtype, t.requires_grad, t.is_leaf))(
        m.randn([3, 4], dtype=D(m, "float32"), requires_grad=True)
    ),
    randn_size_kw=lambda m: m.randn(size=(2,)).shape,
    randn_f32=lambda m: m.randn(2, dtype=D(m, "float32")).dtype,
    randn_device=lambda m: m.randn(2, device="cpu", layout=torch.strided).shape,
    rand_f32_in_range=lambda m: (lambda t: (t.dtype, bool(((t >= 0) & (t < 1)).all())))(
        m.rand(50, dtype=D(m, "float32"))
    ),
    randint_high_size=lambda m: (lambda t: (t.shape, t.dtype, bool(((t >= 0) & (t < 4)).all())))(
        m.randint(4, (3,))
    ),
    randint_low_high_size=lambda m: (
        lambda t: (t.shape, t.dtype, bool(((t >= 2) & (t < 4)).all()))
    )(m.randint(2, 4, (3, 2))),
    randint_kw=lambda m: (lambda t: (t.shape, t.dtype))(m.randint(low=1, high=4, size=(3,))),
    randint_high_kw=lambda m: (lambda t: (t.shape, t.dtype))(m.randint(high=4, size=(3,))),
    randint_float_rg=lambda m: (lambda t: (t.dtype, t.requires_grad))(
        m.randint(3, (2,), dtype=D(m, "float64"), requires_grad=True)
    ),
    randint_i32=lambda m: m.randint(0, 4, (2,), dtype=D(m, "int32")).dtype,
    randint_device=lambda m: m.randint(0, 4, (2,), device="cpu").shape,
    randperm=lambda m: (lambda t: (t.dtype, sorted(t.tolist())))(m.randperm(5)),
    randperm_0=lambda m: m.randperm(0),
    randperm_f64_rg=lambda m: (lambda t: (t.dtype, t.requires_grad, sorted(t.tolist())))(
        m.randperm(3, dtype=D(m, "float64"), requires_grad=True)
    ),
    generator_seed=lambda m: m.Generator().manual_seed(5).initial_seed(),
    generator_negative_seed=lambda m: m.Generator().manual_seed(-1).initial_seed(),
    generator_device=lambda m: str(m.Generator(device="cpu").device),
    generator_reproduces=lambda m: bool(
        (
            m.randn(3, generator=m.Generator().manual_seed(1))
            == m.randn(3, generator=m.Generator().manual_seed(1))
        ).all()
    ),
    generator_randint=lambda m: (
        m.randint(0, 10, (4,), generator=m.Generator().manual_seed(2)).shape
    ),
    generator_randperm=lambda m: sorted(
        m.randperm(4, generator=m.Generator().manual_seed(2)).tolist()
    ),
    generator_rand_like=lambda m: (
        m.rand_like(m.ones(2), generator=m.Generator().manual_seed(2)).shape
    ),
    generator_normal=lambda m: (
        m.normal(0.0, 1.0, (2,), generator=m.Generator().manual_seed(1)).shape
    ),
    generator_bernoulli=lambda m: m.bernoulli(
        m.tensor([0.0, 1.0]), generator=m.Generator().manual_seed(1)
    ),
    generator_poisson=lambda m: m.poisson(m.zeros(2), generator=m.Generator().manual_seed(1)),
    generator_multinomial=lambda m: m.multinomial(
        m.tensor([0.0, 1.0]), 1, generator=m.Generator().manual_seed(3)
    ),
)


@pytest.mark.parametrize("name", list(SAME))
def test_factory_as_torch(name):
    got, want = _both(SAME[name])
    _same(got, want)


# ---- where PyTorch raises, tapegrad raises an error naming the function -----------------------
BOTH_RAISE = dict(
    zeros_float_size=lambda m: m.zeros(3.0),
    zeros_negative=lambda m: m.zeros(-1),
    zeros_mixed=lambda m: m.zeros(2, (3,)),
    zeros_bool_size=lambda m: m.zeros(True),
    zeros_int_rg=lambda m: m.zeros(2, dtype=D(m, "int64"), requires_grad=True),
    zeros_cuda=lambda m: m.zeros(2, device="cuda"),
    zeros_like_channels_last=lambda m: m.zeros_like(m.ones(2), memory_format=torch.channels_last),
    ones_bool_rg=lambda m: m.ones(2, dtype=bool, requires_grad=True),
    empty_pin_memory=lambda m: m.empty(2, pin_memory=True),
    empty_channels_last=lambda m: m.empty(2, memory_format=torch.channels_last),
    full_vector_value=lambda m: m.full((2,), [1.0, 2.0]),
    full_int_rg=lambda m: m.full((2,), 3.0, dtype=D(m, "int64"), requires_grad=True),
    full_f32_overflow=lambda m: m.full((2,), 1e300, dtype=D(m, "float32")),  # (was inf)
    full_i32_overflow=lambda m: m.full((2,), 2**40, dtype=D(m, "int32")),  # (was 0)
    full_int_nan=lambda m: m.full((2,), float("nan"), dtype=D(m, "int64")),  # (was -2**63)
    full_int_inf=lambda m: m.full((2,), float("inf"), dtype=D(m, "int64")),  # (was -2**63)
    full_like_f32_overflow=lambda m: m.full_like(m.zeros(2, dtype=D(m, "float32")), 1e300),
    eye_negative=lambda m: m.eye(-1),
    eye_float=lambda m: m.eye(2.0),
    eye_int_rg=lambda m: m.eye(2, dtype=D(m, "int64"), requires_grad=True),
    arange_int_dtype_zero_step=lambda m: m.arange(0, 1, 0.3, dtype=D(m, "int64")),
    arange_inf=lambda m: m.arange(0, float("inf")),
    arange_nan=lambda m: m.arange(0, float("nan")),
    arange_int_rg=lambda m: m.arange(3, dtype=D(m, "int64"), requires_grad=True),
    arange_bool=lambda m: m.arange(2, dtype=bool),
    arange_str=lambda m: m.arange("3"),
    linspace_negative=lambda m: m.linspace(0, 1, -1),
    linspace_float_steps=lambda m: m.linspace(0, 1, 2.0),
    linspace_bool=lambda m: m.linspace(0, 1, 2, dtype=bool),
    logspace_int_rg=lambda m: m.logspace(0, 1, 2, dtype=D(m, "int64"), requires_grad=True),
    randn_i64=lambda m: m.randn(2, dtype=D(m, "int64")),
    randn_bad_generator=lambda m: m.randn(2, generator=3),
    randn_pin_memory=lambda m: m.randn(2, pin_memory=True),
    rand_i64=lambda m: m.rand(2, dtype=D(m, "int64")),
    rand_bool=lambda m: m.rand(2, dtype=bool),
    randint_rg=lambda m: m.randint(5, (2,), requires_grad=True),
    randint_int_size=lambda m: m.randint(0, 4, size=3),
    randint_no_size=lambda m: m.randint(0, 4),
    randint_low_not_below_high=lambda m: m.randint(4, 2, (3,)),
    randint_float_high=lambda m: m.randint(0, 4.5, (2,)),
    randperm_negative=lambda m: m.randperm(-1),
    randperm_float=lambda m: m.randperm(3.0),
    randperm_rg=lambda m: m.randperm(3, requires_grad=True),
    randn_like_int=lambda m: m.randn_like(m.tensor([1, 2])),
    tensor_cuda=lambda m: m.tensor([1.0], device="cuda"),
    generator_cuda=lambda m: m.Generator(device="cuda"),
)


@pytest.mark.parametrize("name", list(BOTH_RAISE))
def test_factory_raises_as_torch(name):
    assert _error(BOTH_RAISE[name], torch) is not None, "torch computes it: compare instead"
    err = _error(BOTH_RAISE[name], tg)
    assert err is not None, f"{name}: tapegrad computes {BOTH_RAISE[name](tg)!r}"
    assert isinstance(err, (TypeError, ValueError, RuntimeError, NotImplementedError))
    assert "tg." in str(err), f"the error does not name the function: {err}"


# PyTorch computes (out= writes into a tensor; 'meta' and sparse layouts exist there): tapegrad
# refuses with an error naming the function and the argument
REFUSED = dict(
    zeros_out=(lambda m: m.zeros(2, out=m.ones(2)), "out="),
    arange_out=(lambda m: m.arange(3, out=m.ones(3)), "out="),
    randn_out=(lambda m: m.randn(2, out=m.ones(2)), "out="),
    zeros_meta=(lambda m: m.zeros(2, device="meta"), "device="),
    zeros_sparse=(lambda m: m.zeros(2, layout=torch.sparse_coo), "layout="),
    zeros_complex=(lambda m: m.zeros(2, dtype=D(m, "complex128")), "complex"),
    randn_torch_generator=(lambda m: m.randn(2, generator=torch.Generator()), "tg.Generator"),
)


@pytest.mark.parametrize("name", list(REFUSED))
def test_factory_refuses_clearly(name):
    prog, fragment = REFUSED[name]
    assert _error(prog, torch) is None
    err = _error(prog, tg)
    assert err is not None and fragment in str(err), err
    assert "tg." in str(err)


def test_generator_draws_and_global_seed():
    g = tg.Generator().manual_seed(7)
    a = tg.randn(4, generator=g)
    b = tg.randn(4, generator=g)
    assert not np.array_equal(a.numpy(), b.numpy())  # the generator moves on
    g.manual_seed(7)
    np.testing.assert_array_equal(tg.randn(4, generator=g).numpy(), a.numpy())
    np.testing.assert_array_equal(
        tg.randn(4, generator=np.random.default_rng(7)).numpy(),
        np.random.default_rng(7).standard_normal(4),
    )
    tg.manual_seed(-3)  # PyTorch reads a negative seed modulo 2**64
    x = tg.rand(3)
    tg.manual_seed(2**64 - 3)
    np.testing.assert_array_equal(tg.rand(3).numpy(), x.numpy())
    s = tg.Generator().seed()
    assert isinstance(s, int)


def test_float32_factories_differentiate():
    """A float32 factory result that requires grad is a float32 leaf, as PyTorch's (and as
    ``tg.tensor(..., dtype=tg.float32)``: its gradient is computed in float64, tapegrad's
    design)."""
    for m in (tg, torch):
        for x in (
            m.ones(3, dtype=D(m, "float32"), requires_grad=True),
            m.randn(3, dtype=D(m, "float32"), requires_grad=True),
            m.linspace(0.0, 1.0, 3, dtype=D(m, "float32"), requires_grad=True),
        ):
            assert str(x.dtype).endswith("float32")
            (x * x).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-7)


FACTORY_KEYWORDS = {
    "zeros": {"size", "out", "dtype", "layout", "device", "requires_grad"},
    "ones": {"size", "out", "dtype", "layout", "device", "requires_grad"},
    "empty": {"size", "out", "dtype", "layout", "device", "requires_grad", "pin_memory"},
    "full": {"size", "fill_value", "out", "dtype", "layout", "device", "requires_grad"},
    "eye": {"n", "m", "out", "dtype", "layout", "device", "requires_grad"},
    "arange": {"start", "end", "step", "out", "dtype", "layout", "device", "requires_grad"},
    "linspace": {"start", "end", "steps", "out", "dtype", "layout", "device", "requires_grad"},
    "logspace": {"start", "end", "steps", "base", "out", "dtype", "layout", "device"},
    "randn": {"size", "generator", "out", "dtype", "layout", "device", "requires_grad"},
    "rand": {"size", "generator", "out", "dtype", "layout", "device", "requires_grad"},
    "randint": {"low", "high", "size", "generator", "out", "dtype", "device", "requires_grad"},
    "randperm": {"n", "generator", "out", "dtype", "layout", "device", "requires_grad"},
    "zeros_like": {"input", "dtype", "layout", "device", "requires_grad", "memory_format"},
    "ones_like": {"input", "dtype", "layout", "device", "requires_grad", "memory_format"},
    "empty_like": {"input", "dtype", "layout", "device", "requires_grad", "memory_format"},
    "full_like": {"input", "fill_value", "dtype", "device", "requires_grad"},
    "rand_like": {"input", "generator", "dtype", "device", "requires_grad"},
    "randn_like": {"input", "generator", "dtype", "device", "requires_grad"},
    "randint_like": {"input", "low", "high", "generator", "dtype", "device"},
    "tensor": {"data", "dtype", "device", "requires_grad", "pin_memory"},
    "tril_indices": {"row", "col", "offset", "dtype", "device", "layout"},
    "multinomial": {"input", "num_samples", "replacement", "generator"},
}


@pytest.mark.parametrize("name", list(FACTORY_KEYWORDS))
def test_factory_takes_torchs_keywords(name):
    params = set(inspect.signature(getattr(tg, name)).parameters)
    missing = FACTORY_KEYWORDS[name] - params
    assert not missing, f"tg.{name} lacks PyTorch's {sorted(missing)}"
    doc = getattr(torch, name).__doc__.strip().split("\n")[0]
    for k in FACTORY_KEYWORDS[name]:  # each is PyTorch's too
        assert k in doc or (k == "size" and "*size" in doc), (k, doc)


# ---- PyTorch's keyword names for tg's functions (their own names are NumPy's) ----------------
TORCH_KEYWORDS = dict(
    exp_input=lambda m, A: m.exp(input=A),
    sigmoid_input=lambda m, A: m.sigmoid(input=A),
    sum_input=lambda m, A: m.sum(input=A, dim=0),
    mean_input=lambda m, A: m.mean(input=A, dim=1),
    logsumexp_input=lambda m, A: m.logsumexp(input=A, dim=1, keepdim=True),
    matmul_input_other=lambda m, A: m.matmul(input=A, other=A),
    mul_input_other=lambda m, A: m.mul(input=A, other=2.0),
    maximum_input_other=lambda m, A: m.maximum(input=A, other=A.flip(0)),
    atan2_input_other=lambda m, A: m.atan2(input=A, other=A.T),
    hypot_other=lambda m, A: m.hypot(A, other=A.T),
    pow_exponent=lambda m, A: m.pow(A, exponent=2),
    pow_input_exponent=lambda m, A: m.pow(input=A, exponent=0.5),
    polygamma_input=lambda m, A: m.polygamma(1, input=A),
    stack_tensors=lambda m, A: m.stack(tensors=[A, A], dim=1),
    concatenate_tensors=lambda m, A: m.concatenate(tensors=[A, A], dim=1),
    unsqueeze_input=lambda m, A: m.unsqueeze(input=A, dim=0),  # (a bare IndexError)
    softmax_input=lambda m, A: m.softmax(input=A, dim=0),  # (a bare IndexError)
    where_keywords=lambda m, A: m.where(condition=A > 2, input=A, other=A * 0),
    cumsum_dtype=lambda m, A: m.cumsum(A, dim=1, dtype=D(m, "float64")),
    cumsum_positional_dtype=lambda m, A: m.cumsum(A, 0, dtype=D(m, "float64")),
    cumprod_input=lambda m, A: m.cumprod(input=A, dim=1),
    transpose_dim0_dim1=lambda m, A: m.transpose(A, dim0=0, dim1=1),
    reshape_input=lambda m, A: m.reshape(input=A, shape=(4,)),
    broadcast_to_input=lambda m, A: m.broadcast_to(input=A, size=(2, 2, 2)),
    tensordot_a_b=lambda m, A: m.tensordot(a=A, b=A, dims=1),
    dot_input_tensor=lambda m, A: m.dot(input=A[0], tensor=A[1]),
    outer_input_vec2=lambda m, A: m.outer(input=A[0], vec2=A[1]),
    round_input=lambda m, A: m.round(input=A / 3, decimals=2),
    all_input=lambda m, A: m.all(input=A > 1, dim=1),
    any_input=lambda m, A: m.any(input=A > 3, dim=0, keepdim=True),
)


@pytest.mark.parametrize("name", list(TORCH_KEYWORDS))
def test_torch_keyword_names(name):
    vals = []
    for m in (tg, torch):
        A = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=D(m, "float64"))
        vals.append(np.asarray(TORCH_KEYWORDS[name](m, A).detach().numpy(), dtype=float))
    rtol = 1e-9 if name.startswith("polygamma") else 1e-12  # (torch's trigamma: 5e-10 off)
    np.testing.assert_allclose(vals[0], vals[1], rtol=rtol)


def test_torch_keyword_names_differentiate():
    """A keyword call records as the positional one: first and second derivatives as torch's."""
    out = []
    for m in (tg, torch):
        A = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=D(m, "float64"), requires_grad=True)
        y = m.pow(input=m.softmax(input=A, dim=0), exponent=3)
        y = m.sum(input=m.mul(input=y, other=m.cumsum(A, 1)), dim=(0, 1))
        (g,) = m.autograd.grad(y, A, create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), A)
        out.append([v.detach().numpy() for v in (y, g, h)])
    for a, b in zip(*out, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    f = lambda A: tg.exp(input=tg.mul(input=A, other=A)).sum()  # noqa: E731
    A = tg.tensor([[0.1, 0.2], [0.3, -0.4]], requires_grad=True)
    assert tg.gradcheck(f, (A,)) and tg.gradgradcheck(f, (A,))


KEYWORD_ERRORS = dict(
    unsqueeze_no_input=lambda m, A: m.unsqueeze(dim=0),
    softmax_no_input=lambda m, A: m.softmax(dim=0),
    pow_twice=lambda m, A: m.pow(A, 2, exponent=3),
    exp_input_twice=lambda m, A: m.exp(A, input=A),
    where_other_without_input=lambda m, A: m.where(A > 2, other=A),
)


@pytest.mark.parametrize("name", list(KEYWORD_ERRORS))
def test_torch_keyword_names_refuse_as_torch(name):
    A = torch.ones(2, dtype=torch.float64)
    with pytest.raises(TypeError):
        KEYWORD_ERRORS[name](torch, A)
    with pytest.raises(TypeError, match=r"tg\.\w+|missing|unexpected|multiple"):
        KEYWORD_ERRORS[name](tg, tg.ones(2))


# ---- the Tensor's new_* / fill methods: values that do not fit, and the dtype kept -----------
FITS = dict(
    new_full_int32_overflow=lambda m: m.zeros(2).new_full((2,), 2**40, dtype=D(m, "int32")),
    new_full_int_nan=lambda m: m.zeros(2).new_full((2,), float("nan"), dtype=D(m, "int64")),
    new_full_f32=lambda m: m.zeros(2).new_full((2,), 1e300, dtype=D(m, "float32")),
    new_full_of_i32=lambda m: m.zeros(2, dtype=D(m, "int32")).new_full((2,), 2**31),
    index_fill_int_nan=lambda m: m.zeros(2, dtype=D(m, "int64")).index_fill_(
        0, m.tensor([0]), float("nan")
    ),
    index_fill_i32_big=lambda m: m.zeros(2, dtype=D(m, "int32")).index_fill(
        0, m.tensor([0]), 2**40
    ),
    index_fill_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).index_fill(0, m.tensor([0]), 1e300),
    fill_f32_overflow=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(1e300),
    fill_f32_just_over=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(-3.5e38),
    fill_f32_huge_int=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(2**200),
    masked_fill_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).masked_fill(
        m.tensor([True, False]), 1e300
    ),
    masked_fill__f32=lambda m: m.zeros(2, dtype=D(m, "float32")).masked_fill_(
        m.tensor([True, False]), -1e39
    ),
    setitem_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).__setitem__(0, 1e300),
    setitem_f32_mask=lambda m: m.zeros(2, dtype=D(m, "float32")).__setitem__(
        m.tensor([True, False]), 1e300
    ),
    scatter_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).scatter(0, m.tensor([0]), 1e300),
    scatter_i32=lambda m: m.zeros(2, dtype=D(m, "int32")).scatter(0, m.tensor([0]), 2**40),
    fill_diagonal_f32=lambda m: m.zeros(2, 2, dtype=D(m, "float32")).fill_diagonal_(1e300),
    fill_diagonal_i32=lambda m: m.zeros(2, 2, dtype=D(m, "int32")).fill_diagonal_(2**40),
    full_like_f32=lambda m: m.full_like(m.zeros(2, dtype=D(m, "float32")), 1e300),
    where_f32=lambda m: m.where(m.tensor([True, False]), m.zeros(2, dtype=D(m, "float32")), 1e300),
    where_i32=lambda m: m.where(m.tensor([True, False]), 2**40, m.zeros(2, dtype=D(m, "int32"))),
)


@pytest.mark.parametrize("name", list(FITS))
def test_fill_methods_refuse_values_that_do_not_fit(name):
    assert _error(FITS[name], torch) is not None
    e = _error(FITS[name], tg)
    assert isinstance(e, (RuntimeError, OverflowError)), repr(e)
    assert "without overflow" in str(e) or "too" in str(e), e


FILLED = dict(
    fill_f32_inf=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(float("-inf")),
    fill_f32_nan=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(float("nan")),
    fill_f32_tiny=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(1e-50),
    fill_f32_max=lambda m: m.zeros(2, dtype=D(m, "float32")).fill_(3.4028234663852886e38),
    fill_i64_float=lambda m: m.zeros(2, dtype=D(m, "int64")).fill_(-2.7),
    fill_i32_min=lambda m: m.zeros(2, dtype=D(m, "int32")).fill_(-(2**31)),
    index_fill_f32=lambda m: m.zeros(2, 2, dtype=D(m, "float32")).index_fill(0, m.tensor([1]), 1.5),
    index_fill_f32_tensor=lambda m: m.zeros(2, 2, dtype=D(m, "float32")).index_fill(
        1, m.tensor([0]), m.tensor(2.0)
    ),
    index_fill_i64_float=lambda m: m.zeros(3, dtype=D(m, "int64")).index_fill(
        0, m.tensor([0, 2]), 2.7
    ),
    scatter_f32=lambda m: m.zeros(2, 2, dtype=D(m, "float32")).scatter(0, m.tensor([[1, 0]]), 0.1),
    scatter_i32=lambda m: m.zeros(2, 2, dtype=D(m, "int32")).scatter(1, m.tensor([[1], [0]]), 7),
    masked_fill_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).masked_fill(
        m.tensor([True, False]), 0.1
    ),
    fill_diagonal_f32=lambda m: m.zeros(2, 3, dtype=D(m, "float32")).fill_diagonal_(0.1),
    fill_diagonal_i32=lambda m: m.zeros(3, 2, dtype=D(m, "int32")).fill_diagonal_(3, wrap=True),
    fill_diagonal_i64_float=lambda m: m.zeros(2, 2, dtype=D(m, "int64")).fill_diagonal_(2.9),
    new_full_i32=lambda m: m.zeros(2).new_full((2,), 2**31 - 1, dtype=D(m, "int32")),
    new_full_float_into_int=lambda m: m.zeros(2, dtype=D(m, "int64")).new_full((2,), -2.5),
    where_f32_inf=lambda m: m.where(
        m.tensor([True, False]), m.zeros(2, dtype=D(m, "float32")), float("inf")
    ),
    where_i32=lambda m: m.where(m.tensor([True, False]), 7, m.zeros(2, dtype=D(m, "int32"))),
)


@pytest.mark.parametrize("name", list(FILLED))
def test_fills_that_fit_match_torch(name):
    got, want = _both(FILLED[name])
    _same(got, want)


DTYPE_KEPT = dict(
    new_ones_f32=lambda m: m.zeros(2).new_ones(3, dtype=D(m, "float32")),
    new_zeros_of_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).new_zeros(2),
    new_full_of_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).new_full((2,), 0.5),
    new_empty_of_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).new_empty(0),
    new_ones_of_i32=lambda m: m.zeros(2, dtype=D(m, "int32")).new_ones((2, 1)),
    new_zeros_f64_of_f32=lambda m: m.zeros(2, dtype=D(m, "float32")).new_zeros(
        2, dtype=D(m, "float64")
    ),
)


@pytest.mark.parametrize("name", list(DTYPE_KEPT))
def test_new_methods_keep_float32(name):
    got, want = _both(DTYPE_KEPT[name])
    _same(got, want)


# ---- the linear-algebra Tensor methods -------------------------------------------------------
_R = np.random.default_rng(5)
A3 = _R.standard_normal((3, 3)) + 3 * np.eye(3)
NEG = np.array([[0.0, 1.0, 0.3], [1.0, 0.2, 0.0], [0.1, 0.0, 1.5]])  # det < 0
B3 = _R.standard_normal((2, 3, 3)) + 3 * np.eye(3)
W = _R.standard_normal((3, 4))
TALL = _R.standard_normal((4, 2))
M32 = _R.standard_normal((3, 2))
SPD = A3 @ A3.T + np.eye(3)
L3 = np.linalg.cholesky(SPD)
U3 = L3.T.copy()
JUNK = np.triu(_R.standard_normal((3, 3)), 1)  # above the diagonal: not read
RHS = _R.standard_normal((3, 2))
BRHS = _R.standard_normal((2, 3, 2))
V3 = _R.standard_normal(3)


def _sym(L, M):
    return (M + M.mT) / 2


def _lo(L, a):
    """A lower-triangular leaf-built factor (``tril`` of a leaf: no gradient above)."""
    return L.m.tril(L.T(a))


def _up(L, a):
    return L.m.triu(L.T(a))


LINALG = dict(
    det=lambda L: L.T(A3).det(),
    det_batched=lambda L: L.T(B3).det(),
    logdet=lambda L: L.T(A3).logdet(),
    logdet_negative_nan=lambda L: L.T(NEG).logdet(),
    slogdet=lambda L: L.T(NEG).slogdet().logabsdet,
    slogdet_sign=lambda L: L.T(NEG).slogdet().sign.detach(),
    slogdet_batched=lambda L: L.T(B3).slogdet()[1],
    inverse=lambda L: L.T(A3).inverse(),
    inverse_batched=lambda L: L.T(B3).inverse(),
    pinverse_wide=lambda L: L.T(W).pinverse(),
    pinverse_tall=lambda L: L.T(TALL).pinverse(),
    cholesky=lambda L: _sym(L, L.T(SPD)).cholesky(),
    cholesky_upper=lambda L: _sym(L, L.T(SPD)).cholesky(upper=True),
    cholesky_inverse=lambda L: _lo(L, L3).cholesky_inverse(),
    cholesky_inverse_upper=lambda L: _up(L, U3).cholesky_inverse(upper=True),
    cholesky_inverse_fn=lambda L: L.m.cholesky_inverse(_lo(L, L3)),
    cholesky_inverse_junk_value=lambda L: L.T(L3 + JUNK, rg=False).cholesky_inverse(),
    cholesky_inverse_of_tril=lambda L: L.m.tril(L.T(L3 + JUNK)).cholesky_inverse(),
    cholesky_inverse_of_cholesky=lambda L: _sym(L, L.T(SPD)).cholesky().cholesky_inverse(),
    cholesky_solve=lambda L: L.T(RHS).cholesky_solve(_lo(L, L3)),
    cholesky_solve_upper=lambda L: L.T(RHS).cholesky_solve(_up(L, U3), upper=True),
    cholesky_solve_batched_b=lambda L: L.T(BRHS).cholesky_solve(_lo(L, L3)),
    cholesky_solve_fn=lambda L: L.m.cholesky_solve(L.T(RHS), _lo(L, L3)),
    cholesky_solve_junk_value=lambda L: L.T(RHS).cholesky_solve(L.T(L3.T + JUNK.T, rg=False)),
    qr=lambda L: L.T(A3).qr(),
    qr_tall=lambda L: L.T(TALL).qr(),
    qr_wide_complete=lambda L: L.T(W).qr(some=False),
    qr_fn_batched=lambda L: L.m.qr(L.T(B3)),
    qr_tall_complete_values=lambda L: L.T(TALL, rg=False).qr(some=False),
    svd_values=lambda L: L.T(A3).svd().S,
    svd_reconstruct=lambda L: (lambda r: r.U @ L.m.diag_embed(r.S) @ r.V.mT)(L.T(M32).svd()),
    svd_projectors=lambda L: (lambda r: (r.U @ r.U.mT, r.V @ r.V.mT))(L.T(TALL).svd()),
    svd_no_uv=lambda L: L.T(M32).svd(compute_uv=False),
    svd_fn_batched=lambda L: L.m.svd(L.T(B3)).S,
    svd_shapes=lambda L: [tuple(t.shape) for t in L.T(M32).svd(some=False)],
    triangular_solve=lambda L: L.T(RHS).triangular_solve(L.T(U3)),
    triangular_solve_lower=lambda L: L.T(RHS).triangular_solve(L.T(L3 + JUNK), upper=False),
    triangular_solve_transpose=lambda L: L.T(RHS).triangular_solve(L.T(U3), transpose=True),
    triangular_solve_unit=lambda L: L.T(RHS).triangular_solve(
        L.T(L3), upper=False, unitriangular=True
    ),
    triangular_solve_batched=lambda L: L.m.triangular_solve(L.T(BRHS), L.T(U3)),
    matrix_power_3=lambda L: L.T(A3).matrix_power(3),
    matrix_power_neg=lambda L: L.T(A3).matrix_power(-2),
    matrix_power_0=lambda L: L.T(A3).matrix_power(0),
    matrix_exp=lambda L: (0.3 * L.T(A3)).matrix_exp(),
    # torch.linalg names added with them
    solve_triangular=lambda L: L.linalg.solve_triangular(L.T(U3 + JUNK.T), L.T(RHS), upper=True),
    solve_triangular_lower=lambda L: L.linalg.solve_triangular(
        L.T(L3 + JUNK), L.T(RHS), upper=False
    ),
    solve_triangular_right=lambda L: L.linalg.solve_triangular(
        L.T(U3), L.T(RHS.T), upper=True, left=False
    ),
    solve_triangular_unit=lambda L: L.linalg.solve_triangular(
        L.T(L3), L.T(RHS), upper=False, unitriangular=True
    ),
    solve_triangular_batched=lambda L: L.linalg.solve_triangular(L.T(U3), L.T(BRHS), upper=True),
    linalg_matrix_exp=lambda L: L.linalg.matrix_exp(0.2 * L.T(B3)),
    matrix_rank=lambda L: L.linalg.matrix_rank(L.T([[1.0, 2.0], [2.0, 4.0]])),
    matrix_rank_batched=lambda L: L.linalg.matrix_rank(L.T(B3)),
    matrix_rank_atol=lambda L: L.linalg.matrix_rank(L.T(np.diag([1.0, 0.1, 0.01])), atol=0.05),
    matrix_rank_rtol=lambda L: L.linalg.matrix_rank(L.T(np.diag([1.0, 0.1, 0.01])), rtol=0.05),
    matrix_rank_hermitian=lambda L: L.linalg.matrix_rank(
        L.T([[1.0, 9.0], [1.0, 1.0]]), hermitian=True
    ),
    cond=lambda L: L.linalg.cond(L.T(A3)),
    cond_tall=lambda L: L.linalg.cond(L.T(TALL)),
    cond_m2=lambda L: L.linalg.cond(L.T(B3), -2),
    cond_fro=lambda L: L.linalg.cond(L.T(A3, rg=False), "fro"),  # (torch: no backward)
    cond_nuc=lambda L: L.linalg.cond(L.T(A3), "nuc"),
    cond_inf=lambda L: L.linalg.cond(L.T(A3, rg=False), float("inf")),
    cond_1=lambda L: L.linalg.cond(L.T(A3, rg=False), 1),
    tensorinv=lambda L: L.linalg.tensorinv(L.T(np.kron(A3, A3)).reshape(3, 3, 3, 3)),
    tensorinv_ind1=lambda L: L.linalg.tensorinv(L.T(np.kron(A3, A3)[:, :9]).reshape(9, 3, 3), 1),
    tensorsolve=lambda L: L.linalg.tensorsolve(
        L.T(np.kron(A3, A3)).reshape(3, 3, 9), L.T(RHS.reshape(3, 2) @ np.ones((2, 3)))
    ),
    tensorsolve_dims=lambda L: L.linalg.tensorsolve(
        L.T(np.kron(A3, A3)).reshape(9, 3, 3), L.T(RHS @ np.ones((2, 3))), dims=(0,)
    ),
)


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg_method_as_torch(name):
    _compare(LINALG[name], rtol=1e-9, atol=1e-11)


SECOND = [
    "det",
    "logdet",
    "inverse",
    "pinverse_wide",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve_upper",
    "qr_tall",
    "svd_values",
    "triangular_solve_transpose",
    "matrix_power_neg",
    "solve_triangular_right",
    "cond",
    "tensorsolve_dims",
]


def _second(prog, name):
    """The gradient of <grad of a weighted loss, v> with respect to the leaves."""
    L = _Lib(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = prog(L)
        outs = [t for t in (out if isinstance(out, tuple) else (out,)) if t.requires_grad]
        loss = sum((t * L.T(_R2(k, t.shape), rg=False)).sum() for k, t in enumerate(outs))
        g = L.m.autograd.grad(loss, L.leaves, create_graph=True)
        second = sum((gi * L.T(_R2(9 + k, gi.shape), rg=False)).sum() for k, gi in enumerate(g))
        return [np.asarray(x.detach().numpy()) for x in L.m.autograd.grad(second, L.leaves)]


def _R2(k, shape):
    return np.random.default_rng(50 + k).standard_normal(tuple(shape))


@pytest.mark.parametrize("name", SECOND)
def test_linalg_method_second_derivative_as_torch(name):
    got, want = _second(LINALG[name], "tg"), _second(LINALG[name], "torch")
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_cholesky_inverse_gradient_above_the_diagonal_is_zero():
    """Only the triangle of the factor is read (LAPACK's, in both libraries): the entries
    above the diagonal get a zero gradient, the derivative of the value (finite
    differences).  PyTorch gives them the derivative of inv(L L^T) for the whole matrix,
    which its own gradcheck refuses; below and on the diagonal the two agree."""
    progs = (
        lambda m, x: x.cholesky_inverse(),
        lambda m, x: m.tensor(RHS).cholesky_solve(x),
    )
    for f in progs:
        grads = []
        for m in (tg, torch):
            L = m.tensor(L3, requires_grad=True)
            y = f(m, L)
            w = np.random.default_rng(3).standard_normal(tuple(y.shape))
            (y * m.tensor(w)).sum().backward()
            grads.append(L.grad.numpy())
        assert not np.triu(grads[0], 1).any()
        assert np.triu(grads[1], 1).any()  # (PyTorch's convention)
        np.testing.assert_allclose(np.tril(grads[0]), np.tril(grads[1]), rtol=1e-9)


def test_linalg_methods_gradcheck():
    L = tg.tensor(np.linalg.cholesky(SPD), requires_grad=True)
    b = tg.tensor(RHS, requires_grad=True)
    assert tg.gradcheck(lambda x: x.cholesky_inverse(), (L,))
    assert tg.gradcheck(lambda y, x: y.cholesky_solve(x), (b, L))
    U = tg.tensor(U3, requires_grad=True)
    assert tg.gradcheck(lambda y, x: y.triangular_solve(x).solution, (b, U))
    assert tg.gradgradcheck(lambda x: x.cholesky_inverse(), (L,))
    A = tg.tensor(A3, requires_grad=True)
    for p in ("fro", "nuc", float("inf"), 1, -1):  # (PyTorch's backward fails there)
        assert tg.gradcheck(lambda x, p=p: tg.linalg.cond(x, p), (A,))


LINALG_ERRORS = dict(
    det_non_square=lambda L: L.T(W).det(),
    det_1d=lambda L: L.T([1.0, 2.0]).det(),
    logdet_non_square=lambda L: L.T(W).logdet(),
    slogdet_1d=lambda L: L.T([1.0]).slogdet(),
    inverse_non_square=lambda L: L.T(W).inverse(),
    inverse_1d=lambda L: L.T([2.0]).inverse(),
    pinverse_1d=lambda L: L.T([2.0]).pinverse(),
    cholesky_non_square=lambda L: L.T(W).cholesky(),
    cholesky_inverse_non_square=lambda L: L.T(W).cholesky_inverse(),
    cholesky_inverse_1d=lambda L: L.T([2.0]).cholesky_inverse(),
    cholesky_solve_1d_b=lambda L: L.T([1.0, 2.0, 3.0]).cholesky_solve(L.T(L3)),
    cholesky_solve_non_square=lambda L: L.T(RHS).cholesky_solve(L.T(W)),
    cholesky_solve_mismatch=lambda L: L.T(W.T).cholesky_solve(L.T(L3)),
    qr_1d=lambda L: L.T([1.0, 2.0]).qr(),
    qr_tall_complete_backward=lambda L: L.T(TALL).qr(some=False).Q.sum(),
    svd_1d=lambda L: L.T([1.0, 2.0]).svd(),
    triangular_solve_1d_b=lambda L: L.T([1.0, 2.0, 3.0]).triangular_solve(L.T(U3)),
    triangular_solve_non_square=lambda L: L.T(RHS).triangular_solve(L.T(W)),
    triangular_solve_mismatch=lambda L: L.T(W.T).triangular_solve(L.T(U3)),
    matrix_power_non_square=lambda L: L.T(W).matrix_power(2),
    matrix_exp_non_square=lambda L: L.T(W).matrix_exp(),
    solve_triangular_1d=lambda L: L.linalg.solve_triangular(L.T(U3), L.T(V3), upper=True),
    solve_triangular_non_square=lambda L: L.linalg.solve_triangular(L.T(W), L.T(RHS), upper=True),
    solve_triangular_mismatch=lambda L: L.linalg.solve_triangular(L.T(U3), L.T(W.T), upper=True),
    solve_triangular_no_upper=lambda L: L.linalg.solve_triangular(L.T(U3), L.T(RHS)),
    matrix_rank_1d=lambda L: L.linalg.matrix_rank(L.T(V3)),
    cond_fro_non_square=lambda L: L.linalg.cond(L.T(W), "fro"),
    cond_1d=lambda L: L.linalg.cond(L.T(V3)),
    tensorinv_not_square=lambda L: L.linalg.tensorinv(L.T(W), 1),
    tensorsolve_bad_shape=lambda L: L.linalg.tensorsolve(L.T(W), L.T(V3)),
)


@pytest.mark.parametrize("name", list(LINALG_ERRORS))
def test_linalg_method_errors_as_torch(name):
    assert _raises(LINALG_ERRORS[name], "torch") is not None
    err = _raises(LINALG_ERRORS[name], "tg")
    assert err is not None, f"{name}: tapegrad computes it"
    assert isinstance(err, (RuntimeError, ValueError, TypeError, np.linalg.LinAlgError))
