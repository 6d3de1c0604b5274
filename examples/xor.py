"""Learn XOR with a two-layer network: Linear(2, 4) -> Tanh -> Linear(4, 1) -> Sigmoid.

    python examples/xor.py

The exercise from the backpropagation tutorial, with tg.nn, binary_cross_entropy and Adam.
"""

import numpy as np

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F
from tapegrad.nn.progress import ProgressBar

INPUTS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
TARGETS = np.array([[0.0], [1.0], [1.0], [0.0]])


def main(epochs=500, hidden=4, lr=0.05, seed=0):
    """Train, print the truth table, and return a dict with predictions and the final loss."""
    tg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 1), nn.Sigmoid())
    opt = tg.optim.Adam(model.parameters(), lr=lr)
    X = tg.tensor(INPUTS)
    bar = ProgressBar(epochs, desc="xor")
    for _ in range(epochs):
        opt.zero_grad()
        loss = F.binary_cross_entropy(model(X), TARGETS)
        loss.backward()
        opt.step()
        bar.update(loss=loss.item())
    bar.close()
    with tg.no_grad():
        probs = model(X).numpy().ravel()
    preds = (probs > 0.5).astype(int)
    for (a, b), p, q in zip(INPUTS.astype(int), probs, preds, strict=True):
        print(f"{a} xor {b} -> {q}   (p = {p:.3f})")
    correct = int(np.sum(preds == TARGETS.ravel()))
    print(f"{correct}/4 correct, final loss {loss.item():.4f}")
    return dict(probs=probs, preds=preds, correct=correct, loss=loss.item())


if __name__ == "__main__":
    main()
