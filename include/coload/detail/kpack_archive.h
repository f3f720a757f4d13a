// coload/detail/kpack_archive.h: a kpack archive (`.kpack`, TheRock's per-target code object
// archives: docs/format.md "kpack archives", docs/reading-rules.md "kpack
// archives"): its 16-byte header, its msgpack TOC read with the strict
// reader, and its code objects, stored as they are (`none`) or as one zstd
// frame each (`zstd-per-kernel`).
//
// Covers: checking the header and every TOC field (types, ranges, ordinals
// in range and used once, blobs and frames inside the file and before the
// TOC, each entry's target against its metadata and its ELF header), and
// handing out one entry's bytes: a view of the file for `none`, one frame
// decoded alone for zstd. Unstable, for the coload tool and the tests: it
// may change in any release; programs open archives through
// coload/fat_binary.h. Does not cover: which archive a host binary's HIPK
// marker names, or choosing among entries (selection).
//
// Lifetime: an Archive views the caller's bytes (a mapped Source), which must
// outlive it and every view it hands out (entries' keys and IDs included). Threads: const members are safe
// to call at once (the frame index is filled under a lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/source.h"
#include "coload/error.h"

namespace coload::detail::kpack {

/// Header: "KPAK", u32 version, u64 TOC offset, little-endian.
inline constexpr std::uint64_t kHeaderSize = 16;
/// The only archive version rocm-kpack writes.
inline constexpr std::uint32_t kVersion = 1;
/// The TOC's own `format_version`.
inline constexpr std::uint32_t kTocVersion = 1;
/// TOC nesting: root, toc, binary, target, entry, metadata, and room for a
/// metadata value that is itself a container.
inline constexpr unsigned kMaxTocDepth = 8;
/// Code objects (blobs or frames) and TOC entries one archive may hold: a
/// library has thousands; the bound keeps a hostile count from allocating.
inline constexpr std::size_t kMaxObjects = std::size_t{1} << 20;

enum class Scheme : std::uint8_t { None, ZstdPerKernel };
/// "none", "zstd-per-kernel": the TOC's spelling.
std::string_view to_string(Scheme scheme);

/// One (binary key, target) of the TOC.
struct Entry {
  std::string_view key;                ///< "lib/librocblas.so.4#3": the binary and its code object index
  std::string_view binary;             ///< the key before its last '#' (the whole key without one)
  std::optional<std::uint32_t> index;  ///< the number after '#', when it is one
  std::string_view target;             ///< "gfx942", "gfx90a:xnack+", "gfx11-generic", "amdgcnspirv"
  std::string_view type;               ///< "hsaco" as rocm-kpack writes it
  std::uint32_t ordinal = 0;           ///< index into the blobs or frames
  std::uint64_t original_size = 0;     ///< the code object's size
  /// metadata.target: the bundle entry ID the code object had before packing.
  std::string_view metadata_target;
  /// The bundle entry ID it is presented under: metadata_target, or one
  /// built from `target` (docs/reading-rules.md, "kpack archives").
  std::string id;
  /// "toc.<key>.<target>": how errors name the entry's TOC map.
  std::string field;
  std::uint64_t toc_offset = 0;  ///< offset of the entry's map in the TOC
};

/// One binary key's entries: entries()[first, first + count), TOC order.
struct Binary {
  std::string_view key;
  std::size_t first = 0;
  std::size_t count = 0;
  std::uint64_t toc_offset = 0;  ///< offset of the key's map in the TOC
  std::uint64_t toc_size = 0;    ///< bytes of that map
};

class Archive {
 public:
  /// Checks the header and reads the TOC of the archive `file` holds.
  /// Errors: BadMagic / Truncated (header), UnsupportedVersion (header or
  /// format_version, field "version" / "format_version"), UnsupportedMethod
  /// (compression_scheme), OutOfBounds / Overflow (TOC offset, blobs,
  /// zstd region, frames), LimitExceeded (more than kMaxObjects, an
  /// original_size above options.max_decompressed_bytes), Malformed
  /// (msgpack, a missing or mistyped key, an ordinal out of range or used
  /// twice, a target its metadata contradicts), each naming the field, its
  /// file offset and the value.
  /// Frame sizes are read through `file` (copies out of a large file:
  /// indexing frames touches no mapped page); bytes are views of file.bytes().
  static Expected<std::shared_ptr<const Archive>> parse(const SourceReader& file, const ReadOptions& options = {});

  std::uint32_t format_version() const { return format_version_; }
  /// Bytes of the archive as it was read (mapped).
  std::uint64_t size() const { return file_.bytes().size(); }
  std::uint64_t toc_offset() const { return toc_offset_; }
  std::string_view group_name() const { return group_name_; }
  std::string_view gfx_arch_family() const { return gfx_arch_family_; }
  /// The targets rocm-kpack's loader matches a device against.
  std::span<const std::string_view> gfx_arches() const { return gfx_arches_; }
  Scheme scheme() const { return scheme_; }
  /// Blobs (none) or frames (zstd) the archive declares.
  std::size_t object_count() const { return object_count_; }

