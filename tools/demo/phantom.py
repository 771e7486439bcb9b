#!/usr/bin/env python3
"""Synthetic CT-like chest phantom with a contrast-enhanced, pulmonary-artery-like vessel tree.

SYNTHETIC DATA FOR DEMOS AND TESTS ONLY -- NOT ANATOMICALLY ACCURATE, NOT FOR CLINICAL USE.

The phantom is built in millimetres on an anisotropic voxel grid (default spacing 0.8 x 0.8 x 1.5 mm;
array axis 0 = left/right, 1 = anterior/posterior, 2 = inferior/superior, i.e. axial slices along axis 2):

  * air outside the body (-1000 HU);
  * a body ellipse: a fat rim (~ -100 HU) around a soft-tissue chest wall (~ 40 HU);
  * a thoracic cavity filled with lung-like parenchyma (~ -850 HU, smooth low-frequency texture and a
    slight posterior density gradient), split by a soft-tissue mediastinum (~ 40 HU);
  * a vertebra behind the mediastinum (cortical shell ~ 900 HU, cancellous core ~ 380 HU) -- bright, but
    NOT a vessel;
  * a few soft-tissue nodules in the lungs (~ 30 HU) -- NOT vessels either;
  * a pulmonary-artery-like tree (label 1, 150-300 HU): a trunk in the mediastinum that splits into a left
    and a right artery which then bifurcate recursively inside the lungs, radii shrinking by ~0.7-0.8 per
    generation down to ~0.8 mm; branches are slightly curved capsule chains rendered with partial volume;
  * mild Gaussian blur (PSF) and Gaussian noise (sigma 20-30 HU); the result is rounded to int16 HU.

Labels (uint8): 0 = background, 1 = vessel (voxel centre inside a vessel capsule).

The NIfTI files carry an LPS-style affine as scanner converters write it (x and y flipped, non-zero
origin; qform and sform both set, code 1 = scanner).

Everything is a deterministic function of (seed, shape, spacing).  Pure numpy + scipy.ndimage.

CLI:
  phantom.py --seed 2026 --shape 160 160 96 --out image.nii.gz --truth truth.nii.gz
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

try:
    from scipy import ndimage as ndi
except ImportError:  # pragma: no cover - scipy is expected, but keep a (slower, cruder) fallback
    ndi = None

DEFAULT_SPACING = (0.8, 0.8, 1.5)

HU_AIR = -1000.0
HU_FAT = -100.0
HU_SOFT = 40.0
HU_LUNG = -850.0
HU_BONE_CORTICAL = 900.0
HU_BONE_CANCELLOUS = 380.0
HU_NODULE = 30.0


# ----------------------------------------------------------------------------------------------------------------
# small helpers


def _gaussian(a: np.ndarray, sigma) -> np.ndarray:
    """Gaussian filter (sigma in voxels, per axis) with mirror borders; box-blur fallback without scipy."""
    if ndi is not None:
        return ndi.gaussian_filter(a, sigma, mode="mirror")
    out = a
    for ax, s in enumerate(np.broadcast_to(np.asarray(sigma, float), (a.ndim,))):
        w = max(1, int(round(s * 1.7)))
        for _ in range(3):
            out = sum(np.roll(out, d, axis=ax) for d in range(-w, w + 1)) / (2 * w + 1)
    return out


def _smooth_noise(rng: np.random.Generator, shape, sigma_vox) -> np.ndarray:
    """Zero-mean, unit-std low-frequency noise field."""
    n = _gaussian(rng.standard_normal(shape).astype(np.float32), sigma_vox)
    n -= n.mean()
    n /= n.std() + 1e-12
    return n


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) + 1e-12)


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues rotation of v about a unit axis."""
    axis = _unit(axis)
    c, s = math.cos(angle), math.sin(angle)
    return v * c + np.cross(axis, v) * s + axis * np.dot(axis, v) * (1.0 - c)


