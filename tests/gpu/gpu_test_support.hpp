// Shared by the [gpu] tests: the one device context, the precision x layout configurations, tolerances, and
// moving test tensors between host and device.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>

#include "backend_testing.hpp"
#include "swinfer/backend/hip.hpp"
#include <swinfer/runtime/option_environment.hpp>

namespace swinfer_gpu_test {

/// ctest's SKIP_RETURN_CODE for "no GPU here".
inline constexpr int skip_exit_code = 77;

/// The hip options the SWINFER_GPU_* variables set (the tool's mapping, option_environment.hpp): ctest steers the
/// kernels of a whole run with them (tests/gpu/CMakeLists.txt).
inline swinfer::backend_options<swinfer::backend::hip> environment_options() {
  return swinfer::runtime::hip_options_from_environment();
}

/// The context every test uses (created on first use; main has checked that a device exists).
inline swinfer::hip::context& gpu() {
  static swinfer::hip::context ctx{environment_options()};
  return ctx;
}

template <class P, class L>
using config = swinfer_test::backend_config<swinfer::backend::hip, P, L>;
using all_configs = swinfer_test::all_precisions_and_layouts<swinfer::backend::hip>;
using swinfer_test::check_close;
using swinfer_test::random_tensor;

/// Exact equality (data movement must not change a bit); NaN fails.
template <class S>
void check_equal(const swinfer::tensor<S>& got, const swinfer::tensor<S>& want) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs == 0.0);
}

template <class S>
swinfer::hip::device_tensor<S> upload(const swinfer::tensor<S>& t) {
  return swinfer::hip::device_tensor<S>::upload(gpu(), t);
}

/// A device tensor full of NaN: any element a kernel forgets to write shows up.
template <class S>
swinfer::hip::device_tensor<S> poisoned_device(const swinfer::shape5& s, swinfer::layout_kind k) {
  return upload(swinfer_test::poisoned_tensor<S>(s, k));
}

template <class S>
swinfer::tensor<S> download(const swinfer::hip::device_tensor<S>& t) {
  return t.download(gpu());
}

/// Sets $name to `value` for its lifetime, then restores what was there.
class scoped_environment {
 public:
  scoped_environment(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    ::setenv(name, value, 1);
  }
  ~scoped_environment() {
    if (had_) {
      ::setenv(name_, saved_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  scoped_environment(const scoped_environment&) = delete;
  scoped_environment& operator=(const scoped_environment&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string saved_;
};

}  // namespace swinfer_gpu_test
