"""Shared helpers for the golden generator and tools/check_against_monai.py: configurations, model construction
for the MONAI release a configuration needs, per-tensor roles, and intermediate-activation capture.

A configuration is the dict of MONAI 1.5 `SwinUNETR` constructor kwargs (JSON-friendly: lists for sequences)
plus "downsample" in {"merging", "merging_legacy", "mergingv2"}:
  - "merging": MONAI >= 1.5 PatchMerging order (000,100,010,001,110,101,011,111)
  - "merging_legacy": MONAI <= 1.4 "merging" (000,100,010,001,101,010,001,111); built with MONAI 1.4.0
  - "mergingv2": lexicographic order (any MONAI >= 1.0)
"""

from __future__ import annotations

import copy
import math
import warnings

DEFAULT_CONFIG = {
    "in_channels": 1,
    "out_channels": 2,
    "patch_size": 2,
    "depths": [2, 2, 2, 2],
    "num_heads": [3, 6, 12, 24],
    "window_size": 7,
    "qkv_bias": True,
    "mlp_ratio": 4.0,
    "feature_size": 12,
    "norm_name": "instance",
    "normalize": True,
    "patch_norm": False,
    "spatial_dims": 3,
    "downsample": "merging",
    "use_v2": False,
}

# Constructor arguments that MONAI 1.4.0 does not have; a legacy configuration must leave them at these values.
_NOT_IN_14 = {"patch_size": 2, "window_size": 7, "qkv_bias": True, "mlp_ratio": 4.0, "patch_norm": False}

STRESSED = "stressed"
DEFAULT_LIKE = "default_like"


def make_config(**overrides) -> dict:
    cfg = copy.deepcopy(DEFAULT_CONFIG)
    for k, v in overrides.items():
        if k not in cfg:
            raise KeyError(f"unknown config key {k}")
        cfg[k] = v
    return cfg


def monai_version_for(cfg: dict, newest: str | None = None) -> str:
    if cfg["downsample"] == "merging_legacy":
        return "1.4.0"
    return newest or "1.5.0"


def window_tuple(cfg: dict):
    w = cfg["window_size"]
    return tuple(w) if isinstance(w, (list, tuple)) else (w, w, w)


def build_model(monai, cfg: dict, spatial):
    """SwinUNETR for `cfg` with the imported `monai` module; eval mode, float32."""
    from monai.networks.nets import SwinUNETR

    ver = tuple(int(p) for p in monai.__version__.split(".")[:2])
    ds = cfg["downsample"]
    common = dict(
        in_channels=cfg["in_channels"],
        out_channels=cfg["out_channels"],
        depths=tuple(cfg["depths"]),
        num_heads=tuple(cfg["num_heads"]),
        feature_size=cfg["feature_size"],
        norm_name=cfg["norm_name"],
        normalize=cfg["normalize"],
        spatial_dims=cfg["spatial_dims"],
        use_v2=cfg["use_v2"],
    )
    if ver < (1, 5):
        if ds == "merging":
            raise ValueError("the 1.5 'merging' order does not exist in MONAI < 1.5")
        for k, v in _NOT_IN_14.items():
            w = cfg[k]
            if (tuple(w) if isinstance(w, list) else w) not in (v, (v, v, v)):
                raise ValueError(f"MONAI {monai.__version__} cannot take {k}={w}")
        common["downsample"] = "merging" if ds == "merging_legacy" else ds
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SwinUNETR(img_size=tuple(spatial), **common)
    else:
        if ds == "merging_legacy":
            raise ValueError(f"'merging_legacy' needs MONAI <= 1.4, not {monai.__version__}")
        w = cfg["window_size"]
        model = SwinUNETR(
            patch_size=cfg["patch_size"],
            window_size=tuple(w) if isinstance(w, list) else w,
            qkv_bias=cfg["qkv_bias"],
            mlp_ratio=cfg["mlp_ratio"],
            patch_norm=cfg["patch_norm"],
            downsample=ds,
            **common,
        )
    return model.eval().float()


