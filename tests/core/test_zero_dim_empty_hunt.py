"""0-d and empty tensors given ``dim`` arguments, side by side with PyTorch.

Hunted: every Tensor method and ``tg.`` / ``tg.nn.functional`` function that takes a dim
(reductions sum / mean / prod / amax / amin / logsumexp / std / var / nansum / nanmean / norm /
all / any / count_nonzero / aminmax / std_mean / var_mean, max / min / argmax / argmin /
median / nanmedian / mode / kthvalue / topk / sort / argsort / quantile, the softmax family,
the scans cumsum / cumprod / logcumsumexp / cummax / cummin, and the shape ops squeeze /
unsqueeze / flatten / flip / roll / movedim / transpose / swapdims / select / narrow / unbind
/ chunk / split / tensor_split / diff / index_select / gather / take_along_dim ...), called
- on 0-d tensors with dim 0, -1, a one-dim tuple, keepdim True / False (PyTorch reads a 0-d
  tensor as having one dim, 0 or -1, of one element);
- on empty tensors, shapes (0,), (2, 0), (0, 3), over the empty and the non-empty dim;
- with out-of-range dims, which must raise IndexError naming the op, the dim and the shape;
against PyTorch (float64, ``tests/torch_programs.py``'s ``_compare``: values, shapes, dtype
kinds, structure, requires_grad and the gradient of a random weighting of every float output;
the exact dtypes are compared too), second derivatives (``create_graph``) against
``torch.autograd.grad`` and ``tg.gradcheck`` / ``tg.gradgradcheck`` (finite differences).

Findings kept (fixed unless marked): on a 0-d tensor ``x.mean(0)`` / ``x.std(0)`` /
``x.var(0)`` raised a bare IndexError and ``dim=-1`` a ValueError for sum / mean / prod /
amax / amin / logsumexp / std / var / nansum / nanmean / norm / aminmax; ``x.logsumexp(0)``,
tuple dims of all / any / nanmean and ``tg.softmax(x, 0)`` NumPy's AxisError; ``flip`` /
``movedim`` / ``swapdims`` / ``repeat_interleave`` / ``narrow`` / ``chunk`` / ``split`` /
``index_select`` / ``unbind`` / ``take_along_dim`` a ZeroDivisionError or "tuple index out of
range"; ``swapdims`` / ``swapaxes`` with an out-of-range dim "list index out of range";
``x.logcumsumexp(0)``, ``tg.cumsum(x, dim=0)`` and ``x.quantile(q, 0, keepdim=True)``
returned shape (1,) where PyTorch returns () (silent wrong shapes); median / nanmedian /
kthvalue / topk / sort / argsort / cummax / cummin / aminmax / flatten / transpose /
diag_embed of a 0-d tensor took any dim (1, 2, -2) silently; ``repeat_interleave`` took an
out-of-range dim silently; ``chunk`` of an empty dim returned no chunk (PyTorch: ``chunks``
empty ones); out-of-range dims raised ValueError where PyTorch raises IndexError; a max-like
reduction over an empty dim a ValueError (PyTorch: IndexError); ``tg.cumsum(x, 0)`` /
``tg.cumprod(x, 0)`` with a positional dim on a 0-d tensor NumPy's shape (1,) (``np.cumsum``
on a traced value keeps it, as NumPy's), and of an integer tensor float64, rounded beyond
2**53 (PyTorch: exact int64), ``dtype=`` a TypeError; ``F.normalize`` /
``F.cosine_similarity`` / ``tg.stack`` / ``tg.cat`` with an out-of-range dim a ValueError;
``tg.all`` / ``tg.any`` missing; ``x.median()`` of an empty tensor raised (PyTorch: NaN);
``x[:0].argmax()`` inside NumPy code an IndexError where NumPy raises ValueError (now an
error that is both).

Deliberate differences (asserted in ``test_stricter_than_torch``): PyTorch skips the dim check
of ``roll`` / ``cummax`` / ``cummin`` on an empty tensor (any dim, even 5, returns it);
tapegrad checks the dim always.  Out-of-range dims raise NumPy's AxisError, an IndexError as
PyTorch's and a ValueError as NumPy's.
"""

import inspect
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_programs import _compare, _raises, _run  # noqa: E402

import tapegrad as tg  # noqa: E402

X0 = -1.3  # the 0-d value
E = {  # the empty shapes
    "e0": np.zeros((0,)),
    "e20": np.zeros((2, 0)),
    "e03": np.zeros((0, 3)),
}
V3 = np.array([0.5, -1.25, 2.0])