def _random_perpendicular(rng: np.random.Generator, d: np.ndarray) -> np.ndarray:
    while True:
        p = np.cross(d, rng.standard_normal(3))
        if np.linalg.norm(p) > 1e-3:
            return _unit(p)


def lps_style_affine(shape, spacing) -> np.ndarray:
    """Voxel -> RAS+ mm affine as a DICOM converter writes it for an axial LPS acquisition:
    x and y flipped, z ascending, origin placed so that the volume is roughly centred (plus a table offset)."""
    sx, sy, sz = spacing
    nx, ny, nz = shape
    a = np.eye(4)
    a[0, 0], a[1, 1], a[2, 2] = -sx, -sy, sz
    a[:3, 3] = [(nx - 1) / 2.0 * sx + 3.2, (ny - 1) / 2.0 * sy + 41.6, -(nz - 1) / 2.0 * sz - 182.5]
    return a


# ----------------------------------------------------------------------------------------------------------------
# vessel tree


class _Capsules:
    """Chain of tapered capsules (p, q, r_p, r_q, hu, generation)."""

    def __init__(self):
        self.items = []

    def add(self, p, q, rp, rq, hu, gen):
        self.items.append((np.asarray(p, float), np.asarray(q, float), float(rp), float(rq), float(hu), gen))


def _grow_tree(rng, caps: _Capsules, lung_dist_mm, spacing, fov, contrast_hu, r_min):
    """Trunk in the mediastinum -> left/right pulmonary arteries -> recursive bifurcation inside the lungs."""
    shape = lung_dist_mm.shape
    sp = np.asarray(spacing, float)

    def lung_depth(pt):
        """Distance (mm) from pt to the lung boundary, <= 0 outside the lungs or outside the volume."""
        idx = np.round(pt / sp).astype(int)
        if np.any(idx < 0) or np.any(idx >= shape):
            return -1.0
        return float(lung_dist_mm[tuple(idx)])

    def hu_for(gen):
        return max(150.0, contrast_hu - 14.0 * gen + rng.uniform(-10, 10))

    def branch(p0, d, length, r, gen, check):
        """Curved branch from p0 along d; returns (end point, end direction) or None if it left the lung."""
        n_sub = 3
        pts = [p0]
        dirs = []
        cur, cd = p0.copy(), d.copy()
        for _ in range(n_sub):
            cd = _unit(_rotate(cd, _random_perpendicular(rng, cd), rng.normal(0.0, math.radians(9))))
            nxt = cur + cd * (length / n_sub)
            if check and lung_depth(nxt) < 0.5 * r + 0.5:
                return None
            pts.append(nxt)
            dirs.append(cd)
            cur = nxt
        r_end = r * 0.92
        hu = hu_for(gen)
        for s in range(n_sub):
            ra = r + (r_end - r) * s / n_sub
            rb = r + (r_end - r) * (s + 1) / n_sub
            caps.add(pts[s], pts[s + 1], ra, rb, hu, gen)
        return pts[-1], dirs[-1]

    def recurse(p0, d, length, r, gen):
        if r < r_min or gen > 12:
            return
        for attempt in range(8):
            res = branch(p0, d, length * (1.0 if attempt < 4 else 0.6), r, gen, check=True)
            if res is not None:
                break
            # perturb the direction toward somewhere else and retry
            d = _unit(_rotate(d, _random_perpendicular(rng, d), math.radians(rng.uniform(15, 45))))
        else:
            return
        end, de = res
        # bifurcation: two children in a random plane containing de, asymmetric angles and radii
        plane_n = _random_perpendicular(rng, de)
        a1 = math.radians(rng.uniform(18, 38))
        a2 = -math.radians(rng.uniform(18, 38))
        k1 = rng.uniform(0.76, 0.88)
        k2 = rng.uniform(0.72, 0.84)
        for ang, k in ((a1, k1), (a2, k2)):
            cd = _unit(_rotate(de, plane_n, ang))
            recurse(end, cd, length * rng.uniform(0.75, 0.9), r * k, gen + 1)

    fx, fy, fz = fov
    cx, cy, cz = fx / 2.0, fy / 2.0, fz / 2.0
    # pulmonary trunk: from anterior mediastinum toward posterior-superior
    r0 = 0.032 * fx * rng.uniform(0.92, 1.08)
    p0 = np.array([cx + rng.uniform(-0.02, 0.02) * fx, cy - 0.17 * fy, cz - 0.12 * fz + rng.uniform(-0.05, 0.05) * fz])
    d0 = _unit(np.array([rng.uniform(-0.15, 0.15), 1.0, rng.uniform(0.25, 0.5)]))
    res = branch(p0, d0, 0.14 * fy, r0, 0, check=False)
    end, _ = res
    # left / right pulmonary arteries: lateral, slightly posterior; they enter the lungs
    for side in (-1.0, 1.0):
        dpa = _unit(np.array([side, rng.uniform(0.1, 0.35), rng.uniform(-0.15, 0.15)]))
        r1 = r0 * rng.uniform(0.72, 0.8)
        res = branch(end, dpa, 0.13 * fx, r1, 1, check=False)
        pa_end, pa_dir = res
        # the hilum: fan out into 2-3 lobar arteries (superior, middle/inferior) inside the lung
        n_lobar = 3 if rng.random() < 0.5 else 2
        for li in range(n_lobar):
            zdir = (-1.0 + 2.0 * li / max(1, n_lobar - 1)) if n_lobar > 1 else 0.0
            dl = _unit(pa_dir * 0.6 + np.array([0.15 * side, rng.uniform(-0.3, 0.4), 0.9 * zdir]))
            recurse(pa_end, dl, 0.12 * fx, r1 * rng.uniform(0.68, 0.78), 2)


