"""A dependency-free text progress bar for training loops.

    bar = ProgressBar(epochs, desc="train")
    for epoch in range(epochs):
        ...
        bar.update(loss=loss.item())
    bar.close()

It redraws in place (carriage return) at most ``redraws`` times, so it stays cheap in tight
loops and readable in logs.
"""
import sys
import time


class ProgressBar:
    def __init__(self, total, desc="", width=30, redraws=50, file=None):
        self.total = max(int(total), 1)
        self.desc = desc
        self.width = width
        self.every = max(self.total // max(redraws, 1), 1)
        self.file = file if file is not None else sys.stdout
        self.n = 0
        self.info = {}
        self._last = 0
        self.start = time.perf_counter()

    def update(self, steps=1, **info):
        """Advance by ``steps``; keyword values (e.g. loss=0.12) are shown after the bar."""
        self.n = min(self.n + steps, self.total)
        self.info.update(info)
        if self.n % self.every == 0 or self.n == self.total:
            self.draw()

    def draw(self):
        done = self.width * self.n // self.total
        bar = "#" * done + "." * (self.width - done)
        extra = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in self.info.items())
        elapsed = time.perf_counter() - self.start
        line = f"{self.desc} [{bar}] {self.n}/{self.total} {elapsed:5.1f}s {extra}"
        self.file.write("\r" + line.ljust(self._last))
        self._last = len(line)
        self.file.flush()

    def close(self):
        self.draw()
        self.file.write("\n")
        self.file.flush()
