// coload/detail/source.h: where the bytes of a fat binary come from, and where
// in them the bundles lie. Unstable, for the coload tool and the tests: it may
// change in any release; programs open files through coload/fat_binary.h.
//
// Covers: memory-mapping a file (no copy) or borrowing a caller's buffer, and
// classifying the bytes as a bundle file, a bare AMDGPU code object, or a host
// ELF image (executable, shared library or relocatable object) with a
// `.hip_fatbin` section and `__hip_fatbin_wrapper` records. Does not cover:
// parsing bundles (coload/bundle.h) or code objects beyond their ELF header.
//
// Ownership: a Source made by map_file owns its mapping (and, for a large
// file, an open descriptor that SourceReaders share); one made by borrow views
// the caller's buffer, which must outlive the Source and every view taken from
// it. Sources are movable, not copyable, and immutable, so they can be read
// from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"

namespace coload {

namespace detail {
struct OpenFile;
}

/// Reads small pieces of an input (bundle tables, ELF headers) with pread
/// instead of touching its mapping, where that is cheaper (a first touch of
/// a mapped page faults in a whole window around it: docs/notes/performance.md,
/// "Small reads of a large file"). Copyable; it keeps the file open, and
/// views the Source's bytes, so it is valid as long as those bytes are.
/// Thread-safe.
class SourceReader {
 public:
  /// Reads `bytes` in place (no file: every read is a view).
  explicit SourceReader(std::span<const std::byte> bytes = {}) : bytes_(bytes) {}

  /// Bytes [offset, offset + size) of the input, clipped at its end. Read
  /// into `scratch` (which then owns them) when the reader has the file open
  /// and the piece is small (up to kMaxCopy bytes); a view of the input
  /// otherwise. Errors: OutOfBounds (offset past the end), Io (pread failed,
  /// or the file is shorter than when it was mapped).
  Expected<std::span<const std::byte>> read(std::uint64_t offset, std::uint64_t size,
                                            std::vector<std::byte>& scratch) const;

  /// The input's bytes (a view; touching them maps pages).
  std::span<const std::byte> bytes() const { return bytes_; }
  /// True when small reads are copied out of the file rather than viewed.
  bool copies() const { return file_ != nullptr; }

  /// Largest piece read() copies; larger ones are views of the mapping.
  static constexpr std::uint64_t kMaxCopy = 64 * 1024;

 private:
  friend class Source;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const detail::OpenFile> file_;
};

/// The bytes of one input: a read-only mapping of a file, or a borrowed buffer.
class Source {
 public:
  /// Maps `path` read-only. A file larger than kKeepOpenAbove also stays
  /// open, for reader(). Errors: Io (open, stat, mmap), naming the path.
  static Expected<Source> map_file(const std::string& path);
  /// Views `bytes` without copying; `name` appears in error messages.
  static Source borrow(std::span<const std::byte> bytes, std::string name = "<memory>");

  Source(Source&& other) noexcept;
  Source& operator=(Source&& other) noexcept;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source();

  /// The whole input; valid for the Source's lifetime.
  std::span<const std::byte> bytes() const { return bytes_; }
  /// The path or the caller's name for the buffer.
  const std::string& name() const { return name_; }
  /// A reader of these bytes: it copies small pieces out of a large mapped
  /// file, and views a small file or a borrowed buffer in place.
  SourceReader reader() const;

  /// Files up to this size stay mapped only: all their small reads together
  /// touch at most a few fault-around windows, and a registry of many small
  /// code objects should not hold a descriptor for each.
  static constexpr std::uint64_t kKeepOpenAbove = 1024 * 1024;

 private:
  Source(std::span<const std::byte> bytes, std::string name, void* mapping, std::size_t mapped_size,
         std::shared_ptr<const detail::OpenFile> file = nullptr);
  void release();

  std::span<const std::byte> bytes_;
  std::string name_;
  void* mapping_ = nullptr;  // non-null when this Source owns an mmap
  std::size_t mapped_size_ = 0;
  std::shared_ptr<const detail::OpenFile> file_;  // set for a large mapped file
};

/// What kind of container the input is.
enum class SourceKind : std::uint8_t {
  BundleFile,    ///< one or more plain or compressed bundles back to back
  CodeObject,    ///< a bare AMDGPU ELF code object (.co/.hsaco)
  HostImage,     ///< a host ELF with a .hip_fatbin section
  KpackArchive,  ///< a kpack archive of code objects (`KPAK`, docs/format.md "kpack archives")
};

/// "bundle_file", "code_object", "host_image", "kpack_archive".
std::string_view to_string(SourceKind kind);

/// A kpack'd host image: its wrappers are HIPK records pointing at the
/// `.rocm_kpack_ref` marker, and its device code lies in kpack archives
/// (docs/format.md, "kpack'd host images").
struct KpackRefLayout {
  std::uint64_t marker_offset = 0;  ///< the marker section's bytes in the file
  std::uint64_t marker_size = 0;
  /// Per HIPK wrapper, in .hipFatBinSegment order: the code object index its
  /// reserved field holds (the `#N` of its TOC key).
  std::vector<std::uint32_t> indices;
};

/// Where the bundles of an input lie, found from headers only: nothing is
/// decompressed and no bundle is parsed.
struct SourceLayout {
  SourceKind kind = SourceKind::BundleFile;
  /// Byte range holding the bundles: the whole file, or the .hip_fatbin
  /// section's contents in a host image.
  std::uint64_t region_offset = 0;
  std::uint64_t region_size = 0;
  /// Host images: file offsets of the bundles that __hip_fatbin_wrapper records
  /// point to (relocations applied), sorted and without duplicates. Empty when
  /// the image has no usable wrappers; the region is then walked instead.
  std::vector<std::uint64_t> wrapper_offsets;
  /// Set for a kpack'd host image (HIPK wrappers); the region is then its marker.
  std::optional<KpackRefLayout> kpack_ref;
  /// Things that did not stop the reading but deserve a word: wrappers with an
  /// unknown magic or version, wrappers pointing outside .hip_fatbin, …
  std::vector<std::string> warnings;
};

/// Classifies `bytes` by their leading magic and, for host ELF images, finds
/// .hip_fatbin and resolves the wrapper records. Never searches for magic
/// bytes. Errors: BadMagic (not a bundle, CCOB, kpack archive or ELF), NotFound (an ELF with no
/// .hip_fatbin that is not an AMDGPU code object), Malformed / OutOfBounds /
/// Truncated for a broken ELF, naming the section and offset.
Expected<SourceLayout> inspect_source(std::span<const std::byte> bytes);

}  // namespace coload
