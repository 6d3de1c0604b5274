"""Errors tapegrad raises where it cannot differentiate something, rather than guess."""

__all__ = ["ForwardModeError"]


class ForwardModeError(TypeError):
    """Forward mode met a row it cannot push a tangent through (e.g. a custom Function with
    no ``jvp`` staticmethod)."""
