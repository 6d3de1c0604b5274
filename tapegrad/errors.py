"""Errors tapegrad raises where it cannot differentiate something, rather than guess."""

__all__ = ["ForwardModeError"]


class ForwardModeError(TypeError, NotImplementedError):
    """Forward mode met a row it cannot push a tangent through (e.g. a custom Function with
    no ``jvp`` staticmethod).  A ``NotImplementedError`` too, which PyTorch raises for a
    Function without ``jvp`` and HIPS autograd for a primitive without a JVP rule, so code
    written for either catches it.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> class Cube(tg.Function):        # backward only, no jvp
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         x, = ctx.saved_tensors
        ...         return 3 * x ** 2 * g
        >>> tg.grad(lambda x: Cube.apply(x).sum())(np.array([2.0]))
        array([12.])
        >>> tg.jvp(Cube.apply, (np.array([2.0]),), (np.array([1.0]),))
        Traceback (most recent call last):
        ...
        tapegrad.errors.ForwardModeError: ...
    """
