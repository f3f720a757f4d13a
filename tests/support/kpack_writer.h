// Test-side kpack archive writer (docs/format.md, "kpack archives"),
// independent of the library under test: it writes archives as rocm-kpack's
// Python writer does (PackedKernelArchive.write: a 16-byte header "KPAK",
// u32 version 1, u64 TOC offset; zeros to 64; the blobs back to back, or the
// zstd region (u32 count, then per ordinal a u32 frame size and a zstd frame
// with its content size and no checksum); one msgpack map with str keys and
// the smallest integer encodings to the end of the file).
//
// Two steps, so a test can plant any malformed field: layout() builds every
// part (header bytes, padding, data bytes, the TOC as an editable
// msgpack::Node, trailing bytes) and assemble() concatenates them as they are.
// write() is both at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "msgpack_writer.h"

namespace coload::testing::kpack {

/// The TOC's compression_scheme.
enum class Scheme { None, ZstdPerKernel };
/// "none", "zstd-per-kernel".
std::string_view scheme_name(Scheme scheme);

/// One code object to store: ordinals follow the order objects are given in.
struct Object {
  std::string key;     ///< binary key, "blas/lib/librocblas.so.4#3"
  std::string target;  ///< target key, "gfx942", "gfx90a:xnack+"
  std::vector<std::byte> bytes;
  /// metadata.target (the bundle entry ID before packing); no metadata map without it.
  std::optional<std::string> metadata_target;
  /// metadata.source_prefix, written after metadata.target when not empty.
  std::string source_prefix;
};

/// The TOC's archive-wide fields and the scheme.
struct Options {
  Scheme scheme = Scheme::None;
  std::string group_name = "test";
  /// Default: the only target when there is one (TheRock's per-target archives), else "mixed".
  std::optional<std::string> gfx_arch_family;
  /// Default: the objects' targets in first-use order.
  std::optional<std::vector<std::string>> gfx_arches;
  int zstd_level = 3;  ///< python-zstandard's default
};

/// An archive before assembly; every part may be edited.
struct Layout {
  std::vector<std::byte> header;    ///< 16 bytes: magic, version, TOC offset (data_offset() + data.size())
  std::vector<std::byte> padding;   ///< zeros up to 64
  std::vector<std::byte> data;      ///< the blobs, or the zstd region
  msgpack::Node toc;                ///< the TOC map, keys in the Python writer's order
  std::vector<std::byte> trailing;  ///< bytes after the TOC (none by default)
  /// Per ordinal, where its stored bytes lie in the file: its blob, or its
  /// zstd frame (the frame's u32 size word sits just before it).
  struct Stored {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };
  std::vector<Stored> stored;

  std::uint64_t data_offset() const { return header.size() + padding.size(); }
  std::uint64_t toc_offset() const { return data_offset() + data.size(); }
  /// The data byte at file offset `offset` (inside data).
  std::byte& at(std::uint64_t offset) { return data.at(offset - data_offset()); }
  /// Rewrites the header's TOC offset as toc_offset() (after data changed size).
  void fix_toc_offset();
  /// header + padding + data + toc + trailing.
  std::vector<std::byte> assemble() const;
};

/// Lays out `objects` as rocm-kpack's writer would (which refuses a second
/// object for one key and target; this writes the duplicate key).
Layout layout(std::span<const Object> objects, const Options& options = {});
/// layout(objects, options).assemble().
std::vector<std::byte> write(std::span<const Object> objects, const Options& options = {});

/// A zstd frame of `bytes` as python-zstandard's compress() writes it
/// (content size in its header, no checksum).
std::vector<std::byte> zstd_frame(std::span<const std::byte> bytes, int level = 3);

/// Little-endian stores into `bytes` at `offset` (which must fit), for header and frame-table fields.
void put_u32(std::vector<std::byte>& bytes, std::size_t offset, std::uint32_t value);
void put_u64(std::vector<std::byte>& bytes, std::size_t offset, std::uint64_t value);

/// The target key of a bundle entry ID: what follows its last "--"
/// ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" -> "gfx90a:xnack+"), as the packer takes it.
std::string target_of(std::string_view entry_id);

}  // namespace coload::testing::kpack
