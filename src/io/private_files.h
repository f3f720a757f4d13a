// Internal: small files coload keeps for itself between runs (verified marks,
// CCOB tables), in a folder of the effective user that no one else may write
// (docs/reading-rules.md, "Files"). Every call is best-effort: a file that
// cannot be trusted, read or written is a miss, never an error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace coload::detail {

/// Whether `folder` may hold such files: absent (make_private_directories
/// makes it, 0700), or a directory of the effective user that no group or
/// other may write. Anything else is ignored, with one warning per process.
bool trusted_folder(const std::string& folder);

/// mkdir -p, each directory it makes private to the user (0700).
bool make_private_directories(const std::string& path);

/// The contents of `path` when it is a regular file of the effective user
/// that no group or other may write, of at most `limit` bytes; opened
/// without following a symlink or blocking on a FIFO. nullopt otherwise.
std::optional<std::string> read_private_file(const std::string& path, std::size_t limit);

/// Writes `contents` to `path` under a temporary name, then renames it into
/// place, so a reader never sees half of it; in a trusted folder only (made
/// as needed). False when nothing was written.
bool replace_private_file(const std::string& path, std::string_view contents);

/// Appends `line` to the existing `path` in one write, when it is a
/// regular file as read_private_file trusts, smaller than `limit`. A line
/// two processes append at once stays whole (O_APPEND). False when
/// nothing was written.
bool append_private_file(const std::string& path, std::string_view line, std::size_t limit);

}  // namespace coload::detail
