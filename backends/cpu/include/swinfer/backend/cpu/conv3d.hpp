// swinfer cpu backend: 3-D convolution (3x3x3 UNet convs, 1x1x1 projections and head, k2s2 patch embedding) as an
// ordered list of implementations (conv3d/*.hpp, one file each) and the dispatcher that prepares and runs them.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv3d/amx_bf16.hpp"
#include "swinfer/backend/cpu/conv3d/bf16_pairs.hpp"
#include "swinfer/backend/cpu/conv3d/direct.hpp"
#include "swinfer/backend/cpu/conv3d/int8.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/conv3d/whole_grid.hpp"
#include "swinfer/backend/cpu/conv3d/winograd.hpp"
#include "swinfer/backend/cpu/conv_input.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/implementation_list.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"

namespace swinfer::cpu {

/// The convolution's implementations in order of preference: input (N, Cin, D, H, W) -> output (N, Cout, OD, OH,
/// OW), either layout, storage S, float32 accumulation (int32 for the int8 products).
template <class S>
using conv3d_implementations =
    implementation_list<conv3d_kernel, conv3d_int8<S, int8_dot::int8_path::amx>,
                        conv3d_int8<S, int8_dot::int8_path::vnni>, conv3d_int8<S, int8_dot::int8_path::madd>,
                        conv3d_int8<S, int8_dot::int8_path::portable>, conv3d_amx_bf16<S>,
                        conv3d_winograd_tiles<S, winograd::f4x3>, conv3d_bf16_pairs<S>,
                        conv3d_winograd_tiles<S, winograd::f2x3>, conv3d_whole_grid<S>, conv3d_direct<S>>;

/// \brief The cpu backend's conv3d op. At construction it prepares (packs weights for) the implementations it will
/// run: the one kernel_choices::conv3d forces (an error naming why, where it cannot run the problem), or,
/// automatically, walking the list: each that can implement the problem and pays for it, until one that runs every
/// output grid (a Winograd or whole-grid implementation runs the grids it pays for, and the next takes the rest).
/// Each call runs the first prepared implementation that pays for its output grid.
template <class S>
class conv3d {
  using list = conv3d_implementations<S>;

 public:
  conv3d(context& ctx, const ops::conv3d_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    p.check_parameters(weight, bias);
    const conv3d_weights w(p, weight, bias);
    const conv3d_kernel forced = ctx.kernels().conv3d;
    if (forced != conv3d_kernel::automatic) {
      list::for_each([&]<class Impl>(std::type_identity<Impl>) {
        if (Impl::id != forced) return;
        if (const implementable can = Impl::can_implement(p, ctx); !can) {
          detail::fail("conv3d ", describe(p), ": the cpu kernel ", Impl::name,
                       " was asked for (kernel_choices::conv3d) but cannot run it: ", can.why_not);
        }
        prepare<Impl>(w);
      });
      return;
    }
    bool covered = false;
    std::string why_not;
    list::for_each([&]<class Impl>(std::type_identity<Impl>) {
      if (covered) return;
      if (const implementable can = Impl::can_implement(p, ctx); !can) {
        why_not += detail::concat("; ", Impl::name, ": ", can.why_not);
      } else if (Impl::pays(p, ctx, prepared_)) {
        prepare<Impl>(w);
        covered = Impl::every_grid;
      }
    });
    if (!covered) detail::fail("conv3d ", describe(p), ": no cpu kernel runs every grid of it", why_not);
  }

  /// The implementation this op runs on grids its first prepared one pays for (the largest): its id and name.
  conv3d_kernel kernel() const {
    conv3d_kernel first = conv3d_kernel::automatic;
    for_each_prepared([&](const auto& impl) {
      if (first == conv3d_kernel::automatic) first = std::decay_t<decltype(impl)>::id;
    });
    return first;
  }
  /// The implementation that runs an output grid of shape `out`.
  conv3d_kernel kernel_for(const shape5& out) const {
    conv3d_kernel chosen = conv3d_kernel::automatic;
    for_each_prepared([&](const auto& impl) {
      if (chosen == conv3d_kernel::automatic && (forced() || impl.pays(out))) {
        chosen = std::decay_t<decltype(impl)>::id;
      }
    });
    return chosen;
  }
  /// kernel()'s name, for reports ("direct", "winograd4", "int8-vnni", ...).
  std::string_view path() const { return list::name_of(kernel()); }
  /// Whether the implementations multiply weights rounded to bf16 (the pair dot product; AMX with rounded weights).
  bool rounds_weights() const {
    bool rounded = false;
    for_each_prepared([&](const auto& impl) { rounded = rounded || impl.rounds_weights(); });
    return rounded;
  }

  void run(const tensor<S>& in, tensor<S>& out) { run_on(conv_input<S>(in), out, nullptr); }

  /// run(in, out), and InstanceNorm's moments of out, gathered as its rows are stored (row_moment_records; where the
  /// output is channels-first or the implementation goes through Winograd tiles, a pass over out after it).
  void run(const tensor<S>& in, tensor<S>& out, channel_moments& moments) {
    run_on(conv_input<S>(in), out, &moments);
  }

