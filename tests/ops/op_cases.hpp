// One case table per op, shared by every backend's op tests (tests/ops/op_suite.hpp runs each row over every
// precision x layout a backend supports, like ggml's test-backend-ops). The rows are the union of what the cpu,
// onednn and hip kernel tests covered: odd sizes, batch 2, tile and block boundaries, every epilogue. Each row has a
// name (its configuration) that, prefixed with op/backend/precision/layout, names the test section.
#pragma once

#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attention_testing.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer_ops_test {

using swinfer::shape5;

/// "2x5x7x6x5" (N x C x D x H x W).
inline std::string dims(const shape5& s) {
  std::ostringstream o;
  o << s.n << "x" << s.c << "x" << s.d << "x" << s.h << "x" << s.w;
  return o.str();
}

/// "3" for an isotropic triple, "2x3x1" otherwise.
inline std::string triple(const std::array<int, 3>& a) {
  std::ostringstream o;
  if (a[0] == a[1] && a[1] == a[2]) {
    o << a[0];
  } else {
    o << a[0] << "x" << a[1] << "x" << a[2];
  }
  return o.str();
}

// ---- conv3d --------------------------------------------------------------------------------------------------------

struct conv3d_case {
  swinfer::ops::conv3d_problem p;
  shape5 in;
  shape5 in2{};  ///< when set (n > 0): the op also runs on in2, then on in again (one op, several input shapes)
};

/// "k3s1p1+bias 5->7 2x5x5x7x3".
inline std::string name(const conv3d_case& c) {
  std::ostringstream o;
  o << "k" << triple(c.p.kernel) << "s" << triple(c.p.stride) << "p" << triple(c.p.pad) << (c.p.bias ? "+bias" : "")
    << " " << c.p.cin << "->" << c.p.cout << " " << dims(c.in);
  if (c.in2.n > 0) o << "," << dims(c.in2) << "," << dims(c.in);
  return o.str();
}

