// cpu backend, precision::int8: the integer products of every kernel path this build runs on this CPU (portable,
// AVX2/AVX-512BW madd, AVX-512 VNNI, AMX) against a naive integer reference (exact, so the paths are bit-identical),
// with random and with extreme operands (255 x +-127, where an int16 pair sum would saturate); the AMX kernel's
// blocking also on a software model of the tile unit, on every CPU; and a bad scale's error. The quantized ops
// against ops::ref's int8 scheme run in the shared op suite (tests/ops).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "cpu_test_support.hpp"
#include "swinfer/backend/cpu/dynamic_scale.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/quantization.hpp"

using namespace swinfer;
using namespace swinfer_cpu_test;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::uniform_int_distribution<int> u(0, 255);
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) x = static_cast<std::uint8_t>(u(swinfer_test::rng()));
  return v;
}

std::vector<std::int8_t> random_weights(std::size_t n) {
  std::uniform_int_distribution<int> u(-ops::weight_max, ops::weight_max);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(u(swinfer_test::rng()));
  return v;
}

/// A software model of the AMX tile unit, as Intel describes TILEZERO, TILELOADD, TILESTORED and TDPBUSD: eight
/// tiles of up to 16 rows x 64 bytes, shaped by the configuration; a product adds to C's int32 (m, n) the products
/// of A's unsigned bytes 4k .. 4k+3 of row m with B's signed bytes 4n .. 4n+3 of row k, for every quad k of A's
/// rows, and requires the shapes to agree as the hardware does.
class tile_unit_model {
 public:
  explicit tile_unit_model(const cpu::amx::tile_shapes& shapes) : shapes_(shapes) {}
  template <int T>
  void zero() {
    tiles_[T].fill(0);
  }
  template <int T>
  void load(const void* p, std::int64_t stride) {
    tiles_[T].fill(0);
    for (int r = 0; r < shapes_[T].rows; ++r) {
      std::memcpy(tiles_[T].data() + r * row_bytes, static_cast<const std::uint8_t*>(p) + r * stride,
                  static_cast<std::size_t>(shapes_[T].row_bytes));
    }
  }
  template <int T>
  void store(void* p, std::int64_t stride) const {
    for (int r = 0; r < shapes_[T].rows; ++r) {
      std::memcpy(static_cast<std::uint8_t*>(p) + r * stride, tiles_[T].data() + r * row_bytes,
                  static_cast<std::size_t>(shapes_[T].row_bytes));
    }
  }
  template <int C, int A, int B>
  void dot() {
    const int quads = shapes_[A].row_bytes / 4;
    REQUIRE(shapes_[B].rows == quads);
    REQUIRE(shapes_[C].rows == shapes_[A].rows);
    REQUIRE(shapes_[C].row_bytes == shapes_[B].row_bytes);
    for (int m = 0; m < shapes_[C].rows; ++m)
      for (int n = 0; n < shapes_[C].row_bytes / 4; ++n) {
        std::int32_t acc;
        std::memcpy(&acc, tiles_[C].data() + m * row_bytes + 4 * n, 4);
        for (int k = 0; k < quads; ++k)
          for (int i = 0; i < 4; ++i) {
            const auto a_at = static_cast<std::size_t>(m * row_bytes + 4 * k + i);
            const auto b_at = static_cast<std::size_t>(k * row_bytes + 4 * n + i);
            acc += std::int32_t{tiles_[A][a_at]} * std::int32_t{static_cast<std::int8_t>(tiles_[B][b_at])};
          }
        std::memcpy(tiles_[C].data() + m * row_bytes + 4 * n, &acc, 4);
      }
  }

 private:
  static constexpr int row_bytes = cpu::amx::tile_row_bytes;
  cpu::amx::tile_shapes shapes_;
  std::array<std::array<std::uint8_t, cpu::amx::tile_rows * row_bytes>, 8> tiles_{};
};

/// The column group's product: gemm_group on the packed path, or (tile_model) the AMX kernel on tile_unit_model
/// from the same packed weights (the vnni layout, which the portable path packs too).
enum class product_kernel { packed_path, tile_model };

