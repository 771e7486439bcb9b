#!/usr/bin/python3
"""Regenerates tests/data/goldens/ (every case, formula_samples.json, manifest.json, README.md).

    /usr/bin/python3 tools/goldens/make_goldens.py            # all cases
    /usr/bin/python3 tools/goldens/make_goldens.py --only stressed aniso

Each case runs in its own subprocess because a process can hold only one MONAI release (1.4.0 for the legacy
merging order, 1.5.0 for everything else, 1.6.1 for the newest-release check). Weights and inputs come from
the formula in formula.py; only configurations and MONAI's outputs are stored. MONAI runs in eval mode under
torch.no_grad() in float32 with torch.set_num_threads(2). Deterministic: a rerun on the same machine rewrites
identical files.
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
import swin_common as sc  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "goldens")
NEWEST = "1.6.1"

S32 = [32, 32, 64]

# name -> definition. "input": [N, C, D, H, W].
CASES = {
    "default_like": dict(
        config=sc.make_config(), input=[1, 1] + S32, params=sc.DEFAULT_LIKE,
        covers="MONAI-default-like parameters (LN 1/0, zero biases, small tables); stage 3/4 windows clamped "
        "(4x4x7 shift (0,0,3); 2x2x4), truncated relative-position index.",
    ),
    "stressed": dict(
        config=sc.make_config(), input=[1, 1] + S32, params=sc.STRESSED, intermediates=True,
        covers="Stressed LN/bias/table parameters so every quirk is visible; intermediates/ holds every stage.",
    ),
    "aniso": dict(
        config=sc.make_config(), input=[1, 1, 96, 64, 32], params=sc.STRESSED,
        covers="Anisotropic 96x64x32: partial per-axis clamps (stage 3 (7,7,4), stage 4 (6,4,2)), padding 48->49.",
    ),
    "v2_mergingv2": dict(
        config=sc.make_config(use_v2=True, downsample="mergingv2"), input=[1, 1] + S32, params=sc.STRESSED,
        covers="SwinUNETR-v2 residual conv blocks (layersNc) and the lexicographic mergingv2 order.",
    ),
    "legacy": dict(
        config=sc.make_config(downsample="merging_legacy"), input=[1, 1] + S32, params=sc.STRESSED,
        covers="'merging_legacy' = MONAI 1.4.0 downsample='merging' (duplicate-slot order "
        "000,100,010,001,101,010,001,111), computed with MONAI 1.4.0.",
    ),
    "multichannel": dict(
        config=sc.make_config(in_channels=4, out_channels=3), input=[1, 4] + S32, params=sc.STRESSED,
        covers="in_channels 4 (BraTS-like), out_channels 3.",
    ),
    "batch2": dict(
        config=sc.make_config(), input=[2, 1] + S32, params=sc.STRESSED,
        covers="Batch of 2: per-sample InstanceNorm statistics, mask shared across the batch.",
    ),
    "options": dict(
        config=sc.make_config(
            window_size=[5, 7, 3], qkv_bias=False, mlp_ratio=2.0, num_heads=[2, 4, 4, 8], normalize=False,
            depths=[1, 2, 1, 2],
        ),
        input=[1, 1] + S32, params=sc.STRESSED,
        covers="Per-axis window (5,7,3) (table 585 rows, index 105x105), qkv_bias False, mlp_ratio 2, "
        "head dims 6/6/12/12 (non-power-of-two q scale), normalize False, depths (1,2,1,2).",
    ),
    "fs24": dict(
        config=sc.make_config(feature_size=24), input=[1, 1, 64, 64, 64], params=sc.STRESSED,
        covers="feature_size 24 (head dim 8), 64^3: stage 4 window clamped to 4^3 (n=64 truncated index).",
    ),
}
PT_CASE = "pt_checkpoint"
NEWEST_CASE = "newest"
NEWEST_CHECK = ["stressed", "v2_mergingv2", "options", "aniso"]


def save_npy(path, arr):
    arr = np.ascontiguousarray(arr)
    np.save(path, arr, allow_pickle=False)


def write_json(path, doc):
    """JSON with one line per list element of "tensors" / "intermediates" (valid JSON, diff-friendly)."""
    def enc(v, ind):
        pad = " " * ind
        if isinstance(v, dict):
            if not v:
                return "{}"
            items = [f'{pad} {json.dumps(k)}: {enc(x, ind + 1)}' for k, x in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return "[\n" + ",\n".join(pad + "  " + json.dumps(x, ensure_ascii=False) for x in v) + "\n" + pad + "]"
        return json.dumps(v, ensure_ascii=False)

    with open(path, "w", encoding="utf-8") as f:
        f.write(enc(doc, 0) + "\n")


def setup_torch():
    import torch

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    return torch


def formula_state(model, params, window):
    """Per-tensor records (offset/scale by role) and the formula state_dict; checks MONAI's index buffers."""
    import torch

    recs = sc.tensor_roles(model)
    sd = model.state_dict()
    new = {}
    for e in recs:
        if e["role"] == "relative_position_index":
            mine = formula.relative_position_index(window)
            buf = sd[e["key"]].numpy()
            if not np.array_equal(buf, mine):
                raise AssertionError(f"MONAI buffer {e['key']} differs from the spec 3.4 formula")
            new[e["key"]] = sd[e["key"]]
            continue
        off, scl = sc.offset_scale(e, params)
        e["offset"], e["scale"] = off, scl
        new[e["key"]] = torch.from_numpy(formula.formula_array(e["key"], e["shape"], off, scl))
    model.load_state_dict(new, strict=True)
    # the model now holds exactly the formula values
    for e in recs:
        if e["role"] != "relative_position_index":
            assert np.array_equal(model.state_dict()[e["key"]].numpy(),
                                  formula.formula_array(e["key"], e["shape"], e["offset"], e["scale"]))
    return recs


