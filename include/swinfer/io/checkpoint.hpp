// swinfer: loads a checkpoint in whichever supported format its content (not its name) shows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>

#include "swinfer/core/error.hpp"
#include "swinfer/io/safetensors.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/io/torch_checkpoint.hpp"
#include "swinfer/io/zip_reader.hpp"

namespace swinfer {

/// \brief Reads a torch.save checkpoint (torch >= 1.6) or a .safetensors file, recognised by content: its tensors,
/// and a safetensors file's metadata (none for torch.save). Throws swinfer::error naming the file if it is missing,
/// unreadable, empty or in neither format.
inline safetensors_contents read_checkpoint(const std::filesystem::path& path) {
  using namespace detail;
  const bounded_file file(path);
  if (file.size() == 0)
    fail(printable(path), ": the file is empty; expected a torch.save checkpoint or a safetensors file");
  const auto head = file.read(0, std::min<std::uint64_t>(file.size(), 9), "file header");
  auto starts_with = [&](std::initializer_list<unsigned char> bytes) {
    if (head.size() < bytes.size()) return false;
    std::size_t i = 0;
    for (auto b : bytes)
      if (head[i++] != std::byte{b}) return false;
    return true;
  };
  // ZIP local header: torch.save's format. A pickle stream (PROTO): the legacy torch format, which
  // load_torch_checkpoint explains how to convert.
  if (starts_with({'P', 'K', 3, 4}) || starts_with({0x80})) return {load_torch_checkpoint(path), {}};
  // safetensors: an 8-byte header length that fits the file, then a JSON object.
  if (head.size() == 9 && head[8] == std::byte{'{'} && le<std::uint64_t>(head, 0) <= file.size() - 8)
    return read_safetensors(path);
  fail(printable(path), ": not a checkpoint swinfer can read; expected a torch.save checkpoint (.pt/.pth, ",
       "torch >= 1.6) or a safetensors file");
}

/// The tensors of a checkpoint (read_checkpoint without the metadata).
inline state_dict load_checkpoint(const std::filesystem::path& path) { return read_checkpoint(path).tensors; }

}  // namespace swinfer
