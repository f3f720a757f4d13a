// io/process_maps.h: the lines of /proc/self/maps, read by the wrapper
// reader (how far readable memory runs, formats/wrapper.cpp) and by the HIP
// backend (whether bytes lie in a file mapping HIP would reopen by path,
// load/hip_runtime.cpp). Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "coload/error.h"

namespace coload::detail {

/// One line of /proc/self/maps: "start-end perms offset dev inode path".
struct MapsLine {
  std::uintptr_t start = 0, end = 0;
  bool readable = false;
  std::uint64_t inode = 0;  ///< 0 for anonymous memory (heap, stacks, MAP_ANONYMOUS)
  /// Everything after the inode, leading blanks removed: a path (which may
  /// hold spaces and end in " (deleted)"), "[heap]", or empty.
  std::string_view path;
};

/// `line` parsed; nullopt when it does not have the kernel's layout.
std::optional<MapsLine> parse_maps_line(std::string_view line);

/// The file mapping that holds `address`, as HIP's Os::FindFileNameFromAddress
/// sees it: a mapping with an inode and a path (docs/loading.md, "HIP
/// releases"); its path as the kernel prints it. nullopt for anonymous memory
/// or an address no mapping holds. Errors: Io when /proc/self/maps cannot be read.
Expected<std::optional<std::string>> mapped_file_at(const void* address);

}  // namespace coload::detail
