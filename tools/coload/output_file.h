// The coload CLI's output files (docs/reading-rules.md, "Files").
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace coload::cli {

/// Writes `bytes` to `path`; on failure prints why and returns false.
bool write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace coload::cli
