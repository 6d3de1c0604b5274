"""Recurrent layers (``RNNCell``, ``GRUCell``, ``LSTMCell``, ``RNN``, ``GRU``, ``LSTM``) with
PyTorch's equations, gate order (GRU r, z, n; LSTM i, f, g, o), parameter names and shapes
(``weight_ih_l0`` (gates * hidden, input), ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``,
``..._reverse`` for the second direction) and initialisation U(-1/sqrt(hidden), 1/sqrt(hidden)),
so a torch ``state_dict`` converted with ``{k: v.numpy()}`` loads as it is.

The layers loop over time steps in Python; each step is a few tapegrad ops (the input
projection of all steps is one matrix product), so gradients, higher derivatives and forward
mode come from the ops.
"""

import math

import numpy as np

from ..core import creation as _creation
from ..core import functions as _ops
from . import functional as F
from .layers import _no_device
from .modules import Module, Parameter
from .utils.rnn import PackedSequence

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _gate(g, i, hidden):
    return _ops.getitem(g, (Ellipsis, slice(i * hidden, (i + 1) * hidden)))


def _rnn_step(kind, nonlinearity, gi, state, w_hh, b_hh):
    """One step: ``gi`` is the input projection x W_ih.T + b_ih; ``state`` h (or (h, c) for an
    LSTM); returns the new state."""
    if kind == "LSTM":
        h, c = state
        gates = _ops.add(gi, F.linear(h, w_hh, b_hh))
        n = gates.shape[-1] // 4
        i, f, g, o = (_gate(gates, k, n) for k in range(4))
        i, f, o = _ops.sigmoid(i), _ops.sigmoid(f), _ops.sigmoid(o)
        c = _ops.add(_ops.mul(f, c), _ops.mul(i, _ops.tanh(g)))
        return _ops.mul(o, _ops.tanh(c)), c
    gh = F.linear(state, w_hh, b_hh)
    if kind == "RNN":
        pre = _ops.add(gi, gh)
        return _ops.tanh(pre) if nonlinearity == "tanh" else _ops.relu(pre)
    n = gh.shape[-1] // 3
    r = _ops.sigmoid(_ops.add(_gate(gi, 0, n), _gate(gh, 0, n)))
    z = _ops.sigmoid(_ops.add(_gate(gi, 1, n), _gate(gh, 1, n)))
    cand = _ops.tanh(_ops.add(_gate(gi, 2, n), _ops.mul(r, _gate(gh, 2, n))))
    return _ops.add(_ops.mul(_ops.sub(1.0, z), cand), _ops.mul(z, state))


def _check_nonlinearity(name, kind, nonlinearity):
    if kind == "RNN" and nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"{name}: unknown nonlinearity {nonlinearity!r} (use 'tanh' or 'relu')")


