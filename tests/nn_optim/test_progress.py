"""tg.nn.progress.ProgressBar: tqdm.auto when tqdm is installed, the built-in text bar when it is
not (simulated by hiding tqdm from the import system), tqdm's text bar when its notebook widget
cannot be built."""

import io
import sys

import pytest

from tapegrad.nn import progress
from tapegrad.nn.progress import ProgressBar


def run_bar(total=300, **kw):
    out = io.StringIO()
    bar = ProgressBar(total, desc="fit", file=out, **kw)
    for i in range(total):
        bar.update(loss=1.0 / (i + 1), epoch=2)
    bar.close()
    return bar, out.getvalue()


@pytest.fixture
def no_tqdm(monkeypatch):
    # a None entry in sys.modules makes `import tqdm...` raise ImportError
    for name in ("tqdm", "tqdm.auto", "tqdm.std", "tqdm.autonotebook"):
        monkeypatch.setitem(sys.modules, name, None)


def test_uses_tqdm_auto_when_installed():
    tqdm_auto = pytest.importorskip("tqdm.auto")
    bar, text = run_bar()
    assert bar.uses_tqdm and isinstance(bar._tqdm, tqdm_auto.tqdm)
    last = text.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("fit: 100%") and "300/300" in last
    assert "loss=0.00333" in last and "epoch=2" in last
    assert bar.n == 300


def test_plain_text_bar_without_tqdm(no_tqdm):
    assert progress._tqdm_class() is None
    bar, text = run_bar(width=10, redraws=5)
    assert not bar.uses_tqdm
    assert text.endswith("\n") and text.count("\r") == 6  # every 60 steps, and close()
    last = text.rstrip("\n").split("\r")[-1]
    assert last.startswith("fit [##########] 300/300 ") and last.rstrip().endswith(
        "loss=0.003333 epoch=2"
    )


def test_text_bar_clamps_and_closes_once(no_tqdm):
    out = io.StringIO()
    with ProgressBar(4, desc="x", width=4, file=out) as bar:
        bar.update(3)
        bar.update(5, note="done")
        assert bar.n == 4
    bar.close()
    text = out.getvalue()
    assert text.count("\n") == 1 and "x [####] 4/4" in text and "note=done" in text


def test_notebook_without_ipywidgets_falls_back_to_tqdm_text(monkeypatch):
    std = pytest.importorskip("tqdm.std")

    class WidgetNeedsIpywidgets:
        def __init__(self, *args, **kwargs):
            raise ImportError("IProgress not found. Please update jupyter and ipywidgets.")

    monkeypatch.setattr(progress, "_tqdm_class", lambda: WidgetNeedsIpywidgets)
    bar, text = run_bar(total=20)
    assert bar.uses_tqdm and type(bar._tqdm) is std.tqdm
    assert "20/20" in text


def test_examples_progress_without_tqdm(no_tqdm, capsys):
    import importlib.util
    import os

    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "examples",
        "xor.py",
    )
    spec = importlib.util.spec_from_file_location("example_xor_plain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(epochs=50)["preds"].shape == (4,)
    assert "xor [" in capsys.readouterr().out
