// swinfer cpu backend: what the AMX kernels share (amx.hpp for bf16, amx_int8.hpp for int8): the shapes of the
// eight tile registers, and, where the target has AMX-TILE, the permission Linux grants for the tile state and the
// scope that loads a configuration. The shapes are plain data so that a software model of the tile unit (the int8
// tests) is configured exactly as the hardware is.
#pragma once

#include <array>
#include <cstdint>

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

/// Scope in which the calling thread holds a tile configuration (palette 1). Releasing at the end keeps thread
/// switches cheap.
class tile_scope {
 public:
  explicit tile_scope(const tile_shapes& shapes = full_tiles()) {
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
  }
  ~tile_scope() { _tile_release(); }
  tile_scope(const tile_scope&) = delete;
  tile_scope& operator=(const tile_scope&) = delete;
};
#endif

}  // namespace swinfer::cpu::amx
