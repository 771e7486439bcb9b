// swinfer oneDNN backend: the quantized Linear of precision::int8 (docs/int8.md).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/int8_weights.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::onednn {

/// What a matmul does after x W^T + b, in this order.
struct matmul_epilogue {
  /// Per-output-column factors (binary_mul post-op); window attention scales the q columns by hd^-0.5 with it.
  std::vector<float> column_scale;
  bool gelu = false;        ///< exact erf GELU (eltwise_gelu_erf post-op)
  bool accumulate = false;  ///< y += result (sum post-op) instead of y = result
  dt dst_type = dt::undef;  ///< output data type; undef means the source's
};

/// \brief y (rows, out) = epilogue(float(sum q_x q_w[o]) * s_x * s_w[o] + b[o]) on float32 rows, s_x calibrated or
/// (dynamic scales) each row's own.
///
/// x is quantized by a reorder to s8 (x * (1 / s_x), rounded half to even and saturated: ops::quantize_activation),
/// the weights per output feature (ops::channel_quantized_weights). Primitive: matmul with s8 src (rows, in)
/// row-major, s8 weights in format_tag::any, f32 dst, s32 accumulation, output scales s_x * s_w[o] (mask 1 << 1),
/// then the float path's epilogue as post-ops [binary_add bias] [binary_mul column scale] [eltwise_gelu_erf]
/// [sum]. oneDNN 2.6's GEMM-based int8 matmul takes a sum only as the first post-op (elsewhere it falls back to its
/// reference kernel, 20x slower: 19 of the demo's 28 s), so an accumulating product without GELU or column scale
/// (MLP linear2, attention proj) puts it first: y + acc * scale + b is the same sum.
///
/// Without VNNI oneDNN's int8 GEMM saturates its int16 pair sums and, unlike its convolution, says nothing: 64 rows
/// of q_x = 127 times q_w = 127 over 96 features gave 12240 for 1548384 (AVX2, oneDNN 2.6). There the weights are
/// split (split_int8_weights) and the first part's scaled sums go to a float32 buffer that the second part's matmul
/// adds (binary_add) with the rest of the epilogue.
///
/// Dynamic scales: each row quantized with its own s_x (a reorder with per-row run-time scales), the parts' sums
/// (times their multipliers) into float32, then one binary_mul by the rows' s_x (a (rows, 1) operand) carries the
/// epilogue as post-ops [binary_mul s_w] [binary_add bias] [binary_mul column scale] [eltwise_gelu_erf] [sum]:
/// oneDNN 2.6's int8 matmul has no per-row scale, and a per-row binary post-op sends it to its reference kernel.
class int8_matmul {
 public:
  /// `int8` carries a calibrated scale or is dynamic.
  int8_matmul(context& ctx, int in_features, int out_features, const float* weight_oi, const float* bias_or_null,
              const matmul_epilogue& epilogue, const ops::int8_input& int8)
      : ctx_(ctx),
        in_(in_features),
        out_(out_features),
        epilogue_(epilogue),
        input_scale_(int8.scale),
        dynamic_(int8.dynamic) {
    if (!dynamic_ && !(input_scale_ > 0)) {
      detail::fail("int8 linear '", int8.point, "': needs a calibrated activation scale or dynamic scales");
    }
    if (bias_or_null) bias_ = f32_memory(ctx, {1, out_}, bias_or_null);
    if (!epilogue_.column_scale.empty()) column_scale_ = f32_memory(ctx, {1, out_}, epilogue_.column_scale.data());
    auto quantized = ops::channel_quantized_weights::quantize(weight_oi, out_features, in_features);
    weight_scales_ = std::move(quantized.scales);
    if (dynamic_) weight_scale_memory_ = f32_memory(ctx, {1, out_}, weight_scales_.data());
    // Each part's values as exact floats into a weights_store of s8 (PyTorch's (out, in) matrix is W^T in oneDNN's
    // "ba" order), reordered to each layout a primitive asks for.
    for (const auto& part : split_int8_weights(quantized.values, saturates_pairs() ? 64 : 127)) {
      const std::vector<float> values(part.values.begin(), part.values.end());
      weights_.emplace_back(ctx, dnnl::memory::dims{in_, out_}, tag::ba, dt::s8, values.data());
      multipliers_.push_back(part.multiplier);
    }
  }

