"""The Tensor handle (``TensorBase``) and the helpers every op uses to record itself on the tape.

A Tensor is (value, tape, row): ``_v`` is its value (a Python float for 0-d tensors, else a
float64 ndarray of its own, so it stays readable after the tape is reset), ``_row`` its row on
``_tape`` while that tape is alive (a reset retires the Tape object, see tape.py).  A graph
handle also holds the token of its row range (``_k``), which is how the tape knows the range
is still held.  No parents, closures or grad_fn objects are stored: the graph is the tape, and
the tape keeps no reference to a graph handle.
"""

import numbers
import threading
import weakref

import numpy as np

from . import tape as T

STATE = T.STATE
_get_ident = threading.get_ident


class TensorBase:
    """The handle every Tensor is: value, tape and row, and what needs nothing above the tape.

    The public ``tapegrad.Tensor`` (``tapegrad/tensor_class.py``) derives from it and from the
    methods of the layers above (operators, backward, NumPy's protocols, graph views).  Code
    below that class makes handles through ``new_handle`` / ``new_tensor``, which make
    instances of the registered public class, and checks for tensors with
    ``isinstance(x, TensorBase)``.
    """

    __slots__ = ("_v", "_tape", "_row", "_rg", "_leaf", "_grad", "_m", "_k", "__weakref__")
    __array_priority__ = 1000

    # ---- construction -----------------------------------------------------------------------
    def __init__(self, data, requires_grad=False, dtype=None):
        v = _as_value(data, dtype)
        self._v = v
        self._tape = None
        self._row = -1
        self._leaf = True
        self._rg = False
        self._m = None  # set on leaves: reading an unset slot costs an AttributeError
        if requires_grad:
            self.requires_grad_(True)

    # ---- basic attributes ----------------------------------------------------------------------
    # ``_grad`` and ``_m`` are left unset on op results (one store less per recorded op);
    # leaves, which backward, views and in-place changes ask for ``_m``, set it
    @property
    def grad(self):
        """The gradient accumulated by backward (None until one reaches this leaf); backward adds
        to it, so reset it between steps.

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> x.grad is None
            True
            >>> (2 * x).sum().backward(); (2 * x).sum().backward(); x.grad   # accumulated twice
            tensor([4., 4.])
        """
        return getattr(self, "_grad", None)  # unset on op results (a store less per op)

    @grad.setter
    def grad(self, g):
        if g is not None and not isinstance(g, TensorBase):
            raise TypeError(f"assigned grad must be a Tensor or None, got {type(g).__name__}")
        if g is not None and np.shape(g._v) != np.shape(self._v):
            raise RuntimeError(  # (the next backward would broadcast into it)
                f"attempting to assign a gradient of shape {np.shape(g._v)} to a tensor of "
                f"shape {np.shape(self._v)}; the gradient and the tensor must have the same shape"
            )
        self._grad = g

    @property
    def _meta(self):
        """Rarely used per-tensor facts (version counter, hooks), or None."""
        return getattr(self, "_m", None)

    @_meta.setter
    def _meta(self, m):
        self._m = m

    @property
    def data(self):
        """The value as a numpy array (no gradient tracking).

        A leaf's array is its value itself, writable as in PyTorch (``p.data[0] = 10``): its
        tape row is dropped first, so the next op records the value as it is then and no
        graph mixes the new value with derivatives taken at the old one.  The value of a
        graph result (non-leaf), of a traced value inside a transform and of a 0-d tensor is
        handed out read-only: writing into it would go unseen by the tape (use an in-place
        op on the Tensor, or ``.data = new``).

        >>> import tapegrad as tg
        >>> p = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> p.data[0] = 10.0                    # a leaf's value, changed in place
        >>> (p * 3.0).sum().backward(); p, p.grad
        (tensor([10.,  2.], requires_grad=True), tensor([3., 3.]))
        """
        _guard_hook(self, "data")  # a traced value leaves the tape: tg.trace pins it
        v = self._v
        if v.__class__ is float:
            return _read_only(np.array(v))
        if (self._rg and STATE.transforms) or not self._leaf:
            return _read_only(v)
        t = self._tape
        if t is not None:
            if t.alive:
                if t.pc:
                    t.sync()
                t.materialize(self._row)  # a lazy row holds this very array: copy it
            self._invalidate()
        return v

    @data.setter
    def data(self, value):
        if self._rg and STATE.transforms:
            raise RuntimeError(
                "x.data = ... on a traced value inside a tapegrad transform or "
                "tg.trace recording would change it unseen by the derivative; "
                "compute the new value with tapegrad ops instead"
            )
        self._v = _as_value(value, None)
        self._invalidate()
        m = self._meta  # a new value is a change: a backward that needs the old one raises
        if m is None:
            m = self._meta = {}
        m["version"] = m.get("version", 0) + 1

    @property
    def requires_grad(self):
        """Whether gradients flow to this Tensor (settable on leaves, as in PyTorch).

        >>> import tapegrad as tg
        >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
        >>> x.requires_grad, (x * 2.0).requires_grad, tg.tensor(3.0).requires_grad
        (True, True, False)
        """
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, flag=True):
        """Mark a leaf as a variable to differentiate with respect to (in place; returns it).

        Examples:
            >>> import tapegrad as tg
            >>> tg.tensor([1.0, 2.0]).requires_grad_()
            tensor([1., 2.], requires_grad=True)
        """
        if flag and not self._leaf:
            if self._rg:
                return self
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if flag and _dtype_of(self._v).kind not in "f":
            raise RuntimeError(
                "Only Tensors of floating point dtype can require gradients "
                f"(got dtype {_dtype_of(self._v)}); create it with float data or dtype=float64"
            )
        if not self._leaf and not flag:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. "
                "Use .detach() to get a tensor without gradient tracking."
            )
        self._rg = bool(flag)
        self._invalidate()
        return self

    @property
    def is_leaf(self):
        """True for a Tensor made by the user (not the result of a recorded op).

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0], requires_grad=True)
            >>> x.is_leaf, (x * 2).is_leaf
            (True, False)
        """
        return self._leaf

    @property
    def shape(self):
        """The shape, as NumPy's (``()`` for a scalar).

        >>> import tapegrad as tg
        >>> tg.zeros(2, 3).shape, tg.tensor(1.5).shape
        ((2, 3), ())
        """
        v = self._v
        return () if v.__class__ is float else v.shape

    @property
    def ndim(self):
        """The number of dimensions.

        >>> import tapegrad as tg
        >>> tg.zeros(2, 3).ndim
        2
        """
        return len(self.shape)

    @property
    def size(self):
        """The number of elements (NumPy's attribute), which PyTorch's call ``x.size()``
        turns into the shape (``x.size(dim)``: one dim's length).

        >>> import tapegrad as tg
        >>> x = tg.zeros(2, 3)
        >>> x.size, x.size(), x.size(-1)
        (6, (2, 3), 3)
        """
        v = self._v
        return ElementCount(1, ()) if v.__class__ is float else ElementCount(v.size, v.shape)

    @property
    def dtype(self):
        """The NumPy dtype of the value (float64 for anything that can carry a gradient).

        >>> import tapegrad as tg
        >>> tg.tensor([1.0, 2.0]).dtype
        dtype('float64')
        """
        return _dtype_of(self._v)

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def numel(self):
        """The number of elements (PyTorch's name for ``size``).

        >>> import tapegrad as tg
        >>> tg.zeros(2, 3).numel()
        6
        """
        v = self._v
        return 1 if v.__class__ is float else v.size

    def dim(self):
        """The number of dimensions (PyTorch's name for ``ndim``).

        >>> import tapegrad as tg
        >>> tg.zeros(2, 3).dim()
        2
        """
        return self.ndim

    # ---- conversion --------------------------------------------------------------------------
    def numpy(self):
        """The value as a NumPy array (a copy when the Tensor requires grad): an explicit read
        without gradient.

        Examples:
            >>> import tapegrad as tg
            >>> tg.tensor([1.0, 2.0], requires_grad=True).numpy()
            array([1., 2.])
        """
        _guard_hook(self, "numpy")
        if self._rg:
            # PyTorch refuses; numpy users of tg.grad expect values, so hand out a copy
            return np.array(self._v)
        return self.data

    def __array__(self, dtype=None, copy=None):
        if self._rg and not FUNCTION_STATE.off_graph:
            raise ConversionError(_conversion_error(self, "__array__"))
        a = np.array(self._v) if self._v.__class__ is float else self._v
        if dtype is not None:
            a = a.astype(dtype)
        return a

    def __reduce_ex__(self, protocol):
        """Pickled as PyTorch pickles a tensor: its value and ``requires_grad`` (a leaf after
        loading; no graph, no ``.grad``).  A value being differentiated inside a transform
        refuses: its unpickled copy would be a constant, silently cutting the gradient."""
        if self._rg and STATE.transforms and not _replayed_constant(self):
            raise ConversionError(_conversion_error(self, "__reduce_ex__"))
        _guard_hook(self, "numpy")  # (a read of the value, pinned in a trace)
        v = self._v
        state = getattr(self, "__dict__", None) or None  # (an nn.Parameter's mark)
        return _unpickled, (v if v.__class__ is float else np.array(v), bool(self._rg)), state

    def item(self, *index):
        """The value of a one-element Tensor as a Python number (no gradient); NumPy's
        ``a.item(i)`` / ``a.item(i, j)`` read one element of a larger one.

        Examples:
            >>> import tapegrad as tg
            >>> tg.tensor([2.5], requires_grad=True).item()
            2.5
            >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).item(1, 0)
            3.0
        """
        if index:
            _guard_hook(self, "item")
            return np.asarray(self._v).item(*index)
        if self.numel() != 1:
            raise ValueError(
                f"only one element tensors can be converted to Python scalars (shape {self.shape})"
            )
        _guard_hook(self, "item")
        v = self._v
        return v if v.__class__ is float else v.reshape(-1)[0].item()

    def __float__(self):
        if self._rg and STATE.transforms and not _replayed_constant(self):
            if FUNCTION_STATE.off_graph:  # a custom Function's forward or backward
                return float(self.item())
            raise ConversionError(_conversion_error(self, "__float__"))
        if self.numel() != 1:
            raise TypeError(
                f"only one element tensors can be converted to Python scalars (shape {self.shape})"
            )
        return float(self.item())

    def __int__(self):
        if self._rg and STATE.transforms and not _replayed_constant(self):
            if FUNCTION_STATE.off_graph:  # a custom Function's forward or backward
                return int(self.item())
            raise ConversionError(_conversion_error(self, "__int__"))
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iu":  # so a traced value (always float) never converts
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous "
                f"(shape {self.shape})"
            )
        _guard_hook(self, "bool")
        return bool(self._v if self._v.__class__ is float else self._v.reshape(-1)[0])

    def tolist(self):
        """The value as (nested) Python floats: an explicit read without gradient (in a trace,
        a pinned read: a replay with another value raises RetraceRequired).

        >>> import tapegrad as tg
        >>> (tg.tensor([1.0, 2.0], requires_grad=True) * 2.0).tolist()
        [2.0, 4.0]
        """
        _guard_hook(self, "tolist")
        v = self._v
        return v if v.__class__ is float else v.tolist()

    def detach(self):
        """The same value without a place in the graph: gradients do not flow through it.

        Examples:
            >>> import tapegrad as tg
            >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * x.detach()).sum().backward(); x.grad      # x.detach() counts as a constant
            tensor([1., 2.])
        """
        _guard_hook(self, "detach")
        v = self._v
        d = TensorBase._const(v)
        if v.__class__ is not float:  # the same array, as PyTorch's shared storage: a write
            d._m = {"detached_from": weakref.ref(self)}  # into d is a change of self too
            m = self._meta
            if m:  # the source may be a temporary (``y[1].detach().mul_(2)``), held weakly:
                if "detached_from" in m:  # detached again: d aliases the first source
                    d._m["detached_from"] = m["detached_from"]
                    if "detached_view" in m:
                        d._m["detached_view"] = m["detached_view"]
                elif "base" in m:  # a view: d notes where it lies in the view's base, so
                    d._m["detached_view"] = m["base"][:2]  # a write still reaches the base
            view = d._m.get("detached_view")
            if view is not None:
                _note_alias(view[0](), d, view[1])
            elif self._rg and not self._leaf:
                _note_alias(self, d, None)
        return d

    def _invalidate(self):
        """Forget the tape row: the value changed (or the flag did), so the next use re-enters."""
        self._tape = None
        self._row = -1

    @staticmethod
    def _const(v):
        h = _new(_cls)
        h._v = v
        h._tape = None
        h._row = -1
        h._rg = False
        h._leaf = True
        h._m = None
        return h

    def __repr__(self):
        # the text shows the value: a trace recording pins it (a replay whose value differs
        # raises RetraceRequired), as a read by item(); print(x) inside f reads it too
        _guard_hook(self, "repr")
        v = self._v
        body = np.array2string(
            np.asarray(v), separator=", ", prefix="tensor(", formatter=_float_format(v)
        )
        extra = ""
        if self._rg:
            if self._leaf:
                extra = ", requires_grad=True"
            else:
                fn = self.grad_fn
                extra = f", grad_fn=<{fn.name()}>" if fn is not None else ", requires_grad=True"
        if v.__class__ is not float and v.dtype not in _PLAIN_DTYPES:  # PyTorch's defaults
            extra = f", dtype={v.dtype}" + extra
        return f"tensor({body}{extra})"

    def __hash__(self):
        """By identity, as PyTorch's; inside a transform or trace recording a value being
        differentiated is unhashable, as a JAX tracer is: it stands for a number or an array
        (``x in {1.0, 2.0}`` would look up its identity, not its value, silently)."""
        if self._rg and STATE.transforms and _stands_in(self) and not _replayed_constant(self):
            raise TypeError(
                f"unhashable: a Tensor being differentiated (shape {self.shape}) inside a "
                "tapegrad transform or tg.trace recording stands for a value that changes "
                "between calls (a set or dict lookup would compare identities, not values). "
                "Compare values instead (x == 1.0, tnp.isin), or read it explicitly with "
                "x.item() (in a trace, a pinned read); use id(x) as a key for the object"
            )
        return object.__hash__(self)


