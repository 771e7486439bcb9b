#!/usr/bin/python3
"""Independent end-to-end check of `swinfer segment` against MONAI's own whole-volume pipeline on real NIfTI files
(run by hand, not in CI).

For every case it builds a small MONAI 1.5.0 SwinUNETR (feature_size 12, in 1, out 3, depths 2,2,2,2, window 7,
"merging") with a seeded torch init and then re-draws every LayerNorm weight/bias, every bias and every
relative_position_bias_table (tools/check_against_monai.py's randomise(), so those paths matter), saves its
state_dict with torch.save (model.pt) plus config.json, and runs

  MONAI:   LoadImaged(image_only=True) + EnsureChannelFirstd + the case's Orientationd / Spacingd /
           ScaleIntensityRanged / NormalizeIntensityd / CropForegroundd (every other argument at MONAI's default)
           -> sliding_window_inference(roi, sw_batch_size, model, overlap, mode, sigma_scale, padding_mode, cval)
           -> softmax -> Invertd(nearest_interp=False) -> argmax
  swinfer: swinfer segment --model model.pt --config config.json --input <nifti> --output mask.nii.gz
           --logits L --probabilities P --report R (same settings, --precision fp32, --threads 2)

and compares
  (a) max|swinfer - MONAI| / max|MONAI|: cases without a spatial step compare MONAI's raw sliding-window logits
      with --logits directly; cases with a spatial step (orientation / spacing / crop_foreground) compare MONAI's
      inverted probabilities with --probabilities (the inverted logits are compared too, an extra column "inv-logit");
  (b) label agreement: fraction of input-grid voxels where swinfer's mask equals MONAI's argmax.
PASS when the ratio <= 1e-4 and the agreement >= 0.999; it also checks the window count (a network-call counter
around MONAI's predictor vs the report's "windows"), the output shapes and that the outputs keep the input's affine.
Exit status 1 on any FAIL/ERROR.

With --diagnose (default) a failing case is split: MONAI's preprocessed image is written as NIfTI (MONAI's affine) and
swinfer segment is rerun on it with no preprocessing, and its raw logits are compared with MONAI's raw sliding-window
logits: agreement there puts the discrepancy in preprocessing or inversion, disagreement in the sliding window or the
network (then `swinfer forward` on one window narrows it further).

Material (none of it used by the repository's tests), converted into <workdir>/inputs:
  - nibabel test data (/usr/lib/python3/dist-packages/nibabel/tests/data): example4d.nii.gz (oblique 4-D int16: a box
    of the first volume; a box of the second, written big-endian int16 with scl_slope 0.37 and qform only),
    reoriented_anat_moved.nii (big-endian float32, as is), phantom_EPI_asc_CLEAR_2_1.PAR/REC (Philips PAR/REC,
    oblique, first dynamic), example4d+orig.HEAD/BRIK.gz (AFNI, first volume, qform only), tiny.mnc (MINC-1, voxel
    axes i->z, k->x);
  - Debian insighttoolkit5-examples: KmeansTest_T1UCharRaw.nii.gz (T1, int16, axes permuted, qform 2 / sform 1);
  - Debian mricron-data: ch2.nii.gz (sform-only uint8 template), inia19-t1-brain.nii.gz (float32, sform only;
    written here as NIfTI-2).
The two Debian packages are unpacked, not installed: --fetch-debs runs `apt-get download` + `dpkg -x` into --debs
(default /tmp/segcheck_debs/x); cases whose source is missing are skipped with a note.

  /usr/bin/python3 tools/check_segment_against_monai.py --fetch-debs                  # all cases
  /usr/bin/python3 tools/check_segment_against_monai.py --cases full_pipeline --workdir /tmp/segchk  # keeps files

Needs /usr/bin/python3 with torch, numpy, nibabel and MONAI 1.5.0. Windows are at least 64 voxels on one axis: MONAI's
SwinUNETR cannot run a 32^3 window (InstanceNorm on a 1x1x1 bottleneck raises). Each MONAI run stays under a minute on
2 threads; the whole check takes a few minutes.

Notes (first run 2026-11-21: Debian torch 1.13.1, MONAI 1.5.0, nibabel 5; binary built from the tree of that day):
  - all 11 cases x their backend/layout runs (19 rows) PASS: ratio 4.6e-07 .. 1.2e-06, label agreement 1.00000,
    window counts and network grids equal to MONAI's. Negative controls (swinfer given Spacing z 4.1 instead of 4.0,
    or sigma_scale 0.13 instead of 0.125) FAIL with ratios 0.62 / 0.056, and --diagnose put them in preprocessing and
    in the sliding window respectively.
  - MONAI's Invertd silently skips a plain-tensor prediction (it looks for "<orig_key>_transforms" and only warns),
    so the predictions are wrapped in MetaTensor before Invertd; the script checks Invertd lands on the input grid.
  - Timings are wall clock on a shared 2-core machine (load 4-6 during the first run), so they are noisy; Debian's
    torch uses generic BLAS (torch.__config__: BLAS_INFO=generic), which makes MONAI's side slow.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "goldens"))
sys.path.insert(0, HERE)

REL_TOL = 1e-4
MIN_AGREEMENT = 0.999
NIBABEL_DATA = "/usr/lib/python3/dist-packages/nibabel/tests/data"
ITK_DATA = "usr/share/doc/insighttoolkit5-examples/examples/Data"
MRICRON_DATA = "usr/share/mricron/templates"
DEFAULT_BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "apps", "swinfer", "swinfer")
SPATIAL_STEPS = ("orientation", "spacing", "crop_foreground")

# ---------------------------------------------------------------------------------------------------------------
# inputs: real scans converted to small NIfTI files


def _nib():
    import nibabel as nib

    return nib


def _save(img, path, qform_code=None, sform_code=None):
    """Writes `img`; given codes are set on the header and the image rebuilt from that header alone (affine None),
    so nibabel's save does not rewrite them (it resets the sform when the affine and the header's best affine
    differ, as a quaternion round trip of an oblique affine does)."""
    nib = _nib()
    want = np.array(img.affine)
    if qform_code is not None or sform_code is not None:
        hdr = img.header.copy()
        q = int(hdr["qform_code"]) if qform_code is None else int(qform_code)
        s_ = int(hdr["sform_code"]) if sform_code is None else int(sform_code)
        hdr.set_qform(img.affine if q else None, code=q)
        hdr.set_sform(img.affine if s_ else None, code=s_)
        img = type(img)(np.asanyarray(img.dataobj), None, hdr)
    nib.save(img, path)
    back = nib.load(path)
    assert np.allclose(back.affine, want, atol=1e-3), path  # a quaternion round trip can move ~1e-4
    if qform_code is not None:
        assert int(back.header["qform_code"]) == int(qform_code), path
    if sform_code is not None:
        assert int(back.header["sform_code"]) == int(sform_code), path
    return path


def in_kmeans(out_dir, debs, box):
    """ITK's KmeansTest_T1UCharRaw (int16, 2x2x3 mm, axes permuted: LSA, qform 2 / sform 1), cropped to `box`."""
    nib = _nib()
    src = os.path.join(debs, ITK_DATA, "KmeansTest_T1UCharRaw.nii.gz")
    img = nib.load(src)
    sub = img.slicer[tuple(slice(*b) for b in box)]
    name = "kmeans_" + "_".join(f"{a}-{b}" for a, b, *_ in box) + ".nii.gz"
    box_txt = ",".join(f"{a}:{b}" for a, b, *_ in box)
    out = nib.Nifti1Image(np.asarray(sub.dataobj), sub.affine, sub.header)
    if sub.shape == img.shape:  # the whole scan: keep its own header (qform 2 differs from sform 1 by ~5e-4)
        out = nib.Nifti1Image(np.asarray(img.dataobj), img.affine, img.header)
        return _save(out, os.path.join(out_dir, name)), "itk5-examples:KmeansTest_T1UCharRaw.nii.gz"
    return (_save(out, os.path.join(out_dir, name), qform_code=2, sform_code=1),
            f"itk5-examples:KmeansTest_T1UCharRaw.nii.gz[{box_txt}]")


