"""Progress bars for training loops: ``tqdm.auto`` when tqdm is installed, plain text otherwise.

    bar = ProgressBar(epochs, desc="train")
    for epoch in range(epochs):
        ...
        bar.update(loss=loss.item())
    bar.close()

With tqdm (``pip install "tapegrad[nn]"``) the bar is ``tqdm.auto.tqdm``: a widget in Jupyter
(when ipywidgets is installed; without it tqdm warns and draws text), a text bar in a terminal
or a log, and keyword values given to ``update`` are shown as tqdm's postfix (``loss=0.123``).
Without tqdm a small built-in text bar is drawn instead; it redraws in place (carriage return)
at most ``redraws`` times, so it stays cheap in tight loops and readable in logs.  Both write to
``file`` (standard output by default, as before tqdm) and end with ``n/total``.
"""

import sys
import time


def _tqdm_class():
    """``tqdm.auto.tqdm``, or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _open_tqdm(total, desc, file):
    """A tqdm bar, or None when tqdm is missing or its notebook widget cannot be shown."""
    tqdm = _tqdm_class()
    if tqdm is None:
        return None
    kwargs = dict(total=total, desc=desc or None, file=file, leave=True)
    try:
        return tqdm(**kwargs)
    except ImportError:
        # tqdm.notebook raises this when it cannot build its widget (ipywidgets missing or too
        # old, with tqdm versions that do not check on import): tqdm's text bar then
        try:
            from tqdm.std import tqdm as text_tqdm
        except ImportError:
            return None
        return text_tqdm(**kwargs)


class ProgressBar:
    """A progress bar over ``total`` steps (see the module docstring).

    ``update(steps=1, **info)`` advances it and shows ``info``; ``close()`` finishes the line.
    ``uses_tqdm`` tells which implementation draws it.  ``width`` and ``redraws`` only apply to
    the built-in text bar (tqdm sizes and throttles itself)."""

    def __init__(self, total, desc="", width=30, redraws=50, file=None):
        self.total = max(int(total), 1)
        self.desc = desc
        self.width = width
        self.every = max(self.total // max(redraws, 1), 1)
        self.file = file if file is not None else sys.stdout
        self.n = 0
        self.info = {}
        self._last = 0
        self._closed = False
        self.start = time.perf_counter()
        self._tqdm = _open_tqdm(self.total, desc, self.file)

    @property
    def uses_tqdm(self):
        return self._tqdm is not None

    def update(self, steps=1, **info):
        """Advance by ``steps``; keyword values (e.g. loss=0.12) are shown after the bar."""
        steps = min(steps, self.total - self.n)
        self.n += steps
        self.info.update(info)
        if self._tqdm is not None:
            if info:
                self._tqdm.set_postfix(self.info, refresh=False)
            self._tqdm.update(steps)
        elif self.n % self.every == 0 or self.n == self.total:
            self.draw()

    def draw(self):
        if self._tqdm is not None:
            self._tqdm.refresh()
            return
        done = self.width * self.n // self.total
        bar = "#" * done + "." * (self.width - done)
        extra = " ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.info.items()
        )
        elapsed = time.perf_counter() - self.start
        line = f"{self.desc} [{bar}] {self.n}/{self.total} {elapsed:5.1f}s {extra}"
        self.file.write("\r" + line.ljust(self._last))
        self._last = len(line)
        self.file.flush()

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._tqdm is not None:
            self._tqdm.close()
            return
        self.draw()
        self.file.write("\n")
        self.file.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