class ElementCount(int):
    """``x.size``: NumPy's element count, an int; calling it is PyTorch's ``x.size()`` (the
    shape, a ``Size``) or ``x.size(dim)`` (that dim's length)."""

    def __new__(cls, n, shape):
        count = super().__new__(cls, n)
        count._dims = shape  # (not ``shape``: np.shape(x.size) reads that, and must be ())
        return count

    def __call__(self, dim=None):
        if dim is None:
            return Size(self._dims)
        nd = len(self._dims)
        if not -nd <= dim < nd:
            raise IndexError(f"size({dim}): dim out of range for a tensor of {nd} dims")
        return self._dims[dim]

    def __reduce__(self):
        return int, (int(self),)


class Size(tuple):
    """PyTorch's ``torch.Size``: the shape as a tuple, with ``numel()``."""

    __slots__ = ()

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n


_new = object.__new__
# dtypes a repr leaves unsaid, as PyTorch's (float64 is tapegrad's float, int64 and bool
# PyTorch's integer and boolean defaults)
_PLAIN_DTYPES = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))
_cls = TensorBase  # the public Tensor class once it is registered (``use_tensor_class``)


def use_tensor_class(cls):
    """Make every handle the lower layers create an instance of ``cls``, the public Tensor.

    The public class is assembled in ``tapegrad/tensor_class.py`` from the methods of every layer,
    so the layers below it cannot import it; it registers itself here, once, at import.
    """
    global _cls
    if not (isinstance(cls, type) and issubclass(cls, TensorBase)):
        raise TypeError(f"the Tensor class must derive from TensorBase, got {cls!r}")
    _cls = cls