def in_ch2(out_dir, debs):
    """MRIcron's ch2 (uint8, 1 mm, sform only), every third voxel of a 144x120x192 box: 48x40x64 at 3 mm."""
    nib = _nib()
    src = os.path.join(debs, MRICRON_DATA, "ch2.nii.gz")
    sub = nib.load(src).slicer[18:162:3, 50:170:3, 0:192:3]
    img = nib.Nifti1Image(np.asarray(sub.dataobj), sub.affine, sub.header)
    return (_save(img, os.path.join(out_dir, "ch2_3mm_sform_only.nii.gz"), qform_code=0, sform_code=4),
            "mricron-data:ch2.nii.gz[18:162:3,50:170:3,::3]")


def in_example4d(out_dir, _debs):
    """nibabel's example4d.nii.gz (oblique, int16): first volume, an 80x48x24 box."""
    nib = _nib()
    src = os.path.join(NIBABEL_DATA, "example4d.nii.gz")
    img = nib.load(src)
    vol = img.slicer[24:104, 20:68, :, 0]
    out = nib.Nifti1Image(np.asarray(vol.dataobj), vol.affine, vol.header)
    return _save(out, os.path.join(out_dir, "example4d_vol0_crop.nii.gz")), "nibabel:example4d.nii.gz[24:104,20:68,:,0]"


