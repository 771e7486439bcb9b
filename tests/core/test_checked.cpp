// Checked size arithmetic, the range check every parameter goes through, and the up-front memory refusal.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include <swinfer/core/checked.hpp>
#include <swinfer/core/memory.hpp>
#include <swinfer/core/tensor.hpp>
#include <swinfer/core/value_range.hpp>

#include "error_testing.hpp"

using swinfer_test::error_of;

TEST_CASE("checked arithmetic: results that fit, and errors naming the parameter when they do not", "[core][checked]") {
  using namespace swinfer::detail;
  constexpr std::int64_t big = std::int64_t{1} << 62;
  CHECK(checked_mul(3, 4, "x") == 12);
  CHECK(checked_add(big - 1, big, "x") == std::numeric_limits<std::int64_t>::max());
  CHECK(checked_product({2, 3, 7}, "shape") == 42);
  CHECK(checked_product({5, 0, big}, "shape") == 0);
  CHECK(checked_byte_size(big / 4, 4, "bytes") == big);
  CHECK_THAT(error_of([&] { checked_mul(big, 2, "k_divisible ", 3000000); }),
             Catch::Contains("k_divisible 3000000: 4611686018427387904 x 2 overflows 64-bit integers"));
  CHECK_THAT(error_of([&] { checked_add(big, big, "margin ", big); }),
             Catch::Contains("margin 4611686018427387904: 4611686018427387904 + 4611686018427387904 overflows"));
  constexpr std::int64_t k21 = std::int64_t{1} << 21, k22 = std::int64_t{1} << 22;
  CHECK_THAT(error_of([&] { checked_product({k21, k21, k22}, "crop"); }),
             Catch::Contains("crop: 4398046511104 x 4194304 overflows"));
  CHECK_THAT(error_of([&] { checked_product({3, -1}, "shape"); }), Catch::Contains("shape: extent -1 is negative"));
  CHECK_THAT(error_of([&] { checked_byte_size(big, 8, "bytes of ", "w"); }), Catch::Contains("bytes of w:"));
}

TEST_CASE("checked_integer_cast: finite values in the target's range only", "[core][checked]") {
  using swinfer::detail::checked_integer_cast;
  CHECK(checked_integer_cast<std::int64_t>(9.7, "x") == 9);
  CHECK(checked_integer_cast<std::int64_t>(-9e18, "x") == std::int64_t{-9000000000000000000});
  CHECK(checked_integer_cast<int>(2147483647.0, "x") == 2147483647);
  CHECK(checked_integer_cast<std::uint8_t>(255.9, "x") == 255);
  CHECK_THAT(error_of([&] { checked_integer_cast<std::int64_t>(1e300, "Spacing extent"); }),
             Catch::Contains("Spacing extent: 1e+300 is not representable as a 64-bit integer"));
  CHECK_THAT(error_of([&] { checked_integer_cast<std::int64_t>(9223372036854775808.0, "e"); }),
             Catch::Contains("not representable"));
  CHECK_THAT(error_of([&] { checked_integer_cast<int>(2147483648.0, "mlp"); }), Catch::Contains("32-bit"));
  CHECK_THAT(error_of([&] { checked_integer_cast<std::uint8_t>(-1.0, "u"); }), Catch::Contains("not representable"));
  CHECK_THAT(error_of([&] { checked_integer_cast<int>(std::nan(""), "n"); }), Catch::Contains("n: nan"));
  CHECK_THAT(error_of([&] { checked_integer_cast<int>(-INFINITY, "i"); }), Catch::Contains("i: -inf"));
}

