// Internal: how many more file mappings the process may make, which bounds
// the members of a file set (each one stays mapped; docs/loading.md, "File
// sets"). Linux refuses mmap past vm.max_map_count (ENOMEM, "Cannot allocate
// memory"), which a folder of 100 000 code objects hit at ~65 500 members.
#pragma once

#include <cstdint>
#include <optional>

namespace coload::detail {

/// Mappings kept free for the rest of the process (its runtime, its
/// allocator, the libraries it loads) when a file set is sized against
/// vm.max_map_count.
inline constexpr std::uint64_t kReservedMappings = 1024;

struct MapBudget {
  std::uint64_t max_map_count = 0;  ///< vm.max_map_count
  std::uint64_t in_use = 0;         ///< lines of /proc/self/maps
};

/// The process's budget now; nullopt when /proc cannot tell (then no check).
std::optional<MapBudget> map_budget();

/// For tests: map_budget() reports `max_map_count` instead of
/// /proc/sys/vm/max_map_count while this lives.
class ScopedMaxMapCount {
 public:
  explicit ScopedMaxMapCount(std::uint64_t max_map_count);
  ~ScopedMaxMapCount();
  ScopedMaxMapCount(const ScopedMaxMapCount&) = delete;
  ScopedMaxMapCount& operator=(const ScopedMaxMapCount&) = delete;

 private:
  std::uint64_t previous_;
};

}  // namespace coload::detail
