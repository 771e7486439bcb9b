// swinfer: a checkpoint's tensors by key, as every loader returns them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "swinfer/core/error.hpp"

namespace swinfer {

/// Element type a tensor had in the file it came from.
enum class dtype : std::uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

inline const char* dtype_name(dtype t) {
  switch (t) {
    case dtype::f32: return "float32";
    case dtype::f16: return "float16";
    case dtype::bf16: return "bfloat16";
    case dtype::f64: return "float64";
    case dtype::i64: return "int64";
    case dtype::i32: return "int32";
    case dtype::i16: return "int16";
    case dtype::i8: return "int8";
    case dtype::u8: return "uint8";
    case dtype::boolean: return "bool";
  }
  return "?";
}

inline bool is_floating(dtype t) {
  return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 || t == dtype::f64;
}

/// \brief One checkpoint tensor, decoded to host memory in C order.
/// Floating tensors are widened to float32 in `values`; integer and bool tensors go to `indices` as int64.
struct weight {
  dtype source = dtype::f32;          ///< type in the file
  std::vector<std::int64_t> shape;    ///< logical shape, outermost first
  std::vector<float> values;          ///< floating data (empty for integer tensors)
  std::vector<std::int64_t> indices;  ///< integer data (empty for floating tensors)

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
};

/// Formats a shape as "(a, b, c)" for error messages.
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// \brief Tensors by key, keeping the file's order (error messages and `swinfer info` list them that way).
class state_dict {
 public:
  /// Adds a tensor; a key seen twice is an error naming it.
  void insert(std::string key, weight w) {
    if (index_.count(key)) detail::fail("duplicate tensor key '", key, "'");
    index_.emplace(key, order_.size());
    order_.push_back(std::move(key));
    tensors_.push_back(std::move(w));
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  /// The tensor under `key`; a missing key is an error naming it.
  const weight& at(const std::string& key) const {
    auto it = index_.find(key);
    if (it == index_.end()) detail::fail("checkpoint has no tensor '", key, "'");
    return tensors_[it->second];
  }
  const weight* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }
  /// Keys in file order.
  const std::vector<std::string>& keys() const { return order_; }
  std::size_t size() const { return order_.size(); }

 private:
  std::vector<std::string> order_;
  std::vector<weight> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace swinfer
