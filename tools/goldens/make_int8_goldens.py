#!/usr/bin/env python3
"""Writes tests/data/goldens/int8/: the int8 scheme of docs/int8.md as fake quantization in PyTorch on MONAI's
SwinUNETR, independent of swinfer's code.

Model and input are the pt_checkpoint golden's (MONAI 1.5.0 default init, float16 weights; the formula input).
The quantization points are every product of docs/int8.md: each Conv3d, each Linear (the attention's qkv and proj,
the MLP's linear1 and linear2, the patch merging's reduction) and each ConvTranspose3d, named by module path.
Calibration here is its own: the max |x| of every point's input over that input (method "max"; a Linear's input as
MONAI computes it, the windows' pad tokens included), written as a swinfer calibration file (with the CRC-32 of the
weights as swinfer computes it) so swinfer runs the same scales. Every quantized point then runs on fake-quantized
operands: the input quantize-dequantized per tensor (round half to even of x * (1 / scale), clamped to
[-128, 127]), the weight per output channel (scale max|w| / 127, clamped to [-127, 127]; a ConvTranspose3d's output
channel is its weight's second axis).

Goldens: logits_all.npy with every point in int8 (calibration_all.json), logits_convs.npy with every Conv3d in int8
(calibration_convs.json), logits_dynamic.npy with every point in int8 on dynamic scales (--int8-dynamic: a
(transposed) convolution's input quantized with its own max|x| / 127 over the tensor, a Linear's each row, the last
axis, with the row's own; 1 for all-zero values), and three spot checks with a few points in int8 (the
calibration file marks the others "float"), each next to three deliberately wrong variants of itself (every scale
25 % too large, one weight scale per tensor instead of per channel, the uint8 zero point's contribution
(128 x the weight sum) left uncompensated) that the C++ test must tell apart from it:
  - logits.npy: the SPOT_CHECK convolutions (calibration.json);
  - products_x1.npy: stage 1's linears (calibration_products.json), compared on stage 1's output;
  - transposed.npy: the TRANSPOSED convolution alone on its float input (transposed_input.npy).
The linears and the transposed convolutions move the logits too little (through residual streams and
InstanceNorms) to tell a wrong variant from float32 rounding there, so those two are compared where they act. With
every layer quantized, float32 differences of 1e-6 between any two implementations move a few inputs across a
rounding boundary and each later quantized layer amplifies that, so the whole-network golden is a statistical
check; the spot checks keep such flips isolated and are compared tightly. Those flips also make the goldens depend
on the CPU that made them (PyTorch's float kernels differ in rounding between instruction sets): regenerated on an
AVX2 Zen 2 after an AVX-512 Zen 5, the convolution spot check's logits moved by up to 0.55 % of the largest.

Run with the MONAI 1.5.0 environment the other goldens use:  python tools/goldens/make_int8_goldens.py
(--dynamic-only writes logits_dynamic.npy and its case.json entry alone, leaving the other goldens as they are).
"""
from __future__ import annotations

import argparse
import contextlib
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
# The linears: stage 1's (qkv, proj, the MLP's two in an unshifted and a shifted block, the patch merging's
# reduction), compared on stage 1's output.
SPOT_CHECK_PRODUCTS = tuple(f"swinViT.layers1.0.blocks.{b}.{m}" for b in (0, 1)
                            for m in ("attn.qkv", "attn.proj", "mlp.linear1", "mlp.linear2")) + (
    "swinViT.layers1.0.downsample.reduction",)
X1_MODULE = "swinViT.layers1.0"  # stage 1's output: swinfer's stage observer calls it "x1"
# A transposed convolution, compared alone on its float input: through the decoder's InstanceNorms, a per-tensor
# weight scale moves a decoder's output by 0.15 %, as little as float32 rounding does upstream.
TRANSPOSED = "decoder4.transp_conv.conv"


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


def dynamic_scale(torch, largest):
    """max|x| / 127 in float32, 1 where every value is zero (largest: a tensor of maxima)."""
    scale = largest.float() / np.float32(127)
    return torch.where(scale > 0, scale, torch.ones_like(scale))


def fake_quantize_dynamic(torch, module, x):
    """x quantize-dequantized with its dynamic scale: a Linear's per row (the last axis), a convolution's per tensor."""
    if isinstance(module, torch.nn.Linear):
        scale = dynamic_scale(torch, x.abs().amax(dim=-1, keepdim=True))
    else:
        scale = dynamic_scale(torch, x.abs().amax())
    return torch.clamp(torch.round(x * (torch.ones_like(scale) / scale)), -128, 127) * scale


