// Dice per label and label agreement (swinfer segment --truth, swinfer crosscheck) on hand-counted maps.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <map>

#include "error_testing.hpp"
#include "swinfer/inference/label_metrics.hpp"

using swinfer::layout_kind;
using swinfer::tensor;
using swinfer_test::error_of;

namespace {

/// A (1, 2, 1, 2, 2) map whose element i in logical (N, C, D, H, W) order is values[i]; two channels, so the two
/// layouts store the elements in different orders.
template <class T>
tensor<T> map_of(const std::array<T, 8>& values, layout_kind layout) {
  tensor<T> t({1, 2, 1, 2, 2}, layout);
  std::size_t i = 0;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t y = 0; y < 2; ++y)
      for (std::int64_t x = 0; x < 2; ++x) t(0, c, 0, y, x) = values[i++];
  return t;
}

}  // namespace

TEST_CASE("dice_per_label counts every non-zero label of either map", "[inference][label_metrics]") {
  const auto labels = map_of<std::uint8_t>({4, 1, 1, 2, 2, 2, 0, 1}, layout_kind::ndhwc);
  // Float labels as a NIfTI mask reads them, rounded to the nearest integer (1.9999 is label 2).
  const auto truth = map_of<float>({0, 1, 1.9999f, 2, 2.0001f, 0, 3, 1}, layout_kind::ncdhw);
  const auto dice = swinfer::dice_per_label(labels, truth);
  REQUIRE(dice.size() == 4);
  CHECK(dice.at(1) == Approx(2.0 * 2 / (3 + 2)));  // labels at 1, 2, 7; truth at 1, 7
  CHECK(dice.at(2) == Approx(2.0 * 2 / (3 + 3)));  // labels at 3, 4, 5; truth at 2, 3, 4
  CHECK(dice.at(3) == 0.0);                        // only in the truth
  CHECK(dice.at(4) == 0.0);                        // only in the labels
  CHECK(swinfer::dice_per_label(labels, map_of<float>({4, 1, 1, 2, 2, 2, 0, 1}, layout_kind::ncdhw)) ==
        std::map<int, double>{{1, 1.0}, {2, 1.0}, {4, 1.0}});
}

TEST_CASE("label_agreement is the fraction of voxels with the same label", "[inference][label_metrics]") {
  const auto a = map_of<std::uint8_t>({0, 1, 1, 2, 2, 2, 0, 1}, layout_kind::ncdhw);
  CHECK(swinfer::label_agreement(a, map_of<std::uint8_t>({0, 1, 1, 2, 2, 2, 0, 1}, layout_kind::ndhwc)) == 1.0);
  CHECK(swinfer::label_agreement(a, map_of<std::uint8_t>({0, 1, 2, 2, 2, 0, 0, 1}, layout_kind::ndhwc)) == 0.75);
  const tensor<std::uint8_t> empty({1, 1, 0, 4, 4}, layout_kind::ncdhw);
  CHECK(swinfer::label_agreement(empty, empty) == 1.0);
}

TEST_CASE("label metrics: maps on different grids are an error naming both shapes", "[inference][label_metrics]") {
  const auto labels = map_of<std::uint8_t>({0, 1, 1, 2, 2, 2, 0, 1}, layout_kind::ncdhw);
  tensor<float> truth({1, 1, 1, 2, 2}, layout_kind::ncdhw);
  truth.fill(0.0f);
  CHECK_THAT(error_of([&] { swinfer::dice_per_label(labels, truth); }),
             Catch::Contains("(1, 2, 1, 2, 2)") && Catch::Contains("(1, 1, 1, 2, 2)"));
  tensor<std::uint8_t> other({1, 2, 1, 2, 3}, layout_kind::ncdhw);
  other.fill(0);
  CHECK_THAT(error_of([&] { swinfer::label_agreement(labels, other); }),
             Catch::Contains("(1, 2, 1, 2, 2)") && Catch::Contains("(1, 2, 1, 2, 3)"));
}