def new_handle():
    """An empty handle of the public Tensor class (its slots are set by the caller)."""
    return _new(_cls)


def _unpickled(value, requires_grad):
    """A Tensor loaded by pickle (see ``TensorBase.__reduce_ex__``)."""
    return _cls(value, requires_grad=requires_grad)


def new_tensor(data, requires_grad=False, dtype=None):
    """``tapegrad.Tensor(data, requires_grad, dtype)``, for the layers below that class."""
    return _cls(data, requires_grad=requires_grad, dtype=dtype)


class ConversionError(TypeError):
    """An implicit conversion of a Tensor that requires grad (see ``_conversion_error``).

    NumPy wraps an error raised by ``__float__`` during ``out[i] = x`` in its own
    "setting an array element with a sequence" ValueError; the transforms unwrap it with
    ``unwrap_conversion`` so the user sees this message, not NumPy's.

    Examples:
        >>> import numpy as np
        >>> import tapegrad as tg
        >>> np.asarray(tg.tensor([1.0], requires_grad=True))
        Traceback (most recent call last):
        ...
        tapegrad.ConversionError: __array__: np.asarray / np.array ... requires grad; ...
    """

    __module__ = "tapegrad"  # exported as tapegrad.ConversionError


def unwrap_conversion(e):
    """The ConversionError that caused ``e`` (through ``__cause__`` links), or None."""
    seen = 0
    while e is not None and seen < 32:
        if isinstance(e, ConversionError):
            return e
        e = e.__cause__
        seen += 1
    return None


