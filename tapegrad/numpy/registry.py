"""Which function implements each NumPy function on Tensors: the table the dispatch reads
(``np.trapezoid(tensor)`` calls what is registered for ``np.trapezoid``).  Adding a NumPy
function is one function decorated with ``@implements(np.trapezoid)``."""

FUNCTIONS: dict = {}  # NumPy function -> its implementation on Tensors


def implements(*numpy_functions):
    """Decorator: the function implements these NumPy functions on Tensors."""

    def register(impl):
        for fn in numpy_functions:
            FUNCTIONS[fn] = impl
        return impl

    return register