  /// x: rows x in float32 values; y: rows x out values of the epilogue's destination type (f32 when undef).
  void run(const float* x, std::int64_t rows, void* y) {
    if (rows == 0) return;
    if (dynamic_) {
      run_dynamic(x, rows, y);
      return;
    }
    const dnnl::memory::desc src_md({rows, in_}, dt::f32, tag::ab), q_md({rows, in_}, dt::s8, tag::ab);
    const dnnl::memory::desc dst_md({rows, out_}, dst_type(), tag::ab), partial_md({rows, out_}, dt::f32, tag::ab);
    dnnl::memory q(q_md, ctx_.engine());
    ctx_.reorder_scaled(wrap(ctx_, src_md, x), q, 1.0f / input_scale_);
    const dnnl::memory dst = wrap(ctx_, dst_md, y);
    const dnnl::memory partial = multipliers_.size() > 1 ? dnnl::memory(partial_md, ctx_.engine()) : dnnl::memory();
    for (std::size_t i = 0; i < multipliers_.size(); ++i) {
      const bool last = i + 1 == multipliers_.size();
      const entry& e = pass(i, rows, last ? dst_md : partial_md);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, q},
                                                 {DNNL_ARG_WEIGHTS, weights_[i].get(e.pd.weights_desc())},
                                                 {DNNL_ARG_DST, last ? dst : partial}};
      add_operands(post_ops(i, partial), args);
      ctx_.execute(e.prim, args);
    }
  }

 private:
  struct entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };

  /// One post-op of a pass: a sum, a GELU, or a binary op with its second operand.
  struct post_op {
    enum kind { sum, gelu, add, mul } what;
    dnnl::memory operand;  ///< for add and mul
  };

  /// Whether oneDNN's int8 GEMM sums byte pairs into int16 on this CPU: everywhere below AVX-512 VNNI (AVX2-VNNI
  /// included, to be safe: oneDNN 2.6's GEMM kernels are chosen by the AVX-512 levels).
  static bool saturates_pairs() {
    const auto isa = dnnl::get_effective_cpu_isa();
    return isa != dnnl::cpu_isa::avx512_core_vnni && isa != dnnl::cpu_isa::avx512_core_bf16 &&
           isa != dnnl::cpu_isa::avx512_core_amx;
  }

  dt dst_type() const { return epilogue_.dst_type == dt::undef ? dt::f32 : epilogue_.dst_type; }

  /// With dynamic scales: each row quantized with its own scale, the parts' sums into float32, and the binary
  /// primitive that scales them per row and per column with the epilogue.
  void run_dynamic(const float* x, std::int64_t rows, void* y) {
    std::vector<float> scales(static_cast<std::size_t>(rows)), inverse(scales.size());
    SWINFER_ONEDNN_PARALLEL_FOR
    for (std::int64_t r = 0; r < rows; ++r) {
      scales[static_cast<std::size_t>(r)] = ops::dynamic_activation_scale(x + r * in_, in_);
      inverse[static_cast<std::size_t>(r)] = 1.0f / scales[static_cast<std::size_t>(r)];
    }
    const dnnl::memory::desc src_md({rows, in_}, dt::f32, tag::ab), q_md({rows, in_}, dt::s8, tag::ab);
    const dnnl::memory::desc sums_md({rows, out_}, dt::f32, tag::ab), scales_md({rows, 1}, dt::f32, tag::ab);
    dnnl::memory q(q_md, ctx_.engine()), sums(sums_md, ctx_.engine());
    ctx_.reorder_scaled_rows(wrap(ctx_, src_md, x), q, inverse.data());
    const dynamic_entry& e = dynamic_pass(rows);
    for (std::size_t i = 0; i < e.parts.size(); ++i) {
      ctx_.execute(e.parts[i].prim, {{DNNL_ARG_SRC, q},
                                     {DNNL_ARG_WEIGHTS, weights_[i].get(e.parts[i].pd.weights_desc())},
                                     {DNNL_ARG_DST, sums}});
    }
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_0, sums},
                                               {DNNL_ARG_SRC_1, wrap(ctx_, scales_md, scales.data())},
                                               {DNNL_ARG_DST, wrap(ctx_, {{rows, out_}, dst_type(), tag::ab}, y)}};
    add_operands(dynamic_post_ops(), args);
    ctx_.execute(e.scale, args);
  }

  /// The binary post-ops' second operands into a primitive's arguments.
  static void add_operands(const std::vector<post_op>& ops, std::unordered_map<int, dnnl::memory>& args) {
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].operand) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(k)) | DNNL_ARG_SRC_1] = ops[k].operand;
    }
  }

  /// `ops` as oneDNN post-ops.
  static dnnl::post_ops to_dnnl(const std::vector<post_op>& ops) {
    dnnl::post_ops po;
    for (const auto& op : ops) {
      switch (op.what) {
        case post_op::sum: po.append_sum(1.0f); break;
        case post_op::gelu: po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f); break;
        case post_op::add: po.append_binary(dnnl::algorithm::binary_add, op.operand.get_desc()); break;
        case post_op::mul: po.append_binary(dnnl::algorithm::binary_mul, op.operand.get_desc()); break;
      }
    }
    return po;
  }

  /// The dynamic scales' epilogue, after the rows' scales: s_w, bias, column scale, GELU, residual.
  std::vector<post_op> dynamic_post_ops() const {
    std::vector<post_op> ops{{post_op::mul, weight_scale_memory_}};
    if (bias_) ops.push_back({post_op::add, bias_});
    if (column_scale_) ops.push_back({post_op::mul, column_scale_});
    if (epilogue_.gelu) ops.push_back({post_op::gelu, {}});
    if (epilogue_.accumulate) ops.push_back({post_op::sum, {}});
    return ops;
  }

  /// Part i's post-ops, in order: the whole epilogue on the last part (the earlier part's sums, `partial`, added),
  /// none before.
  std::vector<post_op> post_ops(std::size_t i, const dnnl::memory& partial) const {
    std::vector<post_op> ops;
    if (i + 1 < multipliers_.size()) return ops;
    const bool sum_first = epilogue_.accumulate && !epilogue_.gelu && !column_scale_;
    if (sum_first) ops.push_back({post_op::sum, {}});
    if (partial) ops.push_back({post_op::add, partial});
    if (bias_) ops.push_back({post_op::add, bias_});
    if (column_scale_) ops.push_back({post_op::mul, column_scale_});
    if (epilogue_.gelu) ops.push_back({post_op::gelu, {}});
    if (epilogue_.accumulate && !sum_first) ops.push_back({post_op::sum, {}});
    return ops;
  }

  /// The matmul of part i over `rows` rows into `dst`. Kept per instance: the output scales are the instance's
  /// weights' (oneDNN bakes them into the primitive).
  const entry& pass(std::size_t i, std::int64_t rows, const dnnl::memory::desc& dst) {
    auto& passes = passes_[rows];
    if (passes.size() <= i) passes.push_back(context::created("int8 matmul", [&] { return make_pass(i, rows, dst); }));
    return passes[i];
  }

  entry make_pass(std::size_t i, std::int64_t rows, const dnnl::memory::desc& dst) const {
    const dnnl::memory::desc partial_md({rows, out_}, dt::f32, tag::ab);
    const dnnl::post_ops po = to_dnnl(
        post_ops(i, multipliers_.size() > 1 ? dnnl::memory(partial_md, ctx_.engine(), nullptr) : dnnl::memory()));
    std::vector<float> scales(weight_scales_.size());
    for (std::size_t o = 0; o < scales.size(); ++o) scales[o] = input_scale_ * weight_scales_[o] * multipliers_[i];
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, scales);
    attr.set_post_ops(po);
    const dnnl::memory::desc src({rows, in_}, dt::s8, tag::ab), wei_any({in_, out_}, dt::s8, tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei_any, dst), attr, ctx_.engine());
    return entry{pd, dnnl::matmul(pd)};
  }

  /// With dynamic scales, over `rows` rows: each part's integer sums times its multiplier into float32 (the second
  /// part's added by a sum post-op), and the binary primitive that scales them and applies the epilogue.
  struct dynamic_entry {
    std::vector<entry> parts;
    dnnl::binary scale;
  };
  const dynamic_entry& dynamic_pass(std::int64_t rows) {
    auto it = dynamic_passes_.find(rows);
    if (it != dynamic_passes_.end()) return it->second;
    return dynamic_passes_.emplace(rows, context::created("int8 matmul", [&] { return make_dynamic(rows); }))
        .first->second;
  }

  dynamic_entry make_dynamic(std::int64_t rows) const {
    const dnnl::memory::desc src({rows, in_}, dt::s8, tag::ab), wei_any({in_, out_}, dt::s8, tag::any);
    const dnnl::memory::desc sums({rows, out_}, dt::f32, tag::ab), row_scales({rows, 1}, dt::f32, tag::ab);
    dynamic_entry e;
    for (std::size_t i = 0; i < multipliers_.size(); ++i) {
      dnnl::primitive_attr attr;
      attr.set_output_scales(0, {multipliers_[i]});
      if (i > 0) attr.set_post_ops(to_dnnl({{post_op::sum, {}}}));
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei_any, sums), attr, ctx_.engine());
      e.parts.push_back({pd, dnnl::matmul(pd)});
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(to_dnnl(dynamic_post_ops()));
    const dnnl::memory::desc dst({rows, out_}, dst_type(), tag::ab);
    e.scale = dnnl::binary(
        dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_mul, sums, row_scales, dst), attr,
                                     ctx_.engine()));
    return e;
  }

  context& ctx_;
  int in_, out_;
  matmul_epilogue epilogue_;
  float input_scale_;  ///< s_x, calibrated; 0 with dynamic scales
  bool dynamic_;
  std::vector<float> weight_scales_;  ///< s_w[o]
  dnnl::memory bias_, column_scale_;  ///< (1, out) each, empty when absent
  dnnl::memory weight_scale_memory_;  ///< (1, out) s_w with dynamic scales, empty otherwise
  std::vector<weights_store> weights_;  ///< per part of the weights (split_int8_weights)
  std::vector<float> multipliers_;      ///< per part
  std::unordered_map<std::int64_t, std::vector<entry>> passes_;  ///< per row count, one matmul per part
  std::unordered_map<std::int64_t, dynamic_entry> dynamic_passes_;  ///< per row count, with dynamic scales
};

}  // namespace swinfer::onednn
