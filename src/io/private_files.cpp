// Files coload keeps for itself between runs (io/private_files.h).
#include "io/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace coload::detail {
namespace {

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t wrote = ::write(fd, text.data(), text.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

/// Whether the open file `fd` is a regular file of the effective user that
/// nobody else may write, smaller than `limit` bytes.
bool trusted_file(int fd, std::size_t limit) {
  struct stat info{};
  return ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == ::geteuid() && (info.st_mode & 022) == 0 &&
         static_cast<std::uint64_t>(info.st_size) < limit;
}

std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

bool trusted_folder(const std::string& folder) {
  struct stat info{};
  if (::stat(folder.c_str(), &info) != 0) return errno == ENOENT;
  if (S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() && (info.st_mode & 022) == 0) return true;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::fprintf(stderr,
                 "coload: warning: verified cache %s is not a directory of uid %u that only it may write "
                 "(uid %u, mode %04o); its marks are ignored and every compressed bundle is checked in full\n",
                 folder.c_str(), static_cast<unsigned>(::geteuid()), static_cast<unsigned>(info.st_uid),
                 static_cast<unsigned>(info.st_mode & 07777));
  }
  return false;
}

bool make_private_directories(const std::string& path) {
  if (path.empty()) return false;
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return true;
  if (errno != ENOENT) return false;
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return false;
  if (!make_private_directories(path.substr(0, slash))) return false;
  return ::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST;
}

std::optional<std::string> read_private_file(const std::string& path, std::size_t limit) {
  if (!trusted_folder(folder_of(path))) return std::nullopt;
  // Not a symlink, FIFO or device: O_NOFOLLOW, O_NONBLOCK, then fstat.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> contents;
  if (trusted_file(fd, limit + 1)) {
    contents.emplace();
    char buffer[16384];
    while (contents->size() <= limit) {
      ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      contents->append(buffer, static_cast<std::size_t>(got));
    }
    if (contents->size() > limit) contents.reset();  // it grew while read
  }
  ::close(fd);
  return contents;
}

bool replace_private_file(const std::string& path, std::string_view contents) {
  const std::string folder = folder_of(path);
  if (!trusted_folder(folder) || !make_private_directories(folder) || !trusted_folder(folder)) return false;
  static std::atomic<std::uint64_t> serial{0};
  std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool written = write_all(fd, contents);
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}

bool append_private_file(const std::string& path, std::string_view line, std::size_t limit) {
  if (!trusted_folder(folder_of(path))) return false;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  bool written = false;
  if (trusted_file(fd, limit)) {
    // One write: O_APPEND places it whole at the end, whoever else appends.
    ssize_t wrote = -1;
    do wrote = ::write(fd, line.data(), line.size());
    while (wrote < 0 && errno == EINTR);
    written = wrote == static_cast<ssize_t>(line.size());
  }
  ::close(fd);
  return written;
}

}  // namespace coload::detail
