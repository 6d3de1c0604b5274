"""Products and norms on Tensors (np.outer, np.tensordot, np.einsum, np.linalg.norm),
composed from the differentiable primitives of ``tapegrad.core.functions`` (contractions
become transposes, reshapes and one matmul)."""

import math

import numpy as np

from ..core.functions import (
    Axis,
    TensorLike,
    abs_,
    amax,
    amin,
    flat_index,
    getitem,
    matmul,
    mul,
    normalize_axes,
    power,
    ravel,
    reshape,
    sqrt,
    sum,
    tensor_of,
    transpose,
    truth,
)
from ..core.tensor import TensorBase as Tensor
from ..core.tensor import result


def outer(x: TensorLike, y: TensorLike) -> Tensor:
    """np.outer: both operands are flattened, as numpy does.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.tensor([3.0, 4.0, 5.0], requires_grad=True)
        >>> z = tg.outer(x, y); z
        tensor([[ 3.,  4.,  5.],
                [ 6.,  8., 10.]], grad_fn=<MulBackward0>)
        >>> z.sum().backward(); x.grad, y.grad
        (tensor([12., 12.]), tensor([3., 3., 3.]))
    """
    return mul(reshape(ravel(tensor_of(x)), (-1, 1)), reshape(ravel(tensor_of(y)), (1, -1)))


def _moveto(x, order):
    return x if list(order) == list(range(x.ndim)) else transpose(x, tuple(order))


def _contract(x, y, xfree, xsum, ysum, yfree, batch=((), ())):
    """Sum x*y over the paired axes xsum/ysum with one (batched) matmul; result axes are
    batch, x's free axes, y's free axes."""
    xs, ys = x.shape, y.shape

    def size(shape, axes):
        return int(np.prod([shape[a] for a in axes], dtype=np.int64))

    nb = size(xs, batch[0])
    xm = reshape(_moveto(x, [*batch[0], *xfree, *xsum]), (nb, size(xs, xfree), size(xs, xsum)))
    ym = reshape(_moveto(y, [*batch[1], *ysum, *yfree]), (nb, size(ys, ysum), size(ys, yfree)))
    shape = [xs[a] for a in batch[0]] + [xs[a] for a in xfree] + [ys[a] for a in yfree]
    return reshape(matmul(xm, ym), tuple(shape))


