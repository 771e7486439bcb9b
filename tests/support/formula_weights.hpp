// Formula weights: the deterministic tensor values that tools/goldens/formula.py (numpy) and this header both
// produce bit for bit, so golden cases store only configurations and outputs, never weights.
//
// For a tensor stored under key K, element with flat C-order index i:
//   h = FNV-1a 64 of K's UTF-8 bytes
//   z = h + (i + 1) * 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB; z ^= z >> 31             (all mod 2^64)
//   k = z >> 40 (24 bits);  u = float(k - 2^23) / 2^23                   (exact, in [-1, 1))
//   value = offset + scale * u                                           (float arithmetic)
// scale is zero or a power of two, so scale * u is exact and the single rounding of the sum is the same as numpy's
// float32 (also under FMA contraction). Standalone: standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace swinfer_test {

/// FNV-1a 64 of the bytes of `key` (UTF-8 when the literal is UTF-8).
constexpr std::uint64_t fnv1a64(std::string_view key) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : key) {
    h ^= static_cast<std::uint64_t>(static_cast<unsigned char>(c));
    h *= 0x100000001b3ull;
  }
  return h;
}

/// The 24-bit draw k for element i of the tensor whose key hashes to `key_hash`.
constexpr std::uint32_t formula_k24(std::uint64_t key_hash, std::uint64_t i) noexcept {
  std::uint64_t z = key_hash + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z >> 40);
}

/// u in [-1, 1): (k - 2^23) / 2^23, exact in float.
constexpr float formula_unit(std::uint64_t key_hash, std::uint64_t i) noexcept {
  const std::int32_t k = static_cast<std::int32_t>(formula_k24(key_hash, i)) - (1 << 23);
  return static_cast<float>(k) / 8388608.0f;
}

/// Element i of the formula tensor `key` with the recorded (offset, scale).
inline float formula_value(std::string_view key, std::uint64_t i, float offset, float scale) noexcept {
  return offset + scale * formula_unit(fnv1a64(key), i);
}

/// Writes elements 0..n-1 of the formula tensor `key` to `out`.
inline void formula_fill(std::string_view key, float offset, float scale, float* out, std::size_t n) noexcept {
  const std::uint64_t h = fnv1a64(key);
  for (std::size_t i = 0; i < n; ++i) out[i] = offset + scale * formula_unit(h, i);
}

/// The whole formula tensor `key` of `n` elements (C order).
inline std::vector<float> formula_tensor(std::string_view key, std::size_t n, float offset, float scale) {
  std::vector<float> v(n);
  formula_fill(key, offset, scale, v.data(), n);
  return v;
}

/// Spec section 3.4: MONAI's relative_position_index buffer for a configured window (wd, wh, ww), row-major
/// (n x n), n = wd*wh*ww. Token t decodes as (t / (wh*ww), (t / ww) % wh, t % ww).
inline std::vector<std::int64_t> relative_position_index(int wd, int wh, int ww) {
  const std::int64_t n = static_cast<std::int64_t>(wd) * wh * ww;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n * n));
  for (std::int64_t a = 0; a < n; ++a) {
    const std::int64_t za = a / (wh * ww), ya = (a / ww) % wh, xa = a % ww;
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t zb = b / (wh * ww), yb = (b / ww) % wh, xb = b % ww;
      idx[static_cast<std::size_t>(a * n + b)] = (za - zb + wd - 1) * (2 * wh - 1) * (2 * ww - 1) +
                                                 (ya - yb + wh - 1) * (2 * ww - 1) + (xa - xb + ww - 1);
    }
  }
  return idx;
}

}  // namespace swinfer_test
