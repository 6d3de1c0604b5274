"""Looking at a tape: ``stats()``, ``dump()``, ``to_dot()`` and the Jupyter reprs of ``Tape``.

``TapeInspection`` is a base class of ``Tape``; it reads the tape's columns through the tape's
own methods, so it sits below ``tape.py`` and needs nothing but the op spec.  Nothing is kept
per row: a row's shape comes from its entered handle when there is one, else from the tape.
"""

import html
import shutil

import numpy as np

from ..ops.spec import NAMES, C, graph_name

_ROW_BYTES = 8 * 4 + 1 + 1 + 8  # code, ip, fp, voff + rg, state (+ the handle slot)


def operand_rows(t, row):
    """Rows that ``row`` of tape ``t`` reads, derived from its op code and parameters."""
    code = t.op(row)
    if code == C.CONCAT:  # CONCAT keeps its inputs in ipool
        p = int(t.ip[row])
        k = int(t.ipool[p + 2])
        return [int(r) for r in t.ipool[p + 3 : p + 3 + k]]
    if code == C.CUSTOM:
        return list(t.side.payloads[row].input_rows)
    return [r for r in t.operands(row) if r >= 0]


def row_shape(t, r):
    """The shape of row ``r``'s value (its handle's when one is entered)."""
    h = t.entered(r)
    if h is not None:
        return h.shape
    return t.shape(r)


def row_name(t, r):
    """The graph-view name of row ``r`` (``SinBackward0``; a custom op's own name)."""
    if t.op(r) == C.CUSTOM:
        return t.side.payloads[r].name
    return graph_name(t.op(r))


def _label(t, r):
    code = t.op(r)
    if code == C.CUSTOM:
        return t.side.payloads[r].name
    return NAMES[code]


def _preview(t, r, k=4):
    v = t.value(r)
    body = ", ".join(f"{x:.4g}" for x in v[:k])
    if v.size != 1 or tuple(row_shape(t, r)) != ():
        return f"[{body}{', ...' if v.size > k else ''}]"
    return body


def rows_to(t, root, max_nodes):
    """Rows the value of ``root`` depends on (depth-first over operands), capped."""
    seen, stack = set(), [root]
    while stack and len(seen) < max_nodes:
        r = stack.pop()
        if r in seen or r < 0:
            continue
        seen.add(r)
        if t.op(r) > C.FREED:
            stack.extend(operand_rows(t, r))
    return sorted(seen)


def graph_dot(t, rows, title):
    """Graphviz source of ``rows`` of tape ``t`` and the edges between them."""
    out = [f"digraph {title} {{", "  rankdir=BT;", '  node [fontname="Helvetica", fontsize=10];']
    rowset = set(rows)
    for r in rows:
        code = t.op(r)
        shape = tuple(row_shape(t, r))
        if code == C.LEAF:
            style = 'shape=box, style=filled, fillcolor="lightblue"'
            label = f"leaf %{r}\\n{shape}"
        elif code == C.CONST:
            style = "shape=box, style=dashed"
            label = f"const %{r}\\n{shape}"
        else:
            style = "shape=ellipse" + (
                ', style=filled, fillcolor="khaki"' if code == C.CUSTOM else ""
            )
            name = row_name(t, r) if code != C.FREED else "freed"
            label = f"{name}\\n%{r} {shape}"
        out.append(f'  r{r} [label="{label}", {style}];')
    for r in rows:
        if t.op(r) > C.FREED:
            for a in operand_rows(t, r):
                if a in rowset:
                    out.append(f"  r{a} -> r{r};")
    out.append("}")
    return "\n".join(out)


def svg(dot):
    """The SVG picture of Graphviz source, or None without the optional graphviz package."""
    try:
        import graphviz  # optional: only for pictures in Jupyter
    except ImportError:
        return None
    if shutil.which("dot") is None:
        return None
    return graphviz.Source(dot).pipe(format="svg").decode()


class TapeInspection:
    """The inspection methods of ``Tape`` (a base class: ``Tape`` is defined in tape.py)."""

    __slots__ = ()

    def stats(self):
        """Ops by kind: ``{"rows", "nbytes", "by_op": {name: {"count", "bytes"}}}`` (bytes of
        the rows' values and adjoints plus their column entries, largest first).

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
            by[NAMES[int(code)]] = {
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
            ins = ", ".join(f"%{a}" for a in operand_rows(self, r)) if self.op(r) > C.FREED else ""
            lines.append(
                f"%{r:<5} {_label(self, r):<14} ({ins}) shape={tuple(row_shape(self, r))} "
                f"{_preview(self, r)}"
            )
        if n < self.n:
            lines.append(f"... {self.n - n} more rows")
        return "\n".join(lines)

    def to_dot(self, max_nodes=2000):
        """Graphviz source of the whole tape (the first ``max_nodes`` rows).

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> y = tg.exp(x).sum()
            >>> tg.current_tape().to_dot().startswith("digraph tape {")
            True
        """
        return graph_dot(self, list(range(min(self.n, max_nodes))), "tape")

    def _repr_html_(self):
        st = self.stats()
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{v['count']}</td><td>{v['bytes']}</td></tr>"
            for k, v in st["by_op"].items()
        )
        return (
            f"<div><b>tapegrad Tape</b>: {st['rows']} rows, {st['nbytes']} bytes"
            f"<table><tr><th>op</th><th>count</th><th>bytes</th></tr>{rows}</table></div>"
        )

    def _repr_svg_(self):
        return svg(self.to_dot())

    def __repr__(self):
        if not self.alive:
            return "<tapegrad Tape: retired>"
        return f"<tapegrad Tape: {self.n} rows, {self.nbytes} bytes>"
