#!/usr/bin/python3
"""Regenerates tests/data/preprocess/: small NIfTI volumes and MONAI's outputs of each preprocessing transform, of whole
pipelines, and of Invertd applied to a prediction, for tests/preprocess/test_preprocess.cpp.

    /usr/bin/python3 tools/goldens/make_preprocess_goldens.py                    # MONAI 1.5.0 (site-packages)
    /usr/bin/python3 tools/goldens/make_preprocess_goldens.py --compare 1.6.1    # also report 1.6.1's differences

Volumes: synthetic ones with anisotropic, flipped, permuted and oblique affines, and two real scans from nibabel's test
data (anatomical.nii, a 2 mm LAS brain stored big-endian int16; example_nifti2.nii.gz, an oblique 2-volume series,
re-saved as NIfTI-1). Each is written as .nii.gz, which MONAI reads with LoadImaged + EnsureChannelFirstd; the array and
affine MONAI loads are stored as .npy and JSON so the C++ tests need no NIfTI reader.

Steps are written in swinfer's pipeline JSON ({"orientation": "RAS"}, {"spacing": [...]}, ...) and run as MONAI's
dictionary transforms with every other argument at its default. A pipeline's prediction is [image, image * image]
(float32) on the preprocessed grid; Invertd maps it back with nearest_interp=False (bilinear) and True (nearest).
Nearest-neighbour cases are chosen so no sample falls on an exact .5 tie, where torch 1.13 (std::round) and torch >=
2.1 (std::nearbyint), and float64 rounding noise in torch's normalised grid, could pick different voxels.

Manifest: manifest.json. Deterministic: a rerun rewrites identical files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "preprocess")
NIBABEL_DATA = "/usr/lib/python3/dist-packages/nibabel/tests/data"
sys.path.insert(0, HERE)


# ----------------------------------------------------------------------------------------------- volumes (synthetic)

def _grid(shape):
    return np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing="ij")


def _rotation(z_deg, x_deg):
    z, x = np.radians(z_deg), np.radians(x_deg)
    rz = np.array([[np.cos(z), -np.sin(z), 0], [np.sin(z), np.cos(z), 0], [0, 0, 1]])
    rx = np.array([[1, 0, 0], [0, np.cos(x), -np.sin(x)], [0, np.sin(x), np.cos(x)]])
    return rz @ rx


def _affine(linear, translation):
    a = np.eye(4)
    a[:3, :3] = linear
    a[:3, 3] = translation
    return a


def ct_lps():
    """CT-like: air at -1000 HU around a soft-tissue ellipsoid with a bone sphere; LPS axes, anisotropic voxels."""
    rng = np.random.default_rng(1)
    shape = (30, 26, 12)
    i, j, k = _grid(shape)
    body = ((i - 15) / 11) ** 2 + ((j - 13) / 9) ** 2 + ((k - 6) / 7) ** 2 < 1
    bone = (i - 18) ** 2 + (j - 10) ** 2 + (k - 5) ** 2 < 9
    v = np.where(body, 40 + 60 * np.sin(i / 3) * np.cos(j / 4) + rng.normal(0, 20, shape), -1000 + rng.normal(0, 5, shape))
    v = np.where(bone, 700 + rng.normal(0, 30, shape), v)
    return v.astype(np.float32), _affine(np.diag([-0.91, -0.87, 2.63]), [120.3, 95.1, -40.0])


def mr_oblique():
    """MR-like: zero background, positive tissue; axes permuted (i ~ A, j ~ S, k ~ L) and rotated 20 and 10 degrees."""
    rng = np.random.default_rng(2)
    shape = (22, 26, 14)
    i, j, k = _grid(shape)
    head = ((i - 11) / 9) ** 2 + ((j - 12) / 10) ** 2 + ((k - 7) / 6) ** 2 < 1
    v = np.where(head, 300 + 150 * np.cos(i / 2.5) * np.sin(k / 3) + rng.normal(0, 25, shape), 0.0)
    permuted = np.array([[0, 0, -1], [1, 0, 0], [0, 1, 0]], dtype=np.float64)  # columns: A, S, L
    linear = _rotation(20, 10) @ permuted @ np.diag([0.95, 1.1, 1.8])
    return v.astype(np.float32), _affine(linear, [-30.5, 12.25, 48.0])


def tiny():
    """Small smooth volume with axes P, S, L (each flipped or permuted from RAS) and unequal voxel sizes."""
    shape = (11, 10, 6)
    i, j, k = _grid(shape)
    v = 300 * np.sin(i / 2.1) + 200 * np.cos(j / 1.7) * k + 37 * i * j / 10 - 50 * k
    linear = np.array([[0, 0, -1.1], [-0.7, 0, 0], [0, 2.0, 0]])
    return v.astype(np.float32), _affine(linear, [10.0, -5.5, 3.25])


def tiny_oblique():
    """Small volume with a rotated, anisotropic affine."""
    rng = np.random.default_rng(3)
    shape = (10, 12, 7)
    v = rng.uniform(-50, 250, shape)
    return v.astype(np.float32), _affine(_rotation(-35, 25) @ np.diag([0.85, 1.2, 1.55]), [-7.0, 4.5, 11.0])


def labels():
    """Integer labels 0-4 in blobs, for nearest-neighbour resampling; flipped anisotropic axes."""
    shape = (12, 10, 7)
    i, j, k = _grid(shape)
    v = np.zeros(shape)
    v[((i - 4) ** 2 + (j - 4) ** 2 + (k - 3) ** 2) < 10] = 1
    v[((i - 8) ** 2 + (j - 6) ** 2) < 6] = 2
    v[(i + j + k) % 7 == 0] = 3
    v[(i > 9) & (k < 2)] = 4
    return v.astype(np.float32), _affine(np.diag([-0.8, 0.9, -2.2]), [5.0, -3.0, 20.0])


def two_channel():
    """Two channels with zeros in different places and foreground away from the edges (4-D NIfTI, channel last)."""
    rng = np.random.default_rng(4)
    shape = (10, 8, 6)
    i, j, k = _grid(shape)
    a = np.where((i > 2) & (i < 7) & (j > 1) & (j < 6) & (k > 0), rng.uniform(50, 400, shape), 0.0)
    b = np.where((i > 3) & (i < 9) & (j > 2) & (j < 5) & (k < 5) & (k > 1), rng.uniform(-3, 9, shape), 0.0)
    return np.stack([a, b], axis=-1).astype(np.float32), _affine(np.diag([1.25, -1.0, 3.0]), [0.0, 10.0, -6.0])


def blank():
    """No positive voxel: CropForeground's empty box."""
    return np.zeros((6, 5, 4), np.float32), np.diag([1.0, 1.0, 1.0, 1.0])


