"""Variable-length sequences for the recurrent layers (``tg.nn.utils.rnn``), PyTorch's names,
meanings and errors: ``pad_sequence`` / ``unpad_sequence``, ``pack_padded_sequence`` /
``pad_packed_sequence``, ``pack_sequence`` / ``unpack_sequence`` and ``PackedSequence``.

A ``PackedSequence`` holds the steps of a batch of sequences sorted by decreasing length, time
step after time step: ``data`` has ``batch_sizes[t]`` rows for step ``t`` (the sequences still
running then).  ``tg.nn.RNN`` / ``GRU`` / ``LSTM`` accept one and return one.  Packing and
padding are gathers and concatenations of Tensors, so gradients (of every order) flow through
them to the padded input.

Examples:
    >>> import tapegrad as tg
    >>> from tapegrad.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> packed = pack_sequence([tg.tensor([1.0, 2.0, 3.0]), tg.tensor([4.0])])
    >>> packed.data, packed.batch_sizes
    (tensor([1., 4., 2., 3.]), tensor([2, 1, 1]))
    >>> pad_packed_sequence(packed, batch_first=True)
    (tensor([[1., 2., 3.],
            [4., 0., 0.]]), tensor([3, 1]))
"""

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ...core import creation as _creation
from ...core import functions as _ops
from ...tensor_class import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def _int64(name, what, x):
    """A 1-D int64 NumPy copy of ``x`` (a Tensor, array or list of integers)."""
    v = np.asarray(x._v if isinstance(x, Tensor) else x)
    if v.dtype.kind not in "iub" and v.size:
        if v.dtype.kind != "f" or not np.all(v == np.round(v)):
            raise TypeError(f"{name}: {what} must hold integers, got dtype {v.dtype}")
    return np.array(v, dtype=np.int64).reshape(-1)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of the permutation ``permutation`` (None stays None), as PyTorch's
    ``torch.nn.utils.rnn.invert_permutation``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.utils.rnn.invert_permutation(tg.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    p = _int64("invert_permutation", "permutation", permutation)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    return Tensor(out)


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """A batch of sequences of different lengths packed time step after time step, PyTorch's
    ``torch.nn.utils.rnn.PackedSequence`` (a named tuple ``(data, batch_sizes,
    sorted_indices, unsorted_indices)``).  Make one with ``pack_padded_sequence`` or
    ``pack_sequence``, not by hand: ``batch_sizes[t]`` is how many sequences run at step ``t``
    (non-increasing), ``data`` their steps' values (``sum(batch_sizes)`` rows),
    ``sorted_indices`` the order of the batch sorted by decreasing length (None when it was
    already sorted) and ``unsorted_indices`` its inverse.

    Examples:
        >>> import tapegrad as tg
        >>> p = tg.nn.utils.rnn.pack_sequence([tg.ones(1, 2), tg.ones(2, 2)], enforce_sorted=False)
        >>> p.batch_sizes, p.sorted_indices, p.unsorted_indices
        (tensor([2, 1]), tensor([1, 0]), tensor([1, 0]))
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError(
                    "PackedSequence: give (data, batch_sizes), or one pair (data, batch_sizes)"
                )
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """The sequence with ``data.to(*args, **kwargs)`` (the indices stay as they are)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self) -> "PackedSequence":
        """This sequence (tapegrad computes on the CPU)."""
        return self

    def double(self) -> "PackedSequence":
        """The sequence with float64 ``data``."""
        return self._with_data(self.data.double())

    def float(self) -> "PackedSequence":
        """The sequence with float32 ``data``."""
        return self._with_data(self.data.float())

    @property
    def is_cuda(self) -> bool:
        """False: tapegrad computes on the CPU."""
        return False

    def is_pinned(self) -> bool:
        """False: tapegrad has no pinned memory."""
        return False