/// C = A * B for A (rows x segments x run) uint8 and B int8 (depth, cols) through int8_dot's packing and the named
/// kernel path (or the AMX kernel's tile model); the result's first `rows` rows.
std::vector<std::int32_t> int8_product(const std::vector<std::uint8_t>& a, std::int64_t rows, int segments,
                                       std::int64_t run, const std::vector<std::int8_t>& b, std::int64_t cols,
                                       cpu::int8_dot::int8_path path,
                                       product_kernel kernel = product_kernel::packed_path) {
  const cpu::int8_dot::packed_quads packed(
      segments, run, cols, [&](std::int64_t k, std::int64_t c) { return b[k * cols + c]; }, path);
  const std::int64_t stride = segments * run, slack_rows = cpu::round_up(rows, cpu::max_micro_rows);
  // Segment s of row r lies at a[r * stride + s * run]; rows past `rows` and bytes past each run are readable slack.
  std::vector<std::uint8_t> padded(a);
  padded.resize(static_cast<std::size_t>(slack_rows * stride + cpu::int8_dot::quad), 0);
  std::vector<const std::uint8_t*> seg(static_cast<std::size_t>(segments));
  for (int s = 0; s < segments; ++s) seg[s] = padded.data() + s * run;
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows * cols));
  std::vector<std::int32_t> tile(static_cast<std::size_t>(slack_rows * cpu::group_width));
  const cpu::panel_layout& l = packed.layout();
  const int chunk = cpu::amx::int8_chunk(packed.quads_per_segment());
  tile_unit_model unit(cpu::amx::int8_tile_shapes(chunk));
  for (int g = 0; g < l.groups(); ++g) {
    if (kernel == product_kernel::tile_model) {
      cpu::with_group_packets(l.packets(g), [&](auto p) {
        cpu::amx::int8_gemm_rows<decltype(p)::value>(unit, seg.data(), segments, stride, rows, packed.panel(g),
                                                     packed.quads_per_segment(), chunk, tile.data(), cpu::group_width);
      });
    } else {
      cpu::int8_dot::gemm_group(seg.data(), segments, stride, rows, packed, g, tile.data(), cpu::group_width);
    }
    for (std::int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < l.group_cols(g); ++c) out[r * cols + l.group_col0(g) + c] = tile[r * cpu::group_width + c];
  }
  return out;
}

/// The naive integer sums of the same product.
std::vector<std::int32_t> naive_product(const std::vector<std::uint8_t>& a, std::int64_t rows, std::int64_t depth,
                                        const std::vector<std::int8_t>& b, std::int64_t cols) {
  std::vector<std::int32_t> want(static_cast<std::size_t>(rows * cols), 0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      std::int64_t acc = 0;
      for (std::int64_t k = 0; k < depth; ++k) acc += std::int64_t{a[r * depth + k]} * b[k * cols + c];
      want[r * cols + c] = static_cast<std::int32_t>(acc);
    }
  return want;
}

/// A product's extents: rows of A, each `segments` runs of `run` values, times B (segments * run, cols).
struct product_shape {
  std::int64_t rows;
  int segments;
  std::int64_t run, cols;
};

/// check(a, b, shape, naive sums) for each shape, in a section of its own, with random and with extreme operands
/// (255 x +-127: the largest products, where an int16 pair sum would saturate).
template <class Check>
void for_each_product(std::initializer_list<product_shape> shapes, Check&& check) {
  for (const product_shape s : shapes) {
    DYNAMIC_SECTION("rows " << s.rows << " segments " << s.segments << " run " << s.run << " cols " << s.cols) {
      const std::int64_t depth = s.segments * s.run;
      for (const bool extreme : {false, true}) {
        INFO((extreme ? "extreme operands" : "random operands"));
        auto a = random_bytes(static_cast<std::size_t>(s.rows * depth));
        auto b = random_weights(static_cast<std::size_t>(depth * s.cols));
        if (extreme) {
          std::fill(a.begin(), a.end(), std::uint8_t{255});
          for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int8_t>(i % 2 ? -127 : 127);
        }
        check(a, b, s, naive_product(a, s.rows, depth, b, s.cols));
      }
    }
  }
}

}  // namespace

