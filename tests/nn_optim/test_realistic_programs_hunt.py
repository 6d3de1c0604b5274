"""Realistic research programs, written twice (tapegrad and PyTorch, float64, same data), where
features compose: values, gradients and second derivatives are compared (rtol 1e-10 unless a
program is iterative or ill-conditioned; then the tolerance is said).

Hunted, against PyTorch (``torch.autograd`` with ``create_graph``, ``torch.func``,
``torch.optim``, ``torch.nn`` modules whose state dicts are loaded into tapegrad's):
- a PINN: nested ``autograd.grad(create_graph=True)`` with respect to inputs (u_t - u_xx),
  the loss's gradient and a third derivative in the parameters; the same per sample with
  ``tg.func.jacrev`` / ``hessian`` under ``tg.func.vmap``; as NumPy code with ``tg.grad`` /
  ``tg.hessian`` inside, traced and replayed far away (``retrace=True``: tanh's derivative
  rule guards the side of |x| = 1; without it a replay there raises RetraceRequired);
  per-sample gradients and Jacobians of a module through ``functional_call``;
- MAML: inner SGD steps by hand (and through ``functional_call``), second-order and
  first-order (detached inner gradients), batched over tasks with ``vmap(grad)``;
- normalizing flows: a linear flow with ``slogdet``, RealNVP couplings written into clones,
  a planar flow's log|det|, a ``logsumexp`` mixture; gradients and a gradient-norm gradient;
- a Laplace approximation: MAP by ``tg.optim.LBFGS`` (with and without strong Wolfe), the
  Hessian of the negative log posterior by ``tg.hessian`` on NumPy code, ``cholesky``, the log
  marginal likelihood and its gradient in the prior scale (MAP held fixed);
- a neural ODE: RK4 through 50 steps; gradients in parameters and initial state with the
  Tensor API, ``tg.value_and_grad``, a ``tg.trace`` replayed far away (and a fresh one),
  ``tg.checkpoint`` on segments, the trace's Hessian-vector product;
- ``MultiheadAttention``, ``TransformerEncoderLayer`` and ``Transformer`` (masks bool /
  float / 3-D / causal, key padding, ``batch_first``, ``norm_first``, batch of 1, train /
  eval): outputs, parameter gradients and (but for ``Transformer``) a Hessian-vector product;
- a VAE (fixed noise, closed-form KL, BCE with logits) trained 5 Adam / AdamW steps;
- WGAN-GP alternating updates (``detach``, ``requires_grad_`` toggles, two optimizers,
  ``zero_grad(set_to_none=...)``, the penalty through ``create_graph``; with the critic
  under ``tg.checkpoint``; critics with spectral / weight norm, their power iteration);
- LSTM / GRU / RNN over packed padded batches (sorted and not), truncated BPTT with detached
  states, ``clip_grad_norm_`` and schedulers; BatchNorm / Dropout in train and eval mode;
- plain NumPy science code under ``tg.grad`` / ``tg.hessian`` / ``tg.jacobian``: a Kalman
  filter log-likelihood, a GP marginal likelihood (``tapegrad.scipy.linalg.cho_factor`` /
  ``cho_solve``), a softmax regression with ``einsum``, ``where`` and fancy indexing
  (``np.add.at`` is refused by name).

Found and fixed: a gradient into intermediate results (``autograd.grad(l, fast_weights)``,
as first-order MAML takes it) freed rows above the lowest input that lead to no input (the op
that made another input, a sibling branch), so a later backward through them raised
"backward through the graph a second time" where PyTorch computes
(``tapegrad/autograd/engine.py``, ``_spare_unneeded``); on a tape with hooks such a gradient
also freed the rows below every input and ran the hooks of tensors whose gradient no input
needs (``_first_needed_row``, ``_rows_leading_nowhere``).  ``loss.backward(inputs=[a])``
with ``a.retain_grad()`` gave ``a.grad`` twice its value (``_backward_into``); gradients into
chosen inputs gave ``.grad`` to retained tensors no input needs (below them: PyTorch leaves
None), and with ``create_graph=True`` to none of them (``_run_retained``,
``higher.backward_graph``).  Modules are float64 only: a float32
input gives float64 values equal to PyTorch's float64 module (``Module.double()`` / ``to()``
stay refused by name, as ``test_module_optim_bookkeeping_hunt`` records).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
import tapegrad.scipy.linalg as tsl  # noqa: E402

F64 = torch.float64


def _T(m, a, rg=False):
    """A float64 tensor of ``a`` in library ``m`` (tg or torch)."""
    a = np.array(a, dtype=np.float64)
    if m is torch:
        return torch.tensor(a, dtype=F64, requires_grad=rg)
    return tg.tensor(a, requires_grad=rg)


def _np(x):
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "numpy"):
        x = x.numpy()
    return np.asarray(x, dtype=np.float64)


def _same(a, b, rtol=1e-10, atol=1e-12, what="out"):
    """Lists of results equal (shapes and values; None where the other has None)."""
    assert len(a) == len(b), f"{what}: {len(a)} results vs {len(b)}"
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        if y is None or x is None:
            assert x is None and y is None, f"{what}[{k}]: tapegrad {x!r} vs torch {y!r}"
            continue
        x, y = _np(x), _np(y)
        assert x.shape == y.shape, f"{what}[{k}]: shape {x.shape} vs torch {y.shape}"
        scale = max(np.abs(y).max(initial=0.0), 1.0)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol * scale, err_msg=f"{what}[{k}]")


def _twin(build):
    """A torch module (float64) and its tapegrad twin loaded from its state dict."""
    torch.manual_seed(0)
    tm = build(torch).double()
    gm = build(tg)
    gm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})
    return tm, gm


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---- 1. PINN -----------------------------------------------------------------------------------
_R1 = np.random.default_rng(0)
_PINN = [_R1.standard_normal(s) for s in [(8, 2), (8,), (1, 8), (1,)]]
_PINN_X = _R1.standard_normal((5, 2))


def _pinn_nested(m, act, X=_PINN_X):
    P = [_T(m, a, rg=True) for a in _PINN]
    t = _T(m, X[:, 0:1], rg=True)
    x = _T(m, X[:, 1:2], rg=True)
    h = getattr(m, act)(m.cat([t, x], 1) @ P[0].T + P[1])
    u = h @ P[2].T + P[3]
    ut, ux = m.autograd.grad(u.sum(), (t, x), create_graph=True)
    (uxx,) = m.autograd.grad(ux.sum(), x, create_graph=True)
    loss = ((ut - uxx) ** 2).mean() + (u**2).mean()
    g = m.autograd.grad(loss, P, create_graph=True)
    h2 = m.autograd.grad(sum((gi**2).sum() for gi in g), P)
    return [ut, uxx, loss, *g, *h2]


@pytest.mark.parametrize("act", ["tanh", "sin"])
def test_pinn_nested_input_gradients(act):
    _same(_pinn_nested(tg, act), _pinn_nested(torch, act), rtol=1e-9)


def _pinn_func(m):
    names = ["W1", "b1", "W2", "b2"]
    P = {k: _T(m, a, rg=True) for k, a in zip(names, _PINN, strict=True)}
    X = _T(m, _PINN_X[:3])
    F = m.func

    def u(p, z):
        return (p["W2"] @ m.tanh(p["W1"] @ z + p["b1"]) + p["b2"])[0]

    def resid(p, z):
        return F.jacrev(u, argnums=1)(p, z)[0] - F.hessian(u, argnums=1)(p, z)[1, 1]

    r = F.vmap(resid, in_dims=(None, 0))(P, X)
    loss = (r**2).mean() + (F.vmap(u, in_dims=(None, 0))(P, X) ** 2).mean()
    gs = m.autograd.grad(loss, list(P.values()), create_graph=True)
    h2 = m.autograd.grad(sum((g * g).sum() for g in gs), list(P.values()))
    gl = F.grad(lambda p: (F.vmap(resid, in_dims=(None, 0))(p, X) ** 2).mean())(P)
    return [r, loss, *gs, *h2, *(gl[k] for k in names)]


def test_pinn_func_transforms_per_sample():
    _same(_pinn_func(tg), _pinn_func(torch), rtol=1e-9)


_THETA_PINN = np.concatenate([a.ravel() for a in _PINN])


def _pinn_numpy(th, X):
    """The PINN loss as plain NumPy code, its input derivatives by tg.grad / tg.hessian."""
    W1, b1, W2, b2 = th[:16].reshape(8, 2), th[16:24], th[24:32].reshape(1, 8), th[32:]

    def u(z):
        return (W2 @ np.tanh(W1 @ z + b1) + b2)[0]

    total = 0.0
    for i in range(X.shape[0]):
        total = total + (tg.grad(u)(X[i])[0] - tg.hessian(u)(X[i])[1, 1]) ** 2 + u(X[i]) ** 2
    return total / X.shape[0]


def _pinn_torch(th, X):
    W1, b1, W2, b2 = th[:16].reshape(8, 2), th[16:24], th[24:32].reshape(1, 8), th[32:]

    def u(z):
        return (W2 @ torch.tanh(W1 @ z + b1) + b2)[0]

    F = torch.func
    r = F.vmap(lambda z: F.grad(u)(z)[0] - F.hessian(u)(z)[1, 1])(X)
    return (r**2 + F.vmap(u)(X) ** 2).mean()


def test_pinn_numpy_code_traced_and_replayed_far_away():
    X = _PINN_X[:3]
    Xt = torch.tensor(X)
    far = _THETA_PINN * -1.5 + 0.3
    tr = tg.trace(_pinn_numpy, _THETA_PINN, X, retrace=True)
    v = np.random.default_rng(2).standard_normal(_THETA_PINN.size)
    ref_hv = torch.func.jvp(
        torch.func.grad(lambda t: _pinn_torch(t, Xt)),
        (torch.tensor(_THETA_PINN),),
        (torch.tensor(v),),
    )[1]
    _same([tr.hvp(_THETA_PINN, X, v)], [ref_hv], rtol=1e-9)
    for th in (_THETA_PINN, far):  # far away: tanh's derivative rule took other sides
        val, g = tr.value_and_grad(th, X)
        tt = torch.tensor(th)
        _same([val, g], [_pinn_torch(tt, Xt), torch.func.grad(_pinn_torch)(tt, Xt)], rtol=1e-9)
    with pytest.raises(tg.RetraceRequired):  # (a guard, never the recorded side's number)
        tg.trace(_pinn_numpy, _THETA_PINN, X)(far, X)


def _mlp(m, sizes=(3, 4, 2)):
    return m.nn.Sequential(m.nn.Linear(sizes[0], sizes[1]), m.nn.Tanh(), m.nn.Linear(*sizes[1:]))


def _per_sample(m, net):
    params = {k: v.detach() for k, v in net.named_parameters()}
    X = _T(m, np.random.default_rng(1).standard_normal((5, 3)))
    y = (tg if m is tg else torch).tensor(np.array([0, 1, 1, 0, 1]))
    F = m.func

    def loss(p, x, t):
        return m.nn.functional.cross_entropy(F.functional_call(net, p, (x[None],)), t[None])

    g = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, X, y)
    J = F.vmap(F.jacrev(lambda p, x: F.functional_call(net, p, (x,))), in_dims=(None, 0))(params, X)
    H = F.hessian(lambda p, x: F.functional_call(net, p, (x[None],)).sum(), argnums=1)(params, X[0])
    return [g[k] for k in sorted(g)] + [J[k] for k in sorted(J)] + [H]


def test_per_sample_gradients_through_functional_call():
    tm, gm = _twin(_mlp)
    _same(_per_sample(tg, gm), _per_sample(torch, tm))


# ---- 2. MAML -----------------------------------------------------------------------------------
_R2 = np.random.default_rng(1)
_MAML = [_R2.standard_normal(s) for s in [(6, 3), (6, 1), (4, 3), (4, 1)]]


def _maml(m, net, first_order, use_fc, steps=2, lr=0.3):
    Xs, Ys, Xq, Yq = (_T(m, a) for a in _MAML)
    names = [n for n, _ in net.named_parameters()]
    params = [p for _, p in net.named_parameters()]
    for p in params:
        p.grad = None
    fast = list(params)
    for _ in range(steps):
        if use_fc:
            out = m.func.functional_call(net, dict(zip(names, fast, strict=True)), (Xs,))
        else:
            out = m.tanh(Xs @ fast[0].T + fast[1]) @ fast[2].T + fast[3]
        g = m.autograd.grad(((out - Ys) ** 2).mean(), fast, create_graph=not first_order)
        if first_order:
            g = [gi.detach() for gi in g]
        fast = [w - lr * gi for w, gi in zip(fast, g, strict=True)]
    out = m.func.functional_call(net, dict(zip(names, fast, strict=True)), (Xq,))
    L = ((out - Yq) ** 2).mean()
    L.backward()
    return [L] + [p.grad for p in params]


@pytest.fixture(scope="module")
def maml_nets():
    return _twin(lambda m: _mlp(m, (3, 5, 1)))


@pytest.mark.parametrize("first_order", [False, True])
@pytest.mark.parametrize("use_fc", [False, True])
def test_maml(maml_nets, first_order, use_fc):
    tm, gm = maml_nets
    _same(_maml(tg, gm, first_order, use_fc), _maml(torch, tm, first_order, use_fc))


def test_maml_first_order_differs_from_second_order(maml_nets):
    _, gm = maml_nets
    fo, so = _maml(tg, gm, True, False), _maml(tg, gm, False, False)
    np.testing.assert_allclose(_np(fo[0]), _np(so[0]), rtol=1e-14)  # same forward
    assert all(np.abs(_np(a) - _np(b)).max() > 1e-3 for a, b in zip(fo[2:], so[2:], strict=True))


def _grad_then_backward(m, variant):
    """A gradient into intermediate results, then a backward through rows above the lowest
    of them that lead to no input (the op that made another input; a sibling branch)."""
    w = _T(m, [[1.0, 2.0]], rg=True)
    b = _T(m, [0.5], rg=True)
    x = _T(m, [[0.3, -0.2]])
    if variant == "sibling":
        a = w * 3.0
        c = w * 5.0
        (g,) = m.autograd.grad((a**2 + c).sum(), a)
        (c * 2).sum().backward()
        return [g, w.grad]
    fast = [w, b]
    for _ in range(2):
        if variant == "maml":
            loss = (x @ fast[0].T + fast[1]).tanh().sum()
        else:  # "sum": the bias's own chain sits above the weight's input row
            loss = fast[0].sum() + fast[1].sum()
        g = m.autograd.grad(loss, fast)
        fast = [f - 0.1 * gi.detach() for f, gi in zip(fast, g, strict=True)]
    ((fast[1] ** 2).sum() + (x @ fast[0].T).sum()).backward()
    return [fast[0], fast[1], w.grad, b.grad]


@pytest.mark.parametrize("variant", ["maml", "sum", "sibling"])
def test_grad_into_intermediates_keeps_unneeded_rows(variant):
    _same(_grad_then_backward(tg, variant), _grad_then_backward(torch, variant))


def _hooked_grad(m, variant):
    """``autograd.grad`` into some tensors on a tape with hooks: PyTorch runs no hook of a
    tensor whose gradient no input needs (below every input, or a sibling branch), and a
    later backward through those tensors works."""
    calls = []
    x = _T(m, [1.0, 2.0], rg=True)
    b = x * 2.0
    b.register_hook(lambda g: calls.append("b") or g)
    w = _T(m, [0.5, -0.5], rg=True)
    a = b.sin() * w
    c = w * 5.0
    c.register_hook(lambda g: calls.append("c") or g)
    loss = (a**2 + c).sum()
    inputs = {"leaf": [w], "mixed": [w, a], "mid": [a]}[variant]
    g = m.autograd.grad(loss, inputs)
    seen = list(calls)
    later = (b**2).sum()  # b leads to no input; nor does c when a alone is one
    (later + c.sum() if variant == "mid" else later).backward()
    return [*g, x.grad, w.grad, float(len(seen)), float(len(calls))]


@pytest.mark.parametrize("variant", ["leaf", "mixed", "mid"])
def test_grad_on_a_hooked_tape_runs_and_frees_only_what_it_needs(variant):
    _same(_hooked_grad(tg, variant), _hooked_grad(torch, variant))


def _retained(m, mode, create_graph):
    """``retain_grad()`` tensors under gradients into chosen inputs: ``.grad`` once, and only
    where an input's gradient needs theirs."""
    w = _T(m, [1.0, 2.0], rg=True)
    a = w * 3
    a.retain_grad()
    c = a.exp()
    d = c * 2
    d.retain_grad()
    loss = (c * w).sum()
    kind, name = mode.split("_")
    x = {"w": w, "a": a, "c": c}[name]
    if kind == "grad":
        g = m.autograd.grad(loss, [x], create_graph=create_graph)
    else:
        g = []
        loss.backward(inputs=[x], create_graph=create_graph)
    return [*g, a.grad, w.grad, d.grad, c.grad if name == "c" else None]


