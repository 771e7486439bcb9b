#!/usr/bin/python3
"""Independent check of the swinfer binary on random Swin Fusion UNETR configurations (run by hand, not CI).

Default (author) mode: N random "od" configurations drawn from --seed (feature size 12/24, depths, heads,
skip_pool max/avg, legacy or v2 merging, out channels, normalize, batch, input sizes that are multiples of 32,
anisotropic included) built with the AUTHOR's published code (github.com/AwikDhar/SwinFusionUNETR,
swin_fusion_overdrive.py: --author-code PATH, else extracted from the local git mirror; never stored here; its
MONAI imports resolve to MONAI 1.5.0). Its own random init after torch.manual_seed, then every LayerNorm
weight/bias, every bias and every relative_position_bias_table re-drawn with torch.randn (seeded), as in
tools/check_against_monai.py. --reference mode: the same for every spec variant (od, od_large, 2_v2, 1_v1, 2_v1;
skip_pool max/avg/maxavg, final kernel 1/3, explicit branch widths, in_channels 1/2/4, merging orders) built with
tools/goldens/swin_fusion_reference.py. For each case it writes

    <workdir>/case_<i>/model.safetensors   state_dict (float32 + int64 index buffers; check_against_monai's writer)
    <workdir>/case_<i>/config.json         MONAI kwargs + arch/variant/skip_pool/final_kernel_size[/branch_channels]
    <workdir>/case_<i>/input.npy           float32 NCDHW
    <workdir>/case_<i>/author.npy          (or reference.npy) float32 logits (eval, no_grad, 2 threads)

and runs, for every requested backend and layout,

    <binary> forward --model model.safetensors --config config.json --input input.npy --output out.npy \\
             --backend B --layout L --precision fp32

PASS when max|swinfer - expected| <= 1e-4 * max|expected logit|. Exit status 1 if anything fails.

    /usr/bin/python3 tools/check_fusion_against_author.py --binary build/apps/swinfer/swinfer -n 6 --seed 1 \\
        --backends cpu onednn --layouts ndhwc ncdhw
    /usr/bin/python3 tools/check_fusion_against_author.py --reference --binary build/apps/swinfer/swinfer -n 8
    /usr/bin/python3 tools/check_fusion_against_author.py --prepare-only -n 4 --workdir /tmp/fcheck
    /usr/bin/python3 tools/check_fusion_against_author.py --self-test

--cross-check (author mode) also loads every author state_dict into the reference (strict) and reports
max|reference - author|. Needs /usr/bin/python3 with torch, numpy, MONAI 1.5.0 and /opt/monai-1.4.0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "goldens"))

import check_against_monai as cam  # noqa: E402  (safetensors writer/reader, randomise, head drawing)
import swin_common as sc  # noqa: E402
import swin_fusion_reference as sfr  # noqa: E402

REL_TOL = 1e-4
AUTHOR_MONAI = "1.5.0"

# ---------------------------------------------------------------------------------------------------------------
# configuration drawing


def _spatial(rng: random.Random, limit: int) -> list[int]:
    while True:
        sp = [rng.choice([32, 64, 96]) for _ in range(3)]
        if sp != [32, 32, 32] and sp[0] * sp[1] * sp[2] <= limit:
            return sp


def draw_author_case(seed: int, index: int) -> dict:
    """A random od configuration the author's code can express."""
    rng = random.Random(f"swinfer-fusion-author/{seed}/{index}")
    fs = rng.choice([12, 24])
    cfg = sfr.make_fusion_config(
        "od",
        in_channels=1,
        out_channels=rng.choice([1, 2, 2, 3, 14]),
        feature_size=fs,
        depths=[rng.choice([1, 2, 2, 3]) for _ in range(4)],
        num_heads=[cam._heads_for(fs * 2**s, rng, 3 * 2**s) for s in range(4)],
        normalize=rng.random() < 0.8,
        downsample=rng.choices(["merging_legacy", "mergingv2"], weights=[3, 1])[0],
        skip_pool=rng.choice(["max", "avg"]),
    )
    sp = _spatial(rng, 96 * 64 * 64)
    return {"mode": "author", "index": index, "seed": seed, "config": cfg,
            "input_shape": [rng.choice([1, 1, 2]), 1] + sp, "torch_seed": (seed * 1000003 + index) % (2**31)}