def in_reoriented(_out_dir, _debs):
    """nibabel's reoriented_anat_moved.nii as it is: 21x26x22 big-endian float32, 4 mm."""
    return os.path.join(NIBABEL_DATA, "reoriented_anat_moved.nii"), "nibabel:reoriented_anat_moved.nii (as is)"


def in_parrec(out_dir, _debs):
    """Philips PAR/REC phantom (64x64x9, 3.75x3.75x8 mm, oblique), first dynamic as float32 NIfTI."""
    nib = _nib()
    src = os.path.join(NIBABEL_DATA, "phantom_EPI_asc_CLEAR_2_1.PAR")
    img = nib.load(src)
    data = np.asarray(img.dataobj)[..., 0].astype(np.float32)
    out = nib.Nifti1Image(data, img.affine)
    return (_save(out, os.path.join(out_dir, "phantom_epi_dyn0.nii.gz"), qform_code=1, sform_code=1),
            "nibabel:phantom_EPI_asc_CLEAR_2_1.PAR[...,0]")


def in_example4d_be_scl(out_dir, _debs):
    """nibabel's example4d.nii.gz, second volume, a 48x48x24 box (34% zero background), stored big-endian int16 with
    scl_slope 0.37 patched into the header (nibabel resets scl on save)."""
    nib = _nib()
    src = os.path.join(NIBABEL_DATA, "example4d.nii.gz")
    vol = nib.load(src).slicer[20:68, 0:48, :, 1]
    raw = np.asarray(vol.dataobj).astype(np.int16)
    hdr = nib.Nifti1Header(endianness=">")
    hdr.set_data_dtype(np.int16)
    path = _save(nib.Nifti1Image(raw, vol.affine, hdr), os.path.join(out_dir, "example4d_vol1_be_scl.nii"),
                 qform_code=1, sform_code=0)
    with open(path, "r+b") as f:  # scl_slope, scl_inter: float32 at bytes 112 and 116 of the NIfTI-1 header
        f.seek(112)
        f.write(struct.pack(">ff", 0.37, 0.0))
    back = nib.load(path)
    slope, inter = float(back.dataobj.slope), float(back.dataobj.inter)  # nibabel moves scl into the proxy
    assert back.header.endianness == ">" and abs(slope - 0.37) < 1e-6 and not inter, (slope, inter)
    assert np.allclose(np.asarray(back.dataobj), raw * 0.37, rtol=1e-6)
    assert (raw == 0).mean() > 0.2  # a zero background: NormalizeIntensity(nonzero) differs from the plain one
    return path, "nibabel:example4d.nii.gz[20:68,0:48,:,1] BE scl0.37"


def in_afni(out_dir, _debs):
    """AFNI example4d+orig (33x41x25 int16, 3 mm), first volume as NIfTI-1 int16, qform only."""
    nib = _nib()
    src = os.path.join(NIBABEL_DATA, "example4d+orig.HEAD")
    img = nib.load(src)
    raw = np.asarray(img.dataobj)[..., 0].astype(np.int16)
    path = _save(nib.Nifti1Image(raw, img.affine), os.path.join(out_dir, "afni_example4d_vol0.nii.gz"),
                 qform_code=1, sform_code=0)
    return path, "nibabel:example4d+orig.HEAD[...,0] (AFNI)"


def in_inia19_nifti2(out_dir, debs):
    """MRIcron's inia19-t1-brain (float32, 0.5 mm, sform only) written as NIfTI-2 (sform only)."""
    nib = _nib()
    src = os.path.join(debs, MRICRON_DATA, "inia19-t1-brain.nii.gz")
    img = nib.load(src)
    out = nib.Nifti2Image(np.asarray(img.dataobj).astype(np.float32), img.affine)
    path = _save(out, os.path.join(out_dir, "inia19_t1_brain_nifti2.nii.gz"), qform_code=0, sform_code=1)
    assert int(nib.load(path).header["sizeof_hdr"]) == 540
    return path, "mricron-data:inia19-t1-brain.nii.gz"


def in_minc(out_dir, _debs):
    """nibabel's tiny.mnc (MINC-1, 10x20x20, 2 mm; voxel axes i->z, j->y, k->x) as float32 NIfTI."""
    nib = _nib()
    src = os.path.join(NIBABEL_DATA, "tiny.mnc")
    img = nib.load(src)
    out = nib.Nifti1Image(np.asarray(img.dataobj).astype(np.float32), img.affine)
    return _save(out, os.path.join(out_dir, "tiny_mnc.nii.gz"), qform_code=1, sform_code=1), "nibabel:tiny.mnc (MINC-1)"


# ---------------------------------------------------------------------------------------------------------------
# cases. steps use swinfer's pipeline vocabulary (and MONAI's order); "runs" lists (backend, layout).

