#!/usr/bin/env python3
"""Writes tests/data/goldens/int8/: the int8 scheme of docs/int8.md as fake quantization in PyTorch on MONAI's
SwinUNETR, independent of swinfer's code.

Model and input are the pt_checkpoint golden's (MONAI 1.5.0 default init, float16 weights; the formula input).
Calibration here is its own: the max |x| of every Conv3d's input over that input (method "max"), written as a
swinfer calibration file (with the CRC-32 of the weights as swinfer computes it) so swinfer runs the same scales.
Every Conv3d then runs on fake-quantized operands: the input quantize-dequantized per tensor
(round half to even of x * (1 / scale), clamped to [-128, 127]), the weight per output channel (scale
max|w| / 127, clamped to [-127, 127]).

Two goldens: logits_all.npy with every Conv3d in int8, and logits.npy with only the SPOT_CHECK layers in int8 (the
calibration file marks the others "float"). With every layer quantized, float32 differences of 1e-6 between any
two implementations move a few inputs across a rounding boundary, and each later quantized layer amplifies that
(measured: 2 % relative L2 between swinfer and this reference), so the whole-network golden is a statistical
check; the spot check keeps such flips isolated and is compared tightly. For it, three deliberately wrong variants
show that the C++ test can tell them apart: every scale 25 % too large, one weight scale per tensor instead of per
channel, and the uint8 zero point's contribution (128 x the weight sum) left uncompensated.

Run with the MONAI 1.5.0 environment the other goldens use:  python tools/goldens/make_int8_goldens.py
"""
from __future__ import annotations

import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402
import swin_common as sc  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "goldens")


# The first convolution, one on the raw input, one deep in the decoder and the output head: in the test's spot check.
SPOT_CHECK = ("swinViT.patch_embed.proj", "encoder1.layer.conv1.conv", "decoder2.conv_block.conv2.conv", "out.conv.conv")


def weights_crc32(state_dict) -> str:
    crc = 0
    for key, value in state_dict.items():
        if not value.is_floating_point():
            continue
        crc = zlib.crc32(key.encode(), crc)
        crc = zlib.crc32(np.asarray(value.shape, dtype="<i8").tobytes(), crc)
        crc = zlib.crc32(value.float().numpy().astype("<f4").tobytes(), crc)
    return f"{crc:08x}"


def inverse(scale):
    """1 / scale rounded to float32, as a Python float holding that float32 exactly."""
    return float(np.float32(1.0) / np.float32(scale))


def fake_quantize_activation(torch, x, scale):
    return torch.clamp(torch.round(x * inverse(scale)), -128, 127) * np.float32(scale)


def fake_quantize_weight(torch, w, per_channel=True):
    if per_channel:
        scale = w.abs().amax(dim=(1, 2, 3, 4), keepdim=True) / 127
    else:
        scale = w.abs().amax() / 127 * torch.ones_like(w[:, :1, :1, :1, :1])
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.clamp(torch.round(w * (torch.ones_like(scale) / scale)), -127, 127)
    return q * scale


def main():
    from monai_select import import_monai

    monai = import_monai("1.5.0")
    torch = mg.setup_torch()
    case = os.path.join(ROOT, mg.PT_CASE)
    meta = json.load(open(os.path.join(case, "case.json")))
    cfg = meta["config"]
    shape = meta["input"]["shape"]
    loaded = torch.load(os.path.join(case, "model.pt"), map_location="cpu")["state_dict"]
    state = {k[len("module."):]: (v.float() if v.is_floating_point() else v) for k, v in loaded.items()}
    model = sc.build_model(monai, cfg, shape[2:])
    model.load_state_dict(state, strict=True)
    model.eval()
    x = torch.from_numpy(mg.input_array(shape))
    convs = {name: m for name, m in model.named_modules() if type(m) is torch.nn.Conv3d}

    # Calibration: max |input| of every Conv3d.
    seen = {}
    hooks = [m.register_forward_pre_hook(lambda m, a, n=name: seen.__setitem__(n, float(a[0].abs().max())))
             for name, m in convs.items()]
    float_logits = model(x)
    for h in hooks:
        h.remove()
    scales = {name: float(np.float32(seen[name]) / np.float32(127)) for name in convs}
    calibration = {
        "format": "swinfer-int8-calibration",
        "version": 1,
        "weights_crc32": weights_crc32(state),
        "method": "max",
        "volumes": ["pt_checkpoint input (tools/goldens/make_int8_goldens.py)"],
        "points": {n: {"scale": scales[n], "max_abs": seen[n], "precision": "int8"} for n in sorted(convs)},
    }

    def run(points, scale_factor=1.0, per_channel=True, zero_point_error=False):
        originals = {n: m.weight.data.clone() for n, m in convs.items()}
        hooks = []
        for n, m in convs.items():
            if n not in points:
                continue
            m.weight.data = fake_quantize_weight(torch, originals[n], per_channel)
            s = scales[n] * scale_factor
            hooks.append(m.register_forward_pre_hook(lambda m, a, s=s: (fake_quantize_activation(torch, a[0], s),)))
            if zero_point_error:  # 128 uint8 units of the input scale on every tap: 128 s_x sum(w)
                shift = 128 * s * m.weight.data.sum(dim=(1, 2, 3, 4))
                hooks.append(m.register_forward_hook(lambda m, a, y, b=shift: y + b.view(1, -1, 1, 1, 1)))
        y = model(x).numpy()
        for h in hooks:
            h.remove()
        for n, m in convs.items():
            m.weight.data = originals[n]
        return y

    out = os.path.join(ROOT, "int8")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "calibration_all.json"), "w") as f:
        json.dump(calibration, f, indent=1)
        f.write("\n")
    for n, p in calibration["points"].items():
        p["precision"] = "int8" if n in SPOT_CHECK else "float"
    with open(os.path.join(out, "calibration.json"), "w") as f:
        json.dump(calibration, f, indent=1)
        f.write("\n")
    logits_all = run(convs)
    mg.save_npy(os.path.join(out, "logits_all.npy"), logits_all)
    logits = run(SPOT_CHECK)
    mg.save_npy(os.path.join(out, "logits.npy"), logits)
    wrong = {"wrong_scale": run(SPOT_CHECK, scale_factor=1.25), "per_tensor_weights": run(SPOT_CHECK, per_channel=False),
             "no_zero_point_compensation": run(SPOT_CHECK, zero_point_error=True)}
    for name, y in wrong.items():
        mg.save_npy(os.path.join(out, f"logits_{name}.npy"), y)
    ref = float_logits.numpy()
    summary = {
        "monai_version": monai.__version__,
        "torch_version": torch.__version__,
        "model": f"../{mg.PT_CASE}/model.pt",
        "input": f"the {mg.PT_CASE} case's input",
        "points": len(convs),
        "spot_check": list(SPOT_CHECK),
        "all_int8_vs_float_max_abs": float(np.abs(logits_all - ref).max()),
        "spot_check_vs_float_max_abs": float(np.abs(logits - ref).max()),
        "max_abs_float": float(np.abs(ref).max()),
        "wrong_variants_vs_spot_check_max_abs": {n: float(np.abs(y - logits).max()) for n, y in wrong.items()},
    }
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
