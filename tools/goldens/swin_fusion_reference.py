#!/usr/bin/python3
"""PyTorch reference of the Swin Fusion UNETR variants, written from /work/shared/spec/swin-fusion-unetr.md.

The backbone, vanilla encoders, decoders and output head are MONAI's own SwinUNETR modules (MONAI 1.4.0 for the
"merging_legacy" order that the fusion models use by default, 1.5.0 for "merging"/"mergingv2"); this file adds the
fusion skips (one `poolskip{L-1}` module per fused level L) and the variant dataflow. Nothing here is taken from
the author's published code; that code is only loaded at run time (from a path or the local git mirror) to
compare against.

Configuration = MONAI SwinUNETR kwargs (swin_common.DEFAULT_CONFIG) plus
    "arch": "SwinFusionUNETR"
    "variant": "od" | "od_large" | "2_v2" | "1_v1" | "2_v1"
    "skip_pool": "max" | "avg" | "maxavg"        (maxavg = cat([maxpool(x), avgpool(x)], dim=1))
    "final_kernel_size": 1 (default) or 3       (kernel of each conv_final UnetResBlock, padding k//2)
    "branch_channels": [c'1..c'5]               (od / od_large / 2_v2 only: output width of the branch
                                                 UnetResBlock of source stage 1..5; defaults: natural widths
                                                 [in, fs, 2fs, 4fs, 8fs]; od_large [fs, fs, 3fs, 4fs, 8fs])
    "downsample": fusion models default to "merging_legacy".

Thesis numbering: level L = 2..6, stage j: 1 = x_in, 2 = hs0, 3 = hs1, 4 = hs2, 5 = hs3, 6 = hs4. The pool
from stage j to level L has kernel = stride = 2^(L-j) (floor mode, no padding). Fused skip of level L = module
`poolskip{L-1}`: branch blocks `conv{L-j}` (UnetResBlock(c_j, c'_j, 3, instance)), then
`conv_final` = UnetResBlock(sum of pooled widths + c_L, c_L, final_kernel_size, instance). Concat order: pooled
sources from j smallest to largest, the level's own map last.

    /usr/bin/python3 tools/goldens/swin_fusion_reference.py --params        # parameter table (fs48)
    /usr/bin/python3 tools/goldens/swin_fusion_reference.py --self-test     # counts, keys, reference == author
    /usr/bin/python3 tools/goldens/swin_fusion_reference.py --compare-author [--author-code PATH]

The author's code (github.com/AwikDhar/SwinFusionUNETR, swin_fusion_overdrive.py) is never stored in this
repository: pass --author-code PATH, or let author_code_path() extract it from the local mirror.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import swin_common as sc  # noqa: E402

VARIANTS = ("od", "od_large", "2_v2", "1_v1", "2_v1")
SKIP_POOLS = ("max", "avg", "maxavg")
BRANCHED = ("od", "od_large", "2_v2")
FUSION_KEYS = ("arch", "variant", "skip_pool", "final_kernel_size", "branch_channels")

AUTHOR_MIRROR = "/work/.mirror/AwikDhar+SwinFusionUNETR/repo"
AUTHOR_FILE = "swin_fusion_overdrive.py"
AUTHOR_URL = "https://github.com/AwikDhar/SwinFusionUNETR"

# ---------------------------------------------------------------------------------------------------------------
# configuration


def make_fusion_config(variant: str = "od", **overrides) -> dict:
    """MONAI kwargs (downsample merging_legacy) + the fusion keys. branch_channels is only written when given."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {VARIANTS}")
    fusion = {k: overrides.pop(k) for k in list(overrides) if k in FUSION_KEYS}
    overrides.setdefault("downsample", "merging_legacy")
    cfg = sc.make_config(**overrides)
    cfg["arch"] = "SwinFusionUNETR"
    cfg["variant"] = variant
    cfg["skip_pool"] = fusion.pop("skip_pool", "max")
    cfg["final_kernel_size"] = fusion.pop("final_kernel_size", 1)
    if "branch_channels" in fusion:
        cfg["branch_channels"] = list(fusion.pop("branch_channels"))
    fusion.pop("arch", None)
    if fusion:
        raise KeyError(f"unexpected keys {sorted(fusion)}")
    resolve(cfg)  # validates
    return cfg