def _batch_sizes(name, lengths, steps):
    """PyTorch's checks of ``lengths`` (sorted, decreasing) and the batch size of each step."""
    if lengths.size and lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if lengths.size and lengths[0] > steps:
        # (PyTorch reads past the end of the input here)
        raise RuntimeError(
            f"{name}: a length is {int(lengths[0])} but the input has only {steps} time steps; "
            "give lengths no larger than the sequence dimension"
        )
    return np.array([(lengths > t).sum() for t in range(int(lengths[0]))], dtype=np.int64)


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | list[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch of sequences (``input`` (T, B, *), or (B, T, *) with
    ``batch_first``; sequence ``b`` is ``lengths[b]`` steps long), PyTorch's
    ``torch.nn.utils.rnn.pack_padded_sequence``.  With ``enforce_sorted`` the lengths must be
    in decreasing order; otherwise the batch is sorted and the order kept in
    ``sorted_indices``.  Differentiable in ``input``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]])      # (T=3, B=2)
        >>> tg.nn.utils.rnn.pack_padded_sequence(x, [3, 1]).data
        tensor([1., 4., 2., 3.])
    """
    name = "pack_padded_sequence"
    x = _ops.tensor_of(input)
    if x.ndim < 2:
        raise ValueError(
            f"{name}: expected an input of at least 2 dimensions (time and batch), got shape "
            f"{x.shape}"
        )
    lengths = _int64(name, "lengths", lengths)
    if batch_first:
        x = _ops.swapaxes(x, 0, 1)
    steps, batch = x.shape[:2]
    if lengths.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
            f"(batch_size={batch})"
        )
    if enforce_sorted:
        if np.any(lengths[1:] > lengths[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = Tensor(order.astype(np.int64))
        x = _ops.getitem(x, (slice(None), order))
    sizes = _batch_sizes(name, lengths, steps)
    rows = [_ops.getitem(x, (t, slice(0, int(n)))) for t, n in enumerate(sizes)]
    data = _ops.concatenate(rows, 0)
    return PackedSequence(data, Tensor(sizes), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The padded batch (T, B, *) ((B, T, *) with ``batch_first``) and the lengths of a
    ``PackedSequence``, in the batch's original order: the inverse of ``pack_padded_sequence``,
    PyTorch's ``torch.nn.utils.rnn.pad_packed_sequence``.  ``total_length`` pads the time
    dimension to that length.  Differentiable in ``sequence.data``.

    Examples:
        >>> import tapegrad as tg
        >>> p = tg.nn.utils.rnn.pack_sequence([tg.tensor([1.0, 2.0]), tg.tensor([3.0])])
        >>> tg.nn.utils.rnn.pad_packed_sequence(p, padding_value=-1.0, total_length=3)
        (tensor([[ 1.,  3.],
                [ 2., -1.],
                [-1., -1.]]), tensor([2, 1]))
    """
    if not isinstance(sequence, PackedSequence):
        raise TypeError(
            "pad_packed_sequence: expected a PackedSequence (from pack_padded_sequence or "
            f"pack_sequence), got {type(sequence).__name__}"
        )
    data = _ops.tensor_of(sequence.data)
    sizes = _int64("pad_packed_sequence", "batch_sizes", sequence.batch_sizes)
    steps = sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
    else:
        total_length = steps
    batch = int(sizes[0]) if steps else 0
    feat = tuple(data.shape[1:])
    pv = float(padding_value)
    rows, start = [], 0
    for n in sizes:
        n = int(n)
        part = _ops.getitem(data, slice(start, start + n))
        if n < batch:
            fill = _creation.full((batch - n, *feat), pv, dtype=data.dtype)
            part = _ops.concatenate([part, fill], 0)
        rows.append(part)
        start += n
    for _ in range(total_length - steps):
        rows.append(_creation.full((batch, *feat), pv, dtype=data.dtype))
    padded = _ops.stack(rows)
    lengths = np.array([(sizes > b).sum() for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        order = _int64("pad_packed_sequence", "unsorted_indices", sequence.unsorted_indices)
        padded = _ops.getitem(padded, (slice(None), order))
        lengths = lengths[order]
    if batch_first:
        padded = _ops.swapaxes(padded, 0, 1)
    return padded, Tensor(lengths)


def pad_sequence(
    sequences: Tensor | list[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of different lengths (each (L_i, *)) into one (max L, B, *) Tensor
    ((B, max L, *) with ``batch_first``), padding with ``padding_value`` on the right (or the
    left with ``padding_side="left"``), PyTorch's ``torch.nn.utils.rnn.pad_sequence``.
    Differentiable in each sequence.

    Examples:
        >>> import tapegrad as tg
        >>> seqs = [tg.tensor([1.0, 2.0, 3.0]), tg.tensor([4.0])]
        >>> tg.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_side="left")
        tensor([[1., 2., 3.],
                [0., 0., 4.]])
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = [sequences[i] for i in range(sequences.shape[0])]
    elif not isinstance(sequences, Iterable):
        raise TypeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences).__name__}"
        )
    seqs = [_ops.tensor_of(s) for s in sequences]
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    for s in seqs:
        if s.ndim < 1:
            raise RuntimeError("pad_sequence: each sequence must have at least one dimension")
        if s.shape[1:] != seqs[0].shape[1:]:
            raise RuntimeError(
                f"pad_sequence: every sequence must have the trailing shape {seqs[0].shape[1:]} "
                f"of the first, got one of shape {s.shape}"
            )
    longest = max(s.shape[0] for s in seqs)
    dtype = np.result_type(*[s.dtype for s in seqs])
    rows = []
    for s in seqs:
        s = s if s.dtype == dtype else s.to(dtype)
        short = longest - s.shape[0]
        if short:
            fill = _creation.full((short, *s.shape[1:]), float(padding_value), dtype=dtype)
            s = _ops.concatenate([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return _ops.stack(rows, 0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False
) -> list[Tensor]:
    """The list of sequences of a padded batch (T, B, *) ((B, T, *) with ``batch_first``),
    sequence ``b`` cut to ``lengths[b]`` steps: the inverse of ``pad_sequence``, PyTorch's
    ``torch.nn.utils.rnn.unpad_sequence``.

    Examples:
        >>> import tapegrad as tg
        >>> x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
        >>> tg.nn.utils.rnn.unpad_sequence(x, tg.tensor([3, 1]), batch_first=True)
        [tensor([1., 2., 3.]), tensor([4.])]
    """
    x = _ops.tensor_of(padded_sequences)
    lengths = _int64("unpad_sequence", "lengths", lengths)
    if not batch_first:
        x = _ops.swapaxes(x, 0, 1)
    if lengths.size != x.shape[0] or np.any(lengths > x.shape[1]) or np.any(lengths < 0):
        raise RuntimeError(
            f"unpad_sequence: {lengths.size} lengths {lengths.tolist()} do not fit a batch of "
            f"{x.shape[0]} sequences of {x.shape[1]} steps"
        )
    return [_ops.getitem(x, (b, slice(0, int(n)))) for b, n in enumerate(lengths)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (each (L_i, *)) into a ``PackedSequence``: ``pad_sequence``
    then ``pack_padded_sequence``, PyTorch's ``torch.nn.utils.rnn.pack_sequence``.

    Examples:
        >>> import tapegrad as tg
        >>> tg.nn.utils.rnn.pack_sequence([tg.tensor([1.0, 2.0]), tg.tensor([3.0])]).data
        tensor([1., 3., 2.])
    """
    seqs = [_ops.tensor_of(s) for s in sequences]
    lengths = [s.shape[0] if s.ndim else 0 for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences of a ``PackedSequence`` (the inverse of ``pack_sequence``),
    PyTorch's ``torch.nn.utils.rnn.unpack_sequence``.

    Examples:
        >>> import tapegrad as tg
        >>> p = tg.nn.utils.rnn.pack_sequence([tg.tensor([3.0]), tg.tensor([1.0, 2.0])], False)
        >>> tg.nn.utils.rnn.unpack_sequence(p)
        [tensor([3.]), tensor([1., 2.])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
