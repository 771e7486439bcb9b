// swinfer cpu backend: fused (shifted-)window multi-head self-attention of a Swin block, x += attn(y).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/bf16_dot.hpp"
#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_matrix.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_bias_cache.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::cpu {

/// \brief x += WindowAttention(y) for token tensors (N, C, D, H, W) (channels-last in the model; channels-first
/// works too), storage S, float32 compute.
///
/// A window is processed in worker scratch (~0.5 MiB at fs48 stage 1, L2-resident): gather
/// its t tokens (shift roll and zero padding applied by index), qkv = X Wqkv^T + b, q *= scale, then per head and per
/// 16 query rows: scores = q k^T [16 x t], + relative bias + shift mask (-100) in one streaming pass, softmax
/// (unnormalised exp; 1/sum applied to P.v), P.v [16 x hd] (for head dims up to 4, as each row's numerators are
/// produced: attend_head_small); finally proj and a scatter-add of the real tokens into x. Scores never leave L1. Only
/// the r real tokens are queries (a pad token's output is cropped): they are the first rows, and every pad token's k
/// and v come from one zero row after them (MONAI pads with zeros after norm1, so that is the qkv bias alone), so qkv
/// runs on r + 1 rows and the rest on r; a window at the grid's edge costs its share of real tokens (the demo model's
/// 16^3 and 8^3 grids are 44 % and 19 % real after padding to 21^3 and 14^3). Under precision::int8 the qkv and proj
/// products whose inputs are quantized (calibrated, or each row's dynamic scale) run on int8 (int8_matrix.hpp), the
/// window's rows quantized as they are staged; the attention products and the softmax stay float32. Under bf16 storage
/// with rounded weights (bf16_weight_mode::rounded) where the AVX-512 BF16 pair dot product pays, all four products
/// run on it (bf16_dot.hpp), as PyTorch autocast and OpenVINO's bf16 run them: qkv and proj with their weights rounded
/// once, q k^T on q (scaled) and k rounded to bf16, P.v on the softmax numerator and v rounded, proj on the heads'
/// outputs rounded; float32 accumulation, bias, mask and softmax. The dense bias [heads][t][t] (1.5 MiB at fs48 stage
/// 1, read row by row as the softmax streams it, not as GEMM start values: those loads stall every micro tile) and the
/// region ids depend only on the plan: ops::window_bias_cache keeps them for the last plan, and the bias is laid out
/// like the scores again only when it changes.
/// Threads: work items are (sample, window), claimed one at a time (masked windows cost a little more); with fewer
/// than two per worker (the deep stages on many cores) the windows' qkv row blocks, (window, head) pairs and proj row
/// blocks are three loops of work items instead (run_in_phases), with the same results.
template <class S>
class window_attention {
 public:
  /// Query rows per scores block: [16 x t] floats stay in L1 for the bias, softmax and P.v passes.
  static constexpr std::int64_t query_rows = max_micro_rows;
  /// Head dims up to this take attend_head_small (SwinUNETR's are feature_size / 3: 4 at fs12). At 8 (fs24) the
  /// P.v micro tiles keep half their columns and are as fast (measured: 0.080 s against 0.083 s of attention).
  static constexpr int small_head_dim = 4;

