// Writing a command's output files (output_file.h): a temporary file
// renamed over the old one, or in place where a rename would break a link.
#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace coload::cli {

namespace {

bool write_all(int fd, std::span<const std::byte> bytes, int& error) {
  while (!bytes.empty()) {
    ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote > 0) {
      bytes = bytes.subspan(static_cast<std::size_t>(wrote));
    } else if (wrote == 0 || errno != EINTR) {
      error = wrote == 0 ? EIO : errno;
      return false;
    }
  }
  return true;
}

bool report(const std::string& path, std::string_view what, int error) {
  std::fprintf(stderr, "coload: %s: %.*s: %s\n", path.c_str(), static_cast<int>(what.size()), what.data(),
               std::strerror(error));
  return false;
}

/// A pipe or a device (-o /dev/stdout) is written in place: it has no
/// folder to hold a replacement, and nothing to keep whole. So is a regular
/// file with other hard links, which must see the new bytes: the file is
/// first given its new length's blocks, then the bytes go over the old ones
/// and the file is cut to their length.
bool write_in_place(const std::string& path, std::span<const std::byte> bytes, bool regular) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return report(path, "cannot open", errno);
  int error = 0;
  // A regular file gets its new length's blocks before a byte changes: a
  // write past RLIMIT_FSIZE or the disk's room then fails here, old file whole.
  struct stat info{};
  if (regular && ::fstat(fd, &info) == 0 && static_cast<std::uint64_t>(info.st_size) < bytes.size()) {
    error = ::posix_fallocate(fd, info.st_size, static_cast<off_t>(bytes.size() - info.st_size));
  }
  if (error == 0 && write_all(fd, bytes, error) && regular && ::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) {
    error = errno;
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  return error == 0 || report(path, "write failed", error);
}

/// Whether this process maps the file `info` describes, as it maps an input
/// it reads in place: /proc/self/maps gives each mapping's device and inode.
bool mapped_here(const struct stat& info) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);  // start-end perms offset major:minor inode path
    std::string range, perms, offset;
    unsigned int major_id = 0, minor_id = 0;
    char colon = 0;
    std::uint64_t inode = 0;
    if (fields >> range >> perms >> offset >> std::hex >> major_id >> colon >> minor_id >> std::dec >> inode &&
        inode == info.st_ino && major_id == major(info.st_dev) && minor_id == minor(info.st_dev)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool write_file(const std::string& path, std::span<const std::byte> bytes) {
  // A regular file is written to a temporary file in its folder and renamed
  // over it (docs/reading-rules.md, "Files"): a failed write leaves the old
  // file whole, and an output that is also an input (one of several OUT.N)
  // replaces the name, not the bytes a mapping of the input still reads.
  // A symlink is followed: its target is replaced, the link kept. A pipe,
  // a device or a file with other hard links is written in place, unless
  // that file is an input this process maps.
  struct stat old{};
  bool exists = ::stat(path.c_str(), &old) == 0;
  if (exists && (!S_ISREG(old.st_mode) || old.st_nlink > 1)) {
    // In place over an input read through its mapping would change the bytes
    // later outputs are taken from: refused (its other name is the input).
    if (S_ISREG(old.st_mode) && mapped_here(old)) {
      std::fprintf(stderr, "coload: %s: not written: a hard link to an input this command reads in place\n",
                   path.c_str());
      return false;
    }
    return write_in_place(path, bytes, S_ISREG(old.st_mode));
  }
  std::error_code code;
  std::filesystem::path target = path;
  if (exists && std::filesystem::is_symlink(target, code)) {
    auto resolved = std::filesystem::canonical(target, code);
    if (code) return report(path, "cannot resolve", code.value());
    target = resolved;
  }
  mode_t mode = 0;
  if (exists) {
    mode = old.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);  // the mode a plain creat(0666) would give
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  std::filesystem::path folder = target.parent_path();
  std::string temporary =
      (folder.empty() ? std::string() : folder.string() + "/") + "." + target.filename().string() + ".coload-XXXXXX";
  int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) return report(path, "cannot create a temporary file beside it", errno);
  int error = 0;
  if (write_all(fd, bytes, error) && ::fchmod(fd, mode) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return report(path, "write failed", error);
  }
  return true;
}

}  // namespace coload::cli
