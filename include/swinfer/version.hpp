// swinfer: library version. This is the one place it is written: CMake's project(VERSION) and the Conan recipe
// read these three macros (as Eigen's build reads its Macros.h), so header-only users without a build step have it.
#pragma once

#define SWINFER_VERSION_MAJOR 0
#define SWINFER_VERSION_MINOR 1
#define SWINFER_VERSION_PATCH 0

#define SWINFER_DETAIL_STRINGIFY_(x) #x
#define SWINFER_DETAIL_STRINGIFY(x) SWINFER_DETAIL_STRINGIFY_(x)

namespace swinfer {
/// "MAJOR.MINOR.PATCH".
inline constexpr const char* version_string = SWINFER_DETAIL_STRINGIFY(SWINFER_VERSION_MAJOR) "." SWINFER_DETAIL_STRINGIFY(
    SWINFER_VERSION_MINOR) "." SWINFER_DETAIL_STRINGIFY(SWINFER_VERSION_PATCH);
}  // namespace swinfer

#undef SWINFER_DETAIL_STRINGIFY
#undef SWINFER_DETAIL_STRINGIFY_
