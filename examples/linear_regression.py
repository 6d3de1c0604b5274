"""Fit y = 2x + 1 (plus noise) with nn.Linear, mse_loss and SGD with momentum.

    python examples/linear_regression.py

Prints the fitted slope and intercept next to the closed-form least-squares answer, and saves
a plot of the data, the fit and the loss curve when matplotlib is installed.
"""

import numpy as np

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F
from tapegrad.nn.progress import ProgressBar


def make_data(n=100, noise=1.5, seed=42):
    tg.manual_seed(seed)
    x = np.linspace(0.0, 10.0, n)
    y = 2.0 * x + 1.0 + noise * tg.randn(n).numpy()
    return x, y


def fit(x, y, epochs=500, lr=0.01, momentum=0.9):
    """Train y ~ w x + b by full-batch gradient descent; returns (w, b, losses)."""
    model = nn.Linear(1, 1)
    opt = tg.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    X = tg.tensor(x.reshape(-1, 1))
    Y = tg.tensor(y.reshape(-1, 1))
    losses = []
    bar = ProgressBar(epochs, desc="fit")
    for _ in range(epochs):
        opt.zero_grad()
        loss = F.mse_loss(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        bar.update(loss=losses[-1])
    bar.close()
    return model.weight.item(), model.bias.item(), losses


def plot(x, y, w, b, losses, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot")
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot(x, y, "o", alpha=0.5, label="data")
    ax1.plot(x, w * x + b, "r-", label=f"fit: y = {w:.2f}x + {b:.2f}")
    ax1.set_xlabel("x")
    ax1.set_ylabel("y")
    ax1.legend()
    ax2.semilogy(losses, "b-")
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("mean squared error")
    ax2.grid(True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"plot saved to {path}")
    return path


def main(epochs=500, lr=0.01, momentum=0.9, plot_path="linear_regression.png"):
    """Returns a dict with the fitted w, b, the least-squares w, b and the loss curve."""
    x, y = make_data()
    w, b, losses = fit(x, y, epochs, lr, momentum)
    w_ls, b_ls = np.polyfit(x, y, 1)
    print(f"fitted:        w = {w:.4f}, b = {b:.4f}   (final loss {losses[-1]:.4f})")
    print(f"least squares: w = {w_ls:.4f}, b = {b_ls:.4f}")
    print("true:          w = 2.0000, b = 1.0000")
    saved = plot(x, y, w, b, losses, plot_path) if plot_path else None
    return dict(w=w, b=b, w_lstsq=w_ls, b_lstsq=b_ls, losses=losses, plot=saved)


if __name__ == "__main__":
    main()
