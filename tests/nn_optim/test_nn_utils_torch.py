"""``tg.nn.utils`` (``rnn``, ``parametrize``, ``parametrizations``, the hook-based weight and
spectral norms, ``stateless.functional_call``) and the initialisers of ``tg.nn.init`` added to
match PyTorch, side by side with PyTorch (float64).

Hunted: padded / packed sequences (values, lengths, orders, gradients to the padded input),
``RNN`` / ``GRU`` / ``LSTM`` over a ``PackedSequence`` (outputs, the state of each sequence's
last real step, gradients to input, h_0 and every weight, a second derivative), parametrized
modules (state-dict keys, class names, values, gradients to the originals, ``right_inverse``,
``cached``, removal, deepcopy, pickling refused), weight and spectral norms in both styles
(power-iteration buffers in train and eval mode, ``dim`` rules, removal, create_graph second
derivatives), ``functional_call`` (tied weights, several dicts, strict keys, parametrized
names, ``tg.grad`` / ``tg.hessian`` of the parameters) and ``trunc_normal_`` / ``dirac_`` /
``sparse_`` / the deprecated initialiser names.  References: PyTorch's values, gradients and
errors; SciPy's truncated normal for ``trunc_normal_``'s distribution; ``tg.gradcheck`` (finite
differences).  The bad inputs must raise PyTorch's error type with a message naming the fix.
"""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402

R, TR = tg.nn.utils.rnn, torch.nn.utils.rnn
P, TP = tg.nn.utils.parametrize, torch.nn.utils.parametrize
RTOL = 1e-10


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    if isinstance(t, tg.Tensor):
        return np.asarray(t.detach()._v)
    return np.asarray(t)


def _close(a, b, what="", rtol=RTOL):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-12, err_msg=what)


def _pair(build):
    """The same module in both libraries, tapegrad's holding PyTorch's values."""
    torch.manual_seed(0)
    t = build(torch).double()
    g = build(tg)
    g.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    return t, g


def _leaves(a):
    return torch.tensor(a, requires_grad=True), tg.tensor(a, requires_grad=True)


RNG = np.random.default_rng(0)
SEQS = [RNG.standard_normal((n, 2)) for n in (3, 1, 4, 3)]


