"""The tape, the Tensor handle and the differentiable functions that record on it."""
