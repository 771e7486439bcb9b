#!/usr/bin/python3
"""Writes the small NIfTI fixtures of tests/io/test_nifti.cpp into tests/data/nifti/, plus expected.json.

expected.json holds nibabel's view of every readable fixture (shape, img.affine, header codes, a few voxel values
after scl_slope/scl_inter, the sum of all voxels), so the C++ test compares against nibabel, never against itself.

  /usr/bin/python3 tools/make_nifti_fixtures.py               # (re)write the fixtures
  /usr/bin/python3 tools/make_nifti_fixtures.py --verify DIR  # nibabel-check the files the C++ test wrote into DIR
                                                              # (run the test with SWINFER_NIFTI_KEEP_DIR=DIR)
Needs numpy and nibabel (Debian python3-nibabel).
"""

import argparse
import gzip
import json
import os
import struct
import sys

import nibabel as nib
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "nifti")

# Distinct extents per axis, so a transposed read cannot pass by accident.
SHAPE = (5, 6, 7)


def rotation(ax, ay, az):
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def affine_of(linear, offset):
    a = np.eye(4)
    a[:3, :3] = linear
    a[:3, 3] = offset
    return a


def float_volume(rng, shape, dtype=np.float32):
    """Values that differ per axis (100 i + 10 j + k) plus noise, so any mix-up of axes or channels shows."""
    idx = np.indices(shape[:3]).astype(np.float64)
    base = 100 * idx[0] + 10 * idx[1] + idx[2]
    if len(shape) > 3:
        extra = shape[3:]
        base = base.reshape(shape[:3] + (1,) * len(extra)) + 1000 * np.arange(int(np.prod(extra))).reshape(extra)
    return (base + rng.uniform(-0.5, 0.5, shape)).astype(dtype)


def int_volume(rng, shape, dtype):
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, size=shape, dtype=np.int64 if info.min < 0 else np.uint64, endpoint=True)
    v = v.astype(dtype)
    v.flat[0], v.flat[-1] = info.min, info.max  # the extremes, at known places
    return v


def save(img, name):
    path = os.path.join(OUT, name)
    nib.save(img, path)
    return path


