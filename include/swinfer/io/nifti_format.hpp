// swinfer: NIfTI-1/NIfTI-2 (.nii, .nii.gz) through nifti_clib: the volume type, file names, and the header, voxel
// and file helpers the reader (io/nifti_read.hpp) and the writer (io/nifti_write.hpp) share.
#pragma once

// nifti_clib 3.x (Debian libnifti2-dev): needs -I/usr/include/nifti and links libnifti2 + libznz. Its nifti2_io.h
// reads both NIfTI versions and cannot share a translation unit with the older nifti1_io.h.
#include <nifti2_io.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {

/// Voxel types write_nifti stores: uint8 for label masks, float32 for logits and probabilities.
enum class nifti_datatype : int { uint8 = NIFTI_TYPE_UINT8, float32 = NIFTI_TYPE_FLOAT32 };

struct nifti_read_options {
  /// Keep NaN/Inf voxels instead of failing (the network would spread them over the whole output).
  bool allow_non_finite = false;
};

/// Row-major 4x4 voxel-to-world matrix: world = affine * (i, j, k, 1).
using nifti_affine = std::array<std::array<double, 4>, 4>;

/// \brief A NIfTI image: the voxels as a tensor plus the header they came with.
struct nifti_volume {
  /// Voxel values after scl_slope/scl_inter, logical shape (1, C, I, J, K) in ncdhw: spatial axis 0 is NIfTI's
  /// i axis, as nibabel and MONAI's LoadImage index it. C is dim[4] (or dim[5] of a 5-D image with dim[4] == 1).
  tensor<float> data;
  /// nifti_clib's parsed header. Its pointers (file names, extensions, data) are always null, so it is a plain
  /// value; spatial pixdims are made positive, as nibabel does on load.
  nifti_image header{};
  /// The file it was read from, for messages.
  std::filesystem::path path;

  /// 1 or 2 (0 for a volume not read from a file).
  int version() const {
    if (header.nifti_type == NIFTI_FTYPE_NIFTI2_1) return 2;
    return header.nifti_type == NIFTI_FTYPE_NIFTI1_1 ? 1 : 0;
  }
  /// Voxel grid (I, J, K): dim[1..3].
  std::array<std::int64_t, 3> dims() const { return {header.nx, header.ny, header.nz}; }
  std::int64_t channels() const { return data.shape().c; }
  /// Voxel size along i, j, k: pixdim[1..3] (usually mm, see header.xyz_units).
  std::array<double, 3> spacing() const { return {header.dx, header.dy, header.dz}; }

  /// nibabel's img.affine: the sform if sform_code > 0, else the qform if qform_code > 0, else the pixdim-scaled
  /// matrix with x flipped and the origin at the centre voxel (nibabel's get_base_affine, not the NIfTI spec's
  /// method 1). nibabel tests codes != 0, but negative codes are invalid and both libraries reset them to 0.
  nifti_affine affine() const {
    nifti_affine a{};
    const nifti_dmat44* m = header.sform_code > 0 ? &header.sto_xyz : header.qform_code > 0 ? &header.qto_xyz : nullptr;
    if (m) {
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) a[r][c] = m->m[r][c];
      return a;
    }
    const auto d = dims();
    const auto s = spacing();
    const std::array<double, 3> zoom = {-s[0], s[1], s[2]};
    for (int r = 0; r < 3; ++r) {
      a[r][r] = zoom[r];
      a[r][3] = -static_cast<double>(d[r] - 1) / 2.0 * zoom[r];
    }
    a[3][3] = 1.0;
    return a;
  }
};

namespace detail {

/// ".nii.gz", ".nii" (or their all-uppercase forms, which nifti_clib also accepts) when `name` ends in one
/// after at least one more character; empty otherwise.
inline std::string_view nifti_suffix(std::string_view name) {
  for (std::string_view s : {".nii.gz", ".NII.GZ", ".nii", ".NII"})
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) return s;
  return {};
}