def raise_unwrapped(e):
    """Re-raise ``e``, or the ConversionError it wraps: NumPy reports a failed conversion as
    "setting an array element with a sequence", with tapegrad's message only as the cause."""
    hidden = unwrap_conversion(e)
    try:
        if hidden is None or hidden is e:
            raise e
        raise hidden from None
    finally:  # the traceback keeps this frame: its locals must not lead back to it (a cycle
        e = hidden = None  # keeps every frame of f, and their arrays, until the GC runs)


_VIA = {
    "__array__": "np.asarray / np.array (or a NumPy, SciPy or other function that "
    "converts its argument to an array, a list of Tensors included)",
    "__float__": "float() (or math.*, or a store into a NumPy array such as out[i] = x, "
    "y.fill(x), which convert through float())",
    "__int__": "int()",
    "__reduce_ex__": "pickling (pickle.dumps, or a library that pickles its arguments: "
    "multiprocessing, joblib)",
}


_STAND_IN = "stand_in"
_SHARED = T.SHARED


def shares_memory(x):
    """Mark ``x`` as sharing its array with the caller (``tg.from_numpy``): the caller may
    write into it without tapegrad knowing, so each op that uses ``x`` enters its value as it
    is then (no cached row): the op's backward reads what its forward computed with."""
    x._m = {_SHARED: True}
    return x


def stand_in(x):
    """Mark ``x`` as a transform's or trace's stand-in for an argument's value (a number or an
    array to the user's code, not a Tensor of theirs); returns x."""
    x._m = {_STAND_IN: True}
    return x


def _stands_in(x):
    """A stand-in or a value computed inside the transform (a user's leaf, a parameter, keeps
    its identity hash there)."""
    if not x._leaf:
        return True
    m = getattr(x, "_m", None)
    return m is not None and _STAND_IN in m


def _replayed_constant(x):
    """A non-differentiable output of a custom op on a trace's tape (a rank, a sign): traced,
    so what f computes from it is recorded, but reading it drops no gradient (the read is a
    pinned guard, as for ``item()``)."""
    t = x._tape
    if t is None or not t.REPLAYS:
        return False
    node = t.side.payloads.get(x._row)
    return node is not None and x._row not in getattr(node, "output_rows", (x._row,))


def _conversion_error(x, how):
    """The message for an implicit conversion of a Tensor that requires grad."""
    via = _VIA[how]
    explicit = (
        "x.item() / x.numpy() / x.tolist() / x.detach() read the value explicitly, without gradient"
    )
    if STATE.transforms:
        return (
            f"{how}: {via} was called on a traced Tensor (shape {x.shape}) inside a "
            "tapegrad transform or tg.trace recording; converting it would silently drop its "
            "gradient. Use the tapegrad.numpy function instead (import "
            "tapegrad.numpy as tnp: tnp.asarray, tnp.array for lists of values, tnp.sin, "
            "tnp.sum, tnp.stack...; tapegrad.scipy.special, .stats, .integrate for "
            "SciPy's functions), or assign into a Tensor (out = tg.zeros(n); "
            f"out[i] = x). If you want the value without its derivative, {explicit}"
            " (in a trace, an explicit read is pinned: a replay with another value "
            "raises RetraceRequired)."
        )
    return (
        f"{how}: {via} was called on a Tensor that requires grad; the NumPy array would "
        "silently drop its gradient. Use tapegrad ops (tapegrad.numpy, tg.stack; "
        "tapegrad.scipy.special, .stats, .integrate for SciPy's functions), or "
        "x.detach().numpy() / x.numpy() / x.item() if you want the value without "
        "gradient."
    )


