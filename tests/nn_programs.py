"""The adapter of the tg.nn comparison hunts: a program written once against ``L`` (a
``_Lib``) builds its modules through ``L.M``, and tapegrad's module gets the float64 weights
PyTorch's got at the same place; ``_flat`` and ``_np`` turn results into arrays to compare.
Imported by test files that skip without torch first."""

import numpy as np
import torch

import tapegrad as tg
import tapegrad.nn.functional as tgF


def _rng(seed=0):
    return np.random.default_rng(seed)


class _Lib:
    """The names a program needs, for one library."""

    def __init__(self, name, states=None):
        self.name = name
        self.is_tg = name == "tg"
        self.m = tg if self.is_tg else torch
        self.nn = self.m.nn
        self.F = tgF if self.is_tg else torch.nn.functional
        self.optim = self.m.optim
        self.leaves = []
        self.mods = []
        self.states = states if states is not None else []

    def T(self, data, rg=True):
        """A float64 leaf (requiring grad unless rg is False)."""
        a = np.array(data, dtype=float)
        t = tg.tensor(a, requires_grad=rg) if self.is_tg else torch.tensor(a, requires_grad=rg)
        if rg:
            self.leaves.append(t)
        return t

    def I(self, data):  # noqa: E743 - an integer tensor
        a = np.array(data, dtype=np.int64)
        return tg.tensor(a) if self.is_tg else torch.tensor(a)

    def M(self, mod):
        """Register a module; tapegrad's gets the weights PyTorch's got at the same place."""
        if self.is_tg:
            k = len(self.mods)
            if k < len(self.states):
                mod.load_state_dict(self.states[k])
        else:
            mod.double()
            self.states.append({k: v.detach().numpy().copy() for k, v in mod.state_dict().items()})
        self.mods.append(mod)
        return mod

    def params(self):
        return [p for m in self.mods for _, p in m.named_parameters()]

    def wrap(self, a):
        return tg.tensor(a) if self.is_tg else torch.tensor(a)


def _is_tensor(r):
    return isinstance(r, (tg.Tensor, torch.Tensor))


def _flat(r):
    if _is_tensor(r):
        return [r]
    if isinstance(r, (tuple, list)):
        return [x for part in r for x in _flat(part)]
    if isinstance(r, dict):
        return [x for k in sorted(r) for x in _flat(r[k])]
    return [r]


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # force: PyTorch's ZeroTensor gradients
    if isinstance(x, tg.Tensor):
        return np.asarray(x.detach().numpy())
    return x
