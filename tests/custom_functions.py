"""Custom Functions that several tests apply (each test file states what it checks)."""

import tapegrad as tg


class Cube(tg.Function):
    """x ** 3, with its hand-written backward 3 x**2 g (no jvp: forward mode refuses it or
    falls back, as each test expects)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g
