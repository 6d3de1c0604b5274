"""Views of the tape that look like PyTorch's graph objects, built on demand from tape rows."""

import weakref

from ..core import tape as T

from ..core.tape_inspect import operand_rows, row_name
from ..core.tensor import tape_of


class Node:
    """``grad_fn`` of a non-leaf tensor: a view of one tape row.  The outputs of one custom
    op (a ``tg.Function``, ``custom_vjp``, ``checkpoint``) are one node, as in PyTorch: their
    nodes compare equal and ``next_functions`` gives each its output index."""

    __slots__ = ("tape", "row")

    def __init__(self, tape, row):
        self.tape = tape
        self.row = row

    def _check(self):
        if not self.tape.alive:
            raise RuntimeError("this grad_fn belongs to a graph that was freed by backward()")

    def _payload(self):
        t = self.tape
        return t.side.payloads.get(self.row) if t.op(self.row) == T.CUSTOM else None

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
            elif code == T.CUSTOM:
                p = t.side.payloads.get(r)
                rows = tuple(getattr(p, "output_rows", ()))
                k = p.out_pos[rows.index(r)] if r in rows else 0
                out.append((Node(t, r), int(k)))
            else:
                out.append((Node(t, r), 0))
        return tuple(out)

    def register_prehook(self, hook):
        """``hook(grad_outputs) -> tuple or None``, called with this node's output gradient
        (a 1-tuple) before the node's backward runs; what it returns replaces it.  As in
        PyTorch, it runs after the output tensor's own hooks (``tensor.register_hook``),
        whenever either was registered, and what it returns reaches only the rows below: the
        gradient captured for the tensor (``autograd.grad(out, [y])``, ``y.retain_grad()``) is
        the one before the node's pre-hooks.

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> y = x * x
            >>> h = y.grad_fn.register_prehook(lambda g: (g[0] * 10.0,))
            >>> y.sum().backward(); x.grad
            tensor([20., 40.])
        """
        self._check()
        p = self._payload()
        if p is not None and len(getattr(p, "output_rows", ())) > 1:
            raise NotImplementedError(
                f"{self.name()}.register_prehook(): a pre-hook on a node with "
                f"{len(p.output_rows)} outputs is not supported; register a hook on each "
                "output tensor instead (tensor.register_hook)"
            )
        name = self.name()

        def prehook(g):
            res = hook((g,))
            if res is None:
                return None
            if not isinstance(res, (tuple, list)) or len(res) != 1:
                raise TypeError(
                    f"a pre-hook of {name} must return None or a tuple of 1 gradient, "
                    f"got {type(res).__name__}"
                )
            return res[0]

        prehook.node_prehook = True  # (run after the tensor hooks: ``split_hooks``)
        hooks = self.tape.side.hooks.setdefault(self.row, [])
        hooks.append(prehook)
        return RemovableHandle(hooks, prehook)

    def register_hook(self, hook):
        raise NotImplementedError(
            f"{self.name()}.register_hook(): post-hooks on graph nodes (hook(grad_inputs, "
            "grad_outputs)) are not supported; register hooks on the node's input tensors "
            "(tensor.register_hook) or a pre-hook (grad_fn.register_prehook)"
        )

    def __eq__(self, other):
        if not isinstance(other, Node) or other.tape is not self.tape:
            return False
        p = self._payload()
        return other.row == self.row or (p is not None and other._payload() is p)

    def __hash__(self):
        p = self._payload()
        return hash((id(self.tape), self.row if p is None else id(p)))

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


def register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after a backward has accumulated this leaf's ``.grad`` (PyTorch's
    ``register_post_accumulate_grad_hook``): runs with grad mode off (on under
    ``create_graph``), must return None, and
    may update ``tensor.grad`` in place (an optimizer step per parameter, as soon as its
    gradient is complete).  ``tg.autograd.grad`` accumulates nothing, so it calls none.

    Examples:
        >>> import tapegrad as tg
        >>> w = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> def sgd_step(p):
        ...     with tg.no_grad():
        ...         p -= 0.1 * p.grad
        ...     p.grad = None
        >>> handle = w.register_post_accumulate_grad_hook(sgd_step)
        >>> (w ** 2).sum().backward(); w                 # w - 0.1 * 2 w
        tensor([0.8000, 1.6000], requires_grad=True)
        >>> handle.remove()
    """
    if not self._leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._meta is None:
        self._meta = {}
    hooks = self._meta.setdefault("post_accumulate_hooks", [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


class GraphMethods:
    """Tensor's graph view and hooks (a base class of the public ``Tensor``)."""

    __slots__ = ()
    grad_fn = property(grad_fn)
    retain_grad = retain_grad
    register_hook = register_hook
    register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
