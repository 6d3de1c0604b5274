"""``x.view(shape)`` in the Tensor API is PyTorch's view: it shares x's memory, and a shape
that x's elements cannot be laid out in by strides (a transposed or strided view
flattened) raises rather than silently copy.  ``x.contiguous()`` copies exactly those
views, and ``x.is_contiguous()`` says which they are.  Inside NumPy code under a transform
``a.view()`` / ``a.view(dtype)`` keep NumPy's meaning."""

import itertools

import numpy as np
import pytest

import tapegrad as tg


def _base():
    return tg.arange(24.0).reshape(2, 3, 4)


# (how a view of the (2, 3, 4) base is made, the shape asked of view, does PyTorch allow it)
VIEWS = [
    (lambda b: b.transpose(0, 1), (24,), False),
    (lambda b: b.transpose(0, 1), (3, 8), False),
    (lambda b: b.transpose(0, 1), (3, 2, 2, 2), True),
    (lambda b: b.transpose(1, 2), (2, 12), False),
    (lambda b: b.transpose(1, 2), (8, 3), False),
    (lambda b: b.transpose(1, 2), (2, 2, 2, 3), True),
    (lambda b: b.permute(2, 0, 1), (4, 6), True),
    (lambda b: b.permute(2, 0, 1), (24,), False),
    (lambda b: b[:, 1:], (2, 8), True),
    (lambda b: b[:, 1:], (16,), False),
    (lambda b: b[:, :, ::2], (12,), True),  # one stride, 2
    (lambda b: b[:, :2, ::2], (8,), False),
    (lambda b: b[:, :, ::2], (6, 2), True),
    (lambda b: b[1], (12,), True),
    (lambda b: b[:, 0], (8,), False),
    (lambda b: b[:, 0], (2, 2, 2), True),
    (lambda b: b[:, :, 0], (6,), True),
    (lambda b: b[0].t(), (12,), False),
    (lambda b: b[0].t(), (4, 3, 1), True),
    (lambda b: b.reshape(6, 4).t(), (2, 2, 6), True),
    (lambda b: b.reshape(6, 4).t(), (8, 3), False),
]


@pytest.mark.parametrize("make, shape, allowed", VIEWS)
def test_view_raises_where_no_strides_lay_the_shape_out(make, shape, allowed):
    v = make(_base())
    if not allowed:
        with pytest.raises(RuntimeError, match=r"view size is not compatible.*reshape"):
            v.view(shape)
        with pytest.raises(RuntimeError, match=r"view size is not compatible"):
            v.view(*shape)
        # reshape copies, contiguous().view is allowed; both give the C-order elements
        want = np.asarray(v.numpy()).reshape(shape)
        assert np.array_equal(v.reshape(shape).numpy(), want)
        assert np.array_equal(v.contiguous().view(shape).numpy(), want)
        return
    out = v.view(shape)
    assert np.array_equal(out.numpy(), np.asarray(v.numpy()).reshape(shape))
    # a write into the legal view reaches its base and the view it was made from
    base = _base()
    v = make(base)
    w = v.view(shape)
    w[(-1,) * len(shape)] = -1.0
    assert np.asarray(v.numpy()).reshape(-1)[-1] == -1.0
    assert (base.numpy() == -1.0).sum() == 1


def test_view_of_transpose_example():
    t = tg.arange(6.0).reshape(2, 3).T
    with pytest.raises(RuntimeError, match=r"Tensor.view\(\(6,\)\) of a tensor of shape \(3, 2\)"):
        t.view(6)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view_as(tg.zeros(6))
    assert t.reshape(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert t.contiguous().view(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert t.view(3, 2).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]  # same shape: allowed
    assert t.view(3, 1, 2).shape == (3, 1, 2)


def test_contiguous_copies_a_strided_view():
    x = tg.zeros(2, 3)
    assert x.contiguous() is x and x.is_contiguous()
    y = x.t().contiguous()  # a copy, as PyTorch's: the write stays in y
    y[0, 1] = 5.0
    assert x.tolist() == [[0.0] * 3] * 2 and y.tolist()[0] == [0.0, 5.0]
    assert not x.t().is_contiguous() and not x[:, 1:].is_contiguous()
    assert x[1:].is_contiguous() and x[1].is_contiguous() and x[:1].t().is_contiguous()
    assert not x[:, :1].t().is_contiguous()  # shape (1, 2), strides (1, 3)
    assert not tg.tensor(1.0).expand(3).is_contiguous()
    # a view of a contiguous view is a view: writes reach x
    z = x[1:].contiguous().view(3)
    z[2] = 7.0
    assert x.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 7.0]]


