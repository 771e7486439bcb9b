// swinfer cpu conv3d, implementations `winograd4` and `winograd2`: 3x3x3 stride-1 convolutions on Winograd
// F(4x4x4) or F(2x2x2) tiles in float32 (conv3d_winograd.hpp), on the output grids where the tiles pay.
#pragma once

#include <string_view>
#include <type_traits>

#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/conv3d_winograd.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"

namespace swinfer::cpu {

/// Tile is winograd::f4x3 or winograd::f2x3. F(4x4x4)'s float32 rounding (up to ~4e-5 of max|y|) hides under 16-bit
/// storage's (2^-9 or 2^-11 of every stored value) but not under float32's, so it implements 16-bit storage only;
/// F(2x2x2) any storage. The automatic choice prepares one of them: F(4x4x4) where 16-bit storage pays for it
/// (grids from 8^3), else F(2x2x2) where it pays (grids from 4^3); the direct GEMM takes the smaller grids.
template <class S, class Tile>
class conv3d_winograd_tiles {
  using tiles = conv3d_winograd<Tile>;
  static constexpr bool four = std::is_same_v<Tile, winograd::f4x3>;

 public:
  static constexpr conv3d_kernel id = four ? conv3d_kernel::winograd4 : conv3d_kernel::winograd2;
  static constexpr std::string_view name = four ? "winograd4" : "winograd2";
  static constexpr bool every_grid = false;
  static constexpr bool records_rows = false;  ///< its output passes through tiles: moments by a pass afterwards

  static implementable can_implement(const ops::conv3d_problem& p, const context&) {
    if (!tiles::applies(p)) {
      return implementable::no("it runs unquantized 3x3x3 convolutions of stride 1 and padding 1 only");
    }
    if (four && sizeof(S) != 2) {
      return implementable::no("its float32 rounding (~4e-5 of max|y|) exceeds float32 storage's: 16-bit storage "
                               "only");
    }
    return implementable::yes();
  }
  /// Enough channels for the GEMMs to outweigh the transforms, and transformed filters small enough for cache.
  static bool pays(const ops::conv3d_problem& p, const context&, const conv3d_prepared& prepared) {
    if constexpr (!four) {
      if (prepared(conv3d_kernel::winograd4)) return false;  // one Winograd per convolution
    }
    return tiles::pays(p);
  }
  bool pays(const shape5& out) const { return tiles::pays(out); }
  bool rounds_weights() const { return false; }

  conv3d_winograd_tiles(context&, const conv3d_weights& w) : tiles_(w.problem(), w.weight(), w.bias()) {}

  void run(context& ctx, const ops::conv3d_problem&, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records*) {
    tiles_.run(ctx, in, out);
  }

 private:
  tiles tiles_;
};

}  // namespace swinfer::cpu
