// Internal: what a file set keeps of a group of bare code objects
// (coload/fat_binary.h, FatBinary::Group; docs/loading.md, "File sets").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coload/fat_binary.h"

namespace coload {

/// Bare code objects of a file set with one set of kernel names: the
/// alternatives of one another, one entry each, in the order of the paths.
struct FatBinary::Group {
  std::vector<std::size_t> files;    ///< the entries' files (indices into the binary's files)
  std::vector<std::string> ids;      ///< the entries' IDs, "hipv4-amdgcn-amd-amdhsa--<target ID>"
  std::vector<std::string> kernels;  ///< the kernel names the files share, sorted
};

}  // namespace coload
