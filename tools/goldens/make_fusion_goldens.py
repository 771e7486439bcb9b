#!/usr/bin/python3
"""Writes the Swin Fusion UNETR golden cases tests/data/goldens/fusion_<name>/ (same format as make_goldens.py).

    /usr/bin/python3 tools/goldens/make_fusion_goldens.py                       # all fusion cases
    /usr/bin/python3 tools/goldens/make_fusion_goldens.py --only fusion_od fusion_1v1
    /usr/bin/python3 tools/goldens/make_fusion_goldens.py --verify              # rebuild from case.json, compare
    ... --author-code PATH/swin_fusion_overdrive.py                             # else taken from the local mirror

Cases with "source": "author" run the author's published od code (github.com/AwikDhar/SwinFusionUNETR,
swin_fusion_overdrive.py, loaded at run time and never stored here; its MONAI imports resolve to MONAI 1.5.0).
Afterwards the reference (swin_fusion_reference.py, MONAI 1.4.0 backbone) is rebuilt from case.json alone and its
max |reference - author| is stored as "reference_vs_author_max_abs". Cases with "source": "reference" run the
reference (spec-reconstructed variants: od_large, 2_v2, 1_v1, 2_v1).

Weights and inputs come from the formula (tools/goldens/formula.py), keyed by state_dict name, exactly as in the
other golden cases: case.json lists every tensor with its role/offset/scale, so tests/model/golden_case.hpp
rebuilds the weights by key. Each case runs in its own subprocess (one MONAI release per process), in float32,
eval mode, torch.no_grad(), 2 threads; deterministic. The shared README.md / manifest.json are not touched
(tools/goldens/verify_goldens.py rebuilds every manifest case with MONAI's plain SwinUNETR; these cases have
their own --verify here).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import formula  # noqa: E402
import make_goldens as mg  # noqa: E402
import swin_common as sc  # noqa: E402
import swin_fusion_reference as sfr  # noqa: E402

DEFAULT_OUT = mg.DEFAULT_OUT
AUTHOR_MONAI = "1.5.0"
ALL_INTER = [n for n, _, _ in sfr.FUSION_INTERMEDIATES]

CASES = {
    "fusion_od": dict(
        source="author",
        config=sfr.make_fusion_config("od"),
        input=[1, 1, 64, 64, 32], params=sc.STRESSED, intermediates=ALL_INTER,
        covers="Author's od (published code): fused skips at levels 2..6 from raw x_in/hs with per-(level, "
        "source) branch UnetResBlocks, MaxPool 2..32, conv_final k1; ps6 replaces encoder10; legacy merging. "
        "intermediates/: fuse2..fuse6 (poolskip1..5 outputs) and dec3..dec0.",
    ),
    "fusion_od_avg": dict(
        source="author",
        config=sfr.make_fusion_config("od", skip_pool="avg", depths=[2, 1, 1, 2], num_heads=[2, 4, 8, 8]),
        input=[1, 1, 32, 64, 64], params=sc.STRESSED,
        covers="Author's od with skip_pool 'avg' (AvgPool3d), depths (2,1,1,2), heads (2,4,8,8) (head dims "
        "6/6/6/12), input 32x64x64 (bottleneck 1x2x2: the stage-1 pool 32 window equals the whole depth).",
    ),
    "fusion_od_large": dict(
        source="reference",
        config=sfr.make_fusion_config("od_large", in_channels=2, branch_channels=[6, 20, 36, 40, 96]),
        input=[1, 2, 64, 64, 32], params=sc.STRESSED,
        covers="od_large (reference): non-default branch widths [6,20,36,40,96] at fs12 (x_in 2->6 widened, hs0 "
        "12->20, hs1 24->36, hs2 48->40 narrowed, hs3 96->96 identity residual), in_channels 2 (widened x_in "
        "branch); conv_final inputs 18/50/110/198/390.",
    ),
    "fusion_2v2_k3_maxavg": dict(
        source="reference",
        config=sfr.make_fusion_config("2_v2", skip_pool="maxavg", final_kernel_size=3),
        input=[1, 1, 64, 64, 32], params=sc.STRESSED,
        covers="2_v2 (reference): all vanilla blocks, fused levels 2..5 from the 2 stages above (raw, own branch "
        "block per level), own = enc1/enc2/enc3/hs3, MaxAvgPool (pooled channels doubled), conv_final k3.",
    ),
    "fusion_2v2_k1": dict(
        source="reference",
        config=sfr.make_fusion_config("2_v2", out_channels=1),
        input=[1, 1, 64, 32, 64], params=sc.STRESSED,
        covers="2_v2 (reference) with MaxPool and conv_final k1 (the thesis's 66M model), out_channels 1, "
        "input 64x32x64.",
    ),
    "fusion_1v1": dict(
        source="reference",
        config=sfr.make_fusion_config("1_v1", out_channels=1),
        input=[1, 1, 64, 64, 32], params=sc.STRESSED,
        covers="1_v1 design A (reference): no branch blocks; level L pools the vanilla skip of stage L-1 "
        "(x_in, enc1, enc2, enc3) and concatenates its own (enc1, enc2, enc3, hs3); conv_final k1.",
    ),
    "fusion_2v1": dict(
        source="reference",
        config=sfr.make_fusion_config("2_v1", out_channels=1),
        input=[1, 1, 32, 64, 64], params=sc.STRESSED,
        covers="2_v1 design A (reference): like 1_v1 but pooling the 2 stages above (x_in pooled by 2 and 4).",
    ),
}


def build(source, cfg, spatial, author_path):
    """(monai module, model) for a case's source."""
    from monai_select import import_monai

    if source == "author":
        monai = import_monai(AUTHOR_MONAI)
        return monai, sfr.build_author(sfr.import_author(author_path), cfg, spatial)
    monai = import_monai(sc.monai_version_for(cfg))
    return monai, sfr.build_fusion(monai, cfg, spatial)