def input_array(shape):
    return formula.formula_array("input", shape, 0.0, 1.0)


def run_case(name, out_root, monai_version=None):
    d = CASES[name]
    cfg = d["config"]
    ver = monai_version or sc.monai_version_for(cfg)
    from monai_select import import_monai

    monai = import_monai(ver)
    torch = setup_torch()
    shape = d["input"]
    model = sc.build_model(monai, cfg, shape[2:])
    recs = formula_state(model, d["params"], sc.window_tuple(cfg))
    x = torch.from_numpy(input_array(shape))
    want = None
    if d.get("intermediates"):
        want = [n for n, _, _ in sc.INTERMEDIATES if n not in ("enc0", "out")]
    y, inter = sc.capture(model, x, names=want if want is not None else [])
    y = y.float().numpy()
    assert y.dtype == np.float32 and list(y.shape) == [shape[0], cfg["out_channels"]] + shape[2:]
    assert np.isfinite(y).all()
    # the same MONAI model in float64: how far MONAI's own float32 result is from the exact one
    y64, inter64 = sc.capture(model.double(), x.double(), names=want if want is not None else [])
    noise = float(np.abs(y.astype(np.float64) - y64.numpy()).max())
    case_name = name if monai_version is None else NEWEST_CASE
    cdir = os.path.join(out_root, case_name)
    os.makedirs(cdir, exist_ok=True)
    save_npy(os.path.join(cdir, "logits.npy"), y)
    meta = {
        "monai_version": monai.__version__,
        "torch_version": torch.__version__,
        "config": cfg,
        "params": d["params"],
        "input": {"key": "input", "shape": shape, "dtype": "float32", "offset": 0.0, "scale": 1.0},
        "tensors": recs,
        "logits": {"file": "logits.npy", "shape": list(y.shape), "dtype": "float32"},
        "logits_max_abs": float(np.abs(y).max()),
        "monai_fp32_vs_fp64_max_abs": noise,
        "covers": d["covers"],
    }
    if inter:
        idir = os.path.join(cdir, "intermediates")
        os.makedirs(idir, exist_ok=True)
        lst = []
        what = {n: (p, w) for n, p, w in sc.INTERMEDIATES}
        order = []
        for n, _, _ in sc.INTERMEDIATES:
            order += [f"hs{j}" for j in range(5)] if n == "hs" else [n]
        for n in [m for m in order if m in inter]:
            a = inter[n]
            save_npy(os.path.join(idir, f"{n}.npy"), a)
            p, w = what["hs" if n.startswith("hs") else n]
            lst.append({"name": n, "file": f"intermediates/{n}.npy", "shape": list(a.shape), "module": p,
                        "what": w if not n.startswith("hs") else f"hs[{n[2:]}]: {w}",
                        "max_abs": float(np.abs(a).max()),
                        "monai_fp32_vs_fp64_max_abs": float(np.abs(a.astype(np.float64) - inter64[n]).max())})
        meta["intermediates"] = lst
        meta["intermediates_omitted"] = ["enc0 (full resolution, 3 MB)", "out (decoder1, full resolution, 3 MB)"]
    write_json(os.path.join(cdir, "case.json"), meta)
    return {"case": case_name, "monai": monai.__version__, "max_abs": meta["logits_max_abs"], "noise": noise}