# ---- pad / pack / unpad / unpack ---------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_values_and_gradients(batch_first, side):
    pairs = [_leaves(s) for s in SEQS]
    kw = dict(batch_first=batch_first, padding_value=-0.5, padding_side=side)
    pt = TR.pad_sequence([p[0] for p in pairs], **kw)
    pg = R.pad_sequence([p[1] for p in pairs], **kw)
    _close(pt, pg)
    w = RNG.standard_normal(pt.shape)
    (pt * torch.tensor(w)).sum().backward()
    (pg * tg.tensor(w)).sum().backward()
    for a, b in pairs:
        _close(a.grad, b.grad)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_padded_then_pad_packed(batch_first, enforce_sorted):
    lengths = [4, 3, 3, 1] if enforce_sorted else [3, 1, 4, 3]  # ties keep their order
    x = RNG.standard_normal((4, 4, 2))
    xt, xg = _leaves(x)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first, enforce_sorted)
    pg = R.pack_padded_sequence(xg, tg.tensor(lengths), batch_first, enforce_sorted)
    assert isinstance(pg, R.PackedSequence) and isinstance(pg, tuple)
    _close(pt.data, pg.data)
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        a, b = getattr(pt, name), getattr(pg, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert b.dtype == np.int64 and _np(a).tolist() == _np(b).tolist(), name
    ot, lt = TR.pad_packed_sequence(pt, batch_first, padding_value=2.0, total_length=6)
    og, lg = R.pad_packed_sequence(pg, batch_first, padding_value=2.0, total_length=6)
    _close(ot, og)
    assert _np(lt).tolist() == _np(lg).tolist()
    w = RNG.standard_normal(ot.shape)
    (ot * torch.tensor(w)).pow(2).sum().backward()
    (og * tg.tensor(w)).pow(2).sum().backward()
    _close(xt.grad, xg.grad)


def test_pack_sequence_unpack_and_unpad():
    tt = [torch.tensor(s) for s in SEQS]
    gg = [tg.tensor(s) for s in SEQS]
    pt, pg = TR.pack_sequence(tt, enforce_sorted=False), R.pack_sequence(gg, enforce_sorted=False)
    _close(pt.data, pg.data)
    for a, b in zip(TR.unpack_sequence(pt), R.unpack_sequence(pg), strict=True):
        _close(a, b)
    padded = TR.pad_sequence(tt)
    lengths = torch.tensor([len(s) for s in SEQS])
    got = R.unpad_sequence(tg.tensor(padded.numpy()), tg.tensor(lengths.numpy()))
    for a, b in zip(TR.unpad_sequence(padded, lengths), got, strict=True):
        _close(a, b)
    assert _np(R.invert_permutation(tg.tensor([2, 0, 3, 1]))).tolist() == [1, 3, 0, 2]
    # a PackedSequence is the named tuple PyTorch's is
    data, sizes, s, u = pg
    assert pg._fields == pt._fields and sizes is pg.batch_sizes and s is pg.sorted_indices
    assert R.PackedSequence((data, sizes)).batch_sizes is sizes
    assert pg.double().data.dtype == np.float64 and pg.to(tg.float64) is pg and not pg.is_cuda


def _rnn_errors(lib):
    nn_r = lib.nn.utils.rnn
    one = lib.ones(3, 2, 1, dtype=lib.float64)
    seq = nn_r.pack_sequence([lib.ones(3, 1, dtype=lib.float64)])
    return [
        (
            "side",
            RuntimeError,
            "padding_side",
            lambda: nn_r.pad_sequence([one[0]], padding_side="x"),
        ),
        ("empty", RuntimeError, "empty list", lambda: nn_r.pad_sequence([])),
        (
            "unsorted",
            RuntimeError,
            "enforce_sorted",
            lambda: nn_r.pack_padded_sequence(one, [1, 2]),
        ),
        ("zero", RuntimeError, "greater than 0", lambda: nn_r.pack_padded_sequence(one, [2, 0])),
        ("count", RuntimeError, "batch_size", lambda: nn_r.pack_padded_sequence(one, [3, 2, 1])),
        (
            "total",
            ValueError,
            "total_length",
            lambda: nn_r.pad_packed_sequence(seq, total_length=2),
        ),
    ]


@pytest.mark.parametrize("i", range(6))
def test_rnn_utils_errors_as_pytorch(i):
    name, kind, fragment, call = _rnn_errors(torch)[i]
    with pytest.raises(kind, match=fragment):
        call()
    name, kind, fragment, call = _rnn_errors(tg)[i]
    with pytest.raises(kind, match=fragment):
        call()


def test_a_length_beyond_the_input_raises():
    # PyTorch packs memory past the end of its input here (a silent wrong number)
    with pytest.raises(RuntimeError, match="pack_padded_sequence: a length is 4 but"):
        R.pack_padded_sequence(tg.ones(3, 2, 1), [4, 2])
    with pytest.raises(TypeError, match="lengths must hold integers"):
        R.pack_padded_sequence(tg.ones(3, 2, 1), [2.5, 2])


# ---- recurrent layers over packed sequences ----------------------------------------------------


def _packed_rnn_case(kind, bidirectional, batch_first, with_hx):
    t, g = _pair(
        lambda lib: getattr(lib.nn, kind)(
            2, 3, num_layers=2, bidirectional=bidirectional, batch_first=batch_first
        )
    )
    lengths = [2, 4, 3]
    shape = (3, 4, 2) if batch_first else (4, 3, 2)
    xt, xg = _leaves(RNG.standard_normal(shape))
    h = RNG.standard_normal((4 if bidirectional else 2, 3, 3))
    ht, hg = _leaves(h)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first, enforce_sorted=False)
    pg = R.pack_padded_sequence(xg, lengths, batch_first, enforce_sorted=False)
    if not with_hx:
        st, sg = None, None
    elif kind == "LSTM":
        st, sg = (ht, ht.cos()), (hg, hg.cos())
    else:
        st, sg = ht, hg
    return t, g, (xt, ht, t(pt, st)), (xg, hg, g(pg, sg))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_layers_over_packed_sequences(kind, bidirectional):
    t, g, (xt, ht, (ot, st)), (xg, hg, (og, sg)) = _packed_rnn_case(
        kind, bidirectional, batch_first=bidirectional, with_hx=True
    )
    assert isinstance(og, R.PackedSequence)
    _close(ot.data, og.data, "packed output")
    assert _np(og.unsorted_indices).tolist() == _np(ot.unsorted_indices).tolist()
    st, sg = (st if kind == "LSTM" else (st,)), (sg if kind == "LSTM" else (sg,))
    for a, b in zip(st, sg, strict=True):
        _close(a, b, "last real step's state")
    pt, _ = TR.pad_packed_sequence(ot)
    pg, _ = R.pad_packed_sequence(og)
    w = RNG.standard_normal(pt.shape)
    ((pt * torch.tensor(w)).sum() + sum((s**2).sum() for s in st)).backward()
    ((pg * tg.tensor(w)).sum() + sum((s**2).sum() for s in sg)).backward()
    _close(xt.grad, xg.grad, "input grad")
    _close(ht.grad, hg.grad, "h_0 grad")
    for name, p in t.named_parameters():
        _close(p.grad, getattr(g, name).grad, name)


