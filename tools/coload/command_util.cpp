// Helpers the subcommands share: numbers, usage errors, output files.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "commands.h"

namespace coload::cli {

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

std::optional<std::uint64_t> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end != text.c_str() + text.size() || text.front() == '-') return std::nullopt;
  return value;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "coload: %s\n", message.c_str());
  return kExitUsage;
}

}  // namespace coload::cli
