// swinfer: a restricted unpickler for torch.save's data.pkl; it builds plain data and never runs code.
// Over 350 lines because it is one virtual machine: the opcode loop, its stack and memo, and the few torch
// reconstructors it allows belong together, and each opcode's bounds checks sit beside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/detail/float_conversion.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer::detail {

enum class pickle_kind : std::uint8_t {
  none,
  boolean,
  integer,
  big_integer,  ///< an int outside int64 (kept opaque: never needed for weights)
  floating,
  string,
  bytes,
  tuple,
  list,
  dict,
  set,
  global,   ///< a class or function named by GLOBAL / STACK_GLOBAL
  object,   ///< any instance or call result swinfer does not interpret
  storage,  ///< a torch storage named by a persistent id
  tensor,   ///< a torch._utils._rebuild_tensor_v2 result
};

/// \brief One value of an unpickled object graph.
/// Values refer to each other by index into pickle_graph::nodes, so the shared and cyclic references pickle
/// allows need neither reference counting nor recursion (a deep or cyclic hostile graph cannot overflow the stack).
struct pickle_node {
  pickle_kind kind = pickle_kind::none;
  dtype element = dtype::f32;  ///< storage: element type
  std::int64_t number = 0;     ///< integer and boolean value; storage: element count; tensor: storage offset
  double real = 0;             ///< floating value
  std::string text;            ///< string and bytes contents; global: "module.name"
  /// tuple, list: elements; dict: key, value, key, value...; object: its class or callable, if known;
  /// storage: its key (a string node); tensor: storage, size tuple, stride tuple (tuples are never mutated).
  std::vector<std::size_t> items;
};

/// A short description of value i for error messages, e.g. "an instance of argparse.Namespace".
inline std::string describe_pickle_value(const std::vector<pickle_node>& nodes, std::size_t i) {
  const auto& n = nodes[i];
  switch (n.kind) {
    case pickle_kind::none: return "None";
    case pickle_kind::boolean: return "a bool";
    case pickle_kind::integer:
    case pickle_kind::big_integer: return "an int";
    case pickle_kind::floating: return "a float";
    case pickle_kind::string: return "a str";
    case pickle_kind::bytes: return "a bytes object";
    case pickle_kind::tuple: return "a tuple";
    case pickle_kind::list: return "a list";
    case pickle_kind::dict: return "a dict";
    case pickle_kind::set: return "a set";
    case pickle_kind::global: return "the global " + printable(n.text);
    case pickle_kind::object:
      if (!n.items.empty() && nodes[n.items[0]].kind == pickle_kind::global)
        return "an instance of " + printable(nodes[n.items[0]].text);
      return "an object";
    case pickle_kind::storage: return "a torch storage";
    case pickle_kind::tensor: return "a tensor";
  }
  return "a value";
}

/// Everything a pickle stream built, and which node it returned.
struct pickle_graph {
  std::vector<pickle_node> nodes;
  std::size_t root = 0;

  const pickle_node& operator[](std::size_t i) const { return nodes[i]; }

  /// The value under string key `key` of dict node `dict` (the last one, as Python's dict keeps), if any.
  std::optional<std::size_t> find(std::size_t dict, std::string_view key) const {
    std::optional<std::size_t> found;
    const auto& items = nodes[dict].items;
    for (std::size_t i = 0; i + 1 < items.size(); i += 2)
      if (nodes[items[i]].kind == pickle_kind::string && nodes[items[i]].text == key) found = items[i + 1];
    return found;
  }

  /// A short description of value i for error messages.
  std::string describe(std::size_t i) const { return describe_pickle_value(nodes, i); }
};

/// Limits that keep a hostile stream's memory use proportional to, and bounded well below, its size.
struct pickle_limits {
  static constexpr std::size_t nodes = std::size_t{1} << 22;  // ~4M values: far above any real state_dict
  static constexpr std::size_t stack = std::size_t{1} << 20;  // stack entries and open marks
  static constexpr std::size_t memo = std::size_t{1} << 22;
  static constexpr std::size_t name = 1024;  // module or class name
  static constexpr std::size_t dims = 64;    // tensor rank
  static constexpr int call_depth = 4;       // nesting of _rebuild_from_type_v2 wrappers
};

