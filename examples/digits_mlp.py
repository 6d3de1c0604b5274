"""An MLP on scikit-learn's bundled 8x8 digits (1797 images, 10 classes).

    python examples/digits_mlp.py              # train: 64-128-10, ReLU, Adam; ~97% test accuracy
    python examples/digits_mlp.py --benchmark  # one MLP training step vs hand-written NumPy

``benchmark_step`` times a 784-256-256-10 ReLU MLP step (batch 128, softmax cross-entropy, SGD)
written with tg.nn against the same step with hand-derived NumPy gradients, side by side.

Training needs scikit-learn (for the dataset), in the ``examples`` extra:
``pip install -e ".[examples]"``; ``--benchmark`` does not.
"""

import sys
import time

import numpy as np

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F
from tapegrad.nn.progress import ProgressBar


def load(test_fraction=0.25, seed=0):
    """(x_train, y_train, x_test, y_test): pixels scaled to [0, 1], a fixed shuffled split."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        sys.exit(
            f"{error}: this example needs scikit-learn for its dataset, in the examples extra: "
            'pip install -e ".[examples]"'
        )

    digits = load_digits()
    x = digits.data / 16.0
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def accuracy(model, x, y):
    with tg.no_grad():
        logits = model(tg.tensor(x)).numpy()
    return float(np.mean(logits.argmax(axis=1) == y))


def main(epochs=20, hidden=128, batch_size=64, lr=1e-2, seed=0):
    """Train and return a dict with the test accuracy and the per-epoch mean losses."""
    x_train, y_train, x_test, y_test = load(seed=seed)
    tg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    opt = tg.optim.Adam(model.parameters(), lr=lr)
    order_rng = np.random.default_rng(seed)
    n = len(y_train)
    batches = (n + batch_size - 1) // batch_size
    print(f"digits: {n} training and {len(y_test)} test images; {model}")
    bar = ProgressBar(epochs * batches, desc="train")
    losses = []
    for epoch in range(epochs):
        order = order_rng.permutation(n)
        total = 0.0
        for k in range(batches):
            idx = order[k * batch_size : (k + 1) * batch_size]
            opt.zero_grad()
            loss = F.cross_entropy(model(tg.tensor(x_train[idx])), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            bar.update(epoch=epoch + 1, loss=loss.item())
        losses.append(total / n)
    bar.close()
    train_acc = accuracy(model, x_train, y_train)
    test_acc = accuracy(model, x_test, y_test)
    print(f"train accuracy {train_acc:.4f}, test accuracy {test_acc:.4f}")
    return dict(test_accuracy=test_acc, train_accuracy=train_acc, losses=losses)


# ---- benchmark: one training step against hand-written NumPy ---------------------------------


def _numpy_step(params, x, y, lr):
    """Forward, hand-derived backward and SGD update of a ReLU MLP; params = [(W, b), ...]
    with W of shape (out, in) as in nn.Linear, updated in place.  Returns the loss."""
    acts, pre = [x], []
    h = x
    for i, (W, b) in enumerate(params):
        z = h @ W.T
        z += b
        pre.append(z)
        h = np.maximum(z, 0.0) if i < len(params) - 1 else z
        acts.append(h)
    n = len(y)
    rows = np.arange(n)
    z = acts[-1]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    s = e.sum(axis=1, keepdims=True)
    p = e / s
    loss = -np.mean(np.log(p[rows, y]))
    d = p
    d[rows, y] -= 1.0
    d /= n
    for i in range(len(params) - 1, -1, -1):
        W, b = params[i]
        gW = d.T @ acts[i]
        gb = d.sum(axis=0)
        if i:
            d = d @ W
            d *= pre[i - 1] > 0.0
        W -= lr * gW
        b -= lr * gb
    return loss


def benchmark_step(sizes=(784, 256, 256, 10), batch=128, repeats=30, lr=0.01, seed=0):
    """Median seconds of one training step, tapegrad vs hand-written NumPy, measured
    alternately in one run; returns (tapegrad_median, numpy_median, ratio)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0]))
    y = rng.integers(0, sizes[-1], batch)
    tg.manual_seed(seed)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = tg.optim.SGD(model.parameters(), lr=lr)
    params = [
        (m.weight.numpy().copy(), m.bias.numpy().copy()) for m in model if isinstance(m, nn.Linear)
    ]
    xt = tg.tensor(x)

    def tg_step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), y)
        loss.backward()
        opt.step()
        return loss.item()

    first = (tg_step(), _numpy_step(params, x, y, lr))
    assert abs(first[0] - first[1]) < 1e-9 * max(1.0, abs(first[1])), first
    times = {"tapegrad": [], "numpy": []}
    for _ in range(repeats):
        for name, step in (("tapegrad", tg_step), ("numpy", lambda: _numpy_step(params, x, y, lr))):
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    t_tg, t_np = np.median(times["tapegrad"]), np.median(times["numpy"])
    print(
        f"MLP {'-'.join(map(str, sizes))}, batch {batch}: tapegrad {t_tg * 1e3:.2f} ms, "
        f"hand-written NumPy {t_np * 1e3:.2f} ms, ratio {t_tg / t_np:.3f} "
        f"(median of {repeats})"
    )
    return t_tg, t_np, t_tg / t_np


if __name__ == "__main__":
    if "--benchmark" in sys.argv:
        benchmark_step()
    else:
        main()
