// Test-side reader of the NT_AMDGPU_METADATA note, with LLVM's ELF support
// (independent of coload's ELF layer), so metadata tests can take the
// msgpack bytes of toolchain-built code objects. Tests link LLVM already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"

namespace coload::testing {

/// The descriptor of the one `AMDGPU` note of type NT_AMDGPU_METADATA (32)
/// in `elf`'s PT_NOTE segments; nullopt when `elf` is not an ELF64 LE file
/// or has no such note.
inline std::optional<std::vector<std::byte>> amdgpu_metadata_note(std::span<const std::byte> elf) {
  // LLVM reads its tables in place and wants them naturally aligned.
  std::vector<std::uint64_t> aligned((elf.size() + 7) / 8);
  if (!elf.empty()) std::memcpy(aligned.data(), elf.data(), elf.size());
  auto file =
      llvm::object::ELF64LEFile::create(llvm::StringRef(reinterpret_cast<const char*>(aligned.data()), elf.size()));
  if (!file) {
    llvm::consumeError(file.takeError());
    return std::nullopt;
  }
  auto headers = file->program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    return std::nullopt;
  }
  for (const auto& header : *headers) {
    if (header.p_type != llvm::ELF::PT_NOTE) continue;
    llvm::Error error = llvm::Error::success();
    for (const auto& note : file->notes(header, error)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA) continue;
      auto desc = note.getDesc(header.p_align == 8 ? 8 : 4);
      std::vector<std::byte> bytes(desc.size());
      if (!desc.empty()) std::memcpy(bytes.data(), desc.data(), desc.size());
      llvm::consumeError(std::move(error));
      return bytes;
    }
    if (error) {
      llvm::consumeError(std::move(error));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

/// Every `*.co` file under `root`, recursively, sorted (deterministic test order).
inline std::vector<std::filesystem::path> code_object_files(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& item : std::filesystem::recursive_directory_iterator(root)) {
    if (item.is_regular_file() && item.path().extension() == ".co") files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace coload::testing