def test_packed_gru_second_derivative_and_default_state():
    t, g, (xt, _, (ot, st)), (xg, _, (og, sg)) = _packed_rnn_case("GRU", False, False, False)
    _close(st, sg)
    (gt,) = torch.autograd.grad(ot.data.tanh().sum() + st.pow(2).sum(), xt, create_graph=True)
    (gg,) = tg.autograd.grad(og.data.tanh().sum() + sg.pow(2).sum(), xg, create_graph=True)
    _close(gt, gg)
    w = RNG.standard_normal(gt.shape)
    (ht,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), t.weight_hh_l1)
    (hg,) = tg.autograd.grad((gg * tg.tensor(w)).sum(), g.weight_hh_l1)
    _close(ht, hg, "second derivative")


def test_packed_sequence_of_the_wrong_width_raises():
    lstm = tg.nn.LSTM(2, 3)
    with pytest.raises(ValueError, match=r"LSTM: expected a PackedSequence whose data"):
        lstm(R.pack_sequence([tg.ones(2, 5)]))


# ---- parametrize -----------------------------------------------------------------------------


def _parametrizations(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(0, 1)

        def right_inverse(self, A):
            return A.triu()

    class Exp(lib.nn.Module):
        def forward(self, X):
            return X.exp()

        def right_inverse(self, Y):
            return Y.log()

    return Symmetric, Exp


def test_chained_parametrizations_as_pytorch():
    t, g = _pair(lambda lib: lib.nn.Linear(3, 3))
    x = RNG.standard_normal((2, 3))
    outs = []
    for lib, m, rp in ((torch, t, TP), (tg, g, P)):
        sym, exp = _parametrizations(lib)
        rp.register_parametrization(m, "weight", sym())
        rp.register_parametrization(m, "weight", exp())
        assert type(m).__name__ == "ParametrizedLinear" and rp.is_parametrized(m, "weight")
        assert not rp.is_parametrized(m, "bias")
        y = m(lib.tensor(x))
        y.pow(2).sum().backward()
        outs.append((list(m.state_dict()), y, m.parametrizations.weight.original.grad))
        with rp.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        original = m.parametrizations.weight.original
        m.weight = lib.tensor(np.full((3, 3), 2.0))  # right_inverse, in place
        assert m.parametrizations.weight.original is original
        outs.append(m.parametrizations.weight.original)
        with pytest.raises(KeyError, match="attribute 'weight' already exists"):
            m.weight = lib.nn.Parameter(lib.ones(3, 3))
        with pytest.raises(RuntimeError, match="state_dict"):
            pickle.dumps(m)
    (kt, yt, gt), ot, (kg, yg, gg), og = outs
    assert kt == kg == ["bias", "parametrizations.weight.original"]
    _close(yt, yg)
    _close(gt, gg, "grad of the original")
    _close(ot, og, "right_inverse")


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_as_pytorch(leave):
    t, g = _pair(lambda lib: lib.nn.Linear(3, 3))
    for lib, m, rp in ((torch, t, TP), (tg, g, P)):
        sym, _ = _parametrizations(lib)
        rp.register_parametrization(m, "weight", sym())
        original = m.parametrizations.weight.original
        rp.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert type(m).__name__ == "Linear" and m.weight is original
        assert not hasattr(m, "parametrizations")
    assert list(t.state_dict()) == list(g.state_dict()) == ["bias", "weight"]
    _close(t.weight, g.weight)
    assert type(g._parameters) is type(tg.nn.Linear(1, 1)._parameters)


def test_deepcopy_of_a_parametrized_module_is_independent():
    g = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(3, 2))
    g2 = copy.deepcopy(g)
    assert type(g2).__name__ == "ParametrizedLinear"
    _close(g.weight, g2.weight)
    tg.nn.init.zeros_(g2.parametrizations.weight.original0)  # g
    assert float(g2.weight.abs().sum()) == 0.0 and float(g.weight.abs().sum()) > 0.0
    assert float(g2(tg.ones(3)).sum()) == float(g2.bias.sum())
    # the copy has a class of its own: removing its parametrization leaves g's (in PyTorch
    # the copies share the class, and g.weight would then raise AttributeError)
    P.remove_parametrizations(g2, "weight")
    assert type(g2) is tg.nn.Linear and g._parameters.owner is g
    assert g.weight.shape == (2, 3) and type(g).__name__ == "ParametrizedLinear"


