#include "coload/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace coload {
namespace {

Error io_error(const std::string& path, std::string_view what, int error_number) {
  return Error(ErrorKind::Io, path + ": " + std::string(what) + ": " + std::strerror(error_number));
}

}  // namespace

std::string_view to_string(SourceKind kind) {
  switch (kind) {
    case SourceKind::BundleFile: return "bundle_file";
    case SourceKind::CodeObject: return "code_object";
    case SourceKind::HostImage: return "host_image";
  }
  return "unknown";
}

Source::Source(std::span<const std::byte> bytes, std::string name, void* mapping, std::size_t mapped_size)
    : bytes_(bytes), name_(std::move(name)), mapping_(mapping), mapped_size_(mapped_size) {}

Source::Source(Source&& other) noexcept
    : bytes_(other.bytes_), name_(std::move(other.name_)), mapping_(other.mapping_),
      mapped_size_(other.mapped_size_) {
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
    other.bytes_ = {};
    other.mapping_ = nullptr;
    other.mapped_size_ = 0;
  }
  return *this;
}

Source::~Source() { release(); }

void Source::release() {
  if (mapping_ != nullptr) munmap(mapping_, mapped_size_);
  mapping_ = nullptr;
  mapped_size_ = 0;
  bytes_ = {};
}

Source Source::borrow(std::span<const std::byte> bytes, std::string name) {
  return Source(bytes, std::move(name), nullptr, 0);
}

Expected<Source> Source::map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int saved = errno;
    ::close(fd);
    return io_error(path, "cannot stat", saved);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Error(ErrorKind::Io, path + ": not a regular file");
  }
  auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) {  // mmap refuses length 0; an empty file is an empty view
    ::close(fd);
    return Source({}, path, nullptr, 0);
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int saved = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (mapping == MAP_FAILED) return io_error(path, "cannot map", saved);
  return Source({static_cast<const std::byte*>(mapping), size}, path, mapping, size);
}

}  // namespace coload
