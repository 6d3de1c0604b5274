"""Parameter initialisation (``tg.nn.init``), PyTorch's names, formulas and arguments.

Every ``*_`` function overwrites its Tensor in place (the Tensor stays the same object, so a
Module and an optimizer holding it see the new values; nothing is recorded for gradients) and
returns it.  Random draws come from tapegrad's generator (``tg.manual_seed``), or from
``generator=`` when it is a ``numpy.random.Generator``.  Fans and gains are PyTorch's:
``fan_in = size(1) * receptive field``, ``fan_out = size(0) * receptive field``, where the
receptive field is the product of the sizes after the first two.

Examples:
    >>> import tapegrad as tg
    >>> w = tg.nn.Parameter(tg.zeros(3, 2))
    >>> _ = tg.manual_seed(0)
    >>> _ = tg.nn.init.xavier_uniform_(w)
    >>> bool((w.abs() <= (6.0 / (2 + 3)) ** 0.5).all())
    True
    >>> tg.nn.init.calculate_gain("relu")
    1.4142135623730951
"""

import math
import warnings

import numpy as np

from ..core import creation as _creation
from ..core import methods as _methods
from ..core import ufuncs as _ufuncs
from ..tensor_class import Tensor

__all__ = [
    "calculate_gain",
    "constant",
    "constant_",
    "dirac",
    "dirac_",
    "eye",
    "eye_",
    "kaiming_normal",
    "kaiming_normal_",
    "kaiming_uniform",
    "kaiming_uniform_",
    "normal",
    "normal_",
    "ones_",
    "orthogonal",
    "orthogonal_",
    "sparse",
    "sparse_",
    "trunc_normal_",
    "uniform",
    "uniform_",
    "xavier_normal",
    "xavier_normal_",
    "xavier_uniform",
    "xavier_uniform_",
    "zeros_",
]


