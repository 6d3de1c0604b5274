"""``scipy.integrate.odeint``, differentiable in the initial state, the times and the args.

With no Tensor among ``y0``, ``t`` and the args it is SciPy's ``odeint`` (LSODA).  With a
Tensor it integrates with the Dormand-Prince 5(4) pair (an explicit adaptive Runge-Kutta
method) whose steps are recorded on the tape as Tensor ops: discretize, then differentiate.
The gradient is the exact derivative of the computed solution; the step sizes are not
differentiated, and they are chosen so that both the solution and its derivative meet the
tolerances: the local error control also covers the variational equation along one fixed
direction of the state, integrated alongside by forward mode on
values, so a kink in ``func`` (where the Jacobian jumps) is resolved for the derivative
too.  Each output time is hit exactly (the last step of an interval is cut to end there), and
the steps between two output times are fractions of that interval, so the solution is
differentiable in ``t`` too.  Reverse mode, forward mode and higher orders all work, as they
do for the ops ``func`` uses.
"""

from __future__ import annotations

import numpy as np

from .. import numpy as tnp
from ..core import functions as O
from ..core.tensor import STATE
from ..tensor_class import Tensor
from ..transforms.second_order import jvp as _jvp
from . import require_scipy

_si = require_scipy("scipy.integrate")

__all__ = ["odeint"]

# Dormand-Prince 5(4): nodes, stages, 5th-order weights (= the last stage) and the error
# weights (5th minus embedded 4th order)
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)


def _has_tensor(x) -> bool:
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(v) for v in x)
    if isinstance(x, dict):
        return any(_has_tensor(v) for v in x.values())
    return False


def _rms(v) -> float:
    return float(np.sqrt(np.mean(np.square(v)))) if np.size(v) else 0.0


def _value(x):
    return np.asarray(x.data if isinstance(x, Tensor) else x, dtype=np.float64)


