"""Pictures of a tensor's graph: ``x.to_dot()`` and its Jupyter reprs (``Tape``'s own are in
``core/tape_inspect.py``).  ``TensorPictures`` is a base class of the public ``Tensor``.
"""

import html

import numpy as np

from ..core.tape_inspect import graph_dot, rows_to, svg


class TensorPictures:
    """Tensor's graph pictures (a base class of the public ``Tensor``)."""

    __slots__ = ()

    def to_dot(self, max_nodes=2000):
        """Graphviz source of the graph that produced this tensor.

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> dot = (tg.sin(x) * 2.0).sum().to_dot()
            >>> print(dot.splitlines()[0], "SinBackward0" in dot, "SumBackward0" in dot)
            digraph tensor { True True
        """
        t = self._tape
        if t is None or not t.alive or self._row < 0:
            return f'digraph tensor {{\n  r [label="{tuple(self.shape)}", shape=box];\n}}'
        return graph_dot(t, rows_to(t, self._row, max_nodes), "tensor")

    def _repr_html_(self):
        fn = self.grad_fn
        t = self._tape
        size = len(t) if t is not None and t.alive else 0
        value = html.escape(np.array2string(np.asarray(self._v), precision=4, threshold=50))
        return (
            f"<div><b>Tensor</b> shape={tuple(self.shape)} dtype={self.dtype}"
            f"{' grad_fn=' + html.escape(fn.name()) if fn is not None else ''}"
            f"{' requires_grad' if self._rg else ''} (tape: {size} rows)"
            f"<pre>{value}</pre></div>"
        )

    def _repr_svg_(self):
        return svg(self.to_dot()) if self.grad_fn is not None else None