SYNTHETIC = {f.__name__: f for f in (ct_lps, mr_oblique, tiny, tiny_oblique, labels, two_channel, blank)}


def write_volumes(out):
    """Writes every volume as .nii.gz; returns {name: file}."""
    import nibabel as nib

    files = {}
    for name, make in SYNTHETIC.items():
        data, affine = make()
        files[name] = f"{name}.nii.gz"
        _save_nifti(nib.Nifti1Image(data, affine), os.path.join(out, files[name]))
    # anatomical.nii as it is (big-endian int16), only compressed
    files["anatomical"] = "anatomical.nii.gz"
    with open(os.path.join(NIBABEL_DATA, "anatomical.nii"), "rb") as src:
        _write_gzip(src.read(), os.path.join(out, files["anatomical"]))
    # example_nifti2.nii.gz re-saved as NIfTI-1 (int16, same affine) so NIfTI-1 readers can load it
    series = nib.load(os.path.join(NIBABEL_DATA, "example_nifti2.nii.gz"))
    files["series_oblique"] = "series_oblique.nii.gz"
    _save_nifti(nib.Nifti1Image(np.asarray(series.dataobj), series.affine), os.path.join(out, files["series_oblique"]))
    return files


def _write_gzip(raw, path):
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:  # reproducible bytes
        z.write(raw)


def _save_nifti(img, path):
    _write_gzip(img.to_bytes(), path)


# --------------------------------------------------------------------------------------------------- cases

SIR_BTCV = {"a_min": -175, "a_max": 250, "b_min": 0.0, "b_max": 1.0, "clip": True}

