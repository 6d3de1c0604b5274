"""JAX / HIPS-autograd style transforms on plain NumPy code: grad, vjp, jvp, jacobian,
hessian, hvp."""