TEST_CASE("require_in_range: the message names where, the key, the value and the range", "[core][range]") {
  using swinfer::detail::require_in_range;
  constexpr swinfer::value_range<std::int64_t> margin{0, 4096};
  CHECK(require_in_range(std::int64_t{7}, margin, "p.json", "margin") == 7);
  CHECK(require_in_range(std::uint64_t{4096}, margin, "p.json", "margin") == 4096u);
  CHECK_THAT(error_of([&] { require_in_range(std::int64_t{-1}, margin, "p.json: crop_foreground", "margin"); }),
             Catch::Equals("p.json: crop_foreground: 'margin' is -1; allowed range [0, 4096]"));
  // An unsigned value past int64 compares as itself, not wrapped to a negative number.
  CHECK_THAT(error_of([&] { require_in_range(std::numeric_limits<std::uint64_t>::max(), margin, "", "margin"); }),
             Catch::Equals("'margin' is 18446744073709551615; allowed range [0, 4096]"));
  constexpr swinfer::value_range<double> ratio{0.125, 64.0};
  CHECK_THAT(error_of([&] { require_in_range(1e300, ratio, "cfg.json", "mlp_ratio", " (note)"); }),
             Catch::Equals("cfg.json: 'mlp_ratio' is 1e+300; allowed range [0.125, 64] (note)"));
  CHECK_THAT(error_of([&] { require_in_range(std::nan(""), ratio, "c", "mlp_ratio"); }),
             Catch::Contains("'mlp_ratio' is nan"));
}

TEST_CASE("tensor shapes: an element count past int64 is an error naming the shape, never a wrapped allocation",
          "[core][checked]") {
  // [2^21, 2^21, 2^22] voxels: 2^64 elements, which wrapped to 0 and let a copy run past a missing buffer.
  const swinfer::shape5 wrapping{1, 1, std::int64_t{1} << 21, std::int64_t{1} << 21, std::int64_t{1} << 22};
  for (auto layout : {swinfer::layout_kind::ncdhw, swinfer::layout_kind::ndhwc}) {
    CHECK_THAT(error_of([&] { swinfer::packed_strides(wrapping, layout); }),
               Catch::Contains("tensor shape (1, 1, 2097152, 2097152, 4194304)") && Catch::Contains("overflows"));
    CHECK_THAT(error_of([&] { swinfer::tensor<float>(wrapping, layout); }), Catch::Contains("overflows"));
  }
  // Elements fit, bytes do not.
  constexpr std::int64_t k20 = std::int64_t{1} << 20, k21 = std::int64_t{1} << 21;
  CHECK_THAT(error_of([] { swinfer::tensor<double>({1, 1, k20, k20, k21}, swinfer::layout_kind::ncdhw); }),
             Catch::Contains("tensor shape (1, 1, 1048576, 1048576, 2097152)") && Catch::Contains("overflows"));
  CHECK_THAT(error_of([] { swinfer::tensor<float>({1, -1, 2, 2, 2}, swinfer::layout_kind::ncdhw); }),
             Catch::Contains("negative tensor shape (1, -1, 2, 2, 2)"));
}

TEST_CASE("a tensor larger than the memory available is refused up front with the numbers", "[core][memory]") {
  const std::int64_t available = swinfer::available_memory_bytes();
  if (available == 0) {
    WARN("no /proc/meminfo: the memory available is unknown, so nothing is refused");
    return;
  }
  // 64 TiB of floats: more than any test machine has.
  const std::string message =
      error_of([] { swinfer::tensor<float>({1, 1, 1 << 14, 1 << 14, 1 << 16}, swinfer::layout_kind::ndhwc); });
  CHECK_THAT(message, Catch::Contains("a tensor of shape (1, 1, 16384, 16384, 65536) needs about 6.55e+04 GiB") &&
                          Catch::Contains("is available"));
  CHECK_THAT(error_of([] { swinfer::detail::require_memory(1e30, "the blended logits", "; use a smaller roi"); }),
             Catch::Contains("the blended logits needs about") && Catch::EndsWith("; use a smaller roi"));
  CHECK_NOTHROW(swinfer::detail::require_memory(1024.0, "a small buffer"));
}
