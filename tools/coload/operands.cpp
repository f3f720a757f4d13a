// The files a command's operands name: one file, or a file set of every
// file and each directory's members (commands.h).
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"

namespace coload::cli {

Expected<BinaryPaths> binary_paths(std::span<const std::string> operands, const Arguments& parsed) {
  const DirectoryScan scan{.pattern = parsed.text(kPattern), .recursive = parsed.given(kRecursive)};
  BinaryPaths paths;
  std::error_code code;
  for (const std::string& operand : operands) {
    if (!std::filesystem::is_directory(operand, code)) {
      paths.files.push_back(operand);  // opening it says what is wrong with it
      continue;
    }
    paths.set = true;
    auto listed = list_set_members(operand, scan);
    if (!listed) return std::move(listed).error();
    paths.files.insert(paths.files.end(), listed->begin(), listed->end());
  }
  paths.set = paths.set || paths.files.size() > 1;
  if (operands.size() == 1 && paths.set) paths.name = operands.front();
  return paths;
}

Expected<FatBinary> open_operands(std::span<const std::string> operands, const Arguments& parsed,
                                  const ReadOptions& options) {
  auto paths = binary_paths(operands, parsed);
  if (!paths) return std::move(paths).error();
  if (!paths->set) return FatBinary::open(paths->files.front(), options);
  return FatBinary::open_files(paths->files, paths->name, options);
}

}  // namespace coload::cli
