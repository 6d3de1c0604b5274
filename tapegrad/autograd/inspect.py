"""Looking at the tape: ``len``, ``nbytes``, ``stats()``, ``dump()``, ``to_dot()``, Jupyter reprs.

Everything here reads the tape columns; nothing is kept per row except what the tape has (a
row's shape comes from its handle when there is one, else its size from ``voff``).
Attached to ``Tape`` and ``Tensor`` at import.
"""

import html
import shutil

import numpy as np

from ..core import tape as T
from ..core.tape import Tape
from ..core.tensor import Tensor
from .graph import Node, operand_rows
from .higher import row_shape

_ROW_BYTES = 8 * 4 + 1 + 1 + 8  # code, ip, fp, voff + rg, state (+ the handle slot)


def _shape(t, r):
    return tuple(row_shape(t, r))


def _op(t, r):
    return T._OP_NAMES[t.op(r)]


def _label(t, r):
    code = t.op(r)
    if code == T.CUSTOM:
        return t.extras[r].name
    return _op(t, r)


def _preview(t, r, k=4):
    v = t.value(r)
    body = ", ".join(f"{x:.4g}" for x in v[:k])
    return (
        f"[{body}{', ...' if v.size > k else ''}]" if v.size != 1 or row_shape(t, r) != () else body
    )


def stats(self):
    """Ops by kind: ``{"rows", "nbytes", "by_op": {name: {"count", "bytes"}}}`` (bytes of the
    rows' values and adjoints plus their column entries, largest first).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = (tg.sin(x) * 2.0).sum()
        >>> st = tg.current_tape().stats()
        >>> sorted(st), st["by_op"]["SIN"]["count"] >= 1
        (['by_op', 'nbytes', 'rows'], True)
    """
    n = self.n
    ops = self.ops(n)
    sizes = np.diff(self.voff[: n + 1])
    by = {}
    for code in np.unique(ops):
        m = ops == code
        by[T._OP_NAMES[int(code)]] = {
            "count": int(m.sum()),
            "bytes": int(sizes[m].sum() * 16 + m.sum() * _ROW_BYTES),
        }
    by = dict(sorted(by.items(), key=lambda kv: -kv[1]["bytes"]))
    return {"rows": n, "nbytes": self.nbytes, "by_op": by}


def dump(self, limit=None):
    """The Wengert list as text, one row a line: index, op, input rows, shape, value preview.

    Row numbers depend on what the tape already holds; ``limit`` caps the rows shown.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = (tg.sin(x) * 2.0).sum()
        >>> print(tg.current_tape().dump())
        tape: ... rows, ... bytes
        ...
        %...SIN            (%...) shape=(2,) [0.8415, 0.9093]
        %...MULS           (%...) shape=(2,) [1.683, 1.819]
        %...SUM            (%...) shape=() 3.502
    """
    n = self.n if limit is None else min(self.n, limit)
    lines = [f"tape: {self.n} rows, {self.nbytes} bytes"]
    for r in range(n):
        ins = ", ".join(f"%{a}" for a in operand_rows(self, r)) if self.op(r) > T.FREED else ""
        lines.append(
            f"%{r:<5} {_label(self, r):<14} ({ins}) shape={_shape(self, r)} {_preview(self, r)}"
        )
    if n < self.n:
        lines.append(f"... {self.n - n} more rows")
    return "\n".join(lines)


def _rows_to(t, root, max_nodes):
    """Rows the value of ``root`` depends on (depth-first over operands), capped."""
    seen, stack = set(), [root]
    while stack and len(seen) < max_nodes:
        r = stack.pop()
        if r in seen or r < 0:
            continue
        seen.add(r)
        if t.op(r) > T.FREED:
            stack.extend(operand_rows(t, r))
    return sorted(seen)


def _dot(t, rows, title):
    out = [f"digraph {title} {{", "  rankdir=BT;", '  node [fontname="Helvetica", fontsize=10];']
    rowset = set(rows)
    for r in rows:
        code = t.op(r)
        shape = _shape(t, r)
        if code == T.LEAF:
            style = 'shape=box, style=filled, fillcolor="lightblue"'
            label = f"leaf %{r}\\n{shape}"
        elif code == T.CONST:
            style = "shape=box, style=dashed"
            label = f"const %{r}\\n{shape}"
        else:
            style = "shape=ellipse" + (
                ', style=filled, fillcolor="khaki"' if code == T.CUSTOM else ""
            )
            name = Node(t, r).name() if code != T.FREED else "freed"
            label = f"{name}\\n%{r} {shape}"
        out.append(f'  r{r} [label="{label}", {style}];')
    for r in rows:
        if t.op(r) > T.FREED:
            for a in operand_rows(t, r):
                if a in rowset:
                    out.append(f"  r{a} -> r{r};")
    out.append("}")
    return "\n".join(out)


def tape_to_dot(self, max_nodes=2000):
    """Graphviz source of the whole tape (the first ``max_nodes`` rows).

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = tg.exp(x).sum()
        >>> tg.current_tape().to_dot().startswith("digraph tape {")
        True
    """
    return _dot(self, list(range(min(self.n, max_nodes))), "tape")


def tensor_to_dot(self, max_nodes=2000):
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
    return _dot(t, _rows_to(t, self._row, max_nodes), "tensor")


def _svg(dot):
    try:
        import graphviz
    except ImportError:
        return None
    if shutil.which("dot") is None:
        return None
    return graphviz.Source(dot).pipe(format="svg").decode()


def tape_repr_html(self):
    st = stats(self)
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v['count']}</td><td>{v['bytes']}</td></tr>"
        for k, v in st["by_op"].items()
    )
    return (
        f"<div><b>tapegrad Tape</b>: {st['rows']} rows, {st['nbytes']} bytes"
        f"<table><tr><th>op</th><th>count</th><th>bytes</th></tr>{rows}</table></div>"
    )


def tensor_repr_html(self):
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


def tape_repr(self):
    if not self.alive:
        return "<tapegrad Tape: retired>"
    return f"<tapegrad Tape: {self.n} rows, {self.nbytes} bytes>"


Tape.stats = stats
Tape.dump = dump
Tape.to_dot = tape_to_dot
Tape._repr_html_ = tape_repr_html
Tape._repr_svg_ = lambda self: _svg(tape_to_dot(self))
Tape.__repr__ = tape_repr
Tensor.to_dot = tensor_to_dot
Tensor._repr_html_ = tensor_repr_html
Tensor._repr_svg_ = lambda self: _svg(tensor_to_dot(self)) if self.grad_fn is not None else None
