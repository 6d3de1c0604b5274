"""The kinds of op declaration: internal rows, elementwise formulas, structural kernels, and
scans (structural ops whose kernels are written from a combine formula)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from . import formula, memo

memo.rule("partial")(formula.partial)


class BadParams(ValueError):
    """A row's parameters (read from a trace file) that do not fit the row: the message says
    how."""


@dataclass(frozen=True)
class Internal:
    """A row kind the sweeps treat specially (leaves, constants, custom ops, guards)."""

    name: str
    graph: str = ""
    # its backward adds into nothing but the adjoints of operand rows a / b (see Structural)
    operand_adjoints_only: bool = True
    family: str = "internal"


@dataclass(frozen=True)
class Elementwise:
    """``out = fwd(a[, b][, c, c2])`` element by element on equal shapes.

    ``d`` holds the partial derivative of ``out`` with respect to each operand, as formulas;
    the VJP is ``g * d``, the JVP ``sum(t * d)``, the second-order sweep differentiates ``d``
    once more (symbolically, at generation time) and create_graph evaluates ``d`` on Tensors.
    A one-operand op whose value is a function of the formula language (``exp(a)``) leaves
    ``d`` out: it is that function's derivative rule (``formula.partial``), written once.
    """

    name: str
    fwd: str
    d: tuple = ()
    params: int = 0  # scalar parameters: c = fp[row]; c2 = fpool[ip[row]]
    graph: str = ""  # grad_fn name, e.g. "ExpBackward0"
    numpy: tuple = ()  # NumPy / Tensor names this op serves
    domain: tuple = (-2.0, 2.0)  # test inputs are drawn from here
    kinks: tuple = ()  # test inputs keep clear of these points
    # a public function (tg.exp, tg.hypot ...): its docstring example, checked by the
    # doctests (one operand: input, value, derivative, derivative formula; two operands:
    # x1, x2, value, x1's gradient, x2's gradient); an optional summary line; the variable it
    # is in tapegrad.core.functions when not the lower-case name; Tensor method names besides
    # that name (PyTorch's spellings)
    example: tuple = ()
    doc: str = ""
    function: str = ""
    methods: tuple = ()
    # PyTorch's saved tensors ("a", "b", "out"), given when ``d`` reads a value PyTorch's
    # backward does not keep: an in-place change of that value after the op raises no version
    # error, as in PyTorch (tapegrad's rows keep their own values, so nothing is lost)
    saved: Union[tuple, None] = None
    family: str = "elementwise"

    def __post_init__(self):
        if not self.d:
            object.__setattr__(self, "d", (memo.derived("partial", self.fwd),))

    @property
    def arity(self) -> int:
        return len(self.d)


@dataclass(frozen=True)
class Structural:
    """An op with hand-written kernels (reductions, shape, indexing, linear algebra).

    Kernels are plain functions whose source the generator copies into the generated module:
    ``forward(A, B, V, D, acc, lo, n, pa, pb, p, voff, ipool, fpool)`` writes the value (A, B
    hold operands a and b, V the recorded values, D the destination; ``acc`` adds instead);
    ``backward(G, A, B, D, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool, kind)``
    adds the operands' adjoints into D (returns 0, or a status for Python to act on).
    ``tangent`` / ``backward_tangent`` are "linear" (the op is linear in its operands: apply
    ``forward`` to tangents, ``backward`` to tangent adjoints), "bilinear" (matmul: one term
    per operand) or kernels of their own.  Second-order sweeps carry many directions at once
    (lanes: ``tvals[l]``/``tadjs[l]`` is direction l's tangent/tangent-adjoint buffer) and run
    those rules once per lane, unless the op gives ``tangent_lanes(val, tvals, flag, lo, n,
    pa, pb, ra, rb, p, voff, ipool, fpool)`` / ``backward_tangent_lanes(adj, tadjs, val,
    tvals, flag, lo, n, pa, pb, ra, rb, p, voff, rg, state, ipool, fpool)`` doing every lane
    in one call (set-up such as index offsets paid once; a matmul becomes matrix-matrix).
    ``vjp(rows, r, g)`` and ``jvp(rows, r, tangent)``
    are the same rules on Tensors, for create_graph and nested forward mode.
    """

    name: str
    forward: Callable
    backward: Callable
    vjp: Callable
    jvp: Callable
    tangent: Union[str, Callable] = "linear"
    backward_tangent: Union[str, Callable] = "linear"
    # every lane in one call, instead of ``tangent`` / ``backward_tangent`` once per lane
    tangent_lanes: Union[Callable, None] = None
    backward_tangent_lanes: Union[Callable, None] = None
    helpers: tuple = ()  # njit helpers the kernels call (copied too)
    operands: Union[Callable, None] = None  # kernel listing the rows read, when not a / b
    graph: str = ""
    numpy: tuple = ()
    domain: tuple = (-2.0, 2.0)
    # its backward adds into nothing but the adjoints of its operand rows a / b, so a backward
    # clears only those (CONCAT reaches rows through its parameters: False, as for any op
    # that does not say)
    operand_adjoints_only: bool = False
    # its backward zeroes the adjoint of an operand it is the first to reach (state bit 1
    # clear) itself, where the sweep would zero it before the call: MATMUL, whose large
    # products go to NumPy's BLAS, which writes a first contribution in place (no zeroing)
    zeroes_operands: bool = False
    # what a trace file may hold: the operand rows the op reads (2: a and b, 1: a, 0: its
    # parameters name them), whether they are the size of the row (as elementwise operands),
    # and ``check(r, p, ipool, fpool, size, na, nb, n)``, which raises BadParams when the
    # row's parameters do not fit its sizes; None: a trace file cannot hold the op
    arity: int = 1
    same_size: bool = False
    check: Union[Callable, None] = None
    family: str = "structural"


@dataclass(frozen=True)
class Scan(Structural):
    """A running combination along one axis: ``s_k = combine(s_{k-1}, a_k[, b_k])`` from
    ``s_{-1} = init``, the formula over ``s`` (the running value) and the operands' elements
    ``a`` (and ``b``).  Built by ``structural.scans.scan``, which writes the kernels from the
    formula (its partials by ``formula.derivative``) and gives the Tensor-level rules, so a
    scan is one declaration.  ``ufunc``: the NumPy ufunc whose ``accumulate`` this is
    (``np.add.accumulate`` is cumsum), for the value and the dispatch; ``function``,
    ``methods``, ``example`` (input, value, gradient of the sum), ``doc`` as for an
    elementwise op."""

    combine: str = ""
    init: float = 0.0
    ufunc: str = ""
    function: str = ""
    methods: tuple = ()
    example: tuple = ()
    doc: str = ""
    family: str = "scan"


@dataclass(frozen=True)
class Linear(Structural):
    """A linear op moving values along an index map without arithmetic (a strided view, a
    sum over axes, an integer index, a reshape): built by ``structural.index_maps.linear``, which
    writes the kernels, the transpose and the Tensor-level rules from the map.  ``gather``:
    output entry j is operand entry ``offs[j]`` (else operand entry j adds into output entry
    ``offs[j]``); ``offsets(ipool, p)``: the map, for the kernels, and ``index(ipool, p)``, the
    same map as whole-array NumPy (both None: the identity);
    ``vectorised_backward``: the backward on whole slices, for the sweep that runs while the
    kernels compile."""

    gather: bool = True
    offsets: Union[Callable, None] = None  # the map for the kernels (njit)
    index: Union[Callable, None] = None
    vectorised_backward: Union[Callable, None] = None
    family: str = "linear"


Op = Union[Internal, Elementwise, Structural]