  window_attention(context& ctx, const ops::window_attention_weights& w) : ctx_(ctx), w_(w) {
    w.check();
    tables_ = ops::window_bias_cache(w);
    const std::int64_t c = w.channels;
    const auto qkv_element = [&](std::int64_t k, std::int64_t o) { return w.qkv_weight[o * c + k]; };
    const auto proj_element = [&](std::int64_t k, std::int64_t o) { return w.proj_weight[o * c + k]; };
#ifdef SWINFER_CPU_AVX512_BF16
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      if (ctx.round_bf16_weights() && bf16_dot::pays()) {
        qkv_pairs_ = bf16_dot::packed_pairs(1, c, 3 * c, qkv_element);
        proj_pairs_ = bf16_dot::packed_pairs(1, c, c, proj_element);
      }
    }
#endif
    if (w.qkv_int8.quantized()) {
      qkv_int8_ = quantized_matrix(w.qkv_int8, w.qkv_weight, c, 3 * c);
    } else if (!uses_pairs()) {
      qkv_ = packed_matrix(c, 3 * c, qkv_element);
    }
    if (w.proj_int8.quantized()) {
      proj_int8_ = quantized_matrix(w.proj_int8, w.proj_weight, c, c);
    } else if (!uses_pairs()) {
      proj_ = packed_matrix(c, c, proj_element);
    }
    // Allocated with the weights rather than between the activations of a run (a window never has more tokens).
    token_rows_.resize(static_cast<std::size_t>(ctx.threads()));
    for (token_rows& map : token_rows_) map.reserve(w.configured_tokens());
    qkv_bias_ = padded_bias(w.qkv_bias, 3 * c);
    proj_bias_ = padded_bias(w.proj_bias, c);
    // Packed above, and the bias table and index are copied into tables_: the op must not depend on the
    // checkpoint's lifetime.
    w_.qkv_weight = w_.qkv_bias = w_.proj_weight = w_.proj_bias = w_.bias_table = nullptr;
    w_.relative_index = nullptr;
  }

  /// The instruction path of the products: "avx512 bf16 dot" (all four on the pair dot product), or "fp32 fma"
  /// for the attention products with the linears in float32 or int8.
  const char* path() const { return uses_pairs() ? "avx512 bf16 dot" : "fp32 fma"; }

  void run(const tensor<S>& y, const ops::window_plan& plan, bool shifted, tensor<S>& x) {
    w_.check(y.shape(), x.shape(), plan);
    if (x.layout() != y.layout()) detail::fail("window_attention: y and x need one layout");
    const auto timed = ctx_.time_op([&] {
      return op_label{"window_attention",
                      detail::concat("window_attention C", w_.channels, " @", grid_name(y.shape()),
                                     shifted && plan.has_shift() ? " shifted" : ""),
                      2.0 * static_cast<double>(y.shape().n) * ops::window_attention_macs(plan, w_.channels)};
    });
    update_caches(plan, shifted && plan.has_shift());
    const pass p(*this, y, plan, shifted, x);
    // Calibration sees the two linears' inputs as MONAI computes them: every window's rows, pad tokens included, in
    // window order (every token is then a query row).
    window_rows qkv_seen(ctx_, w_.qkv_int8.point, p.items * p.t, w_.channels);
    window_rows proj_seen(ctx_, w_.proj_int8.point, p.items * p.t, w_.channels);
    const bool every_token = qkv_seen.active() || proj_seen.active();
    if (every_token || p.items >= windows_per_worker * ctx_.threads()) {
      run_by_window(p, every_token, qkv_seen, proj_seen);
    } else {
      run_in_phases(p);
    }
    qkv_seen.hand_over();
    proj_seen.hand_over();
  }

 private:
  /// \brief Calibration's copy of one linear's input rows, filled by the workers and handed to the observer after
  /// the parallel loop (observers run on the calling thread); nothing when calibration does not observe the point.
  class window_rows {
   public:
    window_rows(const context& ctx, const std::string& point, std::int64_t rows, std::int64_t channels)
        : ctx_(ctx), point_(point) {
      if constexpr (std::is_same_v<S, float>) {
        if (ctx.observes(point)) rows_ = tensor<float>({1, channels, 1, 1, rows}, layout_kind::ndhwc);
      }
    }
    /// Rows [row0, row0 + count) from x (rows of `channels` floats).
    void copy(std::int64_t row0, const float* x, std::int64_t count) {
      if (!active()) return;
      const std::int64_t channels = rows_.shape().c;
      std::copy_n(x, count * channels, rows_.data() + row0 * channels);
    }
    void hand_over() const {
      if (active()) ctx_.observe_input(point_, rows_);
    }
    bool active() const { return rows_.size() > 0; }

   private:
    const context& ctx_;
    const std::string& point_;
    tensor<float> rows_;
  };

  /// \brief The rows one window's products run on (see the class comment).
  struct token_rows {
    std::vector<std::int64_t> source;  ///< per row: its token's element offset in y, -1 for a zero row
    std::vector<int> token;            ///< per query row: its token's index in the window
    std::vector<int> key_row;          ///< per token: the row holding its k and v
    int queries = 0;                   ///< query rows, first (the real tokens, or every token)
    int used = 0;                      ///< rows the qkv product runs on: the queries and the shared zero row

    /// Room for windows of up to t tokens.
    void reserve(int t) {
      source.resize(static_cast<std::size_t>(t) + 1);
      token.resize(static_cast<std::size_t>(t));
      key_row.resize(static_cast<std::size_t>(t));
    }
    /// Window `win` of the sample at `sample_offset` in y (strides st); every_token: each token its own row.
    void assign(const ops::window_plan& plan, bool shifted, std::int64_t win, std::int64_t sample_offset,
                const std::array<std::int64_t, 5>& st, bool every_token) {
      const int t = plan.tokens();
      std::fill_n(key_row.begin(), t, -1);
      queries = 0;
      for (int i = 0; i < t; ++i) {
        std::array<std::int64_t, 3> src{};
        const bool real = ops::window_token_source(plan, shifted, win, i, src);
        if (!real && !every_token) continue;
        source[static_cast<std::size_t>(queries)] =
            real ? sample_offset + src[0] * st[2] + src[1] * st[3] + src[2] * st[4] : -1;
        token[static_cast<std::size_t>(queries)] = i;
        key_row[static_cast<std::size_t>(i)] = queries++;
      }
      used = queries;
      if (queries == t) return;
      source[static_cast<std::size_t>(used)] = -1;
      std::replace(key_row.begin(), key_row.begin() + t, -1, used);
      ++used;
    }
  };

  /// One worker's view of one window's scratch and sizes (see run()).
  struct window_scratch {
    int t = 0;        ///< tokens: keys
    int queries = 0;  ///< query rows: the real tokens (every token in calibration)
    const int* token = nullptr;    ///< per query row, its token's index in the window
    const int* key_row = nullptr;  ///< per token, the qkv row holding its k and v
    std::int64_t qkv_ld = 0, score_ld = 0, pv_ld = 0;
    panel_layout kt, v;
    float *qkv = nullptr, *att = nullptr, *kt_panel = nullptr, *v_panel = nullptr, *scores = nullptr,
          *pv = nullptr;
    S *qkv_pairs = nullptr, *p_pairs = nullptr;  ///< pair path: qkv and a block of P rounded to bf16
    bool masked = false;                         ///< the window mixes shift regions
    const std::uint8_t* region = nullptr;        ///< its tokens' region ids (shifted pass), else null
    float* regions = nullptr;                    ///< the same as floats, padded, when masked (worker scratch)
  };

  /// Work items per worker below which the windows are split (run_in_phases): with fewer, whole windows leave
  /// workers idle (96^3's 12^3 stage has 8 windows of 343, 245, 175 and 125 tokens; its 6^3 stage one).
  static constexpr std::int64_t windows_per_worker = 2;

  /// One call's sizes and operands.
  struct pass {
    pass(const window_attention& op, const tensor<S>& y_in, const ops::window_plan& plan_in, bool shifted_in,
         tensor<S>& x_in)
        : y(y_in), x(x_in), plan(plan_in), shifted(shifted_in), masked(shifted_in && plan_in.has_shift()),
          items(y_in.shape().n * plan_in.num_windows()), t(plan_in.tokens()), rows(round_up(t, max_micro_rows)),
          c(op.w_.channels), cs(y_in.strides()[1]), pairs(op.uses_pairs()),
          qkv_ld(round_up(3 * c, group_width)), proj_ld(round_up(c, group_width)),
          score_ld(round_up(t, group_width)), pv_ld(round_up(op.w_.head_dim(), group_width)),
          // K^T [hd x t] and V [t x hd] panels: float32, or bf16 pairs on the pair path (a pair per float).
          kt(pairs ? pair_panel(op.w_.head_dim(), t) : panel_layout{op.w_.head_dim(), t}),
          v(pairs ? pair_panel(t, op.w_.head_dim()) : panel_layout{t, op.w_.head_dim()}) {}

    const tensor<S>& y;
    tensor<S>& x;
    const ops::window_plan& plan;
    bool shifted, masked;
    std::int64_t items;  ///< (sample, window) pairs
    int t;               ///< tokens per window
    std::int64_t rows;   ///< t rounded up to whole micro tiles
    std::int64_t c, cs;  ///< channels, and their stride in y and x
    bool pairs;          ///< all four products on the bf16 pair dot product
    std::int64_t qkv_ld, proj_ld, score_ld, pv_ld;
    panel_layout kt, v;

    /// Floats of one window's qkv rows and attention output (bf16 on the pair path, in the float area, with one
    /// value past the end for an odd depth), and on the pair path qkv in bf16 too.
    std::int64_t window_floats() const { return rows * qkv_ld + att_floats() + (pairs ? rows * qkv_ld / 2 : 0); }
    std::int64_t att_floats() const { return round_up(rows * c + bf16_pair_size, 16); }
    /// Floats of one worker's scratch for attending a head: K^T and V panels, scores, P.v block, the window's
    /// region ids as floats, and on the pair path a block of P in bf16.
    std::int64_t head_floats() const {
      return kt.size() + v.size() + query_rows * (score_ld + pv_ld) + score_ld +
             (pairs ? round_up(query_rows * p_stride(t), 32) / 2 : 0);
    }
  };

  /// Points w's qkv, att and (pair path) qkv_pairs at one window's area of window_floats(), w's head scratch at
  /// head_floats() from `head`.
  static void attach(const pass& p, float* window, float* head, window_scratch& w) {
    w.t = p.t;
    w.qkv_ld = p.qkv_ld;
    w.score_ld = p.score_ld;
    w.pv_ld = p.pv_ld;
    w.kt = p.kt;
    w.v = p.v;
    w.qkv = window;
    w.att = w.qkv + p.rows * p.qkv_ld;
    w.qkv_pairs = reinterpret_cast<S*>(w.att + p.att_floats());
    w.kt_panel = head;
    w.v_panel = w.kt_panel + p.kt.size();
    w.scores = w.v_panel + p.v.size();
    w.pv = w.scores + query_rows * p.score_ld;
    w.regions = w.pv + query_rows * p.pv_ld;
    w.p_pairs = reinterpret_cast<S*>(w.regions + p.score_ld);
  }

  /// The token rows of window item `item` (sample, window) into map.
  static void assign_window(const pass& p, std::int64_t item, bool every_token, token_rows& map) {
    const std::int64_t n = item / p.plan.num_windows(), win = item % p.plan.num_windows();
    map.assign(p.plan, p.shifted, win, n * p.y.strides()[0], p.y.strides(), every_token);
  }

  /// w's view of window item `item` (rows in map) for attending its heads: its tokens and its shift mask, the
  /// region ids copied to w.regions (w's worker's scratch) when masked.
  void view_window(const pass& p, std::int64_t item, const token_rows& map, window_scratch& w) const {
    const std::int64_t win = item % p.plan.num_windows();
    w.queries = map.queries;
    w.token = map.token.data();
    w.key_row = map.key_row.data();
    w.masked = p.masked && tables_.mixed_windows()[static_cast<std::size_t>(win)];
    w.region = p.masked ? tables_.regions().data() + win * p.t : nullptr;
    if (w.masked) {
      std::copy(w.region, w.region + p.t, w.regions);
      std::fill(w.regions + p.t, w.regions + p.score_ld, 0.0f);
    }
  }

  /// qkv rows [r0, r1) of w's window (r0 a multiple of max_micro_rows, r1 <= map.used), q scaled: the rows gathered
  /// into `tokens` (room for round_up(r1 - r0, max_micro_rows) rows, more rows zeroed up to `block_rows`), then
  /// the product, in float32/int8 (`staged`: its uint8 rows) or on pairs, whose qkv and attention rows' slack this
  /// also readies.
  void project_qkv(const pass& p, const token_rows& map, std::int64_t r0, std::int64_t r1, std::int64_t block_rows,
                   float* tokens, std::uint8_t* staged, const window_scratch& w) const {
    if (p.pairs) {
      gather_tokens(p.y.data(), map, r0, r1, p.cs, p.c, block_rows, reinterpret_cast<S*>(tokens));
      product_pairs(qkv_pairs_, reinterpret_cast<const S*>(tokens), p.c, r1 - r0, qkv_bias_, w.qkv + r0 * p.qkv_ld,
                    p.qkv_ld);
    } else {
      gather_tokens(p.y.data(), map, r0, r1, p.cs, p.c, block_rows, tokens);
      linear_rows(qkv_, qkv_int8_, tokens, r1 - r0, qkv_bias_, staged, w.qkv + r0 * p.qkv_ld, p.qkv_ld);
    }
    const float scale = w_.scale();
    for (std::int64_t i = r0; i < std::min<std::int64_t>(r1, map.queries); ++i) {
      Eigen::Map<Eigen::ArrayXf>(w.qkv + i * p.qkv_ld, p.c) *= scale;
    }
    if (p.pairs) {
      // The slack rows too: the micro tiles read them (finite: this product's, an earlier window's or zeroed).
      const std::int64_t end = round_up(r1, max_micro_rows);
      round_to_pairs(w.qkv + r0 * p.qkv_ld, w.qkv_pairs + r0 * p.qkv_ld, (end - r0) * p.qkv_ld);
      auto* att = reinterpret_cast<S*>(w.att);
      const std::int64_t att_begin = std::max<std::int64_t>(r0, map.queries) * p.c;
      const std::int64_t att_end = r1 == map.used ? p.rows * p.c + bf16_pair_size : r1 * p.c;
      if (att_begin < att_end) std::fill(att + att_begin, att + att_end, S(0.0f));
    }
  }

  /// Head h of w's window, on the worker whose scratch w points at.
  void attend(const pass& p, const window_scratch& w, int h) const {
    if (p.pairs) {
      attend_head_pairs(w, h);
    } else if (w_.head_dim() <= small_head_dim) {
      attend_head_small(w, h);
    } else {
      attend_head(w, h);
    }
  }

  /// x += proj of w's attention rows [r0, r1) (query rows; r0 a multiple of max_micro_rows), through `proj` (room
  /// for round_up(r1 - r0, max_micro_rows) rows of proj_ld).
  void project_out(const pass& p, const token_rows& map, std::int64_t r0, std::int64_t r1, float* proj,
                   std::uint8_t* staged, const window_scratch& w) const {
    if (p.pairs) {
      product_pairs(proj_pairs_, reinterpret_cast<const S*>(w.att) + r0 * p.c, p.c, r1 - r0, proj_bias_, proj,
                    p.proj_ld);
    } else {
      linear_rows(proj_, proj_int8_, w.att + r0 * p.c, r1 - r0, proj_bias_, staged, proj, p.proj_ld);
    }
    for (std::int64_t i = r0; i < r1; ++i) {
      const std::int64_t offset = map.source[static_cast<std::size_t>(i)];
      if (offset >= 0) scatter_add_channels(proj + (i - r0) * p.proj_ld, p.cs, p.c, p.x.data() + offset);
    }
  }

  /// One work item per (sample, window), entirely in its worker's scratch (L2-resident).
  void run_by_window(const pass& p, bool every_token, window_rows& qkv_seen, window_rows& proj_seen) {
    const std::int64_t staged_floats = std::max(qkv_int8_.staged_floats(p.t), proj_int8_.staged_floats(p.t));
    // Worker scratch, in floats: the window's area, head scratch, its rows X (bf16 on the pair path, in the float
    // area) and proj output, and the uint8 rows of the int8 products.
    const std::int64_t scratch =
        p.window_floats() + p.head_floats() + p.rows * (p.c + p.proj_ld) + round_up(staged_floats, 16);
    ctx_.parallel_for(p.items, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      const amx::optional_tile_scope held(qkv_int8_.tile_shapes());  // the windows' qkv products (and proj's: same C)
      float* base = ctx_.workspace(worker).reserve(scratch);
      window_scratch w;
      attach(p, base, base + p.window_floats(), w);
      float* tokens = base + p.window_floats() + p.head_floats();
      float* proj = tokens + p.rows * p.c;
      auto* staged = reinterpret_cast<std::uint8_t*>(proj + p.rows * p.proj_ld);
      token_rows& map = token_rows_[static_cast<std::size_t>(worker)];
      for (std::int64_t item = i0; item < i1; ++item) {
        assign_window(p, item, every_token, map);
        view_window(p, item, map, w);
        // In calibration every_token keeps every row in window order, as it observes.
        project_qkv(p, map, 0, map.used, p.rows, tokens, staged, w);
        if (!p.pairs) qkv_seen.copy(item * p.t, tokens, p.t);
        for (int h = 0; h < w_.heads; ++h) attend(p, w, h);
        if (!p.pairs) proj_seen.copy(item * p.t, w.att, p.t);
        project_out(p, map, 0, map.queries, proj, staged, w);
      }
    });
  }

  /// Few windows for the workers: the windows' qkv rows in blocks of max_micro_rows, then every (window, head),
  /// then the proj rows in blocks, three parallel loops over a shared area of every window's qkv and attention
  /// rows. Each row and head is computed as run_by_window computes it, so the results are the same.
  void run_in_phases(const pass& p) {
    const std::int64_t blocks = p.rows / max_micro_rows, window_floats = p.window_floats();
    const std::int64_t staged_floats =
        std::max(qkv_int8_.staged_floats(max_micro_rows), proj_int8_.staged_floats(max_micro_rows));
    const std::int64_t scratch =
        p.head_floats() + max_micro_rows * (p.c + p.proj_ld) + round_up(staged_floats, 16);
    float* const windows = ctx_.shared_workspace().reserve(p.items * window_floats);
    if (token_rows_.size() < static_cast<std::size_t>(p.items)) {
      token_rows_.resize(static_cast<std::size_t>(p.items));
      for (token_rows& map : token_rows_) map.reserve(w_.configured_tokens());
    }
    // Worker scratch: head scratch, then a block of rows X and of proj output, and their uint8 rows under int8.
    const auto with_window = [&](std::int64_t item, int worker, auto&& body) {
      float* base = ctx_.workspace(worker).reserve(scratch);
      window_scratch w;
      attach(p, windows + item * window_floats, base, w);
      const token_rows& map = token_rows_[static_cast<std::size_t>(item)];
      float* block = base + p.head_floats();
      body(map, w, block, reinterpret_cast<std::uint8_t*>(block + max_micro_rows * (p.c + p.proj_ld)));
    };
    ctx_.parallel_for(p.items, 1, [&](std::int64_t i0, std::int64_t i1, int) {
      for (std::int64_t item = i0; item < i1; ++item) {
        assign_window(p, item, false, token_rows_[static_cast<std::size_t>(item)]);
      }
    });
    ctx_.parallel_for(p.items * blocks, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      for (std::int64_t i = i0; i < i1; ++i) {
        with_window(i / blocks, worker, [&](const token_rows& map, window_scratch& w, float* tokens, auto* staged) {
          const std::int64_t r0 = i % blocks * max_micro_rows;
          if (r0 < map.used) {
            project_qkv(p, map, r0, std::min<std::int64_t>(r0 + max_micro_rows, map.used), max_micro_rows, tokens,
                        staged, w);
          }
        });
      }
    });
    ctx_.parallel_for(p.items * w_.heads, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      for (std::int64_t i = i0; i < i1; ++i) {
        with_window(i / w_.heads, worker, [&](const token_rows& map, window_scratch& w, float*, auto*) {
          view_window(p, i / w_.heads, map, w);
          attend(p, w, static_cast<int>(i % w_.heads));
        });
      }
    });
    ctx_.parallel_for(p.items * blocks, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      for (std::int64_t i = i0; i < i1; ++i) {
        with_window(i / blocks, worker, [&](const token_rows& map, window_scratch& w, float* block, auto* staged) {
          const std::int64_t r0 = i % blocks * max_micro_rows;
          if (r0 < map.queries) {
            project_out(p, map, r0, std::min<std::int64_t>(r0 + max_micro_rows, map.queries),
                        block + max_micro_rows * p.c, staged, w);
          }
        });
      }
    });
  }

  /// Head h's q and v columns in the window's qkv rows; its k columns packed as K^T [hd x t] into the K panel.
  struct head_columns {
    const float *q, *v;
  };
  head_columns pack_keys(const window_scratch& w, int h) const {
    const std::int64_t c = w_.channels, hd = w_.head_dim();
    const float* k = w.qkv + c + h * hd;
    w.kt.pack([&](std::int64_t d, std::int64_t j) { return k[w.key_row[j] * w.qkv_ld + d]; }, w.kt_panel);
    return {w.qkv + h * hd, w.qkv + 2 * c + h * hd};
  }

  /// Scores rows [0, block) = q k^T for query rows [r0, r0 + block), from the packed K panel.
  void score_block(const window_scratch& w, const float* q, std::int64_t r0, std::int64_t block) const {
    const float* q_rows = q + r0 * w.qkv_ld;
    for (int g = 0; g < w.kt.groups(); ++g) {
      gemm_group({&q_rows, 1, w_.head_dim(), w.qkv_ld}, block, w.kt_panel + w.kt.offset(g), w.kt.packets(g), nullptr,
                 0, w.scores + w.kt.group_col0(g), w.score_ld);
    }
  }

  /// Head h of one window in float32: att[:, h] = softmax(q k^T + bias + mask) v, 16 query rows at a time.
  void attend_head(const window_scratch& w, int h) const {
    const std::int64_t c = w_.channels, hd = w_.head_dim();
    const head_columns head = pack_keys(w, h);
    w.v.pack([&](std::int64_t j, std::int64_t d) { return head.v[w.key_row[j] * w.qkv_ld + d]; }, w.v_panel);
    for (std::int64_t r0 = 0; r0 < w.queries; r0 += query_rows) {
      const std::int64_t block = std::min<std::int64_t>(query_rows, w.queries - r0);
      score_block(w, head.q, r0, block);
      float inv_sum[query_rows];
      // The store lambdas capture the destination by value: the intrinsics' stores may alias anything, so a
      // pointer read through w would be reloaded after every packet (5 % of the stage-1 attention).
      softmax_numerators(
          w, h, r0, block, [scores = w.scores, ld = w.score_ld](std::int64_t r, std::int64_t j, const packet& e) {
            Eigen::internal::pstoreu(scores + r * ld + j, e);
          },
          [&](std::int64_t r, float sum) { inv_sum[r] = 1.0f / sum; });
      const float* p_rows = w.scores;
      for (int g = 0; g < w.v.groups(); ++g) {
        gemm_group({&p_rows, 1, w.t, w.score_ld}, block, w.v_panel + w.v.offset(g), w.v.packets(g), nullptr, 0,
                   w.pv + w.v.group_col0(g), w.pv_ld);
      }
      for (std::int64_t r = 0; r < block; ++r) {
        Eigen::Map<Eigen::ArrayXf>(w.att + (r0 + r) * c + h * hd, hd) =
            Eigen::Map<const Eigen::ArrayXf>(w.pv + r * w.pv_ld, hd) * inv_sum[r];
      }
    }
  }

  /// Head h of one window in float32 for head dims up to small_head_dim (D): q k^T as in attend_head, then each
  /// query row's P.v summed as the softmax produces the row's numerators, in D packets of partial sums over the
  /// keys (from V^T [D][t], zero padded, in the V panel's scratch) reduced once per row. A P.v micro tile computes
  /// a whole packet of output columns per row and would keep hd of them (4 of 16 at fs12).
  void attend_head_small(const window_scratch& w, int h) const {
    constexpr int D = small_head_dim;
    using namespace Eigen::internal;
    const std::int64_t c = w_.channels, hd = w_.head_dim(), vt_ld = round_up(w.t, packet_size);
    const head_columns head = pack_keys(w, h);
    float* const vt = w.v_panel;  // D * vt_ld floats: within the [t x hd] panel's t * 48
    for (std::int64_t d = 0; d < D; ++d)
      for (std::int64_t j = 0; j < vt_ld; ++j) {
        vt[d * vt_ld + j] = d < hd && j < w.t ? head.v[w.key_row[j] * w.qkv_ld + d] : 0.0f;
      }
    // Four named accumulators, not an array: GCC 12 kept an array captured by the lambdas below in memory, storing
    // and reloading it around every numerator's multiply-adds (8 % of the fs12 forward's samples, 2-core Zen 4).
    static_assert(D == 4, "one accumulator per head dim below");
    const float *v0 = vt, *v1 = vt + vt_ld, *v2 = vt + 2 * vt_ld, *v3 = vt + 3 * vt_ld;
    packet sum0, sum1, sum2, sum3;
    for (std::int64_t r0 = 0; r0 < w.queries; r0 += query_rows) {
      const std::int64_t block = std::min<std::int64_t>(query_rows, w.queries - r0);
      score_block(w, head.q, r0, block);
      sum0 = sum1 = sum2 = sum3 = pset1<packet>(0.0f);
      softmax_numerators(
          w, h, r0, block,
          [&](std::int64_t, std::int64_t j, const packet& e) {
            sum0 = pmadd(e, ploadu<packet>(v0 + j), sum0);
            sum1 = pmadd(e, ploadu<packet>(v1 + j), sum1);
            sum2 = pmadd(e, ploadu<packet>(v2 + j), sum2);
            sum3 = pmadd(e, ploadu<packet>(v3 + j), sum3);
          },
          [&](std::int64_t r, float sum) {
            float* out = w.att + (r0 + r) * c + h * hd;
            const float inv_sum = 1.0f / sum, dims[D] = {predux(sum0), predux(sum1), predux(sum2), predux(sum3)};
            for (std::int64_t d = 0; d < hd; ++d) out[d] = dims[d] * inv_sum;
            sum0 = sum1 = sum2 = sum3 = pset1<packet>(0.0f);
          });
    }
  }

  /// Scores rows of query rows [r0, r0 + block) of head h: + bias and mask, then the softmax's numerators, handed
  /// to store(r, j, packet) for row r's columns [j, j + packet_size) in order; then row_done(r, the row's sum).
  template <class Store, class RowDone>
  void softmax_numerators(const window_scratch& w, int h, std::int64_t r0, std::int64_t block, Store&& store,
                          RowDone&& row_done) const {
    const std::int64_t rows = round_up(w.t, max_micro_rows);
    const float* head_bias = bias_.data() + h * rows * w.score_ld;
    for (std::int64_t r = 0; r < block; ++r) {
      float* row = w.scores + r * w.score_ld;
      const int token = w.token[r0 + r];
      const float max = add_bias_and_mask(head_bias + token * w.score_ld, w.masked ? w.regions : nullptr,
                                          w.masked ? w.region[token] : 0, w.t, row);
      row_done(r, exp_minus(row, w.t, max, [&](std::int64_t j, const packet& e) { store(r, j, e); }));
    }
  }

  /// P rows of a block, bf16: the row stride, whole packets (the softmax stores them whole), each row starting a
  /// pair, with room for an odd t's zero partner.
  static std::int64_t p_stride(int t) { return round_up(t + 1, packet_size); }

