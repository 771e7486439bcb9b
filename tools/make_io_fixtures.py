#!/usr/bin/python3
"""Writes the small checkpoint and .npy fixtures of tests/io into tests/data/io/, plus expected.json.

expected.json holds, per file, the keys, shapes, dtypes and values (float32 bit patterns, or integers) computed
here by torch/numpy, so the C++ tests compare against Python's reading of the data, never against their own.
Run with the system python (Debian's python3-torch): /usr/bin/python3 tools/make_io_fixtures.py
"""

import argparse
import collections
import json
import os
import struct
import zipfile

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io")

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # ZIP timestamps, so rerunning the script rewrites identical files

DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
    torch.bool: "bool",
}


class Marked(torch.Tensor):
    """A tensor subclass: torch pickles these through torch._tensor._rebuild_from_type_v2."""


def float32_bits(t):
    """The float32 widening of a floating tensor, as uint32 bit patterns in C order (numpy keeps NaN payloads)."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return [int(b) << 16 for b in t.view(torch.int16).numpy().astype(np.uint16).reshape(-1)]
    with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf, as in C++
        return [int(b) for b in t.numpy().astype(np.float32).view(np.uint32).reshape(-1)]


def describe(key, t):
    entry = {"key": key, "shape": list(t.shape), "dtype": DTYPE_NAMES[t.dtype]}
    if t.dtype.is_floating_point:
        entry["bits"] = float32_bits(t)
    else:
        entry["ints"] = [int(v) for v in t.detach().contiguous().reshape(-1).tolist()]
    return entry


def strip(key):
    while True:
        if key.startswith("module."):
            key = key[len("module."):]
        elif key.startswith("_orig_mod."):
            key = key[len("_orig_mod."):]
        else:
            return key


def half_from_bits(bits):
    return torch.from_numpy(np.array(bits, dtype=np.uint16).view(np.float16).copy())


def bf16_from_bits(bits):
    return torch.tensor([b - 0x10000 if b >= 0x8000 else b for b in bits], dtype=torch.int16).view(torch.bfloat16)


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}

    def save_torch(name, obj, tensors, **kwargs):
        torch.save(obj, os.path.join(OUT, name), **kwargs)
        expected[name] = [describe(strip(k), t) for k, t in tensors.items()]

    # A bare state_dict, as model.state_dict() returns it.
    bare = collections.OrderedDict()
    bare["conv.weight"] = torch.tensor([[0.1, -2.5, 3.25], [1e-8, 65504.0, -0.0]])
    bare["conv.bias"] = torch.tensor([0.5, -1.0 / 3.0])
    bare["norm.num_batches_tracked"] = torch.tensor(7)
    bare["scale"] = torch.tensor(1.5)
    save_torch("bare.pt", bare, bare)

    # A training checkpoint: DataParallel prefixes under 'state_dict', plus everything else training saves.
    inner = collections.OrderedDict((f"module.{k}", v) for k, v in bare.items())
    inner["module.extra_state"] = "not a tensor"
    wrapped = {
        "epoch": 12,
        "best_metric": 0.875,
        "best_metric_tensor": torch.tensor(0.875),
        "arch": "swinunetr",
        "seed": 2 ** 70,
        "args": argparse.Namespace(lr=1e-4, roi=(96, 96, 96)),
        "numpy_scalar": np.float64(1.5),
        "numpy_array": np.arange(3, dtype=np.float32),
        "tags": {"swin"},  # one element: a set's pickled order follows the per-process string hash
        "blob": b"\x00\x01",
        "optimizer": {"state": {0: {"step": 3, "exp_avg": torch.ones(2)}},
                      "param_groups": [{"lr": 1e-4, "params": [0, 1], "betas": (0.9, 0.999)}]},
        "state_dict": inner,
    }
    save_torch("wrapped.pt", wrapped, {k: v for k, v in inner.items() if torch.is_tensor(v)})

    # torch.compile and DataParallel prefixes, nested in either order, under 'model'.
    compiled = collections.OrderedDict()
    compiled["_orig_mod.module.layer.weight"] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    compiled["module._orig_mod.layer.bias"] = torch.tensor([-1.0, 1.0])
    save_torch("compiled.pt", {"model": compiled, "epoch": 1}, compiled)

    # Every storage type a state_dict can hold, with the float16/bfloat16 special values.
    half_bits = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0x3555, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
                 0x7E00, 0x7C01, 0xFE01]
    bf16_bits = [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x3EAB, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0,
                 0x7F81]
    dtypes = collections.OrderedDict()
    dtypes["half"] = half_from_bits(half_bits).reshape(3, 5)
    dtypes["bfloat"] = bf16_from_bits(bf16_bits)
    dtypes["double"] = torch.tensor([0.1, 1.0 / 3.0, 1e-40, -1e300, 16777217.0], dtype=torch.float64)
    dtypes["long"] = torch.tensor([0, -1, 2 ** 62, -(2 ** 63)], dtype=torch.int64)
    dtypes["int"] = torch.tensor([-(2 ** 31), 2 ** 31 - 1], dtype=torch.int32)
    dtypes["short"] = torch.tensor([-32768, 32767], dtype=torch.int16)
    dtypes["char"] = torch.tensor([-128, 127], dtype=torch.int8)
    dtypes["byte"] = torch.tensor([0, 255], dtype=torch.uint8)
    dtypes["bool"] = torch.tensor([True, False, True])
    save_torch("dtypes.pt", dtypes, dtypes)

    # Views: a transpose, slices with storage offsets and a broadcast, all sharing storage with 'base'.
    base = torch.arange(24.0).reshape(4, 6)
    views = collections.OrderedDict()
    views["base"] = base
    views["transposed"] = base.t()
    views["block"] = base[1:3, 2:5]
    views["row"] = base[2]
    views["every_other"] = base[:, ::2]
    views["element"] = base[3, 4]
    views["broadcast"] = torch.tensor([1.0, 2.0]).expand(3, 2)
    views["empty"] = base[:0]
    save_torch("views.pt", views, views)

    # Protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL), an nn.Parameter and a tensor subclass.
    proto4 = collections.OrderedDict()
    proto4["param"] = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
    proto4["subclass"] = torch.arange(3.0).as_subclass(Marked)
    proto4["bf16"] = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    save_torch("proto4.pt", proto4, proto4, pickle_protocol=4)

    # The pre-1.6 format, which swinfer refuses with advice (its storage keys are addresses: it differs every run).
    torch.save(bare, os.path.join(OUT, "legacy.pt"), _use_new_zipfile_serialization=False)

    # bare.pt recompressed with deflate (torch itself stores), one entry with a ZIP64 local extra field.
    with zipfile.ZipFile(os.path.join(OUT, "bare.pt")) as src, \
            zipfile.ZipFile(os.path.join(OUT, "deflated.pt"), "w", zipfile.ZIP_DEFLATED) as dst:
        for i, info in enumerate(src.infolist()):
            data = src.read(info)
            entry = zipfile.ZipInfo(info.filename.replace("bare/", "renamed/"), date_time=FIXED_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            with dst.open(entry, "w", force_zip64=(i == 1)) as f:
                f.write(data)
    expected["deflated.pt"] = expected["bare.pt"]

    # views.pt as a big-endian machine writes it: storages byte-swapped and a 'byteorder' entry saying so.
    assert all(t.dtype == torch.float32 for t in views.values())
    with zipfile.ZipFile(os.path.join(OUT, "views.pt")) as src, \
            zipfile.ZipFile(os.path.join(OUT, "big_endian.pt"), "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if "/data/" in info.filename:
                data = np.frombuffer(data, dtype="<f4").astype(">f4").tobytes()
            dst.writestr(zipfile.ZipInfo(info.filename, date_time=FIXED_TIME), data)
        dst.writestr(zipfile.ZipInfo("views/byteorder", date_time=FIXED_TIME), "big")
    expected["big_endian.pt"] = expected["views.pt"]

    # safetensors, written by hand (no pip dependency): mixed dtypes, metadata, data not in key order.
    st = collections.OrderedDict()
    st["module.b.weight"] = (np.array([[1.0, -2.0], [0.25, 3.0]], dtype="<f4"), "F32")
    st["a.half"] = (np.array([1.0, -0.5, 65504.0], dtype="<f2"), "F16")
    st["c.steps"] = (np.array([5, -6], dtype="<i8"), "I64")
    st["d.bf16"] = (np.array([0x3F80, 0xC000], dtype="<u2"), "BF16")
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for key, (arr, dt) in st.items():
        blob = arr.tobytes()
        header[key] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(OUT, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    st_expected = []
    for key, (arr, dt) in st.items():
        if dt == "BF16":
            t = torch.from_numpy(arr.astype(np.int32).astype(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("=")))
        st_expected.append(describe(strip(key), t))
    expected["model.safetensors"] = st_expected

    # .npy files: each float width, big-endian, 1-d and 0-d shapes, and a Fortran-order array (refused).
    rng = np.random.default_rng(7)
    volume = rng.standard_normal((2, 3, 4)).astype(np.float32)
    npys = {
        "f4.npy": volume,
        "f8.npy": np.array([[0.1, 1.0 / 3.0], [1e-40, -1e300]], dtype="<f8"),
        "f2.npy": half_from_bits(half_bits).numpy(),
        "be_f4.npy": volume.astype(">f4"),
        "vector.npy": np.arange(5, dtype="<f4"),
        "scalar.npy": np.array(2.5, dtype="<f4"),
    }
    for name, arr in npys.items():
        np.save(os.path.join(OUT, name), arr)
        expected[name] = [describe("", torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="))))]
    np.save(os.path.join(OUT, "fortran.npy"), np.asfortranarray(volume))

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
