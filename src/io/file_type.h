// Internal: the name of a file's type, for errors about a path that is not
// the regular file (or the directory) coload wants (docs/reading-rules.md,
// "Files").
#pragma once

#include <string_view>

namespace coload::detail {

/// "a regular file", "a FIFO", "a directory" … for a stat st_mode.
std::string_view file_type(unsigned mode);

}  // namespace coload::detail
