// swinfer: reading a NIfTI-1/NIfTI-2 image with every check a corrupt or hostile file needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "swinfer/io/nifti_format.hpp"

namespace swinfer {

namespace detail {

/// Opens an existing regular file for reading, always through zlib: it reads uncompressed files transparently, so
/// a mis-named .nii / .nii.gz still works.
inline znz_file open_nifti(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) fail(printable(path), ": no such file");
  if (!std::filesystem::is_regular_file(status)) fail(printable(path), ": not a regular file");
  znz_file f(path, "rb", true);
  if (!f) {
    const int cause = errno;
    fail(printable(path), ": cannot open: ", std::strerror(cause));
  }
  return f;
}

/// What a header says about its voxels, checked on a host-order copy (check_nifti_header).
struct nifti_voxel_layout {
  shape5 shape;
  double slope = 0, inter = 0;
};

inline nifti_voxel_layout check_raw_header(const nifti_raw_header& raw, const std::filesystem::path& path) {
  nifti_voxel_layout layout;
  const auto check_host_copy = [&](auto host) {  // NIfTI-1 and -2 headers share these field names
    if (raw.swapped) swap_nifti_header(&host, raw.version);
    layout.shape = check_nifti_header(host, path);
    layout.slope = host.scl_slope;
    layout.inter = host.scl_inter;
  };
  if (raw.version == 1) {
    check_host_copy(raw.n1);
  } else {
    check_host_copy(raw.n2);
  }
  return layout;
}

}  // namespace detail

/// \brief The (1, C, I, J, K) voxel shape a NIfTI file's header declares, with the header checks read_nifti makes;
/// reads the header only, so sizing many files costs little.
/// \throws swinfer::error naming the file, as read_nifti does for a bad header.
inline shape5 read_nifti_shape(const std::filesystem::path& path) {
  detail::znz_file f = detail::open_nifti(path);
  return detail::check_raw_header(detail::read_raw_header(f, path), path).shape;
}

/// \brief Reads a single-file NIfTI-1 or NIfTI-2 image (.nii, or gzipped whatever the name) of any integer or
/// float32/float64 datatype and either byte order.
/// \throws swinfer::error naming the file: missing, not NIfTI, truncated or corrupt, not 3-D (4-D/5-D with
/// channels), unsupported datatype, or NaN/Inf voxels (unless options.allow_non_finite).
inline nifti_volume read_nifti(const std::filesystem::path& path, const nifti_read_options& options = {}) {
  using detail::fail;
  using detail::printable;
  detail::znz_file f = detail::open_nifti(path);
  const detail::nifti_raw_header raw = detail::read_raw_header(f, path);
  // Our own checks run on a host-order copy; nifti_clib converts (and swaps) the header as it is in the file.
  const detail::nifti_voxel_layout layout = detail::check_raw_header(raw, path);
  const shape5& shape = layout.shape;
  double slope = layout.slope, inter = layout.inter;
  nifti_image* parsed = raw.version == 1 ? nifti_convert_n1hdr2nim(raw.n1, nullptr)
                                         : nifti_convert_n2hdr2nim(raw.n2, nullptr);
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

}  // namespace swinfer
