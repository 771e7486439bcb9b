// swinfer oneDNN backend: the engine, the stream and the primitive cache that every op of one model shares.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

// Debian's libdnnl runs on GNU OpenMP, so its thread count is the OpenMP one; setting it needs the consumer built
// and linked with OpenMP (OpenMP::OpenMP_CXX).
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP && defined(_OPENMP)
#define SWINFER_ONEDNN_SETS_THREADS 1
#include <omp.h>
#else
#define SWINFER_ONEDNN_SETS_THREADS 0
#endif

#include "swinfer/backend/onednn/options.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/precision.hpp"

// The backend's own loops (statistics, window gather/scatter) share oneDNN's OpenMP pool when the consumer is
// compiled with OpenMP, and run serially otherwise. _Pragma keeps -Wunknown-pragmas quiet in the serial build.
#if defined(_OPENMP)
#define SWINFER_ONEDNN_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define SWINFER_ONEDNN_PARALLEL_FOR
#endif

namespace swinfer::onednn {

/// Joins the parts of a cache key with '|' (op name first, then everything the primitive depends on).
template <class... Parts>
std::string cache_key(const Parts&... parts) {
  std::string key;
  ((key += detail::concat(parts), key += '|'), ...);
  return key;
}

/// \brief One CPU engine and its in-order stream, plus a cache of primitives keyed by op and problem.
///
/// oneDNN's own global cache only saves the JIT step; creating a primitive descriptor still costs
/// microseconds to milliseconds, so every op looks its {pd, primitive} up here by a key naming the op kind,
/// data types, layouts, shapes and attributes. Ops with identical keys (the two blocks of a Swin stage, say)
/// share one entry; each op keeps its own reordered weights. Not thread-safe: one context per thread.
class context {
 public:
  /// threads > 0 sets the OpenMP thread count of the calling thread (the one that runs the model);
  /// 0 keeps the OpenMP default of one thread per hardware thread.
  using options = backend_options<backend::onednn>;

  explicit context(const options& options) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    check_thread_count(options.threads, "engine_options");
    if (options.threads > 0) {
#if SWINFER_ONEDNN_SETS_THREADS
      omp_set_num_threads(options.threads);
#else
      detail::fail(
          "engine_options::threads needs the onednn backend compiled with OpenMP (link OpenMP::OpenMP_CXX); "
          "use 0, or OMP_NUM_THREADS");
#endif
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  const dnnl::engine& engine() const { return engine_; }
  /// Where the kernels run, for reports: the host CPU, oneDNN's version and the instruction set it dispatches to.
  std::string describe_device() const {
    return detail::concat("host CPU, oneDNN ", version(), " (", isa_name(), ")");
  }

  /// Whether oneDNN has bf16 kernels on this CPU: oneDNN 2.6's bf16 convolutions, products and norms need AVX-512
  /// (avx512_core); on AVX2-only CPUs (AMD Zen 3 and older, most desktop Intel) it has none.
  static bool has_bf16_kernels() {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto needed = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & needed) == needed;
  }
  /// Fails, saying what to use instead, where oneDNN has no kernels for storage type S on this CPU: ops call it
  /// when constructed, so a model fails as it is built rather than at its first forward.
  template <class S>
  static void require_kernels_for() {
    if (std::is_same_v<S, Eigen::bfloat16> && !has_bf16_kernels()) {
      detail::fail("the onednn backend's bf16 needs a CPU with AVX-512: oneDNN ", version(), " has no bf16 kernels for ",
                   isa_name(), " (use --backend cpu --precision bf16, or --precision fp32)");
    }
  }

  /// The entry cached under `key`, built by `make()` on first use. Entry addresses are stable. A problem oneDNN has
  /// no kernel for on this CPU is an error naming the op and the instruction set.
  template <class Entry, class Make>
  const Entry& cached(const std::string& key, Make&& make) {
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      it = cache_.emplace(key, std::make_shared<const Entry>(created(key.substr(0, key.find('|')), make))).first;
    }
    return *static_cast<const Entry*>(it->second.get());
  }

  /// make()'s result; a problem oneDNN has no kernel for on this CPU is an error naming `op` and the instruction
  /// set. For what an op keeps itself rather than in the cache (primitives with the op's own constant attributes).
  template <class Make>
  static auto created(const std::string& op, Make&& make) {
    try {
      return std::forward<Make>(make)();
    } catch (const dnnl::error& e) {
      detail::fail("oneDNN ", version(), " on this CPU (", isa_name(), ") has no ", op, " kernel for this problem: ",
                   e.what());
    }
  }

