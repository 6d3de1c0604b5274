"""The worked examples of tapegrad's API contract, printed with their results.

Tensor API (backward, grad_fn, accumulation, autograd.grad), then the functional API (tg.grad of
NumPy code, value_and_grad, hessian), a custom tg.Function and tg.trace.

    python examples/quickstart.py
"""

import numpy as np

import tapegrad as tg


def section(title):
    print(f"\n== {title} ==")


section("Tensors and backward")
x = tg.tensor([2.0, 3.0], requires_grad=True)
y = (x**2).sum()
y.backward()
print("x.grad =", x.grad)  # tensor([4., 6.])

section("grad_fn is a view of the tape")
a = tg.tensor([1.0, 2.0], requires_grad=True)
b = a * tg.tensor([2.0, 3.0])
print(b)  # tensor([2., 6.], grad_fn=<MulBackward0>)
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
(g1,) = tg.autograd.grad(y, x, retain_graph=True)
(g2,) = tg.autograd.grad(y, x)
print("dy/dx twice:", g1.item(), g2.item(), "analytic:", np.cos(1.5) * 1.5 + np.sin(1.5))

section("Matrix calculus")
A = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
v = tg.tensor([1.0, 0.0, -1.0], requires_grad=True)
out = tg.logsumexp(A @ v)
out.backward()
print("d logsumexp(A v)/dA =\n", A.grad.numpy())
print("d logsumexp(A v)/dv =", v.grad.numpy())

section("Functional API: grad of plain NumPy code")


def f(x):
    # ordinary NumPy with a Python loop; inside tg.grad, x is a Tensor and np.* dispatch
    total = 0.0
    for k in range(1, 4):
        total = total + np.sum(np.sin(k * x)) / k
    return total


x0 = np.array([0.0, 0.5])
print("tg.grad(f)(x0) =", tg.grad(f)(x0))  # d/dx sum_k sin(k x)/k = cos x + cos 2x + cos 3x
print("analytic       =", np.cos(x0) + np.cos(2 * x0) + np.cos(3 * x0))
value, g = tg.value_and_grad(lambda p: np.sum(p["w"] ** 2) + p["b"] ** 3)(
    {"w": np.ones(2), "b": 2.0}
)
print("value_and_grad on a dict:", value, g)

section("Hessian")


def energy(x):
    return x[0] ** 2 * x[1] + np.exp(x[1])


H = tg.hessian(energy)(np.array([1.0, 0.0]))
print("H =\n", H)  # [[2x1, 2x0], [2x0, e^x1]] = [[0, 2], [2, 1]]
print("third derivative of sin at 0:", tg.grad(tg.grad(tg.grad(np.sin)))(0.0))


section("Custom Function")


class Softplus(tg.Function):
    """log(1 + e^x), computed stably on numpy; backward is the logistic function."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tg.tensor(np.logaddexp(0.0, x.data))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * tg.sigmoid(x)


x = tg.tensor([-1000.0, 0.0, 2.0], requires_grad=True)
y = Softplus.apply(x)
print(y)  # grad_fn=<SoftplusBackward>
y.sum().backward()
print("y =", y.data, "dy/dx =", x.grad.numpy())
print("gradcheck:", tg.gradcheck(lambda t: Softplus.apply(t), (np.array([-1.0, 0.5, 3.0]),)))

section("tg.trace: record once, replay many")


def loss(w):
    z = 1.0
    for _ in range(50):  # 50 steps of a scalar recurrence: ~250 tape rows
        z = np.tanh(w[0] * z + w[1])
    return (z - 0.5) ** 2


w0 = np.array([0.8, 0.1])
tr = tg.trace(loss, w0)
print(tr)
print("replayed:   ", tr.value_and_grad(w0))
print("re-recorded:", tg.value_and_grad(loss)(w0))
print("new inputs: ", tr.grad(np.array([1.2, -0.3])))


def kink(x):
    return 3.0 * x[0] if x[0] > 0 else -x[0]  # a Python branch on a traced value: a guard


tr = tg.trace(kink, np.array([1.0]))
try:
    tr.grad(np.array([-1.0]))
except tg.RetraceRequired as err:
    print("RetraceRequired:", str(err).split(":")[0])