# name -> (volume, steps). Each runs one MONAI transform on the loaded volume.
TRANSFORMS = {
    "orientation_tiny_ras": ("tiny", [{"orientation": "RAS"}]),
    "orientation_tiny_lps": ("tiny", [{"orientation": "LPS"}]),
    "orientation_tiny_pli": ("tiny", [{"orientation": "PLI"}]),
    "orientation_tiny_sar": ("tiny", [{"orientation": "SAR"}]),
    "orientation_tiny_irp": ("tiny", [{"orientation": "IRP"}]),
    "orientation_tiny_identity": ("tiny", [{"orientation": "PSL"}]),
    "orientation_oblique_ras": ("tiny_oblique", [{"orientation": "RAS"}]),
    "orientation_oblique_ila": ("tiny_oblique", [{"orientation": {"axcodes": "ILA"}}]),
    "orientation_series_ras": ("series_oblique", [{"orientation": "RAS"}]),
    "spacing_tiny_bilinear": ("tiny", [{"spacing": [0.5, 0.9, 1.3]}]),
    "spacing_tiny_nearest": ("tiny", [{"spacing": {"pixdim": [1.7, 2.3, 0.8], "mode": "nearest"}}]),
    "spacing_tiny_zeros": ("tiny", [{"spacing": {"pixdim": [0.6, 1.45, 0.75], "padding_mode": "zeros"}}]),
    "spacing_tiny_unchanged": ("tiny", [{"spacing": [0.7, 2.0, 1.1]}]),
    "spacing_tiny_within_tolerance": ("tiny", [{"spacing": [0.7004, 2.5, 1.1]}]),
    "spacing_tiny_keep_axes": ("tiny", [{"spacing": [-1, 1.5, 0]}]),
    "spacing_tiny_one_value": ("tiny", [{"spacing": 0.95}]),
    # (10 - 1) / 2 + 1 = 5.5 voxels: np.round's half-to-even gives 6
    "spacing_tiny_round_half": ("tiny", [{"spacing": [0.7, 4.0, 1.1]}]),
    # twice the float32-stored 1.1: the extent is 3.5 only up to zoom_affine's rounding, which decides the shape
    "spacing_tiny_float32_double": ("tiny", [{"spacing": [0.7, 2.0, 2 * float(np.float32(1.1))]}]),
    "spacing_oblique_bilinear": ("tiny_oblique", [{"spacing": [1.0, 1.0, 1.0]}]),
    "spacing_oblique_nearest": ("tiny_oblique", [{"spacing": {"pixdim": [0.83, 1.37, 1.13], "mode": "nearest"}}]),
    "spacing_labels_nearest": ("labels", [{"spacing": {"pixdim": [1.33, 0.7, 1.6], "mode": "nearest"}}]),
    "spacing_two_channel": ("two_channel", [{"spacing": [0.9, 0.8, 2.1]}]),
    "sir_btcv": ("ct_lps", [{"scale_intensity_range": SIR_BTCV}]),
    "sir_no_clip": ("tiny", [{"scale_intensity_range": {"a_min": 100, "a_max": -50.5, "b_min": -1, "b_max": 2}}]),
    "sir_no_b": ("tiny", [{"scale_intensity_range": {"a_min": -100.25, "a_max": 400}}]),
    "sir_degenerate": ("tiny", [{"scale_intensity_range": {"a_min": 5, "a_max": 5, "b_min": 1, "b_max": 2}}]),
    "sir_inverted_clip": ("tiny", [{"scale_intensity_range": {"a_min": 0, "a_max": 500, "b_min": 1, "b_max": 0,
                                                               "clip": True}}]),
    "normalize_default": ("two_channel", [{"normalize_intensity": {}}]),
    "normalize_nonzero": ("two_channel", [{"normalize_intensity": {"nonzero": True}}]),
    "normalize_channel_wise": ("two_channel", [{"normalize_intensity": {"channel_wise": True}}]),
    "normalize_nonzero_channel_wise": ("two_channel", [{"normalize_intensity": {"nonzero": True,
                                                                                 "channel_wise": True}}]),
    "normalize_given": ("two_channel", [{"normalize_intensity": {"subtrahend": [10, 2.5], "divisor": [4, 0],
                                                                  "channel_wise": True}}]),
    "normalize_given_scalar": ("tiny", [{"normalize_intensity": {"subtrahend": 5, "divisor": 3}}]),
    "normalize_real": ("series_oblique", [{"normalize_intensity": {"nonzero": True, "channel_wise": True}}]),
    "crop_default": ("two_channel", [{"crop_foreground": {}}]),
    "crop_margin_past_edges": ("two_channel", [{"crop_foreground": {"margin": [2, 0, 1]}}]),
    "crop_margin_allow_smaller": ("two_channel", [{"crop_foreground": {"margin": [2, 0, 1], "allow_smaller": True}}]),
    "crop_k_divisible": ("two_channel", [{"crop_foreground": {"k_divisible": [4, 5, 6]}}]),
    "crop_margin_k": ("two_channel", [{"crop_foreground": {"margin": 1, "k_divisible": 7}}]),
    "crop_empty": ("blank", [{"crop_foreground": {}}]),
}