def _parametrize_errors(lib):
    rp = lib.nn.utils.parametrize
    sym, _ = _parametrizations(lib)

    class Row(lib.nn.Module):
        def forward(self, X):
            return X[0]

    return [
        (
            "name",
            ValueError,
            "does not have a parameter, a buffer",
            lambda: rp.register_parametrization(lib.nn.Linear(2, 2), "w", sym()),
        ),
        (
            "shape",
            ValueError,
            "may not change the shape",
            lambda: rp.register_parametrization(lib.nn.Linear(2, 2), "weight", Row()),
        ),
        (
            "remove",
            ValueError,
            "does not have a parametrization on weight",
            lambda: rp.remove_parametrizations(lib.nn.Linear(2, 2), "weight"),
        ),
        (
            "sequence",
            ValueError,
            "Cannot leave unparametrized",
            lambda: rp.remove_parametrizations(
                lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2)),
                "weight",
                leave_parametrized=False,
            ),
        ),
    ]


@pytest.mark.parametrize("i", range(4))
def test_parametrize_errors_as_pytorch(i):
    for lib in (torch, tg):
        _, kind, fragment, call = _parametrize_errors(lib)[i]
        with pytest.raises(kind, match=fragment):
            call()


# ---- weight norm and spectral norm -------------------------------------------------------------


def _conv(lib):
    return lib.nn.Conv1d(2, 3, 2)