def fan_in(weight_shape, module) -> int:
    import torch.nn as nn

    if isinstance(module, nn.Linear):
        return int(weight_shape[1])
    if isinstance(module, nn.ConvTranspose3d):
        # (cin, cout, k...): each output voxel sees cin * prod(k / stride) taps (k == stride here: cin)
        taps = 1
        for k, s in zip(module.kernel_size, module.stride):
            taps *= max(1, k // s)
        return int(weight_shape[0]) * taps
    if isinstance(module, nn.Conv3d):
        r = 1
        for k in weight_shape[2:]:
            r *= int(k)
        return int(weight_shape[1]) * r
    raise TypeError(f"no fan-in rule for {type(module).__name__}")


def tensor_roles(model) -> list[dict]:
    """State-dict entries in order with their role: weight / bias / layernorm_weight / layernorm_bias /
    relative_position_bias_table / relative_position_index (plus fan_in for weights)."""
    import torch
    import torch.nn as nn

    owner = {}
    for mname, mod in model.named_modules():
        for pname, _ in list(mod.named_parameters(recurse=False)) + list(mod.named_buffers(recurse=False)):
            owner[f"{mname}.{pname}" if mname else pname] = mod
    out = []
    for key, t in model.state_dict().items():
        mod = owner[key]
        leaf = key.rsplit(".", 1)[-1]
        e = {"key": key, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
        if leaf == "relative_position_index":
            assert t.dtype == torch.int64
            e["role"] = "relative_position_index"
        elif leaf == "relative_position_bias_table":
            e["role"] = "relative_position_bias_table"
        elif isinstance(mod, nn.LayerNorm):
            e["role"] = "layernorm_weight" if leaf == "weight" else "layernorm_bias"
        elif isinstance(mod, (nn.Linear, nn.Conv3d, nn.ConvTranspose3d)):
            if leaf == "weight":
                e["role"] = "weight"
                e["fan_in"] = fan_in(t.shape, mod)
            elif leaf == "bias":
                e["role"] = "bias"
            else:
                raise ValueError(key)
        else:
            raise ValueError(f"no role for {key} ({type(mod).__name__})")
        out.append(e)
    return out


def offset_scale(entry: dict, params: str):
    """(offset, scale) of a formula tensor for the parameter regime `params` (stressed / default_like)."""
    from formula import nearest_pow2

    role = entry["role"]
    if role == "weight":
        return 0.0, nearest_pow2(math.sqrt(3.0 / entry["fan_in"]))
    if params == STRESSED:
        table = {
            "layernorm_weight": (1.0, 0.25),
            "layernorm_bias": (0.0, 0.125),
            "bias": (0.0, 0.125),
            "relative_position_bias_table": (0.0, 0.5),
        }
    elif params == DEFAULT_LIKE:
        table = {
            "layernorm_weight": (1.0, 0.0),
            "layernorm_bias": (0.0, 0.0),
            "bias": (0.0, 0.0),
            "relative_position_bias_table": (0.0, 2.0**-6),
        }
    else:
        raise ValueError(params)
    return table[role]


# Intermediate activations: name -> (module path, what), module outputs captured with forward hooks.
INTERMEDIATES = [
    ("patch_embed", "swinViT.patch_embed", "patch embedding output x0 (NCDHW)"),
    ("x1", "swinViT.layers1.0", "stage-1 output after merging, un-normalised (NCDHW)"),
    ("x2", "swinViT.layers2.0", "stage-2 output, un-normalised"),
    ("x3", "swinViT.layers3.0", "stage-3 output, un-normalised"),
    ("x4", "swinViT.layers4.0", "stage-4 output, un-normalised"),
    ("hs", "swinViT", "hidden states hs0..hs4 handed to the decoder (proj_out LN applied if normalize)"),
    ("enc0", "encoder1", "encoder1(x_in), full resolution"),
    ("enc1", "encoder2", "encoder2(hs0)"),
    ("enc2", "encoder3", "encoder3(hs1)"),
    ("enc3", "encoder4", "encoder4(hs2)"),
    ("dec4", "encoder10", "encoder10(hs4)"),
    ("dec3", "decoder5", "decoder5(dec4, hs3)"),
    ("dec2", "decoder4", "decoder4(dec3, enc3)"),
    ("dec1", "decoder3", "decoder3(dec2, enc2)"),
    ("dec0", "decoder2", "decoder2(dec1, enc1)"),
    ("out", "decoder1", "decoder1(dec0, enc0), full resolution, before the 1x1x1 head"),
]


def capture(model, x, names=None, table=None):
    """Runs model(x) under no_grad; returns (logits, {name: float32 numpy NCDHW}) for the stages of `table`
    (default INTERMEDIATES) named in `names` (None: all) whose module the model has. A stage whose module returns
    a sequence (swinViT's hs) gives name0, name1, ..."""
    import torch

    mods = dict(model.named_modules())
    got, hooks = {}, []
    for name, path, _ in INTERMEDIATES if table is None else table:
        if (names is not None and name not in names) or path not in mods:
            continue

        def hook(_m, _i, out, name=name):
            if isinstance(out, (list, tuple)):
                for j, h in enumerate(out):
                    got[f"{name}{j}"] = h.detach().float().numpy().copy()
            else:
                got[name] = out.detach().float().numpy().copy()

        hooks.append(mods[path].register_forward_hook(hook))
    try:
        with torch.no_grad():
            y = model(x)
    finally:
        for h in hooks:
            h.remove()
    return y, got


def randomise(model, gen):
    """MONAI's own init, then LN weights 1+0.25N, LN biases / all biases 0.1N, bias tables 0.5N (seeded)."""
    import torch

    roles = {e["key"]: e["role"] for e in tensor_roles(model)}
    sd = model.state_dict()
    new = {}
    for k, v in sd.items():
        r = roles[k]
        if r == "layernorm_weight":
            v = 1.0 + 0.25 * torch.randn(v.shape, generator=gen)
        elif r in ("layernorm_bias", "bias"):
            v = 0.1 * torch.randn(v.shape, generator=gen)
        elif r == "relative_position_bias_table":
            v = 0.5 * torch.randn(v.shape, generator=gen)
        new[k] = v
    model.load_state_dict(new, strict=True)
