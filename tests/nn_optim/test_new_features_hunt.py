"""A second look at this round's new features: tg.nn (transposed and 3-D convolutions, the
pools with indices and unpooling, padding, Fold / Unfold, interpolate, the norms, PReLU,
the margin losses, attention and the Transformer), tg.optim (Adamax, NAdam, RAdam,
Adadelta, ASGD and the new schedulers) and tapegrad.scipy.stats (ppf / isf and the new
distributions), in combinations their authors may not have tried.

Hunted, against PyTorch (float64; torch.autograd with create_graph, torch.func.jvp),
SciPy, closed forms and central finite differences:
- stats far in the tails: the Cauchy log-cdf / log-sf beyond 1e10 (log of a probability that
  rounds to 1), halfnorm's and uniform's log-sf near 0, truncnorm with an infinite end
  beyond 40 standard units, truncnorm's isf of a tiny q (SciPy's own isf loses the upper
  tail: 8.28 for isf(1e-20, 0, inf), not 9.34), with first and second derivatives;
- F.pad on a batch of 0 (every mode), and the refusal of a padded empty dim;
- second derivatives and forward-over-forward of the new layers (instance_norm against
  finite differences: PyTorch's own forward-over-forward of it is wrong), traces replayed at
  inputs with another argmax or past a support's end (a guard, or the right number),
  modules loaded from PyTorch's state dicts in eval and train mode, optimizers and
  schedulers with a parameter group added mid-run;
- kept as a strict xfail: the index a max pool returns (and which entry gets the
  gradient) when a window holds several NaNs.
"""

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy")
torch = pytest.importorskip("torch")

import scipy.stats as st  # noqa: E402
from torch_programs import _compare  # noqa: E402

import tapegrad as tg  # noqa: E402
import tapegrad.nn as tnn  # noqa: E402
import tapegrad.nn.functional as tgF  # noqa: E402
from tapegrad.scipy import stats as ts  # noqa: E402

TF = torch.nn.functional


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _rng(k):
    return np.random.default_rng(7100 + k)


def _d(f, x):
    """(value, d/dx, d2/dx2) of a scalar stats call at the float x (create_graph)."""
    xt = tg.tensor(np.array(x), requires_grad=True)
    v = f(xt)
    (g,) = tg.autograd.grad(v, [xt], create_graph=True)
    (h,) = tg.autograd.grad(g, [xt])
    return float(v), float(g), float(h)


# ---- stats: log-probabilities far in the tails ---------------------------------------------------

# (distribution, method, shapes, x); the reference value is SciPy's, accurate at these points
TAILS = [
    ("cauchy", "logcdf", (), 1e10),
    ("cauchy", "logcdf", (), 1e17),
    ("cauchy", "logcdf", (), 1e300),
    ("cauchy", "logsf", (), -1e10),
    ("cauchy", "logsf", (), -1e17),
    ("cauchy", "logcdf", (), 3.0),
    ("cauchy", "logsf", (), 3.0),
    ("halfnorm", "logsf", (), 1e-300),
    ("halfnorm", "logsf", (), 1e-10),
    ("halfnorm", "logsf", (), 0.5),
    ("halfnorm", "logsf", (), 3.0),
    ("uniform", "logsf", (), 1e-300),
    ("uniform", "logsf", (), 1e-20),
    ("uniform", "logsf", (), 0.25),
    ("uniform", "logcdf", (), 0.75),
    ("truncnorm", "logsf", (0.0, np.inf), 40.0),
    ("truncnorm", "logsf", (0.0, np.inf), 45.0),
    ("truncnorm", "logsf", (0.0, np.inf), 200.0),
    ("truncnorm", "logsf", (5.0, np.inf), 45.0),
    ("truncnorm", "logsf", (-np.inf, np.inf), 40.0),
    ("truncnorm", "logcdf", (-np.inf, 0.0), -45.0),
    ("truncnorm", "logcdf", (-np.inf, np.inf), -60.0),
    ("truncnorm", "logsf", (0.0, np.inf), 3.0),
]


def _hazard(name, method, shapes, x):
    """d log P / dx = +-pdf / P from SciPy's log-density and log-probability (for truncnorm
    with an infinite end beyond x, the normal's: the truncation only scales)."""
    if name == "truncnorm":
        lp, lc = st.norm.logpdf(x), getattr(st.norm, method)(x)
    else:
        dist = getattr(st, name)
        lp, lc = dist.logpdf(x, *shapes), getattr(dist, method)(x, *shapes)
    return math.exp(lp - lc) * (1.0 if method == "logcdf" else -1.0)