def _rasterize(caps: _Capsules, shape, spacing):
    """Signed depth (mm, > 0 inside) of the deepest capsule and the HU of that capsule, per voxel."""
    sp = np.asarray(spacing, float)
    depth = np.full(shape, -1e9, np.float32)
    hu = np.zeros(shape, np.float32)
    for p, q, rp, rq, h, _gen in caps.items:
        rmax = max(rp, rq) + 2.0 * sp.max()
        lo = np.maximum(np.floor((np.minimum(p, q) - rmax) / sp).astype(int), 0)
        hi = np.minimum(np.ceil((np.maximum(p, q) + rmax) / sp).astype(int) + 1, shape)
        if np.any(hi <= lo):
            continue
        xs = [np.arange(lo[a], hi[a]) * sp[a] for a in range(3)]
        X, Y, Z = np.meshgrid(*xs, indexing="ij")
        d = q - p
        dd = float(np.dot(d, d)) + 1e-12
        t = ((X - p[0]) * d[0] + (Y - p[1]) * d[1] + (Z - p[2]) * d[2]) / dd
        np.clip(t, 0.0, 1.0, out=t)
        dist = np.sqrt((X - (p[0] + t * d[0])) ** 2 + (Y - (p[1] + t * d[1])) ** 2 + (Z - (p[2] + t * d[2])) ** 2)
        sd = (rp + (rq - rp) * t - dist).astype(np.float32)
        sl = tuple(slice(lo[a], hi[a]) for a in range(3))
        cur = depth[sl]
        better = sd > cur
        cur[better] = sd[better]
        hu[sl][better] = h
    return depth, hu


# ----------------------------------------------------------------------------------------------------------------
# phantom