/// The element type of a torch storage class or dtype global (e.g. "torch.HalfStorage", "torch.float16").
inline std::optional<dtype> torch_storage_dtype(std::string_view name) {
  static const std::pair<std::string_view, dtype> table[] = {
      {"torch.FloatStorage", dtype::f32},
      {"torch.HalfStorage", dtype::f16},
      {"torch.BFloat16Storage", dtype::bf16},
      {"torch.DoubleStorage", dtype::f64},
      {"torch.LongStorage", dtype::i64},
      {"torch.IntStorage", dtype::i32},
      {"torch.ShortStorage", dtype::i16},
      {"torch.CharStorage", dtype::i8},
      {"torch.ByteStorage", dtype::u8},
      {"torch.BoolStorage", dtype::boolean},
      {"torch.float32", dtype::f32},
      {"torch.float16", dtype::f16},
      {"torch.bfloat16", dtype::bf16},
      {"torch.float64", dtype::f64},
      {"torch.int64", dtype::i64},
      {"torch.int32", dtype::i32},
      {"torch.int16", dtype::i16},
      {"torch.int8", dtype::i8},
      {"torch.uint8", dtype::u8},
      {"torch.bool", dtype::boolean},
  };
  for (const auto& [n, t] : table)
    if (n == name) return t;
  return std::nullopt;
}

/// Runs a pickle stream (protocols 2 to 4) as plain data. Classes and functions are never imported or called:
/// OrderedDict, torch tensor/parameter rebuilds and torch storages are recognised by name, everything else
/// becomes an opaque object. `source` names the stream in error messages.
class unpickler {
 public:
  unpickler(std::span<const std::byte> stream, std::string source) : in_(stream), source_(std::move(source)) {}

