"""Test-session settings.

Kernels compile synchronously in tests (``TAPEGRAD_EAGER_COMPILE=1``): with background compiles
a result would depend on how far a compile had got (the plain-Python twin and the compiled
kernel may differ in the last bit).  ``tests/kernels/test_kernel_loader.py`` tests the other modes.
BLAS runs on one thread (see below).
"""

import os
import sys

os.environ.setdefault("TAPEGRAD_EAGER_COMPILE", "1")
# single-threaded BLAS (set before numpy is imported): a multi-threaded BLAS spinning on a busy
# 2-core machine makes small matmuls ~100x slower, and takes a core from anything running
# beside the suite (CI runs a second suite, against the oldest supported versions, alongside)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# the tests live in folders by layer; the case tables beside this file are imported by name
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
