// Helpers the subcommands share: choosing in bundles, output files.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "coload/hotswap.h"
#include "commands.h"

namespace coload::cli {

std::optional<SelectOptions> cli_select_options(const Config& config) {
  if (!config.hotswap) {
    if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {  // not a silent no-op (docs/environment.md)
      std::fprintf(stderr,
                   "coload: warning: COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but "
                   "COLOAD_HOTSWAP is not 1: the hotswap tier is off\n");
    }
    return config.select_options();
  }
  auto registry = hotswap_registry(config);
  if (!registry) {
    std::fprintf(stderr, "coload: hotswap: %s\n", registry.error().message().c_str());
    return std::nullopt;
  }
  return config.select_options(*registry);
}

KeptBytes command_budget(std::uint64_t limit) {
  return KeptBytes(limit, "what this command keeps of the file's compressed bundles");
}

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
    auto listed = list_directory(operand, scan);
    if (!listed) return std::move(listed).error();
    if (listed->empty()) {
      return Error(ErrorKind::NotFound, operand + ": holds no file" +
                                            (scan.pattern.empty() ? "" : " matching \"" + scan.pattern + "\"") +
                                            (scan.recursive ? "" : " (not recursive)"));
    }
    paths.files.insert(paths.files.end(), listed->begin(), listed->end());
  }
  paths.set = paths.set || paths.files.size() > 1;
  if (operands.size() == 1 && paths.set) paths.name = operands.front();
  return paths;
}

Expected<FatBinary> open_binary(const BinaryPaths& paths, const ReadOptions& options) {
  if (!paths.set) return FatBinary::open(paths.files.front(), options);
  return FatBinary::open_files(paths.files, paths.name, options);
}

void print_error(const Error& error) { std::fprintf(stderr, "coload: %s\n", error.message().c_str()); }

bool write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "coload: %s: cannot create: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) std::fprintf(stderr, "coload: %s: write failed: %s\n", path.c_str(), std::strerror(errno));
  return ok;
}

}  // namespace coload::cli