@pytest.mark.parametrize(("name", "method", "shapes", "x"), TAILS)
def test_log_probability_far_in_the_tails(name, method, shapes, x):
    """cauchy.logcdf(1e10) was -3.18309822e-11 (SciPy -3.18309886e-11) and logcdf(1e17) 0;
    halfnorm.logsf(1e-300) was 0 (-7.98e-301); uniform.logsf(1e-20) had the slope -0.5
    (not -1: a tie in a minimum); truncnorm.logsf(40, 0, inf) was -inf (-803.9)."""
    f = lambda v: getattr(getattr(ts, name), method)(v, *shapes)  # noqa: E731
    v, g, h = _d(f, x)
    want = getattr(getattr(st, name), method)(x, *shapes)
    np.testing.assert_allclose(v, want, rtol=1e-12)
    np.testing.assert_allclose(g, _hazard(name, method, shapes, x), rtol=1e-9)
    # (log P)'' = hz (log pdf)' - hz^2, hz = (log P)'
    hz = _hazard(name, method, shapes, x)
    dlogpdf = {"cauchy": -2.0 * x / (1.0 + x * x), "uniform": 0.0}.get(name, -x)
    # (the two terms cancel far in a normal tail: tolerance relative to them)
    np.testing.assert_allclose(h, hz * dlogpdf - hz * hz, rtol=1e-9, atol=1e-13 * hz * hz)


def test_uniform_log_probabilities_slopes_and_curvature():
    """log(1 - x) and log x inside [0, 1], with their closed-form derivatives, to second
    order; forward mode agrees."""
    xs = np.array([1e-20, 0.3, 0.9])
    g = tg.grad(lambda v: ts.uniform.logsf(v).sum())(xs)
    np.testing.assert_allclose(g, -1.0 / (1.0 - xs), rtol=1e-15)
    h = tg.hessian(lambda v: ts.uniform.logcdf(v).sum())(xs)
    np.testing.assert_allclose(h, np.diag(-1.0 / xs**2), rtol=1e-14)
    _, t = tg.jvp(lambda v: ts.uniform.logsf(v), (xs,), (np.ones(3),))
    np.testing.assert_allclose(t, -1.0 / (1.0 - xs), rtol=1e-15)
    v = ts.uniform.logsf(tg.tensor([-1.0, 0.5, 2.0]))
    np.testing.assert_array_equal(v.numpy(), st.uniform.logsf([-1.0, 0.5, 2.0]))


# ---- stats: truncnorm's upper quantile -----------------------------------------------------------

ISF = [
    ((0.0, np.inf), 1e-300),
    ((0.0, np.inf), 1e-20),
    ((0.0, np.inf), 1e-8),
    ((0.0, np.inf), 0.3),
    ((5.0, np.inf), 1e-20),
    ((-np.inf, np.inf), 1e-20),
    ((29.0, 30.0), 1e-8),
    ((-1.0, 2.0), 0.3),
]


@pytest.mark.parametrize(("ab", "q"), ISF)
def test_truncnorm_isf_of_a_tiny_q(ab, q):
    """truncnorm.isf(q, a, b) is -ppf(q, -b, -a) (SciPy's isf gave 8.28 for q = 1e-20 on
    [0, inf), not 9.34); on [0, inf) it is halfnorm's isf; d/dq = -1 / pdf, and d/da,
    d/db against central differences of the mirror's SciPy ppf."""
    a, b = ab
    want = -st.truncnorm.ppf(q, -b, -a)
    if a == 0.0 and b == np.inf:
        np.testing.assert_allclose(want, st.halfnorm.isf(q), rtol=1e-13)
    qt = tg.tensor(np.array(q), requires_grad=True)
    ends = [tg.tensor(np.array(v), requires_grad=bool(np.isfinite(v))) for v in ab]
    z = ts.truncnorm.isf(qt, *ends)
    np.testing.assert_allclose(float(z), want, rtol=1e-13)
    leaves = [qt] + [e for e in ends if e.requires_grad]
    grads = tg.autograd.grad(z, leaves)
    np.testing.assert_allclose(float(grads[0]), -1.0 / st.truncnorm.pdf(want, a, b), rtol=1e-9)
    k = 1
    for i, v in enumerate(ab):
        if not np.isfinite(v):
            continue
        e = 1e-6
        up, dn = list(ab), list(ab)
        up[i], dn[i] = v + e, v - e
        fd = (st.truncnorm.ppf(q, -dn[1], -dn[0]) - st.truncnorm.ppf(q, -up[1], -up[0])) / (2 * e)
        np.testing.assert_allclose(float(grads[k]), fd, rtol=1e-5, atol=1e-9)
        k += 1


