// swinfer: NIfTI-1/NIfTI-2 (.nii, .nii.gz) reading and writing with nifti_clib; outputs keep the input's geometry.
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
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/layout.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/atomic_file.hpp"
#include "swinfer/io/zip_reader.hpp"
#include "swinfer/version.hpp"

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
  std::int64_t bytes = 1;
  for (std::int64_t e : {shape.c, shape.d, shape.h, shape.w, static_cast<std::int64_t>(item)}) {
    if (__builtin_mul_overflow(bytes, e, &bytes)) {
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

/// \brief Reads a single-file NIfTI-1 or NIfTI-2 image (.nii, or gzipped whatever the name) of any integer or
/// float32/float64 datatype and either byte order.
/// \throws swinfer::error naming the file: missing, not NIfTI, truncated or corrupt, not 3-D (4-D/5-D with
/// channels), unsupported datatype, or NaN/Inf voxels (unless options.allow_non_finite).
inline nifti_volume read_nifti(const std::filesystem::path& path, const nifti_read_options& options = {}) {
  using detail::fail;
  using detail::printable;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) fail(printable(path), ": no such file");
  if (!std::filesystem::is_regular_file(status)) fail(printable(path), ": not a regular file");

  // Always through zlib: it reads uncompressed files transparently, so a mis-named .nii / .nii.gz still works.
  detail::znz_file f(path, "rb", true);
  if (!f) {
    const int cause = errno;
    fail(printable(path), ": cannot open: ", std::strerror(cause));
  }
  const detail::nifti_raw_header raw = detail::read_raw_header(f, path);

  // Our own checks run on a host-order copy; nifti_clib converts (and swaps) the header as it is in the file.
  nifti_image* parsed = nullptr;
  shape5 shape;
  double slope = 0, inter = 0;
  const auto check_host_copy = [&](auto host) {  // NIfTI-1 and -2 headers share these field names
    if (raw.swapped) swap_nifti_header(&host, raw.version);
    shape = detail::check_nifti_header(host, path);
    slope = host.scl_slope;
    inter = host.scl_inter;
  };
  if (raw.version == 1) {
    check_host_copy(raw.n1);
    parsed = nifti_convert_n1hdr2nim(raw.n1, nullptr);
  } else {
    check_host_copy(raw.n2);
    parsed = nifti_convert_n2hdr2nim(raw.n2, nullptr);
  }
  if (!parsed) fail(printable(path), ": nifti_clib rejected the header");
  nifti_volume vol;
  vol.header = *parsed;
  nifti_image_free(parsed);  // owns nothing beyond itself: no file names were given, no extensions read
  vol.path = path;
  nifti_image& h = vol.header;
  // nifti_clib 3.0.1 labels NIfTI-2 headers NIfTI-1; the version decides what write_nifti writes.
  h.nifti_type = raw.version == 2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  // nibabel makes negative spatial pixdims positive on load (nifti_clib already made zero ones 1).
  h.dx = h.pixdim[1] = std::fabs(h.pixdim[1]);
  h.dy = h.pixdim[2] = std::fabs(h.pixdim[2]);
  h.dz = h.pixdim[3] = std::fabs(h.pixdim[3]);
  if (h.qform_code > 0) {
    h.qto_xyz = nifti_quatern_to_dmat44(h.quatern_b, h.quatern_c, h.quatern_d, h.qoffset_x, h.qoffset_y,
                                        h.qoffset_z, h.dx, h.dy, h.dz, h.qfac);
    h.qto_ijk = nifti_dmat44_inverse(h.qto_xyz);
  }

  // Slope 0 or non-finite: no scaling, as in nibabel.
  if (!std::isfinite(slope) || slope == 0) slope = 1, inter = 0;
  if (znzseek(f.get(), static_cast<znz_off_t>(h.iname_offset), SEEK_SET) != static_cast<znz_off_t>(h.iname_offset)) {
    fail(printable(path), ": truncated or corrupt (cannot reach the voxel data at offset ", h.iname_offset, ")");
  }
  const auto read = [&]<class S>() {
    vol.data = detail::read_voxels<S>(f, shape, h.iname_offset, raw.swapped, slope, inter, path);
  };
  switch (h.datatype) {
    case NIFTI_TYPE_UINT8: read.operator()<std::uint8_t>(); break;
    case NIFTI_TYPE_INT8: read.operator()<std::int8_t>(); break;
    case NIFTI_TYPE_UINT16: read.operator()<std::uint16_t>(); break;
    case NIFTI_TYPE_INT16: read.operator()<std::int16_t>(); break;
    case NIFTI_TYPE_UINT32: read.operator()<std::uint32_t>(); break;
    case NIFTI_TYPE_INT32: read.operator()<std::int32_t>(); break;
    case NIFTI_TYPE_UINT64: read.operator()<std::uint64_t>(); break;
    case NIFTI_TYPE_INT64: read.operator()<std::int64_t>(); break;
    case NIFTI_TYPE_FLOAT32: read.operator()<float>(); break;
    default: read.operator()<double>(); break;  // FLOAT64, the last type check_nifti_header lets through
  }
  if (!options.allow_non_finite) detail::check_finite(vol.data, path);
  return vol;
}

/// \brief Writes `volume` (1, C, I, J, K), any layout, on the voxel grid of `like`: a 3-D image for C == 1, 4-D with
/// the channels in dim[4] otherwise. Keeps like's NIfTI version, dims, pixdims, units, qform/sform codes and
/// matrices, so the output overlays the input in any viewer; scl_slope 1 / scl_inter 0, cal_min/cal_max the data
/// range, no intent, no extensions. .nii.gz (gzip level 1, as nibabel) or .nii by the name.
/// Written to a temporary file in the same folder and renamed, so `path` is never left half-written.
/// \throws swinfer::error when the name is not .nii/.nii.gz, the shape does not match like's grid, a value does
/// not fit the datatype (uint8: integer labels 0..255), or the file cannot be written.
template <class T>
void write_nifti(const std::filesystem::path& path, tensor_view<T> volume, const nifti_volume& like,
                 nifti_datatype type) {
  namespace fs = std::filesystem;
  using detail::fail;
  using detail::printable;
  using V = std::remove_const_t<T>;
  static_assert(std::is_arithmetic_v<V>, "write_nifti writes tensors of arithmetic element types");

  const std::string_view suffix = detail::nifti_suffix(path.filename().string());
  if (suffix.empty()) fail("cannot write ", printable(path), ": the name must end in .nii or .nii.gz");
  if (like.version() == 0) fail("cannot write ", printable(path), ": the reference volume was not read from a file");
  const shape5& s = volume.shape;
  const auto grid = like.dims();
  if (s.n != 1 || s.c < 1 || s.d != grid[0] || s.h != grid[1] || s.w != grid[2]) {
    fail("cannot write ", printable(path), ": shape ", s.str(), " does not match the grid of ", printable(like.path),
         " (1, C, ", grid[0], ", ", grid[1], ", ", grid[2], ")");
  }

  // like's header with only what differs changed. nifti_clib writes dx..dw, not pixdim[], and only codes > 0.
  nifti_image h = like.header;
  h.ndim = h.dim[0] = s.c > 1 ? 4 : 3;
  h.nt = h.dim[4] = s.c;
  h.nu = h.dim[5] = h.nv = h.dim[6] = h.nw = h.dim[7] = 1;
  h.nvox = s.numel();
  h.dt = h.pixdim[4] = h.du = h.pixdim[5] = h.dv = h.pixdim[6] = h.dw = h.pixdim[7] = 1.0;  // channels, not time
  h.datatype = static_cast<int>(type);
  nifti_datatype_sizes(h.datatype, &h.nbyper, &h.swapsize);
  h.scl_slope = 1.0;
  h.scl_inter = 0.0;
  h.intent_code = NIFTI_INTENT_NONE;
  h.intent_p1 = h.intent_p2 = h.intent_p3 = 0.0;
  h.intent_name[0] = '\0';
  std::snprintf(h.descrip, sizeof h.descrip, "swinfer %s", version_string);
  h.fname = h.iname = nullptr;
  h.data = nullptr;
  h.num_ext = 0;
  h.ext_list = nullptr;
  const bool v2 = like.version() == 2;
  h.iname_offset = static_cast<std::int64_t>(v2 ? sizeof(nifti_2_header) : sizeof(nifti_1_header)) + 4;

  // The voxels in file order (i fastest), converted, with their range for cal_min/cal_max.
  std::vector<unsigned char> voxels(static_cast<std::size_t>(s.numel()) * static_cast<std::size_t>(h.nbyper));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const T* src = volume.data;
  if (type == nifti_datatype::uint8) {
    auto* dst = voxels.data();
    detail::for_each_voxel(s, volume.strides, [&](std::int64_t to, std::int64_t from) {
      const auto v = static_cast<double>(src[from]);
      if (!(v >= 0 && v <= 255 && v == std::floor(v))) {
        const std::int64_t i = to % s.d, j = to / s.d % s.h, k = to / (s.d * s.h) % s.w, c = to / (s.d * s.h * s.w);
        fail("cannot write ", printable(path), " as uint8: voxel (c, i, j, k) = (", c, ", ", i, ", ", j, ", ", k,
             ") is ", v, "; uint8 holds integer labels 0..255");
      }
      dst[to] = static_cast<unsigned char>(v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    });
  } else {
    auto* dst = reinterpret_cast<float*>(voxels.data());
    detail::for_each_voxel(s, volume.strides, [&](std::int64_t to, std::int64_t from) {
      const auto v = static_cast<float>(src[from]);
      dst[to] = v;
      if (std::isfinite(v)) lo = std::min(lo, static_cast<double>(v)), hi = std::max(hi, static_cast<double>(v));
    });
  }
  if (lo <= hi) h.cal_min = lo, h.cal_max = hi;
  else h.cal_min = h.cal_max = 0.0;

  nifti_1_header n1{};
  nifti_2_header n2{};
  if (v2 ? nifti_convert_nim2n2hdr(&h, &n2) : nifti_convert_nim2n1hdr(&h, &n1)) {
    fail("cannot write ", printable(path), ": nifti_clib could not build the header");
  }
  // nifti_clib 3.0.1 leaves the NIfTI-2 magic's line-ending check bytes zero; the format wants "\r\n\032\n".
  if (v2) std::memcpy(n2.magic + 4, "\r\n\032\n", 4);
  // It also writes qfac (pixdim[0]) only along with a qform; the format wants 1 or -1 always (nibabel flags 0).
  if (n1.pixdim[0] == 0) n1.pixdim[0] = 1;
  if (n2.pixdim[0] == 0) n2.pixdim[0] = 1;

  // Written through znzlib rather than nifti_image_write, which reports no failure (it returns void).
  write_file_atomically(path, [&](const fs::path& temporary) {
    const bool gzip = suffix.size() > 4;
    detail::znz_file out(temporary, gzip ? "wb1" : "wb", gzip);
    if (!out) {
      const int cause = errno;
      fail("cannot write ", printable(path), ": cannot create a file in ", printable(temporary.parent_path()), ": ",
           std::strerror(cause));
    }
    const void* header = v2 ? static_cast<const void*>(&n2) : static_cast<const void*>(&n1);
    const std::size_t header_size = v2 ? sizeof n2 : sizeof n1;
    const char no_extensions[4] = {0, 0, 0, 0};
    const bool written = znzwrite(header, 1, header_size, out.get()) == header_size &&
                         znzwrite(no_extensions, 1, 4, out.get()) == 4 &&
                         znzwrite(voxels.data(), 1, voxels.size(), out.get()) == voxels.size();
    if (!written || out.close() != 0) fail("cannot write ", printable(path), ": writing failed (disk full?)");
  });
}

/// write_nifti for an owning tensor.
template <class T>
void write_nifti(const std::filesystem::path& path, const tensor<T>& volume, const nifti_volume& like,
                 nifti_datatype type) {
  write_nifti(path, volume.view(), like, type);
}

}  // namespace swinfer