  pickle_graph run() {
    // Shared singletons, so None/True/False cost no node each.
    add(node(pickle_kind::none));
    add(node(pickle_kind::boolean, 1));
    add(node(pickle_kind::boolean, 0));
    while (true) {
      op_offset_ = pos_;
      const std::uint8_t op = u8();
      switch (op) {
        case 0x80: {  // PROTO
          const auto version = u8();
          if (version > 5) error("unsupported pickle protocol ", int{version});
          break;
        }
        case 0x95: {  // FRAME: framing only groups opcodes for buffered reading; the length is just checked
          const auto length = le_int(8);
          if (length > in_.size() - pos_) error("frame of ", length, " bytes runs past the end of the stream");
          break;
        }
        case '.': {  // STOP
          pickle_graph g;
          g.root = pop();
          g.nodes = std::move(nodes_);
          return g;
        }
        case '(': mark(); break;                                      // MARK
        case '}': push(add(node(pickle_kind::dict))); break;          // EMPTY_DICT
        case ']': push(add(node(pickle_kind::list))); break;          // EMPTY_LIST
        case ')': push(add(node(pickle_kind::tuple))); break;         // EMPTY_TUPLE
        case 0x8f: push(add(node(pickle_kind::set))); break;          // EMPTY_SET
        case 't': push(make(pickle_kind::tuple, pop_mark())); break;  // TUPLE
        case 0x91: push(make(pickle_kind::set, pop_mark())); break;   // FROZENSET
        case 0x85: push(make(pickle_kind::tuple, pop_n(1))); break;   // TUPLE1
        case 0x86: push(make(pickle_kind::tuple, pop_n(2))); break;   // TUPLE2
        case 0x87: push(make(pickle_kind::tuple, pop_n(3))); break;   // TUPLE3
        case 's': {                                                   // SETITEM
          auto kv = pop_n(2);
          add_items(top(), std::move(kv), pickle_kind::dict, "SETITEM");
          break;
        }
        case 'u': {  // SETITEMS
          auto kv = pop_mark();
          if (kv.size() % 2) error("SETITEMS with an odd number of items");
          add_items(top(), std::move(kv), pickle_kind::dict, "SETITEMS");
          break;
        }
        case 'a': {  // APPEND
          auto v = pop_n(1);
          add_items(top(), std::move(v), pickle_kind::list, "APPEND");
          break;
        }
        case 'e': add_items_after_mark(pickle_kind::list, "APPENDS"); break;   // APPENDS
        case 0x90: add_items_after_mark(pickle_kind::set, "ADDITEMS"); break;  // ADDITEMS
        case 'X': push(text_node(pickle_kind::string, le_int(4))); break;      // BINUNICODE
        case 0x8c: push(text_node(pickle_kind::string, le_int(1))); break;     // SHORT_BINUNICODE
        case 0x8d: push(text_node(pickle_kind::string, le_int(8))); break;     // BINUNICODE8
        case 'B': push(text_node(pickle_kind::bytes, le_int(4))); break;       // BINBYTES
        case 'C': push(text_node(pickle_kind::bytes, le_int(1))); break;       // SHORT_BINBYTES
        case 0x8e: push(text_node(pickle_kind::bytes, le_int(8))); break;      // BINBYTES8
        case 'J': push(integer(static_cast<std::int32_t>(le_int(4)))); break;  // BININT
        case 'K': push(integer(static_cast<std::int64_t>(le_int(1)))); break;  // BININT1
        case 'M': push(integer(static_cast<std::int64_t>(le_int(2)))); break;  // BININT2
        case 0x8a: push(long_integer(le_int(1))); break;                       // LONG1
        case 0x8b: {                                                           // LONG4
          const auto n = static_cast<std::int32_t>(le_int(4));
          if (n < 0) error("LONG4 with negative length ", n);
          push(long_integer(static_cast<std::uint64_t>(n)));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian IEEE double
          const auto bytes = take(8);
          auto n = node(pickle_kind::floating);
          n.real = std::bit_cast<double>(
              load_unsigned<std::uint64_t>(reinterpret_cast<const std::byte*>(bytes.data()), true));
          push(add(std::move(n)));
          break;
        }
        case 'N': push(0); break;                    // NONE
        case 0x88: push(1); break;                   // NEWTRUE
        case 0x89: push(2); break;                   // NEWFALSE
        case '0': pop(); break;                      // POP
        case '1': pop_mark(); break;                 // POP_MARK
        case 'q': memoize(le_int(1)); break;         // BINPUT
        case 'r': memoize(le_int(4)); break;         // LONG_BINPUT
        case 0x94: memoize(memo_.size()); break;     // MEMOIZE
        case 'h': push(memo_get(le_int(1))); break;  // BINGET
        case 'j': push(memo_get(le_int(4))); break;  // LONG_BINGET
        case 'c': {                                  // GLOBAL: "module\nname\n"
          const auto module = line();
          const auto name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const auto name = pop();
          const auto module = pop();
          if (nodes_[module].kind != pickle_kind::string || nodes_[name].kind != pickle_kind::string)
            error("STACK_GLOBAL needs two strings");
          push(global(nodes_[module].text, nodes_[name].text));
          break;
        }
        case 'R': {  // REDUCE
          const auto args = pop();
          const auto callable = pop();
          push(call(callable, args, 0));
          break;
        }
        case 0x81: {  // NEWOBJ
          pop();
          push(object(pop()));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          pop();
          pop();
          push(object(pop()));
          break;
        }
        case 'b': {  // BUILD: object state is irrelevant to weights; only the stack effect matters
          pop();
          top();
          break;
        }
        case 'Q': push(persistent_load(pop())); break;  // BINPERSID
        default: error("unknown or unsupported pickle opcode 0x", hex(op));
      }
    }
  }

 private:
  template <class... Parts>
  [[noreturn]] void error(Parts&&... parts) const {
    fail(source_, ": bad pickle data at offset ", op_offset_, ": ", std::forward<Parts>(parts)...);
  }

  static std::string hex(std::uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }

  std::string_view take(std::uint64_t n) {
    if (n > in_.size() - pos_) error("needs ", n, " more bytes but the stream ends after ", in_.size() - pos_);
    const std::string_view s(reinterpret_cast<const char*>(in_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)[0]); }

