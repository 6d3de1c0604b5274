"""The Numba floor for start-up: a fresh process importing numpy and numba and making the first
call of a trivial cached ``@njit`` function.  tapegrad's import + first gradient is budgeted as a
ratio of it (``run.py``, start-up rows), since no Numba-based library can start faster.
"""

from numba import njit


@njit(cache=True)
def one(x):
    """x + 1, compiled once and loaded from Numba's cache afterwards."""
    return x + 1.0