def test_truncnorm_quantile_at_the_end_stays_in_the_support():
    """SciPy's quantile of a q that rounds to an end lies an ulp outside [a, b]
    (isf(1e-300, -1, 2) = 2.000000000000001), where the density is 0: the value is the end
    and d/dq the finite -1 / pdf(end), not -inf."""
    q = tg.tensor(np.array([1e-300, 1e-20, 0.0]), requires_grad=True)
    z = ts.truncnorm.isf(q, -1.0, 2.0)
    np.testing.assert_array_equal(z.numpy(), [2.0, 2.0, 2.0])
    (g,) = tg.autograd.grad(z.sum(), [q])
    np.testing.assert_allclose(g.numpy(), -1.0 / st.truncnorm.pdf(2.0, -1.0, 2.0), rtol=1e-12)
    z = ts.truncnorm.ppf(tg.tensor([1e-300, -0.1, np.nan]), -1.0, 2.0).numpy()
    np.testing.assert_array_equal(z[:1], [-1.0])
    assert np.isnan(z[1:]).all()


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize(("name", "shape"), [("gamma", 2.0), ("gamma", 0.5), ("chi2", 3.0)])
def test_quantile_at_the_ends_constant_in_the_shape(name, shape, method):
    """gamma.ppf(0, a) is 0 and ppf(1, a) inf for every a: the derivative in a is 0 (it was
    NaN, d cdf / d a times 1 / pdf(0) = 0 * inf); inside, central differences of SciPy."""
    q = np.array([0.0, 1.0, 0.3])
    a = tg.tensor(np.array(shape), requires_grad=True)
    v = getattr(getattr(ts, name), method)(tg.tensor(q), a)
    (g,) = tg.autograd.grad(v[:2].sum(), [a], retain_graph=True)
    assert float(g) == 0.0
    (g,) = tg.autograd.grad(v[2], [a])
    ref = getattr(st, name)
    e = 1e-6
    fd = (getattr(ref, method)(0.3, shape + e) - getattr(ref, method)(0.3, shape - e)) / (2 * e)
    np.testing.assert_allclose(float(g), fd, rtol=1e-6)


# ---- stats: counts far from the parameters ----------------------------------------------------

COUNTS = [
    ("binom", 5.0, (1e9, 1e-8)),
    ("binom", 3.0, (1e12, 1e-11)),
    ("binom", 7.0, (50.0, 0.3)),
    ("nbinom", 1e9, (3.0, 1e-9)),
    ("nbinom", 1e7, (0.5, 1e-6)),
    ("nbinom", 2.0, (1e15, 1 - 1e-15)),
    ("nbinom", 7.0, (2.5, 0.3)),
]


