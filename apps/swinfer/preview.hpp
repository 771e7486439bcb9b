// swinfer CLI: a PNG a person can glance at: the three mid-planes of the scan with the mask overlaid.
#pragma once

#include <cstdint>
#include <filesystem>

#include <swinfer/core/tensor.hpp>
#include <swinfer/preprocess/image.hpp>

namespace swinfer_tool {

/// Writes axial, coronal and sagittal mid-planes side by side in radiological convention (patient right on the
/// viewer's left, anterior and superior up), at the scan's physical aspect ratio. The image (channel 0) is
/// windowed to its 1st-99th percentile; each non-zero label gets its own colour at 45 % opacity.
/// \param image (1, C, I, J, K) scan; \param labels (1, 1, I, J, K) mask on the same grid; \param affine its voxel-to-world.
void write_preview_png(const std::filesystem::path& path, const swinfer::tensor<float>& image,
                       const swinfer::tensor<std::uint8_t>& labels, const swinfer::affine4& affine);

}  // namespace swinfer_tool