def _init_weights(module, suffix, input_size, hidden_size, gates, bias):
    """PyTorch's parameters of one layer and direction, drawn from U(-k, k), k = 1/sqrt(hidden),
    in PyTorch's order (weight_ih, weight_hh, bias_ih, bias_hh)."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size else 0.0
    rng = _creation.rng()
    shapes = [("weight_ih", (gates * hidden_size, input_size))]
    shapes.append(("weight_hh", (gates * hidden_size, hidden_size)))
    if bias:
        shapes += [("bias_ih", (gates * hidden_size,)), ("bias_hh", (gates * hidden_size,))]
    for name, shape in shapes:
        module.register_parameter(name + suffix, Parameter(rng.uniform(-bound, bound, shape)))
    if not bias:
        module.register_parameter("bias_ih" + suffix, None)
        module.register_parameter("bias_hh" + suffix, None)


def _input(name, input, dims, size, expected):
    x = _ops.tensor_of(input)
    if x.ndim not in dims or x.shape[-1] != size:
        raise ValueError(f"{name}: expected input of {expected}, got shape {x.shape}")
    return x


def _zeros_like_state(kind, shape):
    z = _creation.zeros(*shape)
    return (z, _creation.zeros(*shape)) if kind == "LSTM" else z


class _CellBase(Module):
    kind = ""

    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__()
        name = type(self).__name__
        _no_device(name, device, dtype)
        _check_nonlinearity(name, self.kind, nonlinearity)
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.bias = bool(bias)
        self.nonlinearity = nonlinearity
        _init_weights(self, "", self.input_size, self.hidden_size, _GATES[self.kind], bias)

    def forward(self, input, hx=None):
        name = type(self).__name__
        size = self.input_size
        x = _input(name, input, (1, 2), size, f"shape (batch, {size}) or ({size},)")
        unbatched = x.ndim == 1
        if unbatched:
            x = _ops.reshape(x, (1, self.input_size))
        shape = (x.shape[0], self.hidden_size)
        if hx is None:
            state = _zeros_like_state(self.kind, shape)
        else:
            parts = tuple(hx) if self.kind == "LSTM" else (hx,)
            if self.kind == "LSTM" and len(parts) != 2:
                raise ValueError(f"{name}: hx must be a pair (h, c)")
            parts = tuple(_ops.tensor_of(p) for p in parts)
            # as PyTorch: hx is (hidden_size,) for an unbatched input, (batch, hidden_size)
            # otherwise; a reshape would silently pair other numbers with the batch rows
            expect = (self.hidden_size,) if unbatched else shape
            for q in parts:
                if q.shape != expect:
                    given = "an unbatched input" if unbatched else f"a batch of {shape[0]}"
                    raise ValueError(
                        f"{name}: expected hidden state of shape {expect} for {given}, "
                        f"got {q.shape}"
                    )
            parts = tuple(_ops.reshape(q, shape) for q in parts)
            state = parts if self.kind == "LSTM" else parts[0]
        p = self._parameters
        gi = F.linear(x, p["weight_ih"], p["bias_ih"])
        out = _rnn_step(self.kind, self.nonlinearity, gi, state, p["weight_hh"], p["bias_hh"])
        if unbatched:
            squeeze = lambda t: _ops.reshape(t, (self.hidden_size,))  # noqa: E731
            return tuple(map(squeeze, out)) if self.kind == "LSTM" else squeeze(out)
        return out

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if self.kind == "RNN" and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        return s


class RNNCell(_CellBase):
    """One step of an Elman RNN: h' = tanh(x W_ih.T + b_ih + h W_hh.T + b_hh) (or relu with
    ``nonlinearity='relu'``).  ``hx`` defaults to zeros; input (N, input_size) or
    (input_size,).

    Examples:
        >>> import tapegrad as tg
        >>> cell = tg.nn.RNNCell(3, 5)
        >>> cell.weight_ih.shape, cell.weight_hh.shape, cell(tg.ones(2, 3)).shape
        ((5, 3), (5, 5), (2, 5))
    """

    kind = "RNN"


class GRUCell(_CellBase):
    """One step of a GRU, PyTorch's equations with gates r, z, n stacked in that order:
    n = tanh(x W_in.T + b_in + r (h W_hn.T + b_hn)), h' = (1 - z) n + z h.

    Examples:
        >>> import tapegrad as tg
        >>> cell = tg.nn.GRUCell(3, 5)
        >>> cell.weight_ih.shape, cell(tg.ones(3)).shape
        ((15, 3), (5,))
    """

    kind = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)


class LSTMCell(_CellBase):
    """One step of an LSTM, gates i, f, g, o stacked in that order (PyTorch's): c' = f c + i g,
    h' = o tanh(c').  ``hx`` is a pair (h, c) (zeros by default); returns (h', c').

    Examples:
        >>> import tapegrad as tg
        >>> cell = tg.nn.LSTMCell(3, 5)
        >>> h, c = cell(tg.ones(2, 3)); cell.weight_hh.shape, h.shape, c.shape
        ((20, 5), (2, 5), (2, 5))
    """

    kind = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)


class _RNNBase(Module):
    kind = ""

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
        *,
        nonlinearity=None,
    ):
        super().__init__()
        name = type(self).__name__
        _no_device(name, device, dtype)
        if nonlinearity is not None and self.kind != "RNN":
            # GRU and LSTM have fixed gates (PyTorch refuses the argument); ignoring it would
            # silently compute with tanh
            raise TypeError(f"{name}: unexpected keyword argument 'nonlinearity' (only RNN has it)")
        nonlinearity = "tanh" if nonlinearity is None else nonlinearity
        _check_nonlinearity(name, self.kind, nonlinearity)
        if proj_size:
            raise ValueError(f"{name}: proj_size={proj_size} is not supported; use proj_size=0")
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if int(num_layers) < 1:
            raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        self.input_size = int(input_size)
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        self.nonlinearity = nonlinearity
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = float(dropout)
        self.bidirectional = bool(bidirectional)
        self.proj_size = 0
        directions = 2 if bidirectional else 1
        for layer in range(self.num_layers):
            size = self.input_size if layer == 0 else self.hidden_size * directions
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                _init_weights(self, suffix, size, self.hidden_size, _GATES[self.kind], bias)

    def _initial_state(self, hx, batch, unbatched):
        name = type(self).__name__
        shape = (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)
        if hx is None:
            return _zeros_like_state(self.kind, shape)
        parts = tuple(hx) if self.kind == "LSTM" else (hx,)
        if self.kind == "LSTM" and len(parts) != 2:
            raise ValueError(f"{name}: hx must be a pair (h_0, c_0)")
        parts = tuple(_ops.tensor_of(p) for p in parts)
        expect = (shape[0], shape[2]) if unbatched else shape
        for p in parts:
            if p.shape != expect:
                raise ValueError(f"{name}: expected hidden state of shape {expect}, got {p.shape}")
        parts = tuple(_ops.reshape(p, shape) for p in parts)
        return parts if self.kind == "LSTM" else parts[0]

    def _forward_packed(self, packed, hx):
        """PyTorch's forward over a ``PackedSequence``: at step t only the first
        ``batch_sizes[t]`` sequences (sorted by decreasing length) advance, so each keeps the
        state of its last real step; the reverse direction starts each sequence from ``h_0`` at
        its own last step.  ``hx`` and the returned state are in the batch's original order."""
        name = type(self).__name__
        data = _ops.tensor_of(packed.data)
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise ValueError(
                f"{name}: expected a PackedSequence whose data has shape (steps, "
                f"{self.input_size}), got {data.shape}"
            )
        sizes = [int(n) for n in np.asarray(_ops.tensor_of(packed.batch_sizes)._v).reshape(-1)]
        batch = sizes[0] if sizes else 0
        state = self._initial_state(hx, batch, False)
        sorted_idx = packed.sorted_indices
        if sorted_idx is not None and hx is not None:
            order = np.asarray(_ops.tensor_of(sorted_idx)._v)
            pick = lambda t: _ops.getitem(t, (slice(None), order))  # noqa: E731
            state = tuple(map(pick, state)) if self.kind == "LSTM" else pick(state)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        lstm = self.kind == "LSTM"
        directions = 2 if self.bidirectional else 1
        p = self._parameters
        finals = []
        x = data
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                k = layer * directions + d
                s = (state[0][k], state[1][k]) if lstm else state[k]
                gi = F.linear(x, p["weight_ih" + suffix], p["bias_ih" + suffix])
                seq = [None] * len(sizes)
                for t in reversed(range(len(sizes))) if d else range(len(sizes)):
                    n, a = sizes[t], int(starts[t])
                    head = lambda u, n=n: _ops.getitem(u, slice(0, n))  # noqa: E731
                    new = _rnn_step(
                        self.kind,
                        self.nonlinearity,
                        _ops.getitem(gi, slice(a, a + n)),
                        tuple(map(head, s)) if lstm else head(s),
                        p["weight_hh" + suffix],
                        p["bias_hh" + suffix],
                    )
                    seq[t] = new[0] if lstm else new
                    if n < batch:
                        keep = lambda u, v, n=n: _ops.concatenate(  # noqa: E731
                            [u, _ops.getitem(v, slice(n, None))], 0
                        )
                        new = tuple(map(keep, new, s)) if lstm else keep(new, s)
                    s = new
                outs.append(_ops.concatenate(seq, 0))
                finals.append(s)
            x = outs[0] if directions == 1 else _ops.concatenate(outs, axis=1)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        unsorted = packed.unsorted_indices
        back = None if unsorted is None else np.asarray(_ops.tensor_of(unsorted)._v)

        def final(i):
            h = _ops.stack([f[i] if lstm else f for f in finals])
            return h if back is None else _ops.getitem(h, (slice(None), back))

        out = PackedSequence(x, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        return out, ((final(0), final(1)) if lstm else final(0))

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        size = self.input_size
        x = _input(
            name,
            input,
            (2, 3),
            size,
            f"shape (sequence, batch, {size}) ((batch, sequence, {size}) with "
            f"batch_first=True) or (sequence, {size})",
        )
        unbatched = x.ndim == 2
        if unbatched:
            x = _ops.reshape(x, (x.shape[0], 1, x.shape[1]))
        elif self.batch_first:
            x = _ops.transpose(x, (1, 0, 2))
        steps, batch = x.shape[:2]
        state = self._initial_state(hx, batch, unbatched)
        lstm = self.kind == "LSTM"
        directions = 2 if self.bidirectional else 1
        p = self._parameters
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                k = layer * directions + d
                s = (state[0][k], state[1][k]) if lstm else state[k]
                gi = F.linear(x, p["weight_ih" + suffix], p["bias_ih" + suffix])
                seq = [None] * steps
                for t in reversed(range(steps)) if d else range(steps):
                    s = _rnn_step(
                        self.kind,
                        self.nonlinearity,
                        gi[t],
                        s,
                        p["weight_hh" + suffix],
                        p["bias_hh" + suffix],
                    )
                    seq[t] = s[0] if lstm else s
                outs.append(_ops.stack(seq))
                finals.append(s)
            x = outs[0] if directions == 1 else _ops.concatenate(outs, axis=2)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        out_shape = (len(finals), self.hidden_size) if unbatched else None

        def final(i):
            h = _ops.stack([f[i] if lstm else f for f in finals])
            return h if out_shape is None else _ops.reshape(h, out_shape)

        if unbatched:
            x = _ops.reshape(x, (steps, x.shape[2]))
        elif self.batch_first:
            x = _ops.transpose(x, (1, 0, 2))
        return x, ((final(0), final(1)) if lstm else final(0))

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        for key, default in (
            ("num_layers", 1),
            ("bias", True),
            ("batch_first", False),
            ("dropout", 0.0),
            ("bidirectional", False),
        ):
            if getattr(self, key) != default:
                s += f", {key}={getattr(self, key)}"
        if self.kind == "RNN" and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        return s


class RNN(_RNNBase):
    """A multi-layer Elman RNN over a sequence (L, N, input_size) ((N, L, input_size) with
    ``batch_first``, or unbatched (L, input_size)), as PyTorch; returns (output, h_n) with
    output (L, N, D * hidden_size) and h_n (D * num_layers, N, hidden_size), D = 2 when
    ``bidirectional``.  ``dropout`` applies between layers while training.

    Examples:
        >>> import tapegrad as tg
        >>> rnn = tg.nn.RNN(3, 4, num_layers=2, batch_first=True)
        >>> out, h = rnn(tg.ones(5, 7, 3)); out.shape, h.shape
        ((5, 7, 4), (2, 5, 4))
        >>> [name for name, _ in rnn.named_parameters()][:4]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    kind = "RNN"

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        device=None,
        dtype=None,
    ):
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
            nonlinearity=nonlinearity,
        )


class GRU(_RNNBase):
    """A multi-layer GRU over a sequence (see ``RNN`` for shapes and ``GRUCell`` for the
    equations); returns (output, h_n).

    Examples:
        >>> import tapegrad as tg
        >>> gru = tg.nn.GRU(3, 4, bidirectional=True)
        >>> out, h = gru(tg.ones(6, 2, 3)); out.shape, h.shape, gru.weight_ih_l0_reverse.shape
        ((6, 2, 8), (2, 2, 4), (12, 3))
    """

    kind = "GRU"


class LSTM(_RNNBase):
    """A multi-layer LSTM over a sequence (see ``RNN`` for shapes and ``LSTMCell`` for the
    equations); ``hx`` is (h_0, c_0); returns (output, (h_n, c_n)).  ``proj_size`` must be 0.

    Examples:
        >>> import tapegrad as tg
        >>> lstm = tg.nn.LSTM(3, 4, num_layers=2)
        >>> out, (h, c) = lstm(tg.ones(6, 2, 3)); out.shape, h.shape, c.shape
        ((6, 2, 4), (2, 2, 4), (2, 2, 4))
    """

    kind = "LSTM"
