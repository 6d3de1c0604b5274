"""The adapter of the PyTorch comparison hunts: a program written once against ``L`` (a
``_Lib``) runs in tapegrad and in PyTorch (float64); ``_compare`` asserts the same values,
shapes, dtype kinds, structure and gradients of a fixed random weighting of every float
output; ``_raises`` gives what a library raised.  Imported by test files that skip without
torch first."""

import warnings

import numpy as np
import torch

import tapegrad as tg
import tapegrad.nn.functional as tgF


class _Lib:
    """The few names a program needs, for one library."""

    def __init__(self, name):
        self.name = name
        self.m = tg if name == "tg" else torch
        self.F = tgF if name == "tg" else torch.nn.functional
        self.linalg = self.m.linalg
        self.leaves = []

    def T(self, data, rg=True):
        """A float64 leaf (requiring grad unless rg is False)."""
        a = np.array(data, dtype=float)
        if self.name == "tg":
            t = tg.tensor(a, requires_grad=rg)
        else:
            t = torch.tensor(a, dtype=torch.float64, requires_grad=rg)
        if rg:
            self.leaves.append(t)
        return t

    def I(self, data):  # noqa: E743 - an integer tensor
        a = np.array(data, dtype=np.int64)
        return tg.tensor(a) if self.name == "tg" else torch.tensor(a)

    def B(self, data):
        a = np.array(data, dtype=bool)
        return tg.tensor(a) if self.name == "tg" else torch.tensor(a)


def _is_tensor(r):
    return isinstance(r, (tg.Tensor, torch.Tensor))


def _fields(r):
    f = getattr(type(r), "_fields", None) or getattr(type(r), "__match_args__", None)
    return tuple(f) if f else None


def _flat(r, path="out"):
    """``[(path, item)]``: the tensors and plain values of a result, with its structure."""
    if _is_tensor(r):
        return [(path, r)]
    if isinstance(r, torch.Size):
        return [(path, ("shape", tuple(r)))]
    if isinstance(r, (tuple, list)):
        if all(isinstance(d, int) for d in r) and type(r).__name__ in ("Size", "tuple"):
            if r and not isinstance(r, list):
                return [(path, ("shape", tuple(r)))]
        items = [(path, ("seq", len(r), _fields(r)))]
        for k, x in enumerate(r):
            items += _flat(x, f"{path}[{k}]")
        return items
    return [(path, ("value", r))]


def _kind(t):
    if isinstance(t, torch.Tensor):
        return "f" if t.is_floating_point() else ("b" if t.dtype == torch.bool else "i")
    k = np.dtype(t.dtype).kind
    return "i" if k == "u" else k


def _arr(t):
    return np.asarray(t.detach().numpy(), dtype=float)


def _weights(k, shape):
    return np.random.default_rng(1000 + k).standard_normal(shape)


def _run(prog, name):
    L = _Lib(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = prog(L)
        items = _flat(out)
        loss = None
        for k, (_, it) in enumerate(items):
            if _is_tensor(it) and _kind(it) == "f" and it.requires_grad:
                w = _weights(k, tuple(it.shape))
                term = (it * (L.T(w, rg=False))).sum()
                loss = term if loss is None else loss + term
        grads = None
        if loss is not None and L.leaves:
            g = L.m.autograd.grad(loss, L.leaves, allow_unused=True)
            grads = [None if x is None else _arr(x) for x in g]
    return items, grads, len(L.leaves)


def _compare(prog, rtol=1e-10, atol=1e-12):
    it_t, g_t, n_t = _run(prog, "torch")
    it_g, g_g, n_g = _run(prog, "tg")
    assert [p for p, _ in it_g] == [p for p, _ in it_t], (
        f"structure: tapegrad {[p for p, _ in it_g]} vs torch {[p for p, _ in it_t]}"
    )
    for (path, a), (_, b) in zip(it_g, it_t, strict=True):
        if _is_tensor(b):
            assert _is_tensor(a), f"{path}: tapegrad gives {a!r}, torch a tensor"
            assert tuple(a.shape) == tuple(b.shape), f"{path}: shape {a.shape} vs {b.shape}"
            assert _kind(a) == _kind(b), f"{path}: dtype {a.dtype} vs torch {b.dtype}"
            assert bool(a.requires_grad) == bool(b.requires_grad), f"{path}: requires_grad"
            np.testing.assert_allclose(
                _arr(a), _arr(b), rtol=rtol, atol=atol, equal_nan=True, err_msg=path
            )
        elif b[0] == "seq":
            assert a[0] == "seq" and a[1] == b[1], f"{path}: tapegrad {a} vs torch {b}"
            if b[2] is not None:
                assert a[2] == b[2], f"{path}: named fields {a[2]} vs torch {b[2]}"
        elif b[0] == "shape":
            assert a == b, f"{path}: tapegrad {a} vs torch {b}"
        else:
            assert not _is_tensor(a), f"{path}: tapegrad gives a tensor, torch {b[1]!r}"
            va, vb = a[1] if isinstance(a, tuple) and a[:1] == ("value",) else a, b[1]
            assert type(va) is type(vb) or np.isclose(va, vb), f"{path}: {va!r} vs {vb!r}"
            assert va == vb or np.isclose(va, vb, rtol=rtol), f"{path}: {va!r} vs {vb!r}"
    assert n_g == n_t
    if g_t is None:
        assert g_g is None
        return
    assert g_g is not None, "tapegrad gives no gradient"
    for k, (a, b) in enumerate(zip(g_g, g_t, strict=True)):
        if b is None:
            assert a is None or not np.any(a), f"grad of input {k}: torch None"
            continue
        assert a is not None, f"grad of input {k}: tapegrad None"
        assert a.shape == b.shape, f"grad of input {k}: shape"
        np.testing.assert_allclose(
            a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"grad of input {k}"
        )


def _raises(prog, name):
    try:
        _run(prog, name)
    except Exception as e:  # noqa: BLE001
        return e
    return None
