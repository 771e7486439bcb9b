// swinfer: library version.
#pragma once

#define SWINFER_VERSION_MAJOR 0
#define SWINFER_VERSION_MINOR 1
#define SWINFER_VERSION_PATCH 0

namespace swinfer {
inline constexpr const char* version_string = "0.1.0";
}  // namespace swinfer
