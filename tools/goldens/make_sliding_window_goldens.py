#!/usr/bin/python3
"""Regenerates tests/data/sliding_window/: MONAI goldens for sliding-window inference and post-processing.

    /usr/bin/python3 tools/goldens/make_sliding_window_goldens.py [--out DIR]

Needs Debian's python3-torch (1.13), python3-skimage (KeepLargestConnectedComponent), MONAI 1.5.0 in site-packages
and MONAI 1.6.1 under /opt/monai-1.6.1 (see monai_select.py for the install commands).

Sliding window. Each case runs MONAI 1.5.0's sliding_window_inference with a predictor that is NOT translation
invariant, so a window placed or ordered wrongly changes the result. For a window batch x (B, C, rd, rh, rw), with
z, y, x the voxel's coordinates inside the window, output channel k is, in float32 and in this order:

    ((A[k] * x[:, k % C] + B[k] * (z / rd)) + Cc[k] * ((y / rh) * (x / rw)))  [+ D[k] * condition[:, k % C]]

Inputs come from a hash formula (input_formula below) that C++ reproduces bit-exactly, so only MONAI's outputs are
stored. Every case is then recomputed with MONAI 1.6.1 in a subprocess and the difference recorded in cases.json;
the one `condition` case (an argument new in 1.6) exists only for 1.6.1.

Post-processing. Activations(softmax / sigmoid) and AsDiscrete(argmax) on small logits with exact ties, and
KeepLargestConnectedComponent on a label volume with several components per label (26-, 18-, 6-connectivity,
num_components 2, applied_labels) plus a small volume with equal-sized components (MONAI's tie order).

Everything is float32 .npy (labels too, so the C++ .npy reader needs no integer dtypes).
Deterministic: a rerun rewrites identical files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "sliding_window")
sys.path.insert(0, HERE)

import monai_select  # noqa: E402

NEWEST = "1.6.1"

# Predictor coefficients (exact in float32; outputs stay below 2 in magnitude so 1e-6 is a few ulps).
A = [0.75, -0.5, 0.25]
B = [0.5, 0.25, -0.75]
CC = [0.5, -0.25, 0.5]
D = [0.25, -0.5, 0.125]

# name -> sliding_window_inference arguments. shape is (N, C, D, H, W); K output channels.
CASES = {
    "constant_spec70": dict(
        shape=[1, 1, 70, 20, 18], k=2, roi=[32, 16, 12], overlap=0.25, mode="constant", sw_batch_size=4,
        covers="constant blend; axis 0 is the spec's 70 @ roi 32 / overlap 0.25 -> starts [0, 24, 38]",
    ),
    "gaussian": dict(
        shape=[1, 1, 70, 20, 18], k=2, roi=[32, 16, 12], overlap=0.5, mode="gaussian", sw_batch_size=3,
        covers="gaussian blend, default sigma_scale 0.125 (corner weights hit the 1e-3 floor)",
    ),
    "gaussian_sigma02": dict(
        shape=[1, 2, 40, 36, 28], k=3, roi=[24, 20, 16], overlap=0.5, mode="gaussian", sigma_scale=0.2,
        sw_batch_size=4, covers="sigma_scale 0.2, two input channels, three output channels",
    ),
    "gaussian_sigma_per_axis": dict(
        shape=[1, 1, 30, 26, 21], k=2, roi=[15, 13, 11], overlap=0.4, mode="gaussian", sigma_scale=[0.1, 0.2, 0.3],
        sw_batch_size=2, covers="per-axis sigma_scale, odd roi (integer Gaussian coordinates)",
    ),
    "per_axis_overlap": dict(
        shape=[1, 1, 40, 36, 28], k=2, roi=[16, 16, 16], overlap=[0.5, 0.25, 0.0], mode="constant", sw_batch_size=6,
        covers="per-axis overlap, including 0",
    ),
    "batch2_overlap07": dict(
        shape=[2, 1, 26, 28, 21], k=2, roi=[16, 16, 16], overlap=0.7, mode="gaussian", sw_batch_size=5,
        covers="overlap 0.7 (interval int(16 * 0.3) = 4), batch 2, 48 windows per item, sw_batch 5: the 10th call "
        "holds 3 windows of item 0 and 2 of item 1",
    ),
    "pad_constant": dict(
        shape=[1, 1, 10, 20, 13], k=2, roi=[16, 16, 16], overlap=0.25, mode="gaussian", padding_mode="constant",
        cval=-1.0, sw_batch_size=2, covers="roi larger than the image on axes 0 and 2, constant padding cval -1",
    ),
    "pad_replicate": dict(
        shape=[1, 1, 10, 20, 13], k=2, roi=[16, 16, 16], overlap=0.25, mode="gaussian", padding_mode="replicate",
        sw_batch_size=2, covers="roi larger than the image, replicate padding",
    ),
    "pad_reflect": dict(
        shape=[1, 1, 10, 20, 13], k=2, roi=[16, 16, 16], overlap=0.25, mode="constant", padding_mode="reflect",
        sw_batch_size=3, covers="roi larger than the image, reflect padding",
    ),
    "pad_circular": dict(
        shape=[1, 1, 10, 20, 13], k=2, roi=[16, 16, 16], overlap=0.25, mode="constant", padding_mode="circular",
        sw_batch_size=3, covers="roi larger than the image, circular padding",
    ),
    "roi_equals_image": dict(
        shape=[1, 1, 16, 20, 12], k=2, roi=[16, 0, -1], overlap=0.5, mode="gaussian", sw_batch_size=1,
        covers="roi == image (one window); non-positive roi values take the image size",
    ),
    "interval9": dict(
        shape=[1, 1, 110, 8, 6], k=2, roi=[100, 4, 4], overlap=0.9, mode="constant", sw_batch_size=8,
        covers="roi 100 @ overlap 0.9: interval int(100 * 0.1) = 9 (starts [0, 9, 10]); roi 4 @ 0.9: interval "
        "int(0.4) = 0 -> 1",
    ),
}
CONDITION_CASE = "condition_1_6_1"
CONDITION = dict(
    shape=[2, 1, 20, 18, 12], k=2, roi=[16, 16, 16], overlap=0.5, mode="gaussian", padding_mode="replicate",
    sw_batch_size=3, covers="MONAI 1.6's `condition` input, padded and windowed alongside the image (1.6.1 only)",
)

# The spec's literal window-start examples (size, roi, overlap).
START_EXAMPLES = [(96, 96, 0.25), (250, 96, 0.5), (120, 96, 0.5), (70, 32, 0.25), (120, 100, 0.9), (110, 100, 0.9),
                  (96, 96, 0.7), (130, 96, 0.7), (6, 4, 0.9)]


def input_formula(shape, seed: int) -> np.ndarray:
    """Value of flat C-order index i: lowbias32 hash of i * 0x9E3779B1 + seed * 0x85EBCA77 (uint32), top 24 bits
    mapped exactly to [-1, 1) in float32."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        z = i * np.uint32(0x9E3779B1) + np.uint32((seed * 0x85EBCA77) & 0xFFFFFFFF)
        z ^= z >> np.uint32(16)
        z *= np.uint32(0x7FEB352D)
        z ^= z >> np.uint32(15)
        z *= np.uint32(0x846CA68B)
        z ^= z >> np.uint32(16)
    u = ((z >> np.uint32(8)).astype(np.int64) - (1 << 23)).astype(np.float32) / np.float32(1 << 23)
    return u.reshape(shape)


