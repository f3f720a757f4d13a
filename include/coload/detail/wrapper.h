// coload/detail/wrapper.h: a fat binary from the pointer a HIP runtime is
// handed. Unstable, for the coload tool and the tests: it may change in any
// release; programs register a wrapper through coload/registry.h.
//
// Covers: the `__hip_fatbin_wrapper` record clang emits per translation unit
// (the only argument of `__hipRegisterFatBinary`), measuring the bundle it
// points at from the bundle's own headers, and the readable memory around an
// address of this process, read through the kernel so that memory that cannot
// be read is an error, never a signal (docs/reading-rules.md, "What coload
// requires of the caller's memory and files"). Does not cover: registering the
// result (Registry::register_wrapper, coload_register_wrapper).
//
// Ownership: spans view the process's memory, which the caller keeps readable;
// copies (copy_image, wrapped_image_in) own their bytes. Threads: calls share
// no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coload/bundle.h"
#include "coload/error.h"

namespace coload {

/// The `__hip_fatbin_wrapper` record: {uint32 magic, uint32 version,
/// const void* binary, void* reserved} (docs/format.md, "Host images").
inline constexpr std::uint32_t kHipFatbinWrapperMagic = 0x48495046;  // "HIPF"
inline constexpr std::uint32_t kHipFatbinWrapperVersion = 1;
inline constexpr std::size_t kHipFatbinWrapperSize = 24;
inline constexpr std::size_t kHipFatbinWrapperBinaryAt = 8;  ///< offset of `binary`
/// A kpack'd image's record: `binary` points at its marker and the low 32
/// bits of `reserved` hold its code object index (docs/format.md, "kpack'd host images").
inline constexpr std::uint32_t kHipKpackWrapperMagic = 0x4B504948;  // "HIPK"

/// A `__hip_fatbin_wrapper` record as read.
struct WrapperRecord {
  std::uint32_t magic = 0;
  std::uint32_t version = 0;
  const void* binary = nullptr;
  std::uint64_t reserved = 0;
  bool kpack() const { return magic == kHipKpackWrapperMagic && version == kHipFatbinWrapperVersion; }
};

/// The record at `wrapper`, copied through one checked read. Errors:
/// OutOfBounds ("address") for a record that cannot be read; Truncated
/// (field "wrapper") when fewer than 24 bytes of it are readable. Each names
/// the wrapper.
Expected<WrapperRecord> read_wrapper_record(const void* wrapper);

/// The readable bytes from `address` to the end of the mapping that holds it:
/// the loaded segment of an executable or shared object (dl_iterate_phdr), or
/// else the readable mappings of /proc/self/maps that start there and follow
/// each other without a gap. Its pages are readable as the segment or the
/// mapping was made; one made unreadable since, or with no page behind it,
/// still faults when touched: read them through copy_image. Errors:
/// OutOfBounds (field "address") for an address in no mapping, or in one
/// that is not readable; Io when /proc/self/maps cannot be read.
Expected<std::span<const std::byte>> readable_bytes_at(const void* address);

/// What the image at bytes[0] is and how many bytes it occupies, from its own
/// headers: a plain bundle's table and its furthest entry; a CCOB's
/// total_size (v1: its zstd frame headers, or else decoding the stream within
/// options.max_decompressed_bytes); a bare code object's ELF tables. The
/// result's format and size are set (offset 0, index 0), and the image lies
/// within `bytes`. Errors: BadMagic for bytes that start no image; Truncated,
/// OutOfBounds or Malformed, naming the field, when it would run past `bytes`;
/// the header parsers' errors.
Expected<BundleInfo> measure_image(std::span<const std::byte> bytes, const ReadOptions& options = {});

/// The image at reach[0], measured by measure_image and copied, both through
/// checked reads (never a fault): a copy of 64 KiB first, four times longer
/// while the image's headers run past it, within `reach`; the readable bytes
/// end at the first page that cannot be read now. Costs a copy of the image
/// (docs/notes/performance.md, "Checked reads of a wrapper's image"). Errors:
/// OutOfBounds ("address") when reach[0] cannot be read; measure_image's
/// over the readable bytes, saying where they end when a page cut them; Io
/// when no checked read is available.
Expected<std::vector<std::byte>> copy_image(std::span<const std::byte> reach, const ReadOptions& options = {});

/// The image at reach[0] in place: copy_image's measure, the copy dropped.
/// Its bytes were readable when measured; the caller keeps them so.
Expected<std::span<const std::byte>> measured_in_place(std::span<const std::byte> reach,
                                                       const ReadOptions& options = {});

/// What a `__hip_fatbin_wrapper` at `wrapper` reaches: the bytes from its
/// `binary` pointer to the end of the mapping that holds them. The record is
/// copied through one checked read (one system call) and checked; no byte of
/// the image is read (a runtime registering a library's wrappers touches none
/// of its device code, as CLR does). Errors: OutOfBounds ("address") for a
/// record that cannot be read; Truncated (field "wrapper") when fewer than 24
/// bytes of it are readable; readable_bytes_at's for its binary; BadMagic
/// ("magic", offset 0), UnsupportedVersion ("version", offset 4), Malformed
/// ("binary", offset 8) for a null binary. Each names the wrapper.
Expected<std::span<const std::byte>> wrapper_reach(const void* wrapper);
/// The same for a record read already (read_wrapper_record).
Expected<std::span<const std::byte>> wrapper_reach(const void* wrapper, const WrapperRecord& record);

/// A copy of the image within `reach` (wrapper_reach of `wrapper`):
/// copy_image's. Errors: copy_image's, naming the wrapper.
Expected<std::vector<std::byte>> wrapped_image_in(const void* wrapper, std::span<const std::byte> reach,
                                                  const ReadOptions& options = {});

/// wrapper_reach, then measured_in_place: the image a wrapper points at, in
/// place. Errors: theirs, naming the wrapper.
Expected<std::span<const std::byte>> wrapped_image(const void* wrapper, const ReadOptions& options = {});

}  // namespace coload