def stage_channels(cfg: dict) -> list[int]:
    """Channels of thesis stages 1..6 (index 0 = stage 1 = x_in)."""
    fs = cfg["feature_size"]
    return [cfg["in_channels"], fs, 2 * fs, 4 * fs, 8 * fs, 16 * fs]


def default_branch_channels(cfg: dict) -> list[int]:
    fs = cfg["feature_size"]
    if cfg["variant"] == "od_large":
        return [fs, fs, 3 * fs, 4 * fs, 8 * fs]
    return stage_channels(cfg)[:5]


def fused_levels(variant: str) -> list[int]:
    return [2, 3, 4, 5, 6] if variant in ("od", "od_large") else [2, 3, 4, 5]


def level_sources(variant: str, level: int) -> list[int]:
    """Stages j pooled into level L, highest resolution first."""
    if variant in ("od", "od_large"):
        return list(range(1, level))
    if variant in ("2_v2", "2_v1"):
        return list(range(max(1, level - 2), level))
    if variant == "1_v1":
        return [level - 1]
    raise ValueError(variant)


def resolve(cfg: dict) -> dict:
    """Validated fusion settings: variant, pool, k, branch widths (None for v1), per-level plan."""
    if cfg.get("arch") != "SwinFusionUNETR":
        raise ValueError(f"not a fusion configuration (arch={cfg.get('arch')!r})")
    v = cfg.get("variant")
    if v not in VARIANTS:
        raise ValueError(f"unknown variant {v!r}; known: {VARIANTS}")
    pool = cfg.get("skip_pool", "max")
    if pool not in SKIP_POOLS:
        raise ValueError(f"unknown skip_pool {pool!r}; known: {SKIP_POOLS}")
    k = int(cfg.get("final_kernel_size", 1))
    if k < 1 or k % 2 != 1:
        raise ValueError(f"final_kernel_size must be odd and positive, got {k}")
    if cfg.get("spatial_dims", 3) != 3:
        raise ValueError("fusion models are 3D only")
    nat = stage_channels(cfg)
    if v in BRANCHED:
        bc = cfg.get("branch_channels", default_branch_channels(cfg))
        if len(bc) != 5 or not all(isinstance(c, int) and c > 0 for c in bc):
            raise ValueError(f"branch_channels must be 5 positive ints, got {bc}")
        bc = list(bc)
    else:
        if "branch_channels" in cfg:
            raise ValueError(f"variant {v} has no branch blocks; remove branch_channels")
        bc = None
    mult = 2 if pool == "maxavg" else 1
    plan = []
    for L in fused_levels(v):
        srcs = []
        for j in level_sources(v, L):
            cin = nat[j - 1]
            cout = bc[j - 1] if bc is not None else None
            srcs.append({"stage": j, "key": f"conv{L - j}", "pool": 2 ** (L - j), "in": cin,
                         "branch_out": cout, "pooled": mult * (cout if cout is not None else cin)})
        c_own = nat[L - 1]
        plan.append({"level": L, "module": f"poolskip{L - 1}", "sources": srcs, "own": c_own,
                     "final_in": sum(s["pooled"] for s in srcs) + c_own, "final_out": c_own})
    return {"variant": v, "pool": pool, "k": k, "branch_channels": bc, "plan": plan}


# ---------------------------------------------------------------------------------------------------------------
# parameter count (closed form, spec section 7.1)


def _res(cin, cout, k):
    return k ** 3 * cin * cout + k ** 3 * cout * cout + (cin * cout if cin != cout else 0)


def _up(cin, cout):
    return 8 * cin * cout + _res(2 * cout, cout, 3)