def _check(name, tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a tapegrad Tensor, got {type(tensor).__name__}")
    if np.dtype(tensor.dtype).kind != "f":
        raise TypeError(f"{name}: expected a floating-point Tensor, got dtype {tensor.dtype}")


def _rng(name, generator):
    if generator is None:
        return _creation.rng()
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(
        f"{name}: generator must be None (tapegrad's generator, see tg.manual_seed) or a "
        f"numpy.random.Generator, got {type(generator).__name__}"
    )


def _fill(tensor, values):
    """Overwrite ``tensor`` in place with ``values`` (broadcast to its shape) and return it."""
    v = np.array(np.broadcast_to(np.asarray(values, dtype=tensor.dtype), tensor.shape))
    _methods._set_value(tensor, float(v) if v.ndim == 0 else v)
    return tensor


# gains that take no parameter: the layers without a nonlinearity keep the variance (1)
_GAINS = dict.fromkeys(
    ("linear", "sigmoid", "conv1d", "conv2d", "conv3d")
    + tuple(f"conv_transpose{d}d" for d in (1, 2, 3)),
    1,
)
_GAINS.update(tanh=5.0 / 3, relu=math.sqrt(2.0), selu=3.0 / 4)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gain for ``nonlinearity``: 1 for linear, conv and sigmoid, 5/3 for
    tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (``param`` the negative
    slope, 0.01 by default) and 3/4 for selu.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.calculate_gain("tanh"), tg.nn.init.calculate_gain("leaky_relu", 0.2)
        (1.6666666666666667, 1.3867504905630728)
    """
    fixed = _GAINS.get(nonlinearity)
    if fixed is not None:
        return fixed
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = len(tensor.shape)
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field_size = 1
    for s in tuple(tensor.shape)[2:]:
        receptive_field_size *= int(s)
    fan_in = int(tensor.shape[1]) * receptive_field_size
    fan_out = int(tensor.shape[0]) * receptive_field_size
    return fan_in, fan_out


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with draws from U(a, b).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.uniform_(tg.zeros(1000), -2.0, 3.0)
        >>> bool(w.min() >= -2.0), bool(w.max() < 3.0)
        (True, True)
    """
    _check("uniform_", tensor)
    return _fill(tensor, _rng("uniform_", generator).uniform(a, b, tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std**2).

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> w = tg.nn.init.normal_(tg.zeros(10000), mean=1.0, std=0.5)
        >>> round(float(w.mean()), 1), round(float(w.std()), 1)
        (1.0, 0.5)
    """
    _check("normal_", tensor)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(tensor, _rng("normal_", generator).normal(mean, std, tuple(tensor.shape)))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.constant_(tg.zeros(2), 0.5)
        tensor([0.5000, 0.5000])
    """
    _check("constant_", tensor)
    return _fill(tensor, float(val))


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.ones_(tg.zeros(2))
        tensor([1., 1.])
    """
    _check("ones_", tensor)
    return _fill(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.zeros_(tg.ones(2))
        tensor([0., 0.])
    """
    _check("zeros_", tensor)
    return _fill(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity (ones on the diagonal, as ``torch.eye``).

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.eye_(tg.zeros(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    _check("eye_", tensor)
    if len(tensor.shape) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.xavier_uniform_(tg.zeros(4, 2))
        >>> bool((w.abs() <= 1.0).all())
        True
    """
    _check("xavier_uniform_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _fill(tensor, _rng("xavier_uniform_", generator).uniform(-a, a, tuple(tensor.shape)))


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out)).

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> w = tg.nn.init.xavier_normal_(tg.zeros(200, 300))
        >>> round(float(w.std()) / (2 / 500) ** 0.5, 2)
        1.0
    """
    _check("xavier_normal_", tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _fill(tensor, _rng("xavier_normal_", generator).normal(0.0, std, tuple(tensor.shape)))


def _kaiming_std(name, tensor, a, mode, nonlinearity):
    _check(name, tensor)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He initialisation: U(-bound, bound) with bound = gain * sqrt(3 / fan), where fan is
    ``mode``'s (``"fan_in"`` or ``"fan_out"``) and gain is ``calculate_gain(nonlinearity, a)``.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.kaiming_uniform_(tg.zeros(3, 6), nonlinearity="relu")
        >>> bool((w.abs() <= 1.0).all())                 # sqrt(2) * sqrt(3 / 6) = 1
        True
    """
    std = _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    rng = _rng("kaiming_uniform_", generator)
    return _fill(tensor, rng.uniform(-bound, bound, tuple(tensor.shape)))


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He initialisation: N(0, std**2) with std = gain / sqrt(fan) (fan and gain as in
    ``kaiming_uniform_``).

    Examples:
        >>> import tapegrad as tg
        >>> _ = tg.manual_seed(0)
        >>> w = tg.nn.init.kaiming_normal_(tg.zeros(300, 200), mode="fan_out")
        >>> round(float(w.std()) * 300**0.5 / 2**0.5, 1)
        1.0
    """
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    rng = _rng("kaiming_normal_", generator)
    return _fill(tensor, rng.normal(0.0, std, tuple(tensor.shape)))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix times ``gain``, as PyTorch: the Q of the QR decomposition of a
    standard normal (rows, cols) draw, with the signs of R's diagonal folded in (so Q is
    uniformly distributed); tensors of more than 2 dimensions are flattened after the first.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.orthogonal_(tg.zeros(3, 5))
        >>> bool(((w @ w.T - tg.eye(3)).abs() < 1e-12).all())
        True
    """
    _check("orthogonal_", tensor)
    if len(tensor.shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    n = int(np.prod(tensor.shape))
    if n == 0:
        return tensor
    rows = int(tensor.shape[0])
    cols = n // rows
    flattened = _rng("orthogonal_", generator).standard_normal((rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tuple(tensor.shape)))


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std**2) truncated to [a, b], PyTorch's
    ``torch.nn.init.trunc_normal_`` (the same method: a uniform draw between the normal CDF's
    values at a and b mapped through the inverse CDF, then clamped to [a, b]; it warns when
    ``mean`` is more than 2 std outside [a, b]).

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.trunc_normal_(tg.zeros(1000), mean=0.5, std=1.0, a=0.0, b=1.0)
        >>> bool(w.min() >= 0.0), bool(w.max() <= 1.0)
        (True, True)
    """
    _check("trunc_normal_", tensor)
    if mean + 2 * std < a or mean - 2 * std > b:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
            "values may be incorrect.",
            stacklevel=2,
        )
    # inverse-CDF sampling: a uniform probability between Phi(alpha) and Phi(beta), mapped
    # back through Phi^-1(p) = sqrt(2) erfinv(2p - 1); the clip guards the ends' rounding
    root2 = math.sqrt(2.0)
    p_lo, p_hi = (0.5 * math.erfc((mean - edge) / (std * root2)) for edge in (a, b))
    p = _rng("trunc_normal_", generator).uniform(p_lo, p_hi, tuple(tensor.shape))
    z = np.asarray(_ufuncs.erfinv(Tensor(np.asarray(2.0 * p - 1.0, dtype=np.float64)))._v)
    return _fill(tensor, np.clip(mean + std * root2 * z, a, b))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill the 3-, 4- or 5-dimensional ``tensor`` (a convolution's weight) with the Dirac
    delta: each of the first min(out // groups, in) channels of every group passes its input
    channel through unchanged (a one at the kernel's centre), PyTorch's
    ``torch.nn.init.dirac_``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.init.dirac_(tg.zeros(2, 2, 3))
        tensor([[[0., 1., 0.],
                 [0., 0., 0.]],
        <BLANKLINE>
                [[0., 0., 0.],
                 [0., 1., 0.]]])
    """
    _check("dirac_", tensor)
    shape = tuple(tensor.shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups
    passed = np.arange(min(per_group, shape[1]))  # input channels kept, in every group
    outputs = (per_group * np.arange(groups)[:, None] + passed).ravel()
    inputs = np.tile(passed, groups)
    values = np.zeros(shape, dtype=tensor.dtype)
    values[(outputs, inputs, *(size // 2 for size in shape[2:]))] = 1
    return _fill(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill the 2-D ``tensor`` with draws from N(0, std**2), then zero ``ceil(sparsity *
    rows)`` entries, chosen at random, of every column: PyTorch's ``torch.nn.init.sparse_``.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.nn.init.sparse_(tg.zeros(4, 3), sparsity=0.5)
        >>> (w == 0).sum(0)
        tensor([2, 2, 2])
    """
    _check("sparse_", tensor)
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    rng = _rng("sparse_", generator)
    values = rng.normal(0.0, std, (rows, cols))
    # in each column, the rows ranked first by an independent random key are zeroed
    zeroed = np.argsort(rng.random((rows, cols)), axis=0)[: math.ceil(sparsity * rows)]
    values[zeroed, np.arange(cols)] = 0.0
    return _fill(tensor, values)


def _old_name_for(replacement):
    """The name without the trailing underscore, as PyTorch still has it: ``replacement``
    after a FutureWarning."""
    new = replacement.__name__
    old = new.rstrip("_")
    message = f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`."

    def alias(*args, **kwargs):
        warnings.warn(message, FutureWarning, stacklevel=2)
        return replacement(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"PyTorch's deprecated ``torch.nn.init.{old}``: ``{new}`` with a FutureWarning."
    return alias


uniform = _old_name_for(uniform_)
normal = _old_name_for(normal_)
constant = _old_name_for(constant_)
eye = _old_name_for(eye_)
dirac = _old_name_for(dirac_)
xavier_uniform = _old_name_for(xavier_uniform_)
xavier_normal = _old_name_for(xavier_normal_)
kaiming_uniform = _old_name_for(kaiming_uniform_)
kaiming_normal = _old_name_for(kaiming_normal_)
orthogonal = _old_name_for(orthogonal_)
sparse = _old_name_for(sparse_)