def run_case(name, out_root, author_path):
    d = CASES[name]
    cfg, shape, src = d["config"], d["input"], d["source"]
    torch = mg.setup_torch()
    monai, model = build(src, cfg, shape[2:], author_path)
    recs = mg.formula_state(model, d["params"], sc.window_tuple(cfg))
    x = torch.from_numpy(mg.input_array(shape))
    want = d.get("intermediates", [])
    y, inter = sfr.capture(model, x, want)
    y = y.float().numpy()
    assert y.dtype == np.float32 and list(y.shape) == [shape[0], cfg["out_channels"]] + shape[2:]
    assert np.isfinite(y).all()
    y64, inter64 = sfr.capture(model.double(), x.double(), want)
    noise = float(np.abs(y.astype(np.float64) - y64.numpy()).max())
    cdir = os.path.join(out_root, name)
    os.makedirs(cdir, exist_ok=True)
    mg.save_npy(os.path.join(cdir, "logits.npy"), y)
    meta = {
        "monai_version": monai.__version__,
        "torch_version": torch.__version__,
        "source": src,
    }
    if src == "author":
        meta["author_code"] = sfr.author_code_info(author_path)
        meta["author_code"]["note"] = ("loaded at run time, not stored in this repository; its MONAI imports "
                                       f"resolve to MONAI {monai.__version__}")
    meta.update({
        "config": cfg,
        "params": d["params"],
        "parameter_count": sfr.parameter_count(cfg),
        "fusion_plan": sfr.resolve(cfg)["plan"],
        "input": {"key": "input", "shape": shape, "dtype": "float32", "offset": 0.0, "scale": 1.0},
        "tensors": recs,
        "logits": {"file": "logits.npy", "shape": list(y.shape), "dtype": "float32"},
        "logits_max_abs": float(np.abs(y).max()),
        "monai_fp32_vs_fp64_max_abs": noise,
        "covers": d["covers"],
        "generator": "/usr/bin/python3 tools/goldens/make_fusion_goldens.py --only " + name,
    })
    assert sum(int(np.prod(e["shape"])) for e in recs if e["role"] != "relative_position_index") \
        == meta["parameter_count"], "closed-form parameter count differs from the model"
    if inter:
        idir = os.path.join(cdir, "intermediates")
        os.makedirs(idir, exist_ok=True)
        what = {n: (p, w) for n, p, w in sfr.FUSION_INTERMEDIATES}
        lst = []
        for n in [m for m in ALL_INTER if m in inter]:
            a = inter[n]
            mg.save_npy(os.path.join(idir, f"{n}.npy"), a)
            lst.append({"name": n, "file": f"intermediates/{n}.npy", "shape": list(a.shape), "module": what[n][0],
                        "what": what[n][1], "max_abs": float(np.abs(a).max()),
                        "monai_fp32_vs_fp64_max_abs": float(np.abs(a.astype(np.float64) - inter64[n]).max())})
        meta["intermediates"] = lst
    mg.write_json(os.path.join(cdir, "case.json"), meta)
    return {"case": name, "source": src, "monai": monai.__version__, "max_abs": meta["logits_max_abs"],
            "noise": noise, "params": meta["parameter_count"]}