def make_predictor(k: int, with_condition: bool):
    import torch

    def predict(x, condition=None):
        assert (condition is not None) == with_condition
        _, c, rd, rh, rw = x.shape
        zz = (torch.arange(rd, dtype=torch.float32) / rd).view(1, rd, 1, 1)
        yx = ((torch.arange(rh, dtype=torch.float32) / rh).view(rh, 1) *
              (torch.arange(rw, dtype=torch.float32) / rw).view(1, rw)).view(1, 1, rh, rw)
        outs = []
        for j in range(k):
            o = A[j] * x[:, j % c] + B[j] * zz + CC[j] * yx
            if condition is not None:
                o = o + D[j] * condition[:, j % c]
            outs.append(o)
        return torch.stack(outs, 1)

    return predict


def run_case(version: str, name: str, case: dict) -> np.ndarray:
    monai_select.import_monai(version)
    import torch
    from monai.inferers import sliding_window_inference

    torch.set_num_threads(2)
    seed = sorted(list(CASES) + [CONDITION_CASE]).index(name) + 1
    image = torch.from_numpy(input_formula(case["shape"], seed))
    kwargs = dict(
        overlap=case["overlap"], mode=case["mode"], sigma_scale=case.get("sigma_scale", 0.125),
        padding_mode=case.get("padding_mode", "constant"), cval=case.get("cval", 0.0),
    )
    with_condition = name == CONDITION_CASE
    if with_condition:
        kwargs["condition"] = torch.from_numpy(input_formula(case["shape"], seed + 1000))
    with torch.no_grad():
        out = sliding_window_inference(image, case["roi"], case["sw_batch_size"],
                                       make_predictor(case["k"], with_condition), **kwargs)
    return out.numpy().astype(np.float32)