// GCC 12's false -Wmaybe-uninitialized in Eigen's AVX-512 reductions inlined here (see simd.hpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  /// row[j] += bias[j], and the shift mask where the window's region ids (as floats; null: unmasked) differ from
  /// the query's `own`, over round_up(t, packet_size) values (the padding stays finite); returns the largest of the
  /// first t.
  static float add_bias_and_mask(const float* bias, const float* regions, float own, std::int64_t t, float* row) {
    using namespace Eigen::internal;
    const packet own_id = pset1<packet>(own), zero = pset1<packet>(0.0f);
    const packet mask_value = pset1<packet>(ops::shift_mask_value);
    const std::int64_t full = t / packet_size * packet_size;
    packet max = pset1<packet>(-INFINITY);
    for (std::int64_t j = 0; j < t; j += packet_size) {
      packet s = padd(ploadu<packet>(row + j), ploadu<packet>(bias + j));
      if (regions) s = padd(s, pselect(pcmp_eq(ploadu<packet>(regions + j), own_id), zero, mask_value));
      pstoreu(row + j, s);
      if (j < full) max = pmax(max, s);
    }
    float largest = predux_max(max);
    for (std::int64_t j = full; j < t; ++j) largest = std::max(largest, row[j]);
    return largest;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  static std::vector<float> padded_bias(const float* bias, std::int64_t n) {
    std::vector<float> padded(static_cast<std::size_t>(round_up(n, group_width)), 0.0f);
    if (bias) std::copy(bias, bias + n, padded.begin());
    return padded;
  }

  /// c[rows][cols] = a b + bias for rows of `b`'s depth floats at a, on every column group: in float32, or on
  /// int8 where `quantized` holds the weights (its uint8 rows staged in `staged`).
  static void linear_rows(const packed_matrix& b, const quantized_matrix& quantized, const float* a, std::int64_t rows,
                          const std::vector<float>& bias, std::uint8_t* staged, float* c, std::int64_t ldc) {
    if (!quantized.empty()) {
      const amx::optional_tile_scope held(quantized.tile_shapes());  // one configuration for every column group
      quantized.stage(a, rows, quantized.depth(), staged);
      for (int g = 0; g < quantized.layout().groups(); ++g) {
        const std::int64_t col0 = quantized.layout().group_col0(g);
        quantized.product(staged, quantized.staged_stride(), rows, g, bias.data() + col0, c + col0, ldc);
      }
      return;
    }
    const panel_layout& l = b.layout();
    const float* base = a;
    for (int g = 0; g < l.groups(); ++g) {
      gemm_group({&base, 1, l.depth, l.depth}, rows, b.panel(g), l.packets(g), bias.data() + l.group_col0(g), 0,
                 c + l.group_col0(g), ldc);
    }
  }

  /// Rows [r0, r1) of the window (map.source: offsets into y, -1 for a zero row) as float32 or as stored (D = S),
  /// channels `stride` apart in y, into dst's rows from 0; dst's rows after them up to `block_rows` zero.
  template <class D>
  static void gather_tokens(const S* y, const token_rows& map, std::int64_t r0, std::int64_t r1, std::int64_t stride,
                            std::int64_t c, std::int64_t block_rows, D* dst) {
    std::fill(dst + (r1 - r0) * c, dst + block_rows * c, D(0.0f));
    for (std::int64_t i = r0; i < r1; ++i) {
      D* row = dst + (i - r0) * c;
      const std::int64_t offset = map.source[static_cast<std::size_t>(i)];
      if (offset < 0) {
        std::fill(row, row + c, D(0.0f));
        continue;
      }
      const S* src = y + offset;
      if (stride == 1 && std::is_same_v<D, S>) {
        std::copy_n(src, c, row);
      } else if constexpr (std::is_same_v<D, S>) {
        for (std::int64_t ch = 0; ch < c; ++ch) row[ch] = src[ch * stride];
      } else if (stride == 1) {
        to_floats(src, row, c);
      } else {
        for (std::int64_t ch = 0; ch < c; ++ch) row[ch] = to_float(src[ch * stride]);
      }
    }
  }

  static void scatter_add_channels(const float* src, std::int64_t stride, std::int64_t c, S* dst) {
    if (stride == 1) {
      add_floats(src, dst, c);
    } else {
      for (std::int64_t ch = 0; ch < c; ++ch) dst[ch * stride] = from_float<S>(to_float(dst[ch * stride]) + src[ch]);
    }
  }

#ifdef SWINFER_CPU_AVX512_BF16
  static constexpr std::int64_t bf16_pair_size = bf16_dot::pair;
  bool uses_pairs() const { return qkv_pairs_.layout().groups() > 0; }
  /// The panel of a (depth x cols) B in bf16 pairs.
  static panel_layout pair_panel(std::int64_t depth, std::int64_t cols) {
    return bf16_dot::pair_layout(1, depth, cols);
  }
  static void round_to_pairs(const float* src, S* dst, std::int64_t n) {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) bf16_dot::round_to_bf16(src, dst, n);
  }

  /// c[rows][cols] = a b + bias on the pair dot product: a is `rows` rows of b's depth in bf16, `lda` apart (finite
  /// up to the micro tiles' slack rows, and one value past the last for an odd depth).
  static void product_pairs(const bf16_dot::packed_pairs& b, const S* a, std::int64_t lda, std::int64_t rows,
                            const std::vector<float>& bias, float* c, std::int64_t ldc) {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const panel_layout& l = b.layout();
      for (int g = 0; g < l.groups(); ++g) {
        bf16_dot::gemm_group(&a, 1, b.pairs_per_segment(), lda, rows, b.panel(g), l.packets(g),
                             bias.data() + l.group_col0(g), c + l.group_col0(g), ldc);
      }
    }
  }

  /// Head h of one window on the pair dot product: k and v (rounded with qkv) packed in pairs, q k^T per block of
  /// 16 query rows, the softmax numerators rounded to bf16 for P.v, the head's output rounded into the bf16
  /// attention rows that proj multiplies.
  void attend_head_pairs(const window_scratch& w, int h) const {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const std::int64_t c = w_.channels, hd = w_.head_dim(), p_ld = p_stride(w.t);
      const S* q = w.qkv_pairs + h * hd;
      const S* k = w.qkv_pairs + c + h * hd;
      const S* val = w.qkv_pairs + 2 * c + h * hd;
      auto* kt_panel = reinterpret_cast<S*>(w.kt_panel);
      auto* v_panel = reinterpret_cast<S*>(w.v_panel);
      auto* att = reinterpret_cast<S*>(w.att);
      bf16_dot::pack_pairs_of_columns(w.kt, k, w.qkv_ld, w.key_row, hd, kt_panel);
      bf16_dot::pack_pairs_of_rows(w.v, val, w.qkv_ld, w.key_row, w.t, v_panel);
      for (std::int64_t r0 = 0; r0 < w.queries; r0 += query_rows) {
        const std::int64_t block = std::min<std::int64_t>(query_rows, w.queries - r0);
        const S* q_rows = q + r0 * w.qkv_ld;
        for (int g = 0; g < w.kt.groups(); ++g) {
          bf16_dot::gemm_group(&q_rows, 1, w.kt.depth, w.qkv_ld, block, kt_panel + w.kt.offset(g) * bf16_pair_size,
                               w.kt.packets(g), nullptr, w.scores + w.kt.group_col0(g), w.score_ld);
        }
        float inv_sum[query_rows];
        softmax_numerators(
            w, h, r0, block, [p_block = w.p_pairs, p_ld](std::int64_t r, std::int64_t j, const packet& e) {
              _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_block + r * p_ld + j), (__m256i)_mm512_cvtneps_pbh(e));
            },
            [&](std::int64_t r, float sum) { inv_sum[r] = 1.0f / sum; });
        if (w.t % bf16_pair_size != 0) {  // the last pair's partner for an odd t
          for (std::int64_t r = 0; r < block; ++r) w.p_pairs[r * p_ld + w.t] = S(0.0f);
        }
        std::fill(w.p_pairs + block * p_ld, w.p_pairs + query_rows * p_ld, S(0.0f));  // slack rows of a last block
        const S* p_rows = w.p_pairs;
        for (int g = 0; g < w.v.groups(); ++g) {
          bf16_dot::gemm_group(&p_rows, 1, w.v.depth, p_ld, block, v_panel + w.v.offset(g) * bf16_pair_size,
                               w.v.packets(g), nullptr, w.pv + w.v.group_col0(g), w.pv_ld);
        }
        for (std::int64_t r = 0; r < block; ++r) {
          float* out = w.pv + r * w.pv_ld;
          Eigen::Map<Eigen::ArrayXf>(out, hd) *= inv_sum[r];
          bf16_dot::round_to_bf16(out, att + (r0 + r) * c + h * hd, hd);
        }
      }
    }
  }

  bf16_dot::packed_pairs qkv_pairs_, proj_pairs_;  ///< pair path (bf16, rounded weights, vdpbf16ps); else empty
