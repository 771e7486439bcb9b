// swinfer cpu backend: what the AMX kernels share (amx.hpp for bf16, amx_int8.hpp for int8): the shapes of the
// eight tile registers, and, where the target has AMX-TILE, the permission Linux grants for the tile state and the
// scope that loads a configuration. The shapes are plain data so that a software model of the tile unit (the int8
// tests) is configured exactly as the hardware is.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#if defined(__AMX_TILE__) && defined(__linux__) && !defined(SWINFER_CPU_DISABLE_AMX)
#define SWINFER_CPU_AMX_TILES 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace swinfer::cpu::amx {

/// Rows of every tile the kernels use, and the bytes of a full tile row.
inline constexpr int tile_rows = 16;
inline constexpr int tile_row_bytes = 64;

/// One tile register's shape: rows, and bytes per row.
struct tile_shape {
  int rows = 0;
  int row_bytes = 0;
  friend bool operator==(const tile_shape&, const tile_shape&) = default;
};
/// The eight tile registers' shapes of one configuration.
using tile_shapes = std::array<tile_shape, 8>;

/// Every tile 16 rows x 64 bytes (the bf16 kernels' configuration).
inline constexpr tile_shapes full_tiles() {
  tile_shapes shapes{};
  for (tile_shape& s : shapes) s = {tile_rows, tile_row_bytes};
  return shapes;
}

#ifdef SWINFER_CPU_AMX_TILES
/// Whether this process may use AMX: Linux hands out the 8 KiB tile state only on request (asked once).
inline bool available() {
  static const bool granted = [] {
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return granted;
}

/// The configuration the calling thread's innermost tile_scope loaded (none outside every scope).
struct held_tiles {
  bool any = false;
  tile_shapes shapes{};
};
inline held_tiles& this_thread_tiles() {
  thread_local held_tiles held;
  return held;
}

/// Scope in which the calling thread holds a tile configuration (palette 1). Scopes nest: one inside another of the
/// same shapes loads nothing (a convolution holds its configuration over a worker's whole share: loaded per output
/// row, perf put 8.6 % of the int8 kernel's samples at it), and one of other shapes loads its own and puts the outer
/// one back when it ends. The outermost releases the tiles: thread switches stay cheap.
class tile_scope {
 public:
  explicit tile_scope(const tile_shapes& shapes = full_tiles()) : outer_(this_thread_tiles()) {
    if (!outer_.any || outer_.shapes != shapes) load(shapes);
  }
  ~tile_scope() {
    if (!outer_.any) {
      _tile_release();
      this_thread_tiles() = {};
    } else if (this_thread_tiles().shapes != outer_.shapes) {
      load(outer_.shapes);
    }
  }
  tile_scope(const tile_scope&) = delete;
  tile_scope& operator=(const tile_scope&) = delete;

 private:
  static void load(const tile_shapes& shapes) {
    struct alignas(64) tile_config {
      std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
      std::uint16_t bytes_per_row[16] = {};
      std::uint8_t rows[16] = {};
    } config;
    for (std::size_t t = 0; t < shapes.size(); ++t) {
      config.bytes_per_row[t] = static_cast<std::uint16_t>(shapes[t].row_bytes);
      config.rows[t] = static_cast<std::uint8_t>(shapes[t].rows);
    }
    // GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes of the configuration (its memory operand is a
    // pointer's worth), so the other stores may be dropped as dead, and ldtilecfg faults on what the stack held
    // (seen once the int8 kernel took eight tiles). This empty statement reads all 64 bytes first.
    asm volatile("" : : "m"(config));
    _tile_loadconfig(&config);
    this_thread_tiles() = {true, shapes};
  }

  held_tiles outer_;
};
#endif

/// A tile_scope of `shapes` where there are some (and AMX is compiled in), nothing otherwise: what a parallel loop's
/// worker holds over its share when the products it runs may be on tiles.
class optional_tile_scope {
 public:
  explicit optional_tile_scope(const std::optional<tile_shapes>& shapes) {
#ifdef SWINFER_CPU_AMX_TILES
    if (shapes) scope_.emplace(*shapes);
#else
    (void)shapes;
#endif
  }

 private:
#ifdef SWINFER_CPU_AMX_TILES
  std::optional<tile_scope> scope_;
#endif
};

}  // namespace swinfer::cpu::amx