def patch(path, offset, fmt, *values):
    """Overwrites header fields in place (after nibabel wrote the file) with struct-packed values."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = bytearray(f.read())
    struct.pack_into(fmt, data, offset, *values)
    with opener(path, "wb") as f:
        f.write(bytes(data))


def make_fixtures(rng):
    """Writes every fixture; returns the names of those nibabel can read (the rest are error cases)."""
    readable = []

    def keep(img, name):
        save(img, name)
        readable.append(name)

    base_aff = affine_of(np.diag([0.8, 0.9, 1.2]) @ rotation(0.1, -0.05, 0.2), [-30.5, 12.25, 40.0])

    # NIfTI-1 float32, both qform and sform (sform wins in nibabel's rule), uncompressed and gzipped.
    img = nib.Nifti1Image(float_volume(rng, SHAPE), base_aff)
    img.set_qform(base_aff, code=1)
    img.set_sform(base_aff, code=2)
    keep(img, "n1_float32.nii")
    img = nib.Nifti1Image(int_volume(rng, SHAPE, np.int16), base_aff, dtype=np.int16)
    img.set_qform(base_aff, code=1)
    img.set_sform(base_aff, code=1)
    keep(img, "n1_int16.nii.gz")

    # NIfTI-2 (64-bit dims, float64 header fields), plain and gzipped.
    aff2 = affine_of(np.diag([1.25, 1.5, 2.0]) @ rotation(-0.2, 0.1, 0.05), [10.5, -20.25, 5.125])
    img = nib.Nifti2Image(float_volume(rng, SHAPE), aff2)
    img.set_qform(aff2, code=1)
    img.set_sform(aff2, code=4)
    keep(img, "n2_float32.nii")
    img = nib.Nifti2Image(int_volume(rng, SHAPE, np.uint8), aff2, dtype=np.uint8)
    keep(img, "n2_uint8.nii.gz")

    # Big-endian int16 with scl_slope 0.5 / scl_inter -10 (patched in: nibabel chooses its own scaling on save).
    hdr = nib.Nifti1Header(endianness=">")
    img = nib.Nifti1Image(int_volume(rng, SHAPE, np.int16), base_aff, header=hdr, dtype=np.int16)
    path = save(img, "be_int16_scaled.nii")
    patch(path, 112, ">ff", 0.5, -10.0)
    readable.append("be_int16_scaled.nii")
    # scl_slope NaN and 0 both mean "no scaling" (scl_inter is then ignored).
    for name, slope in (("scl_nan_slope.nii", float("nan")), ("scl_zero_slope.nii", 0.0)):
        path = save(nib.Nifti1Image(int_volume(rng, SHAPE, np.int16), base_aff, dtype=np.int16), name)
        patch(path, 112, "<ff", slope, 7.0)
        readable.append(name)

    # The other integer types and float64.
    for dtype, name in ((np.uint8, "uint8.nii.gz"), (np.int8, "int8.nii"), (np.uint16, "uint16.nii"),
                        (np.int32, "int32.nii"), (np.uint32, "uint32.nii"), (np.int64, "int64.nii")):
        keep(nib.Nifti1Image(int_volume(rng, SHAPE, dtype), base_aff, dtype=dtype), name)
    keep(nib.Nifti1Image(float_volume(rng, SHAPE, np.float64), base_aff, dtype=np.float64), "float64.nii")

    # sform only, oblique with shear (qform cannot hold shears; nibabel must use the sform).
    oblique = affine_of(np.array([[0.7, 0.2, 0.1], [-0.15, 0.9, 0.3], [0.05, -0.25, 1.4]]), [-90.0, 110.5, -70.25])
    img = nib.Nifti1Image(float_volume(rng, SHAPE), oblique)
    img.set_sform(oblique, code=1)
    img.set_qform(None, code=0)
    keep(img, "sform_only_oblique.nii")

    # qform only, left-handed (qfac -1) with a rotation.
    left = affine_of(rotation(0.3, 0.2, -0.4) @ np.diag([1.1, 0.95, -2.5]), [4.0, -8.5, 16.25])
    img = nib.Nifti1Image(float_volume(rng, SHAPE), left)
    img.set_qform(left, code=1)
    img.set_sform(None, code=0)
    keep(img, "qform_only.nii")

    # No transform at all: nibabel falls back to the pixdim-scaled, x-flipped, centred affine.
    img = nib.Nifti1Image(float_volume(rng, SHAPE), np.diag([0.6, 1.3, 3.0, 1.0]))
    img.set_qform(None, code=0)
    img.set_sform(None, code=0)
    keep(img, "no_xform_aniso.nii")

    # Anisotropic pixdims with both transforms.
    aniso = affine_of(np.diag([0.488, 0.488, 5.0]), [-125.0, -110.0, -60.0])
    img = nib.Nifti1Image(float_volume(rng, SHAPE), aniso)
    img.set_qform(aniso, code=1)
    img.set_sform(aniso, code=1)
    keep(img, "aniso.nii.gz")

    # 4-D, two channels in dim[4]; 5-D vector image (dim[4] == 1, three channels in dim[5]).
    img = nib.Nifti1Image(float_volume(rng, SHAPE + (2,)), base_aff)
    img.set_qform(base_aff, code=1)
    keep(img, "four_d_2ch.nii.gz")
    img = nib.Nifti1Image(float_volume(rng, SHAPE + (1, 3)), base_aff)
    img.header.set_intent("vector")
    keep(img, "five_d_3ch.nii")

    # A single slice is still a 3-D image (dim[0] == 3).
    keep(nib.Nifti1Image(float_volume(rng, (5, 6, 1)), base_aff), "single_slice.nii")

    # ---- error cases ----
    save(nib.Nifti1Image(float_volume(rng, SHAPE)[:, :, 0], np.eye(4)), "two_d.nii")
    nan = float_volume(rng, SHAPE)
    nan[1, 2, 3] = nan[4, 5, 6] = np.nan
    nan[0, 0, 1] = np.inf
    nan[2, 0, 0] = -np.inf
    save(nib.Nifti1Image(nan, base_aff), "nan.nii")
    save(nib.Nifti1Image(np.ones(SHAPE, np.complex64), base_aff), "complex64.nii")
    path = save(nib.Nifti1Image(float_volume(rng, SHAPE), base_aff), "zero_dim.nii")
    patch(path, 46, "<h", 0)  # dim[3] = 0
    # A larger gzipped volume cut in half, a plain file cut inside the data, a file cut inside the header.
    big = save(nib.Nifti1Image(float_volume(rng, (16, 16, 16)), base_aff), "truncated.nii.gz")
    with open(big, "rb") as f:
        blob = f.read()
    with open(big, "wb") as f:
        f.write(blob[: len(blob) // 2])
    # The same gzip stream, complete but with bytes flipped in the middle of the deflate data.
    corrupt = bytearray(blob)
    for k in range(len(corrupt) // 2, len(corrupt) // 2 + 8):
        corrupt[k] ^= 0x5A
    with open(os.path.join(OUT, "corrupt.nii.gz"), "wb") as f:
        f.write(bytes(corrupt))
    # A header claiming 2000^3 float32 voxels (32 GB) over a file holding 840 bytes.
    path = save(nib.Nifti1Image(float_volume(rng, SHAPE), base_aff), "huge_dims.nii")
    patch(path, 42, "<hhh", 2000, 2000, 2000)
    path = save(nib.Nifti1Image(float_volume(rng, SHAPE), base_aff), "truncated.nii")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[: 352 + 100])
    with open(os.path.join(OUT, "short_header.nii"), "wb") as f:
        f.write(blob[:200])
    with open(os.path.join(OUT, "not_nifti.nii"), "w") as f:
        f.write("This is a text file with a .nii name, not a NIfTI image.\n" * 10)
    return readable


def describe(name, rng):
    img = nib.load(os.path.join(OUT, name))
    data = np.asanyarray(img.dataobj).astype(np.float64)  # scl_slope/scl_inter applied, as MONAI sees it
    shape = data.shape
    # (i, j, k, c): channels are dim[4], or dim[5] of a 5-D image whose dim[4] is 1.
    four = data.reshape(shape[:3] + (-1,))
    channels = four.shape[3]
    points = [(0, 0, 0, 0), (shape[0] - 1, 0, 0, 0), (0, shape[1] - 1, 0, 0), (0, 0, shape[2] - 1, 0),
              (shape[0] - 1, shape[1] - 1, shape[2] - 1, channels - 1)]
    for _ in range(6):
        points.append(tuple(int(rng.integers(0, n)) for n in four.shape))
    hdr = img.header
    return {
        "file": name,
        "version": 2 if isinstance(img, nib.Nifti2Image) else 1,
        "shape": [int(n) for n in shape],
        "channels": int(channels),
        "datatype": int(hdr["datatype"]),
        "affine": img.affine.tolist(),
        "qform_code": int(hdr["qform_code"]),
        "sform_code": int(hdr["sform_code"]),
        "spacing": [float(z) for z in hdr.get_zooms()[:3]],
        "samples": [{"index": list(p), "value": float(four[p])} for p in points],
        "sum": float(data.sum()),
    }


def write_expected():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    rng = np.random.default_rng(20240611)
    readable = make_fixtures(rng)
    expected = {"fixtures": [describe(name, rng) for name in readable]}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files ({total} bytes) to {os.path.normpath(OUT)}")


def pattern(kind, shape, channels):
    """The values tests/io/test_nifti.cpp writes (keep the two in step), as nibabel indexes them: (i, j, k[, c])."""
    i, j, k, c = np.indices(tuple(shape) + (channels,)).astype(np.float64)
    if kind == "label":
        v = (i + 2 * j + 3 * k + 5 * c) % 7
    else:
        v = 0.25 * i - 0.5 * j + 0.125 * k + c + 0.0625
    return v[..., 0] if channels == 1 else v


def verify(directory):
    """nibabel-reads what the C++ test wrote and checks it against the fixture it was written like."""
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    failures = 0
    for entry in manifest["files"]:
        problems = []
        out = nib.load(os.path.join(directory, entry["file"]))
        like = nib.load(os.path.join(OUT, entry["like"]))
        oh, lh = out.header, like.header
        spatial = like.shape[:3]
        channels = entry["channels"]
        want_shape = tuple(spatial) if channels == 1 else tuple(spatial) + (channels,)
        if out.shape != want_shape:
            problems.append(f"shape {out.shape}, expected {want_shape}")
        if type(out.header) is not type(lh):
            problems.append(f"header class {type(oh).__name__}, expected {type(lh).__name__}")
        if not np.allclose(out.affine, like.affine, rtol=0, atol=1e-6):
            problems.append(f"affine\n{out.affine}\nexpected\n{like.affine}")
        for field in ("qform_code", "sform_code", "xyzt_units"):
            if int(oh[field]) != int(lh[field]):
                problems.append(f"{field} {int(oh[field])}, expected {int(lh[field])}")
        # Matrices whose code is 0 mean nothing (nifti_clib writes them as zeros); the coded ones must match.
        for name, got, want in (("qform", oh.get_qform(coded=True), lh.get_qform(coded=True)),
                                ("sform", oh.get_sform(coded=True), lh.get_sform(coded=True))):
            if want[1] != 0 and not np.allclose(got[0], want[0], rtol=0, atol=1e-6):
                problems.append(f"{name} matrix differs")
        if not np.allclose(oh.get_zooms()[:3], lh.get_zooms()[:3], rtol=0, atol=1e-7):
            problems.append(f"zooms {oh.get_zooms()[:3]}, expected {lh.get_zooms()[:3]}")
        want_dtype = np.dtype(entry["datatype"])
        if oh.get_data_dtype() != want_dtype:
            problems.append(f"dtype {oh.get_data_dtype()}, expected {want_dtype}")
        slope, inter = oh.get_slope_inter()
        if slope not in (None, 1.0) or inter not in (None, 0.0):
            problems.append(f"scaling {slope}/{inter}, expected 1/0")
        data = np.asanyarray(out.dataobj).astype(np.float64)
        want = pattern(entry["pattern"], spatial, channels)
        if data.shape == want.shape and not np.array_equal(data, want):
            problems.append(f"data differs: max |diff| {np.abs(data - want).max()}")
        if (float(oh["cal_min"]), float(oh["cal_max"])) != (want.min(), want.max()):
            problems.append(f"cal_min/cal_max {float(oh['cal_min'])}/{float(oh['cal_max'])}, "
                            f"expected {want.min()}/{want.max()}")
        status = "ok" if not problems else "FAILED"
        print(f"{status:6} {entry['file']} (like {entry['like']}, {want_dtype}, shape {out.shape})")
        for p in problems:
            print("       " + p)
        failures += bool(problems)
    print(f"{len(manifest['files']) - failures} of {len(manifest['files'])} files verified with nibabel "
          f"{nib.__version__}")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verify", metavar="DIR", help="check the files tests/io/test_nifti.cpp kept in DIR")
    args = parser.parse_args()
    if args.verify:
        sys.exit(verify(args.verify))
    write_expected()


if __name__ == "__main__":
    main()
