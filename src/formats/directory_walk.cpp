// The files of a directory that a file set takes (coload/fat_binary.h,
// list_directory; docs/loading.md, "File sets"): a walk linear in the tree.
// Each directory is opened relative to a descriptor kept a few levels up
// (openat), read whole and closed, so a deep tree costs neither a path walk
// from the top per directory nor a descriptor per level, and no
// std::filesystem::path per entry (a 6 000-deep tree took 15 s and 1.9 GB
// through recursive_directory_iterator).
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coload/fat_binary.h"
#include "common/try.h"
#include "io/file_type.h"

namespace coload {
namespace {

using detail::io_error;

/// A directory level keeps its descriptor when the path from the last kept
/// one reaches this many levels or bytes, so every openat walks a short
/// relative path and a tree of depth d holds about d / 32 descriptors.
constexpr std::size_t kAnchorLevels = 32;
constexpr std::size_t kAnchorBytes = 1024;

/// What `scan.pattern` lets the walk take and enter. A pattern with a '/'
/// is matched against the path relative to the directory (FNM_PATHNAME: no
/// '*' crosses a '/'), so it reaches files exactly as deep as it has
/// components and enters only the subfolders its leading components match;
/// a pattern without one is matched against file names, at any depth.
class Pattern {
 public:
  explicit Pattern(const std::string& pattern) : pattern_(pattern), by_path_(pattern.find('/') != std::string::npos) {
    if (!by_path_) return;
    for (std::size_t at = pattern.find('/'); at != std::string::npos; at = pattern.find('/', at + 1)) {
      prefixes_.push_back(pattern.substr(0, at));
    }
  }
  /// Whether matching needs an entry's relative path (else its name does).
  bool by_path() const { return by_path_; }
  /// Whether the file at `text` (its relative path when by_path(), else its name) is taken.
  bool takes(const char* text) const { return pattern_.empty() || ::fnmatch(pattern_.c_str(), text, flags()) == 0; }
  /// Whether a subfolder at `relative`, `depth` levels down (1: a child), may hold a match.
  bool enters(const std::string& relative, std::size_t depth) const {
    if (!by_path_) return true;
    return depth <= prefixes_.size() && ::fnmatch(prefixes_[depth - 1].c_str(), relative.c_str(), FNM_PATHNAME) == 0;
  }

 private:
  int flags() const { return by_path_ ? FNM_PATHNAME : 0; }

  const std::string& pattern_;
  bool by_path_;
  std::vector<std::string> prefixes_;  // the pattern up to each of its '/'
};

struct Level {
  std::vector<std::string> subfolders;  // names, in the order read
  std::size_t next = 0;
  std::size_t length = 0;  // of the relative path of this level
  int fd = -1;             // kept (an anchor), or -1
  std::size_t depth = 0;
};

}  // namespace

Expected<std::vector<std::string>> list_directory(const std::string& path, const DirectoryScan& scan) {
  int root = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    int saved = errno;
    struct stat info{};
    if (saved == ENOTDIR || (::stat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))) {
      return Error(ErrorKind::Io, "not a directory").in_file(path);
    }
    return io_error(path, "cannot open directory", saved);
  }
  const Pattern pattern(scan.pattern);
  const std::string prefix = path.ends_with('/') ? path : path + "/";
  std::vector<std::string> files;
  std::vector<Level> stack;
  std::string relative;  // of the directory being read, from `path`; "" at the top
  auto close_all = [&] {
    for (const Level& level : stack) {
      if (level.fd >= 0) ::close(level.fd);
    }
  };

  // Reads the directory open as `fd` (taken) at `relative`, `depth` levels down.
  auto read = [&](int fd, std::size_t depth, bool anchor) -> Expected<Level> {
    Level level{.length = relative.size(), .depth = depth};
    if (anchor) level.fd = ::dup(fd);
    DIR* dir = ::fdopendir(fd);
    if (!dir) {
      int saved = errno;
      ::close(fd);
      if (level.fd >= 0) ::close(level.fd);
      return io_error(prefix + relative, "cannot read directory", saved);
    }
    // An entry's relative path is built only when used: copying the
    // directory's path for every entry would make a deep chain quadratic.
    auto inside = [&](const char* name) { return relative.empty() ? std::string(name) : relative + "/" + name; };
    for (;;) {
      errno = 0;  // readdir's end and its failure differ only in errno
      const dirent* entry = ::readdir(dir);
      if (!entry) break;
      std::string_view name = entry->d_name;
      if (name.starts_with('.')) continue;  // hidden, "." and ".."
      unsigned char type = entry->d_type;
      struct stat info{};
      if (type == DT_UNKNOWN || type == DT_LNK) {
        // A link is followed to a file, never to a directory (one to an ancestor would loop).
        int flags = type == DT_LNK ? 0 : AT_SYMLINK_NOFOLLOW;
        if (::fstatat(::dirfd(dir), entry->d_name, &info, flags) != 0) continue;  // dangling or vanished
        type = S_ISREG(info.st_mode) ? DT_REG : S_ISDIR(info.st_mode) && type != DT_LNK ? DT_DIR : DT_UNKNOWN;
      }
      if (type == DT_REG) {
        bool taken = pattern.by_path() ? pattern.takes(inside(entry->d_name).c_str()) : pattern.takes(entry->d_name);
        if (taken) files.push_back(prefix + inside(entry->d_name));
      } else if (type == DT_DIR && scan.recursive &&
                 (!pattern.by_path() || pattern.enters(inside(entry->d_name), depth + 1))) {
        level.subfolders.emplace_back(name);
      }
    }
    int saved = errno;
    ::closedir(dir);
    if (saved != 0) {
      if (level.fd >= 0) ::close(level.fd);
      return io_error(prefix + relative, "cannot read directory", saved);
    }
    return level;
  };

  auto top = read(root, 0, true);
  COLOAD_RETURN_IF_ERROR(top);
  stack.push_back(std::move(*top));
  while (!stack.empty()) {
    Level& level = stack.back();
    if (level.next == level.subfolders.size()) {
      if (level.fd >= 0) ::close(level.fd);
      stack.pop_back();
      continue;
    }
    relative.resize(level.length);
    if (!relative.empty()) relative += '/';
    relative += level.subfolders[level.next++];
    const std::size_t depth = level.depth + 1;
    const Level* anchor = &level;
    while (anchor->fd < 0) --anchor;  // the top level always has one
    const std::size_t from = anchor->length == 0 ? 0 : anchor->length + 1;
    int fd = ::openat(anchor->fd, relative.c_str() + from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int saved = errno;
      close_all();
      return io_error(prefix + relative, "cannot open directory", saved);
    }
    const bool keep = depth - anchor->depth >= kAnchorLevels || relative.size() - from >= kAnchorBytes;
    auto child = read(fd, depth, keep);
    if (!child) {
      close_all();
      return std::move(child).error();
    }
    stack.push_back(std::move(*child));  // `level` and `anchor` dangle from here
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace coload