#else
  static constexpr std::int64_t bf16_pair_size = 2;
  static constexpr bool uses_pairs() { return false; }
  static panel_layout pair_panel(std::int64_t depth, std::int64_t cols) { return {depth, cols}; }
  static void round_to_pairs(const float*, S*, std::int64_t) {}
  struct no_pairs {};
  static void product_pairs(no_pairs, const S*, std::int64_t, std::int64_t, const std::vector<float>&, float*,
                            std::int64_t) {}
  void attend_head_pairs(const window_scratch&, int) const {}
  no_pairs qkv_pairs_, proj_pairs_;
#endif

  /// Brings the shared tables up to date for the plan and, when the dense bias changed, lays it out like the
  /// scores (rows padded to 16, columns to 48, zeros in the padding).
  void update_caches(const ops::window_plan& plan, bool masked) {
    if (!tables_.update(plan, masked).bias) return;
    const int t = plan.tokens();
    const std::int64_t rows = round_up(t, max_micro_rows), ld = round_up(t, group_width);
    const std::vector<float>& dense = tables_.bias();
    bias_.assign(static_cast<std::size_t>(w_.heads * rows * ld), 0.0f);
    for (std::int64_t h = 0; h < w_.heads; ++h)
      for (std::int64_t i = 0; i < t; ++i) {
        std::copy_n(dense.data() + (h * t + i) * t, t, bias_.data() + (h * rows + i) * ld);
      }
  }

  context& ctx_;
  ops::window_attention_weights w_;
  packed_matrix qkv_, proj_;
  quantized_matrix qkv_int8_, proj_int8_;    ///< int8 paths (a quantized input); empty otherwise
  std::vector<float> qkv_bias_, proj_bias_;  ///< zero padded to whole column groups (zero when absent)
  ops::window_bias_cache tables_;            ///< dense bias and region ids of the last plan

  /// The cached dense relative bias, [heads][round_up(t, 16) rows][round_up(t, 48) columns], zero padded: the
  /// scores' starting value, laid out like the scores.
  std::vector<float> bias_;
  /// The rows of each worker's present window (run_by_window), or of every window item (run_in_phases).
  std::vector<token_rows> token_rows_;
};

}  // namespace swinfer::cpu
