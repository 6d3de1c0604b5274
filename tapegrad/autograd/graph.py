"""Views of the tape that look like PyTorch's graph objects, built on demand from tape rows."""

import weakref

from ..core import tape as T

from ..core.tape_inspect import operand_rows, row_name
from ..core.tensor import tape_of


class Node:
    """``grad_fn`` of a non-leaf tensor: a view of one tape row."""

    __slots__ = ("tape", "row")

    def __init__(self, tape, row):
        self.tape = tape
        self.row = row

    def _check(self):
        if not self.tape.alive:
            raise RuntimeError("this grad_fn belongs to a graph that was freed by backward()")

    def name(self):
        self._check()
        return row_name(self.tape, self.row)

    @property
    def next_functions(self):
        self._check()
        t = self.tape
        out = []
        for r in operand_rows(t, self.row):
            code = t.op(r)
            if code == T.LEAF:
                out.append((AccumulateGrad(t.entered(r)), 0))
            elif code == T.CONST or not t.rg[r]:
                out.append((None, 0))
            else:
                out.append((Node(t, r), 0))
        return tuple(out)

    def __eq__(self, other):
        return isinstance(other, Node) and other.tape is self.tape and other.row == self.row

    def __hash__(self):
        return hash((id(self.tape), self.row))

    def __repr__(self):
        return f"<{self.name()} object (tape row {self.row})>"


class AccumulateGrad:
    """The sink of a leaf in ``next_functions``."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad object>"


def grad_fn(self):
    """``y.grad_fn``: the node that records how y was computed (None for a leaf or a Tensor
    without grad); it names the op.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> tg.sin(x).grad_fn.name(), x.grad_fn
        ('SinBackward0', None)
    """
    if self._leaf or not self._rg:
        return None
    t = tape_of(self)
    return None if t is None else Node(t, self._row)


def retain_grad(self):
    """``y.retain_grad()``: keep the gradient of a non-leaf y in ``y.grad`` at the next
    backward (leaves keep theirs anyway).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3.0
        >>> y.retain_grad()
        >>> (y ** 2).sum().backward(); y.grad, x.grad       # 2 y, 6 y
        (tensor([ 6., 12.]), tensor([18., 36.]))
    """
    if self._leaf:
        return
    t = tape_of(self)
    if t is None:
        raise RuntimeError("retain_grad() on a tensor whose graph was already freed")
    retained = t.side.retain
    ref = retained.get(self._row)
    if ref is None or ref() is not self:
        retained[self._row] = weakref.ref(self)  # the tape never keeps a graph handle alive


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks, hook):
        self.hooks = hooks
        self.hook = hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def register_hook(self, hook):
    """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad.

    Hooks run in registration order.  A leaf keeps its hooks (``_meta["hooks"]``, applied when
    ``.grad`` is accumulated).  A non-leaf's hooks belong to its tape row
    (``t.side.hooks[row]``): the backward sweep stops after that row's adjoint is complete,
    runs them, and what they return is what flows on to the row's inputs.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> handle = x.register_hook(lambda g: g * 10.0)
        >>> (x ** 2).sum().backward(); x.grad                # 10 * 2 x
        tensor([20., 40.])
        >>> handle.remove()
    """
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._leaf:
        if self._meta is None:
            self._meta = {}
        hooks = self._meta.setdefault("hooks", [])
    else:
        t = tape_of(self)
        if t is None:
            raise RuntimeError("register_hook() on a tensor whose graph was already freed")
        hooks = t.side.hooks.setdefault(self._row, [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


class GraphMethods:
    """Tensor's graph view and hooks (a base class of the public ``Tensor``)."""

    __slots__ = ()
    grad_fn = property(grad_fn)
    retain_grad = retain_grad
    register_hook = register_hook