inline const std::vector<conv3d_case>& conv3d_cases() {
  static const std::vector<conv3d_case> cases = {
      // from the cpu tests
      {{5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 5, 5, 7, 3}},        // odd volume, batch 2
      {{3, 50, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 3, 6, 5, 4}},        // a full and a 1-packet column group
      {{16, 100, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {1, 16, 4, 3, 19}},   // rows not a multiple of the tile
      {{20, 14, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true}, {2, 20, 4, 3, 5}},      // 1x1x1 projection / head
      {{1, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true}, {1, 1, 6, 4, 8}},        // patch embedding
      {{6, 9, {2, 3, 1}, {2, 1, 1}, {0, 1, 0}, false}, {1, 6, 5, 4, 3}},        // anisotropic kernel and stride
      {{104, 100, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {1, 104, 3, 3, 2}},  // weights split into L2 chunks
      {{192, 112, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 192, 3, 3, 2}},   // 2.3 MB of weights: a whole-grid GEMM
      // Winograd F(2x2x2, 3x3x3) from a 4^3 grid on: odd sides (clipped tiles), several rows per work item, input
      // channels past the last packet, a partial last column group, bias; the 3x3x2 second shape runs direct
      {{12, 52, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 12, 9, 7, 11}, {1, 12, 3, 3, 2}},
      {{8, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {1, 8, 4, 5, 40}},      // rows split into several items
      // the cpu backend's F(4x4x4, 3x3x3) under 16-bit storage, from an 8^3 grid on: clipped tiles, items of
      // several rows
      {{24, 20, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 24, 9, 8, 19}},
      // from the onednn tests: one op run on two input shapes, then the first again
      {{3, 5, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 3, 7, 6, 5}, {1, 3, 4, 9, 3}},
      {{20, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 20, 6, 5, 7}, {2, 20, 3, 3, 3}},
      {{1, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true}, {2, 1, 8, 6, 10}, {2, 1, 4, 4, 2}},   // patch embedding
      {{7, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, false}, {2, 7, 5, 3, 4}, {2, 7, 1, 2, 3}},    // 1x1x1 projection
      {{4, 6, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false}, {2, 4, 9, 7, 5}, {2, 4, 6, 6, 6}},    // stride 2, odd sizes
      {{16, 14, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true}, {2, 16, 4, 5, 6}, {1, 16, 3, 3, 3}}, // output head
      // from the hip tests
      {{5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 5, 6, 7, 9}},    // UNet 3x3x3
      {{3, 70, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 3, 5, 4, 11}},   // N beyond one 64-wide tile
      {{2, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true}, {1, 2, 8, 6, 10}},   // patch embedding
      {{9, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true}, {2, 9, 3, 5, 7}},     // output head
      {{4, 6, {3, 1, 3}, {2, 1, 2}, {1, 0, 1}, true}, {1, 4, 7, 5, 9}},     // anisotropic
      {{16, 20, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 16, 5, 6, 3}},  // ndhwc: 16-byte packs of channels
      {{16, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {1, 16, 6, 5, 9}}, // and the 128 x 48 tile (cout 48)
      {{96, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 96, 3, 3, 3}},  // bottom of the U: few tiles, long K
      {{1, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 1, 7, 6, 9}},  // a 1-channel scan's first convolution
      // the matrix cores' halo-tile kernel (cin, cout multiples of 48, channels-last): boxes of 4x4x8 outputs cut
      // by every side, two column tiles, two input chunks; unpadded, two samples; one box, its two input chunks
      // in two blocks (split K)
      {{96, 96, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 96, 9, 5, 17}},
      {{48, 48, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, false}, {2, 48, 7, 6, 11}},
      {{96, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {1, 96, 4, 4, 8}},
  };
  return cases;
}

// ---- conv3d's fused forms (backends with fuses_instance_norm / fuses_concat) -------------------------------------

/// out = conv(act(InstanceNorm(in))), the norm applied as the convolution loads its input.
struct conv3d_norm_case {
  swinfer::ops::conv3d_problem p;
  shape5 in;
  bool leaky_relu;
};

/// "after instance_norm+leaky_relu k3s1p1 5->7 2x5x6x7x9".
inline std::string name(const conv3d_norm_case& c) {
  return std::string("after instance_norm") + (c.leaky_relu ? "+leaky_relu " : " ") + name(conv3d_case{c.p, c.in});
}

inline const std::vector<conv3d_norm_case>& conv3d_norm_cases() {
  static const std::vector<conv3d_norm_case> cases = [] {
    // Two samples (their own statistics; 128-row tiles straddle them); cin 5 element by element, cin 16 in packs.
    const std::pair<swinfer::ops::conv3d_problem, shape5> bases[] = {
        {{5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 5, 6, 7, 9}},
        {{16, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 16, 5, 6, 7}},
        {{48, 48, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 48, 5, 6, 9}},  // the halo tile normalises
        {{80, 16, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true}, {1, 80, 4, 5, 6}},    // channels past one 64-channel chunk
    };
    std::vector<conv3d_norm_case> v;
    for (const auto& [p, in] : bases)
      for (const bool leaky_relu : {false, true}) v.push_back({p, in, leaky_relu});
    return v;
  }();
  return cases;
}

/// out = conv(concat_channels(first, second)), each part read where it is; no bias, two samples of 5x6x7.
struct conv3d_concat_case {
  int first, second, cout, kernel;
};

/// "k3s1p1 5+3->7 2x(5+3)x5x6x7".
inline std::string name(const conv3d_concat_case& c) {
  std::ostringstream o;
  o << "k" << c.kernel << "s1p" << c.kernel / 2 << " " << c.first << "+" << c.second << "->" << c.cout << " 2x("
    << c.first << "+" << c.second << ")x5x6x7";
  return o.str();
}

/// The two parts' shape (N, C, D, H, W) for `channels`.
inline shape5 concat_part_shape(std::int64_t channels) { return {2, channels, 5, 6, 7}; }

inline swinfer::ops::conv3d_problem problem(const conv3d_concat_case& c) {
  const int pad = c.kernel / 2;
  return {c.first + c.second, c.cout, {c.kernel, c.kernel, c.kernel}, {1, 1, 1}, {pad, pad, pad}, false};
}

inline const std::vector<conv3d_concat_case>& conv3d_concat_cases() {
  // Parts of 5 + 3 channels (element by element), 16 + 16 (packs from both), 16 + 5 (the second rules packs out),
  // 48 + 48 (a chunk of the halo tile from each); 3x3x3 (a decoder's conv1) and 1x1x1 (its residual projection).
  static const std::vector<conv3d_concat_case> cases = {
      {5, 3, 7, 3}, {16, 16, 48, 3}, {16, 16, 48, 1}, {16, 5, 20, 3}, {48, 48, 48, 3}};
  return cases;
}

// ---- conv_transpose3d (kernel 2, stride 2) -------------------------------------------------------------------------

struct conv_transpose3d_case {
  int cin, cout;
  shape5 in;
};

inline std::string name(const conv_transpose3d_case& c) {
  std::ostringstream o;
  o << "k2s2 " << c.cin << "->" << c.cout << " " << dims(c.in);
  return o.str();
}

inline const std::vector<conv_transpose3d_case>& conv_transpose3d_cases() {
  static const std::vector<conv_transpose3d_case> cases = {
      {5, 7, {2, 5, 3, 2, 4}},        // batch 2, odd sizes
      {20, 50, {1, 20, 2, 3, 5}},     // a full and a 1-packet column group
      {700, 100, {1, 700, 2, 2, 1}},  // weights split into L2 chunks
      {6, 5, {2, 6, 3, 4, 5}},
      {16, 8, {2, 16, 4, 3, 2}},
      {48, 48, {2, 48, 3, 3, 3}},
      {3, 17, {2, 3, 3, 4, 5}},
      {16, 5, {2, 16, 3, 4, 5}},
  };
  return cases;
}

// ---- linear (token rows, every epilogue) ---------------------------------------------------------------------------

struct linear_case {
  swinfer::ops::linear_problem p;
  std::int64_t rows;
  float x_range = 1.0f;  ///< inputs uniform in [-x_range, x_range)
};

/// "48->144+bias+gelu+acc 130 rows".
inline std::string name(const linear_case& c) {
  std::ostringstream o;
  o << c.p.in_features << "->" << c.p.out_features << (c.p.bias ? "+bias" : "") << (c.p.gelu ? "+gelu" : "")
    << (c.p.accumulate ? "+acc" : "") << " " << c.rows << " rows";
  if (c.x_range != 1.0f) o << " x in +-" << c.x_range;
  return o.str();
}

inline const std::vector<linear_case>& linear_cases() {
  static const std::vector<linear_case> cases = [] {
    std::vector<linear_case> v = {
        {{48, 144, true, false, false}, 130},  // qkv: rows cross the 64-row blocks
        {{19, 50, true, true, false}, 7},      // MLP linear1 (GELU)
        {{37, 5, false, false, true}, 65},     // no bias, accumulate
        {{50, 19, true, false, true}, 1},      // MLP linear2 / proj (bias + residual)
        {{13, 97, true, true, true}, 16},      // everything, three column groups
        {{768, 40, true, true, true}, 9},      // everything, few rows and a long K (split K on GPUs)
    };
    // onednn's: bias or not, MLP linear1 / linear2, GELU + accumulate, the merging reduction 8C -> 2C; 1 to 500 rows.
    for (const auto& p : {swinfer::ops::linear_problem{13, 7, true, false, false},
                          swinfer::ops::linear_problem{13, 7, false, false, false},
                          swinfer::ops::linear_problem{24, 96, true, true, false},
                          swinfer::ops::linear_problem{96, 24, true, false, true},
                          swinfer::ops::linear_problem{32, 40, true, true, true},
                          swinfer::ops::linear_problem{384, 96, false, false, false}})
      for (const std::int64_t rows : {37, 1, 500}) v.push_back({p, rows, 2.0f});
    // hip's: 37 inputs (read element by element) and 48 (16-byte packs), every epilogue combination.
    for (const int in_features : {37, 48})
      for (const bool bias : {true, false})
        for (const bool gelu : {false, true})
          for (const bool accumulate : {false, true}) v.push_back({{in_features, 71, bias, gelu, accumulate}, 53});
    return v;
  }();
  return cases;
}

/// y (=|+=) act(LayerNorm(x) W^T + b), the norm applied as the GEMM loads x (backends with fuses_layer_norm).
struct linear_norm_case {
  swinfer::ops::linear_problem p;
  std::int64_t rows;
  bool affine;  ///< the LayerNorm has gamma and beta
};

/// "after layer_norm+affine 37->96+bias+gelu+acc 53 rows".
inline std::string name(const linear_norm_case& c) {
  return std::string("after layer_norm") + (c.affine ? "+affine " : " ") + name(linear_case{c.p, c.rows});
}

inline const std::vector<linear_norm_case>& linear_norm_cases() {
  static const std::vector<linear_norm_case> cases = [] {
    std::vector<linear_norm_case> v;
    for (const int in_features : {37, 48})  // element by element, and in packs
      for (const bool affine : {true, false})
        for (const bool accumulate : {false, true})
          v.push_back({{in_features, 96, true, true, accumulate}, 53, affine});  // 96: the 128 x 48 tiles
    return v;
  }();
  return cases;
}

// ---- layer_norm (token rows; affine: bit 0 gamma, bit 1 beta; out of place and in place) ---------------------------

struct layer_norm_case {
  int channels;
  std::int64_t rows;
  float lo, hi;  ///< inputs uniform in [lo, hi): a mean away from 0 checks the statistics
  int affine;
  bool in_place;
};

inline std::string name(const layer_norm_case& c) {
  std::ostringstream o;
  o << c.channels << "ch " << c.rows << " rows [" << c.lo << "," << c.hi << ")"
    << (c.affine & 1 ? " gamma" : "") << (c.affine & 2 ? " beta" : "") << (c.in_place ? " in-place" : "");
  return o.str();
}

inline const std::vector<layer_norm_case>& layer_norm_cases() {
  static const std::vector<layer_norm_case> cases = [] {
    struct base {
      int channels;
      std::int64_t rows;
      float lo, hi;
    };
    // 12 (8 + 4 lanes with AVX-512), 45 (32 + 8 + 4 + 1) and 97: rows that are not whole packets
    std::vector<base> bases = {{7, 300, -3, 5},  {12, 300, -3, 5}, {48, 300, -3, 5},  // more than one 256-row block
                               {384, 300, -3, 5}, {45, 37, -1, 3},  {97, 37, -1, 3}, {384, 37, -1, 3}};
    for (const int channels : {7, 48, 96, 3072})  // hidden states with mean 0 and 10
      for (const float offset : {0.0f, 10.0f}) bases.push_back({channels, 33, offset - 2, offset + 2});
    std::vector<layer_norm_case> v;
    for (const auto& b : bases)
      for (const int affine : {0, 1, 2, 3})  // 0: MONAI's parameter-free proj_out
        for (const bool in_place : {false, true}) v.push_back({b.channels, b.rows, b.lo, b.hi, affine, in_place});
    return v;
  }();
  return cases;
}

// ---- instance_norm (in place, optional residual and LeakyReLU) -----------------------------------------------------

struct instance_norm_case {
  shape5 s;
  float lo, hi;
  bool residual, activation;
};

inline std::string name(const instance_norm_case& c) {
  std::ostringstream o;
  o << dims(c.s) << " [" << c.lo << "," << c.hi << ")" << (c.residual ? " +residual" : "")
    << (c.activation ? " +leaky_relu" : "");
  return o.str();
}

inline const std::vector<instance_norm_case>& instance_norm_cases() {
  static const std::vector<instance_norm_case> cases = [] {
    struct base {
      shape5 s;
      float lo, hi;
    };
    // A large common offset checks that the statistics do not lose the variance to cancellation; 1x3x20x21x22 spans
    // 19 of the cpu's 512-voxel blocks (the last partial), 1x4x17x19x23 several of hip's statistics chunks.
    const base bases[] = {{{2, 5, 5, 7, 3}, 90, 110},  {{1, 3, 20, 21, 22}, 90, 110}, {{2, 5, 7, 6, 5}, -2, 3},
                          {{2, 3, 5, 7, 9}, -2, 5},    {{1, 4, 17, 19, 23}, -2, 5},   {{2, 48, 5, 6, 7}, -2, 5},
                          {{2, 5, 4, 6, 8}, -2, 5}};
    std::vector<instance_norm_case> v;
    for (const auto& b : bases)
      for (const bool residual : {false, true})
        for (const bool activation : {false, true}) v.push_back({b.s, b.lo, b.hi, residual, activation});
    return v;
  }();
  return cases;
}

// ---- window_attention (x += WindowMSA(y): every way the window plan clamps, pads and shifts) ----------------------

struct window_attention_case {
  std::vector<std::array<std::int64_t, 3>> grids;  ///< one op run on each in turn: its plan-dependent tables rebuilt
  int channels, heads;
  std::array<int, 3> window;  ///< configured
  std::int64_t batch;
  bool qkv_bias, shifted;
  bool pre_norm = false;  ///< x += attn(LayerNorm(x)), the norm applied as the windows are gathered (fuses_layer_norm)
};

/// "grid 9x8x10 C32 2 heads window 7 batch 2 +qkv_bias shifted".
inline std::string name(const window_attention_case& c) {
  std::ostringstream o;
  if (c.pre_norm) o << "after layer_norm ";
  o << (c.grids.size() > 1 ? "grids " : "grid ");
  for (std::size_t i = 0; i < c.grids.size(); ++i) {
    const auto& g = c.grids[i];
    o << (i ? "," : "") << g[0] << "x" << g[1] << "x" << g[2];
  }
  o << " C" << c.channels << " " << c.heads << (c.heads == 1 ? " head" : " heads") << " window "
    << triple(c.window) << " batch " << c.batch << (c.qkv_bias ? " +qkv_bias" : "") << (c.shifted ? " shifted" : "");
  return o.str();
}

inline const std::vector<window_attention_case>& window_attention_cases() {
  static const std::vector<window_attention_case> cases = [] {
    std::vector<swinfer_test::attention_case> geometries = swinfer_test::window_clamp_cases();
    geometries.insert(geometries.end(), {
        // from the hip tests: head dims 32 and 48 (two query tiles per window; the 64-wide kernels)
        {"head dim 32 (fs96), two query tiles per window", {8, 9, 7}, 64, 2, {7, 7, 7}, 1},
        {"head dim 48: the 64-wide kernel", {9, 7, 8}, 96, 2, {7, 7, 7}, 1},
        // from the onednn tests: batch 2, head dims 4, 6 and 16
        {"every axis > 7: window 7, shift 3, padded to 14", {8, 8, 8}, 12, 3, {7, 7, 7}, 2},
        {"every axis == 7: one window, no shift", {7, 7, 7}, 12, 2, {7, 7, 7}, 2},
        {"every axis < 7: clamped, truncated bias index", {6, 4, 2}, 32, 2, {7, 7, 7}, 2},
        {"> 7, == 7 and < 7 on one grid", {9, 7, 5}, 12, 2, {7, 7, 7}, 2},
        {"padded on every axis", {12, 10, 8}, 32, 2, {7, 7, 7}, 2},
        {"anisotropic: 2, 3 and 4 windows per axis, 24 per sample", {8, 15, 22}, 12, 3, {7, 7, 7}, 2},
        // head dims 3 (the cpu backend's P.v as the softmax streams, up to 4) and 8 (fs24)
        {"head dim 3", {8, 9, 7}, 6, 2, {7, 7, 7}, 1},
        {"head dim 8 (fs24)", {9, 8, 8}, 24, 3, {7, 7, 7}, 1},
    });
    std::vector<window_attention_case> v;
    for (const auto& g : geometries)
      for (const bool qkv_bias : {true, false})
        for (const bool shifted : {false, true})
          v.push_back({{g.grid}, g.channels, g.heads, g.configured, g.batch, qkv_bias, shifted});
    // One op on changing plans (its bias and region tables rebuilt), head dim 16 (fs48); 6x6x6 is 96^3's stage 4.
    v.push_back({{{9, 10, 8}, {6, 6, 6}, {8, 12, 15}, {9, 10, 8}}, 16, 1, {7, 7, 7}, 1, true, true});
    // The fused pre-norm on every clamp case.
    for (const auto& g : swinfer_test::window_clamp_cases())
      for (const bool shifted : {false, true})
        v.push_back({{g.grid}, g.channels, g.heads, g.configured, g.batch, true, shifted, true});
    return v;
  }();
  return cases;
}

// ---- concat_channels -----------------------------------------------------------------------------------------------

struct concat_case {
  std::vector<std::int64_t> channels;  ///< of each part
  shape5 grid;                         ///< n, d, h, w of every part (c unused)
};

inline std::string name(const concat_case& c) {
  std::ostringstream o;
  for (std::size_t i = 0; i < c.channels.size(); ++i) o << (i ? "+" : "") << c.channels[i];
  o << " channels " << c.grid.n << "x_x" << c.grid.d << "x" << c.grid.h << "x" << c.grid.w;
  return o.str();
}

inline const std::vector<concat_case>& concat_cases() {
  static const std::vector<concat_case> cases = {
      {{3, 5}, {2, 0, 5, 7, 3}},         {{1, 3, 5, 1}, {2, 0, 5, 7, 3}}, {{3, 6}, {2, 0, 5, 4, 3}},
      {{48, 48}, {2, 0, 5, 4, 3}},       {{1, 12, 24, 7, 5}, {2, 0, 5, 4, 3}},
      {{3, 1, 6}, {2, 0, 3, 5, 7}},
  };
  return cases;
}

// ---- pool3d (max and average, floor mode) --------------------------------------------------------------------------

struct pool3d_case {
  shape5 s;
  int kernel;
  swinfer::ops::pool_mode mode;
};

inline std::string name(const pool3d_case& c) {
  std::ostringstream o;
  o << swinfer::ops::pool_mode_name(c.mode) << " k" << c.kernel << " " << dims(c.s);
  return o.str();
}

inline const std::vector<pool3d_case>& pool3d_cases() {
  static const std::vector<pool3d_case> cases = [] {
    // Odd sizes leave a floor remainder on every axis; kernel 1 is the identity.
    const std::pair<shape5, int> bases[] = {{{2, 3, 9, 7, 11}, 2}, {{1, 5, 13, 8, 9}, 4}, {{1, 2, 33, 32, 40}, 16},
                                            {{1, 4, 3, 5, 2}, 1},  {{1, 6, 17, 16, 9}, 8}, {{2, 3, 7, 8, 11}, 2},
                                            {{2, 3, 7, 8, 11}, 3}};
    std::vector<pool3d_case> v;
    for (const auto& [s, k] : bases)
      for (const auto mode : {swinfer::ops::pool_mode::max, swinfer::ops::pool_mode::avg}) v.push_back({s, k, mode});
    return v;
  }();
  return cases;
}

// ---- patch_merge_gather (every merge order) ------------------------------------------------------------------------

struct patch_merge_case {
  shape5 s;
  swinfer::ops::merge_order order;
};

inline std::string name(const patch_merge_case& c) {
  std::ostringstream o;
  o << swinfer::ops::merge_order_name(c.order) << " " << dims(c.s);
  return o.str();
}

inline const std::vector<patch_merge_case>& patch_merge_cases() {
  static const std::vector<patch_merge_case> cases = [] {
    std::vector<patch_merge_case> v;
    for (const shape5 s : {shape5{2, 6, 4, 6, 2}, shape5{2, 5, 6, 4, 8}, shape5{2, 5, 4, 6, 10}})
      for (const auto order : {swinfer::ops::merge_order::merging, swinfer::ops::merge_order::merging_legacy,
                               swinfer::ops::merge_order::mergingv2})
        v.push_back({s, order});
    return v;
  }();
  return cases;
}

// ---- convert (float32 <-> storage, every layout pair) --------------------------------------------------------------

struct convert_case {
  shape5 s;
  float range;  ///< float32 source uniform in [-range, range)
  swinfer::layout_kind from, to;
};

inline std::string name(const convert_case& c) {
  std::ostringstream o;
  o << swinfer::layout_name(c.from) << "->" << swinfer::layout_name(c.to) << " " << dims(c.s) << " +-" << c.range;
  return o.str();
}

inline const std::vector<convert_case>& convert_cases() {
  static const std::vector<convert_case> cases = [] {
    std::vector<convert_case> v;
    for (const auto& [s, range] : {std::pair<shape5, float>{{2, 5, 7, 3, 9}, 3.0f}, {{2, 5, 3, 4, 6}, 300.0f},
                                   {{2, 5, 3, 7, 9}, 100.0f}})
      for (const auto from : {swinfer::layout_kind::ncdhw, swinfer::layout_kind::ndhwc})
        for (const auto to : {swinfer::layout_kind::ncdhw, swinfer::layout_kind::ndhwc}) v.push_back({s, range, from, to});
    return v;
  }();
  return cases;
}

}  // namespace swinfer_ops_test
