// VerifiedMark: one small file per checked CCOB (ccob/verified_marks.h).
#include "ccob/verified_marks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/xxhash.h"

namespace coload::detail {
namespace {

constexpr std::size_t kMaxContents = 256;

std::string hex128(llvm::XXH128_hash_t hash) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return text;
}

/// mkdir -p, each directory it makes private to the user (a cache's custom).
bool make_directories(const std::string& path) {
  if (path.empty()) return false;
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return true;
  if (errno != ENOENT) return false;
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return false;
  if (!make_directories(path.substr(0, slash))) return false;
  return ::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST;
}

/// Whether `folder` may hold marks: absent (record() makes it, 0700), or a
/// directory of the effective user that no group or other may write. A
/// folder anyone else may write could hold a mark of bytes never checked
/// (docs/reading-rules.md, "Files"); it is ignored, with one warning per
/// process.
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

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t wrote = ::write(fd, text.data(), text.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

}  // namespace

VerifiedMark::VerifiedMark(const std::string& directory, Bytes ccob, const CompressedHeader& header)
    : directory_(directory) {
  auto key =
      llvm::xxh3_128bits(llvm::ArrayRef<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(ccob.data()), ccob.size()));
  path_ = directory_ + "/" + hex128(key);
  // The header's claims, so that a mark left by anything else is a miss.
  contents_ = "coload verified CCOB v" + std::to_string(header.version) + " " + std::string(to_string(header.method)) +
              ", " + hex(ccob.size()) + " bytes: stored hash " + hex(header.hash) + ", uncompressed size " +
              hex(header.uncompressed_size) + "\n";
}

bool VerifiedMark::present() const {
  if (!trusted_folder(directory_)) return false;
  // Not a symlink, FIFO or device: O_NOFOLLOW, O_NONBLOCK, then fstat. Only
  // a regular file of the effective user that nobody else may write counts.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat info{};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 022) != 0) {
    ::close(fd);
    return false;
  }
  char buffer[kMaxContents];
  std::size_t have = 0;
  while (have < sizeof buffer) {
    ssize_t got = ::read(fd, buffer + have, sizeof buffer - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    have += static_cast<std::size_t>(got);
  }
  ::close(fd);
  return std::string_view(buffer, have) == contents_;
}

void VerifiedMark::record() const {
  if (!trusted_folder(directory_) || !make_directories(directory_) || !trusted_folder(directory_)) return;
  static std::atomic<std::uint64_t> serial{0};
  std::string temporary = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  bool written = write_all(fd, contents_);
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temporary.c_str(), path_.c_str()) != 0) ::unlink(temporary.c_str());
}

}  // namespace coload::detail