def tensordot(x: TensorLike, y: TensorLike, axes=2) -> Tensor:
    """np.tensordot: sum the products over ``axes`` (an int: the last of x and first of y).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = tg.tensordot(x, tg.tensor([[1.0, 0.0], [0.0, 1.0]])); y   # the trace of x
        tensor(5., grad_fn=<ReshapeBackward0>)
        >>> y.backward(); x.grad
        tensor([[1., 0.],
                [0., 1.]])
    """
    x, y = tensor_of(x), tensor_of(y)
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= min(x.ndim, y.ndim):
            raise ValueError(f"tensordot: axes={axes} does not fit shapes {x.shape} and {y.shape}")
        xa, ya = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        xa, ya = ([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    ok = all(-x.ndim <= a < x.ndim for a in xa) and all(-y.ndim <= b < y.ndim for b in ya)
    xa, ya = [int(a) % max(x.ndim, 1) for a in xa], [int(b) % max(y.ndim, 1) for b in ya]
    if (
        not ok
        or len(xa) != len(ya)
        or any(x.shape[a] != y.shape[b] for a, b in zip(xa, ya, strict=True))
    ):
        raise ValueError(f"tensordot: axes {axes} do not pair up shapes {x.shape} and {y.shape}")
    return _contract(
        x,
        y,
        [d for d in range(x.ndim) if d not in xa],
        xa,
        ya,
        [d for d in range(y.ndim) if d not in ya],
    )


def _einsum_parse(subscripts, ops):
    """Split einsum subscripts into per-operand label strings and the output labels,
    spelling each '...' out as letters unused elsewhere."""
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    ins = ins.split(",")
    if len(ins) != len(ops):
        raise ValueError(
            f"einsum: {len(ins)} operand subscripts in {subscripts!r} but {len(ops)} operands"
        )
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in s]
    nell = max(
        [x.ndim - len(t.replace("...", "")) for x, t in zip(ops, ins, strict=True) if "..." in t],
        default=0,
    )
    ell = "".join(spare[:nell][::-1])
    labels = []
    for x, t in zip(ops, ins, strict=True):
        if "..." in t:
            k = x.ndim - len(t.replace("...", ""))
            t = t.replace("...", ell[nell - k :] if k > 0 else "")
        if len(t) != x.ndim or (t and not t.isalpha()):
            raise ValueError(f"einsum: subscripts {t!r} do not fit an operand of shape {x.shape}")
        labels.append(t)
    if arrow:
        out = out.replace("...", ell)
    else:
        once = [c for c in sorted(set("".join(labels))) if "".join(labels).count(c) == 1]
        out = ell + "".join(c for c in once if c not in ell)
    return labels, out


def _einsum_diag(x, s):
    """Take diagonals of repeated labels ('ii->i') with one gather."""
    uniq = "".join(dict.fromkeys(s))
    if uniq == s:
        return x, s
    pos = np.einsum(f"{s}->{uniq}", flat_index(x.shape))
    return getitem(ravel(x), np.ascontiguousarray(pos)), uniq


def _einsum_pair(x, sx, y, sy, keep):
    """Contract two operands; labels in ``keep`` stay (as batch or free axes)."""
    drop_x = [i for i, c in enumerate(sx) if c not in sy and c not in keep]
    drop_y = [i for i, c in enumerate(sy) if c not in sx and c not in keep]
    if drop_x:
        x, sx = sum(x, tuple(drop_x)), "".join(c for c in sx if c in sy or c in keep)
    if drop_y:
        y, sy = sum(y, tuple(drop_y)), "".join(c for c in sy if c in sx or c in keep)
    for c in sx:
        if c in sy and x.shape[sx.index(c)] != y.shape[sy.index(c)]:
            raise ValueError(
                f"einsum: label {c!r} has sizes {x.shape[sx.index(c)]} and {y.shape[sy.index(c)]}"
            )
    batch = [c for c in sx if c in sy and c in keep]
    summed = [c for c in sx if c in sy and c not in keep]
    xfree = [c for c in sx if c not in sy]
    yfree = [c for c in sy if c not in sx]
    z = _contract(
        x,
        y,
        [sx.index(c) for c in xfree],
        [sx.index(c) for c in summed],
        [sy.index(c) for c in summed],
        [sy.index(c) for c in yfree],
        ([sx.index(c) for c in batch], [sy.index(c) for c in batch]),
    )
    return z, "".join(batch + xfree + yfree)


def _einsum_broadcast(terms):
    """Size-1 axes broadcast against a label's size elsewhere (as NumPy does): they are
    squeezed away, so the label is free in the operands that have it at full size."""
    sizes = {}
    for x, s in terms:
        for c, n in zip(s, x.shape, strict=True):
            sizes.setdefault(c, set()).add(n)
    for c, ns in sizes.items():
        if len(ns - {1}) > 1:
            raise ValueError(f"einsum: label {c!r} has sizes {sorted(ns)} that do not broadcast")
    out = []
    for x, s in terms:
        keep = [i for i, c in enumerate(s) if not (x.shape[i] == 1 and sizes[c] - {1})]
        if len(keep) < len(s):
            x, s = reshape(x, tuple(x.shape[i] for i in keep)), "".join(s[i] for i in keep)
        out.append((x, s))
    return out


def einsum(subscripts, *operands) -> Tensor:
    """np.einsum for any number of operands (pairwise, left to right), with '...' and
    diagonals; each pairwise contraction is one batched matmul.

    Examples:
        >>> import tapegrad as tg
        >>> A = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = tg.einsum("ii->", A); y         # the trace
        tensor(5., grad_fn=<SumBackward0>)
        >>> y.backward(); A.grad
        tensor([[1., 0.],
                [0., 1.]])
    """
    ops = [tensor_of(x) for x in operands]
    labels, out = _einsum_parse(subscripts, ops)
    if len(set(out)) != len(out) or any(c not in "".join(labels) for c in out):
        raise ValueError(
            f"einsum: output subscripts {out!r} repeat a label or use one no operand has"
        )
    terms = _einsum_broadcast([_einsum_diag(x, s) for x, s in zip(ops, labels, strict=True)])
    acc, sa = terms[0]
    for i in range(1, len(terms)):
        keep = out + "".join(s for _, s in terms[i + 1 :])
        acc, sa = _einsum_pair(acc, sa, terms[i][0], terms[i][1], keep)
    drop = tuple(i for i, c in enumerate(sa) if c not in out)
    if drop:
        acc, sa = sum(acc, drop), "".join(c for c in sa if c in out)
    return _moveto(acc, [sa.index(c) for c in out])


def norm(x: TensorLike, ord=None, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A002 - numpy's name
    """np.linalg.norm for vector norms (any p, inf, -inf) and the Frobenius, 1 and inf matrix
    norms.

    Examples:
        >>> import tapegrad as tg, tapegrad.numpy as tnp
        >>> x = tg.tensor([3.0, 4.0], requires_grad=True)
        >>> y = tnp.linalg.norm(x); y
        tensor(5., grad_fn=<SqrtBackward0>)
        >>> y.backward(); x.grad                # x / norm
        tensor([0.6000, 0.8000])
    """
    x = tensor_of(x)
    if axis is None and (ord is None or x.ndim != 2):
        if ord is not None and x.ndim != 1:
            raise ValueError(f"norm: ord={ord!r} needs a 1-D or 2-D input, got shape {x.shape}")
        axis = tuple(range(x.ndim))
    axes = normalize_axes(axis, x.ndim, "norm") if axis is not None else (0, 1)
    if len(axes) == 2 and ord is not None and ord != "fro":
        if ord not in (1, -1, math.inf, -math.inf):
            raise TypeError(
                f"norm: matrix norm ord={ord!r} (spectral/nuclear) needs the SVD: "
                "use np.linalg.norm or tnp.linalg.norm, which differentiate it"
            )
        # NumPy's order: axis[0] indexes rows, axis[1] columns (axes above is sorted)
        rows, cols = (0, 1) if axis is None else (int(a) % x.ndim for a in axis)
        inner, outer_ax = (rows, cols) if ord in (1, -1) else (cols, rows)
        s = sum(abs_(x), inner, keepdims=True)
        r = (amax if ord > 0 else amin)(s, outer_ax, keepdims=True)
        return r if keepdims else reshape(r, [d for i, d in enumerate(r.shape) if i not in axes])
    if ord in (None, 2, "fro"):
        return sqrt(sum(mul(x, x), axes, keepdims))
    if ord in (math.inf, -math.inf):
        return (amax if ord > 0 else amin)(abs_(x), axes, keepdims)
    if ord == 1:
        return sum(abs_(x), axes, keepdims)
    if ord == 0:
        # the count of nonzero entries, read through a guarded comparison: a trace replay
        # with another pattern of zeros retraces instead of reusing the recorded count
        nonzero = truth(x != 0.0)
        return Tensor._const(
            result(np.sum(nonzero, axis=axes, keepdims=keepdims, dtype=np.float64))
        )
    return power(sum(power(abs_(x), float(ord)), axes, keepdims), 1.0 / float(ord))
