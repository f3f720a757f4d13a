#include "coload/detail/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/bytes.h"
#include "io/file_type.h"
#include "io/read_pages.h"

namespace coload {

using detail::io_error;

/// A descriptor that closes with its last SourceReader or Source.
struct detail::OpenFile {
  explicit OpenFile(int descriptor) : fd(descriptor) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd); }
  const int fd;
};

Error detail::io_error(const std::string& path, std::string_view what, int error_number) {
  return Error(ErrorKind::Io, std::string(what) + ": " + std::strerror(error_number)).in_file(path);
}

std::string_view detail::file_type(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "of unknown type";
}

std::string_view to_string(SourceKind kind) {
  switch (kind) {
    case SourceKind::BundleFile: return "bundle_file";
    case SourceKind::CodeObject: return "code_object";
    case SourceKind::HostImage: return "host_image";
    case SourceKind::KpackArchive: return "kpack_archive";
  }
  return "unknown";
}

Expected<std::span<const std::byte>> SourceReader::read(std::uint64_t offset, std::uint64_t size,
                                                        std::vector<std::byte>& scratch) const {
  if (offset > bytes_.size()) {
    return Error(ErrorKind::OutOfBounds, "read at offset " + detail::hex(offset) + " lies past the end of the input (" +
                                             detail::hex(bytes_.size()) + " bytes)")
        .at_field("read", offset, size, bytes_.size());
  }
  std::uint64_t length = std::min<std::uint64_t>(size, bytes_.size() - offset);
  if (!file_ || length > kMaxCopy) return bytes_.subspan(offset, length);
  scratch.resize(length);
  std::uint64_t done = 0;
  while (done < length) {
    ssize_t got = ::pread(file_->fd, scratch.data() + done, length - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // No field: the caller knows what it read (bundle_scan names the padding).
      std::string why = got < 0 ? std::strerror(errno) : "the file is shorter than when it was mapped";
      return Error(ErrorKind::Io,
                   "reading " + detail::hex(length) + " bytes at offset " + detail::hex(offset) + ": " + why);
    }
    done += static_cast<std::uint64_t>(got);
  }
  return std::span<const std::byte>(scratch);
}

Source::Source(std::span<const std::byte> bytes, std::string name, void* mapping, std::size_t mapped_size,
               std::shared_ptr<const detail::OpenFile> file)
    : bytes_(bytes), name_(std::move(name)), mapping_(mapping), mapped_size_(mapped_size), file_(std::move(file)) {}

Source::Source(Source&& other) noexcept
    : bytes_(other.bytes_),
      name_(std::move(other.name_)),
      mapping_(other.mapping_),
      mapped_size_(other.mapped_size_),
      file_(std::move(other.file_)) {
  other.bytes_ = {};
  other.mapping_ = nullptr;
  other.mapped_size_ = 0;
}

Source& Source::operator=(Source&& other) noexcept {
  if (this != &other) {
    release();
    bytes_ = other.bytes_;
    name_ = std::move(other.name_);
    mapping_ = other.mapping_;
    mapped_size_ = other.mapped_size_;
    file_ = std::move(other.file_);
    other.bytes_ = {};
    other.mapping_ = nullptr;
    other.mapped_size_ = 0;
  }
  return *this;
}

Source::~Source() { release(); }

void Source::release() {
  if (mapping_ != nullptr) {
    if (mapped_size_ >= 2 * detail::ReadPages::kStep) detail::forget_file_mapping(mapping_);
    munmap(mapping_, mapped_size_);
  }
  mapping_ = nullptr;
  mapped_size_ = 0;
  bytes_ = {};
  file_.reset();
}

SourceReader Source::reader() const {
  SourceReader reader(bytes_);
  reader.file_ = file_;
  return reader;
}

Source Source::borrow(std::span<const std::byte> bytes, std::string name) {
  return Source(bytes, std::move(name), nullptr, 0);
}

Expected<Source> Source::map_file(const std::string& path) {
  // Reading a fat binary is no access worth recording: without O_NOATIME
  // every pread of a table or header pays touch_atime (~15% of a 1 KiB
  // pread). The kernel grants it only to the file's owner (EPERM otherwise),
  // and a FUSE server may refuse it: any failure opens again without it, and
  // that open's error is the one reported. O_NONBLOCK: a FIFO (or a device)
  // named as a file would block the open until a writer came; it opens at
  // once and fstat refuses it (docs/reading-rules.md, "Files"). A symlink
  // the caller names is followed, as any path a user gives.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  int fd = ::open(path.c_str(), kFlags | O_NOATIME);
  if (fd < 0) fd = ::open(path.c_str(), kFlags);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat info{};
  if (::fstat(fd, &info) != 0) {
    int saved = errno;
    ::close(fd);
    return io_error(path, "cannot stat", saved);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Error(ErrorKind::Io, "not a regular file (" + std::string(detail::file_type(info.st_mode)) + ")")
        .in_file(path);
  }
  auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) {  // mmap refuses length 0; an empty file is an empty view
    ::close(fd);
    return Source({}, path, nullptr, 0);
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int saved = errno;
  if (mapping == MAP_FAILED) {
    ::close(fd);
    return io_error(path, "cannot map", saved);
  }
  // Noted, so that a decoder may give back the pages of a large payload it has read.
  if (size >= 2 * detail::ReadPages::kStep) detail::note_file_mapping(mapping, size);
  std::shared_ptr<const detail::OpenFile> file;
  if (size > kKeepOpenAbove)
    file = std::make_shared<const detail::OpenFile>(fd);
  else
    ::close(fd);  // the mapping keeps the file alive
  return Source({static_cast<const std::byte*>(mapping), size}, path, mapping, size, std::move(file));
}

}  // namespace coload