SIR_255 = {"a_min": 0.0, "a_max": 255.0, "b_min": 0.0, "b_max": 1.0, "clip": True}

CASES = [
    dict(name="constant_o25", input=lambda o, d: in_kmeans(o, d, [(16, 96), (40, 80), (10, 42)]), steps=[],
         roi=[64, 32, 32], overlap=[0.25], sw_batch=1, blend="constant", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("onednn", "ndhwc")], seed=11),
    dict(name="gaussian_o50", input=in_ch2, steps=[("scale_intensity_range", SIR_255)],
         roi=[32, 32, 64], overlap=[0.5], sw_batch=2, blend="gaussian", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("cpu", "ncdhw")], seed=12),
    dict(name="per_axis", input=in_example4d, steps=[("normalize_intensity", {"nonzero": False})],
         roi=[64, 32, 32], overlap=[0.25, 0.5, 0.0], sw_batch=2, blend="gaussian", sigma=[0.1, 0.125, 0.2],
         padding="constant", cval=0.0, runs=[("cpu", "ndhwc"), ("onednn", "ncdhw")], seed=13),
    dict(name="roi_gt_img_cval", input=in_reoriented,
         steps=[("scale_intensity_range", {"a_min": 0.0, "a_max": 20000.0, "b_min": 0.0, "b_max": 1.0, "clip": False})],
         roi=[64, 32, 32], overlap=[0.25], sw_batch=1, blend="constant", sigma=[0.125], padding="constant", cval=0.3,
         runs=[("cpu", "ndhwc"), ("onednn", "ndhwc")], seed=14),
    dict(name="roi_gt_img_replicate", input=in_parrec, steps=[("normalize_intensity", {"nonzero": False})],
         roi=[64, 32, 32], overlap=[0.25], sw_batch=4, blend="gaussian", sigma=[0.125], padding="replicate", cval=0.0,
         runs=[("cpu", "ndhwc")], seed=15),
    dict(name="sw_batch3_7win", input=lambda o, d: in_kmeans(o, d, [(0, 128), (48, 80), (0, 62)]),
         steps=[("scale_intensity_range", SIR_255)],
         roi=[32, 32, 64], overlap=[0.5], sw_batch=3, blend="constant", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("cpu", "ncdhw")], seed=16),
    dict(name="full_pipeline", input=lambda o, d: in_kmeans(o, d, [(0, 128), (0, 128), (0, 62)]),
         steps=[("orientation", "RAS"), ("spacing", [4.0, 4.5, 4.0]), ("scale_intensity_range", SIR_255),
                ("crop_foreground", {"margin": 4})],
         roi=[64, 32, 32], overlap=[0.25], sw_batch=2, blend="gaussian", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("onednn", "ndhwc")], seed=17),
    dict(name="normalize_nonzero", input=in_example4d_be_scl, steps=[("normalize_intensity", {"nonzero": True})],
         roi=[32, 32, 64], overlap=[0.5], sw_batch=2, blend="constant", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("onednn", "ndhwc")], seed=18),
    dict(name="afni_overlap75", input=in_afni,
         steps=[("scale_intensity_range", {"a_min": 0.0, "a_max": 8000.0, "b_min": 0.0, "b_max": 1.0, "clip": False})],
         roi=[32, 32, 64], overlap=[0.75], sw_batch=4, blend="gaussian", sigma=[0.25], padding="constant", cval=0.0,
         runs=[("cpu", "ndhwc"), ("onednn", "ncdhw")], seed=21),
    dict(name="nifti2_lps_spacing", input=in_inia19_nifti2, pipeline_json=True,
         steps=[("orientation", "LPS"), ("spacing", [2.5, 2.5, 2.5]),
                ("scale_intensity_range", {"a_min": 0.0, "a_max": 400.0, "b_min": -1.0, "b_max": 1.0, "clip": True})],
         roi=[32, 32, 64], overlap=[0.25], sw_batch=2, blend="gaussian", sigma=[0.125], padding="constant", cval=0.0,
         runs=[("cpu", "ncdhw")], seed=19),
    dict(name="minc_ras_replicate", input=in_minc,
         steps=[("orientation", "RAS"), ("normalize_intensity", {"nonzero": False})],
         roi=[64, 32, 32], overlap=[0.25], sw_batch=1, blend="constant", sigma=[0.125], padding="replicate", cval=0.0,
         runs=[("cpu", "ndhwc")], seed=20),
]


def is_spatial(case) -> bool:
    return any(s[0] in SPATIAL_STEPS for s in case["steps"])


