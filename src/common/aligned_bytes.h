// Internal: an 8-byte-aligned view of possibly unaligned bytes. LLVM's ELF
// reader reads its tables in place and expects them naturally aligned; an
// entry of a -bundle-align=1 bundle is not. Copies only then.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/bytes.h"

namespace coload::detail {

/// Owns a copy when `bytes` is not 8-byte aligned; otherwise borrows it, and
/// bytes() is valid as long as the caller's buffer is. Not copyable: the view
/// may point into this object.
class AlignedBytes {
 public:
  explicit AlignedBytes(Bytes bytes) : bytes_(bytes) {
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(std::uint64_t) == 0) return;
    storage_.resize((bytes.size() + 7) / 8);
    std::memcpy(storage_.data(), bytes.data(), bytes.size());
    bytes_ = Bytes(reinterpret_cast<const std::byte*>(storage_.data()), bytes.size());
  }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;

  Bytes bytes() const { return bytes_; }

 private:
  Bytes bytes_;
  std::vector<std::uint64_t> storage_;
};

}  // namespace coload::detail