def run_newest_check(out_root):
    """Recomputes NEWEST_CHECK cases with MONAI NEWEST from the same formula weights; compares with the files."""
    from monai_select import import_monai

    monai = import_monai(NEWEST)
    torch = setup_torch()
    res = []
    for name in NEWEST_CHECK:
        if not os.path.exists(os.path.join(out_root, name, "logits.npy")):
            continue
        d = CASES[name]
        model = sc.build_model(monai, d["config"], d["input"][2:])
        formula_state(model, d["params"], sc.window_tuple(d["config"]))
        y = model(torch.from_numpy(input_array(d["input"]))).numpy()
        ref = np.load(os.path.join(out_root, name, "logits.npy"))
        res.append({"case": name, "max_abs_diff": float(np.abs(y - ref).max()),
                    "bit_identical": bool(np.array_equal(y, ref))})
    return {"monai": monai.__version__, "results": res}


def run_pt_checkpoint(out_root):
    """A real torch.save file: MONAI 1.5.0 default init after torch.manual_seed(0), stored as float16."""
    from monai_select import import_monai

    monai = import_monai("1.5.0")
    torch = setup_torch()
    cfg = sc.make_config()
    shape = [1, 1] + S32
    torch.manual_seed(0)
    model = sc.build_model(monai, cfg, shape[2:])
    sd = model.state_dict()
    recs = sc.tensor_roles(model)
    shared_index = None
    ckpt_sd = {}
    for k, v in sd.items():
        if v.dtype == torch.int64:
            # All 8 relative_position_index buffers are equal (same configured window): store one storage that
            # every entry references, as torch.save does for tensors sharing storage (keeps the file < 9 MB).
            if shared_index is None:
                shared_index = v.clone()
            assert torch.equal(v, shared_index)
            ckpt_sd["module." + k] = shared_index
        else:
            ckpt_sd["module." + k] = v.detach().half()
    optimizer = {
        "state": {0: {"step": torch.tensor(5.0), "exp_avg": torch.zeros(3)}},
        "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-5,
                          "amsgrad": False, "params": [0, 1, 2]}],
    }
    cdir = os.path.join(out_root, PT_CASE)
    os.makedirs(cdir, exist_ok=True)
    path = os.path.join(cdir, "model.pt")
    torch.save({"epoch": 7, "state_dict": ckpt_sd, "optimizer": optimizer}, path)
    # reload exactly as a user would and run MONAI with the float16-rounded weights widened to float32
    loaded = torch.load(path, map_location="cpu")
    back = {k[len("module."):]: (v.float() if v.is_floating_point() else v) for k, v in loaded["state_dict"].items()}
    model.load_state_dict(back, strict=True)
    x = torch.from_numpy(input_array(shape))
    y = model(x).numpy()
    save_npy(os.path.join(cdir, "logits.npy"), y)
    noise = float(np.abs(y.astype(np.float64) - model.double()(x.double()).numpy()).max())
    for e in recs:
        e["dtype"] = "float16" if e["dtype"] == "float32" else e["dtype"]
        e["role"] = "checkpoint" if e["role"] != "relative_position_index" else e["role"]
        e.pop("fan_in", None)
    meta = {
        "monai_version": monai.__version__,
        "torch_version": torch.__version__,
        "config": cfg,
        "params": "checkpoint",
        "checkpoint": {
            "file": "model.pt",
            "format": "torch.save zip (pickle protocol 2)",
            "wrapper_key": "state_dict",
            "key_prefix": "module.",
            "other_top_level_keys": ["epoch", "optimizer"],
            "float_dtype": "float16",
            "note": "MONAI default init after torch.manual_seed(0), rounded to float16; the 8 "
                    "relative_position_index entries (int64) all reference one shared storage.",
        },
        "input": {"key": "input", "shape": shape, "dtype": "float32", "offset": 0.0, "scale": 1.0},
        "tensors": recs,
        "logits": {"file": "logits.npy", "shape": list(y.shape), "dtype": "float32"},
        "logits_max_abs": float(np.abs(y).max()),
        "monai_fp32_vs_fp64_max_abs": noise,
        "covers": "Loading a real torch.save checkpoint (zip/pickle, float16 storages, module. prefix, wrapper "
        "dict with non-tensor entries, shared storage); logits from MONAI with the weights widened to float32.",
    }
    write_json(os.path.join(cdir, "case.json"), meta)
    return {"case": PT_CASE, "monai": monai.__version__, "max_abs": meta["logits_max_abs"], "noise": noise,
            "file_bytes": os.path.getsize(path)}


