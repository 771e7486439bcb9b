"""Network.__call__ against MONAI's SwinUNETR (same checkpoint, same process) and the Swin Fusion goldens; array
kinds, strides, copies, the GIL and references."""

from __future__ import annotations

import gc
import sys
import threading
import time

import numpy as np
import pytest

from conftest import CHECKPOINT, REL_TOL, golden_case, golden_tolerance, relative_error

SHAPE = (1, 1, 32, 32, 64)


def cpu_backends(swinfer):
    return [b for b in ("cpu", "onednn") if b in swinfer.backends]


@pytest.mark.parametrize("layout", ["ndhwc", "ncdhw"])
@pytest.mark.parametrize("backend", ["cpu", "onednn"])
def test_forward_matches_monai(swinfer, monai_net, rng, backend, layout):
    if backend not in swinfer.backends:
        pytest.skip(f"this build has no {backend} backend")
    import torch

    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    expected = monai_net(torch.from_numpy(x)).numpy()
    net = swinfer.load(CHECKPOINT, backend=backend, layout=layout, threads=2)
    logits = net(x)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32 and logits.shape == (1, 2, 32, 32, 64)
    assert relative_error(logits, expected) <= REL_TOL


def test_fusion_od_matches_the_authors_code(swinfer, tmp_path):
    g = golden_case("fusion_od", tmp_path)
    net = swinfer.load(g["model"], config=g["config"], threads=2)
    assert net.info["arch"] == "SwinFusionUNETR" and net.info["parameters"] == g["case"]["parameter_count"]
    assert relative_error(net(g["input"]), g["logits"]) <= golden_tolerance(g["case"])


def test_channels_last_in_channels_last_out(swinfer, tmp_path):
    """Four input channels (with one, both layouts have the same strides): NDHWC memory is read in place and the
    logits come back NDHWC, numpy and torch, against the multichannel golden."""
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    g = golden_case("multichannel", tmp_path)
    net = swinfer.load(g["model"], config=g["config"], threads=2)
    x = g["input"]
    copies = swinfer._swinfer.input_copies()
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 4, 1)).transpose(0, 4, 1, 2, 3)
    out = net(channels_last)
    assert out.strides[1] == 4, f"channels-last input gave logits with strides {out.strides}"
    assert relative_error(out, g["logits"]) <= golden_tolerance(g["case"])
    t = net(torch.from_numpy(x).contiguous(memory_format=torch.channels_last_3d))
    assert t.is_contiguous(memory_format=torch.channels_last_3d)
    assert relative_error(t.numpy(), g["logits"]) <= golden_tolerance(g["case"])
    assert swinfer._swinfer.input_copies() == copies, "a channels-last float32 array was copied"


@pytest.fixture(scope="module")
def net(swinfer):
    return swinfer.load(CHECKPOINT, threads=2)