@pytest.mark.parametrize("style", ["parametrization", "hook"])
@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_as_pytorch(style, dim):
    def build(lib):
        fn = lib.nn.utils.parametrizations.weight_norm
        if style == "hook":
            fn = lib.nn.utils.weight_norm
        return fn(_conv(lib), dim=dim)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t, g = _pair(build)
    assert list(t.state_dict()) == list(g.state_dict())
    x = RNG.standard_normal((1, 2, 5))
    yt, yg = t(torch.tensor(x)), g(tg.tensor(x))
    _close(yt, yg)
    yt.pow(3).sum().backward()
    yg.pow(3).sum().backward()
    names = [n for n, _ in t.named_parameters()]
    assert names == [n for n, _ in g.named_parameters()]
    for (n, a), (_, b) in zip(t.named_parameters(), g.named_parameters(), strict=True):
        _close(a.grad, b.grad, n)
    if style == "hook":
        torch.nn.utils.remove_weight_norm(t)
        tg.nn.utils.remove_weight_norm(g)
    else:
        TP.remove_parametrizations(t, "weight")
        P.remove_parametrizations(g, "weight")
    assert list(t.state_dict()) == list(g.state_dict())
    _close(t.weight, g.weight)


def test_weight_norm_second_derivative_and_gradcheck():
    t, g = _pair(lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2)))
    x = RNG.standard_normal((4, 3))
    vt, vg = t.parametrizations.weight.original1, g.parametrizations.weight.original1
    (gt,) = torch.autograd.grad(t(torch.tensor(x)).tanh().sum(), vt, create_graph=True)
    (gg,) = tg.autograd.grad(g(tg.tensor(x)).tanh().sum(), vg, create_graph=True)
    _close(gt, gg)
    (ht,) = torch.autograd.grad(gt.pow(2).sum(), t.parametrizations.weight.original0)
    (hg,) = tg.autograd.grad(gg.pow(2).sum(), g.parametrizations.weight.original0)
    _close(ht, hg, "second derivative")
    wn = tg.nn.utils.parametrizations._weight_norm
    v, gain = tg.tensor(RNG.standard_normal((2, 3))), tg.tensor(RNG.standard_normal((2, 1)))
    assert tg.gradcheck(lambda a, b: wn(a, b, 0), (v.requires_grad_(), gain.requires_grad_()))


def _build_sn(lib, style, cls, dim):
    fn = (
        lib.nn.utils.spectral_norm
        if style == "hook"
        else lib.nn.utils.parametrizations.spectral_norm
    )
    layer = lib.nn.Linear(3, 4) if cls == "Linear" else getattr(lib.nn, cls)(2, 3, 2)
    return fn(layer, n_power_iterations=2, dim=dim)


@pytest.mark.parametrize("style", ["parametrization", "hook"])
@pytest.mark.parametrize("cls, dim", [("Linear", None), ("ConvTranspose1d", None), ("Conv1d", 1)])
def test_spectral_norm_as_pytorch(style, cls, dim):
    t, g = _pair(lambda lib: _build_sn(lib, style, cls, dim))
    keys = list(t.state_dict())
    assert keys == list(g.state_dict())
    assert [n for n, _ in t.named_buffers()] == [n for n, _ in g.named_buffers()]
    x = RNG.standard_normal((2, 3) if cls == "Linear" else (1, 2, 5))
    for mode in (True, True, False):  # power steps in training mode only
        t.train(mode), g.train(mode)
        yt, yg = t(torch.tensor(x)), g(tg.tensor(x))
        _close(yt, yg, f"training={mode}")
        sg = g.state_dict()
        for k, v in t.state_dict().items():
            _close(v, sg[k], k)
    yt.pow(3).sum().backward()
    yg.pow(3).sum().backward()
    for (n, a), (_, b) in zip(t.named_parameters(), g.named_parameters(), strict=True):
        _close(a.grad, b.grad, n)
    if style == "hook":
        torch.nn.utils.remove_spectral_norm(t)
        tg.nn.utils.remove_spectral_norm(g)
    else:
        TP.remove_parametrizations(t, "weight")
        P.remove_parametrizations(g, "weight")
    assert list(t.state_dict()) == list(g.state_dict())
    _close(t.weight, g.weight)


