"""Network.sliding_window, swinfer.monai.SlidingWindowInferer and `predictor=net` against MONAI's
sliding_window_inference with MONAI's SwinUNETR (same checkpoint)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import CHECKPOINT, REL_TOL, relative_error

ROI = (32, 32, 64)
VOLUME = (1, 1, 40, 36, 70)  # not a multiple of the roi: padding and uneven steps


@pytest.fixture(scope="module")
def monai_inferers():
    return pytest.importorskip("monai.inferers", reason="monai is not installed (pip install monai)")


@pytest.fixture(scope="module")
def net(swinfer):
    return swinfer.load(CHECKPOINT, threads=2)


@pytest.mark.parametrize("mode, overlap, sw_batch_size", [("constant", 0.25, 1), ("gaussian", 0.5, 3)])
def test_sliding_window_matches_monai(net, monai_net, monai_inferers, rng, mode, overlap, sw_batch_size):
    import torch

    x = rng.uniform(-2, 2, VOLUME).astype(np.float32)
    expected = monai_inferers.sliding_window_inference(torch.from_numpy(x), ROI, sw_batch_size, monai_net,
                                                       overlap=overlap, mode=mode).numpy()
    calls = []
    logits = net.sliding_window(x, ROI, sw_batch_size=sw_batch_size, overlap=overlap, mode=mode,
                                progress=lambda done, total: calls.append((done, total)))
    assert isinstance(logits, np.ndarray) and logits.shape == (1, 2) + VOLUME[2:]
    assert relative_error(logits, expected) <= REL_TOL
    assert calls and calls[-1][0] == calls[-1][1], "progress should end at total"

    labels = net.sliding_window(x, ROI, sw_batch_size=sw_batch_size, overlap=overlap, mode=mode, argmax=True)
    assert labels.dtype == np.uint8 and labels.shape == (1, 1) + VOLUME[2:]
    decided = np.abs(expected[:, 1] - expected[:, 0]) > 1e-4 * np.abs(expected).max()
    np.testing.assert_array_equal(labels[:, 0][decided], expected.argmax(1)[decided])


def test_torch_volume_gives_a_torch_result(net, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    x = rng.uniform(-2, 2, VOLUME).astype(np.float32)
    out = net.sliding_window(torch.from_numpy(x), ROI)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), net.sliding_window(x, ROI))


def test_swinfer_inferer_matches_monais(net, monai_net, monai_inferers, rng):
    import torch
    from swinfer.monai import SlidingWindowInferer
    from monai.data import MetaTensor

    x = MetaTensor(torch.from_numpy(rng.uniform(-2, 2, VOLUME).astype(np.float32)), meta={"marker": 7})
    settings = dict(roi_size=ROI, sw_batch_size=2, overlap=0.5, mode="gaussian")
    expected = monai_inferers.SlidingWindowInferer(**settings)(x, monai_net)
    ours = SlidingWindowInferer(**settings)
    out = ours(x, net)
    assert isinstance(out, MetaTensor) and out.meta["marker"] == 7
    assert relative_error(out.numpy(), expected.numpy()) <= REL_TOL
    # With MONAI's network the same inferer is MONAI's own.
    np.testing.assert_array_equal(ours(x, monai_net).numpy(), expected.numpy())


def test_net_as_monais_predictor(net, monai_net, monai_inferers, rng):
    import torch

    x = torch.from_numpy(rng.uniform(-2, 2, VOLUME).astype(np.float32))
    expected = monai_inferers.sliding_window_inference(x, ROI, 2, monai_net, overlap=0.25).numpy()
    out = monai_inferers.sliding_window_inference(x, ROI, 2, net, overlap=0.25)
    assert isinstance(out, torch.Tensor)
    assert relative_error(out.numpy(), expected) <= REL_TOL


@pytest.mark.parametrize("kwargs, match", [
    ({"roi_size": (32, 32)}, "roi has 2 values"),
    ({"roi_size": 32, "overlap": 1.5}, "overlap"),
    ({"roi_size": 32, "mode": "median"}, "unknown blend mode 'median'"),
    ({"roi_size": 32, "padding_mode": "zeros"}, "unknown padding mode 'zeros'"),
    ({"roi_size": 32, "sw_batch_size": 0}, "sw_batch_size"),
    ({"roi_size": "big"}, "roi_size must be a number"),
])
def test_bad_window_options_raise(net, kwargs, match):
    with pytest.raises(ValueError, match=match):
        net.sliding_window(np.zeros(VOLUME, np.float32), **kwargs)


def test_bad_volumes_raise(net):
    with pytest.raises(ValueError, match="2 channels"):
        net.sliding_window(np.zeros((1, 2, 40, 36, 70), np.float32), ROI)
    x = np.zeros(VOLUME, np.float32)
    x[0, 0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        net.sliding_window(x, ROI)