def odeint(
    func,
    y0,
    t,
    *args,
    rtol: float | None = None,
    atol: float | None = None,
    mxstep: int = 0,
    hmax: float = 0.0,
    tfirst: bool = False,
    **kwargs,
):
    """Integrate dy/dt = func(y, t, *args) from y(t[0]) = y0; the states at the times t,
    shape (len(t),) + y0.shape.  SciPy's signature: the extra arguments as ``args=(...)``
    (or positionally after t, one tuple being SciPy's args), ``tfirst=True`` for
    func(t, y, ...).

    t: finite and monotone (repeated times allowed, as SciPy; at a repeated time the state
    still moves with it, so its derivative in that time is func there).
    rtol, atol: per-step error tolerances (SciPy's defaults, 1.49012e-8; a number or one per
    component of y), the local error estimate of each step kept below atol + rtol * |y| (root
    mean square over components).  func must return one derivative per component of y.
    mxstep: the most steps between two output times (default 500 as SciPy); more raises
    RuntimeError instead of returning an inaccurate solution.  hmax: the largest step
    (0: no limit).  SciPy's other options apply to LSODA only and are refused with Tensors.

    >>> import numpy as np
    >>> import tapegrad as tg
    >>> from tapegrad.scipy.integrate import odeint
    >>> decay = lambda y, t, k: -k * y
    >>> dk = tg.grad(lambda k: odeint(decay, 1.0, np.array([0.0, 1.0]), k)[1, 0])(2.0)
    >>> round(float(dk), 7)             # d/dk exp(-k) at k = 2
    -0.1353353
    """
    extra = kwargs.pop("args", None)
    if extra is not None:
        if args:
            raise TypeError(
                "odeint: give the extra arguments as args=(...) or positionally, not both"
            )
        args = tuple(extra) if isinstance(extra, (tuple, list)) else (extra,)
    elif len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]  # SciPy's odeint(func, y0, t, (a, b))
    if not (_has_tensor(y0) or _has_tensor(t) or _has_tensor(args)):
        opts = dict(kwargs, mxstep=mxstep, hmax=hmax, tfirst=tfirst)
        if rtol is not None:
            opts["rtol"] = rtol
        if atol is not None:
            opts["atol"] = atol
        return _si.odeint(func, y0, t, args=tuple(args), **opts)
    if STATE.guard is not None:  # a tg.trace recording
        raise TypeError(
            "tg.trace cannot replay tapegrad.scipy.integrate.odeint: its adaptive steps are "
            "chosen in Python from the values of each call, so a replay would repeat the "
            "recorded steps (or refuse every new input). Differentiate it with tg.grad / "
            "tg.value_and_grad, which solve the ODE at every call"
        )
    if kwargs:
        raise TypeError(
            f"tapegrad.scipy.integrate.odeint: options {sorted(kwargs)} belong to "
            "SciPy's LSODA and are not supported with Tensors (rtol, atol, "
            "mxstep, hmax and tfirst are)"
        )
    if int(mxstep) < 0 or not float(hmax) >= 0.0:
        raise ValueError(
            "tapegrad.scipy.integrate.odeint: mxstep and hmax must be >= 0 (0: the default), "
            f"got mxstep={mxstep!r}, hmax={hmax!r}"
        )
    mxstep = int(mxstep) or 500
    hmax = float(hmax) or np.inf

    def f(y, s):
        out = func(s, y, *args) if tfirst else func(y, s, *args)
        return _as_state(out, y.shape)

    y = O.tensor_of(tnp.asarray(y0) if isinstance(y0, (list, tuple)) else y0)
    if y.ndim == 0:
        y = O.reshape(y, (1,))  # SciPy's states are (1,) for a scalar y0
    rtol = _tolerance(rtol, "rtol", y.shape)
    atol = _tolerance(atol, "atol", y.shape)
    if np.any(np.asarray(rtol) + np.asarray(atol) <= 0.0):
        raise ValueError(
            "tapegrad.scipy.integrate.odeint: rtol and atol must not both be zero (for any "
            "component): give a positive tolerance"
        )
    tt = t if isinstance(t, Tensor) else O.tensor_of(np.asarray(t, dtype=np.float64))
    tv = _value(tt)
    if tv.ndim != 1 or tv.size < 1:
        raise ValueError("odeint: t must be a one-dimensional sequence of times")
    steps_t = np.diff(tv)
    if not np.all(np.isfinite(tv)) or not (np.all(steps_t >= 0) or np.all(steps_t <= 0)):
        raise ValueError(
            "tapegrad.scipy.integrate.odeint: the values in t must be finite and "
            "monotonically increasing or monotonically decreasing (repeated values are "
            f"allowed), got {tv.tolist()}; integrate each monotone run separately"
        )
    outs = [y]
    k1 = f(y, tt[0])
    slope, v = _probe(func, args, tfirst, _value(y))
    h_abs = _initial_step(_value(y), _value(k1), tv, rtol, atol)
    for i in range(tv.size - 1):
        span = tt[i + 1] - tt[i]
        length = abs(tv[i + 1] - tv[i])
        if length == 0.0:  # a repeated time: one step of length zero (value y, and the
            # derivatives in the two times of a step of span t[i+1] - t[i], as elsewhere)
            y, k1 = _dp_step(f, y, tt[i], span, k1, 0.0)[:2]
            outs.append(y)
            continue
        theta, steps = 0.0, 0
        while theta < 1.0:
            dtheta = min(h_abs, hmax) / length
            if theta + dtheta >= 1.0 - 1e-12:
                dtheta = 1.0 - theta
            h = span * dtheta
            s = tt[i] + span * theta
            h_value = float(tv[i + 1] - tv[i]) * dtheta
            y_new, k7, err_vec, stages = _dp_step(f, y, s, h, k1, h_value)
            scale = atol + rtol * np.maximum(np.abs(_value(y)), np.abs(_value(y_new)))
            v_new, err_probe = _probe_step(slope, stages, v, h_value)
            scale_probe = atol + rtol * np.maximum(np.abs(v), np.abs(v_new))
            err = max(_rms(err_vec / scale), _rms(err_probe / scale_probe))
            if not np.isfinite(err):
                where = tv[i] + (tv[i + 1] - tv[i]) * theta
                raise FloatingPointError(
                    f"tapegrad.scipy.integrate.odeint: the solution is not finite near t = {where}"
                )
            if err <= 1.0:
                theta += dtheta
                y, k1, v = y_new, k7, v_new
            h_abs = dtheta * length * (10.0 if err == 0.0 else min(10.0, max(0.2, 0.9 * err**-0.2)))
            steps += 1
            if steps > mxstep:
                raise RuntimeError(
                    f"tapegrad.scipy.integrate.odeint: more than mxstep={mxstep} steps between "
                    f"t = {tv[i]} and t = {tv[i + 1]}; raise mxstep, or loosen rtol / atol"
                )
        outs.append(y)
    return O.stack(outs, 0)


