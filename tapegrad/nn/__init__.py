"""Neural-network helpers (Module, Linear, Sequential, activations) built on Tensor ops."""