/// A znzlib handle (nifti_clib's plain-or-gzip file layer), closed on scope exit.
class znz_file {
 public:
  znz_file(const std::filesystem::path& p, const char* mode, bool gzip) : file_(znzopen(p.c_str(), mode, gzip)) {}
  ~znz_file() {
    if (file_) Xznzclose(&file_);
  }
  znz_file(znz_file&& other) noexcept : file_(std::exchange(other.file_, nullptr)) {}
  znz_file(const znz_file&) = delete;
  znz_file& operator=(const znz_file&) = delete;

  explicit operator bool() const { return file_ != nullptr; }
  znzFile get() const { return file_; }
  /// Closes now; non-zero when flushing failed (gzclose's or fclose's status).
  int close() { return Xznzclose(&file_); }

 private:
  znzFile file_;
};

/// The header exactly as in the file: swinfer checks it before nifti_clib, which quietly turns zero dims into 1.
struct nifti_raw_header {
  int version = 0;
  bool swapped = false;
  nifti_1_header n1{};  // as in the file, byte order included (nifti_clib swaps while converting)
  nifti_2_header n2{};
};

/// Reads the fixed-size header at the start of `f` and rejects non-NIfTI and two-file (.hdr/.img) headers.
inline nifti_raw_header read_raw_header(znz_file& f, const std::filesystem::path& path) {
  nifti_raw_header raw;
  std::array<char, sizeof(nifti_2_header)> buf{};
  const std::size_t got = znzread(buf.data(), 1, sizeof(nifti_1_header), f.get());
  if (got == static_cast<std::size_t>(-1)) fail(printable(path), ": not a NIfTI file (corrupt gzip data)");
  if (got < sizeof(nifti_1_header)) {
    fail(printable(path), ": not a NIfTI file (", got, " bytes is too short for a NIfTI header)");
  }
  std::int32_t size = 0;
  std::memcpy(&size, buf.data(), sizeof size);
  const auto swapped_size = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(size)));
  if (size == sizeof(nifti_1_header) || swapped_size == sizeof(nifti_1_header)) {
    raw.version = 1;
  } else if (size == sizeof(nifti_2_header) || swapped_size == sizeof(nifti_2_header)) {
    raw.version = 2;
  } else {
    fail(printable(path), ": not a NIfTI file (no NIfTI-1 or NIfTI-2 header)");
  }
  raw.swapped = size != static_cast<std::int32_t>(raw.version == 1 ? sizeof(nifti_1_header) : sizeof(nifti_2_header));
  if (raw.version == 2) {
    const std::size_t rest = sizeof(nifti_2_header) - sizeof(nifti_1_header);
    if (znzread(buf.data() + sizeof(nifti_1_header), 1, rest, f.get()) != rest) {
      fail(printable(path), ": the NIfTI-2 header is truncated");
    }
    std::memcpy(&raw.n2, buf.data(), sizeof raw.n2);
  } else {
    std::memcpy(&raw.n1, buf.data(), sizeof raw.n1);
  }
  // The magic string is bytes, unaffected by byte order.
  const char* magic = raw.version == 2 ? raw.n2.magic : raw.n1.magic;
  const bool nifti = raw.version == 2 ? NIFTI_VERSION(raw.n2) == 2 : NIFTI_VERSION(raw.n1) == 1;
  if (!nifti) {
    fail(printable(path), ": not a NIfTI-", raw.version, " file (magic ", printable(std::string_view(magic, 3)),
         raw.version == 1 ? "; an ANALYZE 7.5 header?)" : ")");
  }
  if (magic[1] != '+') {
    fail(printable(path), ": a two-file NIfTI header (.hdr/.img pair); convert it to a single .nii or .nii.gz");
  }
  return raw;
}