def draw_reference_case(seed: int, index: int) -> dict:
    """A random configuration of any spec variant (the reference model)."""
    rng = random.Random(f"swinfer-fusion-reference/{seed}/{index}")
    variant = sfr.VARIANTS[index % len(sfr.VARIANTS)] if index < len(sfr.VARIANTS) else rng.choice(sfr.VARIANTS)
    fs = rng.choice([12, 24])
    ds = rng.choices(["merging_legacy", "merging", "mergingv2"], weights=[2, 1, 1])[0]
    kw = {}
    if ds != "merging_legacy":  # MONAI 1.4.0 has window 7, qkv bias and mlp_ratio 4 hard-wired
        kw = dict(window_size=rng.choice([5, 7]) if rng.random() < 0.6 else [rng.choice([5, 6, 7]) for _ in range(3)],
                  qkv_bias=rng.random() < 0.7, mlp_ratio=rng.choice([4.0, 4.0, 2.0]))
    in_ch = rng.choice([1, 1, 2, 4])
    over = dict(
        in_channels=in_ch,
        out_channels=rng.choice([1, 2, 3]),
        feature_size=fs,
        depths=[rng.choice([1, 2, 2]) for _ in range(4)],
        num_heads=[cam._heads_for(fs * 2**s, rng, 3 * 2**s) for s in range(4)],
        normalize=rng.random() < 0.8,
        use_v2=ds != "merging_legacy" and rng.random() < 0.2,
        downsample=ds,
        skip_pool=rng.choice(["max", "avg", "maxavg"]),
        final_kernel_size=rng.choice([1, 1, 3]),
        **kw,
    )
    if variant in sfr.BRANCHED and (variant == "od_large" or rng.random() < 0.4):
        nat = [in_ch, fs, 2 * fs, 4 * fs, 8 * fs]
        if rng.random() < 0.7:  # explicit widths; else the variant's default
            over["branch_channels"] = [max(1, int(c * rng.choice([0.5, 1.0, 1.5, 2.0]))) for c in nat]
    cfg = sfr.make_fusion_config(variant, **over)
    sp = _spatial(rng, 64 * 64 * 64)
    return {"mode": "reference", "index": index, "seed": seed, "config": cfg,
            "input_shape": [rng.choice([1, 1, 2]), in_ch] + sp, "torch_seed": (seed * 1000003 + index) % (2**31)}


def summary(case: dict) -> str:
    c = case["config"]
    w = c["window_size"]
    w = "x".join(map(str, w)) if isinstance(w, list) else str(w)
    parts = [
        c["variant"],
        "x".join(map(str, case["input_shape"])),
        f"fs{c['feature_size']}",
        "d" + "".join(map(str, c["depths"])),
        "h" + "-".join(map(str, c["num_heads"])),
        c["skip_pool"],
        f"k{c['final_kernel_size']}",
        {"merging": "mrg", "mergingv2": "mrg2", "merging_legacy": "mrgL"}[c["downsample"]],
        f"in{c['in_channels']}out{c['out_channels']}",
    ]
    if w != "7":
        parts.append(f"w{w}")
    if c["mlp_ratio"] != 4.0:
        parts.append(f"mlp{c['mlp_ratio']:g}")
    if not c["qkv_bias"]:
        parts.append("noqkvb")
    if not c["normalize"]:
        parts.append("nonorm")
    if c["use_v2"]:
        parts.append("v2")
    if "branch_channels" in c:
        parts.append("bc" + "-".join(map(str, c["branch_channels"])))
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# Python half (one subprocess per case: one MONAI release per process)


def expected_name(case: dict) -> str:
    return "author.npy" if case["mode"] == "author" else "reference.npy"


def prepare_case(case: dict, cdir: str, fp64: bool, author_path: str | None) -> dict:
    from monai_select import import_monai

    cfg = case["config"]
    import torch

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    torch.manual_seed(case["torch_seed"])
    if case["mode"] == "author":
        monai = import_monai(AUTHOR_MONAI)
        model = sfr.build_author(sfr.import_author(author_path), cfg, case["input_shape"][2:])
    else:
        monai = import_monai(sc.monai_version_for(cfg))
        model = sfr.build_fusion(monai, cfg, case["input_shape"][2:])
    meta = {"format": "pt", "source": case["mode"], "monai_version": monai.__version__,
            "downsample": cfg["downsample"]}
    if case["mode"] == "author":
        meta["author_code_sha256"] = sfr.author_code_info(author_path)["sha256"]
    assert sum(v.numel() for v in model.state_dict().values() if v.dtype != torch.int64) == sfr.parameter_count(cfg)
    y, t_py, noise = cam.run_and_write_case(model, case, cdir, fp64, expected_name(case), meta)
    return {"monai": monai.__version__, "max_abs": float(np.abs(y).max()), "fp64_noise": noise,
            "seconds": t_py, "params": sfr.parameter_count(cfg)}


def cross_check(cdir: str) -> dict:
    """The reference, loaded (strict) with the author's safetensors state_dict, on the same input."""
    from monai_select import import_monai

    with open(os.path.join(cdir, "config.json")) as f:
        cfg = json.load(f)
    monai = import_monai(sc.monai_version_for(cfg))
    import torch

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    x = np.load(os.path.join(cdir, "input.npy"))
    model = sfr.build_fusion(monai, cfg, list(x.shape[2:]))
    sd, _ = cam.read_safetensors(os.path.join(cdir, "model.safetensors"))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()}, strict=True)
    y = model(torch.from_numpy(x)).numpy()
    ref = np.load(os.path.join(cdir, "author.npy"))
    return {"max_abs_diff": float(np.abs(y - ref).max()), "bit_identical": bool(np.array_equal(y, ref)),
            "monai": monai.__version__}