TEST_CASE("int8 products: every kernel path equals the naive integer sums exactly", "[cpu][int8]") {
  for_each_product({{1, 1, 1, 1}, {5, 3, 7, 17}, {19, 9, 36, 48}, {33, 2, 201, 50}, {16, 27, 5, 96}, {8, 1, 2304, 33}},
                   [](const auto& a, const auto& b, const product_shape& s, const std::vector<std::int32_t>& want) {
                     for (const auto path : cpu::int8_dot::available_paths()) {
                       INFO("path " << cpu::int8_dot::path_name(path));
                       CHECK(int8_product(a, s.rows, s.segments, s.run, b, s.cols, path) == want);
                     }
                   });
}

TEST_CASE("int8 products: the AMX kernel on a software model of the tile unit equals the naive integer sums",
          "[cpu][int8]") {
  // The AMX kernel reads packed groups as 16-column tiles, which only 16-lane (AVX-512) builds pack; an AVX2 build's
  // 8-column packets would be read past their end.
  if constexpr (cpu::int8_dot::lanes != cpu::amx::int8_tile_columns) {
    WARN("this build packs " << cpu::int8_dot::lanes << "-column int8 packets; the AMX kernel's tiles take "
                             << cpu::amx::int8_tile_columns << ": nothing to check");
    return;
  }
  // The convolutions' segments (3 taps x 48 or 96 channels: 36 and 72 quads, chunks of 12), the linears' (48 to
  // 768 channels: chunks of 12 and 16), odd runs (chunks of 1 to 3), narrow last groups, rows in partial tiles.
  CHECK(cpu::amx::int8_chunk(36) == 12);
  CHECK(cpu::amx::int8_chunk(48) == 16);
  CHECK(cpu::amx::int8_chunk(51) == 3);
  CHECK(cpu::amx::int8_chunk(1) == 1);
  for_each_product({{1, 1, 1, 1}, {5, 3, 7, 17}, {19, 9, 144, 48}, {33, 2, 201, 50}, {16, 3, 288, 96},
                    {40, 1, 768, 33}, {17, 1, 48, 100}},
                   [](const auto& a, const auto& b, const product_shape& s, const std::vector<std::int32_t>& want) {
                     CHECK(int8_product(a, s.rows, s.segments, s.run, b, s.cols, cpu::int8_dot::int8_path::portable,
                                        product_kernel::tile_model) == want);
                   });
}

TEST_CASE("AMX tile scopes nest: a product after an inner scope of other shapes still equals the naive sums",
          "[cpu][int8]") {
  if (!cpu::int8_dot::amx_available()) {
    WARN("this build or CPU has no AMX-INT8: nothing to check");
    return;
  }
#ifdef SWINFER_CPU_AMX_INT8
  // A convolution's segments (3 taps x 48 channels): chunks of 12 quads, so the A and B tiles are not full_tiles().
  const product_shape s{19, 9, 144, 48};
  const auto a = random_bytes(static_cast<std::size_t>(s.rows * s.segments * s.run));
  const auto b = random_weights(static_cast<std::size_t>(s.segments * s.run * s.cols));
  const auto want = naive_product(a, s.rows, s.segments * s.run, b, s.cols);
  const auto shapes = cpu::amx::int8_tile_shapes(cpu::amx::int8_chunk(s.run / cpu::int8_dot::quad));
  REQUIRE(shapes != cpu::amx::full_tiles());
  {
    const cpu::amx::tile_scope outer(shapes);
    {
      const cpu::amx::tile_scope inner(cpu::amx::full_tiles());
      CHECK(cpu::amx::this_thread_tiles().shapes == cpu::amx::full_tiles());
    }
    CHECK(cpu::amx::this_thread_tiles().shapes == shapes);
    // The product's own scope trusts the outer one and loads nothing: a configuration left as the inner one's
    // (64-byte A rows, 16-quad B tiles) would give other sums.
    CHECK(int8_product(a, s.rows, s.segments, s.run, b, s.cols, cpu::int8_dot::int8_path::amx) == want);
  }
  CHECK_FALSE(cpu::amx::this_thread_tiles().any);
#endif
}