/// Checks dims, datatype and scaling of a host-order header; returns the (1, C, I, J, K) shape of its voxels.
template <class Header>
shape5 check_nifti_header(const Header& h, const std::filesystem::path& path) {
  if (h.dim[0] < 1 || h.dim[0] > 7) fail(printable(path), ": corrupt NIfTI header (dim[0] = ", h.dim[0], ")");
  const int ndim = static_cast<int>(h.dim[0]);
  // dim[] entries past dim[0] are unused (often 0 or garbage).
  const auto extent = [&](int d) -> std::int64_t { return d <= ndim ? h.dim[d] : 1; };
  const auto dim_list = [&] {
    std::string s = "[";
    for (int d = 1; d <= ndim; ++d) s += (d > 1 ? ", " : "") + std::to_string(h.dim[d]);
    return s + "]";
  };
  if (ndim < 3) fail(printable(path), ": a ", ndim, "-D image (dims ", dim_list(), "); swinfer segments 3-D volumes");
  for (int d = 1; d <= ndim; ++d) {
    if (h.dim[d] < 1) fail(printable(path), ": has an empty dimension (dims ", dim_list(), ")");
  }
  if ((extent(4) > 1 && extent(5) > 1) || extent(6) > 1 || extent(7) > 1) {
    fail(printable(path), ": unsupported ", ndim, "-D image (dims ", dim_list(),
         "); swinfer reads 3-D volumes, 4-D with channels in dim[4], or 5-D with dim[4] = 1 and channels in dim[5]");
  }
  switch (h.datatype) {
    case NIFTI_TYPE_UINT8: case NIFTI_TYPE_INT8: case NIFTI_TYPE_UINT16: case NIFTI_TYPE_INT16:
    case NIFTI_TYPE_UINT32: case NIFTI_TYPE_INT32: case NIFTI_TYPE_UINT64: case NIFTI_TYPE_INT64:
    case NIFTI_TYPE_FLOAT32: case NIFTI_TYPE_FLOAT64:
      break;
    default:
      fail(printable(path), ": unsupported voxel datatype ", nifti_datatype_string(h.datatype), " (code ", h.datatype,
           "); swinfer reads integer and float32/float64 scalar images");
  }
  // nibabel's rule: slope 0 or non-finite means no scaling; a valid slope with a non-finite intercept is an error.
  if (std::isfinite(h.scl_slope) && h.scl_slope != 0 && !std::isfinite(h.scl_inter)) {
    fail(printable(path), ": scl_slope is ", h.scl_slope, " but scl_inter is ", h.scl_inter);
  }
  const shape5 shape{1, extent(4) * extent(5), h.dim[1], h.dim[2], h.dim[3]};
  int item = 0, swap = 0;
  nifti_datatype_sizes(h.datatype, &item, &swap);
  std::optional<std::int64_t> bytes = 1;
  for (std::int64_t e : {shape.c, shape.d, shape.h, shape.w, static_cast<std::int64_t>(item)}) {
    if (!(bytes = multiply_exact(*bytes, e))) {
      fail(printable(path), ": corrupt NIfTI header (dims ", dim_list(), " overflow)");
    }
  }
  return shape;
}

/// At most how many bytes reading `path` can yield: its size, or 1032 times that when gzipped (deflate's largest
/// expansion). Lets a header's claim be checked before anything is allocated for it.
inline std::uintmax_t readable_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return std::numeric_limits<std::uintmax_t>::max();
  unsigned char magic[2] = {0, 0};
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(magic), 2);
  return magic[0] == 0x1f && magic[1] == 0x8b ? size * 1032 : size;
}

/// Calls f(file_index, tensor_offset) for every voxel of a (1, C, I, J, K) shape. NIfTI stores i fastest and a
/// ncdhw tensor k fastest, so the (i, k) plane is walked in tiles that keep both sides in cache.
template <class F>
void for_each_voxel(const shape5& s, const std::array<std::int64_t, 5>& strides, F&& f) {
  constexpr std::int64_t tile = 32;
  const std::int64_t ni = s.d, nj = s.h, nk = s.w;
  for (std::int64_t c = 0; c < s.c; ++c)
    for (std::int64_t j = 0; j < nj; ++j)
      for (std::int64_t i0 = 0; i0 < ni; i0 += tile)
        for (std::int64_t k0 = 0; k0 < nk; k0 += tile)
          for (std::int64_t i = i0; i < std::min(i0 + tile, ni); ++i)
            for (std::int64_t k = k0; k < std::min(k0 + tile, nk); ++k)
              f(((c * nk + k) * nj + j) * ni + i, c * strides[1] + i * strides[2] + j * strides[3] + k * strides[4]);
}