def output_axis(torch, module):
    """The weight axis of a module's output channels: a ConvTranspose3d's weight is (cin, cout, ...)."""
    return 1 if isinstance(module, torch.nn.ConvTranspose3d) else 0


def fake_quantize_weight(torch, w, axis, per_channel=True):
    others = tuple(d for d in range(w.dim()) if d != axis)
    if per_channel:
        scale = w.abs().amax(dim=others, keepdim=True) / 127
    else:
        scale = w.abs().amax() / 127 * torch.ones_like(w.abs().amax(dim=others, keepdim=True))
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.clamp(torch.round(w * (torch.ones_like(scale) / scale)), -127, 127)
    return q * scale


def zero_point_error(torch, module, weight, scale, output):
    """What leaving out the zero point's compensation adds to a product's output: 128 uint8 units of the input
    scale on every tap, 128 s_x sum(w) per output channel (per output offset for a transposed convolution)."""
    if isinstance(module, torch.nn.Conv3d):
        return output + (128 * scale * weight.sum(dim=(1, 2, 3, 4))).view(1, -1, 1, 1, 1)
    if isinstance(module, torch.nn.ConvTranspose3d):
        shift = 128 * scale * weight.sum(dim=0)  # (cout, 2, 2, 2): output voxel (2z+a, 2y+b, 2x+c) gets [:, a, b, c]
        d, h, w = (s // 2 for s in output.shape[2:])
        return output + shift.repeat(1, d, h, w).unsqueeze(0)
    return output + 128 * scale * weight.sum(dim=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dynamic-only", action="store_true",
                        help="write logits_dynamic.npy and its case.json entry only")
    args = parser.parse_args()
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
    kinds = (torch.nn.Conv3d, torch.nn.Linear, torch.nn.ConvTranspose3d)
    products = {name: m for name, m in model.named_modules() if type(m) in kinds}

    out = os.path.join(ROOT, "int8")
    os.makedirs(out, exist_ok=True)

    def rel_l2(a, b):
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    # Dynamic scales: every product, each input its own scales (taken as the module sees it).
    originals = {n: m.weight.data.clone() for n, m in products.items()}
    hooks = []
    for n, m in products.items():
        m.weight.data = fake_quantize_weight(torch, originals[n], output_axis(torch, m))
        hooks.append(m.register_forward_pre_hook(lambda m, a: (fake_quantize_dynamic(torch, m, a[0]),)))
    logits_dynamic = model(x).numpy()
    for h in hooks:
        h.remove()
    for n, m in products.items():
        m.weight.data = originals[n]
    mg.save_npy(os.path.join(out, "logits_dynamic.npy"), logits_dynamic)
    float_logits = model(x).numpy()
    dynamic = {"vs_float_rel_l2": rel_l2(logits_dynamic, float_logits),
               "vs_float_max_abs": float(np.abs(logits_dynamic - float_logits).max())}
    if args.dynamic_only:
        with open(os.path.join(out, "case.json")) as f:
            summary = json.load(f)
        summary["dynamic"] = dynamic
        with open(os.path.join(out, "case.json"), "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        print(json.dumps(dynamic, indent=1))
        return

    # Calibration: max |input| of every product (a Linear is called once per block; the max over the calls).
    seen = {}

    def observe(name, a):
        seen[name] = max(seen.get(name, 0.0), float(a[0].abs().max()))

    hooks = [m.register_forward_pre_hook(lambda m, a, n=name: observe(n, a)) for name, m in products.items()]
    float_logits = model(x)
    for h in hooks:
        h.remove()
    scales = {name: float(np.float32(seen[name]) / np.float32(127)) for name in products}
    calibration = {
        "format": "swinfer-int8-calibration",
        "version": 1,
        "weights_crc32": weights_crc32(state),
        "method": "max",
        "volumes": ["pt_checkpoint input (tools/goldens/make_int8_goldens.py)"],
        "points": {n: {"scale": scales[n], "max_abs": seen[n], "precision": "int8"} for n in sorted(products)},
    }

    modules = dict(model.named_modules())
    x1 = {}
    modules[X1_MODULE].register_forward_hook(lambda m, a, y: x1.__setitem__("value", y.numpy().copy()))
    transposed_input = {}

    def keep_transposed_input(module, args):  # the first call's, the float model's: returns None, changing nothing
        transposed_input.setdefault("value", args[0].clone())


    @contextlib.contextmanager
    def fake_quantized(points, scale_factor=1.0, per_channel=True, uncompensated=False):
        """The model with `points` fake-quantized (optionally one of the wrong variants) inside the `with`."""
        originals = {n: m.weight.data.clone() for n, m in products.items()}
        hooks = []
        for n, m in products.items():
            if n not in points:
                continue
            m.weight.data = fake_quantize_weight(torch, originals[n], output_axis(torch, m), per_channel)
            s = scales[n] * scale_factor
            hooks.append(m.register_forward_pre_hook(lambda m, a, s=s: (fake_quantize_activation(torch, a[0], s),)))
            if uncompensated:
                hooks.append(m.register_forward_hook(
                    lambda m, a, y, s=s, w=m.weight.data: zero_point_error(torch, m, w, s, y)))
        try:
            yield
        finally:
            for h in hooks:
                h.remove()
            for n, m in products.items():
                m.weight.data = originals[n]

    def write_calibration(name, int8_points):
        for n, p in calibration["points"].items():
            p["precision"] = "int8" if n in int8_points else "float"
        with open(os.path.join(out, name), "w") as f:
            json.dump(calibration, f, indent=1)
            f.write("\n")

    handle = modules[TRANSPOSED].register_forward_pre_hook(keep_transposed_input)
    model(x)
    handle.remove()
    write_calibration("calibration_all.json", products)
    convolutions = [n for n, m in products.items() if type(m) is torch.nn.Conv3d]
    write_calibration("calibration_convs.json", convolutions)
    write_calibration("calibration.json", SPOT_CHECK)
    write_calibration("calibration_products.json", SPOT_CHECK_PRODUCTS)
    with fake_quantized(products):
        logits_all = model(x).numpy()
    mg.save_npy(os.path.join(out, "logits_all.npy"), logits_all)
    with fake_quantized(convolutions):
        logits_convs = model(x).numpy()
    mg.save_npy(os.path.join(out, "logits_convs.npy"), logits_convs)
    ref = float_logits.numpy()
    layer_input = transposed_input["value"]
    mg.save_npy(os.path.join(out, "transposed_input.npy"), layer_input.numpy())

    # Each spot check's compared output: the logits, stage 1's output, the transposed convolution alone.
    def logits(points, **variant):
        with fake_quantized(points, **variant):
            return model(x).numpy()

    def stage1(points, **variant):
        logits(points, **variant)
        return x1["value"]

    def transposed(points, **variant):
        with fake_quantized(points, **variant):
            return modules[TRANSPOSED](layer_input).numpy()

    checks = {"logits": (SPOT_CHECK, logits), "products_x1": (SPOT_CHECK_PRODUCTS, stage1),
              "transposed": ((TRANSPOSED,), transposed)}
    variants = {"wrong_scale": {"scale_factor": 1.25}, "per_tensor_weights": {"per_channel": False},
                "no_zero_point_compensation": {"uncompensated": True}}

    spot_checks = {}
    for name, (points, compute) in checks.items():
        right = compute(points)
        mg.save_npy(os.path.join(out, f"{name}.npy"), right)
        wrong = {}
        for variant, arguments in variants.items():
            y = compute(points, **arguments)
            mg.save_npy(os.path.join(out, f"{name}_{variant}.npy"), y)
            wrong[variant] = rel_l2(y, right)
        spot_checks[name] = {"points": list(points), "float_rel_l2": rel_l2(compute(()), right), "wrong_rel_l2": wrong}
    summary = {
        "monai_version": monai.__version__,
        "torch_version": torch.__version__,
        "model": f"../{mg.PT_CASE}/model.pt",
        "input": f"the {mg.PT_CASE} case's input",
        "points": len(products),
        "points_by_kind": {k.__name__: sum(type(m) is k for m in products.values()) for k in kinds},
        "all_int8_vs_float_max_abs": float(np.abs(logits_all - ref).max()),
        "all_int8_vs_float_rel_l2": rel_l2(logits_all, ref),
        "convs_int8_vs_float_rel_l2": rel_l2(logits_convs, ref),
        "dynamic": dynamic,
        "max_abs_float": float(np.abs(ref).max()),
        "spot_checks": spot_checks,
    }
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
