"""Attention, transformers and the activations added after PyTorch's, hunted against PyTorch
(float64): ``F.scaled_dot_product_attention`` (bool / float / causal masks, fully masked rows,
``scale``, ``enable_gqa``, broadcast batches), ``F.multi_head_attention_forward`` and
``nn.MultiheadAttention`` (packed and separate projections, ``add_bias_kv``,
``add_zero_attn``, ``batch_first``, padding masks, per-head weights), the
``nn.Transformer*`` family (post- and pre-norm, relu / gelu / callable activations, masks),
and ``softmin``, ``softshrink``, ``hardshrink``, ``threshold``, ``rrelu``, ``prelu``,
``rms_norm``, ``pixel_shuffle`` / ``pixel_unshuffle``, ``gumbel_softmax`` with their modules.
Compared: values, the gradients of a random weighting of the outputs with respect to every
input and parameter (modules load torch's state dict), one second derivative per family
(``create_graph``), ``tg.gradcheck``, state-dict keys, shapes and init, and the errors for bad
input (where PyTorch raises, or silently computes something ill-defined, tapegrad raises
naming the function).  Random ones (dropout in attention, ``rrelu`` training, Gumbel noise)
are checked by their law and by the refusal inside ``tg.trace``.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
from tapegrad import nn  # noqa: E402
from tapegrad.nn import functional as F  # noqa: E402
from tests.torch_programs import _compare, _raises  # noqa: E402

RNG = np.random.default_rng(11)


def _r(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape) + 7 * len(shape)).standard_normal(shape)


def _close(a, b, rtol=1e-10, atol=1e-12):
    a = a.detach().numpy() if isinstance(a, (tg.Tensor, torch.Tensor)) else a
    b = b.detach().numpy() if isinstance(b, (tg.Tensor, torch.Tensor)) else b
    assert np.shape(a) == np.shape(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _tg_raises(prog, fragment, torch_raises=True):
    """tapegrad raises a clear error holding ``fragment``; PyTorch raises too (or, with
    ``torch_raises=False``, gives an ill-defined number)."""
    assert (_raises(prog, "torch") is not None) == torch_raises
    e = _raises(prog, "tg")
    assert e is not None, "tapegrad gives a number"
    assert isinstance(e, (RuntimeError, ValueError, TypeError)), repr(e)
    assert fragment in str(e), f"{fragment!r} not in {e}"


def _hvp(prog, arrays, rtol=1e-9, atol=1e-12):
    """prog(lib, *leaves) -> scalar: a Hessian-vector product (create_graph) in both."""
    vs = [RNG.standard_normal(np.shape(a)) for a in arrays]
    out = []
    for lib in (tg, torch):
        xs = [lib.tensor(np.array(a, dtype=float), requires_grad=True) for a in arrays]
        g = lib.autograd.grad(prog(lib, *xs), xs, create_graph=True)
        s = sum((gi * lib.tensor(v)).sum() for gi, v in zip(g, vs, strict=True))
        out.append(lib.autograd.grad(s, xs, allow_unused=True))
    for a, b in zip(*out, strict=True):
        _close(a, b, rtol=rtol, atol=atol)


def _load(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(ours.state_dict()[k].shape) == tuple(v.shape), k
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})


def _agree(ours, theirs, arrays, kw=None, rtol=1e-10):
    """Same state -> same outputs (every tensor of a tuple result) and the same gradients of
    the inputs and of every parameter."""
    kw = kw or {}
    xa = [tg.tensor(a, requires_grad=True) for a in arrays]
    xb = [torch.tensor(a, requires_grad=True) for a in arrays]
    ya, yb = (
        ours(*xa, **kw(tg) if callable(kw) else kw),
        theirs(*xb, **kw(torch) if callable(kw) else kw),
    )
    ya, yb = (ya, yb) if isinstance(yb, tuple) else ((ya,), (yb,))
    la, lb = 0.0, 0.0
    for k, (a, b) in enumerate(zip(ya, yb, strict=True)):
        if b is None:
            assert a is None
            continue
        _close(a, b, rtol=rtol)
        w = np.random.default_rng(k).standard_normal(tuple(b.shape))
        if np.isfinite(b.detach().numpy()).all():
            la = la + (a * tg.tensor(w)).sum()
            lb = lb + (b * torch.tensor(w)).sum()
    la.backward()
    lb.backward()
    for a, b in zip(xa, xb, strict=True):
        _close(a.grad, b.grad, rtol=rtol)
    theirs_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(theirs_params)
    for name, p in ours.named_parameters():
        _close(p.grad, theirs_params[name].grad, rtol=rtol)


# ---- scaled dot-product attention ----------------------------------------------------------------

_DEAD = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
_FMASK = np.where(_r(2, 1, 3, 5) > 0.8, -np.inf, _r(2, 1, 3, 5, seed=1))

SDPA = {
    "plain": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), {}),
    "3d": ((2, 3, 4), (2, 5, 4), (2, 5, 3), {}),
    "unbatched": ((3, 4), (5, 4), (5, 2), {}),
    "causal_L<S": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), dict(is_causal=True)),
    "causal_L>S": ((1, 2, 5, 4), (1, 2, 3, 4), (1, 2, 3, 2), dict(is_causal=True)),
    "bool_mask_dead_row": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), dict(attn_mask=_DEAD)),
    "float_mask": ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 6), dict(attn_mask=_FMASK)),
    "scale": ((2, 3, 4), (2, 5, 4), (2, 5, 3), dict(scale=0.3)),
    "gqa": ((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3), dict(enable_gqa=True)),
    "gqa_same": ((1, 2, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3), dict(enable_gqa=True)),
    "broadcast_kv": ((2, 2, 3, 4), (1, 1, 5, 4), (1, 1, 5, 6), dict(dropout_p=0.0)),
}


@pytest.mark.parametrize("case", list(SDPA))
def test_sdpa_values_and_gradients(case):
    qs, ks, vs, kw = SDPA[case]

    def prog(L):
        kwl = dict(kw)
        if "attn_mask" in kwl:
            m = kwl["attn_mask"]
            kwl["attn_mask"] = L.B(m) if m.dtype == bool else L.T(m, rg=False)
        return L.F.scaled_dot_product_attention(L.T(_r(*qs)), L.T(_r(*ks)), L.T(_r(*vs)), **kwl)

    _compare(prog)


def test_sdpa_float_mask_gradient_and_numpy_masks():
    m = _r(3, 5, seed=3)
    _compare(
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(2, 3, 4)), L.T(_r(2, 5, 4)), L.T(_r(2, 5, 3)), attn_mask=L.T(m)
        )
    )
    # a mask leaf with -inf entries and a fully masked row (zero weights and gradients there)
    m = _r(3, 5, seed=4)
    m[0, 1] = -np.inf
    m[2] = -np.inf
    _compare(
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(2, 3, 4)), L.T(_r(2, 5, 4)), L.T(_r(2, 5, 3)), attn_mask=L.T(m)
        )
    )
    # plain NumPy masks are read with their dtype (a bool array is not an additive 0 / 1 bias)
    q, k, v = _r(2, 3, 4), _r(2, 5, 4), _r(2, 5, 3)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(_DEAD)
    )
    _close(F.scaled_dot_product_attention(q, k, v, attn_mask=_DEAD), ref)


def test_sdpa_second_derivative_and_gradcheck():
    def prog(lib, q, k, v, m):
        return (lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m) ** 2).sum()

    _hvp(prog, [_r(2, 3, 4), _r(2, 5, 4), _r(2, 5, 3), _r(3, 5, seed=4)])
    assert tg.gradcheck(
        lambda q, k: F.scaled_dot_product_attention(q, k, k, is_causal=True),
        (tg.tensor(_r(2, 3), requires_grad=True), tg.tensor(_r(4, 3), requires_grad=True)),
    )


SDPA_ERRORS = {
    "1d": (lambda L: L.F.scaled_dot_product_attention(L.T(_r(4)), L.T(_r(4)), L.T(_r(4))), "2"),
    "int_mask": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(3, 4)), L.T(_r(3, 4)), L.T(_r(3, 4)), attn_mask=L.I(np.ones((3, 3)))
        ),
        "bool and floating",
    ),
    "gqa_heads": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(1, 4, 3, 2)), L.T(_r(1, 3, 5, 2)), L.T(_r(1, 3, 5, 2)), enable_gqa=True
        ),
        "must divide",
    ),
    "heads_without_gqa": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(1, 4, 3, 2)), L.T(_r(1, 2, 5, 2)), L.T(_r(1, 2, 5, 2))
        ),
        "",
    ),
    "key_dim": (
        lambda L: L.F.scaled_dot_product_attention(L.T(_r(3, 4)), L.T(_r(5, 3)), L.T(_r(5, 4))),
        "key (..., S, E)",
    ),
    "mask_shape": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(3, 4)), L.T(_r(5, 4)), L.T(_r(5, 4)), attn_mask=L.B(np.ones((2, 5), bool))
        ),
        "does not broadcast",
    ),
    "mask_and_causal": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(3, 4)), L.T(_r(3, 4)), L.T(_r(3, 4)), L.T(_r(3, 3)), is_causal=True
        ),
        "not both",
    ),
    "dropout_p": (
        lambda L: L.F.scaled_dot_product_attention(
            L.T(_r(3, 4)), L.T(_r(3, 4)), L.T(_r(3, 4)), dropout_p=1.5
        ),
        "between 0 and 1",
    ),
}


@pytest.mark.parametrize("case", list(SDPA_ERRORS))
def test_sdpa_errors(case):
    prog, fragment = SDPA_ERRORS[case]
    _tg_raises(prog, fragment)


def test_sdpa_refuses_a_value_of_another_length_than_the_key():
    """PyTorch's CPU kernel accepts it and reads past the value (heap corruption): not run
    there.  (Without inputs that require grad it also accepts an attn_mask with is_causal=True
    and gives neither result; tapegrad refuses both, see test_sdpa_errors.)"""
    q, k, v = (tg.tensor(_r(1, 1, n, 4)) for n in (3, 5, 6))
    with pytest.raises(
        RuntimeError, match=r"scaled_dot_product_attention: .*value \(\.\.\., S, Ev\)"
    ):
        F.scaled_dot_product_attention(q, k, v)


def test_sdpa_dropout_is_random_and_refused_in_a_trace():
    q = tg.tensor(_r(2, 3, 4))
    v = tg.tensor(np.ones((2, 3, 4)))
    tg.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    # each row of the weights sums to 1 before dropout: kept weights are doubled
    assert out.shape == (2, 3, 4) and not np.allclose(out.numpy(), 1.0)
    assert np.all(out.numpy() >= 0) and out.numpy().max() <= 2.0 + 1e-12
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention"):
        tg.trace(lambda x: F.scaled_dot_product_attention(x, x, x, dropout_p=0.5), q)
    tr = tg.trace(lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True), q)
    _close(tr(q), F.scaled_dot_product_attention(q, q, q, is_causal=True))


# ---- multi-head attention ------------------------------------------------------------------------


def _kpm(n, s):
    m = np.zeros((n, s), bool)
    m[0, -1] = True
    return m


MHA = {
    # constructor kwargs, (query, key, value) shapes, forward kwargs builder(lib)
    "weights_masks": (
        dict(embed_dim=4, num_heads=2),
        ((3, 2, 4), (5, 2, 4), (5, 2, 4)),
        lambda L: dict(
            key_padding_mask=L.tensor(_kpm(2, 5)), attn_mask=L.tensor(_DEAD[:, :5] & False)
        ),
    ),
    "batch_first_float_3d_mask_sdpa": (
        dict(embed_dim=4, num_heads=2, batch_first=True),
        ((2, 3, 4), (2, 5, 4), (2, 5, 4)),
        lambda L: dict(attn_mask=L.tensor(_r(4, 3, 5)), need_weights=False),
    ),
    "kdim_vdim_bias_kv_zero_attn": (
        dict(embed_dim=4, num_heads=2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True),
        ((3, 2, 4), (5, 2, 3), (5, 2, 5)),
        lambda L: dict(
            key_padding_mask=L.tensor(_kpm(2, 5)),
            attn_mask=L.tensor(_DEAD[:, :5]),
            average_attn_weights=False,
        ),
    ),
    "no_bias": (dict(embed_dim=6, num_heads=3, bias=False), ((3, 2, 6),) * 3, lambda L: {}),
    "unbatched": (
        dict(embed_dim=4, num_heads=2),
        ((3, 4), (5, 4), (5, 4)),
        lambda L: dict(key_padding_mask=L.tensor(np.array([0, 0, 1, 0, 0], bool))),
    ),
    "causal_sdpa": (
        dict(embed_dim=4, num_heads=1, batch_first=True),
        ((2, 4, 4),) * 3,
        lambda L: dict(
            attn_mask=L.tensor(np.triu(np.full((4, 4), -np.inf), 1)),
            is_causal=True,
            need_weights=False,
        ),
    ),
    "padded_batch_element_sdpa": (
        dict(embed_dim=4, num_heads=2),
        ((3, 2, 4), (5, 2, 4), (5, 2, 4)),
        lambda L: dict(
            key_padding_mask=L.tensor(np.array([[0] * 5, [1] * 5], bool)), need_weights=False
        ),
    ),
}


@pytest.mark.parametrize("case", list(MHA))
def test_multihead_attention_matches_torch(case):
    ctor, shapes, fwd = MHA[case]
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(**ctor, dtype=torch.float64)
    with torch.no_grad():  # non-zero biases, so that every gradient is exercised
        for p in theirs.parameters():
            if p.ndim == 1 or p.ndim == 3:
                p.copy_(torch.randn(p.shape))
    ours = nn.MultiheadAttention(**ctor)
    _load(ours, theirs)
    arrays = [_r(*s, seed=i) for i, s in enumerate(shapes)]
    _agree(ours, theirs, arrays, fwd)


def test_multihead_attention_fully_masked_row_gives_nan_weights_as_torch():
    """need_weights=True: PyTorch's plain softmax gives NaN for a query with every key
    masked; the SDPA path (need_weights=False) gives zeros (compared above)."""
    torch.manual_seed(1)
    theirs = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    ours = nn.MultiheadAttention(4, 2)
    _load(ours, theirs)
    x = _r(3, 2, 4)
    kpm = np.array([[0, 0, 0], [1, 1, 1]], bool)
    a = ours(tg.tensor(x), tg.tensor(x), tg.tensor(x), key_padding_mask=kpm)
    b = theirs(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(kpm))
    for u, w in zip(a, b, strict=True):
        _close(u, w)
    assert np.isnan(a[1].numpy()[1]).all()


def test_multihead_attention_init_state_and_eval_dropout():
    tg.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, dropout=0.5)
    t = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, dropout=0.5)
    assert list(m.state_dict()) == list(t.state_dict())
    sd = m.state_dict()
    assert sd["in_proj_weight" if "in_proj_weight" in sd else "q_proj_weight"].shape == (8, 8)
    assert sd["k_proj_weight"].shape == (8, 3) and sd["v_proj_weight"].shape == (8, 5)
    assert not np.any(sd["in_proj_bias"]) and not np.any(sd["out_proj.bias"])
    assert np.abs(sd["k_proj_weight"]).max() <= math.sqrt(6 / 11)
    assert np.abs(sd["out_proj.weight"]).max() <= 1 / math.sqrt(8)
    assert sd["bias_k"].shape == (1, 1, 8) and np.any(sd["bias_k"])
    packed = nn.MultiheadAttention(8, 2).state_dict()["in_proj_weight"]
    assert packed.shape == (24, 8) and np.abs(packed).max() <= math.sqrt(6 / 32)
    assert np.abs(packed).max() > 0.6 * math.sqrt(6 / 32)
    # eval(): dropout off, deterministic
    x = tg.tensor(_r(3, 2, 8))
    m.eval()
    k, v = tg.tensor(_r(3, 2, 3)), tg.tensor(_r(3, 2, 5))
    _close(m(x, k, v)[0], m(x, k, v)[0], rtol=0)
    with pytest.raises(RuntimeError, match="multi_head_attention_forward"):
        tg.trace(lambda q: m.train()(q, k, v)[0], x)


def test_multi_head_attention_forward_functional():
    e, h = 4, 2
    w_in, b_in, w_out, b_out = _r(3 * e, e), _r(3 * e), _r(e, e, seed=1), _r(e, seed=2)

    def prog(L):
        x = L.T(_r(3, 2, e))
        return L.F.multi_head_attention_forward(
            x,
            x,
            x,
            e,
            h,
            L.T(w_in),
            L.T(b_in),
            None,
            None,
            False,
            0.0,
            L.T(w_out),
            L.T(b_out),
            attn_mask=L.B(np.triu(np.ones((3, 3), bool), 1)),
            average_attn_weights=False,
        )

    _compare(prog)


def test_multi_head_attention_forward_static_kv_and_separate_weights():
    e, h, n = 4, 2, 2
    ws = [_r(e, e, seed=i) for i in range(4)]

    def prog(L):
        q = L.T(_r(3, n, e))
        kv = L.T(_r(5, n, 3))
        return L.F.multi_head_attention_forward(
            q,
            kv,
            kv,
            e,
            h,
            None,
            L.T(_r(3 * e)),
            None,
            None,
            True,
            0.9,  # dropout_p, off with training=False
            L.T(ws[0]),
            None,
            use_separate_proj_weight=True,
            q_proj_weight=L.T(ws[1]),
            k_proj_weight=L.T(_r(e, 3)),
            v_proj_weight=L.T(_r(e, 3, seed=1)),
            static_k=L.T(_r(n * h, 6, e // h)),
            static_v=L.T(_r(n * h, 6, e // h, seed=2)),
            key_padding_mask=L.B(np.eye(n, 6, dtype=bool)),
            training=False,
        )

    _compare(prog)


def test_multihead_attention_second_derivative():
    e = 4
    w_in, w_out = _r(3 * e, e), _r(e, e, seed=1)

    def prog(lib, x, b):
        out, w = lib.nn.functional.multi_head_attention_forward(
            x, x, x, e, 2, lib.tensor(w_in), b, None, None, False, 0.0, lib.tensor(w_out), None
        )
        return (out**2).sum() + (w**3).sum()

    _hvp(prog, [_r(3, 2, e), _r(3 * e)], atol=1e-9)  # (entries up to 200 cancel to ~1e-12)


MHA_ERRORS = {
    "heads": (lambda L: L.nn.MultiheadAttention(5, 2), "divisible"),
    "mask_3d_shape": (
        lambda L: L.nn.MultiheadAttention(4, 2)(
            *(L.tensor(_r(3, 2, 4)),) * 3, attn_mask=L.tensor(np.zeros((2, 3, 3)))
        ),
        "attn_mask",
    ),
    "kpm_shape": (
        lambda L: L.nn.MultiheadAttention(4, 2)(
            *(L.tensor(_r(3, 2, 4)),) * 3, key_padding_mask=L.tensor(np.zeros((2, 4), bool))
        ),
        "key_padding_mask",
    ),
    "causal_without_mask": (
        lambda L: L.nn.MultiheadAttention(4, 2)(*(L.tensor(_r(3, 2, 4)),) * 3, is_causal=True),
        "need attn_mask",
    ),
    "embed_dim": (
        lambda L: L.nn.MultiheadAttention(4, 2)(*(L.tensor(_r(3, 2, 6)),) * 3),
        "",
    ),
    "4d_query": (
        lambda L: L.nn.MultiheadAttention(4, 2)(*(L.tensor(_r(1, 3, 2, 4)),) * 3),
        "unbatched 2D or batched 3D",
    ),
}


@pytest.mark.parametrize("case", list(MHA_ERRORS))
def test_multihead_attention_errors(case):
    prog, fragment = MHA_ERRORS[case]
    _tg_raises(lambda L: prog(L.m), fragment)


# ---- transformers --------------------------------------------------------------------------------


def _pair(make):
    """A torch module (float64, eval) and the tapegrad one holding its state."""
    torch.manual_seed(0)
    theirs = make(torch).double().eval()
    ours = make(tg).eval()
    _load(ours, theirs)
    return ours, theirs


_CAUSAL4 = np.triu(np.full((4, 4), -np.inf), 1)


def test_transformer_encoder_layer_post_norm_relu():
    ours, theirs = _pair(lambda L: L.nn.TransformerEncoderLayer(4, 2, dim_feedforward=6))
    _agree(
        ours,
        theirs,
        [_r(4, 2, 4)],
        lambda L: dict(src_mask=L.tensor(_CAUSAL4), src_key_padding_mask=L.tensor(_kpm(2, 4))),
    )


def test_transformer_encoder_layer_pre_norm_gelu_batch_first_no_bias():
    ours, theirs = _pair(
        lambda L: L.nn.TransformerEncoderLayer(
            4,
            2,
            6,
            activation="gelu",
            batch_first=True,
            norm_first=True,
            bias=False,
            layer_norm_eps=1e-3,
        )
    )
    _agree(ours, theirs, [_r(2, 4, 4)])


def test_transformer_encoder_layer_callable_activation():
    ours, theirs = _pair(
        lambda L: L.nn.TransformerEncoderLayer(4, 2, 6, activation=L.nn.functional.tanh)
    )
    _agree(ours, theirs, [_r(3, 2, 4)])


def test_transformer_encoder_stack_with_norm_and_causal_hint():
    def make(L):
        layer = L.nn.TransformerEncoderLayer(4, 2, 6, batch_first=True)
        return L.nn.TransformerEncoder(layer, 2, norm=L.nn.LayerNorm(4), enable_nested_tensor=False)

    ours, theirs = _pair(make)
    _agree(ours, theirs, [_r(2, 4, 4)], lambda L: dict(mask=L.tensor(_CAUSAL4), is_causal=True))


def test_transformer_decoder_layer_and_stack():
    ours, theirs = _pair(lambda L: L.nn.TransformerDecoderLayer(4, 2, 6, norm_first=True))
    kw = lambda L: dict(  # noqa: E731
        tgt_mask=L.tensor(_CAUSAL4),
        memory_key_padding_mask=L.tensor(_kpm(2, 3)),
        tgt_key_padding_mask=L.tensor(_kpm(2, 4)),
    )
    _agree(ours, theirs, [_r(4, 2, 4), _r(3, 2, 4, seed=5)], kw)

    def make(L):
        layer = L.nn.TransformerDecoderLayer(4, 2, 6, activation="gelu", batch_first=True)
        return L.nn.TransformerDecoder(layer, 2, norm=L.nn.LayerNorm(4))

    ours, theirs = _pair(make)
    _agree(
        ours,
        theirs,
        [_r(2, 4, 4), _r(2, 3, 4, seed=5)],
        lambda L: dict(tgt_mask=L.tensor(_CAUSAL4)),
    )


def test_transformer_full_model():
    def make(L):
        return L.nn.Transformer(
            d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=6
        )

    ours, theirs = _pair(make)
    kw = lambda L: dict(  # noqa: E731
        tgt_mask=L.nn.Transformer.generate_square_subsequent_mask(4),
        src_key_padding_mask=L.tensor(_kpm(2, 3)),
        memory_key_padding_mask=L.tensor(_kpm(2, 3)),
    )
    _agree(ours, theirs, [_r(3, 2, 4), _r(4, 2, 4, seed=5)], kw)
    _close(
        nn.Transformer.generate_square_subsequent_mask(5),
        torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64),
    )


def test_transformer_init_matches_torch_law():
    tg.manual_seed(0)
    model = nn.Transformer(
        d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16
    )
    ref = torch.nn.Transformer(8, 2, 1, 1, 16)
    assert list(model.state_dict()) == list(ref.state_dict())
    for name, p in model.named_parameters():
        v = p.numpy()
        if v.ndim > 1:  # Glorot-uniform everywhere
            bound = math.sqrt(6 / (v.shape[0] + v.shape[1]))
            assert np.abs(v).max() <= bound and np.abs(v).max() > 0.5 * bound, name
        elif "norm" in name and name.endswith("weight"):
            assert np.all(v == 1), name


def test_transformer_training_dropout_and_trace():
    tg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.5)
    x = tg.tensor(_r(3, 2, 4))
    a, b = layer(x), layer(x)
    assert not np.allclose(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="trace"):
        tg.trace(lambda u: layer(u), x)
    layer.eval()
    tr = tg.trace(lambda u: layer(u), x)
    _close(tr(x), layer(x))


def test_transformer_second_derivative():
    ours, theirs = _pair(lambda L: L.nn.TransformerEncoderLayer(4, 2, 6, activation="gelu"))
    x = _r(3, 2, 4)
    v = RNG.standard_normal(x.shape)
    res = []
    for lib, m in ((tg, ours), (torch, theirs)):
        xt = lib.tensor(x, requires_grad=True)
        # (PyTorch's CPU flash kernel has no double backward: its math kernel as reference)
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            (g,) = lib.autograd.grad((m(xt) ** 2).sum(), [xt], create_graph=True)
        res.append(lib.autograd.grad((g * lib.tensor(v)).sum(), [xt])[0])
    _close(*res, rtol=1e-8)


TRANSFORMER_ERRORS = {
    "activation": (lambda L: L.nn.TransformerEncoderLayer(4, 2, 6, activation="tanh"), "relu/gelu"),
    "batch": (
        lambda L: L.nn.Transformer(4, 2, 1, 1, 6)(L.tensor(_r(3, 2, 4)), L.tensor(_r(3, 1, 4))),
        "batch number",
    ),
    "features": (
        lambda L: L.nn.Transformer(4, 2, 1, 1, 6)(L.tensor(_r(3, 2, 5)), L.tensor(_r(3, 2, 5))),
        "d_model",
    ),
    "causal_hint_without_mask": (
        lambda L: L.nn.TransformerEncoderLayer(4, 2, 6)(L.tensor(_r(3, 2, 4)), is_causal=True),
        "need attn_mask",
    ),
}


@pytest.mark.parametrize("case", list(TRANSFORMER_ERRORS))
def test_transformer_errors(case):
    prog, fragment = TRANSFORMER_ERRORS[case]
    _tg_raises(lambda L: prog(L.m), fragment)


# ---- the smaller activations and layers ----------------------------------------------------------

_X = np.array([[-2.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.5], [0.7, -0.7, 3.0, -3.0, 0.5, -0.5, 0.1]])

SMALL = {
    "softmin": lambda L: L.F.softmin(L.T(_X), dim=1),
    "softmin_dim0": lambda L: L.F.softmin(L.T(_r(3, 2, 2)), dim=0),
    "softshrink": lambda L: L.F.softshrink(L.T(_X)),
    "softshrink_0": lambda L: L.F.softshrink(L.T(_X), 0.0),
    "hardshrink": lambda L: L.F.hardshrink(L.T(_X)),
    "hardshrink_2": lambda L: L.F.hardshrink(L.T(_X), lambd=1.5),
    "threshold": lambda L: L.F.threshold(L.T(_X), 0.25, -7.0),
    "rrelu_eval": lambda L: L.F.rrelu(L.T(_X), 0.1, 0.4),
    "prelu_shared": lambda L: L.F.prelu(L.T(_X), L.T([0.3])),
    "prelu_channels": lambda L: L.F.prelu(L.T(_r(2, 3, 2, 2)), L.T([0.1, -0.2, 0.5])),
    "prelu_1d": lambda L: L.F.prelu(L.T(_X[0]), L.T([0.3])),
    "prelu_0d_weight": lambda L: L.F.prelu(L.T(_X), L.T(0.2)),
    "prelu_scalar_input": lambda L: L.F.prelu(L.T(-1.5), L.T([0.2])),
    "rms_norm": lambda L: L.F.rms_norm(L.T(_r(2, 3, 4)), (4,), L.T(_r(4)), eps=1e-6),
    "rms_norm_eps_none_2d": lambda L: L.F.rms_norm(L.T(_r(2, 3, 4)), (3, 4)),
    # (an int normalized_shape, as F.layer_norm takes; PyTorch's rms_norm wants a tuple)
    "rms_norm_int_shape": lambda L: L.F.rms_norm(
        L.T(_r(2, 3)), 3 if L.name == "tg" else (3,), L.T(_r(3))
    ),
    "pixel_shuffle": lambda L: L.F.pixel_shuffle(L.T(_r(2, 8, 2, 3)), 2),
    "pixel_shuffle_3d": lambda L: L.F.pixel_shuffle(L.T(_r(9, 1, 2)), 3),
    "pixel_shuffle_5d": lambda L: L.F.pixel_shuffle(L.T(_r(2, 1, 4, 2, 1)), 2),
    "pixel_unshuffle": lambda L: L.F.pixel_unshuffle(L.T(_r(2, 2, 4, 6)), 2),
    "pixel_unshuffle_3d": lambda L: L.F.pixel_unshuffle(L.T(_r(1, 3, 3)), 3),
    "celu": lambda L: L.F.celu(L.T(_X), 0.5),
}


@pytest.mark.parametrize("case", list(SMALL))
def test_small_functions_match_torch(case):
    _compare(SMALL[case])


MODULES = {
    "Softmin": (lambda L: L.nn.Softmin(dim=-1), _X),
    "Softshrink": (lambda L: L.nn.Softshrink(0.25), _X),
    "Hardshrink": (lambda L: L.nn.Hardshrink(0.25), _X),
    "Threshold": (lambda L: L.nn.Threshold(0.0, 2.0), _X),
    "RReLU_eval": (lambda L: L.nn.RReLU(0.2, 0.3).eval(), _X),
    "PReLU": (lambda L: L.nn.PReLU(), _X),
    "PReLU_channels": (lambda L: L.nn.PReLU(3, init=0.1), _r(2, 3, 4)),
    "RMSNorm": (lambda L: L.nn.RMSNorm([3, 4], eps=1e-5), _r(2, 3, 4)),
    "RMSNorm_no_affine": (lambda L: L.nn.RMSNorm(4, elementwise_affine=False), _r(2, 3, 4)),
    "PixelShuffle": (lambda L: L.nn.PixelShuffle(2), _r(1, 8, 2, 2)),
    "PixelUnshuffle": (lambda L: L.nn.PixelUnshuffle(2), _r(1, 2, 4, 2)),
}


@pytest.mark.parametrize("case", list(MODULES))
def test_small_modules_match_torch(case):
    make, x = MODULES[case]
    theirs = make(torch).double()
    if case.startswith("PReLU") or case.startswith("RMSNorm"):
        with torch.no_grad():
            for p in theirs.parameters():
                p.copy_(p + torch.randn(p.shape))
    ours = make(tg)
    if case == "PReLU_channels":
        assert np.all(ours.weight.numpy() == 0.1)
    _load(ours, theirs)
    _agree(ours, theirs, [x])


def test_small_second_derivatives_and_gradcheck():
    def prog(lib, x, w):
        F_ = lib.nn.functional
        y = F_.rms_norm(x, (3,), w, eps=1e-3)
        return (F_.prelu(y, w[:1]) ** 3).sum() + (F_.softmin(x, dim=0) ** 2).sum()

    _hvp(prog, [_r(2, 3), _r(3)])
    x = tg.tensor(_r(2, 4, 2, 2), requires_grad=True)
    assert tg.gradcheck(lambda u: F.pixel_shuffle(u, 2) ** 2, (x,))
    assert tg.gradcheck(
        lambda u, w: F.rms_norm(u, (2,), w),
        (tg.tensor(_r(3, 2), requires_grad=True), tg.tensor(_r(2), requires_grad=True)),
    )


SMALL_ERRORS = {
    "prelu_channels": (lambda L: L.F.prelu(L.T(_r(2, 3, 4)), L.T(np.ones(4))), "Mismatch"),
    "prelu_1d_channels": (lambda L: L.F.prelu(L.T(_r(3)), L.T(np.ones(3))), "Mismatch"),
    "prelu_2d_weight": (lambda L: L.F.prelu(L.T(_r(2, 3)), L.T(np.ones((1, 3)))), "1D"),
    "softshrink_negative": (lambda L: L.F.softshrink(L.T(_r(3)), -1.0), "lambd"),
    "pixel_shuffle_channels": (lambda L: L.F.pixel_shuffle(L.T(_r(5, 2, 2)), 2), "divisible"),
    "pixel_shuffle_2d": (lambda L: L.F.pixel_shuffle(L.T(_r(4, 2)), 2), "at least 3"),
    "pixel_shuffle_factor": (lambda L: L.F.pixel_shuffle(L.T(_r(4, 2, 2)), 0), "positive"),
    "pixel_unshuffle_h": (lambda L: L.F.pixel_unshuffle(L.T(_r(1, 3, 2)), 2), "height"),
    "pixel_unshuffle_w": (lambda L: L.F.pixel_unshuffle(L.T(_r(1, 2, 3)), 2), "width"),
    "rrelu_bounds": (lambda L: L.F.rrelu(L.T(_r(3)), 0.5, 0.2), "upper bound"),
    "rms_norm_shape": (lambda L: L.F.rms_norm(L.T(_r(2, 4)), (3,)), "normalized_shape"),
    "rms_norm_weight": (
        lambda L: L.F.rms_norm(L.T(_r(2, 4)), (4,), L.T(np.ones(3))),
        "same shape as normalized_shape",
    ),
}


@pytest.mark.parametrize("case", list(SMALL_ERRORS))
def test_small_errors(case):
    prog, fragment = SMALL_ERRORS[case]
    _tg_raises(prog, fragment)


def test_rrelu_training_draws_slopes_in_range_and_refuses_trace():
    x = tg.tensor(np.linspace(-3, 3, 40), requires_grad=True)
    tg.manual_seed(3)
    m = nn.RReLU(0.1, 0.3)
    y = m(x)
    y.sum().backward()
    xv, yv, g = x.numpy(), y.numpy(), x.grad.numpy()
    neg = xv < 0
    slopes = yv[neg] / xv[neg]
    assert np.all((slopes >= 0.1) & (slopes <= 0.3)) and np.ptp(slopes) > 0.05
    _close(g[neg], slopes)
    _close(yv[~neg], xv[~neg])
    _close(g[~neg], np.ones((~neg).sum()))
    with pytest.raises(RuntimeError, match="rrelu"):
        tg.trace(lambda u: F.rrelu(u, training=True), x)


def test_gumbel_softmax():
    logits = tg.tensor(_r(3, 5), requires_grad=True)
    tg.manual_seed(5)
    y = F.gumbel_softmax(logits, tau=0.7)
    assert y.shape == (3, 5)
    _close(y.sum(dim=-1), np.ones(3))
    # the soft sample is softmax((logits + g) / tau) for the noise g it drew: recover g (up to
    # a constant per row, which softmax ignores) and compare value and gradient with torch's
    g = 0.7 * np.log(y.numpy()) - logits.numpy()
    lt = torch.tensor(logits.numpy(), requires_grad=True)
    ref = torch.softmax((lt + torch.tensor(g)) / 0.7, dim=-1)
    _close(y, ref)
    w = _r(3, 5, seed=9)
    (y * tg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    _close(logits.grad, lt.grad)
    # hard=True: a one-hot of the sample's argmax, with the soft sample's gradient
    logits.grad = None
    tg.manual_seed(5)
    h = F.gumbel_softmax(logits, tau=0.7, hard=True)
    hv = h.numpy()
    assert set(np.unique(hv)) <= {0.0, 1.0} and np.all(hv.sum(-1) == 1)
    assert np.all(hv.argmax(-1) == y.numpy().argmax(-1))
    (h * tg.tensor(w)).sum().backward()
    _close(logits.grad, lt.grad)
    # other dim
    assert np.all(F.gumbel_softmax(logits, hard=True, dim=0).numpy().sum(0) == 1)
    with pytest.raises(ValueError, match="tau"):
        F.gumbel_softmax(logits, tau=0.0)
    with pytest.raises(RuntimeError, match="gumbel_softmax"):
        tg.trace(lambda u: F.gumbel_softmax(u), logits)


def test_inplace_refused():
    with pytest.raises(TypeError, match="inplace"):
        nn.Threshold(0.0, 1.0, inplace=True)
    with pytest.raises(TypeError, match="inplace"):
        F.rrelu(tg.tensor(_X), inplace=True)


def test_shrink_and_threshold_replay_in_a_trace_for_other_inputs():
    """Their kinks are evaluated by op kernels: a trace recorded at one input replays another
    (other sides of the thresholds, infinities, nan) with PyTorch's values and gradients."""
    x1 = np.array([-1.0, 0.2, 0.7, 0.25, -0.5, 0.5])
    x2 = np.array([0.1, -0.9, 0.3, -np.inf, np.inf, np.nan])
    x3 = np.array([0.6, -0.6, -0.1, 0.25, 0.5, -0.5])
    tf = torch.nn.functional
    for ours, theirs in (
        (F.hardshrink, tf.hardshrink),
        (lambda u: F.threshold(u, 0.25, -3.0), lambda u: tf.threshold(u, 0.25, -3.0)),
        (F.softshrink, tf.softshrink),
    ):
        tr = tg.trace(ours, tg.tensor(x1))
        for x in (x1, x2):
            _close(np.asarray(tr(tg.tensor(x))), theirs(torch.tensor(x)))
        tr = tg.trace(lambda u, f=ours: (f(u) * u).sum(), x1)
        xt = torch.tensor(x3, requires_grad=True)
        (theirs(xt) * xt).sum().backward()
        _close(np.asarray(tr.grad(x3)), xt.grad)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (getattr(F, n), getattr(torch.nn.functional, n))
        for n in (
            "softmin",
            "threshold",
            "rrelu",
            "rms_norm",
            "gumbel_softmax",
            "multi_head_attention_forward",
        )
    ]
    + [
        (getattr(getattr(nn, c), m), getattr(getattr(torch.nn, c), m))
        for c in (
            "MultiheadAttention",
            "TransformerEncoderLayer",
            "TransformerDecoderLayer",
            "TransformerEncoder",
            "TransformerDecoder",
            "Transformer",
        )
        for m in ("__init__", "forward")
    ]
    + [
        (getattr(nn, c).__init__, getattr(torch.nn, c).__init__)
        for c in (
            "Softmin",
            "Softshrink",
            "Hardshrink",
            "Threshold",
            "RReLU",
            "PReLU",
            "RMSNorm",
            "PixelShuffle",
            "PixelUnshuffle",
        )
    ],
)
def test_signatures_are_pytorchs(ours, theirs):
    import inspect

    def params(f):
        out = []
        for p in inspect.signature(f).parameters.values():
            d = p.default
            if getattr(d, "__name__", None) == "relu":  # F.relu in either library
                d = "relu"
            out.append((p.name, d))
        return out

    assert params(ours) == params(theirs)