def rebuild(cdir, use, author_path):
    """Rebuilds a case from case.json alone with `use` (author | reference); max|diff| and bit identity vs the
    stored logits and intermediates."""
    with open(os.path.join(cdir, "case.json")) as f:
        meta = json.load(f)
    torch = mg.setup_torch()
    cfg, shape = meta["config"], meta["input"]["shape"]
    monai, model = build(use, cfg, shape[2:], author_path)
    sd = {k: torch.from_numpy(v) for k, v in formula.tensors_of_case(meta["tensors"], sc.window_tuple(cfg)).items()}
    model.load_state_dict(sd, strict=True)
    inp = meta["input"]
    x = torch.from_numpy(formula.formula_array(inp["key"], shape, inp["offset"], inp["scale"]))
    names = [i["name"] for i in meta.get("intermediates", [])]
    y, inter = sfr.capture(model, x, names)
    ref = np.load(os.path.join(cdir, meta["logits"]["file"]))
    ok = bool(np.array_equal(y.numpy(), ref))
    worst = float(np.abs(y.numpy() - ref).max())
    for i in meta.get("intermediates", []):
        a = np.load(os.path.join(cdir, i["file"]))
        ok &= bool(np.array_equal(a, inter[i["name"]]))
        worst = max(worst, float(np.abs(a - inter[i["name"]]).max()))
    return {"case": os.path.basename(cdir), "use": use, "monai": monai.__version__, "bit_identical": ok,
            "max_abs_diff": worst, "max_abs_logit": float(np.abs(ref).max())}


def spawn(args):
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = [s for s in p.stdout.splitlines() if s.startswith("RESULT ")]
    if p.returncode or not line:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-5000:])
        raise SystemExit(f"worker {args[:2]} failed")
    return json.loads(line[0][7:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="*", help="cases to (re)generate or verify (default all)")
    ap.add_argument("--verify", action="store_true", help="rebuild each case from case.json and compare")
    ap.add_argument("--author-code", help=f"path of {sfr.AUTHOR_FILE} (default: extract from the local mirror)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--rebuild", nargs=2, metavar=("CASE", "USE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print("RESULT " + json.dumps(run_case(a.worker, a.out, a.author_code)))
        return 0
    if a.rebuild:
        print("RESULT " + json.dumps(rebuild(os.path.join(a.out, a.rebuild[0]), a.rebuild[1], a.author_code)))
        return 0
    todo = a.only or list(CASES)
    for n in todo:
        if n not in CASES:
            raise SystemExit(f"unknown case {n}; known: {list(CASES)}")
    author = sfr.author_code_path(a.author_code) if any(CASES[n]["source"] == "author" for n in todo) else None
    aargs = ["--out", a.out] + (["--author-code", author] if author else [])
    bad = 0
    if a.verify:
        for n in todo:
            uses = [CASES[n]["source"]] + (["reference"] if CASES[n]["source"] == "author" else [])
            for use in uses:
                r = spawn(["--rebuild", n, use] + aargs)
                print(f"{n:22s} rebuilt with {use:9s} (MONAI {r['monai']}): bit-identical {r['bit_identical']}  "
                      f"max|diff| {r['max_abs_diff']:.3g}", flush=True)
                bad += r["max_abs_diff"] > 1e-5 * max(1.0, r["max_abs_logit"])
        return 1 if bad else 0
    formula.self_check()
    for n in todo:
        r = spawn(["--worker", n] + aargs)
        line = (f"{n:22s} {r['source']:9s} MONAI {r['monai']}  params {r['params']:>9,}  max|logit| "
                f"{r['max_abs']:.4f}  fp32-vs-fp64 {r['noise']:.3g}")
        if r["source"] == "author":
            x = spawn(["--rebuild", n, "reference"] + aargs)
            p = os.path.join(a.out, n, "case.json")
            with open(p) as f:
                meta = json.load(f)
            meta["reference_vs_author_max_abs"] = x["max_abs_diff"]
            meta["reference_vs_author_bit_identical"] = x["bit_identical"]
            meta["reference_monai_version"] = x["monai"]
            mg.write_json(p, meta)
            line += f"  reference-vs-author {x['max_abs_diff']:.3g} (bit-identical {x['bit_identical']})"
            bad += x["max_abs_diff"] > 1e-5 * max(1.0, x["max_abs_logit"])
        print(line, flush=True)
    total = sum(mg.folder_bytes(os.path.join(a.out, n)) for n in CASES if os.path.isdir(os.path.join(a.out, n)))
    print(f"fusion cases: {total / 2**20:.2f} MiB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
