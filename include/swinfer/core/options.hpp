// swinfer: run-time options shared by every backend.
#pragma once

namespace swinfer {

/// \brief Run-time settings an engine is created with.
struct engine_options {
  /// Worker threads for CPU backends; 0 means one per hardware thread.
  int threads = 0;
};

}  // namespace swinfer
