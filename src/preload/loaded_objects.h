// Internal: the readable, file-backed segments of the process's loaded
// objects, for the preload's decision on a wrapper without a system call
// (docs/preload.md, "What it reads, and how"). The object found last is kept:
// a library's constructors register its wrappers one after another.
//
// Threads: not thread-safe; the session calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace coload::preload {

struct LoadedObject {
  std::uintptr_t base = 0;  ///< dlpi_addr
  std::string name;         ///< its path; the program's own for the main executable
  /// [start, end) of each PT_LOAD segment with PF_R, up to its p_filesz.
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> readable;

  /// The bytes from `address` to the end of the readable segment holding it,
  /// at most `limit`; empty when no such segment holds it.
  std::span<const std::byte> bytes_at(const void* address, std::size_t limit) const;
};

class LoadedObjects {
 public:
  /// The loaded object one of whose readable segments holds `address`; null
  /// when none does (memory the loader did not map). dl_iterate_phdr only
  /// when the last object found does not hold it.
  const LoadedObject* holding(const void* address);
  /// Drops the object kept (an unregistration: its library may be unloaded next).
  void forget() { last_.reset(); }

 private:
  std::optional<LoadedObject> last_;
};

}  // namespace coload::preload
