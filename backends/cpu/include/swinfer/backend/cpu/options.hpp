// swinfer cpu backend: its options (engine_options plus the cpu backend's own) and the ids of its kernel variants.
// Light on purpose (no Eigen): the tool and the Python module fill these from their flags and variables.
#pragma once

#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"

namespace swinfer {

/// \brief What a bf16 model does with its weights on the cpu backend.
/// - exact (the default): weights keep 24 significant bits (float32 FMA) or 16 (AMX hi + lo), so bf16 only rounds
///   where an activation is stored; the same numbers on every CPU.
/// - rounded: weights rounded to bf16 once, like oneDNN, OpenVINO and PyTorch autocast; on CPUs with the AVX-512
///   BF16 pair dot product and no AMX (AMD Zen 4 and later) this runs the linears, the window attention's products
///   (their operands q, k, the softmax numerators, v and the heads' outputs rounded to bf16, as those engines round
///   them) and the convolutions Winograd does not take on an instruction with twice the float32 FMA's rate; the
///   3x3x3 convolutions on grids of 8^3 and more stay on float32 Winograd F(4x4x4) with exact weights, faster still.
///   Costs about 9 % more relative L2 on the goldens (docs/performance.md); AMX CPUs keep exact convolution weights.
enum class bf16_weight_mode { exact, rounded };

namespace cpu {

/// The 3-D convolution's implementations (conv3d.hpp holds their list, in this order of preference).
enum class conv3d_kernel {
  automatic,      ///< the list's first that can run the problem and pays for it
  int8_amx,       ///< int8 products on AMX tiles
  int8_vnni,      ///< int8 products on AVX-512 VNNI
  int8_madd,      ///< int8 products on AVX2 / AVX-512BW madd
  int8_portable,  ///< int8 products in plain C++
  amx_bf16,       ///< bf16 storage on AMX tiles (weights hi + lo, or rounded)
  winograd4,      ///< 3x3x3 on Winograd F(4x4x4) tiles in float32 (16-bit storage)
  bf16_pairs,     ///< bf16 storage with rounded weights on the AVX-512 BF16 pair dot product
  winograd2,      ///< 3x3x3 on Winograd F(2x2x2) tiles in float32
  whole_grid,     ///< small grids with large weights: the whole grid as one float32 GEMM
  direct,         ///< the float32 implicit GEMM over staged input planes (every problem)
};

/// Which implementation runs each op where several can: automatic, or one forced (an error where it cannot run
/// the problem, naming why).
struct kernel_choices {
  conv3d_kernel conv3d = conv3d_kernel::automatic;
};

}  // namespace cpu

/// The cpu backend's options.
template <>
struct backend_options<backend::cpu> : engine_options {
  backend_options() = default;
  backend_options(const engine_options& common) : engine_options(common) {}  // NOLINT: implicit on purpose
  /// bf16 models: exact or rounded weights (see bf16_weight_mode).
  bf16_weight_mode bf16_weights = bf16_weight_mode::exact;
  /// Kernel variants forced per op (automatic by default).
  cpu::kernel_choices kernels;
};

}  // namespace swinfer