  /// Runs one primitive and waits, so host code may read its outputs right after.
  void execute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
    p.execute(stream_, args);
    stream_.wait();
  }

  /// Copies (and converts type and layout) between any two memories of equal logical dims.
  void reorder(const dnnl::memory& from, const dnnl::memory& to) {
    const auto& r = cached<dnnl::reorder>(
        cache_key("reorder", desc_key(from.get_desc()), desc_key(to.get_desc())),
        [&] { return dnnl::reorder(dnnl::reorder::primitive_desc(engine_, from.get_desc(), engine_, to.get_desc())); });
    execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }

  /// Copies `from` into `to` as reorder() does, multiplying by `scale` on the way; into an int8 memory that rounds
  /// half to even and saturates (the int8 scheme's activation quantizer with scale = 1 / s_x). The scale is a run-time
  /// argument, so one cached reorder serves every scale.
  void reorder_scaled(const dnnl::memory& from, const dnnl::memory& to, float scale) {
    reorder_with_scales(from, to, 0, 1, &scale);
  }
  /// reorder_scaled() of a (rows, columns) matrix with one scale per row: row_scales[rows].
  void reorder_scaled_rows(const dnnl::memory& from, const dnnl::memory& to, const float* row_scales) {
    reorder_with_scales(from, to, 1 << 0, from.get_desc().dims()[0], row_scales);
  }

  /// Attributes every primitive starts from. fp32 math is pinned to strict: a reference must not let
  /// ONEDNN_DEFAULT_FPMATH_MODE silently run fp32 problems in bf16.
  static dnnl::primitive_attr strict_attr() {
    dnnl::primitive_attr attr;
    attr.set_fpmath_mode(dnnl::fpmath_mode::strict);
    return attr;
  }

  /// A key naming a memory descriptor completely (data type, dims, strides, blocking).
  static std::string desc_key(const dnnl::memory::desc& md) {
    const auto& d = md.data;
    std::string s = std::to_string(d.data_type) + ':' + std::to_string(d.format_kind) + ':';
    for (int i = 0; i < d.ndims; ++i) s += std::to_string(d.dims[i]) + ',';
    if (d.format_kind == dnnl_blocked) {
      const auto& b = d.format_desc.blocking;
      s += ':';
      for (int i = 0; i < d.ndims; ++i) s += std::to_string(b.strides[i]) + ',';
      for (int i = 0; i < b.inner_nblks; ++i)
        s += std::to_string(b.inner_idxs[i]) + 'x' + std::to_string(b.inner_blks[i]);
    }
    return s;
  }

 private:
  /// The scaled reorder: `count` run-time scales over the dimensions in `mask` (oneDNN's output scales mask).
  void reorder_with_scales(const dnnl::memory& from, const dnnl::memory& to, int mask, dnnl::memory::dim count,
                           const float* scales) {
    const auto& r = cached<dnnl::reorder>(
        cache_key("scaled reorder", mask, desc_key(from.get_desc()), desc_key(to.get_desc())), [&] {
          dnnl::primitive_attr attr;
          attr.set_output_scales(mask, {DNNL_RUNTIME_F32_VAL});
          return dnnl::reorder(dnnl::reorder::primitive_desc(engine_, from.get_desc(), engine_, to.get_desc(), attr));
        });
    dnnl::memory scale_memory({{count}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a}, engine_,
                              const_cast<float*>(scales));
    execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_ATTR_OUTPUT_SCALES, scale_memory}});
  }

  static std::string version() {
    const dnnl_version_t* v = dnnl_version();
    return detail::concat(v->major, ".", v->minor, ".", v->patch);
  }
  /// The instruction set oneDNN's CPU kernels were dispatched to on this machine.
  static const char* isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core_amx: return "avx512 + amx";
      case dnnl::cpu_isa::avx512_core_bf16: return "avx512 bf16";
      case dnnl::cpu_isa::avx512_core_vnni: return "avx512 vnni";
      case dnnl::cpu_isa::avx512_core: return "avx512";
      case dnnl::cpu_isa::avx2_vnni: return "avx2 vnni";
      case dnnl::cpu_isa::avx2: return "avx2";
      case dnnl::cpu_isa::avx: return "avx";
      case dnnl::cpu_isa::sse41: return "sse4.1";
      default: return "other isa";
    }
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<std::string, std::shared_ptr<const void>> cache_;
};

}  // namespace swinfer::onednn