def _read_only(a):
    a = a.view()
    a.flags.writeable = False
    return a


def _float_format(v):
    """PyTorch's print style: whole numbers as ``4.``, else 4 decimals (``0.5000``), or
    scientific when magnitudes span a wide range."""
    a = np.asarray(v)
    if a.dtype.kind != "f" or a.size == 0:
        return None
    finite = a[np.isfinite(a)]
    if finite.size == 0 or np.all(finite == np.round(finite)) and np.max(np.abs(finite)) < 1e8:
        return None
    mag = np.abs(finite[finite != 0])
    if mag.size and (mag.max() >= 1e8 or mag.min() < 1e-4 or mag.max() / mag.min() >= 1e3):
        return {"float_kind": lambda x: f"{x:.4e}"}
    return {"float_kind": lambda x: f"{x:.4f}"}


def _dtype_of(v):
    return np.dtype(np.float64) if v.__class__ is float else v.dtype


def _copy(v):
    return v if v.__class__ is float else v.copy()


def _as_value(data, dtype):
    """Normalise user data to a value: float for 0-d float64, else an ndarray."""
    if isinstance(data, TensorBase):
        _guard_hook(data, "tensor")
        data = data._v
    refuse_unsupported(data, "cannot make a tensor: the data")
    if dtype is not None:
        # the data is checked before the cast, which reads "2" as 2.0, None as NaN and a
        # datetime64 as days since 1970 (and fails on 1j without naming tapegrad)
        dtype = np.dtype(dtype)
        _numbers_only(data, np.asarray(data), dtype)
        _numbers_only(data, np.empty(0, dtype), None)  # and the dtype asked for
    arr = np.array(data, dtype=dtype, copy=True)
    if dtype is None:
        _numbers_only(data, arr, dtype)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 0 and arr.dtype == np.float64:
        return float(arr)
    return arr


def _numbers_only(data, arr, cast_to):
    """Refuse tensor data (as array ``arr``) that is complex or not numbers; an object
    array of real numbers passes when it is cast to a dtype (huge Python ints, say)."""
    kind = arr.dtype.kind
    if kind == "c":
        refuse_complex(f"the data of this tensor (dtype {arr.dtype})")
    if kind in "fiub":
        return
    if kind == "O" and cast_to is not None:
        if all(isinstance(e, numbers.Real) for e in arr.flat):
            return
        if any(isinstance(e, (complex, np.complexfloating)) for e in arr.flat):
            refuse_complex("the data of this tensor (an element)")
    refuse_not_numbers(data, arr.dtype, "cannot make a tensor:")


def refuse_not_numbers(x, dtype, what):
    """Refuse an operand or data that NumPy reads as something other than numbers: None, a
    datetime64 / timedelta64, strings, a structured or object array.  As float64 each would
    be a silent number (x + None was NaN, x + datetime64('2020-01-01') 18263, the days since
    1970), where NumPy and PyTorch raise."""
    if x is None:
        shown = "None"
    elif np.ndim(x) == 0:
        shown = f"{x!r} (dtype {dtype})"
    else:
        shown = f"an array of dtype {dtype}"
    raise TypeError(
        f"{what.rstrip(':')}: {shown} is not a number or an array of numbers; tapegrad "
        "computes with floats, integers and booleans (NumPy and PyTorch raise here too): "
        "convert it first, e.g. a.astype(np.float64) for numbers kept as objects"
    )


def scalar_argument(x, what):
    """The float of a number argument (a bound, a slope, a fill value, a norm's p).

    ``float()`` reads the string "2" as 2.0 (``x.clamp(min="2")`` clamped at 2 where PyTorch
    raises) and fails on 1j or None with a message that names neither the op nor the fix, so
    each kind gets tapegrad's refusal naming ``what``.
    """
    if isinstance(x, (complex, np.complexfloating)):
        refuse_complex(f"{what} {x!r}")
    if isinstance(x, (numbers.Real, np.bool_, TensorBase)) or (
        isinstance(x, np.ndarray) and x.size == 1 and x.dtype.kind in "fiub"
    ):
        return float(x)
    refuse_not_numbers(x, getattr(x, "dtype", type(x).__name__), what)


def refuse_non_real(x, dtype, what):
    """Refuse ``x`` (read as NumPy dtype ``dtype``) unless it holds real numbers (floats,
    integers, booleans): a complex one, or one NumPy reads as something else (None, dates,
    strings), is refused naming ``what``."""
    if dtype.kind == "c":
        refuse_complex(f"{what} (dtype {dtype})")
    if dtype.kind not in "fiub":
        refuse_not_numbers(x, dtype, what)


