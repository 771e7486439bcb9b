"""Formula weights: values that Python (numpy) and C++ (tests/support/formula_weights.hpp) regenerate bit-exactly.

For a tensor stored under key K, element with flat C-order index i:

    h = FNV-1a 64 of K's UTF-8 bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
    z = h + (i + 1) * 0x9E3779B97F4A7C15                      (mod 2**64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9                  (mod 2**64)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB                  (mod 2**64)
    z = z ^ (z >> 31)
    k = z >> 40                                               (24 bits)
    u = float32(k - 2**23) / 2**23                            (exact, in [-1, 1))
    value = float32(offset) + float32(scale) * u              (float32 arithmetic)

scale is always a power of two (or zero), so scale*u is exact and the one rounding of the sum is the same in
numpy float32 and C++ float (with or without FMA contraction).

This file depends on numpy only, so it can be imported by any tool.
"""

from __future__ import annotations

import math
import struct

import numpy as np

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1


def fnv1a64(key: str) -> int:
    h = FNV_OFFSET
    for b in key.encode("utf-8"):
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return h


def unit_int(key_hash: int, i: int) -> int:
    """Pure-Python reference of the 24-bit draw k for one element (used to self-check the numpy path)."""
    z = (key_hash + (i + 1) * GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    z ^= z >> 31
    return z >> 40


def value_scalar(key: str, i: int, offset: float, scale: float) -> np.float32:
    """Pure-Python/numpy-scalar reference for one element."""
    k = unit_int(fnv1a64(key), i)
    u = np.float32(k - (1 << 23)) / np.float32(1 << 23)
    return np.float32(np.float32(offset) + np.float32(scale) * u)


def unit_array(key: str, n: int, start: int = 0) -> np.ndarray:
    """u for flat indices start .. start+n-1 as float32 (vectorised)."""
    h = np.uint64(fnv1a64(key))
    with np.errstate(over="ignore"):
        i = np.arange(start, start + n, dtype=np.uint64)
        z = h + (i + np.uint64(1)) * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
        z = z ^ (z >> np.uint64(31))
        k = (z >> np.uint64(40)).astype(np.int64)
    return (k - (1 << 23)).astype(np.float32) / np.float32(1 << 23)


def check_scale(scale: float) -> None:
    if scale == 0.0:
        return
    m, _ = math.frexp(abs(scale))
    if m != 0.5:
        raise ValueError(f"formula scale must be zero or a power of two, got {scale!r}")


def formula_array(key: str, shape, offset: float, scale: float) -> np.ndarray:
    """float32 array of `shape` (C order) holding the formula values for `key`."""
    check_scale(scale)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    u = unit_array(key, n)
    v = np.float32(offset) + np.float32(scale) * u
    assert v.dtype == np.float32
    return v.reshape(tuple(shape))


def nearest_pow2(x: float) -> float:
    """The power of two nearest to x in the log domain (2**round(log2 x))."""
    return float(2.0 ** round(math.log2(x)))


def f32_bits(v) -> int:
    return struct.unpack("<I", struct.pack("<f", float(np.float32(v))))[0]


def relative_position_index(window) -> np.ndarray:
    """Spec section 3.4 for a per-axis configured window (wd, wh, ww): int64 (n, n), n = wd*wh*ww."""
    wd, wh, ww = (int(w) for w in window)
    t = np.arange(wd * wh * ww)
    z, y, x = t // (wh * ww), (t // ww) % wh, t % ww
    dz = z[:, None] - z[None, :] + (wd - 1)
    dy = y[:, None] - y[None, :] + (wh - 1)
    dx = x[:, None] - x[None, :] + (ww - 1)
    return (dz * (2 * wh - 1) * (2 * ww - 1) + dy * (2 * ww - 1) + dx).astype(np.int64)


def tensors_of_case(entries, window) -> dict:
    """A golden case's state_dict as numpy arrays: every tensor entry of case.json ({key, shape, offset, scale, role})
    from the formula, relative_position_index buffers from spec 3.4 for the configured window."""
    return {e["key"]: relative_position_index(window) if e["role"] == "relative_position_index"
            else formula_array(e["key"], e["shape"], e["offset"], e["scale"]) for e in entries}


def self_check() -> None:
    """The vectorised path equals the scalar reference on a few keys and indices."""
    for key in ("input", "", "swinViT.patch_embed.proj.weight", "\u00e9\u4e2d"):
        u = unit_array(key, 40)
        for i in range(40):
            k = unit_int(fnv1a64(key), i)
            assert u[i] == np.float32(k - (1 << 23)) / np.float32(1 << 23)
        big = (1 << 33) + 7
        assert unit_array(key, 1, big)[0] == np.float32(unit_int(fnv1a64(key), big) - (1 << 23)) / np.float32(1 << 23)
    assert fnv1a64("") == FNV_OFFSET
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C  # published FNV-1a 64 test vector
