// Shared by the cpu backend tests: the configurations and helpers of tests/support/backend_testing.hpp for cpu.
#pragma once

#include "backend_testing.hpp"
#include "swinfer/backend/cpu.hpp"

namespace swinfer_cpu_test {

template <class P, class L>
using config = swinfer_test::backend_config<swinfer::backend::cpu, P, L>;
using all_configs = swinfer_test::all_precisions_and_layouts<swinfer::backend::cpu>;
using swinfer_test::check_close;
using swinfer_test::poisoned_tensor;
using swinfer_test::random_tensor;

}  // namespace swinfer_cpu_test
