"""SciPy's names on Tensors (``import tapegrad.scipy.linalg`` ...), differentiable.

SciPy is an optional extra (``pip install tapegrad[examples]``); only these submodules import
it, when they are imported themselves.
"""