# name -> (volume, steps in file order). Each stores every step's output and Invertd's.
PIPELINES = {
    "btcv_ct": ("ct_lps", {"orientation": "RAS", "spacing": [1.5, 1.5, 2.0], "scale_intensity_range": SIR_BTCV,
                           "crop_foreground": {"margin": 0}}),
    "mr_oblique": ("mr_oblique", {"orientation": "LPS", "spacing": [1.35, 1.3, 1.6],
                                  "normalize_intensity": {"nonzero": True},
                                  "crop_foreground": {"margin": [2, 1, 3], "k_divisible": [8, 8, 8]}}),
    "anatomical": ("anatomical", {"orientation": "RAS", "spacing": [2.7, 2.45, 3.1],
                                  "scale_intensity_range": {"a_min": 4000, "a_max": 20000, "b_min": 0, "b_max": 1,
                                                            "clip": True},
                                  "crop_foreground": {"margin": 1, "allow_smaller": True}}),
    "series_oblique": ("series_oblique", {"orientation": "RAS", "spacing": [2.3, 2.1, 2.45],
                                          "normalize_intensity": {"channel_wise": True},
                                          "crop_foreground": {"k_divisible": [16, 16, 16]}}),
}


# ------------------------------------------------------------------------------------------------ MONAI side

def monai_transform(name, args):
    """The MONAI dictionary transform for one swinfer step (key "image"; other arguments at MONAI's defaults)."""
    from monai import transforms as mt

    if name == "orientation":
        return mt.Orientationd(keys="image", axcodes=args if isinstance(args, str) else args["axcodes"])
    if name == "spacing":
        if not isinstance(args, dict):
            args = {"pixdim": args}
        return mt.Spacingd(keys="image", pixdim=args["pixdim"], mode=args.get("mode", "bilinear"),
                           padding_mode=args.get("padding_mode", "border"))
    if name == "scale_intensity_range":
        return mt.ScaleIntensityRanged(keys="image", **args)
    if name == "normalize_intensity":
        return mt.NormalizeIntensityd(keys="image", **args)
    if name == "crop_foreground":
        return mt.CropForegroundd(keys="image", source_key="image", **args)
    raise ValueError(name)


def step_items(steps):
    """(name, args) pairs from a list of one-key objects or an ordered object."""
    if isinstance(steps, dict):
        return list(steps.items())
    return [next(iter(s.items())) for s in steps]


def as_record(image, prefix, out):
    """Saves a MetaTensor's array as <prefix>.npy; returns its manifest entry."""
    array = image.detach().cpu().numpy().astype(np.float32)
    np.save(os.path.join(out, prefix + ".npy"), array)
    return {"array": prefix + ".npy", "shape": list(array.shape),
            "affine": image.affine.detach().cpu().numpy().astype(np.float64).tolist()}


def assert_no_ties(src_affine, src_shape, dst_affine, dst_shape, what):
    """Fails if nearest-neighbour resampling from src onto dst meets a source coordinate within 1e-9 of a .5 tie."""
    xform = np.linalg.solve(np.asarray(src_affine), np.asarray(dst_affine))
    idx = np.stack(_grid(dst_shape) + [np.ones(dst_shape)]).reshape(4, -1)
    coords = (xform @ idx)[:3]
    coords = np.clip(coords, 0, np.asarray(src_shape, dtype=np.float64)[:, None] - 1)  # border padding
    gap = np.abs(coords - np.floor(coords) - 0.5).min()
    if gap < 1e-9:
        raise RuntimeError(f"{what}: a nearest-neighbour sample lies on a .5 tie; choose other spacings")


def run_steps(files, volume, steps, out, stem):
    """Loads a volume and applies the steps one by one, saving step n's output as stem(n).npy; returns the step
    records, the final data dict and the Compose of every transform applied (for Invertd)."""
    from monai import transforms as mt

    load = [mt.LoadImaged(keys="image"), mt.EnsureChannelFirstd(keys="image")]
    d = {"image": os.path.join(out, files[volume])}
    for t in load:
        d = t(d)
    records, applied = [], []
    for n, (name, args) in enumerate(step_items(steps)):
        t = monai_transform(name, args)
        before = d["image"]
        d = t(d)
        applied.append(t)
        if name == "spacing" and isinstance(args, dict) and args.get("mode") == "nearest":
            assert_no_ties(before.affine, before.shape[1:], d["image"].affine, d["image"].shape[1:], stem(n))
        records.append(as_record(d["image"], stem(n), out))
    return records, d, mt.Compose(load + applied)