def parameter_count(cfg: dict) -> int:
    """Closed-form parameter count of a fusion configuration (MONAI conventions)."""
    r = resolve(cfg)
    fs, cin, cout = cfg["feature_size"], cfg["in_channels"], cfg["out_channels"]
    w = sc.window_tuple(cfg)
    rows = (2 * w[0] - 1) * (2 * w[1] - 1) * (2 * w[2] - 1)
    p = cfg["patch_size"]
    n = p ** 3 * cin * fs + fs + (2 * fs if cfg["patch_norm"] else 0)
    for s in range(4):
        dim, heads, depth = fs * 2 ** s, cfg["num_heads"][s], cfg["depths"][s]
        hid = int(dim * cfg["mlp_ratio"])
        blk = 2 * dim + rows * heads + 3 * dim * dim + (3 * dim if cfg["qkv_bias"] else 0) + dim * dim + dim \
            + 2 * dim + dim * hid + hid + hid * dim + dim
        n += depth * blk + 16 * dim * dim + 16 * dim
        if cfg.get("use_v2"):  # layers{s+1}c = UnetrBasicBlock(dim, dim, 3, res_block=True) on the stage input
            n += 2 * 27 * dim * dim
    n += _res(cin, fs, 3)  # encoder1
    if r["variant"] not in ("od", "od_large"):
        n += _res(fs, fs, 3) + _res(2 * fs, 2 * fs, 3) + _res(4 * fs, 4 * fs, 3) + _res(16 * fs, 16 * fs, 3)
    n += _up(16 * fs, 8 * fs) + _up(8 * fs, 4 * fs) + _up(4 * fs, 2 * fs) + _up(2 * fs, fs) + _up(fs, fs)
    n += fs * cout + cout
    for lv in r["plan"]:
        for s in lv["sources"]:
            if s["branch_out"] is not None:
                n += _res(s["in"], s["branch_out"], 3)
        n += _res(lv["final_in"], lv["final_out"], r["k"])
    return n


# (label, overrides at fs48 in1 out2, spec count)
SPEC_COUNTS = [
    ("od", dict(variant="od"), 45_446_786),
    ("od final k3", dict(variant="od", final_kernel_size=3), 104_910_242),
    ("od_large (default widths)", dict(variant="od_large"), 47_381_012),
    ("2_v2 k1", dict(variant="2_v2"), 66_295_136),
    ("2_v2 k3", dict(variant="2_v2", final_kernel_size=3), 80_196_608),
    ("2_v2 maxavg k1", dict(variant="2_v2", skip_pool="maxavg"), 66_581_120),
    ("1_v1", dict(variant="1_v1"), 62_967_860),
    ("2_v1", dict(variant="2_v1"), 63_060_212),
]


def spec_config(over: dict) -> dict:
    over = dict(over)
    v = over.pop("variant")
    return make_fusion_config(v, feature_size=48, in_channels=1, out_channels=2, **over)


# ---------------------------------------------------------------------------------------------------------------
# the reference model


def _torch():
    import torch

    return torch