def _dtypes(prog):
    """The exact dtype of every integer and bool tensor of the result (tapegrad's floats are
    float64, PyTorch's default float32 where an integer input is promoted), tapegrad's and
    torch's."""
    out = {}
    for name in ("tg", "torch"):
        items, _, _ = _run(prog, name)
        dtypes = [str(it.dtype).replace("torch.", "") for _, it in items if hasattr(it, "dtype")]
        out[name] = ["float" if d.startswith("float") else d for d in dtypes]
    return out["tg"], out["torch"]


# ---- 0-d tensors with dim 0 / -1 / (0,), keepdim ---------------------------------------------

ZERO_D = {}


def _zero_d(name, f, dims=(0, -1)):
    for d in dims:
        ZERO_D[f"{name}[{d}]"] = lambda L, f=f, d=d: f(L.T(X0), d, L)


for _m in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "std", "var", "nansum", "nanmean"):
    _zero_d(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
    _zero_d(f"{_m}-keep", lambda x, d, L, m=_m: getattr(x, m)(d, keepdim=True), (0,))
    if _m != "prod":  # (PyTorch's prod takes one dim)
        _t = lambda x, d, L, m=_m: getattr(x, m)(dim=(d,), keepdim=True)  # noqa: E731
        _zero_d(f"{_m}-tuple", _t, (-1,))
for _m in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "std", "var", "nansum"):
    _zero_d(f"tg.{_m}", lambda x, d, L, m=_m: getattr(L.m, m)(x, d), (-1,) if _m < "p" else (0,))
