// swinfer: a Swin Fusion UNETR fused skip (the author's PoolSkip): each higher-resolution source through its own
// UnetResBlock, pooled to the level's grid, concatenated with the level's own map, then a final UnetResBlock.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer::model {

/// \brief The branch blocks, pools and final block that a fused_level describes.
template <class B, class P, class L>
class fused_skip {
  using K = kernels<B, P, L>;
  using volume = backend_volume_t<K>;

 public:
  fused_skip(typename K::context& ctx, const state_dict& sd, const fused_level& plan)
      : plan_(plan),
        final_(ctx, sd, plan.final_block()) {
    for (const auto& s : plan.sources) {
      branches_.push_back(s.branch_channels ? std::make_unique<res_block<B, P, L>>(ctx, sd, plan.branch(s)) : nullptr);
    }
  }

  const fused_level& plan() const { return plan_; }

  /// sources: one tensor per plan().sources entry (same order); own: the level's own map.
  volume run(typename K::context& ctx, const std::vector<const volume*>& sources, const volume& own) {
    std::vector<volume> pooled;
    pooled.reserve(2 * sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const fused_source& s = plan_.sources[i];
      std::optional<volume> branched;
      if (branches_[i]) branched.emplace(branches_[i]->run(ctx, *sources[i]));
      const volume& x = branched ? *branched : *sources[i];
      if (plan_.pool != skip_pool::avg) pool(ctx, x, {ops::pool_mode::max, s.pool_kernel}, pooled);
      if (plan_.pool != skip_pool::max) pool(ctx, x, {ops::pool_mode::avg, s.pool_kernel}, pooled);
    }
    std::vector<const volume*> parts;
    std::vector<shape5> shapes;
    for (const auto& p : pooled) parts.push_back(&p);
    parts.push_back(&own);
    for (const volume* p : parts) shapes.push_back(p->shape());
    volume joined(ops::concat_channels_shape(shapes), L::kind);
    K::concat_channels(ctx, parts, joined);
    pooled.clear();
    return final_.run(ctx, joined);
  }

 private:
  static void pool(typename K::context& ctx, const volume& x, const ops::pool3d_problem& p, std::vector<volume>& out) {
    out.emplace_back(p.output_shape(x.shape()), L::kind);
    K::pool3d(ctx, x, p, out.back());
  }

  fused_level plan_;
  std::vector<std::unique_ptr<res_block<B, P, L>>> branches_;  // null: the source is pooled as it is
  res_block<B, P, L> final_;
};

}  // namespace swinfer::model