def refuse_complex(what):
    """Complex values are not supported: converting one to float64 would drop its imaginary
    part without a word, so every conversion of an operand or result refuses them."""
    raise TypeError(
        f"{what} is complex: tapegrad does not support complex numbers (a complex value "
        "meeting a Tensor or a traced value would lose its imaginary part). Compute with "
        "the real and imaginary parts as separate real arrays (z.real, z.imag), or keep "
        "the complex arithmetic outside the function you differentiate"
    )


def unsupported_array(x):
    """Why array-like ``x`` cannot become a float64 value without changing its meaning (the
    problem as a phrase to follow its name), or None.  A masked array would lose its mask, an
    ``np.matrix`` its matrix product (``*``), an extended-precision float its extra digits,
    a complex value its imaginary part: each silently."""
    problem = unsupported_type(x.__class__)
    if problem is not None:
        return problem
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        if dtype.kind == "f" and dtype.itemsize > 8:
            return (
                f"has dtype {dtype} (extended precision): tapegrad computes in float64 and "
                "would round it. Convert it with .astype(np.float64) if float64 is enough"
            )
        if dtype.kind == "c":
            return (
                f"is complex (dtype {dtype}): tapegrad does not support complex numbers. "
                "Compute with the real and imaginary parts as separate real arrays "
                "(z.real, z.imag)"
            )
    return None


def unsupported_type(cls):
    """``unsupported_array``'s answer for the array subclasses it refuses, by type."""
    if issubclass(cls, np.ma.MaskedArray):
        return (
            "is a masked array: tapegrad would use its masked (hidden) values as data. Pass "
            "x.filled(fill_value) or x.compressed(), or the data and the mask separately "
            "(tnp.where(mask, ...))"
        )
    if issubclass(cls, np.matrix):
        return (
            "is an np.matrix: its * and ** are matrix products, which tapegrad would compute "
            "elementwise. Pass np.asarray(m) and write matrix products with @"
        )
    return None


def refuse_unsupported(x, what):
    """Raise a TypeError naming ``what`` when ``unsupported_array(x)`` finds a problem."""
    problem = unsupported_array(x)
    if problem is not None:
        raise TypeError(f"{what} {problem}")


def value_of(x):
    """The float64 value of an operand (Tensor, number or array-like)."""
    if x.__class__ is _cls:
        v = x._v
        if v.__class__ is not float and v.dtype != np.float64:
            if v.dtype.kind == "c":
                refuse_complex(f"an operand (dtype {v.dtype})")
            return v.astype(np.float64)
        return v
    if x.__class__ is float:
        return x
    if x.__class__ is np.ndarray and x.dtype == np.float64 and x.ndim:
        a = x  # (a float64 array, the common case: no conversions to try)
    elif isinstance(x, numbers.Number):
        if isinstance(x, (complex, np.complexfloating)):
            refuse_complex(f"the operand {x!r}")
        if isinstance(x, np.floating) and x.dtype.itemsize > 8:
            refuse_unsupported(x, f"the operand {x!r}")
        return float(x)
    else:
        refuse_unsupported(x, "an operand")
        a = np.asarray(x)
        if a.dtype.kind == "c":
            refuse_complex(f"an operand (an array of dtype {a.dtype})")
        if a.dtype.kind not in "fiub":
            refuse_not_numbers(x, a.dtype, "an operand")
        a = a.astype(np.float64, copy=False)
        if a.ndim == 0:
            return float(a)
    if a.size >= T.LAZY_MIN and a.flags.writeable:
        # the caller's array, seen through a read-only view: the tape copies what it would
        # otherwise hold by reference (``Tape.push``), since the caller may change it
        a = a.view()
        a.flags.writeable = False
    return a


def result(v):
    """Normalise an op result to the value representation."""
    if v.__class__ is float:
        return v
    if isinstance(v, np.ndarray):
        if v.dtype != np.float64:
            if v.dtype.kind == "c":
                refuse_complex(f"a result (dtype {v.dtype})")
            v = v.astype(np.float64)
        return float(v) if v.ndim == 0 else v
    if isinstance(v, (complex, np.complexfloating)):
        refuse_complex(f"the result {v!r}")
    return float(v)


# ---- recording ---------------------------------------------------------------------------------
_OTHER_THREAD = (
    "this Tensor was computed on another thread's tape; each thread records its own "
    "graph (leaves such as parameters can be shared). Pass .detach() values between "
    "threads."
)


_CLAIM = T.SectionLock()


def tape_for(*xs):
    """The calling thread's tape, after checking no operand lives on another thread's tape."""
    t = STATE.tape
    for x in xs:
        if (
            x.__class__ is _cls
            and not x._leaf
            and x._tape is not None
            and x._tape is not t
            and x._tape.alive
            and x._tape.owner != t.owner
        ):
            raise RuntimeError(_OTHER_THREAD)
    if t.n + 8 >= t.mark:  # the tape is full, or its values grew: see Tape.reclaim
        t = t.reclaim()
    return t