def monai_geometry(case: dict) -> dict:
    from monai.data.utils import dense_patch_slices
    from monai.inferers.utils import _get_scan_interval
    from monai.utils import ensure_tuple_rep, fall_back_tuple

    image = case["shape"][2:]
    roi = fall_back_tuple(case["roi"], image)
    padded = [max(i, r) for i, r in zip(image, roi)]
    interval = _get_scan_interval(padded, roi, 3, ensure_tuple_rep(case["overlap"], 3))
    slices = dense_patch_slices(padded, roi, interval)
    starts = [sorted({int(s[a].start) for s in slices}) for a in range(3)]
    return dict(scan_interval=list(interval), starts=starts, windows_per_item=len(slices))


def start_examples() -> list:
    from monai.data.utils import dense_patch_slices
    from monai.inferers.utils import _get_scan_interval

    out = []
    for size, roi, overlap in START_EXAMPLES:
        interval = _get_scan_interval([size], [roi], 1, [overlap])
        starts = [int(s[0].start) for s in dense_patch_slices([size], [roi], interval)]
        out.append(dict(size=size, roi=roi, overlap=overlap, interval=interval[0], starts=starts))
    return out


def importance_maps() -> dict:
    import torch
    from monai.data.utils import compute_importance_map

    maps = {"importance_gaussian_24x20x16": ((24, 20, 16), 0.125), "importance_gaussian_7x10x13": ((7, 10, 13),
                                                                                                     (0.1, 0.2, 0.3))}
    out = {}
    for name, (roi, sigma) in maps.items():
        m = compute_importance_map(roi, mode="gaussian", sigma_scale=sigma, device="cpu", dtype=torch.float32)
        out[name] = dict(roi=list(roi), sigma_scale=list(sigma) if isinstance(sigma, tuple) else sigma,
                         array=m.numpy().astype(np.float32))
    return out


def postprocess_goldens(out_dir: str) -> dict:
    import torch
    from monai.transforms import Activations, AsDiscrete, KeepLargestConnectedComponent

    meta = {}
    # Logits with exact ties: channel 3 copies channel 1 where (y + x) % 4 == 0, channel 4 copies channel 0 on x == 2.
    logits = input_formula([2, 5, 6, 7, 8], 4242) * np.float32(4.0)
    yy, xx = np.meshgrid(np.arange(7), np.arange(8), indexing="ij")
    tie = ((yy + xx) % 4 == 0)[None, None]
    logits[:, 3:4] = np.where(tie, logits[:, 1:2], logits[:, 3:4])
    logits[:, 4, :, :, 2] = logits[:, 0, :, :, 2]
    t = torch.from_numpy(logits)
    softmax = torch.stack([Activations(softmax=True)(t[b].clone()) for b in range(2)])
    sigmoid = torch.stack([Activations(sigmoid=True)(t[b].clone()) for b in range(2)])
    argmax_probs = torch.stack([AsDiscrete(argmax=True)(softmax[b].clone()) for b in range(2)])
    argmax_logits = torch.stack([AsDiscrete(argmax=True)(t[b].clone()) for b in range(2)])
    arrays = dict(logits=logits, softmax=softmax, sigmoid=sigmoid, argmax_softmax=argmax_probs,
                  argmax_logits=argmax_logits)

    labels = component_volume()
    arrays["labels"] = labels
    variants = {
        "lcc_default": {},
        "lcc_connectivity2": dict(connectivity=2),
        "lcc_connectivity1": dict(connectivity=1),
        "lcc_two_components": dict(num_components=2),
        "lcc_applied_1_3": dict(applied_labels=[1, 3]),
    }
    for name, kwargs in variants.items():
        # The transform edits its input in place: give it a copy.
        arrays[name] = KeepLargestConnectedComponent(**kwargs)(torch.from_numpy(labels[0].copy()))[None]
        meta[name] = kwargs
    ties = tie_volume()
    arrays["labels_ties"] = ties
    arrays["lcc_ties"] = KeepLargestConnectedComponent()(torch.from_numpy(ties[0].copy()))[None]
    meta["lcc_ties"] = {}
    for name, a in arrays.items():
        a = a.numpy() if hasattr(a, "numpy") else a
        np.save(os.path.join(out_dir, f"{name}.npy"), np.ascontiguousarray(a, dtype=np.float32))
    return meta


