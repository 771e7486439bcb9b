// swinfer CLI: the NIfTI files a list of files and folders names (segment and calibrate take either).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <swinfer/core/error.hpp>
#include <swinfer/io/nifti.hpp>

namespace swinfer_tool {

/// Each file as given, and each folder's .nii/.nii.gz files in name order; a folder without any is an error.
inline std::vector<std::filesystem::path> expand_inputs(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(in))
        if (e.is_regular_file() && swinfer::is_nifti_path(e.path())) found.push_back(e.path());
      if (found.empty()) swinfer::detail::fail("input folder '", in, "' holds no .nii or .nii.gz files");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.emplace_back(in);
    }
  }
  return files;
}

}  // namespace swinfer_tool