def test_gradient_through_a_write_into_a_view():
    leaf = tg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    r = leaf * 1.0
    v = r[:, 1:3].t().view(2, 3)  # (2, 3) of the transposed (2, 3) slice: allowed
    v.mul_(3.0)
    (r * r).sum().backward()
    want = 2.0 * np.arange(12.0).reshape(3, 4)
    want[:, 1:3] *= 9.0
    assert np.allclose(leaf.grad.numpy(), want)


def test_numpy_view_keeps_numpys_meaning_in_transforms():
    a = np.arange(6.0).reshape(2, 3)
    g = tg.grad(lambda u: (u.T.view() ** 2).sum())(a)
    assert np.array_equal(g, 2 * a)
    g = tg.grad(lambda u: (u.T.view(np.float64)[0] ** 2).sum())(a)
    assert np.array_equal(g, [[0.0, 0.0, 0.0], [6.0, 0.0, 0.0]])
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tg.grad(lambda u: (u.T.view(6) ** 2).sum())(tg.tensor(a))


def _factor_shapes(n):
    shapes = {(n,), (1, n), (n, 1), (-1,)}
    for d in range(2, n):
        if n % d == 0:
            shapes.add((d, n // d))
            for e in range(2, n // d):
                if (n // d) % e == 0:
                    shapes.add((d, e, n // d // e))
    return sorted(shapes)


def test_view_agrees_with_torch_on_many_layouts():
    torch = pytest.importorskip("torch")
    steps = {
        "T": lambda x: x.transpose(0, 1),
        "perm": lambda x: x.permute(*range(1, x.ndim), 0),
        "::2": lambda x: x[::2],
        "1:": lambda x: x[1:],
        ":,1:": lambda x: x[:, 1:],
        ":,::2": lambda x: x[:, ::2],
        "sel": lambda x: x[:, 0],
        "unsq": lambda x: x.unsqueeze(1),
        "flat": lambda x: x.reshape(-1),
    }
    checked = raised = 0
    for base in (np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(3, 4)):
        for seq in itertools.product(steps, repeat=2):
            try:
                t = torch.tensor(base)
                for s in seq:
                    t = steps[s](t)
            except (IndexError, RuntimeError):
                continue
            g = tg.tensor(base)
            for s in seq:
                g = steps[s](g)
            assert t.is_contiguous() == g.is_contiguous(), seq
            for shape in _factor_shapes(t.numel()):
                try:
                    tv = t.view(shape)
                except RuntimeError:
                    raised += 1
                    with pytest.raises(RuntimeError, match="view size is not compatible"):
                        g.view(shape)
                    continue
                checked += 1
                assert np.array_equal(g.view(shape).numpy(), tv.numpy()), (seq, shape)
                # gradients of a write through the view, to the leaf
                tl = torch.tensor(base, requires_grad=True)
                gl = tg.tensor(base, requires_grad=True)
                grads = []
                for leaf in (tl, gl):
                    r = leaf * 1.0
                    x = r
                    for s in seq:
                        x = steps[s](x)
                    x.view(shape).mul_(-2.0)
                    (r * r * r).sum().backward()
                    grads.append(np.asarray(leaf.grad.numpy()))
                assert np.allclose(grads[0], grads[1]), (seq, shape)
    assert checked > 100 and raised > 50


def test_layout_is_kept_after_the_first_tensor_is_gone():
    # the tensor y is a view of is released at once: y's layout is still a transpose, so a
    # reshape copies (a write into it leaves y alone) and view raises, as in PyTorch
    y = tg.zeros(2, 3).t()
    z = y.reshape(6)
    z[1] = 1.0
    assert y.tolist() == [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]] and z.tolist()[1] == 1.0
    assert not y.is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(6)
    w = y[:, :1].t()  # a view of y, noted against y: (1, 3), the first memory's first row
    assert w.is_contiguous() and w.view(3).shape == (3,)
    w.view(3)[1] = 4.0  # reaches y
    assert y.tolist() == [[0.0, 0.0], [4.0, 0.0], [0.0, 0.0]]
    assert not y[:, 1:].t().is_contiguous() or y[:, 1:].t().view(3).shape == (3,)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y[1:].view(4)