@pytest.mark.parametrize("mode", ["grad_w", "grad_a", "grad_c", "back_w", "back_a", "back_c"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_retained_gradients_under_gradients_into_inputs(mode, create_graph):
    _same(_retained(tg, mode, create_graph), _retained(torch, mode, create_graph))


def test_grad_into_intermediates_still_frees_what_it_used():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    a = w * 3.0
    loss = (a.sin() * a).sum()
    tg.autograd.grad(loss, a)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def _maml_vmap(m, net):
    R = np.random.default_rng(3)
    data = [_T(m, R.standard_normal(s)) for s in [(3, 5, 2), (3, 5, 1), (3, 4, 2), (3, 4, 1)]]
    params = dict(net.named_parameters())
    F = m.func

    def inner(p, x, y):
        return ((F.functional_call(net, p, (x,)) - y) ** 2).mean()

    def task(p, xs, ys, xq, yq):
        for _ in range(2):
            g = F.grad(inner)(p, xs, ys)
            p = {k: p[k] - 0.4 * g[k] for k in p}
        return inner(p, xq, yq)

    losses = F.vmap(task, in_dims=(None, 0, 0, 0, 0))(params, *data)
    return [losses, *m.autograd.grad(losses.mean(), list(params.values()))]


def test_maml_batched_over_tasks_with_vmap():
    tm, gm = _twin(lambda m: _mlp(m, (2, 4, 1)))
    _same(_maml_vmap(tg, gm), _maml_vmap(torch, tm))


# ---- 3. normalizing flows ----------------------------------------------------------------------
_R3 = np.random.default_rng(3)
_FD, _FN = 4, 6
_FLOW = dict(
    X=_R3.standard_normal((_FN, _FD)),
    W=_R3.standard_normal((_FD, 2, _FD)) * 0.3,
    A=_R3.standard_normal((_FD, _FD)) * 0.5 + np.eye(_FD),
    u=_R3.standard_normal(_FD) * 0.3,
    w=_R3.standard_normal(_FD) * 0.3,
    b=0.1,
)


def _flow(m):
    x, W, A, u, w, b = (_T(m, _FLOW[k], rg=True) for k in "X W A u w b".split())
    mask = _T(m, [1.0, 0.0, 1.0, 0.0])
    z = x @ A.T
    _, lad = m.linalg.slogdet(A)
    logdet = lad * m.ones(_FN, dtype=F64) if m is torch else lad * tg.ones(_FN)
    for mm in (mask, 1 - mask):  # affine couplings, the whole row written into a clone
        xa = z * mm
        s = m.tanh(xa @ W[:, 0, :])
        y = z.clone()
        y[:, :] = xa + (1 - mm) * (z * m.exp(s) + xa @ W[:, 1, :])
        logdet = logdet + ((1 - mm) * s).sum(1)
        z = y
    y = z.clone()  # RealNVP with strided slices written in place
    y[:, 1::2] = z[:, 1::2] * m.exp(z[:, ::2] * 0.2) + 0.5
    logdet = logdet + (z[:, ::2] * 0.2).sum(1)
    z = y
    a = z @ w + b  # planar flow
    psi = (1 - m.tanh(a) ** 2)[:, None] * w
    logdet = logdet + m.log(m.abs(1 + psi @ u))
    z = z + u * m.tanh(a)[:, None]
    logp = -0.5 * (z**2).sum(1) - 0.5 * _FD * np.log(2 * np.pi)
    nll = -(logp + logdet).mean()
    comps = m.stack([logp + logdet, logp + logdet - 1.0, -((z - 1) ** 2).sum(1)], 1)
    lse = m.logsumexp(comps, 1).mean()
    leaves = [x, W, A, u, w, b]
    g = m.autograd.grad(nll - lse, leaves, create_graph=True)
    h = m.autograd.grad(sum((gi**2).sum() for gi in g), leaves)
    return [nll, lse, *g], list(h)


def test_normalizing_flow():
    (a, ha), (b, hb) = _flow(tg), _flow(torch)
    _same(a, b, rtol=1e-12)
    _same(ha, hb, rtol=1e-9, atol=1e-10)  # third derivatives through exp couplings


# ---- 4. Laplace approximation ------------------------------------------------------------------
_R4 = np.random.default_rng(4)
_LX = _R4.standard_normal((30, 3))
_LY = (_R4.random(30) < 1 / (1 + np.exp(-_LX @ np.array([1.0, -2.0, 0.5])))).astype(float)


def _nlp_numpy(w, log_s):
    z = _LX @ w
    s2 = np.exp(2 * log_s)
    nll = np.sum(np.logaddexp(0.0, z) - _LY * z)
    return nll + 0.5 * np.sum(w**2) / s2 + 0.5 * 3 * (np.log(2 * np.pi) + 2 * log_s)


def _nlp_torch(w, log_s):
    z = torch.tensor(_LX) @ w
    nll = (torch.logaddexp(torch.zeros_like(z), z) - torch.tensor(_LY) * z).sum()
    return nll + 0.5 * (w**2).sum() / torch.exp(2 * log_s) + 1.5 * (np.log(2 * np.pi) + 2 * log_s)


def _map(m, history, line_search, log_s0):
    w = m.zeros(3, dtype=F64, requires_grad=True) if m is torch else tg.zeros(3, requires_grad=True)
    X, y = _T(m, _LX), _T(m, _LY)
    opt = m.optim.LBFGS(
        [w], lr=1, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-14,
        history_size=history, line_search_fn=line_search,
    )  # fmt: skip

    def closure():
        opt.zero_grad()
        z = X @ w
        loss = (m.nn.functional.softplus(z) - y * z).sum() + 0.5 * (w**2).sum() / np.exp(2 * log_s0)
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    return w.detach().numpy().copy()


@pytest.mark.parametrize(
    "history,line_search", [(10, None), (10, "strong_wolfe"), (2, "strong_wolfe")]
)
def test_laplace_logistic_regression(history, line_search):
    ls0 = 0.3
    wg, wt = _map(tg, history, line_search, ls0), _map(torch, history, line_search, ls0)
    np.testing.assert_allclose(wg, wt, rtol=1e-10, atol=1e-12)

    def lml(log_s):
        L = tnp.linalg.cholesky(tg.hessian(_nlp_numpy)(wg, log_s))
        return -_nlp_numpy(wg, log_s) + 1.5 * np.log(2 * np.pi) - tnp.sum(tnp.log(tnp.diagonal(L)))

    v, g = tg.value_and_grad(lml)(ls0)
    H = tg.hessian(_nlp_numpy)(wg, ls0)
    lst = torch.tensor(ls0, dtype=F64, requires_grad=True)
    Ht = torch.func.hessian(_nlp_torch)(torch.tensor(wt), lst)
    vt = (
        -_nlp_torch(torch.tensor(wt), lst)
        + 1.5 * np.log(2 * np.pi)
        - torch.log(torch.diagonal(torch.linalg.cholesky(Ht))).sum()
    )
    (gt,) = torch.autograd.grad(vt, lst)
    _same([H, v, g], [Ht, vt, gt], rtol=1e-10)


# ---- 5. neural ODE -----------------------------------------------------------------------------
_R5 = np.random.default_rng(5)
_OD, _OH, _DT, _NS = 2, 6, 0.05, 50
_THETA = np.concatenate(
    [(_R5.standard_normal(s) * c).ravel() for s, c in [((6, 2), 0.5), ((6,), 0.1), ((2, 6), 0.5)]]
)
_Y0 = np.array([1.0, -0.5])


def _ode(m):
    def f(y, th):
        a, b, c = th[:12].reshape(6, 2), th[12:18], th[18:].reshape(2, 6)
        return c @ m.tanh(a @ y + b) - 0.1 * y

    def rk4(y, th, n):
        for _ in range(n):
            k1 = f(y, th)
            k2 = f(y + 0.5 * _DT * k1, th)
            k3 = f(y + 0.5 * _DT * k2, th)
            k4 = f(y + _DT * k3, th)
            y = y + _DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    def loss(th, y0):
        yT = rk4(y0, th, _NS)
        return ((yT - 0.3) ** 2).sum() + yT[0] * yT[1]

    return rk4, loss


def _ode_torch(th, y0):
    _, loss = _ode(torch)
    th, y0 = _T(torch, th, rg=True), _T(torch, y0, rg=True)
    v = loss(th, y0)
    return [v, *torch.autograd.grad(v, (th, y0))]


@pytest.fixture(scope="module")
def ode_trace():
    _, loss = _ode(tg)
    return tg.trace(loss, _THETA, _Y0, argnums=(0, 1))


def test_neural_ode_tensor_api_and_checkpoint():
    rk4, loss = _ode(tg)
    ref = _ode_torch(_THETA, _Y0)
    th, y0 = _T(tg, _THETA, rg=True), _T(tg, _Y0, rg=True)
    v = loss(th, y0)
    v.backward()
    _same([v, th.grad, y0.grad], ref)
    th, y0 = _T(tg, _THETA, rg=True), _T(tg, _Y0, rg=True)
    y = y0
    for _ in range(5):
        y = tg.checkpoint(lambda yy, tt: rk4(yy, tt, 10), y, th)
    v = ((y - 0.3) ** 2).sum() + y[0] * y[1]
    v.backward()
    _same([v, th.grad, y0.grad], ref)
    v, g = tg.value_and_grad(loss, argnums=(0, 1))(_THETA, _Y0)
    _same([v, *g], ref)


def test_neural_ode_trace_replayed_far_away(ode_trace):
    far, yfar = _THETA * 3 + 0.7, _Y0 * -2
    v, g = ode_trace.value_and_grad(far, yfar)
    _same([v, *g], _ode_torch(far, yfar), rtol=1e-10)
    _, loss = _ode(tg)
    v2, g2 = tg.trace(loss, far, yfar, argnums=(0, 1)).value_and_grad(far, yfar)
    _same([v, *g], [v2, *g2], rtol=1e-13)


def test_neural_ode_trace_hvp(ode_trace):
    vth = np.random.default_rng(6).standard_normal(_THETA.size)
    hv = ode_trace.hvp(_THETA, _Y0, (vth, np.zeros(2)))
    _, loss = _ode(torch)
    y0 = torch.tensor(_Y0)
    _, ref = torch.func.jvp(
        torch.func.grad(lambda t: loss(t, y0)), (torch.tensor(_THETA),), (torch.tensor(vth),)
    )
    _same([hv[0]], [ref], rtol=1e-9)


# ---- 6. attention ------------------------------------------------------------------------------
_E, _NH = 8, 2


def _module_derivs(m, mod, inputs, call):
    """Outputs, parameter gradients of a fixed weighting of them, and a Hessian-vector
    product in the parameters."""
    ins = [
        None if a is None else (_T(m, a) if a.dtype.kind == "f" else m.tensor(a)) for a in inputs
    ]
    out = call(mod, *ins)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    loss = sum(
        (o * _T(m, np.random.default_rng(k).standard_normal(tuple(o.shape)))).sum()
        for k, o in enumerate(outs)
    )
    ps = [p for _, p in mod.named_parameters()]
    g = m.autograd.grad(loss, ps, create_graph=True)
    s = sum(
        (gi * _T(m, np.random.default_rng(50 + k).standard_normal(tuple(gi.shape)))).sum()
        for k, gi in enumerate(g)
    )
    h = m.autograd.grad(s, ps, allow_unused=True)
    h = [np.zeros(tuple(p.shape)) if x is None else x for x, p in zip(h, ps, strict=True)]
    return outs + list(g) + h


def _compare_modules(build, inputs, call, train=True):
    tm, gm = _twin(build)
    tm.train(train)
    gm.train(train)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):  # (the fused kernels have no double backward)
        ref = _module_derivs(torch, tm, inputs, call)
    _same(_module_derivs(tg, gm, inputs, call), ref, rtol=1e-10)


_R6 = np.random.default_rng(6)
_Q, _K, _V = (_R6.standard_normal((n, 3, _E)) for n in (5, 4, 4))
_KPM = np.zeros((3, 4), bool)
_KPM[0, -1] = True
_KPM[2, 1:3] = True
_AMASKS = {
    "none": None,
    "bool": np.triu(np.ones((5, 4), bool), 1),
    "float": _R6.standard_normal((5, 4)),
    "3d": _R6.standard_normal((3 * _NH, 5, 4)),
}


@pytest.mark.parametrize(
    "batch_first,mask,padding,average,train",
    [
        (False, "none", False, True, True),
        (True, "bool", True, False, False),
        (False, "float", True, True, True),
        (True, "3d", False, False, True),
    ],
)
def test_multihead_attention(batch_first, mask, padding, average, train):
    q, k, v = (x.transpose(1, 0, 2).copy() if batch_first else x for x in (_Q, _K, _V))

    def call(mod, q_, k_, v_, kp, am):
        return mod(q_, k_, v_, key_padding_mask=kp, attn_mask=am, average_attn_weights=average)

    _compare_modules(
        lambda m: m.nn.MultiheadAttention(_E, _NH, batch_first=batch_first),
        [q, k, v, _KPM if padding else None, _AMASKS[mask]],
        call,
        train,
    )


def test_multihead_attention_kdim_vdim_bias_kv_zero_attn():
    k2, v2 = _R6.standard_normal((4, 3, 3)), _R6.standard_normal((4, 3, 6))
    _compare_modules(
        lambda m: m.nn.MultiheadAttention(
            _E, _NH, kdim=3, vdim=6, add_bias_kv=True, add_zero_attn=True
        ),
        [_Q, k2, v2, _KPM],
        lambda mod, a, b, c, kp: mod(a, b, c, key_padding_mask=kp),
    )


@pytest.mark.parametrize(
    "batch_first,norm_first,act,mask,padding,n,train",
    [
        (False, False, "relu", "bool", True, 3, True),
        (True, True, "gelu", "float", False, 1, False),
        (True, False, "gelu", None, True, 1, True),
    ],
)
def test_transformer_encoder_layer(batch_first, norm_first, act, mask, padding, n, train):
    src = _R6.standard_normal((4, n, _E))
    if batch_first:
        src = src.transpose(1, 0, 2).copy()
    am = {None: None, "bool": np.triu(np.ones((4, 4), bool), 1), "float": _AMASKS["float"][:4]}
    kp = (_KPM[:n] if n > 1 else np.array([[False, False, True, True]])) if padding else None
    _compare_modules(
        lambda m: m.nn.TransformerEncoderLayer(
            _E,
            _NH,
            12,
            dropout=0.0,
            activation=act,
            batch_first=batch_first,
            norm_first=norm_first,
        ),  # fmt: skip
        [src, am[mask], kp],
        lambda mod, s, a, k: mod(s, src_mask=a, src_key_padding_mask=k),
        train,
    )


def _seq2seq(m, mod):
    R = np.random.default_rng(14)
    src, tgt = _T(m, R.standard_normal((2, 5, _E))), _T(m, R.standard_normal((2, 4, _E)))
    skp = m.tensor(np.array([[False] * 5, [False, False, False, True, True]]))
    tkp = m.tensor(np.array([[False] * 4, [False, False, False, True]]))
    causal = type(mod).generate_square_subsequent_mask(4)
    causal = causal.double() if m is torch else causal
    out = mod(
        src, tgt, tgt_mask=causal, src_key_padding_mask=skp, tgt_key_padding_mask=tkp,
        memory_key_padding_mask=skp, tgt_is_causal=True,
    )  # fmt: skip
    loss = (out * _T(m, R.standard_normal(tuple(out.shape)))).sum()
    return [out, *m.autograd.grad(loss, list(mod.parameters()))]


@pytest.mark.parametrize("norm_first,train", [(False, True), (True, False)])
def test_transformer_seq2seq_with_causal_and_padding_masks(norm_first, train):
    tm, gm = _twin(
        lambda m: m.nn.Transformer(
            _E,
            _NH,
            num_encoder_layers=2,
            num_decoder_layers=1,
            dim_feedforward=12,
            dropout=0.0,
            batch_first=True,
            norm_first=norm_first,
        )  # fmt: skip
    )
    tm.train(train)
    gm.train(train)
    _same(_seq2seq(tg, gm), _seq2seq(torch, tm))


# ---- 7. VAE ------------------------------------------------------------------------------------
_R7 = np.random.default_rng(7)
_VX = (_R7.random((4, 6)) < 0.5).astype(float)
_VEPS = _R7.standard_normal((5, 4, 2))


def _vae_nets(m):
    enc = m.nn.Sequential(m.nn.Linear(6, 5), m.nn.Softplus(), m.nn.Linear(5, 4))
    dec = m.nn.Sequential(m.nn.Linear(2, 5), m.nn.Tanh(), m.nn.Linear(5, 6))
    return m.nn.ModuleList([enc, dec])


def _vae(m, nets, opt_name, amsgrad, wd):
    enc, dec = nets
    params = list(nets.parameters())
    opt = getattr(m.optim, opt_name)(params, lr=0.05, weight_decay=wd, amsgrad=amsgrad)
    x, out = _T(m, _VX), []
    for it in range(5):
        opt.zero_grad()
        h = enc(x)
        mu, logvar = h[:, :2], h[:, 2:]
        logits = dec(mu + m.exp(0.5 * logvar) * _T(m, _VEPS[it]))
        rec = m.nn.functional.binary_cross_entropy_with_logits(logits, x, reduction="sum")
        kl = -0.5 * (1 + logvar - mu**2 - logvar.exp()).sum()
        loss = (rec + kl) / 4
        loss.backward()
        opt.step()
        out.append(loss)
    return out + [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize(
    "opt_name,amsgrad,wd", [("Adam", False, 0.0), ("Adam", True, 0.1), ("AdamW", True, 0.1)]
)
def test_vae_adam_steps(opt_name, amsgrad, wd):
    tm, gm = _twin(_vae_nets)
    _same(_vae(tg, gm, opt_name, amsgrad, wd), _vae(torch, tm, opt_name, amsgrad, wd))


# ---- 8. WGAN-GP --------------------------------------------------------------------------------
_R8 = np.random.default_rng(8)
_GREAL, _GNOISE, _GALPHA = (_R8.standard_normal((3, 4, 3)), _R8.standard_normal((3, 4, 2)),
                            _R8.random((3, 4, 1)))  # fmt: skip


def _gan_nets(m):
    return m.nn.ModuleList([_mlp(m, (2, 5, 3)), _mlp(m, (3, 5, 1))])


def _critic_out(m, C, x, ckpt):
    if not ckpt:
        return C(x)
    if m is torch:
        return torch.utils.checkpoint.checkpoint(C, x, use_reentrant=False)
    return tg.checkpoint(C, x)


def _wgan(m, nets, set_to_none, ckpt=False):
    G, C = nets
    optG = m.optim.Adam(G.parameters(), lr=0.01, betas=(0.5, 0.9))
    optC = m.optim.SGD(C.parameters(), lr=0.05, momentum=0.9)
    log = []
    for it in range(3):
        C.requires_grad_(True)
        optC.zero_grad(set_to_none=set_to_none)
        real, a = _T(m, _GREAL[it]), _T(m, _GALPHA[it])
        fake = G(_T(m, _GNOISE[it])).detach()
        xi = (a * real + (1 - a) * fake).requires_grad_(True)
        (gx,) = m.autograd.grad(_critic_out(m, C, xi, ckpt).sum(), xi, create_graph=True)
        gp = ((gx.norm(2, dim=1) - 1) ** 2).mean()
        loss_c = C(fake).mean() - C(real).mean() + 10.0 * gp
        loss_c.backward()
        log += [loss_c, gp] + [p.grad for p in C.parameters()]
        log += [float(p.grad is None) for p in G.parameters()]
        optC.step()
        for p in C.parameters():
            p.requires_grad_(False)
        optG.zero_grad(set_to_none=set_to_none)
        loss_g = -C(G(_T(m, _GNOISE[it]))).mean()
        loss_g.backward()
        log += [loss_g] + [float(p.grad is None) for p in C.parameters()]
        log += [p.grad for p in G.parameters()]
        optG.step()
    return log + [p.detach().numpy().copy() for p in nets.parameters()]


@pytest.mark.parametrize("set_to_none,ckpt", [(True, False), (False, False), (True, True)])
def test_wgan_gp_alternating_updates(set_to_none, ckpt):
    tm, gm = _twin(_gan_nets)
    _same(_wgan(tg, gm, set_to_none, ckpt), _wgan(torch, tm, set_to_none, ckpt))


def _normed_critic(m, kind):
    norm = m.nn.utils.spectral_norm if kind == "spectral" else m.nn.utils.weight_norm
    return m.nn.Sequential(norm(m.nn.Linear(3, 4)), m.nn.Tanh(), norm(m.nn.Linear(4, 1)))


def _critic_steps(m, net):
    opt, log = m.optim.SGD(net.parameters(), lr=0.1), []
    for it in range(3):
        net.train()
        x = _T(m, _GREAL[it], rg=True)
        out = net(x)
        (gx,) = m.autograd.grad(out.sum(), x, create_graph=True)
        loss = out.mean() + (gx**2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log += [loss] + [p.grad for p in net.parameters()]
    net.eval()  # (spectral norm: no power iteration, the stored u, v)
    return log + [net(_T(m, _GREAL[0]))] + [np.asarray(v, float) for v in net.state_dict().values()]


@pytest.mark.parametrize("kind", ["spectral", "weight"])
def test_normalized_critic_with_gradient_penalty(kind):
    tm, gm = _twin(lambda m: _normed_critic(m, kind))
    _same(_critic_steps(tg, gm), _critic_steps(torch, tm))


# ---- 9. recurrent ------------------------------------------------------------------------------
_R9 = np.random.default_rng(9)
_RX = _R9.standard_normal((3, 6, 2))
_RW = _R9.standard_normal((3, 6, 8))


def _packed(m, mod, cell, lens, enforce_sorted):
    x = _T(m, _RX, rg=True)
    rnn = m.nn.utils.rnn
    packed = rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=enforce_sorted)
    out, hid = mod(packed)
    pad, lengths = rnn.pad_packed_sequence(out, batch_first=True, total_length=6)
    h = hid[0] if cell == "LSTM" else hid
    loss = (pad * _T(m, _RW[..., : pad.shape[2]])).sum() + 0.3 * h.sum()
    if cell == "LSTM":
        loss = loss + (hid[1] ** 2).sum()
    ps = list(mod.parameters())
    return [pad, np.asarray(lengths, float), h, *m.autograd.grad(loss, ps + [x])]


@pytest.mark.parametrize(
    "cell,bidir,layers,lens,enforce_sorted",
    [
        ("LSTM", True, 2, [6, 4, 1], True),
        ("GRU", False, 2, [4, 6, 1], False),
        ("RNN", True, 1, [1, 6, 4], False),
    ],
)
def test_recurrent_packed_padded(cell, bidir, layers, lens, enforce_sorted):
    tm, gm = _twin(
        lambda m: getattr(m.nn, cell)(
            2, 4, num_layers=layers, bidirectional=bidir, batch_first=True
        )
    )
    _same(
        _packed(tg, gm, cell, lens, enforce_sorted), _packed(torch, tm, cell, lens, enforce_sorted)
    )


_RXL, _RYL = _R9.standard_normal((2, 12, 2)), _R9.standard_normal((2, 12, 1))


def _tbptt(m, nets, sched, clip):
    mod, head = nets
    ps = list(nets.parameters())
    opt = m.optim.SGD(ps, lr=0.2, momentum=0.5)
    S = m.optim.lr_scheduler
    sch = {
        "step": lambda o: S.StepLR(o, 2, gamma=0.5),
        "cos": lambda o: S.CosineAnnealingLR(o, 4),
        "onecycle": lambda o: S.OneCycleLR(o, 0.3, total_steps=10),
    }[sched](opt)
    state, log = None, []
    for _ in range(2):
        for c in range(3):
            out, state = mod(_T(m, _RXL[:, 4 * c : 4 * c + 4]), state)
            loss = ((head(out) - _T(m, _RYL[:, 4 * c : 4 * c + 4])) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            norm = m.nn.utils.clip_grad_norm_(ps, clip)
            opt.step()
            sch.step()
            state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
            log += [loss, norm, opt.param_groups[0]["lr"]]
    return log + [p.detach().numpy().copy() for p in ps]


@pytest.mark.parametrize(
    "cell,sched,clip", [("LSTM", "step", 0.05), ("GRU", "cos", 100.0), ("LSTM", "onecycle", 0.05)]
)
def test_truncated_bptt_clip_schedule(cell, sched, clip):
    tm, gm = _twin(
        lambda m: m.nn.ModuleList([getattr(m.nn, cell)(2, 4, batch_first=True), m.nn.Linear(4, 1)])
    )
    _same(_tbptt(tg, gm, sched, clip), _tbptt(torch, tm, sched, clip))


def _bn_net(m):
    return m.nn.Sequential(
        m.nn.Linear(4, 6), m.nn.BatchNorm1d(6), m.nn.ReLU(), m.nn.Dropout(0.5), m.nn.Linear(6, 1)
    )


def _train_eval(m, net, n):
    R = np.random.default_rng(11)
    X, Y = R.standard_normal((3, 5, 4)), R.standard_normal((3, 5, 1))
    opt = m.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    log = []
    for it in range(3):
        net.train()
        net[3].p = 0.0
        opt.zero_grad()
        loss = ((net(_T(m, X[it, :n])) - _T(m, Y[it, :n])) ** 2).mean()
        loss.backward()
        opt.step()
        net.eval()
        net[3].p = 0.5  # (dropout is the identity in eval mode)
        xe = _T(m, X[it, :1], rg=True)
        out = net(xe)
        log += [loss, out, *m.autograd.grad(out.sum(), xe)]
    return log + [np.asarray(v, float) for v in net.state_dict().values()]


@pytest.mark.parametrize("n", [5, 2])
def test_batchnorm_dropout_train_eval(n):
    tm, gm = _twin(_bn_net)
    _same(_train_eval(tg, gm, n), _train_eval(torch, tm, n))


# ---- 10. NumPy science code under transforms ---------------------------------------------------
_R10 = np.random.default_rng(10)
_KY = _R10.standard_normal((8, 1))


def _kalman(theta, lib=np):
    """Kalman filter log-likelihood: NumPy code (lib=np) or its torch twin (lib=torch)."""
    c = (lambda a: torch.tensor(np.array(a, float))) if lib is torch else np.array
    solve, slogdet = (torch.linalg.solve, torch.linalg.slogdet) if lib is torch else (
        np.linalg.solve, np.linalg.slogdet)  # fmt: skip
    A = c([[1.0, 0.0], [0.0, 0.0]]) * theta[0] + c([[0.0, 0.1], [0.0, 0.9]])
    Q, R, Hm = c(np.eye(2)) * lib.exp(theta[1]), c(np.eye(1)) * lib.exp(theta[2]), c([[1.0, 0.5]])
    m, P, ll = c(np.zeros(2)), c(np.eye(2)), 0.0
    for t in range(8):
        m, P = A @ m, A @ P @ A.T + Q
        S = Hm @ P @ Hm.T + R
        v = c(_KY[t]) - Hm @ m
        ll = ll - 0.5 * (slogdet(S)[1] + v @ solve(S, v) + np.log(2 * np.pi))
        K = solve(S, Hm @ P).T
        m, P = m + K @ v, P - K @ S @ K.T
    return ll


def test_kalman_filter_log_likelihood():
    th = np.array([0.7, -0.5, 0.2])
    tt = torch.tensor(th)
    _same(
        [_kalman(th), tg.grad(_kalman)(th), tg.hessian(_kalman)(th)],
        [_kalman(tt, torch), torch.func.grad(lambda x: _kalman(x, torch))(tt),
         torch.func.hessian(lambda x: _kalman(x, torch))(tt)],
    )  # fmt: skip


_GX, _GY = _R10.standard_normal((7, 2)), _R10.standard_normal(7)


def _gp_nlml(hyp, X, y):
    ls, sf, sn = np.exp(hyp[0]), np.exp(hyp[1]), np.exp(hyp[2])
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf**2 * np.exp(-0.5 * d2 / ls**2) + (sn**2 + 1e-9) * np.eye(len(y))
    c = tsl.cho_factor(K, lower=True)
    alpha = tsl.cho_solve(c, y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(c[0]))) + 0.5 * len(y) * np.log(2 * np.pi)


def _gp_torch(hyp, X, y):
    ls, sf, sn = torch.exp(hyp[0]), torch.exp(hyp[1]), torch.exp(hyp[2])
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = sf**2 * torch.exp(-0.5 * d2 / ls**2) + (sn**2 + 1e-9) * torch.eye(len(y), dtype=F64)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
    return 0.5 * y @ alpha + torch.log(torch.diagonal(L)).sum() + 0.5 * len(y) * np.log(2 * np.pi)


def test_gaussian_process_marginal_likelihood():
    h = np.array([0.1, 0.3, -1.0])
    args, targs = (h, _GX, _GY), tuple(torch.tensor(a) for a in (h, _GX, _GY))
    # K's condition number (~1e3) costs a few digits
    _same(
        [_gp_nlml(*args), *tg.grad(_gp_nlml, argnums=(0, 1, 2))(*args),
         tg.hessian(_gp_nlml)(*args)],
        [_gp_torch(*targs), *torch.func.grad(_gp_torch, argnums=(0, 1, 2))(*targs),
         torch.func.hessian(_gp_torch)(*targs)],
        rtol=1e-9, atol=1e-11,
    )  # fmt: skip


_SX, _SY = _R10.standard_normal((6, 3)), np.array([0, 2, 1, 3, 2, 0])


def _softmax_numpy(W):
    logits = np.einsum("nd,dc->nc", _SX, W)
    logits = np.where(logits > 2.0, 2.0 + 0.1 * (logits - 2.0), logits)
    mx = np.max(logits, axis=1, keepdims=True)
    ll = logits[np.arange(6), _SY] - (mx[:, 0] + np.log(np.sum(np.exp(logits - mx), axis=1)))
    counts = np.bincount(_SY, minlength=4).astype(float)
    return -np.sum((ll @ np.eye(4)[_SY]) / counts) + 0.01 * np.einsum("ij,ij->", W, W)


def _softmax_torch(W):
    y = torch.tensor(_SY)
    logits = torch.einsum("nd,dc->nc", torch.tensor(_SX), W)
    logits = torch.where(logits > 2.0, 2.0 + 0.1 * (logits - 2.0), logits)
    ll = logits[torch.arange(6), y] - torch.logsumexp(logits, 1)
    per = torch.zeros(4, dtype=F64).index_add(0, y, ll)
    counts = torch.tensor(np.bincount(_SY, minlength=4).astype(float))
    return -(per / counts).sum() + 0.01 * (W * W).sum()


def test_softmax_regression_numpy_code():
    W = np.random.default_rng(12).standard_normal((3, 4)) * 2
    Wt = torch.tensor(W)

    def picked(W, lib):
        e = lib.einsum("nd,dc->nc", _SX if lib is np else torch.tensor(_SX), W)
        return e[np.arange(6), _SY]

    _same(
        [_softmax_numpy(W), tg.grad(_softmax_numpy)(W), tg.hessian(_softmax_numpy)(W),
         tg.jacobian(lambda w: picked(w, np))(W)],
        [_softmax_torch(Wt), torch.func.grad(_softmax_torch)(Wt),
         torch.func.hessian(_softmax_torch)(Wt), torch.func.jacrev(lambda w: picked(w, torch))(Wt)],
    )  # fmt: skip


def test_ufunc_at_is_refused_by_name():
    def f(w):
        acc = np.zeros(3)
        np.add.at(acc, [0, 2, 0], w)
        return acc.sum()

    with pytest.raises(TypeError, match=r"add\.at"):
        tg.grad(f)(np.ones(3))


# ---- modules and dtypes ------------------------------------------------------------------------
def test_float32_input_to_module_gives_float64_and_torch_values():
    tm, gm = _twin(_mlp)
    x = np.random.default_rng(13).standard_normal((2, 3)).astype(np.float32)
    out = gm(tg.tensor(x))
    assert out.dtype == np.float64
    _same([out], [tm(torch.tensor(x, dtype=F64))])


def test_pinn_batch_of_one_float32_data():
    X = _PINN_X[:1].astype(np.float32)  # (tapegrad computes in float64, as the torch twin)
    _same(_pinn_nested(tg, "tanh", X), _pinn_nested(torch, "tanh", X), rtol=1e-9)
