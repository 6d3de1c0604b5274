"""Record once, replay many: fit a damped oscillator integrated with RK4.

The loss runs 1,000 RK4 steps of  x'' = -2 zeta omega x' - omega^2 x  and compares the path with
noisy observations; (omega, zeta) are fitted by gradient descent (Adam).  The loss is traced
once (``tg.trace``); every iteration then replays the ~50k recorded ops in compiled code instead
of recording them again in Python.  Prints the speed-up of replay over re-recording.

    python examples/trace_speed.py
"""

import time

import numpy as np

import tapegrad as tg

T_END = 10.0
TRUE = np.array([2.0, 0.1])


def simulate(omega, zeta, steps, x0=1.0, v0=0.0):
    """RK4 path of the oscillator; works on floats and on traced tapegrad scalars alike."""
    h = T_END / steps
    a = 2.0 * zeta * omega  # damping
    b = omega * omega  # stiffness

    def acc(x, v):
        return -a * v - b * x

    x, v = x0, v0
    path = []
    for _ in range(steps):
        k1x, k1v = v, acc(x, v)
        k2x, k2v = v + 0.5 * h * k1v, acc(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
        k3x, k3v = v + 0.5 * h * k2v, acc(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
        k4x, k4v = v + h * k3v, acc(x + h * k3x, v + h * k3v)
        x = x + (h / 6.0) * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        v = v + (h / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        path.append(x)
    return path


def make_loss(obs):
    steps = len(obs)

    def loss(p):
        path = simulate(p[0], p[1], steps)
        err = 0.0
        for xk, ok in zip(path, obs, strict=True):
            d = xk - ok
            err = err + d * d
        return err * (1.0 / steps)

    return loss


def adam(grad_fn, p, iters, lr=0.02):
    m = np.zeros_like(p)
    s = np.zeros_like(p)
    losses = []
    for k in range(1, iters + 1):
        value, g = grad_fn(p)
        losses.append(value)
        m = 0.9 * m + 0.1 * g
        s = 0.999 * s + 0.001 * g * g
        p = p - lr * (m / (1 - 0.9**k)) / (np.sqrt(s / (1 - 0.999**k)) + 1e-8)
    return p, losses


def eager_value_and_grad(loss, p):
    x = tg.tensor(p, requires_grad=True)
    y = loss(x)
    y.backward()
    return y.item(), x.grad.numpy()


def main(steps=1000, iters=150, compare=True, verbose=True):
    rng = np.random.default_rng(0)
    obs = np.array(simulate(*TRUE, steps)) + 0.01 * rng.standard_normal(steps)
    loss = make_loss(obs)
    p0 = np.array([1.8, 0.25])

    t0 = time.perf_counter()
    tr = tg.trace(loss, p0)
    t_record = time.perf_counter() - t0
    tr.value_and_grad(p0)  # first replay (loads/compiles the kernels once)
    t0 = time.perf_counter()
    p, losses = adam(tr.value_and_grad, p0, iters)
    t_replay = (time.perf_counter() - t0) / iters
    final = tr(p)
    res = {
        "loss_start": losses[0],
        "loss_end": final,
        "params": p,
        "rows": len(tr),
        "record_s": t_record,
        "replay_s": t_replay,
    }
    if compare:
        k = 5
        t0 = time.perf_counter()
        adam(lambda q: eager_value_and_grad(loss, q), p0, k)
        t_eager = (time.perf_counter() - t0) / k
        res["eager_s"] = t_eager
        res["speedup"] = t_eager / t_replay
    if verbose:
        print(f"RK4, {steps} steps: {len(tr)} tape rows, recorded once in {t_record * 1e3:.1f} ms")
        print(
            f"fit: loss {losses[0]:.5f} -> {final:.5f}; (omega, zeta) = "
            f"({p[0]:.4f}, {p[1]:.4f}), true ({TRUE[0]}, {TRUE[1]})"
        )
        print(
            f"replay: {t_replay * 1e3:.2f} ms per gradient "
            f"({t_replay / len(tr) * 1e9:.0f} ns per op, forward + backward)"
        )
        if compare:
            print(
                f"re-recording every step: {res['eager_s'] * 1e3:.1f} ms per gradient; "
                f"replay is {res['speedup']:.1f}x faster"
            )
    return res


if __name__ == "__main__":
    main()