def row_of(t, x):
    """The row of operand ``x`` on tape ``t``, entering it (LEAF/CONST/FREED) when absent.

    A handle caches one (tape, row) pair.  A leaf shared between threads (a parameter) is
    cached only by the first thread's live tape; the other threads keep its row in their
    tape's ``side.shared`` (id -> row), so no thread ever overwrites, or reads half of,
    another thread's pair (claims are made under ``_CLAIM``)."""
    if x.__class__ is _cls:
        if x._tape is t:
            return x._row
        cur = x._tape
        if cur is not None and not cur.alive:
            cur, r = T.follow(cur, x._row)  # a row kept by a cut or a compaction
            if cur is t:
                x._row = r  # (two stores in a row: no interrupt lands between them)
                x._tape = t
                return r
        if cur is not None and cur.alive and cur.owner != t.owner:
            if not x._leaf:
                raise RuntimeError(_OTHER_THREAD)
            shared = t.side.shared
            if shared is not None:
                r = shared.get(id(x))
                if r is not None and t.entered(r) is x:  # (an id outlives its object)
                    return r
        v = x._v
        if v.__class__ is not float and v.dtype != np.float64:
            v = v.astype(np.float64)
        if x._leaf:
            code = T.LEAF if x._rg else T.CONST
        else:
            code = T.FREED if x._rg else T.CONST
        r = t.enter(code, v, x, 1 if x._rg else 0)
        if code == T.LEAF:
            t.leaf_rows.append(r)
        m = getattr(x, "_m", None)
        if code != T.FREED and (m is None or _SHARED not in m):
            with _CLAIM:
                cur = x._tape
                if cur is None or cur is t or not cur.alive or cur.owner == t.owner:
                    x._tape = t
                    x._row = r
                    return r
            t.side.shared[id(x)] = r  # checked against t.entered(r)
        return r
    v = value_of(x)
    return t.enter(T.CONST, v, None, 0)


def _note_alias(src, d, key):
    """Note detached ``d`` (``src[key]``'s values; ``key`` None: ``src``'s array itself) in
    graph tensor ``src``: a tracked in-place change gives ``src`` a new array, and d, which
    shares the old one as PyTorch's storage, is kept showing it (``methods._swap_in``).
    Leaves are changed in their own array, which d shares already."""
    if src is None or not src._rg or src._leaf:
        return
    m = src._meta
    if m is None:
        m = src._m = {}
    aliases = m.get("aliases")
    if aliases is None:
        aliases = m["aliases"] = []
    elif len(aliases) >= 8:  # (the dead ones dropped, as a base's list of views)
        aliases[:] = [a for a in aliases if a[0]() is not None]
    aliases.append((weakref.ref(d), key))


def record(t, code, ra, rb, v, fp=0.0, ip=0, own=None):
    """Append a grad-requiring row holding value ``v``; returns its new handle (``own``: as
    for ``Tape.push``)."""
    h = _new(_cls)
    h._v = v
    h._rg = True
    h._leaf = False
    h._tape = None  # complete before push gives it its token (an interrupt may land after)
    h._row = -1
    if t.lazy:
        t.need(code, ra, rb, ip)
    i = t.n
    pc = t.pc
    # on the fast path a row is a pending row (the appends of record_unary's inlined hot
    # path, and its integer parameters noted in ``pip``): the rows before it need no flush
    # first.  Only a float or a small array; a view (a reshape's value, a broadcast of a
    # parameter) waits as a copy: its base may change before the flush (an optimizer step)
    if i + 8 < t.fastcap and len(pc) + t.nsync == i:
        if v.__class__ is float or (v.size < T.LAZY_MIN and t.parr < T.RANGE_VALUES):
            pending = v
            if v.__class__ is not float:
                t.parr += v.size + 1
                if v.base is not None:
                    pending = v.copy()
            h._k = t.tok
            pc.append(code | (ra + 1) << 8 | (rb + 1) << 36)
            t.pv.append(pending)
            t.pf.append(fp)
            if ip:  # after the appends, before the row is published (see Tape.drop_torn)
                t.pip.append((i, ip))
            t.n = i + 1
            h._row = i
            h._tape = t  # last: a handle of a torn row never names the tape
            return h
    r = t.push(code, ra, rb, v, h, 1, fp, ip, own)
    h._row = r
    h._tape = t
    return h


def handle_of(t, r):
    """A graph handle of row ``r`` (already recorded on ``t``), holding its range's token.

    >>> import tapegrad as tg
    >>> from tapegrad.core.tensor import handle_of
    >>> y = tg.tensor([1.0, 2.0], requires_grad=True) * 2.0
    >>> h = handle_of(tg.current_tape(), y._row)
    >>> h.tolist(), h._row == y._row, h is y
    ([2.0, 4.0], True, False)
    """
    h = _new(_cls)
    h._v = result(t.value(r).copy().reshape(t.shape(r)))
    h._rg = bool(t.rg[r])
    h._leaf = False
    h._k = t.token_at(r)
    h._row = r
    h._tape = t
    return h


def tape_of(x):
    """The live tape ``x``'s row is on (following a cut, see tape.py), or None.

    >>> import tapegrad as tg
    >>> from tapegrad.core.tensor import tape_of
    >>> y = tg.tensor(2.0, requires_grad=True) * 3.0
    >>> tape_of(y) is tg.current_tape()
    True
    """
    t = x._tape
    if t is None or t.alive:
        return t
    cur, r = T.follow(t, x._row)
    if cur is not None:  # (only the owning thread follows)
        x._row = r
        x._tape = cur
    return cur