def settings_text(case) -> str:
    def seq(v):
        return ",".join(f"{x:g}" for x in v)

    parts = [f"roi {seq(case['roi'])}", f"ov {seq(case['overlap'])}", f"swb {case['sw_batch']}", case["blend"]]
    if case["blend"] == "gaussian":
        parts.append(f"sig {seq(case['sigma'])}")
    cval = f" cval {case['cval']:g}" if case["padding"] == "constant" and case["cval"] else ""
    parts.append(case["padding"] + cval)
    for name, args in case["steps"]:
        if name == "orientation":
            parts.append(f"Orient {args}")
        elif name == "spacing":
            parts.append(f"Spacing {seq(args)}")
        elif name == "scale_intensity_range":
            parts.append(f"SIR {args['a_min']:g}..{args['a_max']:g}->{args['b_min']:g}..{args['b_max']:g}"
                         + (" clip" if args.get("clip") else ""))
        elif name == "normalize_intensity":
            parts.append("Norm" + (" nonzero" if args.get("nonzero") else ""))
        elif name == "crop_foreground":
            parts.append(f"CropFg m{args['margin']}")
    if case.get("pipeline_json"):
        parts.append("(--pipeline)")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# MONAI half


def build_model(seed: int):
    import monai
    import swin_common as sc
    import torch
    from check_against_monai import randomise

    cfg = sc.make_config(in_channels=1, out_channels=3, feature_size=12)
    torch.manual_seed(seed)
    model = sc.build_model(monai, cfg, None)
    randomise(model, torch.Generator().manual_seed(seed + 1))
    return model.eval(), cfg


def monai_transforms(case):
    from monai.transforms import (CropForegroundd, EnsureChannelFirstd, LoadImaged, NormalizeIntensityd,
                                  Orientationd, ScaleIntensityRanged, Spacingd)

    k = "image"
    ts = [LoadImaged(keys=k, image_only=True), EnsureChannelFirstd(keys=k)]
    for name, args in case["steps"]:
        if name == "orientation":
            ts.append(Orientationd(keys=k, axcodes=args))
        elif name == "spacing":
            ts.append(Spacingd(keys=k, pixdim=args))
        elif name == "scale_intensity_range":
            ts.append(ScaleIntensityRanged(keys=k, **args))
        elif name == "normalize_intensity":
            ts.append(NormalizeIntensityd(keys=k, **args))
        elif name == "crop_foreground":
            ts.append(CropForegroundd(keys=k, source_key=k, **args))
        else:
            raise ValueError(name)
    return ts


def run_monai(case, model, path):
    """MONAI's pipeline; returns arrays (C first, spatial as nibabel) and timings."""
    import torch
    from monai.inferers import sliding_window_inference
    from monai.data import MetaTensor
    from monai.transforms import Compose, Invertd

    torch.set_grad_enabled(False)
    calls = {"windows": 0, "calls": 0}

    def predictor(x):
        calls["windows"] += int(x.shape[0])
        calls["calls"] += 1
        return model(x)

    one = lambda v: v[0] if len(v) == 1 else v  # noqa: E731
    t0 = time.perf_counter()
    pre = Compose(monai_transforms(case))
    data = pre({"image": path})
    img = data["image"]
    t1 = time.perf_counter()
    x = img.as_tensor()[None].float()
    logits = sliding_window_inference(
        x, roi_size=case["roi"], sw_batch_size=case["sw_batch"], predictor=predictor, overlap=one(case["overlap"]),
        mode=case["blend"], sigma_scale=one(case["sigma"]), padding_mode=case["padding"], cval=case["cval"])[0]
    t2 = time.perf_counter()
    prob = torch.softmax(logits, dim=0)
    inv = Invertd(keys=["pred", "logits"], transform=pre, orig_keys=["image", "image"], nearest_interp=False,
                  to_tensor=True)
    # Invertd skips a plain tensor (no "<key>_transforms" trace): the predictions go in as MetaTensors, as
    # sliding_window_inference on a batched MetaTensor + decollate_batch would hand them over; Invertd then takes
    # the applied operations and meta data from d["image"].
    out = inv({"image": img, "pred": MetaTensor(prob.clone()), "logits": MetaTensor(logits.clone())})
    inv_prob = torch.as_tensor(out["pred"]).float().numpy()
    inv_logits = torch.as_tensor(out["logits"]).float().numpy()
    shape = tuple(_nib().load(path).shape[:3])
    if inv_prob.shape[1:] != shape or inv_logits.shape[1:] != shape:  # Invertd must land on the input grid
        raise RuntimeError(f"MONAI's Invertd gave {inv_prob.shape[1:]}, not the input grid {shape}")
    label = np.argmax(inv_prob, axis=0).astype(np.uint8)
    t3 = time.perf_counter()
    return {
        "pre_image": x[0].numpy(), "pre_affine": img.affine.numpy().astype(np.float64),
        "logits": logits.numpy(), "inv_prob": inv_prob, "inv_logits": inv_logits, "label": label,
        "windows": calls["windows"], "calls": calls["calls"],
        "seconds": {"preprocess": t1 - t0, "sliding_window": t2 - t1, "post": t3 - t2, "total": t3 - t0},
    }