def test_spectral_norm_normalises_the_largest_singular_value():
    tg.manual_seed(0)
    m = tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(5, 4)).eval()
    np.testing.assert_allclose(np.linalg.norm(_np(m.weight), 2), 1.0, rtol=1e-8)
    u = _np(m.parametrizations.weight[0]._u).copy()
    m(tg.ones(5))
    np.testing.assert_array_equal(_np(m.parametrizations.weight[0]._u), u)  # eval: no step


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@pytest.mark.parametrize("omap", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_as_pytorch(shape, omap, triv):
    t, g = _pair(lambda lib: lib.nn.Linear(shape[1], shape[0]))
    for lib, m in ((torch, t), (tg, g)):
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    assert list(t.state_dict()) == list(g.state_dict())
    sg = g.state_dict()
    for k, v in t.state_dict().items():  # what right_inverse made (a non-square base is random)
        if not (k.endswith(".base") and shape[0] != shape[1]):
            _close(v, sg[k], k)
    w = _np(g.weight)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    step = np.arange(np.prod(shape)).reshape(shape) / 50.0
    with torch.no_grad():
        t.parametrizations.weight.original.add_(torch.tensor(step))
    g.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    x = RNG.standard_normal((2, shape[1]))
    yt, yg = t(torch.tensor(x)), g(tg.tensor(x))
    _close(yt, yg)
    yt.pow(2).sum().backward()
    yg.pow(2).sum().backward()
    _close(
        t.parametrizations.weight.original.grad, g.parametrizations.weight.original.grad, rtol=1e-8
    )


def _norm_errors(lib):
    U = lib.nn.utils
    lin = lambda: lib.nn.Linear(2, 2)  # noqa: E731
    twice = lambda: U.spectral_norm(U.spectral_norm(lin()))  # noqa: E731
    return [
        (
            "iters",
            ValueError,
            "n_power_iterations",
            lambda: U.parametrizations.spectral_norm(lin(), n_power_iterations=0),
        ),
        (
            "dim",
            IndexError,
            "Dimension out of range",
            lambda: U.parametrizations.spectral_norm(lin(), dim=2),
        ),
        (
            "name",
            ValueError,
            "has no parameter or buffer with name 'xx'",
            lambda: U.parametrizations.spectral_norm(lin(), "xx"),
        ),
        (
            "no wn",
            ValueError,
            "weight_norm of 'weight' not found",
            lambda: U.remove_weight_norm(lin()),
        ),
        (
            "no sn",
            ValueError,
            "spectral_norm of 'weight' not found",
            lambda: U.remove_spectral_norm(lin()),
        ),
        ("twice", RuntimeError, "Cannot register two spectral_norm hooks", twice),
        (
            "orthogonal map",
            ValueError,
            "orthogonal_map has to be one of",
            lambda: U.parametrizations.orthogonal(lin(), orthogonal_map="qr"),
        ),
        (
            "orthogonal vector",
            ValueError,
            "Expected a matrix or batch of matrices",
            lambda: U.parametrizations.orthogonal(lin(), "bias"),
        ),
    ]


@pytest.mark.parametrize("i", range(8))
def test_norm_errors_as_pytorch(i):
    for lib in (torch, tg):
        _, kind, fragment, call = _norm_errors(lib)[i]
        with pytest.raises(kind, match=fragment):
            call()


def test_hook_weight_norm_warns_as_pytorch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        tg.nn.utils.weight_norm(tg.nn.Linear(2, 2))


# ---- functional_call ---------------------------------------------------------------------------


def _tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2, bias=False)
            self.b = lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight
            self.register_buffer("scale", lib.tensor(2.0))

        def forward(self, x):
            return self.b(self.a(x)) * self.scale

    return Tied()