  std::uint64_t le_int(std::size_t n) {
    const auto s = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(s[i])} << (8 * i);
    return v;
  }

  /// A newline-terminated name (GLOBAL's text arguments), bounded in length.
  std::string_view line() {
    const std::size_t limit = std::min(in_.size() - pos_, pickle_limits::name + 1);
    for (std::size_t i = 0; i < limit; ++i)
      if (in_[pos_ + i] == std::byte{'\n'}) {
        const auto s = take(i);
        ++pos_;
        return s;
      }
    error("GLOBAL name is unterminated or longer than ", pickle_limits::name, " bytes");
  }

  static pickle_node node(pickle_kind kind, std::int64_t number = 0) {
    pickle_node n;
    n.kind = kind;
    n.number = number;
    return n;
  }

  std::size_t add(pickle_node n) {
    if (nodes_.size() >= pickle_limits::nodes) error("more than ", pickle_limits::nodes, " values");
    nodes_.push_back(std::move(n));
    return nodes_.size() - 1;
  }

  std::size_t make(pickle_kind kind, std::vector<std::size_t> items) {
    auto n = node(kind);
    n.items = std::move(items);
    return add(std::move(n));
  }

  std::size_t integer(std::int64_t v) { return add(node(pickle_kind::integer, v)); }

  /// LONG1/LONG4 payload: little-endian two's complement of n bytes.
  std::size_t long_integer(std::uint64_t n) {
    const auto bytes = take(n);
    if (n > 8) return add(node(pickle_kind::big_integer));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(bytes[i])} << (8 * i);
    if (n > 0 && n < 8 && (static_cast<std::uint8_t>(bytes[n - 1]) & 0x80)) v |= ~std::uint64_t{0} << (8 * n);
    return integer(static_cast<std::int64_t>(v));
  }

  std::size_t text_node(pickle_kind kind, std::uint64_t length) {
    auto n = node(kind);
    n.text = take(length);
    return add(std::move(n));
  }

  std::size_t global(std::string_view module, std::string_view name) {
    if (module.size() > pickle_limits::name || name.size() > pickle_limits::name)
      error("global name longer than ", pickle_limits::name, " bytes");
    auto n = node(pickle_kind::global);
    n.text.reserve(module.size() + 1 + name.size());
    n.text.append(module).append(".").append(name);
    return add(std::move(n));
  }

  std::size_t object(std::size_t type) { return make(pickle_kind::object, {type}); }

  void push(std::size_t node) {
    if (stack_.size() >= pickle_limits::stack) error("stack deeper than ", pickle_limits::stack);
    stack_.push_back(node);
  }

  std::size_t pop() {
    if (stack_.size() <= current_mark()) error("stack underflow");
    const auto v = stack_.back();
    stack_.pop_back();
    return v;
  }

  std::size_t top() {
    if (stack_.size() <= current_mark()) error("stack underflow");
    return stack_.back();
  }

  /// Pops n values, returned oldest first.
  std::vector<std::size_t> pop_n(std::size_t n) {
    if (stack_.size() - current_mark() < n) error("stack underflow");
    std::vector<std::size_t> out(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return out;
  }

  std::size_t current_mark() const { return marks_.empty() ? 0 : marks_.back(); }

  void mark() {
    if (marks_.size() >= pickle_limits::stack) error("more than ", pickle_limits::stack, " open marks");
    marks_.push_back(stack_.size());
  }

  /// Pops everything above the newest mark, and the mark.
  std::vector<std::size_t> pop_mark() {
    if (marks_.empty()) error("no MARK to pop to");
    const auto m = marks_.back();
    marks_.pop_back();
    std::vector<std::size_t> out(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }

  void add_items_after_mark(pickle_kind kind, const char* op) {
    auto items = pop_mark();
    add_items(top(), std::move(items), kind, op);
  }

  /// Adds items to a container. Opaque objects (dict or list subclasses swinfer does not know) swallow them.
  void add_items(std::size_t target, std::vector<std::size_t> items, pickle_kind kind, const char* op) {
    auto& n = nodes_[target];
    if (n.kind == pickle_kind::object) return;
    if (n.kind != kind) error(op, " on ", describe_pickle_value(nodes_, target));
    n.items.insert(n.items.end(), items.begin(), items.end());
  }

  void memoize(std::uint64_t key) {
    if (!memo_.count(key) && memo_.size() >= pickle_limits::memo)
      error("more than ", pickle_limits::memo, " memo entries");
    memo_[key] = top();
  }

  std::size_t memo_get(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) error("memo key ", key, " is not defined");
    return it->second;
  }

  const pickle_node& item(std::size_t tuple, std::size_t i) const { return nodes_[nodes_[tuple].items[i]]; }

  /// The persistent id torch.save writes for a storage: ('storage', storage_type, key, location, numel).
  std::size_t persistent_load(std::size_t pid) {
    const auto& t = nodes_[pid];
    if (t.kind != pickle_kind::tuple || t.items.size() != 5 || item(pid, 0).kind != pickle_kind::string ||
        item(pid, 0).text != "storage")
      error("persistent id is not a ('storage', type, key, location, numel) tuple");
    const auto& type = item(pid, 1);
    if (item(pid, 2).kind != pickle_kind::string) error("storage key is not a string");
    if (item(pid, 4).kind != pickle_kind::integer || item(pid, 4).number < 0)
      error("storage size is not a non-negative int");
    const auto element = type.kind == pickle_kind::global ? torch_storage_dtype(type.text) : std::nullopt;
    // Storages of other types (complex, quantised, untyped) may sit in parts of the checkpoint that are never used.
    if (!element) return object(t.items[1]);
    auto n = node(pickle_kind::storage, item(pid, 4).number);
    n.element = *element;
    n.items = {t.items[2]};
    return add(std::move(n));
  }

  /// REDUCE: applies a recognised torch or collections function to its argument tuple; anything else
  /// yields an opaque object.
  std::size_t call(std::size_t callable, std::size_t args, int depth) {
    const auto& c = nodes_[callable];
    const auto& a = nodes_[args];
    if (c.kind != pickle_kind::global || a.kind != pickle_kind::tuple) return object(callable);
    const std::string& name = c.text;
    if (name == "collections.OrderedDict") return a.items.empty() ? add(node(pickle_kind::dict)) : object(callable);
    if (name == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(args);
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (a.items.empty() || item(args, 0).kind != pickle_kind::tensor) error(name, " without a tensor argument");
      return a.items[0];
    }
    // Tensor subclasses are saved as _rebuild_from_type_v2(func, type, args, state); the data comes from func(*args).
    if (name == "torch._tensor._rebuild_from_type_v2") {
      if (a.items.size() != 4) error(name, " with ", a.items.size(), " arguments instead of 4");
      if (depth >= pickle_limits::call_depth) error(name, " nested too deeply");
      return call(a.items[0], a.items[2], depth + 1);
    }
    return object(callable);
  }

  /// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
  std::size_t rebuild_tensor(std::size_t args) {
    const auto& a = nodes_[args];
    auto bad = [&](const char* what) { error("torch._utils._rebuild_tensor_v2 ", what); };
    if (a.items.size() != 6 && a.items.size() != 7) bad("needs 6 or 7 arguments");
    if (item(args, 0).kind != pickle_kind::storage) bad("argument 1 is not a supported storage");
    if (item(args, 1).kind != pickle_kind::integer || item(args, 1).number < 0) bad("offset is not a non-negative int");
    const auto& size = item(args, 2);
    const auto& stride = item(args, 3);
    if (size.kind != pickle_kind::tuple || stride.kind != pickle_kind::tuple) bad("size or stride is not a tuple");
    if (size.items.size() != stride.items.size()) bad("size and stride differ in length");
    if (size.items.size() > pickle_limits::dims) bad("tensor has too many dimensions");
    for (const auto* t : {&size, &stride})
      for (auto i : t->items)
        if (nodes_[i].kind != pickle_kind::integer || nodes_[i].number < 0)
          bad("size or stride is not non-negative ints");
    auto n = node(pickle_kind::tensor, item(args, 1).number);
    n.items = {a.items[0], a.items[2], a.items[3]};
    return add(std::move(n));
  }

  std::span<const std::byte> in_;
  std::string source_;
  std::size_t pos_ = 0;
  std::size_t op_offset_ = 0;
  std::vector<pickle_node> nodes_;
  std::vector<std::size_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::size_t> memo_;
};

/// Unpickles `stream`; `source` names it in error messages.
inline pickle_graph unpickle(std::span<const std::byte> stream, std::string source) {
  return unpickler(stream, std::move(source)).run();
}

}  // namespace swinfer::detail
