"""Shared fixtures: the repository's goldens and checkpoints, MONAI's networks built from them, fresh inputs.

The references are MONAI 1.5 (same checkpoint, same process) and the committed goldens (made by tools/goldens from
MONAI and the Swin Fusion author's code); nothing here compares swinfer with its own output. Tests that need torch
or monai skip with the reason where those are missing (pytest -rs lists them).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDENS = os.path.join(REPO, "tests", "data", "goldens")
CHECKPOINT = os.path.join(GOLDENS, "pt_checkpoint", "model.pt")
sys.path.insert(0, os.path.join(REPO, "tools", "goldens"))

#: The tolerance the package promises against MONAI in float32: of max|logit|.
REL_TOL = 1e-5


def relative_error(actual, expected) -> float:
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert np.isfinite(actual).all(), "non-finite values in swinfer's output"
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


@pytest.fixture(scope="session")
def rng():
    """Fresh inputs each run; the seed is printed so a failure can be replayed (SWINFER_TEST_SEED)."""
    seed = int(os.environ.get("SWINFER_TEST_SEED", np.random.SeedSequence().entropy % (1 << 32)))
    print(f"swinfer python tests: SWINFER_TEST_SEED={seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def checkpoint_config():
    with open(os.path.join(GOLDENS, "pt_checkpoint", "case.json"), encoding="utf-8") as f:
        return json.load(f)["config"]


@pytest.fixture(scope="session")
def monai_net(checkpoint_config):
    """MONAI's SwinUNETR with the checkpoint's weights (float16 storages widened to float32), eval, no grad."""
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    nets = pytest.importorskip("monai.networks.nets", reason="monai is not installed (pip install monai)")
    torch.set_grad_enabled(False)
    c = dict(checkpoint_config)
    kwargs = {k: c[k] for k in ("in_channels", "out_channels", "patch_size", "depths", "num_heads", "window_size",
                                "qkv_bias", "mlp_ratio", "feature_size", "norm_name", "normalize", "spatial_dims",
                                "downsample", "use_v2")}
    net = nets.SwinUNETR(**kwargs)
    saved = torch.load(CHECKPOINT, map_location="cpu")
    state = {k.removeprefix("module."): v.float() for k, v in saved["state_dict"].items()}
    net.load_state_dict(state)
    return net.eval()


@pytest.fixture(scope="session")
def swinfer():
    import swinfer as package

    return package


def golden_case(name: str, folder) -> dict:
    """A committed golden case as files: its formula weights written with torch.save (model), its configuration
    (config), its input and the reference logits (from MONAI or the Swin Fusion author's code)."""
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    import formula

    case_dir = os.path.join(GOLDENS, name)
    with open(os.path.join(case_dir, "case.json"), encoding="utf-8") as f:
        case = json.load(f)
    window = case["config"]["window_size"]
    tensors = formula.tensors_of_case(case["tensors"], [window] * 3 if isinstance(window, int) else window)
    model, config = os.path.join(folder, f"{name}.pt"), os.path.join(folder, f"{name}.json")
    torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}, model)
    with open(config, "w", encoding="utf-8") as f:
        json.dump(case["config"], f)
    i = case["input"]
    return dict(case=case, model=model, config=config,
                input=formula.formula_array(i["key"], i["shape"], i["offset"], i["scale"]),
                logits=np.load(os.path.join(case_dir, "logits.npy")))


def golden_tolerance(case: dict) -> float:
    """REL_TOL, or twice the case's own float32 rounding where that is larger: the stressed formula weights of some
    cases make MONAI's float32 logits differ from float64 by up to 1e-5 of max|logit| (case.json records it)."""
    return max(REL_TOL, 2 * case["monai_fp32_vs_fp64_max_abs"] / case["logits_max_abs"])