def _modules():
    """nn.Module classes, defined once torch is importable."""
    import torch
    import torch.nn as nn

    class MaxAvgPool3d(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.max_pool = nn.MaxPool3d(k, k)
            self.avg_pool = nn.AvgPool3d(k, k)

        def forward(self, x):
            return torch.cat([self.max_pool(x), self.avg_pool(x)], dim=1)

    class FusionSkip(nn.Module):
        """Fused skip of one level: [pool(branch(src_j)) for j ascending] + [own] -> conv_final."""

        def __init__(self, level_plan, pool, k, res_block_cls):
            super().__init__()
            self.level = level_plan["level"]
            self.names = []
            for s in level_plan["sources"]:  # j ascending == convN with N descending (author's order)
                n = s["key"]
                if s["branch_out"] is not None:
                    setattr(self, n, res_block_cls(3, s["in"], s["branch_out"], kernel_size=3, stride=1,
                                                   norm_name="instance"))
                kk = s["pool"]
                if pool == "max":
                    p = nn.MaxPool3d(kk, kk)
                elif pool == "avg":
                    p = nn.AvgPool3d(kk, kk)
                else:
                    p = MaxAvgPool3d(kk)
                setattr(self, "pool" + n[4:], p)
                self.names.append(n)
            self.conv_final = res_block_cls(3, level_plan["final_in"], level_plan["final_out"], kernel_size=k,
                                            stride=1, norm_name="instance")

        def forward(self, sources, own):
            parts = []
            for n, s in zip(self.names, sources):
                if hasattr(self, n):
                    s = getattr(self, n)(s)
                parts.append(getattr(self, "pool" + n[4:])(s))
            parts.append(own)
            return self.conv_final(torch.cat(parts, dim=1))

    class SwinFusionUNETRRef(nn.Module):
        def __init__(self, base, cfg, res_block_cls):
            super().__init__()
            r = resolve(cfg)
            self.variant = r["variant"]
            self.normalize = cfg["normalize"]
            self.od = self.variant in ("od", "od_large")
            # registration order = state_dict order: swinViT, encoders, decoders, poolskips (high level first), out
            self.swinViT = base.swinViT
            self.encoder1 = base.encoder1
            if not self.od:
                self.encoder2, self.encoder3, self.encoder4 = base.encoder2, base.encoder3, base.encoder4
                self.encoder10 = base.encoder10
            for n in ("decoder5", "decoder4", "decoder3", "decoder2", "decoder1"):
                setattr(self, n, getattr(base, n))
            self.plan = {lv["level"]: lv for lv in r["plan"]}
            for lv in sorted(r["plan"], key=lambda d: -d["level"]):
                setattr(self, lv["module"], FusionSkip(lv, r["pool"], r["k"], res_block_cls))
            self.out = base.out

        def fuse(self, level, stage_src, own):
            lv = self.plan[level]
            return getattr(self, lv["module"])([stage_src[s["stage"]] for s in lv["sources"]], own)

        def forward(self, x_in):
            hs = self.swinViT(x_in, self.normalize)
            enc0 = self.encoder1(x_in)
            if self.od:
                stage = {1: x_in, 2: hs[0], 3: hs[1], 4: hs[2], 5: hs[3], 6: hs[4]}
                f = {L: self.fuse(L, stage, stage[L]) for L in (6, 5, 4, 3, 2)}
                d = self.decoder5(f[6], f[5])
            else:
                enc1 = self.encoder2(hs[0])
                enc2 = self.encoder3(hs[1])
                enc3 = self.encoder4(hs[2])
                dec4 = self.encoder10(hs[4])
                own = {2: enc1, 3: enc2, 4: enc3, 5: hs[3]}
                if self.variant == "2_v2":
                    src = {1: x_in, 2: hs[0], 3: hs[1], 4: hs[2]}
                else:  # v1 (parallel): pool the existing vanilla skips, stage 1 = x_in itself
                    src = {1: x_in, 2: enc1, 3: enc2, 4: enc3}
                f = {L: self.fuse(L, src, own[L]) for L in (5, 4, 3, 2)}
                d = self.decoder5(dec4, f[5])
            d = self.decoder4(d, f[4])
            d = self.decoder3(d, f[3])
            d = self.decoder2(d, f[2])
            d = self.decoder1(d, enc0)
            return self.out(d)

    return SwinFusionUNETRRef


def check_spatial(spatial):
    for s in spatial:
        if s % 32 != 0:
            raise ValueError(f"spatial sizes must be multiples of 32, got {list(spatial)}")


def build_fusion(monai, cfg: dict, spatial):
    """The reference model for a fusion configuration, eval mode, float32. `monai` must be the release
    swin_common.monai_version_for(cfg) names (1.4.0 for merging_legacy)."""
    from monai.networks.blocks.dynunet_block import UnetResBlock

    resolve(cfg)
    check_spatial(spatial)
    base = sc.build_model(monai, cfg, spatial)
    Ref = _modules()
    return Ref(base, cfg, UnetResBlock).eval().float()


# Intermediate activations of fusion models: name -> (module, what). Same module names in the author's code.
FUSION_INTERMEDIATES = [
    ("fuse6", "poolskip5", "fused skip of level 6 (poolskip5 output; od: replaces encoder10(hs4))"),
    ("fuse5", "poolskip4", "fused skip of level 5 (poolskip4 output)"),
    ("fuse4", "poolskip3", "fused skip of level 4 (poolskip3 output)"),
    ("fuse3", "poolskip2", "fused skip of level 3 (poolskip2 output)"),
    ("fuse2", "poolskip1", "fused skip of level 2 (poolskip1 output)"),
    ("dec3", "decoder5", "decoder5 output"),
    ("dec2", "decoder4", "decoder4 output"),
    ("dec1", "decoder3", "decoder3 output"),
    ("dec0", "decoder2", "decoder2 output"),
]


def capture(model, x, names):
    """model(x) under no_grad with forward hooks on FUSION_INTERMEDIATES; returns (logits, {name: float32 numpy})."""
    return sc.capture(model, x, names, FUSION_INTERMEDIATES)


# ---------------------------------------------------------------------------------------------------------------
# the author's code (loaded at run time, never stored here)


def author_code_path(path: str | None = None) -> str:
    """Path of swin_fusion_overdrive.py: the given one, else extracted from the local mirror into a temp dir."""
    if path:
        if not os.path.isfile(path):
            raise SystemExit(f"--author-code {path}: no such file")
        return os.path.abspath(path)
    git_dir = AUTHOR_MIRROR
    if os.path.isdir(git_dir):
        p = subprocess.run(["git", "-C", git_dir, "show", f"HEAD:{AUTHOR_FILE}"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode == 0:
            d = tempfile.mkdtemp(prefix="swinfer_author_")
            atexit.register(shutil.rmtree, d, True)  # removed when this (the calling) process exits
            out = os.path.join(d, AUTHOR_FILE)
            with open(out, "wb") as f:
                f.write(p.stdout)
            return out
    raise SystemExit(
        f"the author's code is needed: `git clone {AUTHOR_URL}` and pass --author-code "
        f"<clone>/{AUTHOR_FILE} (it is not stored in this repository)")


def author_code_info(path: str) -> dict:
    with open(path, "rb") as f:
        raw = f.read()
    blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
    return {"repo": AUTHOR_URL, "file": AUTHOR_FILE, "git_blob_sha1": blob, "sha256": hashlib.sha256(raw).hexdigest()}


def import_author(path: str):
    spec = importlib.util.spec_from_file_location("swin_fusion_overdrive_author", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def author_supports(cfg: dict) -> None:
    r = resolve(cfg)
    bad = []
    if r["variant"] != "od":
        bad.append(f"variant {r['variant']}")
    if cfg["in_channels"] != 1:
        bad.append("in_channels != 1 (its x_in branches are hard-wired 1 -> 1)")
    if r["pool"] not in ("max", "avg"):
        bad.append(f"skip_pool {r['pool']}")
    if r["k"] != 1:
        bad.append("final_kernel_size != 1")
    if "branch_channels" in cfg and cfg["branch_channels"] != stage_channels(cfg)[:5]:
        bad.append("branch_channels")
    if cfg["downsample"] not in ("merging_legacy", "mergingv2"):
        bad.append(f"downsample {cfg['downsample']} (its 'merging' is the legacy order)")
    for k, v in {"patch_size": 2, "window_size": 7, "qkv_bias": True, "mlp_ratio": 4.0, "patch_norm": False,
                 "use_v2": False}.items():
        w = cfg[k]
        if (tuple(w) if isinstance(w, list) else w) not in (v, (v, v, v)):
            bad.append(f"{k}={w}")
    if cfg["feature_size"] % 12:
        bad.append("feature_size not a multiple of 12")
    if bad:
        raise ValueError("the author's code cannot express: " + ", ".join(bad))


def build_author(mod, cfg: dict, spatial):
    """The author's SwinUNETR for an od configuration (its constructor's print is swallowed)."""
    author_supports(cfg)
    check_spatial(spatial)
    with contextlib.redirect_stdout(io.StringIO()):
        m = mod.SwinUNETR(
            img_size=tuple(spatial), in_channels=cfg["in_channels"], out_channels=cfg["out_channels"],
            depths=tuple(cfg["depths"]), num_heads=tuple(cfg["num_heads"]), feature_size=cfg["feature_size"],
            norm_name=cfg["norm_name"], normalize=cfg["normalize"],
            downsample="merging" if cfg["downsample"] == "merging_legacy" else cfg["downsample"],
            skip_pool=cfg["skip_pool"])
    return m.eval().float()


# ---------------------------------------------------------------------------------------------------------------
# reference vs author (two processes: the author's code on MONAI 1.5.0, the reference on MONAI 1.4.0)

COMPARE_CASES = [
    dict(name="od max fs12 64x64x32", cfg=dict(variant="od", feature_size=12),
         shape=[1, 1, 64, 64, 32]),
    dict(name="od avg fs24 d(1,2,3,1) h(2,4,8,16) 32x64x96", cfg=dict(variant="od", feature_size=24,
         depths=[1, 2, 3, 1], num_heads=[2, 4, 8, 16], skip_pool="avg", out_channels=3), shape=[1, 1, 32, 64, 96]),
    dict(name="od max fs12 batch2 64^3 mergingv2", cfg=dict(variant="od", feature_size=12, downsample="mergingv2"),
         shape=[2, 1, 64, 64, 64]),
]


def _setup_torch():
    import torch

    torch.set_num_threads(int(os.environ.get("SWINFER_TORCH_THREADS", "2")))
    torch.set_grad_enabled(False)
    return torch


def _randomise(model, seed):
    """Default init from the constructor, then swin_common.randomise's LN / bias / table draws (seeded)."""
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    sc.randomise(model, gen)
    return gen


def _cmp_author_side(author_path, out_dir, monai_version):
    """Worker: builds each COMPARE_CASES model with the author's code, saves state_dict, input and logits."""
    from monai_select import import_monai

    import_monai(monai_version)
    torch = _setup_torch()
    mod = import_author(author_path)
    res = []
    for i, c in enumerate(COMPARE_CASES):
        over = dict(c["cfg"])
        cfg = make_fusion_config(over.pop("variant"), **over)
        torch.manual_seed(100 + i)
        m = build_author(mod, cfg, c["shape"][2:])
        gen = _randomise(m, 200 + i)
        x = torch.randn(c["shape"], generator=gen)
        y = m(x)
        torch.save({"cfg": cfg, "shape": c["shape"], "sd": m.state_dict(), "x": x, "y": y,
                    "keys": list(m.state_dict())}, os.path.join(out_dir, f"cmp_{i}.pt"))
        res.append({"case": c["name"], "max_abs": float(y.abs().max())})
    return res


def _cmp_reference_side(out_dir, monai_version):
    """Worker: loads each saved author state_dict needing MONAI `monai_version` into the reference (strict=True)
    and compares logits."""
    import numpy as np

    from monai_select import import_monai

    monai = import_monai(monai_version)
    torch = _setup_torch()
    res = []
    for i, c in enumerate(COMPARE_CASES):
        d = torch.load(os.path.join(out_dir, f"cmp_{i}.pt"))
        cfg = d["cfg"]
        if sc.monai_version_for(cfg) != monai_version:
            continue
        m = build_fusion(monai, cfg, d["shape"][2:])
        same_order = list(m.state_dict()) == d["keys"]
        m.load_state_dict(d["sd"], strict=True)
        y = m(d["x"])
        diff = float((y - d["y"]).abs().max())
        y64 = m.double()(d["x"].double())
        res.append({"case": c["name"], "reference_monai": monai.__version__, "max_abs_diff": diff,
                    "bit_identical": bool(np.array_equal(y.numpy(), d["y"].numpy())),
                    "max_abs_logit": float(d["y"].abs().max()),
                    "fp32_vs_fp64": float((y.double() - y64).abs().max()),
                    "state_dict_order_identical": same_order})
    return res


def _spawn(args):
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = [s for s in p.stdout.splitlines() if s.startswith("RESULT ")]
    if p.returncode or not line:
        raise SystemExit(f"worker {args} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return json.loads(line[0][7:])


def compare_with_author(author_path: str, author_monai: str = "1.5.0") -> list[dict]:
    """Author's od (its imports on MONAI `author_monai`) vs this reference on the same weights and inputs."""
    tmp = tempfile.mkdtemp(prefix="swinfer_fusion_cmp_")
    try:
        _spawn(["--cmp-worker", "author", "--cmp-dir", tmp, "--author-code", author_path,
                "--author-monai", author_monai])
        versions = []
        for c in COMPARE_CASES:
            over = dict(c["cfg"])
            v = sc.monai_version_for(make_fusion_config(over.pop("variant"), **over))
            if v not in versions:
                versions.append(v)
        res = []
        for v in versions:
            res += _spawn(["--cmp-worker", "reference", "--cmp-dir", tmp, "--ref-monai", v])
        for r in res:
            r["author_monai"] = author_monai
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------


def param_table(live: bool) -> list[dict]:
    rows = []
    monai = None
    if live:
        from monai_select import import_monai

        monai = import_monai("1.4.0")
        _setup_torch()
    for label, over, want in SPEC_COUNTS:
        cfg = spec_config(over)
        row = {"variant": label, "formula": parameter_count(cfg), "spec": want}
        if live:
            m = build_fusion(monai, cfg, [96, 96, 96])
            row["live"] = sum(p.numel() for p in m.parameters())
            row["tensors"] = len(m.state_dict())
            del m
        rows.append(row)
    return rows


def print_param_table(rows):
    print(f"{'variant (fs48, in 1, out 2)':<28} {'formula':>12} {'live model':>12} {'spec':>12}  {'M':>7}  ok")
    for r in rows:
        live = f"{r['live']:,}" if "live" in r else "-"
        ok = r["formula"] == r["spec"] and r.get("live", r["spec"]) == r["spec"]
        print(f"{r['variant']:<28} {r['formula']:>12,} {live:>12} {r['spec']:>12,}  {r['formula'] / 1e6:>7.3f}  "
              f"{'yes' if ok else 'NO'}")


def self_test(author_path: str | None) -> int:
    ok = True
    # 1. closed-form and live parameter counts equal the spec
    rows = param_table(live=True)
    print_param_table(rows)
    for r in rows:
        if not (r["formula"] == r["spec"] == r["live"]):
            print(f"FAIL parameter count {r['variant']}")
            ok = False
    # 2. key names: the documented convention (spec 2.4 for od) and the absent encoders
    from monai_select import import_monai

    monai = import_monai("1.4.0")
    cfg = make_fusion_config("2_v2", feature_size=12, skip_pool="maxavg", final_kernel_size=3)
    keys = list(build_fusion(monai, cfg, [64, 64, 32]).state_dict())
    for k in ("encoder10.layer.conv1.conv.weight", "poolskip4.conv2.conv1.conv.weight",
              "poolskip4.conv1.conv2.conv.weight", "poolskip1.conv1.conv1.conv.weight",
              "poolskip4.conv_final.conv3.conv.weight"):
        ok &= k in keys
    ok &= not any(k.startswith(("poolskip5.", "poolskip4.conv3.")) for k in keys)
    cfg = make_fusion_config("1_v1", feature_size=12)
    keys = list(build_fusion(monai, cfg, [64, 64, 32]).state_dict())
    ok &= not any(k.startswith("poolskip") and ".conv_final." not in k for k in keys)
    cfg = make_fusion_config("od", feature_size=48)
    m = build_fusion(monai, cfg, [96, 96, 96])
    keys = list(m.state_dict())
    ok &= len(keys) == 196 and not any(k.startswith(("encoder2", "encoder3", "encoder4", "encoder10")) for k in keys)
    ok &= list(m.state_dict()["poolskip5.conv_final.conv1.conv.weight"].shape) == [768, 1489, 1, 1, 1]
    ps = [k.split(".")[1] for k in keys if k.startswith("poolskip5.")]
    ok &= [p for i, p in enumerate(ps) if p not in ps[:i]] == ["conv5", "conv4", "conv3", "conv2", "conv1",
                                                                   "conv_final"]
    print("key-name checks", "passed" if ok else "FAILED")
    # 3. state_dict identical to the author's (names, shapes, order) and logits equal on the same weights
    path = author_code_path(author_path)
    res = compare_with_author(path)
    for r in res:
        print(f"reference vs author: {r['case']}: max|d| {r['max_abs_diff']:.3g} (max|logit| "
              f"{r['max_abs_logit']:.3g}, reference fp32-vs-fp64 {r['fp32_vs_fp64']:.2g}), bit-identical "
              f"{r['bit_identical']}, state_dict order identical {r['state_dict_order_identical']}")
        ok &= r["max_abs_diff"] <= 1e-5 * max(1.0, r["max_abs_logit"]) and r["state_dict_order_identical"]
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", action="store_true", help="parameter table at fs48 (closed form)")
    ap.add_argument("--live", action="store_true", help="with --params: also count live models (MONAI 1.4.0)")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--compare-author", action="store_true", help="reference vs the author's od, same weights")
    ap.add_argument("--author-code", help=f"path of {AUTHOR_FILE} (default: extract from {AUTHOR_MIRROR})")
    ap.add_argument("--author-monai", default="1.5.0", help="MONAI release the author's imports resolve to")
    ap.add_argument("--cmp-worker", help=argparse.SUPPRESS)
    ap.add_argument("--cmp-dir", help=argparse.SUPPRESS)
    ap.add_argument("--ref-monai", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cmp_worker == "author":
        print("RESULT " + json.dumps(_cmp_author_side(a.author_code, a.cmp_dir, a.author_monai)))
        return 0
    if a.cmp_worker == "reference":
        print("RESULT " + json.dumps(_cmp_reference_side(a.cmp_dir, a.ref_monai)))
        return 0
    if a.self_test:
        return self_test(a.author_code)
    if a.compare_author:
        path = author_code_path(a.author_code)
        print(json.dumps(author_code_info(path)))
        for r in compare_with_author(path, a.author_monai):
            print(json.dumps(r))
        return 0
    print_param_table(param_table(live=a.live))
    return 0


if __name__ == "__main__":
    sys.exit(main())