# ---------------------------------------------------------------------------------------------------------------
# swinfer half


def swinfer_command(binary, case, backend, layout, model, cfg, inp, odir, threads, steps=None, use_json=None):
    steps = case["steps"] if steps is None else steps
    use_json = case.get("pipeline_json", False) if use_json is None else use_json
    seq = lambda v: ",".join(f"{x:g}" for x in v)  # noqa: E731
    cmd = [binary, "segment", "--model", model, "--config", cfg, "--input", inp,
           "--output", os.path.join(odir, "mask.nii.gz"), "--logits", os.path.join(odir, "logits.nii.gz"),
           "--probabilities", os.path.join(odir, "prob.nii.gz"), "--report", os.path.join(odir, "report.json"),
           "--roi", seq(case["roi"]), "--overlap", seq(case["overlap"]), "--sw-batch", str(case["sw_batch"]),
           "--blend", case["blend"], "--sigma-scale", seq(case["sigma"]), "--padding-mode", case["padding"],
           "--cval", f"{case['cval']:g}", "--backend", backend, "--layout", layout, "--precision", "fp32",
           "--threads", str(threads), "-q"]
    if use_json and steps:
        os.makedirs(odir, exist_ok=True)
        pj = os.path.join(odir, "pipeline.json")
        with open(pj, "w") as f:
            json.dump([{n: a} for n, a in steps], f)
        cmd += ["--pipeline", pj]
        return cmd
    for name, args in steps:
        if name == "orientation":
            cmd += ["--orientation", args]
        elif name == "spacing":
            cmd += ["--spacing", seq(args)]
        elif name == "scale_intensity_range":
            cmd += ["--intensity-range", seq([args["a_min"], args["a_max"], args["b_min"], args["b_max"]])]
            if args.get("clip"):
                cmd.append("--clip")
        elif name == "normalize_intensity":
            cmd.append("--normalize")
            if args.get("nonzero"):
                cmd.append("--nonzero")
            if args.get("channel_wise"):
                cmd.append("--channel-wise")
        elif name == "crop_foreground":
            cmd += ["--crop-foreground", str(args["margin"])]
    return cmd


def run_swinfer(cmd, odir, timeout):
    os.makedirs(odir, exist_ok=True)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip()[-600:])
    nib = _nib()
    res = {"seconds": secs}
    m = nib.load(os.path.join(odir, "mask.nii.gz"))
    res["mask"] = np.asarray(m.dataobj)
    res["mask_affine"] = m.affine
    for k, f in (("logits", "logits.nii.gz"), ("prob", "prob.nii.gz")):
        im = nib.load(os.path.join(odir, f))
        a = np.asarray(im.dataobj, dtype=np.float32)
        res[k] = np.moveaxis(a, -1, 0) if a.ndim == 4 else a[None]
        res[k + "_affine"] = im.affine
    with open(os.path.join(odir, "report.json")) as f:
        res["report"] = json.load(f)
    return res


def rel_delta(ours, ref):
    if ours.shape != ref.shape:
        return None, float(np.abs(ref).max()), f"shape {ours.shape} != {ref.shape}"
    if not np.isfinite(ours).all():
        return float("inf"), float(np.abs(ref).max()), "non-finite values"
    return float(np.abs(ours.astype(np.float64) - ref).max()), float(np.abs(ref).max()), ""


# ---------------------------------------------------------------------------------------------------------------


def diagnose(binary, case, mon, backend, layout, model_pt, cfg_json, cdir, threads, timeout):
    """MONAI's preprocessed image through swinfer with no preprocessing: raw logits vs MONAI's raw logits."""
    nib = _nib()
    ddir = os.path.join(cdir, f"diag_{backend}_{layout}")
    os.makedirs(ddir, exist_ok=True)
    pre_path = os.path.join(ddir, "monai_preprocessed.nii.gz")
    nib.save(nib.Nifti1Image(mon["pre_image"][0].astype(np.float32), mon["pre_affine"]), pre_path)
    cmd = swinfer_command(binary, case, backend, layout, model_pt, cfg_json, pre_path, ddir, threads, steps=[])
    try:
        r = run_swinfer(cmd, ddir, timeout)
    except Exception as e:  # noqa: BLE001
        return f"diagnose: swinfer on MONAI's preprocessed image failed: {e}"
    d, m, why = rel_delta(r["logits"], mon["logits"])
    grid = r["report"]["network_grid"]["shape"]
    if d is None:
        return f"diagnose: raw logits on MONAI-preprocessed image: {why}"
    lab = float((np.argmax(r["logits"], 0) == np.argmax(mon["logits"], 0)).mean())
    verdict = "sliding window / network agree -> discrepancy in preprocessing or inversion" \
        if d <= REL_TOL * m else "sliding window or network disagree"
    return (f"diagnose: swinfer(no preprocessing) on MONAI's preprocessed {list(mon['pre_image'].shape[1:])} image "
            f"(swinfer grid {grid}): raw-logit ratio {d / m:.2e}, label agreement {lab:.5f}: {verdict}")


