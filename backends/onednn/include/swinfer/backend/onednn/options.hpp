// swinfer onednn backend: its options. oneDNN chooses its own kernels (its implementation lists) for the problems
// it is handed, so the backend adds nothing to engine_options.
#pragma once

#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"

namespace swinfer {

/// The onednn backend's options: engine_options alone.
template <>
struct backend_options<backend::onednn> : engine_options {
  backend_options() = default;
  backend_options(const engine_options& common) : engine_options(common) {}  // NOLINT: implicit on purpose
};

}  // namespace swinfer
