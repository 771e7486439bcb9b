// swinfer: loads the tensors of a torch.save checkpoint (the ZIP format of torch >= 1.6) without Python.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/detail/float_conversion.hpp"
#include "swinfer/io/pickle.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {
namespace detail {

/// Drops the prefixes DataParallel ("module.") and torch.compile ("_orig_mod.") put on parameter names.
inline std::string strip_wrapper_prefixes(std::string_view key) {
  for (;;) {
    if (key.starts_with("module.")) {
      key.remove_prefix(7);
    } else if (key.starts_with("_orig_mod.")) {
      key.remove_prefix(10);
    } else {
      return std::string(key);
    }
  }
}

/// Inserts under the stripped key; two keys that strip to the same name are an error naming both.
inline void insert_stripped(state_dict& out, std::unordered_map<std::string, std::string>& original,
                            const std::filesystem::path& path, const std::string& key, weight w) {
  auto name = strip_wrapper_prefixes(key);
  if (const auto it = original.find(name); it != original.end())
    fail(printable(path), ": keys ", printable(it->second), " and ", printable(key), " both name tensor ",
         printable(name), " once 'module.' / '_orig_mod.' prefixes are removed");
  original.emplace(name, key);
  out.insert(std::move(name), std::move(w));
}

/// The legacy (torch < 1.6) format starts with a pickled magic number: PROTO n, LONG1 of 10 bytes.
inline bool is_legacy_torch_header(const std::vector<std::byte>& head) {
  static constexpr unsigned char magic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  if (head.size() < 2 + sizeof magic || head[0] != std::byte{0x80}) return false;
  return std::equal(std::begin(magic), std::end(magic), head.begin() + 2,
                    [](unsigned char m, std::byte b) { return std::byte{m} == b; });
}

/// A tensor found in the chosen dict, with its key as written in the file.
struct tensor_ref {
  std::string key;
  std::size_t node;
};

/// Picks the dict holding the weights: the top level if most of its values are tensors (a bare state_dict),
/// else the first of 'state_dict', 'model', 'net', 'network' that is a dict holding tensors.
inline std::size_t choose_weights_dict(const pickle_graph& g, const std::filesystem::path& path) {
  auto tensor_count = [&](std::size_t dict) {
    std::size_t n = 0;
    const auto& items = g[dict].items;
    for (std::size_t i = 1; i < items.size(); i += 2) n += g[items[i]].kind == pickle_kind::tensor;
    return n;
  };
  const auto& root = g[g.root];
  if (root.kind != pickle_kind::dict)
    fail(printable(path), ": the checkpoint holds ", g.describe(g.root), ", not a dict of tensors",
         root.kind == pickle_kind::object ? " (a whole pickled model? save model.state_dict() instead)" : "");
  const std::size_t tensors = tensor_count(g.root);
  if (tensors > 0 && 2 * tensors > root.items.size() / 2) return g.root;
  for (const char* key : {"state_dict", "model", "net", "network"}) {
    const auto v = g.find(g.root, key);
    if (v && g[*v].kind == pickle_kind::dict && tensor_count(*v) > 0) return *v;
  }
  std::string keys;
  const std::size_t shown = 20;
  for (std::size_t i = 0; i < root.items.size(); i += 2) {
    if (i / 2 == shown) {
      keys += ", ... (" + std::to_string(root.items.size() / 2 - shown) + " more)";
      break;
    }
    const auto& k = g[root.items[i]];
    keys += (i ? ", " : "") + (k.kind == pickle_kind::string ? printable(k.text) : g.describe(root.items[i]));
  }
  fail(printable(path), ": found no tensors: the top-level dict has keys [", keys,
       "]; expected a state_dict, or a dict holding one under 'state_dict', 'model', 'net' or 'network'");
}

/// Decodes one tensor view of a storage into C order, checking every element it addresses lies in the storage.
inline weight materialise(const pickle_graph& g, const tensor_ref& t, const std::vector<std::byte>& bytes,
                          const std::string& entry, bool big_endian, const std::filesystem::path& path) {
  const auto& tensor = g[t.node];
  const auto& storage = g[tensor.items[0]];
  const auto& size_items = g[tensor.items[1]].items;
  const auto& stride_items = g[tensor.items[2]].items;
  const dtype type = storage.element;
  const std::size_t item = item_size(type);
  auto where = [&] {
    return concat(printable(path), ": tensor ", printable(t.key), " (storage ", printable(entry), ")");
  };

  if (static_cast<std::uint64_t>(storage.number) > bytes.size() / item)
    fail(where(), ": the storage holds ", bytes.size(), " bytes, but the checkpoint declares ", storage.number,
         " elements of ", dtype_name(type));
  const std::int64_t storage_elements = storage.number;

  weight w;
  w.source = type;
  std::vector<std::int64_t> strides;
  std::optional<std::int64_t> count = 1, end = tensor.number;  // nothing once a product or sum overflows
  for (std::size_t d = 0; d < size_items.size(); ++d) {
    w.shape.push_back(g[size_items[d]].number);
    strides.push_back(g[stride_items[d]].number);
    if (count) count = multiply_exact(*count, w.shape[d]);
  }
  if (count && *count > 0) {
    for (std::size_t d = 0; d < w.shape.size() && end; ++d) {
      const auto reach = multiply_exact(w.shape[d] - 1, strides[d]);
      end = reach ? add_exact(*end, *reach) : std::nullopt;
    }
  }
  const bool overflow = !count || !end;
  const std::int64_t numel = count.value_or(0), last = end.value_or(0);
  auto layout = [&] {
    return concat("shape ", shape_string(w.shape), ", stride ", shape_string(strides), ", offset ", tensor.number);
  };
  if (overflow) fail(where(), ": ", layout(), " overflows 64-bit indexing");
  if (numel > 0 && last >= storage_elements)
    fail(where(), ": ", layout(), " reaches element ", last, ", but the storage holds only ", storage_elements);
  // A view may repeat storage elements (stride 0); cap how far, so a tiny storage cannot demand a huge allocation.
  constexpr std::int64_t repeat_allowance = std::int64_t{1} << 24;
  if (numel > std::max(storage_elements, repeat_allowance))
    fail(where(), ": ", layout(), " has ", numel, " elements, far more than its storage's ", storage_elements);
  if (numel == 0) return w;

  // Walk the view row by row: an odometer over all but the last dimension, a strided run along the last.
  const std::size_t rank = w.shape.size();
  const std::int64_t run = rank ? w.shape.back() : 1;
  const std::int64_t step = rank ? strides.back() : 1;
  std::vector<std::int64_t> index(rank ? rank - 1 : 0, 0);
  auto copy_rows = [&](auto* out) {
    std::int64_t start = tensor.number;
    for (std::int64_t row = 0; row < numel / run; ++row) {
      decode_elements(type, big_endian, bytes.data(), start, step, run, out + row * run);
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < w.shape[d]) {
          start += strides[d];
          break;
        }
        start -= strides[d] * (w.shape[d] - 1);  // checked above not to overflow
        index[d] = 0;
      }
    }
  };
  if (is_floating(type)) {
    w.values.resize(static_cast<std::size_t>(numel));
    copy_rows(w.values.data());
  } else {
    w.indices.resize(static_cast<std::size_t>(numel));
    copy_rows(w.indices.data());
  }
  return w;
}

}  // namespace detail

