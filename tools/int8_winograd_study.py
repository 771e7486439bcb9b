#!/usr/bin/env python3
"""What int8 Winograd would cost in accuracy (docs/int8.md, "Speed"): one 3x3x3 convolution, 48 -> 48 channels on
a 24^3 grid, of an InstanceNorm-ed, LeakyReLU-ed smooth random field (what most of SwinUNETR's convolutions see)
with He-initialised weights, computed in float64 as

  direct    the scheme's int8: the input per tensor (max|x| / 127), the weights per output channel
  F(2,3)    Winograd F(2x2x2, 3x3x3) with int8 in the transformed domain: the transformed input per position of
            the 4^3 tile (its max over channels and tiles / 127), the transformed weights per (output, position);
            also with the transform taken exactly on the int8 input and requantized by a power of two per position
            (integer-only), with percentile scales per position, and with each tile's own scale per position
            (its max over the channels / 127, taken as each tile is transformed: no calibration)
  F(4,3)    Winograd F(4x4x4, 3x3x3) (points 0, +-1, +-2, inf) with int8 in the transformed domain likewise

and prints each one's relative L2 and max error against the float64 convolution. Needs torch and numpy.

    python3 tools/int8_winograd_study.py [--seed 0]
"""

import argparse

import torch
import torch.nn.functional as F

CHANNELS, GRID = 48, 24


def quantize(t, scale, lo=-128, hi=127):
    return torch.clamp(torch.round(t / scale), lo, hi) * scale


def per_position_input(v):  # v: (C, T, T, T, a, b, c): one scale per tile position (a, b, c)
    return quantize(v, v.abs().amax(dim=(0, 1, 2, 3), keepdim=True) / 127)


def per_tile_position_input(v):  # one scale per tile and position, over the channels alone
    return quantize(v, v.abs().amax(dim=0, keepdim=True).clamp(min=1e-30) / 127)


def per_position_weights(u):  # u: (O, C, a, b, c): one scale per output and tile position
    return quantize(u, u.abs().amax(dim=1, keepdim=True) / 127, -127, 127)


def winograd(x, w, bt, g, at, quantize_input=None, quantize_weights=None):
    """Y = A^T [(G w G^T) . (B^T x B)] A on m^3 output tiles, with optional quantization of either operand."""
    m, n = at.shape  # output tile, input tile
    grid = x.shape[-1]
    tiles = -(-grid // m)
    pad = tiles * m + 2 - grid - 1
    xp = F.pad(x.double(), (1, pad) * 3)
    d = xp.unfold(2, n, m).unfold(3, n, m).unfold(4, n, m)[0]  # C, T, T, T, n, n, n
    v = torch.einsum("ai,bj,ck,ntuvijk->ntuvabc", bt, bt, bt, d)
    u = torch.einsum("ai,bj,ck,onijk->onabc", g, g, g, w.double())
    if quantize_input:
        v = quantize_input(v)
    if quantize_weights:
        u = quantize_weights(u)
    mm = torch.einsum("ntuvabc,onabc->otuvabc", v, u)
    y = torch.einsum("ia,jb,kc,otuvabc->otuvijk", at, at, at, mm)
    out = y.permute(0, 1, 4, 2, 5, 3, 6).reshape(1, w.shape[0], tiles * m, tiles * m, tiles * m)
    return out[..., :grid, :grid, :grid]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    x = torch.randn(1, CHANNELS, GRID, GRID, GRID)
    blur = torch.ones(CHANNELS, 1, 3, 3, 3) / 27
    for _ in range(2):
        x = F.conv3d(x, blur, padding=1, groups=CHANNELS)
    x = F.leaky_relu(F.instance_norm(x), 0.01)
    w = torch.randn(CHANNELS, CHANNELS, 3, 3, 3) * (2 / (CHANNELS * 27)) ** 0.5
    ref = F.conv3d(x.double(), w.double(), padding=1)

    def report(name, y):
        rel = ((y - ref).norm() / ref.norm()).item()
        peak = ((y - ref).abs().max() / ref.abs().max()).item()
        print(f"{name:44s} rel L2 {rel:.3e}   max|d|/max|y| {peak:.3e}")

    f64 = dict(dtype=torch.float64)
    bt2 = torch.tensor([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], **f64)
    g2 = torch.tensor([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], **f64)
    at2 = torch.tensor([[1, 1, 1, 0], [0, 1, -1, -1]], **f64)
    bt4 = torch.tensor([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                        [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], **f64)
    g4 = torch.tensor([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                       [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], **f64)
    at4 = torch.tensor([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], **f64)

    sx = x.abs().max() / 127
    sw = w.abs().amax(dim=(1, 2, 3, 4), keepdim=True) / 127
    report("direct, the scheme's int8",
           F.conv3d(quantize(x, sx).double(), quantize(w, sw, -127, 127).double(), padding=1))
    report("F(2,3) float (the transform's own rounding)", winograd(x, w, bt2, g2, at2))
    report("F(2,3) int8, float scales per position",
           winograd(x, w, bt2, g2, at2, per_position_input, per_position_weights))

    def power_of_two_requantized(v):  # v is B^T q(x) B in float: the exact integers times sx
        integers = torch.round(v / sx)
        shift = torch.ceil(torch.log2(torch.clamp(integers.abs().amax(dim=(0, 1, 2, 3), keepdim=True) / 127, min=1)))
        return torch.clamp(torch.round(integers / 2**shift), -128, 127) * 2**shift * sx

    report("F(2,3) int8, int8 input, power-of-two shifts",
           winograd(quantize(x, sx), w, bt2, g2, at2, power_of_two_requantized, per_position_weights))
    for percentile in (99.99, 99.9):
        def clipped(v, p=percentile):
            sample = v.abs().reshape(-1, v.shape[-3] * v.shape[-2] * v.shape[-1])[::7].float()
            scale = torch.quantile(sample, p / 100, dim=0).double().reshape(v.shape[-3:]) / 127
            return quantize(v, scale)

        report(f"F(2,3) int8, {percentile} percentile per position",
               winograd(x, w, bt2, g2, at2, clipped, per_position_weights))
    report("F(2,3) int8, each tile's scale per position",
           winograd(x, w, bt2, g2, at2, per_tile_position_input, per_position_weights))
    report("F(4,3) float", winograd(x, w, bt4, g4, at4))
    report("F(4,3) int8, float scales per position",
           winograd(x, w, bt4, g4, at4, per_position_input, per_position_weights))
    report("F(4,3) int8, each tile's scale per position",
           winograd(x, w, bt4, g4, at4, per_tile_position_input, per_position_weights))


if __name__ == "__main__":
    main()