def record_unary(x, code, v, fp=0.0):
    """Record ``v = op(x)`` when x needs grad (the hot path of every elementwise op).

    A float or small-array row is three list appends, flushed later (see tape.py)."""
    t = STATE.tape
    if not (x._rg and t.enabled):
        return TensorBase._const(v)
    i = t.n
    pc = t.pc
    # len(pc) == n - nsync: no torn row is pending (see Tape.sync); pc is appended first and
    # the row count stored last, so an interrupt anywhere leaves a detectable torn row
    if x._tape is t and i + 8 < t.fastcap and len(pc) + t.nsync == i:
        if v.__class__ is not float:
            k = v.size
            # large: its row may stay lazy; or a range's worth of values pending (see tape.py)
            if k >= T.LAZY_MIN or t.parr >= T.RANGE_VALUES:
                return _record_slow(t, x, code, v, fp)
            t.parr += k + 1
        h = _new(_cls)
        h._v = v
        h._rg = True
        h._leaf = False
        h._k = t.tok
        pc.append(code | (x._row + 1) << 8)  # b = -1 packs as 0
        t.pv.append(v)
        t.pf.append(fp)
        t.n = i + 1
        h._row = i
        h._tape = t  # last: a handle of a torn row never names the tape
        return h
    return _record_slow(t, x, code, v, fp)


def _record_slow(t, x, code, v, fp):
    t = tape_for(x)
    ra = row_of(t, x)
    return record(t, code, ra, -1, v, fp)


def record_binary(x, y, code, v):
    """Record ``v = op(x, y)`` for two Tensors of equal shape, or one of a single value that
    the kernels broadcast over the other (the hot path of scalars and small arrays: three
    list appends, as in ``record_unary``)."""
    t = STATE.tape
    if not ((x._rg or y._rg) and t.enabled):
        return TensorBase._const(v)
    i = t.n
    pc = t.pc
    if x._tape is t and y._tape is t and i + 8 < t.fastcap and len(pc) + t.nsync == i:
        if v.__class__ is not float:
            k = v.size
            if k >= T.LAZY_MIN or t.parr >= T.RANGE_VALUES:
                return _record_binary_slow(x, y, code, v)
            t.parr += k + 1
        h = _new(_cls)
        h._v = v
        h._rg = True
        h._leaf = False
        h._k = t.tok
        pc.append(code | (x._row + 1) << 8 | (y._row + 1) << 36)
        t.pv.append(v)
        t.pf.append(0.0)
        t.n = i + 1
        h._row = i
        h._tape = t
        return h
    return _record_binary_slow(x, y, code, v)


def _record_binary_slow(x, y, code, v):
    t = tape_for(x, y)
    ra = row_of(t, x)
    rb = row_of(t, y)
    return record(t, code, ra, rb, v)


# argument types that are neither Tensors nor containers (skipped without isinstance calls)
_PLAIN_ARGS = frozenset((float, int, bool, str, type(None), np.ndarray, np.float64))


def holds_tensor(tree, limit=10_000):
    """Is there a Tensor in ``tree`` (lists, tuples and dicts looked into)?  A transform
    called with one runs PyTorch code (``STATE.torch_code``)."""
    todo, seen = [tree], 0
    while todo and seen < limit:
        x = todo.pop()
        seen += 1
        if x.__class__ in _PLAIN_ARGS:
            continue
        if isinstance(x, TensorBase):
            return True
        if isinstance(x, (list, tuple)):
            todo.extend(x)
        elif isinstance(x, dict):
            todo.extend(x.values())
    return False


def needs_grad(*xs):
    if not STATE.enabled:
        return False
    for x in xs:
        if x.__class__ is _cls and x._rg:
            return True
    return False


class _FunctionState(threading.local):
    """What a custom Function (``tapegrad.autograd.function``) tells the conversions, per
    thread.  ``off_graph``: the depth of custom-Function code running without recording (a
    forward, a first-order backward), where Tensors that require grad convert to NumPy and
    floats freely, as PyTorch's do without grad mode.  ``escapes``: None, or a list while a
    Function's backward runs with create_graph: each read of a Tensor that requires grad off
    the graph (``.numpy()``, ``.detach()``, ``.item()``, ``.data``, ``.tolist()``) is noted
    there, since a derivative of that backward would miss the term through it."""

    off_graph = 0
    escapes = None


FUNCTION_STATE = _FunctionState()
# the reads that take a value off the graph (not printing, a branch, an index or an order)
_ESCAPES = frozenset(("numpy", "data", "item", "tolist", "detach", "tensor"))


def _guard_hook(x, kind):
    """Note, for a trace recording on this thread, a read of a value a replay may change (a
    traced value, or a Tensor f reads from its closure, which a replay reads again)."""
    guard = STATE.guard
    if guard is not None:
        guard(x, kind)
    if x._rg:
        escapes = FUNCTION_STATE.escapes
        if escapes is not None and kind in _ESCAPES:
            escapes.append((x, kind))
