// Internal: the Io error for a failed call on a path, and the name of a
// file's type, for errors about a path that is not
// the regular file (or the directory) coload wants (docs/reading-rules.md,
// "Files").
#pragma once

#include <string>
#include <string_view>

#include "coload/error.h"

namespace coload::detail {

/// Io: "`what`: strerror(error_number)", with `path` as the location's file.
Error io_error(const std::string& path, std::string_view what, int error_number);

/// "a regular file", "a FIFO", "a directory" … for a stat st_mode.
std::string_view file_type(unsigned mode);

}  // namespace coload::detail