def make_phantom(seed: int, shape=(160, 160, 96), spacing=DEFAULT_SPACING):
    """Returns (image int16 HU, truth uint8 {0,1}, affine 4x4) for the given seed, shape and spacing (mm)."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    sp = np.asarray(spacing, float)
    fov = np.asarray(shape) * sp
    fx, fy, fz = fov

    # physical coordinates of voxel centres (broadcastable grids)
    x = (np.arange(shape[0]) * sp[0])[:, None, None]
    y = (np.arange(shape[1]) * sp[1])[None, :, None]
    z = (np.arange(shape[2]) * sp[2])[None, None, :]
    zf = z / max(fz, 1e-6)  # 0..1 along the slab

    # body ellipse (slightly varying along z), fat rim, chest wall
    cx = fx / 2.0 + rng.uniform(-0.02, 0.02) * fx
    cy = fy / 2.0 + rng.uniform(-0.02, 0.02) * fy
    ax = 0.46 * fx * rng.uniform(0.93, 1.0) * (1.0 + 0.03 * np.sin(2 * np.pi * zf + rng.uniform(0, 6.3)))
    ay = 0.37 * fy * rng.uniform(0.92, 1.0) * (1.0 + 0.03 * np.sin(2 * np.pi * zf + rng.uniform(0, 6.3)))
    # "radius" in body units: 1 at the skin; the mm depth below the skin ~ (1 - rr) * min semi-axis
    rr_body = np.sqrt(((x - cx) / ax) ** 2 + ((y - cy) / ay) ** 2)
    depth_mm = (1.0 - rr_body) * np.minimum(ax, ay)  # approximate depth below the skin (mm)
    fat_mm = rng.uniform(3.5, 6.0) + 1.2 * _smooth_noise(rng, shape, (6, 6, 3))
    wall_mm = fat_mm + rng.uniform(4.0, 6.5)

    body = depth_mm > 0
    cavity = depth_mm > wall_mm

    # mediastinum: anterior-central ellipse; vertebra: posterior midline disk
    # (wider toward the bottom of the slab, where the heart sits)
    mx, my = cx + rng.uniform(-0.03, 0.03) * fx, cy - 0.08 * fy
    max_ = 0.095 * fx * rng.uniform(0.9, 1.1) * (1.25 - 0.5 * zf)
    may = 0.26 * fy * rng.uniform(0.9, 1.05)
    medi = ((x - mx) / max_) ** 2 + ((y - my) / may) ** 2 < 1.0
    vx, vy = cx, cy + ay * 0.78
    vr = 0.07 * fx * rng.uniform(0.9, 1.1)
    rv = np.sqrt((x - vx) ** 2 + (y - vy) ** 2)
    vert = np.broadcast_to(rv < vr, shape)
    vert_core = np.broadcast_to(rv < vr - 2.0, shape)
    para = np.broadcast_to(rv < vr + 3.0, shape)  # paravertebral soft tissue

    lung = cavity & ~medi & ~para

    # base image
    img = np.full(shape, HU_AIR, np.float32)
    img[body] = HU_FAT
    img[body & (depth_mm > fat_mm)] = HU_SOFT
    # soft-tissue texture (muscle / fat striation, small)
    img += np.where(body, 8.0 * _smooth_noise(rng, shape, (3, 3, 2)), 0.0).astype(np.float32)
    # lungs: -850 +- smooth texture, posterior (dependent) density gradient
    lung_tex = 35.0 * _smooth_noise(rng, shape, (5, 5, 3)) + 15.0 * _smooth_noise(rng, shape, (1.5, 1.5, 1.0))
    grad = 60.0 * np.clip((y - (cy - ay)) / (2 * ay), 0, 1)
    lung_val = HU_LUNG + rng.uniform(-25, 25) + lung_tex + grad
    img = np.where(lung, lung_val, img).astype(np.float32)
    # vertebra
    img[vert] = HU_BONE_CORTICAL
    img[vert_core] = HU_BONE_CANCELLOUS + 40.0 * _smooth_noise(rng, shape, (2, 2, 2))[vert_core]

    # distance to the lung boundary (mm), for keeping branches inside the lungs
    if ndi is not None:
        lung_dist = ndi.distance_transform_edt(lung, sampling=sp).astype(np.float32)
    else:
        lung_dist = np.where(lung, 10.0, 0.0).astype(np.float32)

    # nodules (soft tissue, unlabeled distractors)
    for _ in range(rng.integers(2, 6)):
        for _try in range(20):
            c = rng.uniform(0, 1, 3) * fov
            idx = tuple(np.clip((c / sp).astype(int), 0, np.asarray(shape) - 1))
            r = rng.uniform(2.0, 5.0)
            if lung_dist[idx] > r + 2:
                break
        else:
            continue
        lo = np.maximum(((c - r - 2) / sp).astype(int), 0)
        hi = np.minimum(((c + r + 2) / sp).astype(int) + 1, shape)
        sl = tuple(slice(lo[a], hi[a]) for a in range(3))
        X, Y, Z = np.meshgrid(*[np.arange(lo[a], hi[a]) * sp[a] for a in range(3)], indexing="ij")
        dist = np.sqrt((X - c[0]) ** 2 + (Y - c[1]) ** 2 + (Z - c[2]) ** 2)
        f = np.clip(r - dist + 0.5, 0, 1).astype(np.float32)
        img[sl] = img[sl] * (1 - f) + HU_NODULE * f

    # vessel tree
    caps = _Capsules()
    contrast = rng.uniform(230.0, 300.0)
    _grow_tree(rng, caps, lung_dist, sp, fov, contrast, r_min=0.7)
    depth, vhu = _rasterize(caps, shape, sp)
    truth = (depth >= 0.0).astype(np.uint8)
    # partial-volume fraction over ~one in-plane voxel
    f = np.clip(depth / float(sp[:2].mean()) + 0.5, 0.0, 1.0)
    img = img * (1.0 - f) + vhu * f

    # PSF blur (mm -> voxels), then noise
    blur_mm = rng.uniform(0.45, 0.7)
    img = _gaussian(img.astype(np.float32), tuple(blur_mm / s for s in sp))
    sigma = rng.uniform(20.0, 30.0)
    img = img + sigma * rng.standard_normal(shape).astype(np.float32)
    img = np.clip(np.rint(img), -1024, 3071).astype(np.int16)
    return img, truth, lps_style_affine(shape, sp)


def save_nifti(path: str, data: np.ndarray, affine: np.ndarray, description: str = "") -> None:
    import nibabel as nib

    img = nib.Nifti1Image(data, affine)
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    img.header.set_data_dtype(data.dtype)
    img.header.set_xyzt_units("mm", "sec")
    if description:
        img.header["descrip"] = description[:79].encode()
    img.header.set_slope_inter(1.0, 0.0)
    nib.save(img, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--shape", type=int, nargs=3, default=[160, 160, 96], metavar=("I", "J", "K"))
    ap.add_argument("--spacing", type=float, nargs=3, default=list(DEFAULT_SPACING), metavar=("SI", "SJ", "SK"))
    ap.add_argument("--out", required=True, help="image .nii.gz (int16 HU)")
    ap.add_argument("--truth", help="truth mask .nii.gz (uint8: 0 background, 1 vessel)")
    args = ap.parse_args(argv)
    t0 = time.time()
    img, truth, aff = make_phantom(args.seed, tuple(args.shape), tuple(args.spacing))
    t1 = time.time()
    save_nifti(args.out, img, aff, f"swinfer synthetic CT phantom seed {args.seed} NOT FOR CLINICAL USE")
    if args.truth:
        save_nifti(args.truth, truth, aff, f"swinfer phantom truth seed {args.seed} 0=bg 1=vessel")
    print(
        f"phantom seed={args.seed} shape={tuple(img.shape)} spacing={tuple(args.spacing)} "
        f"HU=[{int(img.min())},{int(img.max())}] vessel_voxels={int(truth.sum())} "
        f"({100.0 * truth.mean():.2f}%) generated in {t1 - t0:.2f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