def generate(out, version):
    import monai_select

    monai = monai_select.import_monai(version)
    import torch
    from monai import transforms as mt
    from monai.data import MetaTensor

    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    os.makedirs(out, exist_ok=True)
    files = write_volumes(out)
    manifest = {"monai": monai.__version__, "torch": torch.__version__, "volumes": {}, "transforms": {},
                "pipelines": {}}

    for volume, file in files.items():
        d = mt.EnsureChannelFirstd(keys="image")(mt.LoadImaged(keys="image")({"image": os.path.join(out, file)}))
        manifest["volumes"][volume] = {"nifti": file, **as_record(d["image"], volume, out)}

    for name, (volume, steps) in TRANSFORMS.items():
        records, _, _ = run_steps(files, volume, steps, out, lambda n, name=name: name)
        manifest["transforms"][name] = {"volume": volume, "steps": steps, "output": records[-1]}

    for name, (volume, steps) in PIPELINES.items():
        records, d, compose = run_steps(files, volume, steps, out, lambda n, name=name: f"{name}_step{n}")
        image = d["image"].as_tensor()
        # a MetaTensor, as a network's output on a MetaTensor input is (Invertd skips plain tensors)
        d["pred"] = MetaTensor(torch.cat([image, image * image]))
        spacing_at = [n for n, (s, _) in enumerate(step_items(steps)) if s == "spacing"]
        inverse = {}
        for mode, nearest in (("bilinear", False), ("nearest", True)):
            inverted = mt.Invertd(keys="pred", transform=compose, orig_keys="image", nearest_interp=nearest)(dict(d))
            inverse[mode] = as_record(inverted["pred"], f"{name}_inverse_{mode}", out)
            if inverse[mode]["shape"][1:] != manifest["volumes"][volume]["shape"][1:]:
                raise RuntimeError(f"{name}: Invertd did not map the prediction back onto the input grid")
        for n in spacing_at:  # Invertd's nearest resamples the spacing output back onto the grid before it
            before = records[n - 1] if n else manifest["volumes"][volume]
            assert_no_ties(records[n]["affine"], records[n]["shape"][1:], before["affine"], before["shape"][1:],
                           name + " inverse")
        with open(os.path.join(out, f"{name}_pipeline.json"), "w") as f:
            json.dump(steps, f, indent=2)
            f.write("\n")
        manifest["pipelines"][name] = {"volume": volume, "pipeline_file": f"{name}_pipeline.json",
                                       "outputs": records, "inverse": inverse}

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return manifest


# ------------------------------------------------------------------------------------------- version comparison

def compare(reference_dir, other_dir):
    """Prints, per stored array, whether another MONAI release reproduces it (shape, affine, max |difference|)."""
    with open(os.path.join(reference_dir, "manifest.json")) as f:
        ref = json.load(f)
    with open(os.path.join(other_dir, "manifest.json")) as f:
        other = json.load(f)
    print(f"MONAI {ref['monai']} vs {other['monai']}:")
    differ = 0

    def check(label, a, b):
        nonlocal differ
        x, y = np.load(os.path.join(reference_dir, a["array"])), np.load(os.path.join(other_dir, b["array"]))
        if x.shape != y.shape:
            print(f"  {label}: shape {x.shape} vs {y.shape}")
            differ += 1
            return
        err = float(np.abs(x - y).max()) if x.size else 0.0
        aff = float(np.abs(np.asarray(a["affine"]) - np.asarray(b["affine"])).max())
        if err or aff:
            print(f"  {label}: max |data diff| {err:.3g}, max |affine diff| {aff:.3g}")
            differ += 1

    for name, t in ref["transforms"].items():
        check(name, t["output"], other["transforms"][name]["output"])
    for name, p in ref["pipelines"].items():
        for n, (a, b) in enumerate(zip(p["outputs"], other["pipelines"][name]["outputs"])):
            check(f"{name} step {n}", a, b)
        for mode in p["inverse"]:
            check(f"{name} inverse {mode}", p["inverse"][mode], other["pipelines"][name]["inverse"][mode])
    print(f"  {differ} of the stored outputs differ" if differ else "  identical outputs")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--version", default="1.5.0", help="MONAI release to run (see monai_select.py)")
    parser.add_argument("--compare", metavar="VERSION", help="also run VERSION and report how its outputs differ")
    args = parser.parse_args()
    if args.compare:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, __file__, "--out", tmp, "--version", args.compare], check=True)
            compare(args.out, tmp)
        return
    if os.path.isdir(args.out):  # drop stale outputs of earlier runs, nothing else
        for f in os.listdir(args.out):
            if f.endswith((".npy", ".nii.gz", ".json")):
                os.remove(os.path.join(args.out, f))
    generate(args.out, args.version)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {len(os.listdir(args.out))} files, {total / 1e6:.2f} MB, to {args.out}")


if __name__ == "__main__":
    main()