/// Reads the voxels, stored as S, from the current position of `f` into a (1, C, I, J, K) ncdhw tensor, applying
/// slope and intercept.
template <class S>
tensor<float> read_voxels(znz_file& f, const shape5& shape, std::int64_t offset, bool swapped, double slope,
                          double inter, const std::filesystem::path& path) {
  const auto n = static_cast<std::size_t>(shape.numel());
  const std::uintmax_t available = readable_bytes(path);
  if (available < static_cast<std::uintmax_t>(offset) || (available - offset) / sizeof(S) < n) {
    fail(printable(path), ": the voxel data is truncated (the header describes ", n, " voxels of ", sizeof(S),
         " bytes from offset ", offset, ", more than the file holds)");
  }
  std::vector<S> raw;
  try {
    raw.reserve(n);
  } catch (const std::bad_alloc&) {
    fail(printable(path), ": ", n * sizeof(S), " bytes of voxel data do not fit in memory");
  }
  // In pieces, so a header that claims more voxels than the file holds costs no more memory than the file.
  constexpr std::size_t piece = (std::size_t{64} << 20) / sizeof(S);
  while (raw.size() < n) {
    const std::size_t at = raw.size(), count = std::min(piece, n - at);
    raw.resize(at + count);
    if (znzread(raw.data() + at, sizeof(S), count, f.get()) != count) {
      fail(printable(path), ": the voxel data is truncated or corrupt (expected ", n * sizeof(S), " bytes at offset ",
           offset, ")");
    }
  }
  // gzip checks its CRC only when the end of the stream is read: one more byte makes a corrupt tail show.
  char extra = 0;
  if (znzread(&extra, 1, 1, f.get()) == static_cast<std::size_t>(-1)) {
    fail(printable(path), ": corrupt gzip data after the voxels (checksum or trailer)");
  }
  if (swapped && sizeof(S) > 1) nifti_swap_Nbytes(static_cast<std::int64_t>(n), sizeof(S), raw.data());
  tensor<float> out(shape, layout_kind::ncdhw);
  float* dst = out.data();
  const S* src = raw.data();
  if (slope != 1.0 || inter != 0.0) {
    for_each_voxel(out.shape(), out.strides(), [&](std::int64_t from, std::int64_t to) {
      dst[to] = static_cast<float>(static_cast<double>(src[from]) * slope + inter);
    });
  } else {
    for_each_voxel(out.shape(), out.strides(),
                   [&](std::int64_t from, std::int64_t to) { dst[to] = static_cast<float>(src[from]); });
  }
  return out;
}

/// Fails when `t` holds NaN or infinite values. Tests the bits, so it still works under -ffast-math.
inline void check_finite(const tensor<float>& t, const std::filesystem::path& path) {
  std::int64_t nan = 0, inf = 0;
  for (std::int64_t i = 0; i < t.size(); ++i) {
    const auto bits = std::bit_cast<std::uint32_t>(t.data()[i]);
    if ((bits & 0x7f800000u) == 0x7f800000u) ++((bits & 0x007fffffu) ? nan : inf);
  }
  if (nan + inf) {
    fail(printable(path), ": ", nan + inf, " of ", t.size(), " voxels are not finite (", nan, " NaN, ", inf,
         " infinite); replace them (e.g. with the background value) before segmenting");
  }
}

}  // namespace detail

/// True when the file name ends in .nii or .nii.gz (or .NII / .NII.GZ): picks the images out of a folder.
inline bool is_nifti_path(const std::filesystem::path& path) {
  return !detail::nifti_suffix(path.filename().string()).empty();
}

/// The file name without its .nii / .nii.gz suffix ("case_001.nii.gz" -> "case_001"), for naming outputs.
inline std::string nifti_stem(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.substr(0, name.size() - detail::nifti_suffix(name).size());
}

}  // namespace swinfer