# ---------------------------------------------------------------------------------------------------------------


def self_test() -> int:
    ok = True
    for i in range(60):
        a1, a2 = draw_author_case(5, i), draw_author_case(5, i)
        ok &= a1 == a2
        sfr.author_supports(a1["config"])
        r1, r2 = draw_reference_case(5, i), draw_reference_case(5, i)
        ok &= r1 == r2
        for c in (a1, r1):
            cfg = c["config"]
            sfr.resolve(cfg)
            for s_, h in enumerate(cfg["num_heads"]):
                ok &= (cfg["feature_size"] * 2**s_) % h == 0
            sp = c["input_shape"][2:]
            ok &= all(v % 32 == 0 for v in sp) and int(np.prod(sp)) // 32**3 > 1
            ok &= c["input_shape"][1] == cfg["in_channels"]
            json.loads(json.dumps(cfg))
    seen = {draw_reference_case(5, i)["config"]["variant"] for i in range(5)}
    ok &= seen == set(sfr.VARIANTS)
    pools = {draw_author_case(5, i)["config"]["skip_pool"] for i in range(20)}
    ok &= pools == {"max", "avg"}
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", help="the swinfer executable")
    ap.add_argument("-n", type=int, default=6, help="number of random configurations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", action="store_true",
                    help="all spec variants via swin_fusion_reference.py instead of the author's od code")
    ap.add_argument("--author-code", help=f"path of {sfr.AUTHOR_FILE} (default: extract from the local mirror)")
    ap.add_argument("--cross-check", action="store_true",
                    help="author mode: also run the reference on every author state_dict and report the diff")
    ap.add_argument("--backends", nargs="+", default=["cpu"])
    ap.add_argument("--layouts", nargs="+", default=["ndhwc"])
    ap.add_argument("--workdir", help="keep the case files here (default: a temporary folder, removed)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per swinfer run")
    ap.add_argument("--no-fp64", action="store_true", help="skip the float64 rerun (noise-floor column)")
    ap.add_argument("--prepare-only", action="store_true", help="only the Python half: draw, build, write files")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: one case as JSON, in a subprocess
    ap.add_argument("--cross", help=argparse.SUPPRESS)  # internal: cross-check one case directory
    a = ap.parse_args()

    if a.self_test:
        return self_test()
    if a.prepare:
        case = json.loads(a.prepare)
        print("RESULT " + json.dumps(prepare_case(case, case["dir"], not a.no_fp64, case.get("author_code"))))
        return 0
    if a.cross:
        print("RESULT " + json.dumps(cross_check(a.cross)))
        return 0
    if not a.prepare_only and not a.binary:
        ap.error("--binary is required (or use --prepare-only / --self-test)")
    if a.binary and not os.path.exists(a.binary):
        ap.error(f"no such binary: {a.binary}")
    if a.cross_check and a.reference:
        ap.error("--cross-check applies to the author mode only")
    author = None if a.reference else sfr.author_code_path(a.author_code)

    work = a.workdir or tempfile.mkdtemp(prefix="swinfer_fusion_check_")
    os.makedirs(work, exist_ok=True)
    rows, failed = [], False
    try:
        for i in range(a.n):
            case = draw_reference_case(a.seed, i) if a.reference else draw_author_case(a.seed, i)
            cdir = os.path.join(work, f"case_{i}")
            case["dir"] = cdir
            if author:
                case["author_code"] = author
            info, err = cam.run_subprocess_result(__file__, "--prepare", json.dumps(case),
                                                  *(["--no-fp64"] * a.no_fp64))
            if info is None:
                print(f"case {i}: Python side failed ({summary(case)})\n{err[-3000:]}")
                failed = True
                continue
            noise = "-" if info["fp64_noise"] is None else f"{info['fp64_noise']:.2g}"
            line = (f"case {i}: {summary(case)}  {case['mode']} (MONAI {info['monai']}) {info['seconds']:.1f}s "
                    f"params {info['params']:,} max|logit| {info['max_abs']:.4g} fp32-vs-fp64 {noise}")
            if a.cross_check:
                x, err = cam.run_subprocess_result(__file__, "--cross", cdir)
                if x is None:
                    line += "  cross-check ERROR"
                    print(err[-2000:])
                    failed = True
                else:
                    line += f"  reference-vs-author {x['max_abs_diff']:.3g} (bit-identical {x['bit_identical']})"
                    failed |= x["max_abs_diff"] > REL_TOL * info["max_abs"]
            print(line, flush=True)
            if a.prepare_only:
                continue
            ref = np.load(os.path.join(cdir, expected_name(case)))
            failed |= cam.run_binary(a, cdir, i, summary(case), info["max_abs"], noise, ref, rows)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)

    cam.print_results(rows, 80)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
