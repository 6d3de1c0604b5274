"""Test-session settings.

Kernels compile synchronously in tests (``TAPEGRAD_EAGER_COMPILE=1``): with background compiles
a result would depend on how far a compile had got (the plain-Python twin and the compiled
kernel may differ in the last bit).  ``tests/kernels/test_kernel_loader.py`` tests the other modes.
"""

import os
import sys

os.environ.setdefault("TAPEGRAD_EAGER_COMPILE", "1")
# the tests live in folders by layer; the case tables beside this file are imported by name
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