W, X = RNG.standard_normal((2, 2)), RNG.standard_normal((3, 2))


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("several", [False, True])
def test_functional_call_values(tie, several):
    t, g = _pair(_tied)
    before = _np(g.a.weight).copy()
    d = {"a.weight": W}
    if several:
        d = ({"a.weight": W}, {"scale": np.array(3.0)})
    dt = (
        {k: torch.tensor(v) for k, v in d.items()}
        if not several
        else tuple({k: torch.tensor(v) for k, v in e.items()} for e in d)
    )
    dg = (
        {k: tg.tensor(v) for k, v in d.items()}
        if not several
        else tuple({k: tg.tensor(v) for k, v in e.items()} for e in d)
    )
    yt = torch.func.functional_call(t, dt, torch.tensor(X), tie_weights=tie)
    yg = tg.nn.utils.stateless.functional_call(g, dg, tg.tensor(X), tie_weights=tie)
    _close(yt, yg)
    np.testing.assert_array_equal(_np(g.a.weight), before)
    assert g.b.weight is g.a.weight and float(g.scale) == 2.0


def test_functional_call_derivatives():
    t, g = _pair(_tied)
    fc = tg.nn.utils.stateless.functional_call

    def ft(w):
        return torch.func.functional_call(t, {"a.weight": w}, (torch.tensor(X),)).pow(2).sum()

    def fg(w):
        return fc(g, {"a.weight": w}, (tg.tensor(X),)).pow(2).sum()

    wt = torch.tensor(W, requires_grad=True)
    _close(torch.autograd.grad(ft(wt), wt)[0], tg.grad(fg)(tg.tensor(W)))
    _close(torch.autograd.functional.hessian(ft, torch.tensor(W)), tg.hessian(fg)(tg.tensor(W)))


def test_functional_call_on_parametrized_names():
    t, g = _pair(lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2)))
    fc = tg.nn.utils.stateless.functional_call
    for key, value in (("weight", W), ("parametrizations.weight.original0", np.ones((2, 1)))):
        yt = torch.func.functional_call(t, {key: torch.tensor(value)}, torch.tensor(X))
        _close(yt, fc(g, {key: tg.tensor(value)}, tg.tensor(X)), key)
    _close(t(torch.tensor(X)), g(tg.tensor(X)), "unchanged afterwards")


def _fc_errors(lib):
    fc = torch.func.functional_call if lib is torch else tg.nn.utils.stateless.functional_call
    m, x, w = _tied(lib), lib.ones(2), lib.ones(2, 2)
    return [
        (
            "type",
            ValueError,
            "Expected parameter_and_buffer_dicts to be a dict",
            lambda: fc(m, 3, x),
        ),
        (
            "repeat",
            ValueError,
            "appeared in multiple dictionaries",
            lambda: fc(m, ({"scale": x}, {"scale": x}), x),
        ),
        (
            "tied",
            ValueError,
            "which are tied. Consider using tie_weights=False",
            lambda: fc(m, {"a.weight": w, "b.weight": 2 * w}, x),
        ),
        (
            "strict",
            RuntimeError,
            "Missing key\\(s\\): 'scale'",
            lambda: fc(m, {"a.weight": w}, x, strict=True),
        ),
        ("path", AttributeError, "Tied has no attribute `c`", lambda: fc(m, {"c.weight": w}, x)),
    ]


@pytest.mark.parametrize("i", range(5))
def test_functional_call_errors_as_pytorch(i):
    for lib in (torch, tg):
        _, kind, fragment, call = _fc_errors(lib)[i]
        with pytest.raises(kind, match=fragment):
            call()


# ---- init --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, groups", [((4, 2, 3), 2), ((3, 5, 3, 4), 1), ((6, 3, 2, 3, 3), 3)])
def test_dirac_as_pytorch(shape, groups):
    a = torch.nn.init.dirac_(torch.empty(shape, dtype=torch.float64), groups)
    np.testing.assert_array_equal(_np(tg.nn.init.dirac_(tg.zeros(*shape), groups)), _np(a))