def fetch_debs(dest):
    """Unpacks (does not install) the two Debian data packages into `dest`."""
    if os.path.isdir(os.path.join(dest, ITK_DATA)) and os.path.isdir(os.path.join(dest, MRICRON_DATA)):
        return
    tmp = tempfile.mkdtemp(prefix="segchk_debs_")
    try:
        subprocess.run(["apt-get", "download", "insighttoolkit5-examples", "mricron-data"], cwd=tmp, check=True)
        for deb in sorted(os.listdir(tmp)):
            if deb.endswith(".deb"):
                subprocess.run(["dpkg", "-x", os.path.join(tmp, deb), dest], check=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=DEFAULT_BINARY)
    ap.add_argument("--cases", nargs="+", help="run only these case names")
    ap.add_argument("--debs", default="/tmp/segcheck_debs/x", help="where the Debian data packages are unpacked")
    ap.add_argument("--fetch-debs", action="store_true",
                    help="apt-get download insighttoolkit5-examples and mricron-data and dpkg -x them into --debs")
    ap.add_argument("--workdir", help="keep inputs and outputs here (default: a temporary folder, removed)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900, help="seconds per swinfer run")
    ap.add_argument("--no-diagnose", action="store_true", help="skip the preprocessing/sliding-window split on FAIL")
    a = ap.parse_args()

    if not os.path.exists(a.binary):
        ap.error(f"no such binary: {a.binary}")
    if a.fetch_debs:
        fetch_debs(a.debs)
    import monai
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(a.threads)
    assert monai.__version__ == "1.5.0", monai.__version__
    nib = _nib()

    work = a.workdir or tempfile.mkdtemp(prefix="swinfer_segchk_")
    os.makedirs(os.path.join(work, "inputs"), exist_ok=True)
    cases = [c for c in CASES if not a.cases or c["name"] in a.cases]
    rows, notes, failed = [], [], False
    try:
        for case in cases:
            cdir = os.path.join(work, case["name"])
            os.makedirs(cdir, exist_ok=True)
            try:
                path, src = case["input"](os.path.join(work, "inputs"), a.debs)
            except (FileNotFoundError, OSError) as e:
                notes.append(f"{case['name']}: skipped, source missing ({e})")
                print(notes[-1], flush=True)
                continue
            im = nib.load(path)
            image = {"shape": "x".join(map(str, im.shape)),
                     "spacing": "x".join(f"{z:.3g}" for z in im.header.get_zooms()[:3]),
                     "file": os.path.basename(path), "src": src,
                     "nifti": "N2" if int(im.header["sizeof_hdr"]) == 540 else "N1",
                     "endian": im.header.endianness, "dtype": im.get_data_dtype().newbyteorder("=").name}
            model, cfg = build_model(case["seed"])
            model_pt = os.path.join(cdir, "model.pt")
            torch.save(model.state_dict(), model_pt)
            cfg_json = os.path.join(cdir, "config.json")
            with open(cfg_json, "w") as f:
                json.dump(cfg, f, indent=1)
            mon = run_monai(case, model, path)
            spatial = is_spatial(case)
            ref = mon["inv_prob"] if spatial else mon["logits"]
            print(f"{case['name']}: {image['file']} {image['shape']} -> MONAI grid {list(mon['logits'].shape[1:])}, "
                  f"{mon['windows']} windows in {mon['calls']} calls, MONAI {mon['seconds']['total']:.1f}s "
                  f"(sliding window {mon['seconds']['sliding_window']:.1f}s)", flush=True)
            for backend, layout in case["runs"]:
                odir = os.path.join(cdir, f"{backend}_{layout}")
                row = {"case": case["name"], "image": image, "settings": settings_text(case), "backend": backend,
                       "layout": layout, "monai_s": mon["seconds"]["total"],
                       "monai_sw_s": mon["seconds"]["sliding_window"],
                       "windows": mon["windows"], "spatial": spatial}
                cmd = swinfer_command(a.binary, case, backend, layout, model_pt, cfg_json, path, odir, a.threads)
                try:
                    r = run_swinfer(cmd, odir, a.timeout)
                except Exception as e:  # noqa: BLE001
                    row.update(status="ERROR", detail=str(e))
                    rows.append(row)
                    failed = True
                    print(f"   {backend}/{layout}: ERROR {e}", flush=True)
                    continue
                row["swinfer_s"] = r["seconds"]
                row["swinfer_inf_s"] = r["report"]["timings_s"]["inference"]
                problems = []
                ours = r["prob"] if spatial else r["logits"]
                d, m, why = rel_delta(ours, ref)
                row.update(delta=d, ref=m)
                if why:
                    problems.append(why)
                if spatial:
                    di, mi, whyi = rel_delta(r["logits"], mon["inv_logits"])
                    row["inv_logit_ratio"] = None if di is None else di / mi
                    if whyi:
                        problems.append("inverted logits: " + whyi)
                if r["mask"].shape == mon["label"].shape:
                    row["agree"] = float((r["mask"] == mon["label"]).mean())
                else:
                    problems.append(f"mask shape {r['mask'].shape} != {mon['label'].shape}")
                    row["agree"] = 0.0
                for k in ("mask_affine", "logits_affine", "prob_affine"):
                    if not np.allclose(r[k], im.affine, atol=1e-4):
                        problems.append(f"{k} differs from the input affine")
                sw_windows = r["report"]["sliding_window"]["windows"]
                if sw_windows != mon["windows"]:
                    problems.append(f"windows {sw_windows} != MONAI {mon['windows']}")
                grid = list(r["report"]["network_grid"]["shape"])
                if grid != list(mon["logits"].shape[1:]):
                    problems.append(f"network grid {grid} != MONAI {list(mon['logits'].shape[1:])}")
                ok = (not problems and d is not None and d <= REL_TOL * m and row["agree"] >= MIN_AGREEMENT)
                row["status"] = "PASS" if ok else "FAIL"
                row["detail"] = "; ".join(problems)
                if not ok and not a.no_diagnose:
                    row["diagnosis"] = diagnose(a.binary, case, mon, backend, layout, model_pt, cfg_json, cdir,
                                                a.threads, a.timeout)
                failed |= not ok
                rows.append(row)
                print(f"   {backend}/{layout}: {row['status']} ratio {d / m if d is not None else float('nan'):.2e} "
                      f"agree {row['agree']:.5f} swinfer {r['seconds']:.1f}s {row['detail']}", flush=True)
                if "diagnosis" in row:
                    print("      " + row["diagnosis"], flush=True)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print_table(rows)
    for n in notes:
        print(n)
    return 1 if failed else 0


def print_table(rows):
    if not rows:
        return
    print()
    head = ["case", "image (shape, spacing, source)", "settings", "be/layout", "compared", "max|d|", "max|ref|",
            "ratio", "inv-logit", "agree", "MONAI s (sw)", "swinfer s (inf)", "result"]
    lines = []
    for r in rows:
        im = r["image"]
        img = f"{im['shape']} @{im['spacing']}mm {im['nifti']} {im['dtype']}" \
              f"{' BE' if im['endian'] == '>' else ''} {im['src']}"
        d, m = r.get("delta"), r.get("ref")
        ratio = f"{d / m:.2e}" if d is not None and m else "-"
        inv = r.get("inv_logit_ratio")
        lines.append([r["case"], img, r["settings"], f"{r['backend']}/{r['layout']}",
                      "inv.prob" if r["spatial"] else "logits", "-" if d is None else f"{d:.3g}",
                      "-" if m is None else f"{m:.4g}", ratio, "-" if inv is None else f"{inv:.2e}",
                      f"{r['agree']:.5f}" if "agree" in r else "-", f"{r['monai_s']:.1f} ({r['monai_sw_s']:.1f})",
                      f"{r['swinfer_s']:.1f} ({r['swinfer_inf_s']:.1f})" if "swinfer_s" in r else "-", r["status"]])
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(head)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    print(fmt.format(*head))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for l in lines:
        print(fmt.format(*l))
    for r in rows:
        if r.get("detail") or r.get("diagnosis"):
            print(f"{r['case']} {r['backend']}/{r['layout']}: {r.get('detail', '')} {r.get('diagnosis', '')}")
    n = sum(r["status"] == "PASS" for r in rows)
    print(f"\n{n} passed, {len(rows) - n} failed   (PASS: ratio <= {REL_TOL:g} and agreement >= {MIN_AGREEMENT})")
    print("MONAI s: LoadImage .. Invertd + argmax in-process, torch.set_num_threads(--threads), (sw) the "
          "sliding_window_inference part;\nswinfer s: wall time of the whole `swinfer segment` process (load model, "
          "read, preprocess, sliding window, invert, write), (inf) its report's inference time")


if __name__ == "__main__":
    sys.exit(main())
