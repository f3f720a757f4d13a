// Test-side writer for clang offload bundles and compressed bundles (CCOB).
//
// Builds inputs in memory for the unit tests, independently of the library
// under test (this header does not include any coload header). The layout
// rules follow docs/format.md:
//   * plain bundle: the header and entry records, and the bundler's writer
//     rules (running offset starting at the header size, rounded up to
//     `align` per entry, zero-filled gaps);
//   * CCOB: headers v1/v2/v3, the payload (zlib via compress2, zstd with
//     long-distance matching, as the bundler) and the hash (first 8 bytes
//     of the MD5 digest of the plain bundle, stored as they are, i.e.
//     MD5Result::low() little-endian).
// Every malformed-input knob is explicit: overrides for CCOB header fields, a
// raw entry-table writer for arbitrary offset/size/id_len values, and helpers
// to place payloads and concatenate bundles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coload::testing {

using Bytes = std::vector<std::byte>;

inline constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
inline constexpr std::string_view kCcobMagic = "CCOB";

// ---------------------------------------------------------------------------
// Plain (uncompressed) bundles.

struct Entry {
  std::string id;  // bundle entry ID, e.g. "hipv4-amdgcn-amd-amdhsa--gfx90a"
  Bytes data;      // payload (empty for host entries)
};

// Size of the header (magic + count + entry table) for these IDs.
std::uint64_t plain_bundle_header_size(const std::vector<Entry>& entries);

// Writes a bundle exactly like clang-offload-bundler: entries in the given
// order, offsets = running offset (from the header size) rounded up to
// `align` (1 = packed), zero padding in between. The bundle ends at the end of
// the last entry (a trailing size-0 entry therefore points at the end).
// `align` must be >= 1.
Bytes write_plain_bundle(const std::vector<Entry>& entries, std::uint64_t align = 4096);

// ---------------------------------------------------------------------------
// Raw entry tables, for hand-crafting malformed bundles.

struct RawEntry {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t id_len = 0;  // the value stored in the table
  std::string id;            // the bytes written after the three u64s (any length)
};

// Convenience: id_len = id.size().
RawEntry raw_entry(std::string id, std::uint64_t offset, std::uint64_t size);

struct RawBundle {
  std::string magic = std::string(kBundleMagic);  // written verbatim (any length)
  std::optional<std::uint64_t> num_entries;       // default: entries.size()
  std::vector<RawEntry> entries;
};

// Writes magic, count and the records back to back, nothing else. Place the
// payloads afterwards with place().
Bytes write_raw_bundle_header(const RawBundle& bundle);

// Copies `data` into `buf` at `offset`, growing `buf` with zero bytes first if
// needed.
void place(Bytes& buf, std::uint64_t offset, std::span<const std::byte> data);

// Appends zero bytes until buf.size() is a multiple of `align` (>= 1).
void pad_to(Bytes& buf, std::uint64_t align);

// Appends `data`, after padding `buf` to `align` (1 = no padding). Returns the
// offset at which `data` starts (how the linker lays out `.hip_fatbin`).
std::uint64_t append_aligned(Bytes& buf, std::span<const std::byte> data, std::uint64_t align = 1);

// ---------------------------------------------------------------------------
// Compressed bundles (CCOB).

enum class CcobMethod : std::uint16_t { Zlib = 0, Zstd = 1 };

// Header size for a CCOB layout version: 20 (v1), 24 (v2), 32 (v3).
std::size_t ccob_header_size(int version);

// First 8 bytes of MD5(plain_bundle) read as a little-endian u64
// (llvm::MD5::MD5Result::low()); stored little-endian it gives those 8 bytes.
std::uint64_t ccob_hash(std::span<const std::byte> plain_bundle);

// zlib: compress2 (RFC 1950 stream); zstd: one frame with the content size
// and long-distance matching, as the bundler writes it. level < 0 picks the
// tools' defaults (zstd 3, zlib Z_DEFAULT_COMPRESSION); other values are
// passed through (zlib 0 = stored blocks, zstd 0 = libzstd's default).
// Throws std::runtime_error.
Bytes compress(std::span<const std::byte> data, CcobMethod method, int level = -1);

// One zstd frame with the given parameters: `window_log` > 0 bounds the
// window (a frame larger than 2^window_log is then not single-segment),
// `content_size` false leaves the content size out of the frame header,
// `checksum` appends the XXH64 checksum, `declared_window_log` > 0 rewrites
// the header's window to 2^declared_window_log (at least the window used, as
// `zstd --long=N` declares when it streams from a pipe; needs content_size
// false, or the frame has no window descriptor). Throws std::runtime_error.
struct ZstdFrame {
  int level = 3;  // the bundler's default
  bool long_distance = false;
  int window_log = 0;
  bool content_size = true;
  bool checksum = false;
  int declared_window_log = 0;
};
Bytes compress_zstd(std::span<const std::byte> data, ZstdFrame frame);

// One zlib stream (Z_RLE) or one zstd frame (with its content size) of `size`
// zero bytes, written from a 1 MiB buffer: a decompression bomb of any size
// costs little memory to build. Throws std::runtime_error.
Bytes compress_zeros(std::uint64_t size, CcobMethod method);

// A zstd skippable frame (magic 0x184D2A50 + nibble, u32 size, content).
// Decoders skip it; useful to put bytes such as "CCOB" inside a payload.
Bytes zstd_skippable_frame(std::span<const std::byte> content, unsigned nibble = 0);

// Header fields to store instead of the computed ones. The header *layout* is
// always chosen by the `version` argument of write_ccob; overrides only change
// the stored values (truncated to the field width: u16 version/method, u32
// sizes in v1/v2).
struct CcobOverrides {
  std::optional<std::uint16_t> version;
  std::optional<std::uint16_t> method;
  std::optional<std::uint64_t> total_size;  // v2/v3 only (v1 has none)
  std::optional<std::uint64_t> uncompressed_size;
  std::optional<std::uint64_t> hash;
};

struct CcobOptions {
  int level = -1;  // see compress()
  CcobOverrides overrides;
  // Bytes inserted between the header and the compressed stream (e.g. a
  // zstd_skippable_frame()); counted in total_size.
  Bytes payload_prefix;
  // Replaces the compressed stream entirely (garbage-payload tests); the
  // prefix is still prepended. Sizes/hash are still computed from
  // `plain_bundle` unless overridden.
  std::optional<Bytes> payload;
  // Bytes appended after the compressed stream and counted in total_size
  // (trailing-garbage-inside-the-CCOB tests).
  Bytes payload_suffix;
};

// Builds a CCOB around `plain_bundle`. `version` selects the layout (1, 2 or
// 3; anything else throws std::invalid_argument). total_size (v2/v3) =
// header + prefix + stream + suffix. Throws std::length_error when a real
// (not overridden) size does not fit a v1/v2 32-bit field.
Bytes write_ccob(std::span<const std::byte> plain_bundle, int version, CcobMethod method,
                 const CcobOptions& options = {});

// ---------------------------------------------------------------------------
// Small helpers.

Bytes to_bytes(std::string_view s);
void append(Bytes& buf, std::span<const std::byte> data);
void append_le(Bytes& buf, std::uint64_t value, std::size_t width);  // width 1..8
void store_le(std::span<std::byte> dst, std::uint64_t value, std::size_t width);

// Whole-file I/O; throw std::runtime_error on failure.
Bytes read_file(const std::string& path);
void write_file(const std::string& path, std::span<const std::byte> data);

}  // namespace coload::testing