def test_trunc_normal_distribution():
    """The empirical CDF against the closed form of the normal N(0.5, 2**2) truncated to
    [-1, 3] (Kolmogorov-Smirnov distance below its 0.1% critical value)."""
    gen = np.random.default_rng(1)
    n, mean, std, a, b = 20000, 0.5, 2.0, -1.0, 3.0
    w = np.sort(_np(tg.nn.init.trunc_normal_(tg.zeros(n), mean, std, a, b, generator=gen)))
    assert w.min() >= a and w.max() <= b
    phi = np.vectorize(lambda z: 0.5 * (1.0 + math.erf(z / math.sqrt(2.0))))
    lo, hi = phi((a - mean) / std), phi((b - mean) / std)
    cdf = (phi((w - mean) / std) - lo) / (hi - lo)
    ks = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert ks < 1.95 / math.sqrt(n)
    with pytest.warns(UserWarning, match="more than 2 std"):
        tg.nn.init.trunc_normal_(tg.zeros(3), mean=10.0)


def test_sparse_zeros_per_column():
    w = _np(tg.nn.init.sparse_(tg.zeros(10, 6), 0.25, std=3.0))
    assert ((w == 0).sum(0) == 3).all()  # ceil(0.25 * 10) per column, as PyTorch's
    assert 1.0 < w[w != 0].std() < 6.0


@pytest.mark.parametrize(
    "name",
    [
        "uniform",
        "normal",
        "constant",
        "eye",
        "dirac",
        "xavier_uniform",
        "xavier_normal",
        "kaiming_uniform",
        "kaiming_normal",
        "orthogonal",
        "sparse",
    ],
)
def test_deprecated_init_names_warn_as_pytorch(name):
    assert hasattr(torch.nn.init, name)
    shape = (3, 2, 3) if name == "dirac" else (3, 2)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    x = tg.zeros(*shape)
    with pytest.warns(FutureWarning, match=f"nn.init.{name}` is now deprecated"):
        assert getattr(tg.nn.init, name)(x, *args) is x


def _init_errors(lib):
    init = lib.nn.init
    return [
        (
            "dirac dims",
            ValueError,
            "Only tensors with 3, 4, or 5 dimensions",
            lambda: init.dirac_(lib.ones(2, 2)),
        ),
        (
            "dirac groups",
            ValueError,
            "divisible by groups",
            lambda: init.dirac_(lib.ones(3, 2, 2), 2),
        ),
        (
            "sparse dims",
            ValueError,
            "Only tensors with 2 dimensions",
            lambda: init.sparse_(lib.ones(2, 2, 2), 0.1),
        ),
    ]


@pytest.mark.parametrize("i", range(3))
def test_init_errors_as_pytorch(i):
    for lib in (torch, tg):
        _, kind, fragment, call = _init_errors(lib)[i]
        with pytest.raises(kind, match=fragment):
            call()


def test_parametrized_buffer_as_pytorch():
    t, g = _pair(lambda lib: lib.nn.BatchNorm1d(3))
    for lib, m, rp in ((torch, t, TP), (tg, g, P)):

        class Double(lib.nn.Module):
            def forward(self, X):
                return 2 * X

        rp.register_parametrization(m, "running_var", Double())
        m.eval()
    assert list(t.state_dict()) == list(g.state_dict())
    assert [n for n, _ in t.named_buffers()] == [n for n, _ in g.named_buffers()]
    x = RNG.standard_normal((4, 3))
    _close(t(torch.tensor(x)), g(tg.tensor(x)))
    P.remove_parametrizations(g, "running_var")
    assert type(g._buffers) is type(tg.nn.Linear(1, 1)._buffers)


def test_functional_call_updates_the_given_running_stats():
    t, g = _pair(lambda lib: lib.nn.BatchNorm1d(3))
    x = RNG.standard_normal((4, 3))
    mt, mg = torch.zeros(3, dtype=torch.float64), tg.zeros(3)
    yt = torch.func.functional_call(t, {"running_mean": mt}, torch.tensor(x))
    yg = tg.nn.utils.stateless.functional_call(g, {"running_mean": mg}, tg.tensor(x))
    _close(yt, yg)
    _close(mt, mg, "the given buffer")
    _close(t.running_mean, g.running_mean, "the module's own buffer")
