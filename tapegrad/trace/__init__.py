"""Record once, replay many: ``tg.trace(f, *example_args)``.

``f`` runs once on a private tape with leaf Tensors for its float arguments.  The recorded rows
(plain arrays) are then replayed by compiled code: the generated ``forward_sweep`` writes new
values for every row, ``backward_sweep`` sweeps the adjoints, one njit call per
``tr.grad``.  Wherever Python looked at a traced value while recording (comparisons, ``bool``,
``float``/``.item()``, ``.numpy()``...), a GUARD row keeps the outcome it saw, with the source
line in ``Trace.sites``; a replay whose inputs would go another way raises RetraceRequired (or
records again, with ``retrace=True``), so a replay never returns a silently wrong answer.
Arguments of another shape or structure raise ``ArgumentsChanged`` (a ValueError), or are
recorded again with ``retrace=True``, as ``jax.jit`` compiles again for a new shape.

Ops whose forward is Python (NumPy's LAPACK, ``tapegrad.scipy``, ``custom_jvp``/``custom_vjp``,
``fixed_point``, a ``tg.Function``) are CUSTOM rows: a replay stops the compiled sweep there,
calls the op's recorded Python payload on this replay's values (forward, then its VJP or JVP
rule), and resumes.  Whatever the payload decides from the values is decided again.

Layout: the traced input leaves are rows 0..k-1 (arguments in ``argnums`` first), so their
values are the first ``m`` entries of ``val`` and a replay starts by writing ``val[:m] = x``.
"""

from ..kernels import sweeps as _sweeps
from ..kernels.sweeps import RetraceRequired
from .fileformat import op_table_fingerprint
from .record import ArgumentsChanged
from .replay import Trace, Traced, load_trace, trace, traced

__all__ = [
    "trace",
    "Trace",
    "traced",
    "Traced",
    "RetraceRequired",
    "ArgumentsChanged",
    "load_trace",
    "op_table_fingerprint",
]


def __getattr__(name):
    """``replay_grad`` (for users' own ``@njit`` code), made when first asked for: its
    dispatcher and those of every kernel it calls cost tens of milliseconds at import."""
    if name == "replay_grad":
        return _sweeps.replay_grad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