def _as_state(out, shape):
    """func's value as a Tensor of the state's shape (SciPy ravels it; a size that differs from
    the state's is an error, as in SciPy, never a silent broadcast)."""
    out = out if isinstance(out, Tensor) else tnp.asarray(out)
    if out.shape != shape:
        if out.size != int(np.prod(shape)):
            raise RuntimeError(
                f"tapegrad.scipy.integrate.odeint: func returned shape {out.shape} (size "
                f"{out.size}), but the state y has shape {shape}; return one derivative per "
                "component of y"
            )
        out = O.reshape(out, shape)
    return out


def _tolerance(value, name, shape):
    """rtol / atol: SciPy's default, a number, or one value per component of y."""
    if value is None:
        return 1.49012e-8
    v = np.asarray(_value(value), dtype=np.float64)
    if not np.all(v >= 0.0):
        raise ValueError(
            f"tapegrad.scipy.integrate.odeint: {name} must be >= 0 (finite), got {value!r}"
        )
    if v.ndim == 0:
        return float(v)
    if v.size != int(np.prod(shape)):
        raise ValueError(
            f"tapegrad.scipy.integrate.odeint: {name} must be a number or have one value per "
            f"component of y (shape {shape}), got shape {v.shape}"
        )
    return v.reshape(shape)


def _probe(func, args, tfirst, y0):
    """The right-hand side of the variational equation v' = J(y(t)) v along one fixed
    direction of the state, by forward mode on values, and the probe's initial tangent.  The
    direction is deterministic, generic (no zero or repeated entries) and scaled to the
    state.  It probes the state only, so the steps (hence the values) do not depend on which
    arguments are Tensors; where the Jacobian in y jumps, the steps that resolve the probe
    resolve the sensitivities to the arguments too."""
    v0 = np.random.default_rng(0).uniform(0.5, 1.0, y0.shape) * np.maximum(np.abs(y0), 1.0)
    values = [a.data if isinstance(a, Tensor) else a for a in args]

    def slope(y, s, v):
        def rhs(yy):
            out = func(s, yy, *values) if tfirst else func(yy, s, *values)
            return _as_state(out, yy.shape)

        return np.asarray(_value(_jvp(rhs, (y,), (v,))[1]), dtype=np.float64)

    return slope, v0


def _initial_step(y0, f0, tv, rtol, atol):
    """A first step from the sizes of y0 and y0' (Hairer, Norsett and Wanner), at most the
    first interval."""
    scale = atol + rtol * np.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    spans = np.abs(np.diff(tv))
    first = spans[spans > 0][0] if np.any(spans > 0) else 1.0
    return min(h, first)


def _dp_step(f, y, s, h, k1, h_value):
    """One Dormand-Prince step from (s, y) of (signed, Tensor or float) length h: the new
    state, its derivative (the next step's first stage) and the local error estimate."""
    ks = [k1]
    y_new = y
    stages = [(y, s)]
    for i in range(1, 7):
        incr = None
        for a, k in zip(_A[i], ks[:i], strict=True):
            if a:
                incr = k * a if incr is None else incr + k * a
        y_new = y + h * incr
        stages.append((y_new, s + h * _C[i]))
        ks.append(f(*stages[-1]))
    err = h_value * sum(e * _value(k) for e, k in zip(_E, ks, strict=True) if e)
    return y_new, ks[6], err, stages


def _probe_step(slope, stages, v, h_value):
    """The same Dormand-Prince step for the variational equation v' = J(y(t)) v + f_p dp
    along one fixed direction (slope(y, s, v) gives its right-hand side at a stage): the
    new tangent and its local error estimate.  Controlling that error too makes the step
    sizes resolve where the Jacobian changes fast or jumps (a kink in func), so the
    derivative of the computed solution is as accurate as the solution."""
    ws = []
    for i, (y_i, s_i) in enumerate(stages):
        v_i = v + h_value * sum(a * w for a, w in zip(_A[i], ws, strict=False) if a) if i else v
        ws.append(slope(_value(y_i), float(_value(s_i)), v_i))
    err = h_value * sum(e * w for e, w in zip(_E, ws, strict=True) if e)
    v_new = v + h_value * sum(a * w for a, w in zip(_A[6], ws, strict=False) if a)
    return v_new, err


def __dir__():
    """The public names only (what SciPy's module of the same name offers, differentiable)."""
    return list(__all__)
