"""Convolution, pooling and recurrent layers without PyTorch: finite-difference gradient checks,
and the arguments that are not supported raise naming themselves."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F

RNG = np.random.default_rng(5)


def test_conv2d_gradcheck():
    x, w, b = (
        RNG.standard_normal((2, 4, 5, 5)),
        RNG.standard_normal((6, 2, 3, 2)),
        RNG.standard_normal(6),
    )
    assert tg.gradcheck(
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        [x, w, b],
    )


def test_pool_gradcheck():
    x = RNG.standard_normal((1, 2, 5, 6))
    assert tg.gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1), [x])
    assert tg.gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [x])
    assert tg.gradcheck(lambda x: F.adaptive_avg_pool2d(x, (2, 4)), [x])


def test_lstm_cell_gradcheck():
    cell = nn.LSTMCell(3, 2)
    x, h, c = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2)), RNG.standard_normal((2, 2))
    w_ih, w_hh, b_ih, b_hh = (p.numpy() for p in cell.parameters())

    def step(x, h, c, w_ih, w_hh, b_ih, b_hh):
        for name, value in zip(
            ("weight_ih", "weight_hh", "bias_ih", "bias_hh"), (w_ih, w_hh, b_ih, b_hh), strict=True
        ):
            cell._parameters[name] = value
        h2, c2 = cell(x, (h, c))
        return h2 * 2.0 + c2

    assert tg.gradcheck(step, [x, h, c, w_ih, w_hh, b_ih, b_hh])


def test_gru_over_a_sequence_gradcheck():
    gru = nn.GRU(2, 3, num_layers=2, batch_first=True)
    assert tg.gradcheck(lambda x: gru(x)[0], [RNG.standard_normal((2, 4, 2))])


def test_conv2d_of_a_32x32_image_is_one_gather_and_one_product():
    x = tg.tensor(RNG.standard_normal((1, 3, 32, 32)), requires_grad=True)
    conv = nn.Conv2d(3, 8, 3, padding=1)
    y = conv(x)
    assert y.shape == (1, 8, 32, 32)
    y.sum().backward()
    assert x.grad.shape == x.shape and conv.weight.grad.shape == (8, 3, 3, 3)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: nn.Conv2d(3, 4, 3, padding_mode="reflect"), "padding_mode"),
        (
            lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), stride=2, padding="same"),
            "same",
        ),
        (lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 2, 3, 3)), "channels"),
        (lambda: F.conv2d(tg.zeros(1, 3, 5, 5), tg.zeros(4, 3, 3, 3), padding="full"), "padding"),
        (lambda: F.conv2d(tg.zeros(1, 3, 2, 2), tg.zeros(4, 3, 3, 3)), "kernel size"),
        (lambda: F.avg_pool2d(tg.zeros(1, 1, 4, 4), 2, padding=2), "half of effective kernel"),
        (lambda: F.pad(tg.zeros(2, 2), (1, 1), mode="symmetric"), "mode"),
        (lambda: F.pad(tg.zeros(2), (1, 1), mode="reflect"), "mode"),
        (lambda: F.pad(tg.zeros(2, 2), (1, 1, 1)), "even"),
        (lambda: nn.LSTM(3, 4, proj_size=2), "proj_size"),
        (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), "nonlinearity"),
        (lambda: nn.GRU(3, 4)(tg.zeros(2, 3, 5)), "input"),
        (lambda: nn.Unflatten(1, (4, 2))(tg.zeros(2, 6)), "unflattened_size"),
    ],
)
def test_unsupported_or_wrong_arguments_raise(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_unbatched_inputs_give_the_batched_result():
    x = RNG.standard_normal((3, 6, 6))
    conv, lstm = nn.Conv2d(3, 2, 3), nn.LSTM(3, 4)
    np.testing.assert_allclose(conv(x).numpy(), conv(x[None]).numpy()[0], rtol=1e-14)
    np.testing.assert_allclose(F.max_pool2d(x, 2).numpy(), F.max_pool2d(x[None], 2).numpy()[0])
    seq = RNG.standard_normal((5, 3))
    out, (h, c) = lstm(seq)
    out_b, (h_b, c_b) = lstm(seq[:, None])
    np.testing.assert_allclose(out.numpy(), out_b.numpy()[:, 0], rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), h_b.numpy()[:, 0], rtol=1e-14)
