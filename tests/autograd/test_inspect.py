import numpy as np
import pytest

import tapegrad as tg


def test_grad_fn_views():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    c = tg.tensor([3.0, 4.0])
    y = tg.sin(x * c)
    assert y.grad_fn.name() == "SinBackward0"
    ((mul, _),) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0"
    names = [f.name() if f is not None else None for f, _ in mul.next_functions]
    assert names == ["torch::autograd::AccumulateGrad", None]
    assert x.grad_fn is None


def test_tape_len_stats_dump():
    t0 = len(tg.current_tape())
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * 2.0).sin().sum()
    t = tg.current_tape()
    assert len(t) == t0 + 4
    st = t.stats()
    assert st["by_op"]["SIN"]["count"] >= 1 and st["nbytes"] == t.nbytes > 0
    text = t.dump()
    last = text.splitlines()[-1]
    assert "SUM" in last and f"%{y._row - 1}" in last and "shape=()" in last
    assert "SIN" in text and "[0.9093" in text


def test_to_dot_and_reprs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.exp(x).sum()
    dot = y.to_dot()
    assert dot.startswith("digraph") and "ExpBackward0" in dot and "SumBackward0" in dot
    assert dot.count("->") == 2
    assert "digraph" in tg.current_tape().to_dot()
    assert "SumBackward0" in y._repr_html_() and "rows" in tg.current_tape()._repr_html_()
    svg = y._repr_svg_()
    assert svg is None or "<svg" in svg


def test_checkpoint_shrinks_dump():
    x = tg.tensor(np.ones(3), requires_grad=True)
    y = tg.checkpoint(lambda v: tg.tanh(tg.sin(v) * 2.0), x)
    assert "CheckpointFunctionBackward" in tg.current_tape().dump()
    assert y.grad_fn.next_functions[0][0].variable is x


def test_anomaly_forward_finds_planted_log0():
    x = tg.tensor([1.0, 0.0, 2.0], requires_grad=True)
    with tg.detect_anomaly():
        with pytest.raises(RuntimeError, match=r"LogBackward0.*test_inspect.py:\d+"):
            with np.errstate(divide="ignore"):
                tg.log(x)  # the planted log(0)
    assert not tg.is_anomaly_enabled()


def test_anomaly_backward_finds_planted_log0():
    x = tg.tensor([1.0, 0.0, 2.0], requires_grad=True)
    with tg.detect_anomaly(check_forward=False):
        with np.errstate(divide="ignore"):
            y = tg.log(x) * 2.0
        loss = (tg.sin(x) + y).sum()
        with pytest.raises(RuntimeError, match=r"LogBackward0.*tape row.*test_inspect.py"):
            loss.backward()


def test_anomaly_backward_nan_from_multiplication():
    a = tg.tensor([3.0, 1.0], requires_grad=True)
    with tg.detect_anomaly(check_forward=False):
        b = a * 2.0
        c = b * np.array([np.inf, 1.0])
        d = b * 3.0
        with (
            pytest.raises(RuntimeError, match=r"'MulBackward0' .* returned nan"),
            np.errstate(invalid="ignore"),
        ):
            (c * 0.0 + d).sum().backward()


def test_anomaly_mode_keeps_results():
    x = tg.tensor(0.5, requires_grad=True)
    with tg.detect_anomaly():
        y = tg.sin(x) * x
        y.backward()
    assert x.grad.item() == pytest.approx(np.cos(0.5) * 0.5 + np.sin(0.5))


def test_anomaly_mode_is_per_thread():
    import threading

    seen = {}

    def other():
        seen["enabled"] = tg.is_anomaly_enabled()
        x = tg.tensor(0.0, requires_grad=True)
        y = tg.log(x)  # -inf: would raise under anomaly mode's forward check
        seen["value"] = y.item()

    with tg.detect_anomaly():
        assert tg.is_anomaly_enabled()
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert seen == {"enabled": False, "value": -np.inf}
    assert not tg.is_anomaly_enabled()