/// \brief Loads every tensor of a torch.save checkpoint written by torch >= 1.6 (a ZIP archive).
/// Accepts a bare state_dict or a dict wrapping one under 'state_dict', 'model', 'net' or 'network'; other
/// entries (optimizer state, epochs, ...) are ignored. Keys lose leading 'module.' and '_orig_mod.' prefixes.
/// Non-tensor values in the state_dict are skipped. Throws swinfer::error naming the file on any problem.
inline state_dict load_torch_checkpoint(const std::filesystem::path& path) {
  using namespace detail;
  bounded_file file(path);
  const auto head = file.read(0, std::min<std::uint64_t>(file.size(), 14), "file header");
  if (is_legacy_torch_header(head))
    fail(printable(path), ": written in the legacy torch.save format (torch < 1.6), which swinfer does not read; ",
         "re-save it with a current torch: torch.save(torch.load(f), g)");
  if (!head.empty() && head[0] == std::byte{0x80})
    fail(printable(path), ": a raw pickle stream, not a torch.save checkpoint (a ZIP archive)");
  const zip_reader zip(std::move(file));

  // torch names every entry "<archive name>/...", the archive name being free; find its data.pkl.
  std::vector<const zip_entry*> pickles;
  for (const auto& e : zip.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0 && e.name.substr(slash) == "/data.pkl") pickles.push_back(&e);
  }
  if (pickles.empty())
    fail(printable(path), ": a ZIP archive without '<folder>/data.pkl', so not a torch.save checkpoint");
  if (pickles.size() > 1)
    fail(printable(path), ": holds several top-level folders with data.pkl (", printable(pickles[0]->name), ", ",
         printable(pickles[1]->name), ", ...); expected one torch.save checkpoint");
  const std::string folder = pickles[0]->name.substr(0, pickles[0]->name.size() - 8);  // keeps the '/'
  if (zip.find(folder + "constants.pkl"))
    fail(printable(path), ": a TorchScript archive (torch.jit.save); save the model's state_dict() with torch.save");

  bool big_endian = false;
  if (const auto* order = zip.find(folder + "byteorder")) {
    const auto bytes = zip.read(*order);
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text == "big") {
      big_endian = true;
    } else if (text != "little") {
      fail(printable(path), ": ", printable(order->name), " says ", printable(text), "; expected 'little' or 'big'");
    }
  }

  const auto stream = zip.read(*pickles[0]);
  const auto g = unpickle(stream, concat(printable(path), ": ZIP entry ", printable(pickles[0]->name)));
  const auto dict = choose_weights_dict(g, path);

  std::vector<tensor_ref> tensors;
  const auto& items = g[dict].items;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    if (g[items[i + 1]].kind != pickle_kind::tensor) continue;
    if (g[items[i]].kind != pickle_kind::string)
      fail(printable(path), ": a tensor is stored under ", g.describe(items[i]), " instead of a string key");
    tensors.push_back({g[items[i]].text, items[i + 1]});
  }

  // Read each storage once, decode every tensor viewing it, then let it go: memory peaks at one raw storage.
  std::vector<weight> decoded(tensors.size());
  std::unordered_map<std::string, std::vector<std::size_t>> users;
  std::vector<std::string> storage_order;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& storage = g[g[tensors[i].node].items[0]];
    const auto& key = g[storage.items[0]].text;
    auto& u = users[key];
    if (u.empty()) storage_order.push_back(key);
    u.push_back(i);
  }
  for (const auto& key : storage_order) {
    const std::string entry = folder + "data/" + key;
    const auto* e = zip.find(entry);
    if (!e)
      fail(printable(path), ": tensor ", printable(tensors[users[key][0]].key), " uses storage ", printable(entry),
           ", which the archive does not contain");
    const auto bytes = zip.read(*e);
    for (auto i : users[key]) decoded[i] = materialise(g, tensors[i], bytes, entry, big_endian, path);
  }

  state_dict out;
  std::unordered_map<std::string, std::string> original;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    insert_stripped(out, original, path, tensors[i].key, std::move(decoded[i]));
  return out;
}

}  // namespace swinfer
