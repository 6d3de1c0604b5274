"""The compiled sweeps (``sweeps.py``, generated from the op spec by ``generate.py``).

``sweeps`` is the only module of tapegrad with ``@njit`` code.  It carries the fingerprint of
the spec and the drivers it was generated from; a module generated from another spec is
refused here rather than run with op codes that mean something else.
"""

from ..ops import spec
from . import drivers, sweeps

FINGERPRINT = drivers.fingerprint(spec.FINGERPRINT)  # the op spec's and the drivers' together

if sweeps.FINGERPRINT != FINGERPRINT:
    raise ImportError(
        "tapegrad/kernels/sweeps.py was generated from another version of the op spec or "
        "of kernels/drivers.py "
        f"(fingerprint {sweeps.FINGERPRINT}, expected {FINGERPRINT}); regenerate it with "
        "`python tapegrad/kernels/generate.py`"
    )

__all__ = ["sweeps"]
