"""Test-session settings.

Kernels compile synchronously in tests (``TAPEGRAD_EAGER_COMPILE=1``): with background compiles
a result would depend on how far a compile had got (the plain-Python twin and the compiled
kernel may differ in the last bit).  ``tests/test_kernel_loader.py`` tests the other modes.
"""

import os

os.environ.setdefault("TAPEGRAD_EAGER_COMPILE", "1")