@pytest.mark.parametrize(("name", "k", "shapes"), COUNTS)
def test_log_pmf_of_a_far_count(name, k, shapes):
    """log C(n, k) without the cancellation of two huge log-gammas: binom.logpmf(3, 1e12,
    1e-11) was 2.6e-4 too large (SciPy's logpmf too; its pmf is right), nbinom.logpmf(1e9,
    3, 1e-9) off by 3e-6; against mpmath, with d/dp (and d/dn for nbinom)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    n, p = shapes
    if name == "binom":

        def ref(n_, p_):
            return (
                mp.loggamma(n_ + 1)
                - mp.loggamma(k + 1)
                - mp.loggamma(n_ - k + 1)
                + k * mp.log(p_)
                + (n_ - k) * mp.log1p(-p_)
            )
    else:

        def ref(n_, p_):
            return (
                mp.loggamma(k + n_)
                - mp.loggamma(n_)
                - mp.loggamma(k + 1)
                + n_ * mp.log(p_)
                + k * mp.log1p(-p_)
            )

    pt = tg.tensor(np.array(p), requires_grad=True)
    nt = tg.tensor(np.array(n), requires_grad=name == "nbinom")
    v = getattr(ts, name).logpmf(k, nt if name == "nbinom" else n, pt)
    leaves = [pt, nt] if name == "nbinom" else [pt]
    grads = tg.autograd.grad(v, leaves)
    N, P = mp.mpf(n), mp.mpf(p)
    want = ref(N, P)
    np.testing.assert_allclose(float(v), float(want), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(
        float(getattr(ts, name).pmf(k, n, pt)), float(mp.e**want), rtol=1e-13
    )
    np.testing.assert_allclose(float(grads[0]), float(mp.diff(lambda t: ref(N, t), P)), rtol=1e-9)
    if name == "nbinom":
        np.testing.assert_allclose(
            float(grads[1]), float(mp.diff(lambda t: ref(t, P), N)), rtol=1e-9
        )


# ---- stats: traces of quantiles past the ends ----------------------------------------------------


@pytest.mark.parametrize("name", ["norm", "gamma", "halfnorm", "cauchy", "truncnorm"])
def test_quantile_trace_replayed_past_the_ends(name):
    """A trace recorded inside (0, 1) replayed at 0, 1, outside and at 1e-300: a guard
    refuses, or the replay gives what a fresh call gives."""
    shapes = {"gamma": (2.0,), "truncnorm": (-1.0, 1.5)}.get(name, ())
    f = lambda q: getattr(ts, name).isf(q, *shapes).sum()  # noqa: E731
    tr = tg.trace(f, np.array([0.3, 0.9, 0.01]))
    for q in ([0.0, 1.0, 0.5], [-0.1, 0.5, 1.2], [1e-300, 0.2, 1 - 1e-16]):
        q = np.array(q)
        try:
            v, g = tr(q), tr.grad(q)
        except tg.RetraceRequired:
            continue
        np.testing.assert_allclose(v, float(f(tg.tensor(q))), rtol=1e-13)
        np.testing.assert_allclose(g, tg.grad(f)(q), rtol=1e-12)


# ---- F.pad on a batch of 0 -----------------------------------------------------------------------

PAD_EMPTY = [
    ("constant", (0, 2, 3, 4)),
    ("constant", (2, 0, 3, 4)),
    ("constant", (1, 2, 0, 4)),
    ("reflect", (0, 2, 3, 4)),
    ("replicate", (0, 2, 3, 4)),
    ("circular", (0, 2, 3, 4)),
    ("circular", (2, 0, 3, 4)),
    ("reflect", (0, 3, 5)),
]


@pytest.mark.parametrize(("mode", "shape"), PAD_EMPTY)
def test_pad_of_an_empty_batch(mode, shape):
    """F.pad(zeros(0, 2, 3, 4), (1, 1, 1, 1)) raised a bare ZeroDivisionError (constant) or
    refused an unpadded empty dim (the other modes); PyTorch pads."""
    amounts = (1, 1, 2, 0) if len(shape) == 4 else (2, 1)
    _compare(lambda L: L.F.pad(L.T(np.zeros(shape)), amounts, mode=mode))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_refuses_to_repeat_an_empty_dim(mode):
    with pytest.raises(ValueError, match=f"pad: mode='{mode}' cannot pad a dim of size 0"):
        tgF.pad(tg.zeros(1, 2, 0, 4), (1, 1, 1, 1), mode=mode)


def test_pad_constant_fills_an_empty_dim():
    x = tg.tensor(np.zeros((1, 2, 0, 3)), requires_grad=True)
    y = tgF.pad(x, (1, 0, 2, 1), value=4.0)
    assert y.shape == (1, 2, 3, 4)
    np.testing.assert_array_equal(y.detach().numpy(), 4.0)
    (g,) = tg.autograd.grad(y.sum(), [x])
    assert g.shape == (1, 2, 0, 3)


# ---- max pools: several NaNs in a window (PyTorch's CPU kernels pick the last NaN) ---------------

NAN2 = np.array([[[[np.nan, 1.0], [2.0, np.nan]]]])


@pytest.mark.parametrize("fn", ["max_pool2d", "adaptive_max_pool2d"])
def test_max_pool_index_of_several_nans(fn):
    def prog(L):
        x = L.T(NAN2)
        arg = (2,) if fn == "max_pool2d" else (1,)
        y, i = getattr(L.F, fn)(x, *arg, return_indices=True)
        return y, i

    _compare(prog)


# ---- nn: the new layers to second order, against torch -------------------------------------------

R = _rng(1)
X4 = R.standard_normal((2, 4, 3, 5))
X3 = R.standard_normal((2, 4, 5))
X5 = R.standard_normal((1, 2, 3, 2, 3))
WT2 = R.standard_normal((4, 2, 2, 3))
WT1 = R.standard_normal((4, 3, 3))
WT3 = R.standard_normal((2, 2, 2, 1, 2))


def _second(prog_out, leaves, L):
    """(out, grads of a fixed weighting, grad of the squared grads) for _compare."""
    w = _rng(99).standard_normal(tuple(prog_out.shape))
    s = (prog_out * L.T(w, rg=False)).sum()
    gs = L.m.autograd.grad(s, leaves, create_graph=True)
    tot = sum((g * g).sum() for g in gs)
    return prog_out, gs, L.m.autograd.grad(tot, leaves, retain_graph=True)


W44 = R.standard_normal((4, 4)) + 1.0
W35 = R.standard_normal((3, 5)) + 1.0
XT = X4.transpose(0, 1, 3, 2).copy()  # transposed back inside: a non-contiguous input

# name: (program of x and w, x, w or None)
LAYERS = {
    "conv_transpose2d-groups-dil-outpad-transposed-input": (
        lambda L, x, w: L.F.conv_transpose2d(
            x.transpose(2, 3),
            w,
            stride=(2, 1),
            padding=(0, 1),
            output_padding=(1, 0),
            groups=2,
            dilation=(1, 2),
        ),
        XT,
        WT2,
    ),
    "conv_transpose1d-stride-dil": (
        lambda L, x, w: L.F.conv_transpose1d(
            x, w, stride=2, padding=1, output_padding=1, dilation=2
        ),
        X3,
        WT1,
    ),
    "conv_transpose3d": (
        lambda L, x, w: L.F.conv_transpose3d(
            x, w, stride=(1, 2, 2), padding=(1, 0, 1), output_padding=(0, 1, 1)
        ),
        X5,
        WT3,
    ),
    "interpolate-bilinear-align": (
        lambda L, x, w: L.F.interpolate(x, size=(7, 2), mode="bilinear", align_corners=True) ** 2,
        X4,
        None,
    ),
    "interpolate-linear-scale": (
        lambda L, x, w: L.F.interpolate(x, scale_factor=1.7, mode="linear") ** 2,
        X3,
        None,
    ),
    "instance_norm-affine": (
        lambda L, x, w: L.F.instance_norm(x, weight=w[0], bias=w[1]),
        X4,
        W44,
    ),
    "rms_norm": (lambda L, x, w: L.F.rms_norm(x, (3, 5), weight=w), X4, W35),
    "lp_pool2d-p3": (lambda L, x, w: L.F.lp_pool2d(x * x + 0.1, 3.0, 2), X4, None),
    "adaptive_max_pool2d": (lambda L, x, w: L.F.adaptive_max_pool2d(x, (2, 4)) ** 2, X4, None),
    "max_pool3d-ceil": (
        lambda L, x, w: L.F.max_pool3d(x, (2, 2, 1), ceil_mode=True, padding=(1, 0, 0)) ** 2,
        X5,
        None,
    ),
    "fold-of-unfold": (
        lambda L, x, w: L.F.fold(
            L.F.unfold(x, (2, 3), padding=1, stride=(1, 2)) ** 2,
            (3, 5),
            (2, 3),
            padding=1,
            stride=(1, 2),
        ),
        X4,
        None,
    ),
    "pad-reflect-crop": (
        lambda L, x, w: L.F.pad(x, (2, 1, -1, 2), mode="reflect") ** 2,
        X4,
        None,
    ),
    "prelu": (lambda L, x, w: L.F.prelu(x, w[0]) ** 2, X4, W44),
    "softshrink": (lambda L, x, w: L.F.softshrink(x, 0.4) ** 2, X4, None),
    "sdpa-float-mask-scale": (
        lambda L, x, w: L.F.scaled_dot_product_attention(
            x,
            x * 0.5,
            x[..., :4],
            scale=0.3,
            attn_mask=L.T(np.triu(np.full((3, 3), -np.inf), 1), rg=False),
        ),
        X4,
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_to_second_order(name):
    """Values, first derivatives (create_graph) and the derivative of their squares."""
    fn, x, w = LAYERS[name]

    def prog(L):
        xt = L.T(x)
        wt = None if w is None else L.T(w)
        return _second(fn(L, xt, wt), [xt] if w is None else [xt, wt], L)

    _compare(prog, rtol=1e-9, atol=1e-10)


def test_instance_norm_forward_over_forward():
    """jvp of jvp against central differences of the jvp (PyTorch's own forward-over-forward
    of instance_norm is off by 0.6 here)."""
    t = _rng(3).standard_normal(X4.shape)

    def first(v):
        return tg.jvp(lambda u: tgF.instance_norm(u), (v,), (t,))[1]

    _, second = tg.jvp(first, (X4,), (t,))
    e = 1e-4
    fd = (np.asarray(first(X4 + e * t)) - np.asarray(first(X4 - e * t))) / (2 * e)
    np.testing.assert_allclose(second, fd, rtol=1e-5, atol=1e-6)


# ---- modules from PyTorch's state dicts ----------------------------------------------------------


def _module_pair(make):
    torch.manual_seed(0)
    pm = make(torch.nn).double()
    tm = make(tnn)
    tm.load_state_dict({k: v.detach().numpy() for k, v in pm.state_dict().items()})
    return tm, pm


MODULES = {
    "mha-kdim-vdim-bias-kv-zero-attn": (
        lambda nn: nn.MultiheadAttention(
            6, 2, kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True
        ),
        lambda m, T, B: m(
            T(R.standard_normal((3, 2, 6))),
            T(R.standard_normal((4, 2, 5))),
            T(R.standard_normal((4, 2, 3))),
            key_padding_mask=B([[False, False, True, False], [True, False, False, False]]),
            average_attn_weights=False,
        ),
    ),
    "encoder-layer-norm-first-gelu-batch-first": (
        lambda nn: nn.TransformerEncoderLayer(
            4, 2, 8, dropout=0.0, activation="gelu", norm_first=True, batch_first=True
        ),
        lambda m, T, B: m(
            T(R.standard_normal((2, 5, 4))), src_mask=B(np.triu(np.ones((5, 5), bool), 1))
        ),
    ),
    "decoder-layer-causal-memory-mask": (
        lambda nn: nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0),
        lambda m, T, B: m(
            T(R.standard_normal((3, 2, 4))),
            T(R.standard_normal((5, 2, 4))),
            tgt_mask=B(np.triu(np.ones((3, 3), bool), 1)),
            tgt_is_causal=True,
            memory_key_padding_mask=B([[False] * 4 + [True], [False] * 5]),
        ),
    ),
    "instance-norm-tracked": (
        lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
        lambda m, T, B: m(T(R.standard_normal((2, 3, 5)))),
    ),
    "bilinear": (
        lambda nn: nn.Bilinear(3, 2, 4),
        lambda m, T, B: m(T(R.standard_normal((5, 3))), T(R.standard_normal((5, 2)))),
    ),
    "conv-transpose2d-groups": (
        lambda nn: nn.ConvTranspose2d(4, 6, (2, 3), stride=2, groups=2, dilation=(2, 1)),
        lambda m, T, B: m(T(R.standard_normal((1, 4, 3, 3)))),
    ),
}


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_loaded_from_torch(name, train):
    """Values, input and parameter gradients (and running statistics) of a tapegrad module
    given PyTorch's state dict, in eval and in train mode."""
    make, call = MODULES[name]
    tm, pm = _module_pair(make)
    outs = []
    for lib, m in (("tg", tm), ("torch", pm)):
        m.train(train)
        gen = np.random.default_rng(5)
        leaves = []

        def T(a, lib=lib, leaves=leaves, gen=gen):
            a = gen.standard_normal(np.shape(a))
            t = (
                tg.tensor(a, requires_grad=True)
                if lib == "tg"
                else torch.tensor(a, requires_grad=True)
            )
            leaves.append(t)
            return t

        def B(a, lib=lib):
            return (tg if lib == "tg" else torch).tensor(np.array(a, dtype=bool))

        ys = call(m, T, B)
        ys = ys if isinstance(ys, tuple) else (ys,)  # (MultiheadAttention: and its weights)
        s = 0.0
        for k, y in enumerate(ys):
            w = np.random.default_rng(6 + k).standard_normal(tuple(y.shape))
            s = s + (y * (tg if lib == "tg" else torch).tensor(w)).sum()
        ps = list(m.parameters())
        gs = (tg if lib == "tg" else torch).autograd.grad(s, leaves + ps)
        state = {
            k: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v, dtype=float)
            for k, v in m.state_dict().items()
        }
        outs.append(([y.detach().numpy() for y in ys], [g.detach().numpy() for g in gs], state))
    (yg, gg, sg), (yt, gt, st_) = outs
    for a, b in zip(yg, yt, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    for a, b in zip(gg, gt, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    for k in st_:
        np.testing.assert_allclose(sg[k], st_[k], rtol=1e-12, atol=1e-14, err_msg=k)


# ---- traces replayed at another argmax or kink ---------------------------------------------------

TRACED = {
    "max_unpool-of-max_pool": lambda x: (
        tgF.max_unpool2d(*tgF.max_pool2d(x, 2, return_indices=True), 2)
        * tg.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    ).sum(),
    "adaptive_max_pool2d": lambda x: (tgF.adaptive_max_pool2d(x, 3) ** 2).sum(),
    "hardshrink": lambda x: tgF.hardshrink(x, 0.5).sum(),
    "threshold": lambda x: (tgF.threshold(x, 0.1, -3.0) ** 2).sum(),
    "prelu": lambda x: (tgF.prelu(x, tg.tensor([0.2])) ** 2).sum(),
    "multi_margin": lambda x: tgF.multi_margin_loss(x.reshape(4, 4), tg.tensor([0, 1, 2, 3])),
    "triplet-swap": lambda x: tgF.triplet_margin_loss(
        x.reshape(4, 4)[:2], x.reshape(4, 4)[2:], tg.zeros(2, 4), swap=True
    ),
    "hinge_embedding": lambda x: tgF.hinge_embedding_loss(
        x.reshape(16), tg.tensor(np.where(np.arange(16) % 3, 1.0, -1.0)), margin=0.5
    ),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_trace_replayed_at_other_branches(name):
    f = TRACED[name]
    x0, x1 = _rng(11).standard_normal((2, 1, 1, 4, 4))
    tr = tg.trace(f, x0)
    try:
        v, g = tr(x1), tr.grad(x1)
    except tg.RetraceRequired:
        return
    np.testing.assert_allclose(v, float(f(tg.tensor(x1))), rtol=1e-13)
    np.testing.assert_allclose(g, tg.grad(f)(x1), rtol=1e-12, atol=1e-15)


# ---- optimizers and schedulers with a group added mid-run ----------------------------------------

A = _rng(20).standard_normal((3, 3))
B_ = _rng(21).standard_normal(3)


def _loss(M, p):
    return ((M.tensor(A) @ p - M.tensor(B_)) ** 2).sum() + 0.1 * (p**4).sum()


OPT_SCHED = [
    (
        "Adamax",
        dict(lr=0.1, weight_decay=0.1, maximize=True),
        "LinearLR",
        dict(start_factor=0.5, total_iters=5),
    ),
    (
        "NAdam",
        dict(lr=0.1, decoupled_weight_decay=True, weight_decay=0.1),
        "PolynomialLR",
        dict(total_iters=6, power=2.0),
    ),
    ("RAdam", dict(lr=0.1), "ConstantLR", dict(factor=0.5, total_iters=4)),
    ("Adadelta", dict(lr=0.5, rho=0.5), "ExponentialLR", dict(gamma=0.9)),
    ("ASGD", dict(lr=0.05, t0=2, lambd=0.1), "StepLR", dict(step_size=2)),
]


@pytest.mark.parametrize(("opt", "okw", "sched", "skw"), OPT_SCHED, ids=[o[0] for o in OPT_SCHED])
def test_optimizer_scheduler_group_added_midway(opt, okw, sched, skw):
    """A parameter group added after the scheduler is made, a closure, then the optimizer's
    state dict moved from PyTorch into tapegrad: parameters and lrs step by step as PyTorch
    (whose scalar state, step and mu_product, is float64 only under that default dtype)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        _group_added_midway(opt, okw, sched, skw)
    finally:
        torch.set_default_dtype(default)


def _group_added_midway(opt, okw, sched, skw):
    res = {}
    for lib, M in (("tg", tg), ("torch", torch)):
        p = M.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
        q = M.tensor(np.array([1.0, 0.3, -0.7]), requires_grad=True)
        o = getattr(M.optim, opt)([p], **okw)
        s = getattr(M.optim.lr_scheduler, sched)(o, **skw)
        lrs = []
        for i in range(7):
            if i == 3:
                o.add_param_group({"params": [q], "lr": 0.05})

            def closure(o=o, M=M, p=p, q=q):
                o.zero_grad()
                loss = _loss(M, p) + _loss(M, q)
                loss.backward()
                return loss

            o.step(closure)
            s.step()
            lrs.append([float(g["lr"]) for g in o.param_groups])
        res[lib] = (p.detach().numpy().copy(), q.detach().numpy().copy(), lrs, o)
    (pg, qg, lg, _), (pt, qt, lt, ot) = res["tg"], res["torch"]
    np.testing.assert_allclose(pg, pt, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(qg, qt, rtol=1e-12, atol=1e-14)
    for a, b in zip(lg, lt, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    # PyTorch's state dict (tensors as arrays) loaded into tapegrad: both go on alike
    p = tg.tensor(pt.copy(), requires_grad=True)
    q = tg.tensor(qt.copy(), requires_grad=True)
    o = getattr(tg.optim, opt)([p], **okw)
    o.add_param_group({"params": [q], "lr": 0.05})

    def conv(v):
        if isinstance(v, torch.Tensor):
            return v.numpy().copy() if v.ndim else v.item()
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    o.load_state_dict(conv(ot.state_dict()))
    tp = [t for g in ot.param_groups for t in g["params"]]
    for _ in range(2):
        o.zero_grad()
        (_loss(tg, p) + _loss(tg, q)).backward()
        o.step()
        ot.zero_grad()
        (_loss(torch, tp[0]) + _loss(torch, tp[1])).backward()
        ot.step()
    np.testing.assert_allclose(p.detach().numpy(), tp[0].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(q.detach().numpy(), tp[1].detach().numpy(), rtol=1e-12)


def _arrays(v):
    """A PyTorch state dict with its tensors as NumPy arrays (0-d ones as numbers)."""
    if isinstance(v, torch.Tensor):
        return v.numpy().copy() if v.ndim else v.item()
    if isinstance(v, dict):
        return {k: _arrays(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_arrays(x) for x in v]
    return v


SCHED_STATES = [
    ("SGD", "OneCycleLR", dict(max_lr=0.2, total_steps=12)),
    ("Adam", "OneCycleLR", dict(max_lr=0.3, total_steps=12, three_phase=True)),
    ("NAdam", "CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range")),
    ("SGD", "CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
    ("SGD", "PolynomialLR", dict(total_iters=6)),
]


@pytest.fixture
def _float64_torch():
    """PyTorch's optimizers keep step and mu_product in the default dtype: float64 here."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


@pytest.mark.usefixtures("_float64_torch")
@pytest.mark.parametrize(("opt", "sched", "skw"), SCHED_STATES, ids=[s[1] for s in SCHED_STATES])
def test_scheduler_state_dict_from_torch(opt, sched, skw):
    """PyTorch's optimizer and scheduler state dicts after 4 steps, loaded into tapegrad's:
    the next steps' lrs, momenta / betas and parameters as PyTorch's (OneCycleLR's phases,
    dicts in PyTorch's state, failed with a bare TypeError at the next step)."""
    kw = dict(lr=0.1, momentum=0.9) if opt == "SGD" else dict(lr=0.1)
    p = torch.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    o = getattr(torch.optim, opt)([p], **kw)
    s = getattr(torch.optim.lr_scheduler, sched)(o, **skw)
    for _ in range(4):
        o.zero_grad()
        _loss(torch, p).backward()
        o.step()
        s.step()
    q = tg.tensor(p.detach().numpy().copy(), requires_grad=True)
    to = getattr(tg.optim, opt)([q], **kw)
    ts_ = getattr(tg.optim.lr_scheduler, sched)(to, **skw)
    to.load_state_dict(_arrays(o.state_dict()))
    ts_.load_state_dict(_arrays(s.state_dict()))
    key = "momentum" if opt == "SGD" else "betas"
    for _ in range(5):
        for M, oo, ss, x in ((torch, o, s, p), (tg, to, ts_, q)):
            oo.zero_grad()
            _loss(M, x).backward()
            oo.step()
            ss.step()
        np.testing.assert_allclose(ts_.get_last_lr(), s.get_last_lr(), rtol=1e-13)
        np.testing.assert_allclose(
            np.ravel(to.param_groups[0][key]), np.ravel(o.param_groups[0][key]), rtol=1e-13
        )
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-12)