  /// out = conv(concat_channels(first, second)) (a decoder's [upsampled, skip]), each part read where it is.
  void run(const tensor<S>& first, const tensor<S>& second, tensor<S>& out) {
    p_.check(first.shape(), second.shape(), out.shape());
    run_on(conv_input<S>(first, second), out, nullptr);
  }
  /// run(first, second, out), and out's moments as run(in, out, moments) gathers them.
  void run(const tensor<S>& first, const tensor<S>& second, tensor<S>& out, channel_moments& moments) {
    p_.check(first.shape(), second.shape(), out.shape());
    run_on(conv_input<S>(first, second), out, &moments);
  }

  /// out = conv(act(InstanceNorm(in))), the norm applied as the input is staged (`in` is left as it is): its
  /// statistics in one pass over `in` (timed as an instance_norm), then the convolution.
  void run(const tensor<S>& in, const ops::instance_norm_epilogue& e, tensor<S>& out) {
    p_.check(in.shape(), out.shape());
    instance_statistics stats;
    {
      const auto timed = ctx_.time_op([&] {
        return op_label{"instance_norm",
                        detail::concat("instance_norm C", in.shape().c, " @", grid_name(in.shape()), " statistics")};
      });
      stats = instance_norm_statistics(ctx_, in, e.eps);
    }
    run_on(conv_input<S>(in, stats, e), out, nullptr);
  }

  /// out = conv(act(InstanceNorm(in))) from in's moments (gathered where `in` was written: no pass over it), and
  /// out's moments as run(in, out, moments) gathers them.
  void run(const tensor<S>& in, const channel_moments& in_moments, const ops::instance_norm_epilogue& e,
           tensor<S>& out, channel_moments& moments) {
    p_.check(in.shape(), out.shape());
    in_moments.check_for(in.shape(), "conv3d");
    run_on(conv_input<S>(in, statistics_from(in_moments, e.eps), e), out, &moments);
  }

 private:
  using prepared_tuple = typename list::optionals;

  static std::string describe(const ops::conv3d_problem& p) {
    const auto& k = p.kernel;
    return detail::concat(k[0], "x", k[1], "x", k[2], " stride ", p.stride[0], " ", p.cin, "->", p.cout);
  }
  bool forced() const { return ctx_.kernels().conv3d != conv3d_kernel::automatic; }

  template <class Impl>
  void prepare(const conv3d_weights& w) {
    std::get<std::optional<Impl>>(prepared_impls_).emplace(ctx_, w);
    prepared_.add(Impl::id);
  }
  /// f(impl) for each prepared implementation, in list order.
  template <class F>
  void for_each_prepared(F&& f) const {
    std::apply([&](const auto&... impl) { ((impl ? f(*impl) : void()), ...); }, prepared_impls_);
  }
  template <class F>
  void for_each_prepared(F&& f) {
    std::apply([&](auto&... impl) { ((impl ? f(*impl) : void()), ...); }, prepared_impls_);
  }

  /// out = conv(in) on the implementation for out's grid, and where `moments` is given, out's moments.
  void run_on(const conv_input<S>& in, tensor<S>& out, channel_moments* moments) {
    p_.check(in.shape(), out.shape());
    if constexpr (std::is_same_v<S, float>) {
      if (ctx_.observes(p_.int8.point)) ctx_.observe_input(p_.int8.point, in.materialized(ctx_));
    }
    const conv3d_kernel how = kernel_for(out.shape());
    bool ran = false;
    for_each_prepared([&](auto& impl) {
      using Impl = std::decay_t<decltype(impl)>;
      if (ran || Impl::id != how) return;
      ran = true;
      const auto timed = ctx_.time_op([&] { return label(Impl::id, out.shape()); });
      if (!moments) {
        impl.run(ctx_, p_, in, out, nullptr);
        return;
      }
      // The implementations that store whole output rows record their moments as they store them (channels-last).
      std::optional<row_moment_records> records;
      if (Impl::records_rows && out.layout() == layout_kind::ndhwc && out.size() > 0) {
        records.emplace(ctx_, out.shape());
      }
      impl.run(ctx_, p_, in, out, records ? &*records : nullptr);
      *moments = records ? records->merge() : instance_norm_moments(ctx_, out);
    });
  }

  /// The profile's label: "conv3d 3x3x3 48->48 @96^3" (+ " winograd4" / " winograd" on Winograd tiles).
  op_label label(conv3d_kernel how, const shape5& out) const {
    const auto& k = p_.kernel;
    std::string kind = detail::concat("conv3d ", k[0], "x", k[1], "x", k[2]);
    if (p_.stride != std::array<int, 3>{1, 1, 1}) kind += " strided";
    const double outputs = static_cast<double>(out.n * out.spatial());
    return op_label{kind,
                    detail::concat(kind, " ", p_.cin, "->", p_.cout, " @", grid_name(out),
                                   how == conv3d_kernel::winograd4   ? " winograd4"
                                   : how == conv3d_kernel::winograd2 ? " winograd"
                                                                     : ""),
                    2.0 * static_cast<double>(p_.weight_count()) * outputs};
  }

  context& ctx_;
  ops::conv3d_problem p_;
  conv3d_prepared prepared_;
  prepared_tuple prepared_impls_;
};

}  // namespace swinfer::cpu