def test_torch_in_torch_out_and_numpy_in_numpy_out(net, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    from_numpy = net(x)
    from_torch = net(torch.from_numpy(x))
    assert isinstance(from_torch, torch.Tensor) and from_torch.dtype == torch.float32
    np.testing.assert_array_equal(from_torch.numpy(), from_numpy)
    # A tensor that requires grad (a training loop's) is read without its graph.
    np.testing.assert_array_equal(net(torch.from_numpy(x).requires_grad_()).numpy(), from_numpy)


def test_strides_give_the_same_logits(swinfer, net, rng):
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    expected = net(x)
    copies = swinfer._swinfer.input_copies()
    net(x)
    assert swinfer._swinfer.input_copies() == copies, "a contiguous float32 array was copied"

    # A strided view (every other voxel of a larger array) is copied once and gives the same result.
    big = np.zeros((1, 1, 64, 32, 128), np.float32)
    big[:, :, ::2, :, ::2] = x
    view = big[:, :, ::2, :, ::2]
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(net(view), expected)
    assert swinfer._swinfer.input_copies() == copies + 1


def test_half_precision_torch_tensors(swinfer, monai_net, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    x = torch.from_numpy(rng.uniform(-2, 2, SHAPE).astype(np.float32))
    net = swinfer.load(CHECKPOINT, threads=2)
    half = swinfer.load(CHECKPOINT, precision="fp16", threads=2)
    out16 = half(x.half())
    assert out16.dtype == torch.float16
    # fp16 storage rounds every activation: within 1e-2 of MONAI's float32 logits (docs/accuracy.md).
    assert relative_error(out16.float().numpy(), monai_net(x.half().float()).numpy()) <= 1e-2
    with pytest.raises(ValueError, match="float16"):
        net(x.half())


@pytest.mark.parametrize("bad, error, match", [
    (np.zeros((1, 32, 32, 64), np.float32), ValueError, r"5-D .*\(1, 32, 32, 64\)"),
    (np.zeros((1, 2, 32, 32, 64), np.float32), ValueError, "2 channels"),
    (np.zeros((1, 1, 32, 32, 40), np.float32), ValueError, "40"),
    (np.zeros(SHAPE, np.float64), ValueError, "float32"),
    (np.zeros(SHAPE, np.int16), ValueError, "float32"),
    ([[0.0]], TypeError, "numpy.ndarray or torch.Tensor"),
])
def test_bad_inputs_raise(net, bad, error, match):
    with pytest.raises(error, match=match):
        net(bad)


def test_nan_input_raises(net):
    x = np.zeros(SHAPE, np.float32)
    x[0, 0, 3, 4, 5] = np.nan
    x[0, 0, 1, 1, 1] = np.inf
    with pytest.raises(ValueError, match=r"2 of .* not finite \(1 NaN, 1 infinite\)"):
        net(x)


def test_bad_loads_raise(swinfer, tmp_path):
    with pytest.raises(FileNotFoundError):
        swinfer.load(tmp_path / "missing.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(open(CHECKPOINT, "rb").read()[:5000])
    with pytest.raises(OSError, match="corrupt.pt"):
        swinfer.load(corrupt)
    for kwargs, match in [({"backend": "tpu"}, "unknown backend 'tpu'"),
                          ({"precision": "fp8"}, "unknown precision 'fp8'"),
                          ({"layout": "nhwc"}, "unknown layout 'nhwc'"),
                          ({"conv3d": "fastest"}, "conv3d=fastest is not a cpu conv3d implementation"),
                          ({"tile": 4}, "the cpu backend has no option 'tile'"),
                          ({"threads": -3}, "threads"),
                          ({"int8_dynamic": True}, "int8_dynamic=True applies to precision= int8")]:
        with pytest.raises(ValueError, match=match):
            swinfer.load(CHECKPOINT, **kwargs)


def test_backend_options_reach_the_backend(swinfer, rng):
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    auto = swinfer.load(CHECKPOINT, threads=2)(x)
    direct = swinfer.load(CHECKPOINT, threads=2, conv3d="direct")(x)
    np.testing.assert_allclose(direct, auto, rtol=0, atol=1e-5 * np.abs(auto).max())
    # A forced implementation that cannot run the patch embedding fails when the network runs, naming why.
    with pytest.raises(RuntimeError, match="winograd2"):
        swinfer.load(CHECKPOINT, threads=2, conv3d="winograd2")(x)
    keys = {(o["backend"], o["key"]) for o in swinfer.named_options()}
    assert ("cpu", "conv3d") in keys and ("cpu", "bf16_weights") in keys


def test_the_gil_is_released_during_a_forward(net, rng):
    x = rng.uniform(-2, 2, (1, 1, 64, 64, 64)).astype(np.float32)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    start = time.perf_counter()
    counter.start()
    try:
        net(x)
    finally:
        end = time.perf_counter()
        done.set()
        counter.join()
    during = [t for t in ticks if start + 0.05 < t < end - 0.05]
    assert end - start > 0.2, "the forward was too short to observe"
    assert len(during) >= 10, f"the other thread ran {len(during)} times in a {end - start:.2f} s forward"


def test_no_reference_leak_over_100_calls(net):
    x = np.zeros(SHAPE, np.float32)
    for _ in range(3):
        net(x)
    gc.collect()
    refs, objects = sys.getrefcount(x), len(gc.get_objects())
    for _ in range(100):
        out = net(x)
        del out
    gc.collect()
    assert sys.getrefcount(x) == refs
    assert len(gc.get_objects()) <= objects + 10


def test_info(net, checkpoint_config):
    info = net.info
    assert info["arch"] == "SwinUNETR" and info["runs"] == "cpu/fp32/ndhwc"
    assert info["config"]["feature_size"] == checkpoint_config["feature_size"]
    assert info["parameters"] > 0 and net.in_channels == 1 and net.out_channels == 2