_zero_d("tg.sum-kw", lambda x, d, L: L.m.sum(x, dim=d, keepdim=True))
_zero_d("std-c0", lambda x, d, L: x.std(d, correction=0))
_zero_d("var-c0-keep", lambda x, d, L: x.var((d,), correction=0, keepdim=True))
_zero_d("std_mean", lambda x, d, L: L.m.std_mean(x, d, correction=0))
_zero_d("var_mean", lambda x, d, L: L.m.var_mean(x, (d,), keepdim=True))
for _m in ("all", "any", "count_nonzero"):
    _zero_d(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
    _zero_d(f"{_m}-tuple", lambda x, d, L, m=_m: getattr(x, m)((d,)), (-1,))
_zero_d("all-keep", lambda x, d, L: x.all(d, keepdim=True))
_zero_d("norm", lambda x, d, L: x.norm(dim=d))
_zero_d("norm-1-keep", lambda x, d, L: x.norm(1, d, keepdim=True))
_zero_d("norm-inf", lambda x, d, L: x.norm(float("inf"), dim=d))
_zero_d("aminmax", lambda x, d, L: x.aminmax(dim=d))
_zero_d("aminmax-keep", lambda x, d, L: x.aminmax(dim=d, keepdim=True))
for _m in ("max", "min", "median", "nanmedian", "mode", "argmax", "argmin"):
    _zero_d(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
    _zero_d(f"{_m}-keep", lambda x, d, L, m=_m: getattr(x, m)(d, keepdim=True), (-1,))
_zero_d("kthvalue", lambda x, d, L: x.kthvalue(1, d, True))
_zero_d("topk", lambda x, d, L: x.topk(1, d))
_zero_d("topk-0", lambda x, d, L: x.topk(0, d))
_zero_d("sort", lambda x, d, L: x.sort(d, descending=True))
_zero_d("argsort", lambda x, d, L: x.argsort(d))
_zero_d("quantile-keep", lambda x, d, L: x.quantile(0.3, d, keepdim=True))
_zero_d("nanquantile-keep", lambda x, d, L: x.nanquantile(0.3, d, keepdim=True))
_zero_d("quantile-vector", lambda x, d, L: x.quantile(L.T([0.25, 0.5], rg=False), d))
for _m in ("softmax", "log_softmax"):
    _zero_d(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
    _zero_d(f"F.{_m}", lambda x, d, L, m=_m: getattr(L.F, m)(x, dim=d))
    _zero_d(f"tg.{_m}", lambda x, d, L, m=_m: getattr(L.m, m)(x, d), (0,))
    _zero_d(f"tg.{_m}-kw", lambda x, d, L, m=_m: getattr(L.m, m)(x, dim=d), (-1,))
_zero_d("F.softmin", lambda x, d, L: L.F.softmin(x, d))
for _m in ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"):
    _zero_d(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
    _zero_d(f"tg.{_m}-kw", lambda x, d, L, m=_m: getattr(L.m, m)(x, dim=d), (0,))
_zero_d("tg.logcumsumexp", lambda x, d, L: L.m.logcumsumexp(x, d))
_zero_d("cumsum-int", lambda x, d, L: L.I(3).cumsum(d))
_zero_d("sum-int-keep", lambda x, d, L: L.I(3).sum(d, keepdim=True))
_zero_d("prod-bool", lambda x, d, L: L.B(True).prod(d))
_zero_d("amax-int", lambda x, d, L: L.I(-4).amax(d))
_zero_d("max-bool", lambda x, d, L: L.B(False).max(d))
_zero_d("logsumexp-int", lambda x, d, L: L.I(2).logsumexp(d))
_zero_d("squeeze", lambda x, d, L: x.squeeze(d))
_zero_d("tg.squeeze", lambda x, d, L: L.m.squeeze(x, d))
_zero_d("unsqueeze", lambda x, d, L: x.unsqueeze(d))
_zero_d("tg.unsqueeze-kw", lambda x, d, L: L.m.unsqueeze(x, dim=d))
_zero_d("flatten", lambda x, d, L: x.flatten(d))
_zero_d("flatten-range", lambda x, d, L: x.flatten(0, d))
_zero_d("flip", lambda x, d, L: x.flip(d))
_zero_d("flip-tuple", lambda x, d, L: x.flip((d,)))
_zero_d("movedim", lambda x, d, L: x.movedim(d, 0))
_zero_d("transpose", lambda x, d, L: x.transpose(d, 0))
_zero_d("swapdims", lambda x, d, L: x.swapdims(d, -1))
_zero_d("index_select", lambda x, d, L: x.index_select(d, L.I([0])))
_zero_d("index_select-0d-index", lambda x, d, L: x.index_select(d, L.I(0)))
_zero_d("gather", lambda x, d, L: x.gather(d, L.I(0)))
_zero_d("take_along_dim", lambda x, d, L: x.take_along_dim(L.I(0)))
_zero_d("scatter_add", lambda x, d, L: x.scatter_add(d, L.I(0), x * 2))


# the programs with integer or bool results, whose exact dtypes are compared too
_INTS = ("arg", "max", "min", "median", "mode", "kthvalue", "topk", "sort", "count", "all")
_INTS += ("any", "int", "bool")


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_zero_d_with_dim_matches_torch(name):
    _compare(ZERO_D[name])
    if any(k in name for k in _INTS):
        got, want = _dtypes(ZERO_D[name])
        assert got == want


# ---- empty tensors, over the empty and the non-empty dim -------------------------------------

EMPTY = {}


def _empty(name, f, cases=(("e0", -1), ("e20", 0), ("e03", 0))):
    for key, d in cases:
        EMPTY[f"{name}[{key},{d}]"] = lambda L, f=f, key=key, d=d: f(L.T(E[key]), d, L)


NONEMPTY = (("e20", 0), ("e03", 1))  # reductions without identity: the non-empty dim only
for _m in ("sum", "mean", "prod", "logsumexp", "nansum", "nanmean", "all", "any"):
    _empty(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
_empty("sum-keep-tuple", lambda x, d, L: x.sum((d,), keepdim=True))
_empty("std", lambda x, d, L: x.std(d))
_empty("var-c0-keep", lambda x, d, L: x.var(d, correction=0, keepdim=True))
_empty("count_nonzero", lambda x, d, L: x.count_nonzero(d))
_empty("norm", lambda x, d, L: x.norm(dim=d))
_empty("norm-1", lambda x, d, L: x.norm(1, dim=d, keepdim=True))
_empty("std_mean", lambda x, d, L: L.m.std_mean(x, d))
for _m in ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"):
    _empty(_m, lambda x, d, L, m=_m: getattr(x, m)(d))
_empty("F.softmax", lambda x, d, L: L.F.softmax(x, dim=d))
_empty("sort", lambda x, d, L: x.sort(d))
_empty("argsort", lambda x, d, L: x.argsort(d, descending=True))
_empty("flip", lambda x, d, L: x.flip(d))
_empty("roll", lambda x, d, L: x.roll(1, d))
_empty("unbind", lambda x, d, L: x.unbind(d))
_empty("chunk", lambda x, d, L: x.chunk(2, d))
_empty("split", lambda x, d, L: x.split(1, d))
_empty("tensor_split", lambda x, d, L: x.tensor_split(2, d))
_empty("narrow", lambda x, d, L: x.narrow(d, 0, 0))
_empty("diff", lambda x, d, L: x.diff(dim=d))
_empty("squeeze", lambda x, d, L: x.squeeze(d))
_empty("unsqueeze", lambda x, d, L: x.unsqueeze(d))
_empty("flatten", lambda x, d, L: x.flatten(d))
_empty("movedim", lambda x, d, L: x.movedim(d, -1))
_empty("index_select", lambda x, d, L: x.index_select(d, L.I(np.zeros(0, dtype=np.int64))))
for _m in ("amax", "amin", "max", "min", "argmax", "argmin", "median", "nanmedian", "mode"):
    _empty(_m, lambda x, d, L, m=_m: getattr(x, m)(d), NONEMPTY)
_empty("aminmax", lambda x, d, L: x.aminmax(dim=d), NONEMPTY)
_empty("kthvalue", lambda x, d, L: x.kthvalue(1, d), NONEMPTY)
_empty("topk", lambda x, d, L: x.topk(1, d), NONEMPTY)
_empty("topk-0", lambda x, d, L: x.topk(0, d))
_empty("sum-int", lambda x, d, L: L.I(np.zeros(x.shape, dtype=np.int64)).sum(d))
_empty("prod-bool", lambda x, d, L: L.B(np.zeros(x.shape, dtype=bool)).prod(d))
_empty("cumsum-bool", lambda x, d, L: L.B(np.zeros(x.shape, dtype=bool)).cumsum(d))
# PyTorch's all / any over no dims keep every element (sum / mean ... reduce over all)
_empty("all-no-dims", lambda x, d, L: x.all(()), (("e20", 0),))
EMPTY["any-no-dims[v3]"] = lambda L: L.T(V3).any([])
EMPTY["all-no-dims-keep[v3]"] = lambda L: (L.T(V3) - 0.5).all((), keepdim=True)
EMPTY["sum-no-dims[v3]"] = lambda L: L.T(V3).sum(())
EMPTY["count_nonzero-no-dims[v3]"] = lambda L: L.T(V3).count_nonzero(())


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_with_dim_matches_torch(name):
    _compare(EMPTY[name])
    if any(k in name for k in _INTS):
        got, want = _dtypes(EMPTY[name])
        assert got == want


def test_chunk_of_an_empty_dim_gives_chunks_empty_views():
    x = tg.zeros(2, 0)
    assert [c.shape for c in x.chunk(3, 1)] == [(2, 0)] * 3
    assert [c.shape for c in tg.zeros(0).chunk(1)] == [(0,)]


# ---- errors: out-of-range dims, 0-d tensors where PyTorch wants a dim, empty dims ------------

RAISES = {}  # name -> (program, the tapegrad exception type, fragments of its message)


def _bad_dim(name, f, shape, d, fragment=None):
    data = X0 if shape == () else np.zeros(shape)
    shown = (d + 1 if d > 0 else d - 1) if name == "unsqueeze" else d
    RAISES[f"{name}[{shape},{d}]"] = (
        lambda L: f(L.T(data), d, L),
        IndexError,
        (fragment or name, str(shown), str(shape)),
    )


for _shape, _d in (((), 1), ((3,), -2), ((0, 3), 2)):
    for _m in ("sum", "mean", "prod", "amax", "logsumexp", "std", "var", "nansum", "nanmean"):
        _bad_dim(_m, lambda x, d, L, m=_m: getattr(x, m)(d), _shape, _d)
    for _m in ("all", "any", "count_nonzero", "argmax", "max", "sort", "argsort", "median"):
        _bad_dim(_m, lambda x, d, L, m=_m: getattr(x, m)(d), _shape, _d)
    for _m in ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "squeeze"):
        _bad_dim(_m, lambda x, d, L, m=_m: getattr(x, m)(d), _shape, _d)
    _bad_dim("norm", lambda x, d, L: x.norm(dim=d), _shape, _d)
    _bad_dim("aminmax", lambda x, d, L: x.aminmax(dim=d), _shape, _d)
    _bad_dim("flatten", lambda x, d, L: x.flatten(d), _shape, _d)
    _bad_dim("unsqueeze", lambda x, d, L: x.unsqueeze(d + 1 if d > 0 else d - 1), _shape, _d)
    _bad_dim("tg.sum", lambda x, d, L: L.m.sum(x, dim=d), _shape, _d, "sum")
    _bad_dim("tg.softmax", lambda x, d, L: L.m.softmax(x, d), _shape, _d, "softmax")
    _bad_dim("tg.logsumexp", lambda x, d, L: L.m.logsumexp(x, d), _shape, _d, "logsumexp")
    _bad_dim("tg.cumsum", lambda x, d, L: L.m.cumsum(x, dim=d), _shape, _d, "cumsum")
for _shape, _d in (((), -2), ((2, 3), 2)):
    for _m in ("nanmedian", "cummax", "cummin", "mode"):
        _bad_dim(_m, lambda x, d, L, m=_m: getattr(x, m)(d), _shape, _d)
    _bad_dim("kthvalue", lambda x, d, L: x.kthvalue(1, d), _shape, _d)
    _bad_dim("topk", lambda x, d, L: x.topk(1, d), _shape, _d)
    _bad_dim("quantile", lambda x, d, L: x.quantile(0.5, d, keepdim=True), _shape, _d)
    _bad_dim("flip", lambda x, d, L: x.flip((d,)), _shape, _d)
    _bad_dim("movedim", lambda x, d, L: x.movedim(d, 0), _shape, _d)
    _bad_dim("transpose", lambda x, d, L: x.transpose(d, 0), _shape, _d)
    _bad_dim("swapdims", lambda x, d, L: x.swapdims(0, d), _shape, _d, "swap")
    _bad_dim("repeat_interleave", lambda x, d, L: x.repeat_interleave(2, d), _shape, _d)
    _bad_dim("index_select", lambda x, d, L: x.index_select(d, L.I([0])), _shape, _d)
for _shape, _d in (((3,), 1), ((2, 3), -3)):
    for _m in ("select", "unbind", "narrow", "chunk", "split", "diff", "roll"):
        _f = {
            "select": lambda x, d, L: x.select(d, 0),
            "unbind": lambda x, d, L: x.unbind(d),
            "narrow": lambda x, d, L: x.narrow(d, 0, 0),
            "chunk": lambda x, d, L: x.chunk(2, d),
            "split": lambda x, d, L: x.split(1, d),
            "diff": lambda x, d, L: x.diff(dim=d),
            "roll": lambda x, d, L: x.roll(1, d),
        }[_m]
        _bad_dim(_m, _f, _shape, _d)


def _refused(name, f, error, *fragments):
    RAISES[name] = (f, error, (name.split("[")[0].removeprefix("tg."), *fragments))


# a 0-d tensor where PyTorch wants a dim to work along
_refused("select[0d]", lambda L: L.T(X0).select(0, 0), IndexError, "0-d")
_refused("unbind[0d]", lambda L: L.T(X0).unbind(0), IndexError, "0-d")
_refused("roll[0d]", lambda L: L.T(X0).roll(1, 0), IndexError, "0-d")
for _m, _f in {
    "narrow": lambda L: L.T(X0).narrow(0, 0, 1),
    "chunk": lambda L: L.T(X0).chunk(1, 0),
    "split": lambda L: L.T(X0).split(1, 0),
    "tensor_split": lambda L: L.T(X0).tensor_split(1, 0),
    "unflatten": lambda L: L.T(X0).unflatten(0, (1,)),
    "split_with_sizes": lambda L: L.T(X0).split_with_sizes([1], 0),
    "diff": lambda L: L.T(X0).diff(dim=0),
}.items():
    _refused(f"{_m}[0d]", _f, RuntimeError, "0-d")
_refused("repeat_interleave[0d]", lambda L: L.T(X0).repeat_interleave(2, 0), IndexError, "0-d")
_refused("diag_embed[0d]", lambda L: L.T(X0).diag_embed(), IndexError, "0-d")
_refused("index_select[0d,2]", lambda L: L.T(X0).index_select(0, L.I([0, 0])), RuntimeError)
_refused("topk[0d,k=2]", lambda L: L.T(X0).topk(2), RuntimeError, "k = 2")
_refused("kthvalue[0d,k=2]", lambda L: L.T(X0).kthvalue(2), RuntimeError, "k = 2")
_refused("sum[0d,(0,-1)]", lambda L: L.T(X0).sum((0, -1)), RuntimeError, "(0, -1)")
_refused("sum[(0,0)]", lambda L: L.T(V3).sum((0, 0)), RuntimeError, "(0, 0)")
_refused("flip[(0,0)]", lambda L: L.T(V3).flip((0, 0)), RuntimeError, "(0, 0)")
_refused("chunk[0]", lambda L: L.T(V3).chunk(0), RuntimeError, "positive")
# reductions without identity over an empty dim: PyTorch's IndexError
for _m in ("amax", "amin", "argmax", "argmin", "max", "min", "median", "mode"):
    _refused(f"{_m}[(0,3),0]", lambda L, m=_m: getattr(L.T(E["e03"]), m)(0), IndexError, "(0, 3)")
_refused("aminmax[(0,3),0]", lambda L: L.T(E["e03"]).aminmax(dim=0), IndexError, "(0, 3)")
_refused("tg.amax[(0,3),0]", lambda L: L.m.amax(L.T(E["e03"]), dim=0), IndexError, "(0, 3)")
_refused("take_along_dim[0d]", lambda L: L.T(X0).take_along_dim(L.I(0), 0), IndexError, "0-d")
_refused("argmax[(0,3)]", lambda L: L.T(E["e03"]).argmax(), IndexError, "(0, 3)", "dim=")


# F.normalize, F.cosine_similarity, tg.stack / tg.cat / tg.all / tg.any: PyTorch's IndexError
for _shape, _d in (((), 1), ((3,), -2), ((2, 3), 2)):
    _bad_dim("normalize", lambda x, d, L: L.F.normalize(x, dim=d), _shape, _d)
    _bad_dim("cosine_similarity", lambda x, d, L: L.F.cosine_similarity(x, x, d), _shape, _d)
    _bad_dim("tg.cos_sim", lambda x, d, L: L.m.cosine_similarity(x, x, dim=d), _shape, _d, "cos")
    _bad_dim("tg.all", lambda x, d, L: L.m.all(x, d), _shape, _d, "all")
    _bad_dim("tg.any", lambda x, d, L: L.m.any(x, dim=d, keepdim=True), _shape, _d, "any")
    _bad_dim("tg.cumsum-pos", lambda x, d, L: L.m.cumsum(x, d), _shape, _d, "cumsum")
    _bad_dim("tg.cumprod-pos", lambda x, d, L: L.m.cumprod(x, d), _shape, _d, "cumprod")
    _bad_dim("tg.cat", lambda x, d, L: L.m.cat([x, x], d), _shape, _d, "cat")
for _shape, _d in (((), 1), ((3,), -3), ((2, 3), 3)):  # (stack adds a dim)
    _bad_dim("tg.stack", lambda x, d, L: L.m.stack([x, x], d), _shape, _d, "stack")
    _bad_dim("tg.stack-kw", lambda x, d, L: L.m.stack([x, x], dim=d), _shape, _d, "stack")
_bad_dim("tg.concatenate", lambda x, d, L: L.m.concatenate([x, x], dim=d), (3,), 1, "cat")


@pytest.mark.parametrize("name", sorted(RAISES))
def test_raises_as_torch_naming_the_op(name):
    prog, error, fragments = RAISES[name]
    assert _raises(prog, "torch") is not None, "torch computes this"
    e = _raises(prog, "tg")
    assert isinstance(e, error), f"tapegrad: {e!r}"
    for fragment in fragments:
        assert fragment in str(e), f"{fragment!r} not in {e}"


def test_stricter_than_torch():
    """PyTorch returns an empty input as it is from roll / cummax / cummin along any dim;
    tapegrad checks the dim first."""
    x = tg.zeros(0)
    for f in (lambda: x.roll(1, 5), lambda: x.cummax(5), lambda: x.cummin(-2)):
        with pytest.raises(IndexError, match="Dimension out of range"):
            f()


# ---- second derivatives at 0-d and empty inputs ----------------------------------------------

SECOND = {
    "sum": lambda x, L: x.sum(0) ** 3,
    "mean-keep": lambda x, L: x.mean(-1, keepdim=True) ** 3,
    "prod": lambda x, L: x.prod(0) ** 2,
    "logsumexp": lambda x, L: x.logsumexp(0) ** 3,
    "tg.logsumexp": lambda x, L: L.m.logsumexp(x, -1) ** 3,
    "var-c0": lambda x, L: (x * x).var(0, correction=0) + x.sum(-1) ** 3,
    "nansum": lambda x, L: x.nansum(-1) ** 3,
    "nanmean": lambda x, L: x.nanmean((0,)) ** 3,
    "amax": lambda x, L: x.amax(-1) ** 3,
    "max": lambda x, L: x.max(0).values ** 3,
    "median": lambda x, L: x.median(-1).values ** 3,
    "norm": lambda x, L: x.norm(dim=0) ** 3,
    "softmax": lambda x, L: (x * x.softmax(0)) ** 3,
    "log_softmax": lambda x, L: (x * L.F.log_softmax(x, dim=-1)) ** 2,
    "cumsum": lambda x, L: x.cumsum(0) ** 3,
    "cumprod": lambda x, L: L.m.cumprod(x, dim=0) ** 3,
    "logcumsumexp": lambda x, L: x.logcumsumexp(-1) ** 3,
    "quantile": lambda x, L: x.quantile(0.5, 0, keepdim=True) ** 3,
    "squeeze-flip": lambda x, L: x.squeeze(0).flip(-1).unsqueeze(-1) ** 3,
}


def _second(name, lib, data):
    rg = {"requires_grad": True}
    x = tg.tensor(data, **rg) if lib == "tg" else torch.tensor(data, dtype=torch.float64, **rg)
    L = type("L", (), {"m": tg if lib == "tg" else torch})()
    L.F = tg.nn.functional if lib == "tg" else torch.nn.functional
    m = L.m
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = SECOND[name](x, L).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), x)
    return tuple(np.asarray(v.detach().numpy(), dtype=float) for v in (y, g, h))


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative_of_zero_d_matches_torch(name):
    for got, want in zip(_second(name, "tg", X0), _second(name, "torch", X0), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sum", "logsumexp", "softmax", "cumsum", "logcumsumexp"])
def test_second_derivative_of_empty_matches_torch(name):
    tg_out, torch_out = _second(name, "tg", E["e03"]), _second(name, "torch", E["e03"])
    for got, want in zip(tg_out, torch_out, strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x.logsumexp(0) * x.std(-1, correction=0),
        lambda x: x.softmax(-1) * x.cumprod(0) + x.logcumsumexp(0),
        lambda x: tg.std_mean(x, (0,), keepdim=True)[1] ** 3 + x.norm(dim=-1),
    ],
)
def test_gradcheck_at_zero_d(f):
    x = tg.tensor(0.7, requires_grad=True)
    assert tg.gradcheck(f, (x,))
    assert tg.gradgradcheck(f, (x,))


# ---- kept ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_tg_scan_of_zero_d_with_a_positional_dim(name):
    _compare(lambda L: getattr(L.m, name)(L.T(X0), 0))


def test_np_cumsum_of_a_traced_zero_d_keeps_numpys_shape():
    """NumPy code keeps NumPy's meaning: ``np.cumsum(x, 0)`` of a 0-d value is of shape (1,),
    as NumPy's, inside a transform; ``tg.cumsum(x, 0)`` outside NumPy code is PyTorch's ()."""
    shapes = []

    def f(x):
        y = np.cumsum(x, 0)
        shapes.append(np.shape(y))
        return (y * y).sum()

    assert tg.grad(f)(np.float64(X0)) == pytest.approx(2 * X0)
    assert shapes == [np.shape(np.cumsum(np.float64(X0), 0))] == [(1,)]
    assert tg.cumsum(tg.tensor(X0), 0).shape == torch.cumsum(torch.tensor(X0), 0).shape == ()


# ---- tg.all / tg.any, PyTorch's functions -------------------------------------------------------

TRUTH = {}
for _m in ("all", "any"):
    for _data, _tag in ((X0, "0d"), ([[0.0, 1.0], [2.0, 3.0]], "2x2"), (E["e03"], "e03")):
        TRUTH[f"{_m}[{_tag}]"] = lambda L, m=_m, a=_data: getattr(L.m, m)(L.T(a, rg=False))
        TRUTH[f"{_m}[{_tag},0]"] = lambda L, m=_m, a=_data: getattr(L.m, m)(L.T(a, rg=False), 0)
        TRUTH[f"{_m}[{_tag},-1,keep]"] = lambda L, m=_m, a=_data: getattr(L.m, m)(
            L.T(a, rg=False) > 0, dim=-1, keepdim=True
        )
    TRUTH[f"{_m}[input=,bool]"] = lambda L, m=_m: getattr(L.m, m)(
        input=L.B([[1, 0], [1, 1]]), dim=1
    )
    TRUTH[f"{_m}[int]"] = lambda L, m=_m: getattr(L.m, m)(L.I([[0, 2], [3, 1]]), 0)


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_tg_all_any_match_torch(name):
    _compare(TRUTH[name])


def test_tg_all_any_refuse_out():
    for f in (tg.all, tg.any):
        with pytest.raises(TypeError, match="out="):
            f(tg.ones(2), out=tg.ones(()))


# ---- the median of an empty tensor: NaN, as PyTorch's ------------------------------------------


@pytest.mark.parametrize("name", ["median", "nanmedian", "tg.median", "tg.nanmedian"])
@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_median_of_an_empty_tensor_is_nan(name, shape):
    def prog(L):
        x = L.T(np.zeros(shape))
        return getattr(L.m, name[3:])(x) if name.startswith("tg.") else getattr(x, name)()

    _compare(prog)


def test_median_of_an_empty_integer_tensor_raises():
    """PyTorch gives an arbitrary number (INT64_MIN for int64); an integer has no NaN."""
    for f in (lambda x: x.median(), lambda x: x.nanmedian(), tg.median):
        with pytest.raises(RuntimeError, match=r"median\(\) of an empty int64 tensor"):
            f(tg.zeros(0, dtype=tg.int64))


# ---- argmax / argmin of an empty array inside NumPy code: NumPy's ValueError -------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x[:0].argmax(),
        lambda x: x[:0].argmin(),
        lambda x: np.argmax(x[:0]),
        lambda x: np.argmin(x[:0]),
        lambda x: (x[:0, None] * np.ones((1, 2))).argmax(axis=0),
    ],
)
def test_argmax_of_empty_in_numpy_code_raises_numpys_value_error(f):
    with pytest.raises(ValueError):
        f(np.ones(3))  # NumPy's own
    with pytest.raises(ValueError):
        tg.grad(lambda x: x.sum() + 0 * f(x).sum())(np.ones(3))
    with pytest.raises(IndexError if "np.arg" not in inspect.getsource(f) else ValueError):
        f(tg.ones(3, requires_grad=True))  # the method outside NumPy code: PyTorch's IndexError