  std::span<const Entry> entries() const { return entries_; }
  std::span<const Binary> binaries() const { return binaries_; }
  /// TOC targets missing from gfx_arches (rocm-kpack never reads them), as sentences.
  std::span<const std::string> warnings() const { return warnings_; }

  /// File offset and size of the bytes `entry` is stored as: its blob, or
  /// its zstd frame (frame sizes are read, nothing is decoded). Errors:
  /// OutOfBounds / Truncated for a frame table that leaves the zstd region.
  struct Stored {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };
  Expected<Stored> stored(const Entry& entry) const;
  /// The archive's bytes at `where` (a stored() range: inside the file).
  std::span<const std::byte> stored_bytes(const Stored& where) const {
    return file_.bytes().subspan(where.offset, where.size);
  }

  /// The code object of `entry`: a view of the file (none), or its frame
  /// decoded alone into `out` (zstd; exactly original_size bytes). Then its
  /// target is checked against its ELF header. Errors: stored()'s;
  /// CorruptData (zstd), SizeMismatch (a size other than original_size);
  /// Malformed for an ELF header of another target; each at entry.field.
  Expected<std::span<const std::byte>> bytes(const Entry& entry, std::vector<std::byte>& out) const;
  /// Its first min(original_size, n) bytes (an ELF header): a view, or the
  /// start of its frame decoded into `out`. Errors: as bytes(), without the
  /// target check.
  Expected<std::span<const std::byte>> head(const Entry& entry, std::size_t n, std::vector<std::byte>& out) const;

  Archive() = default;  // parse() makes them

 private:
  friend class TocReader;
  Expected<Stored> frame(std::uint32_t ordinal) const;

  SourceReader file_;
  std::uint64_t toc_offset_ = 0;
  std::uint32_t format_version_ = 0;
  std::string_view group_name_;
  std::string_view gfx_arch_family_;
  std::vector<std::string_view> gfx_arches_;
  Scheme scheme_ = Scheme::None;
  std::size_t object_count_ = 0;
  std::vector<Stored> blobs_;           // none: one per ordinal
  Stored zstd_region_;                  // zstd: the frame table and frames
  std::uint64_t max_object_bytes_ = 0;  // ReadOptions::max_decompressed_bytes
  std::vector<Entry> entries_;
  std::vector<Binary> binaries_;
  std::vector<std::string> warnings_;
  // zstd: frames found so far, walked from the start on demand.
  mutable std::mutex frames_mutex_;
  mutable std::vector<Stored> frames_;
  mutable std::uint64_t next_frame_ = 0;  // file offset of the next frame's size word
};

/// An archive and who keeps its bytes: an input's Source lives in its
/// FatBinary; an archive a HIPK image's search found keeps its own.
struct ArchiveFile {
  std::string path;
  std::optional<Source> source;
  std::shared_ptr<const Archive> archive;
};

/// One entry of a FatBinary's kpack bundle: entry `entry` of an archive.
struct Member {
  std::shared_ptr<const ArchiveFile> file;
  std::size_t entry = 0;
  /// Set when the `#N` of this entry's key may not be its wrapper's: choosing
  /// it is Ambiguous, with this sentence (docs/reading-rules.md, "kpack'd host images").
  std::string refused;

  const Entry& toc() const { return file->archive->entries()[entry]; }
};

/// A FatBinary's kpack bundle: a binary key of an archive, or a HIPK
/// wrapper's key across the archives its image's search found.
struct Members {
  std::string key;  ///< "blas/lib/librocblas.so.4#3"
  std::vector<Member> members;
  /// With no member: why (no archive found, and where the search looked).
  std::string none_found;
};

/// Where each of `members`' entries is stored (Archive::stored), in order:
/// what a listing shows (`coload ls`, coload_kpack_list), nothing decoded.
/// Errors: stored()'s, at the member's index and entry ID.
Expected<std::vector<Archive::Stored>> stored_members(const Members& members);

/// The marker a kpack'd host image's HIPK wrappers point at: the msgpack map
/// of its `.rocm_kpack_ref` section (docs/format.md, "kpack'd host images").
struct Marker {
  /// Archive paths, relative to the binary's directory, `@GFXARCH@` standing for a target.
  std::vector<std::string> search_paths;
  /// The binary's TOC key without its "#N".
  std::string kernel_name;
  std::uint64_t size = 0;  ///< bytes the map takes
};
/// Most bytes of a marker read (rocm-kpack reads at most 64 KiB).
inline constexpr std::size_t kMaxMarkerBytes = 64 * 1024;
/// The marker-path placeholder a target replaces.
inline constexpr std::string_view kTargetPlaceholder = "@GFXARCH@";

/// Reads the marker map at bytes[0] with the strict msgpack reader; bytes
/// may run past its end (only the first kMaxMarkerBytes are looked at).
/// Errors: Malformed naming the key (a missing or mistyped kernel_name or
/// kpack_search_paths, no search path, an empty or NUL-holding string).
Expected<Marker> parse_marker(std::span<const std::byte> bytes);

}  // namespace coload::detail::kpack
