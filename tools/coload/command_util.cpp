// Helpers the subcommands share: choosing in bundles, output files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::string no_fit_message(const FatBinary& binary, std::size_t index, const Device& device,
                           const Selection& selection) {
  Error error = no_fit_error(device, selection);
  if (binary.file_count() > 1) return binary.at_bundle(std::move(error), index).message();
  return error.message();
}

void print_error(const Error& error) { std::fprintf(stderr, "coload: %s\n", error.message().c_str()); }

bool write_file(const std::string& path, std::span<const std::byte> bytes) {
  // Not O_TRUNC: over an existing file, truncating first frees its pages and
  // blocks only for the write to take them again (3.6 ms of an 11 MB entry's
  // 6.5 here, docs/first-check.md). The bytes go over the old ones and the
  // file is cut to their length after, so it ends the same, same inode.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    std::fprintf(stderr, "coload: %s: cannot create: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  int error = 0;  // the first failure's errno
  for (std::span<const std::byte> left = bytes; error == 0 && !left.empty();) {
    ssize_t wrote = ::write(fd, left.data(), left.size());
    if (wrote > 0) {
      left = left.subspan(static_cast<std::size_t>(wrote));
    } else if (wrote == 0 || errno != EINTR) {
      error = wrote == 0 ? EIO : errno;
    }
  }
  struct stat info{};
  // A pipe or a device (-o /dev/stdout) has no length to cut.
  if (error == 0 && ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
      static_cast<std::uint64_t>(info.st_size) != bytes.size() &&
      ::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) {
    error = errno;
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) std::fprintf(stderr, "coload: %s: write failed: %s\n", path.c_str(), std::strerror(error));
  return error == 0;
}

}  // namespace coload::cli