def component_volume() -> np.ndarray:
    """(1, 1, 18, 20, 22) labels 0..3: random small boxes, plus zigzag chains along x whose voxels touch only at
    corners (one component only under 26-connectivity) or only along edges (18 and 26), long enough to be the
    largest component when they hold together. Drawn until the largest components differ between 6-, 18- and
    26-connectivity and no two candidate components tie (MONAI's tie order is numpy's unstable argsort)."""
    from skimage.measure import label

    def chain(v, lab, length, corner, rng):
        z, y = int(rng.integers(0, v.shape[0] - 1)), int(rng.integers(0, v.shape[1] - 1))
        x = int(rng.integers(0, v.shape[2] - length + 1))
        for i in range(length):
            v[z + i % 2, y + (i % 2 if corner else 0), x + i] = lab

    for seed in range(1000):
        rng = np.random.default_rng(seed)
        v = np.zeros((18, 20, 22), np.uint8)
        for _ in range(24):
            lab = int(rng.integers(1, 4))
            z, y, x = (int(rng.integers(0, s - 2)) for s in v.shape)
            dz, dy, dx = (int(rng.integers(1, 4)) for _ in range(3))
            v[z:z + dz, y:y + dy, x:x + dx] = lab
        chain(v, 1, 21, True, rng)
        chain(v, 2, 20, False, rng)
        chain(v, 3, 19, True, rng)
        chain(v, 3, 17, False, rng)
        features = {c: [label(v == lab, connectivity=c) for lab in (1, 2, 3)] for c in (1, 2, 3)}
        if not all(distinct_top_sizes(f, 3) for fs in features.values() for f in fs):
            continue
        largest = {c: [f == np.argmax(np.bincount(f.ravel())[1:]) + 1 for f in fs] for c, fs in features.items()}
        if all(not np.array_equal(largest[a][i], largest[b][i]) for a, b in ((1, 2), (1, 3)) for i in (0, 2)) and \
                not np.array_equal(largest[2][0], largest[3][0]):
            return v[None, None].astype(np.float32)
    raise RuntimeError("no suitable component volume found")


def distinct_top_sizes(features: np.ndarray, n: int) -> bool:
    sizes = np.sort(np.bincount(features.ravel())[1:])[::-1]
    top = sizes[: n + 1]
    return len(set(top.tolist())) == len(top)


def tie_volume() -> np.ndarray:
    """Equal-sized components: label 1 has two of 3 voxels, label 2 has 2, 2 and 1 voxels."""
    v = np.zeros((5, 6, 7), np.uint8)
    v[0, 0, 0:3] = 1
    v[3, 4, 4:7] = 1
    v[1, 2, 0:2] = 2
    v[4, 0, 5:7] = 2
    v[2, 5, 3] = 2
    return v[None, None].astype(np.float32)


def child(version: str, names: list, out_dir: str) -> None:
    """Runs cases with one MONAI version and saves them as <name>.<version>.npy in out_dir."""
    for name in names:
        case = CONDITION if name == CONDITION_CASE else CASES[name]
        np.save(os.path.join(out_dir, f"{name}.{version}.npy"), run_case(version, name, case))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1:], args.out)
        return

    os.makedirs(args.out, exist_ok=True)
    monai = monai_select.import_monai(monai_select.SITE_VERSION)
    import torch

    subprocess.run([sys.executable, __file__, "--out", args.out, "--child", NEWEST, *CASES, CONDITION_CASE],
                   check=True)
    manifest = dict(
        generator="tools/goldens/make_sliding_window_goldens.py", monai=monai.__version__, newest=NEWEST,
        torch=torch.__version__, coefficients=dict(A=A, B=B, C=CC, D=D), cases={}, start_examples=start_examples(),
    )
    for name, case in {**CASES, CONDITION_CASE: CONDITION}.items():
        newest_path = os.path.join(args.out, f"{name}.{NEWEST}.npy")
        newest = np.load(newest_path)
        os.remove(newest_path)
        entry = dict(case, input_seed=sorted(list(CASES) + [CONDITION_CASE]).index(name) + 1, **monai_geometry(case))
        if name == CONDITION_CASE:
            entry.update(condition_seed=entry["input_seed"] + 1000, monai=NEWEST)
            out = newest
        else:
            out = run_case(monai.__version__, name, case)
            entry[f"max_abs_diff_{NEWEST}"] = float(np.max(np.abs(out - newest)))
        np.save(os.path.join(args.out, f"{name}.npy"), out)
        entry["output_shape"] = list(out.shape)
        manifest["cases"][name] = entry
    manifest["importance_maps"] = {}
    for name, m in importance_maps().items():
        np.save(os.path.join(args.out, f"{name}.npy"), m.pop("array"))
        manifest["importance_maps"][name] = m
    manifest["keep_largest_connected_component"] = postprocess_goldens(args.out)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    for name, entry in manifest["cases"].items():
        diff = entry.get(f"max_abs_diff_{NEWEST}")
        print(f"{name:28s} windows/item {entry['windows_per_item']:4d}  1.5.0 vs {NEWEST}: {diff}")


if __name__ == "__main__":
    main()