TEST_CASE("int8 conv3d rejects a scale that is negative or not finite, naming the point", "[cpu][int8]") {
  ops::conv3d_problem p = ops::conv3d_problem{};
  p.cin = 2;
  p.cout = 3;
  const std::vector<float> w(static_cast<std::size_t>(p.weight_count()), 0.5f);
  cpu::context ctx(engine_options{1});
  for (const float bad : {-1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    p.int8 = {"encoder1.layer.conv1.conv", bad};
    CHECK_THROWS_WITH(cpu::conv3d<float>(ctx, p, w.data(), nullptr),
                      Catch::Contains("encoder1.layer.conv1.conv") && Catch::Contains("positive and finite"));
  }
}

TEST_CASE("dynamic int8 scales: the largest magnitude of a row and of a whole input, against a naive loop",
          "[cpu][int8]") {
  // Negative values larger than every positive one (a signed max would miss them), lengths around the 16 lanes and
  // the workers' 2^16-value blocks, and a NaN, which the scale skips as std::max does.
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{15}, std::int64_t{17}, std::int64_t{48},
                               std::int64_t{(1 << 16) + 3}, std::int64_t{3 * (1 << 16) + 40}}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = u(swinfer_test::rng());
    if (n > 0) {
      std::uniform_int_distribution<std::size_t> at(0, x.size() - 1);
      x[at(swinfer_test::rng())] = -3.5f;
      x[at(swinfer_test::rng())] = std::numeric_limits<float>::quiet_NaN();
    }
    double naive = 0;
    for (const float v : x) {
      if (!std::isnan(v)) naive = std::max(naive, std::fabs(double{v}));
    }
    INFO(n << " values");
    CHECK(ops::largest_magnitude(x.data(), n) == static_cast<float>(naive));
    CHECK(cpu::int8_dot::largest_magnitude(x.data(), n) == static_cast<float>(naive));
    const float scale = naive > 0 ? static_cast<float>(naive) / ops::activation_max : 1.0f;
    CHECK(ops::dynamic_activation_scale(x.data(), n) == scale);
    if (n == 0) continue;
    tensor<float> input({1, 1, 1, 1, n}, layout_kind::ndhwc);
    std::copy(x.begin(), x.end(), input.data());
    for (const int threads : {1, 2, 5}) {
      cpu::context ctx(engine_options{threads});
      CHECK(cpu::dynamic_input_scale(ctx, input) == scale);
    }
  }
}

// conv3d's fused inputs under int8 quantize exactly the values the separate ops would store, so they equal the
// unfused ops bit for bit: the InstanceNorm (and LeakyReLU) applied on load against instance_norm then conv3d, and a
// two-part concatenation read in place against concat_channels then conv3d; calibrated and dynamic scales (a
// dynamic one from the normalised values, from both parts), both layouts, channels past one 64-channel chunk.
TEST_CASE("int8 conv3d on a normalised or concatenated input equals the separate ops bit for bit", "[cpu][int8]") {
  struct fused_case {
    int cin, cout, kernel;
    bool leaky_relu;
  };
  const fused_case cases[] = {{48, 48, 3, true}, {5, 7, 3, false}, {80, 16, 1, true}};
  const ops::instance_norm_epilogue plain{1e-5f, std::nullopt}, leaky{1e-5f, 0.01f};
  for (const auto kind : {layout_kind::ndhwc, layout_kind::ncdhw})
    for (const fused_case& c : cases)
      for (const bool dynamic : {false, true}) {
        INFO("k" << c.kernel << " " << c.cin << "->" << c.cout << (dynamic ? " dynamic" : " calibrated") << ", "
                 << layout_name(kind));
        const int pad = c.kernel / 2;
        ops::conv3d_problem p{c.cin, c.cout, {c.kernel, c.kernel, c.kernel}, {1, 1, 1}, {pad, pad, pad}, true};
        p.int8 = {"test.point", dynamic ? 0.0f : 2.5f / ops::activation_max, dynamic};
        const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
        const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.cout));
        cpu::context ctx(engine_options{2});
        cpu::conv3d<float> conv(ctx, p, weight.data(), bias.data());
        const shape5 in_shape{2, c.cin, 5, 6, 7}, out_shape{2, c.cout, 5, 6, 7};

        const auto raw = random_tensor<float>(in_shape, kind, -2.0f, 5.0f);
        const auto e = c.leaky_relu ? leaky : plain;
        auto fused = poisoned_tensor<float>(out_shape, kind);
        conv.run(raw, e, fused);
        tensor<float> normalised(in_shape, kind);
        std::copy_n(raw.data(), raw.size(), normalised.data());
        cpu::instance_norm(ctx, normalised, static_cast<const tensor<float>*>(nullptr), e);
        auto separate = poisoned_tensor<float>(out_shape, kind);
        conv.run(normalised, separate);
        CHECK(std::equal(fused.data(), fused.data() + fused.size(), separate.data()));

        const std::int64_t first_channels = c.cin / 2 + 1;
        const auto first = random_tensor<float>({2, first_channels, 5, 6, 7}, kind);
        const auto second = random_tensor<float>({2, c.cin - first_channels, 5, 6, 7}, kind, -3.0f, 3.0f);
        auto in_place = poisoned_tensor<float>(out_shape, kind);
        conv.run(first, second, in_place);
        tensor<float> joined(in_shape, kind);
        cpu::concat_channels(ctx, {&first, &second}, joined);
        auto concatenated = poisoned_tensor<float>(out_shape, kind);
        conv.run(joined, concatenated);
        CHECK(std::equal(in_place.data(), in_place.data() + in_place.size(), concatenated.data()));
      }
}

