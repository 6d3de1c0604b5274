"""The worked examples of tapegrad's API contract, printed with their results."""
import numpy as np

import tapegrad as tg


def section(title):
    print(f"\n== {title} ==")


section("Tensors and backward")
x = tg.tensor([2., 3.], requires_grad=True)
y = (x ** 2).sum()
y.backward()
print("x.grad =", x.grad)                     # tensor([4., 6.])

section("grad_fn is a view of the tape")
a = tg.tensor([1., 2.], requires_grad=True)
b = a * tg.tensor([2., 3.])
print(b)                                      # tensor([2., 6.], grad_fn=<MulBackward0>)
print(b.grad_fn.name(), b.grad_fn.next_functions)

section("Accumulation and no_grad updates")
w = tg.tensor([1.0, -1.0], requires_grad=True)
for step in range(3):
    loss = ((w - tg.tensor([3.0, 2.0])) ** 2).sum()
    loss.backward()
    with tg.no_grad():
        w -= 0.25 * w.grad
    w.grad.zero_()
    print(f"step {step}: loss={loss.item():.4f} w={w.data}")

section("autograd.grad with retain_graph")
x = tg.tensor(1.5, requires_grad=True)
y = tg.sin(x) * x
g1, = tg.autograd.grad(y, x, retain_graph=True)
g2, = tg.autograd.grad(y, x)
print("dy/dx twice:", g1.item(), g2.item(), "analytic:", np.cos(1.5) * 1.5 + np.sin(1.5))

section("Matrix calculus")
A = tg.tensor(np.arange(6.).reshape(2, 3), requires_grad=True)
v = tg.tensor([1., 0., -1.], requires_grad=True)
out = tg.logsumexp(A @ v)
out.backward()
print("d logsumexp(A v)/dA =\n", A.grad.numpy())
print("d logsumexp(A v)/dv =", v.grad.numpy())