# ---- tg.cumsum / tg.cumprod of integer and boolean tensors: exact, PyTorch's dtypes -----------

BIG = [[2**60, 2**60 + 1], [3, -(2**59) + 7]]  # beyond 2**53: a float64 scan rounds
INT_SCANS = dict(
    cumsum_big=lambda L: L.m.cumsum(L.I(BIG), 0),
    cumsum_big_dim=lambda L: L.m.cumsum(L.I(BIG), dim=1),
    cumsum_input=lambda L: L.m.cumsum(input=L.I(BIG), dim=-1),
    cumprod_int=lambda L: L.m.cumprod(L.I([[3, -2], [5, 7]]), 1),
    cumsum_bool=lambda L: L.m.cumsum(L.B([True, False, True]), 0),
    cumsum_int32=lambda L: L.m.cumsum(L.I(BIG[1:]), 1, dtype=L.m.int32),
    cumprod_float=lambda L: L.m.cumprod(L.I([[3, -2], [5, 7]]), 0, dtype=L.m.float64),
    cumsum_0d_int=lambda L: L.m.cumsum(L.I(7), 0),
)


@pytest.mark.parametrize("name", list(INT_SCANS))
def test_tg_scans_of_integers_match_torch(name):
    a, b = (_run(INT_SCANS[name], lib)[0][0][1] for lib in ("tg", "torch"))
    assert str(a.dtype) == str(b.dtype).replace("torch.", ""), (a.dtype, b.dtype)
    assert a.tolist() == b.tolist()  # exact


def test_tg_scan_to_bool_refused_as_torch():
    with pytest.raises(NotImplementedError):
        torch.cumsum(torch.tensor([1, 2]), 0, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="cumsum.*dtype=bool"):
        tg.cumsum(tg.tensor([1, 2]), 0, dtype=bool)


@pytest.mark.parametrize("shape, d", [((), 1), ((), -2), ((3,), 2), ((2, 3), -4)])
def test_tg_unsqueeze_with_a_positional_dim_out_of_range(shape, d):
    """NumPy's bare AxisError ("axis 2 is out of bounds for array of dimension 2") before."""
    with pytest.raises(IndexError):
        torch.unsqueeze(torch.zeros(shape), d)
    with pytest.raises(IndexError, match=rf"unsqueeze.*got {d}\).*{re.escape(str(shape))}"):
        tg.unsqueeze(tg.zeros(shape), d)
