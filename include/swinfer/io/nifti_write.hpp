// swinfer: writing a volume as NIfTI on the grid of the image it came from, atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "swinfer/io/atomic_file.hpp"
#include "swinfer/io/nifti_format.hpp"
#include "swinfer/version.hpp"

namespace swinfer {

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
