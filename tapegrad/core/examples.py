"""Checked examples for the generated docstrings of the elementwise functions (``tg.sin`` ...).

Each entry is ``name: (input, value, derivative, derivative formula)``: the values and the
derivatives were computed once with NumPy and the closed-form derivative (not with tapegrad,
and checked against central differences), then pasted here as tapegrad prints them (4
decimals).  ``docstring_example`` turns an entry into a ``>>>`` example, so the doctests check
tapegrad's value and gradient of every elementwise function against these literals.
"""

UNARY = {
    "neg": ("[0.5, 2.0]", "[-0.5000, -2.0000]", "[-1., -1.]", "-1"),
    "exp": ("[0.5, 2.0]", "[1.6487, 7.3891]", "[1.6487, 7.3891]", "exp(x)"),
    "log": ("[0.5, 2.0]", "[-0.6931, 0.6931]", "[2.0000, 0.5000]", "1 / x"),
    "log1p": ("[0.5, 2.0]", "[0.4055, 1.0986]", "[0.6667, 0.3333]", "1 / (1 + x)"),
    "expm1": ("[0.5, 2.0]", "[0.6487, 6.3891]", "[1.6487, 7.3891]", "exp(x)"),
    "sqrt": ("[0.25, 4.0]", "[0.5000, 2.0000]", "[1.0000, 0.2500]", "1 / (2 sqrt(x))"),
    "sin": ("[0.5, 2.0]", "[0.4794, 0.9093]", "[0.8776, -0.4161]", "cos(x)"),
    "cos": ("[0.5, 2.0]", "[0.8776, -0.4161]", "[-0.4794, -0.9093]", "-sin(x)"),
    "tan": ("[0.5, 1.0]", "[0.5463, 1.5574]", "[1.2984, 3.4255]", "1 / cos(x)**2"),
    "tanh": ("[0.5, 2.0]", "[0.4621, 0.9640]", "[0.7864, 0.0707]", "1 - tanh(x)**2"),
    "sigmoid": (
        "[-1.0, 2.0]",
        "[0.2689, 0.8808]",
        "[0.1966, 0.1050]",
        "sigmoid(x) (1 - sigmoid(x))",
    ),
    "relu": ("[-1.5, 2.0]", "[0., 2.]", "[0., 1.]", "1 where x > 0, else 0"),
    "abs": ("[-1.5, 2.0]", "[1.5000, 2.0000]", "[-1., 1.]", "sign(x)"),
    "arcsin": ("[-0.5, 0.25]", "[-0.5236, 0.2527]", "[1.1547, 1.0328]", "1 / sqrt(1 - x**2)"),
    "arccos": ("[-0.5, 0.25]", "[2.0944, 1.3181]", "[-1.1547, -1.0328]", "-1 / sqrt(1 - x**2)"),
    "arctan": ("[0.5, 2.0]", "[0.4636, 1.1071]", "[0.8000, 0.2000]", "1 / (1 + x**2)"),
    "arcsinh": ("[0.5, 2.0]", "[0.4812, 1.4436]", "[0.8944, 0.4472]", "1 / sqrt(x**2 + 1)"),
    "arccosh": ("[1.5, 2.0]", "[0.9624, 1.3170]", "[0.8944, 0.5774]", "1 / sqrt(x**2 - 1)"),
    "arctanh": ("[-0.5, 0.25]", "[-0.5493, 0.2554]", "[1.3333, 1.0667]", "1 / (1 - x**2)"),
    "sinh": ("[0.5, 2.0]", "[0.5211, 3.6269]", "[1.1276, 3.7622]", "cosh(x)"),
    "cosh": ("[0.5, 2.0]", "[1.1276, 3.7622]", "[0.5211, 3.6269]", "sinh(x)"),
    "log2": ("[0.5, 4.0]", "[-1., 2.]", "[2.8854, 0.3607]", "1 / (x ln 2)"),
    "log10": ("[0.5, 10.0]", "[-0.3010, 1.0000]", "[0.8686, 0.0434]", "1 / (x ln 10)"),
    "exp2": ("[0.5, 3.0]", "[1.4142, 8.0000]", "[0.9803, 5.5452]", "2**x ln 2"),
    "cbrt": ("[0.125, 8.0]", "[0.5000, 2.0000]", "[1.3333, 0.0833]", "1 / (3 cbrt(x)**2)"),
    "sinc": (
        "[0.5, 0.25]",
        "[0.6366, 0.9003]",
        "[-1.2732, -0.7728]",
        "(cos(pi x) pi x - sin(pi x)) / (pi x**2)",
    ),
    "sign": ("[-1.5, 2.0]", "[-1., 1.]", "[0., 0.]", "0"),
    "floor": ("[-1.3, 2.7]", "[-2., 2.]", "[0., 0.]", "0"),
    "ceil": ("[-1.3, 2.7]", "[-1., 3.]", "[0., 0.]", "0"),
    "rint": ("[-1.3, 2.7]", "[-1., 3.]", "[0., 0.]", "0"),
    "trunc": ("[-1.3, 2.7]", "[-1., 2.]", "[0., 0.]", "0"),
    # special functions: values and derivatives from SciPy and the closed forms
    "gamma": ("[0.5, 3.0]", "[1.7725, 2.0000]", "[-3.4802, 1.8456]", "gamma(x) digamma(x)"),
    "gammaln": ("[0.5, 3.0]", "[0.5724, 0.6931]", "[-1.9635, 0.9228]", "digamma(x)"),
    "digamma": ("[0.5, 3.0]", "[-1.9635, 0.9228]", "[4.9348, 0.3949]", "polygamma(1, x)"),
    "erf": ("[0.5, 2.0]", "[0.5205, 0.9953]", "[0.8788, 0.0207]", "2 exp(-x**2) / sqrt(pi)"),
    "erfc": ("[0.5, 2.0]", "[0.4795, 0.0047]", "[-0.8788, -0.0207]", "-2 exp(-x**2) / sqrt(pi)"),
    "erfinv": (
        "[-0.5, 0.25]",
        "[-0.4769, 0.2253]",
        "[1.1126, 0.9324]",
        "sqrt(pi) exp(erfinv(x)**2) / 2",
    ),
    "erfcinv": (
        "[0.5, 1.25]",
        "[0.4769, -0.2253]",
        "[-1.1126, -0.9324]",
        "-sqrt(pi) exp(erfcinv(x)**2) / 2",
    ),
}


def docstring_example(name: str) -> str:
    """The ``Examples:`` section of the docstring of elementwise function ``tg.<name>``.

    >>> "tensor([-0.6931, 0.6931], grad_fn=<LogBackward0>)" in docstring_example("log")
    True
    """
    x, value, derivative, formula = UNARY[name]
    return (
        "Examples:\n"
        "    >>> import tapegrad as tg\n"
        f"    >>> x = tg.tensor({x}, requires_grad=True)\n"
        f"    >>> y = tg.{name}(x); y\n"
        f"    tensor({value}, grad_fn=<{name.capitalize()}Backward0>)\n"
        f"    >>> y.sum().backward(); x.grad       # {formula}\n"
        f"    tensor({derivative})\n"
    )