// The staging and the epilogue every int8 product shares run sixteen lanes at a time where AVX-512 is compiled in: the
// same uint8 values as ops::quantize_activation one at a time (ties at k + 1/2 to even, both ends clamped), and the
// same floats as the epilogue's formula, on lengths around the sixteen lanes.
TEST_CASE("int8 staging and epilogue: quantize_run and dequantize_tile against the scalar scheme", "[cpu][int8]") {
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const float inverse = 42.5f;  // 1 / scale: x = (k + 0.5) / 42.5 lands on ties
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{5}, std::int64_t{16}, std::int64_t{33},
                               std::int64_t{1000}}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float tie = (static_cast<float>(static_cast<int>(i % 301) - 150) + 0.5f) / inverse;
      x[i] = i % 3 == 0 ? tie : u(swinfer_test::rng());
    }
    std::vector<std::uint8_t> got(x.size() + 1, 7);
    cpu::int8_dot::quantize_run(x.data(), got.data(), n, inverse);
    INFO(n << " values");
    for (std::int64_t i = 0; i < n; ++i) {
      const int want = ops::quantize_activation(x[static_cast<std::size_t>(i)], inverse) + ops::activation_zero_point;
      INFO("x " << x[static_cast<std::size_t>(i)] << " at " << i);
      REQUIRE(int{got[static_cast<std::size_t>(i)]} == want);
    }
    CHECK(got.back() == 7);  // nothing past n written
  }
  const int rows = 3, cols = 37, ldc = 48;
  std::uniform_int_distribution<std::int32_t> sums(-2000000, 2000000);
  std::vector<std::int32_t> tile(static_cast<std::size_t>(rows * ldc)), compensation(cols);
  std::vector<float> scale(cols), bias(cols), row_scale{0.5f, 1.25f, 3.0f};
  for (auto& v : tile) v = sums(swinfer_test::rng());
  for (int c = 0; c < cols; ++c) {
    compensation[static_cast<std::size_t>(c)] = sums(swinfer_test::rng()) / 16;
    scale[static_cast<std::size_t>(c)] = std::fabs(u(swinfer_test::rng())) * 1e-4f;
    bias[static_cast<std::size_t>(c)] = u(swinfer_test::rng());
  }
  for (const bool with_bias : {false, true}) {
    for (const bool with_rows : {false, true}) {
      std::vector<std::int32_t> t = tile;
      cpu::int8_dot::dequantize_tile(t.data(), rows, cols, ldc, compensation.data(), scale.data(),
                                     with_bias ? bias.data() : nullptr, with_rows ? row_scale.data() : nullptr);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < ldc; ++c) {
          const std::size_t at = static_cast<std::size_t>(r * ldc + c);
          if (c >= cols) {
            CHECK(t[at] == tile[at]);  // the group's columns past `cols` untouched
            continue;
          }
          float got;
          std::memcpy(&got, &t[at], sizeof got);
          const double factor = double{with_rows ? row_scale[static_cast<std::size_t>(r)] : 1.0f} *
                                scale[static_cast<std::size_t>(c)];
          const double want = static_cast<double>(tile[at] - compensation[static_cast<std::size_t>(c)]) * factor +
                              (with_bias ? bias[static_cast<std::size_t>(c)] : 0.0);
          INFO("row " << r << " column " << c << ": " << got << " against " << want);
          CHECK(std::fabs(got - want) <= 1e-6 * std::max(1.0, std::fabs(want)));
        }
    }
  }
}