def write_formula_samples(out_root):
    keys = ["input", "", "a", "swinViT.patch_embed.proj.weight",
            "swinViT.layers1.0.blocks.1.attn.relative_position_bias_table", "out.conv.conv.bias",
            "cl\u00e9_\u4e2d\u6587"]
    idx = [0, 1, 2, 7, 1000, 65535, 123456789, (1 << 32) + 3, (1 << 62) + 11]
    regimes = [(0.0, 1.0), (1.0, 0.25), (0.0, 0.125), (0.0, 0.5), (0.0, 2.0**-6), (1.0, 0.0), (0.0, 0.0),
               (-3.0, 4.0), (0.5, 2.0**-10)]
    samples = []
    j = 0
    for key in keys:
        for n, i in enumerate(idx):
            off, scl = regimes[(j + n) % len(regimes)]
            v = formula.value_scalar(key, i, off, scl)
            vec = formula.formula_array(key, [min(i + 1, 64)], off, scl)  # numpy path agrees (small i only)
            if i < 64:
                assert formula.f32_bits(vec[i]) == formula.f32_bits(v)
            samples.append({
                "key": key, "index": i, "offset_bits": formula.f32_bits(off), "scale_bits": formula.f32_bits(scl),
                "offset": float(off).hex(), "scale": float(scl).hex(),
                "k24": formula.unit_int(formula.fnv1a64(key), i),
                "value_bits": formula.f32_bits(v), "value": float(v).hex(),
            })
        j += 1
    hashes = [{"key": k, "fnv1a64": formula.fnv1a64(k)} for k in keys]
    # whole-tensor checks: first 16 values and a float64 sum of a longer run
    runs = []
    for key, n, off, scl in [("input", 4096, 0.0, 1.0), ("decoder1.conv_block.conv1.conv.weight", 1000, 0.0, 0.0625),
                             ("swinViT.layers2.0.blocks.0.norm1.weight", 24, 1.0, 0.25)]:
        a = formula.formula_array(key, [n], off, scl)
        runs.append({"key": key, "count": n, "offset_bits": formula.f32_bits(off),
                     "scale_bits": formula.f32_bits(scl), "head_bits": [formula.f32_bits(x) for x in a[:16]],
                     "sum_f64": float(np.sum(a.astype(np.float64))).hex()})
    rpi = []
    for w in [(7, 7, 7), (5, 7, 3), (6, 6, 4), (2, 3, 4)]:
        m = formula.relative_position_index(w)
        picks = [(0, 0), (0, m.shape[0] - 1), (m.shape[0] - 1, 0), (6, 0), (m.shape[0] // 2, 3), (1, 2)]
        rpi.append({"window": list(w), "n": int(m.shape[0]), "sum": int(m.sum()),
                    "entries": [[int(a), int(b), int(m[a, b])] for a, b in picks]})
    doc = {
        "about": "Formula-weight samples computed by tools/goldens/formula.py (numpy float32). value_bits / "
                 "offset_bits / scale_bits are IEEE-754 binary32 bit patterns; value/offset/scale are the same "
                 "numbers as hex floats. k24 is the 24-bit draw z>>40. relative_position_index: spec 3.4 "
                 "formula for a configured window (entries are [i, j, value]), checked against MONAI's buffers.",
        "hashes": hashes,
        "samples": samples,
        "runs": runs,
        "relative_position_index": rpi,
    }
    with open(os.path.join(out_root, "formula_samples.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def folder_bytes(p):
    t = 0
    for r, _, fs in os.walk(p):
        for f in fs:
            t += os.path.getsize(os.path.join(r, f))
    return t


def write_readme(out_root, results, newest):
    import torch

    lines = [
        "# Golden data for the C++ tests",
        "",
        "Generated by `/usr/bin/python3 tools/goldens/make_goldens.py` (deterministic; one command rewrites "
        "everything here, about 5 minutes on 2 idle cores; `--only CASE...` for some cases, `--index-only` for "
        "this README, manifest.json and formula_samples.json). Do not edit by hand. "
        "`/usr/bin/python3 tools/goldens/verify_goldens.py` rebuilds every case from case.json alone and checks "
        "MONAI reproduces the stored outputs bit for bit.",
        "",
        f"Reference: MONAI 1.5.0 (1.4.0 for `legacy`) on Debian python3-torch {torch.__version__} (1.13.1), "
        "CPU float32, eval mode, torch.no_grad(), torch.set_num_threads(2). Install: "
        "`python3 -m pip install --break-system-packages --no-deps monai==1.5.0 einops`, "
        "`python3 -m pip install --no-deps --target /opt/monai-1.4.0 monai==1.4.0` (and the same for 1.6.1).",
        "",
        "Swin Fusion UNETR cases (`fusion_*`, same format plus `source`, `parameter_count` and `fusion_plan`) are "
        "written by `tools/goldens/make_fusion_goldens.py` from the author's published code (`source: author`, "
        "loaded at run time, never stored here) or from the spec reference `tools/goldens/swin_fusion_reference.py`; "
        "`make_fusion_goldens.py --verify` rebuilds them bit for bit.",
        "",
        "## Layout",
        "",
        "- `<case>/case.json`: `config` (MONAI SwinUNETR kwargs + `downsample` in merging | merging_legacy | "
        "mergingv2), `input` (shape, formula key \"input\", offset 0, scale 1), `tensors` (state_dict order: "
        "key, shape, dtype, role, offset, scale), `logits_max_abs`, `covers`.",
        "- `<case>/logits.npy`: float32, C order, (N, out_channels, D, H, W).",
        "- Weights are not stored: element i of tensor K is `float32(offset) + float32(scale) * u(K, i)` "
        "(tools/goldens/formula.py, tests/support/formula_weights.hpp). Tensors with role "
        "`relative_position_index` carry no offset/scale: compute them from spec section 3.4 for the configured "
        "window (the generator asserts MONAI's buffers equal that formula).",
        "- Roles and (offset, scale): `weight` (0, power of two nearest sqrt(3/fan_in)); stressed: LN weight "
        "(1, 1/4), LN bias and all biases (0, 1/8), relative_position_bias_table (0, 1/2); default_like: LN "
        "weight (1, 0), biases (0, 0), tables (0, 2^-6).",
        "- `formula_samples.json`: hashes, sample values (bit patterns and hex floats) and index samples "
        "checked by tests/support/test_formula.cpp.",
        "- `stressed/intermediates/*.npy`: float32 NCDHW activations (list and module paths in its case.json); "
        "enc0 and decoder1's output (full resolution, 3 MB each) are left out.",
        "",
        "## Cases",
        "",
        "`fp32 vs fp64` is max |MONAI float32 - MONAI float64| on the logits for the same weights: the noise "
        "floor of the golden itself. Inputs of 32x32x64 leave only 2 bottleneck voxels, where encoder10's "
        "InstanceNorm over 2 values amplifies float32 rounding (about 1e-4, arising in dec4); cases with 6-8 "
        "bottleneck voxels sit near 1e-5. Set test tolerances from this column (e.g. max(2e-5 * max|logit|, "
        "4 * fp32-vs-fp64)), not from a single number.",
        "",
        "| case | MONAI | input | max abs logit | fp32 vs fp64 | covers |",
        "|---|---|---|---:|---:|---|",
    ]
    for r in results:
        with open(os.path.join(out_root, r["case"], "case.json")) as f:
            meta = json.load(f)
        lines.append(f"| {r['case']} | {meta['monai_version']} | {'x'.join(map(str, meta['input']['shape']))} | "
                     f"{meta['logits_max_abs']:.4f} | {meta['monai_fp32_vs_fp64_max_abs']:.2g} | {meta['covers']} |")
    lines += ["", "## MONAI 1.6.1", ""]
    if newest is not None:
        for r in newest["results"]:
            lines.append(f"- `{r['case']}` recomputed with MONAI {newest['monai']}: max abs diff "
                         f"{r['max_abs_diff']:.3g}, bit-identical: {r['bit_identical']}.")
        if all(r["bit_identical"] for r in newest["results"]):
            lines.append("")
            lines.append(f"MONAI {newest['monai']} gives bit-identical logits to 1.5.0 for SwinUNETR (with its new "
                         "options `use_hyena`/`use_flash_attention` left at their default False), so no separate "
                         "`newest` case is stored. On torch 1.13 it imports only with torch.jit.interface made a "
                         "no-op (tools/goldens/monai_select.py).")
    lines += ["", f"Total size of this folder: {folder_bytes(out_root) / 2**20:.1f} MiB.", ""]
    with open(os.path.join(out_root, "README.md"), "w") as f:
        f.write("\n".join(lines))


def worker_main(args):
    if args.worker == "__newest__":
        res = run_newest_check(args.out)
    elif args.worker == PT_CASE:
        res = run_pt_checkpoint(args.out)
    elif args.worker == NEWEST_CASE:
        res = run_case("stressed", args.out, monai_version=NEWEST)
    else:
        res = run_case(args.worker, args.out)
    print("RESULT " + json.dumps(res))


def spawn(name, out):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--out", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"worker {name} failed")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"worker {name} printed no result")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="*", help="cases to regenerate (default all)")
    ap.add_argument("--index-only", action="store_true",
                    help="rewrite README.md, manifest.json and formula_samples.json only")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)
    formula.self_check()
    os.makedirs(args.out, exist_ok=True)
    names = list(CASES) + [PT_CASE]
    todo = [] if args.index_only else (args.only or names)
    for n in todo:
        if n not in names:
            raise SystemExit(f"unknown case {n}; known: {names}")
    for n in todo:
        r = spawn(n, args.out)
        print(f"{r['case']:14s} MONAI {r['monai']}  max|logit| {r['max_abs']:.5f}  fp32-vs-fp64 {r['noise']:.3g}",
              flush=True)
    newest = None
    if not args.index_only and (not args.only or "stressed" in todo):
        newest = spawn("__newest__", args.out)
        for r in newest["results"]:
            print(f"MONAI {newest['monai']} vs files, {r['case']}: max|diff| {r['max_abs_diff']:.3g} "
                  f"bit-identical {r['bit_identical']}")
        if not all(r["bit_identical"] for r in newest["results"]):
            r = spawn(NEWEST_CASE, args.out)
            print(f"{r['case']:14s} MONAI {r['monai']}  max|logit| {r['max_abs']:.5f}  fp32-vs-fp64 {r['noise']:.3g}")
            names.append(NEWEST_CASE)
        with open(os.path.join(args.out, "newest_check.json"), "w") as f:
            json.dump(newest, f, indent=1)
            f.write("\n")
    elif os.path.exists(os.path.join(args.out, "newest_check.json")):
        with open(os.path.join(args.out, "newest_check.json")) as f:
            newest = json.load(f)
    if os.path.isdir(os.path.join(args.out, NEWEST_CASE)) and NEWEST_CASE not in names:
        names.append(NEWEST_CASE)
    write_formula_samples(args.out)
    results = [{"case": n} for n in names if os.path.exists(os.path.join(args.out, n, "case.json"))]
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"cases": [r["case"] for r in results], "formula_samples": "formula_samples.json"}, f, indent=1)
        f.write("\n")
    write_readme(args.out, results, newest)
    print(f"total {folder_bytes(args.out) / 2**20:.2f} MiB in {args.out}")


if __name__ == "__main__":
    main()
