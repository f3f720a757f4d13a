// coload/bundle.h: clang offload bundles, plain (`__CLANG_OFFLOAD_BUNDLE__`)
// and compressed (`CCOB` v1/v2/v3, zlib or zstd).
//
// Covers: walking a region of bundles back to back by their declared sizes,
// parsing a bundle's entry table with every offset and size checked, and
// decompressing a compressed bundle under a size cap with its MD5 verified.
// Does not cover: what an entry ID means (target IDs) or which entry a device
// should use (selection).
//
// Ownership: the entries of a plain bundle are views into the caller's bytes
// (usually a Source), which must outlive them. A compressed bundle's Bundle
// owns the decompressed bytes; its entries view those and stay valid as long as
// the Bundle or any copy of it lives (copies share the storage). All types are
// immutable after creation and safe to read from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/detail/source.h"
#include "coload/error.h"

namespace coload {

/// How a bundle is stored.
enum class BundleFormat : std::uint8_t {
  Plain,       ///< `__CLANG_OFFLOAD_BUNDLE__` header + entries
  Compressed,  ///< `CCOB` header + one compressed plain bundle
  CodeObject,  ///< a bare code object, presented as a bundle of one entry
  /// A file set's bare code objects with one set of kernel names, one entry
  /// per file (coload/fat_binary.h); only FatBinary::read reads it.
  FileGroup,
  /// One binary key of a kpack archive: its code objects, one entry per
  /// target (docs/format.md "kpack archives"); only FatBinary::read reads it.
  Kpack,
};

/// Compression method of a CCOB (wire values: 0 zlib, 1 zstd).
enum class Compression : std::uint8_t { None, Zlib, Zstd };

/// "plain", "ccob", "code_object", "file_group", "kpack".
std::string_view to_string(BundleFormat format);
/// "none", "zlib", "zstd".
std::string_view to_string(Compression compression);

/// Where the archives of a kpack'd host image (HIPK wrappers) are looked for,
/// as rocm-kpack's loader looks (docs/loading.md, "kpack'd libraries").
struct KpackSearch {
  /// ROCM_KPACK_PATH: archive files used instead of those the marker names.
  std::vector<std::string> paths;
  /// ROCM_KPACK_PATH_PREFIX: archive files looked at before those the marker names.
  std::vector<std::string> prefix_paths;
  /// ROCM_KPACK_DISABLE: no archive is read; HIPK wrappers get nothing.
  bool disabled = false;
  /// COLOAD_KPACK_ROOT (or the tool's --kpack-root): the directory the
  /// marker's relative paths start from, in place of the binary's own.
  std::string root;
  /// The binary's path, for a caller that knows it better than the file or
  /// mapping coload reads (a registry's wrapper in a mapping without a file).
  std::string binary_path;
};

/// Limits applied while reading. The defaults are generous but finite.
struct ReadOptions {
  /// Largest uncompressed bundle a CCOB may declare or produce; also the total
  /// that one scan_bundles may decode to measure v1 CCOBs, and (coload/registry.h)
  /// what one registry load may keep of its CCOBs (tables' heads, chosen entries).
  std::uint64_t max_decompressed_bytes = std::uint64_t{1} << 30;
  /// A directory of marks, one per CCOB whose stored hash and size were
  /// checked, named by a 128-bit xxh3 of the CCOB's bytes (header and
  /// payload). A CCOB with a mark is trusted: decompress_bundle and
  /// read_bundle skip its MD5, and a Verify-mode stream decodes it as in Skip
  /// mode. Those exact bytes were checked; changed bytes have no mark. One
  /// without is checked and, when it passes, marked. Marks that cannot be
  /// read or written are misses, never errors. Empty: no marks (every CCOB
  /// checked in full). Config::verified_cache (COLOAD_VERIFY_CACHE) sets it.
  std::string verified_cache;
  /// Where a HIPK host image's archives are found.
  KpackSearch kpack;
};

/// Who reads a plain bundle's table and picks: coload, or comgr's
/// amd_comgr_lookup_code_object (the HIP_USE_RUNTIME_UNBUNDLER-style toggle).
enum class Unbundler : std::uint8_t { Builtin, Comgr };
/// "builtin", "comgr".
std::string_view to_string(Unbundler unbundler);

/// How a CCOB is decoded as a stream while an entry is chosen from it
/// (select_in_compressed_bundle, choose_in_binary): its stored MD5 prefix,
/// what is kept, the caps.
struct StreamOptions {
  enum class HashCheck : std::uint8_t {
    /// Decode the whole stream, MD5 it as it passes (without keeping it), and
    /// check the stored hash and the declared uncompressed size. The default.
    Verify,
    /// Stop decoding once the choice is final: the ELF header seen of every
    /// entry whose ID leaves the choice to it (entries of other kinds or of
    /// processors unrelated to the device are judged from the table), and
    /// the chosen entry complete. The stored hash is NOT checked, and
    /// corruption after that point goes unnoticed.
    Skip,
  };
  HashCheck hash = HashCheck::Verify;
  /// False: the chosen entry's bytes are not kept, and Skip mode (or a mark)
  /// stops once every entry is judged, without decoding the rest of the
  /// chosen entry. For callers that only report the choice, such as
  /// `coload select` without `-o`.
  bool keep_chosen = true;
  /// Caps as for read_bundle (max_decompressed_bytes bounds the declared and
  /// the produced size), and in Verify mode the marks of checked CCOBs
  /// (ReadOptions::verified_cache).
  ReadOptions read;
};

/// What became of a streamed CCOB's stored hash.
enum class StoredHash : std::uint8_t {
  Checked,         ///< the whole stream decoded and its MD5 prefix and size matched
  CheckedEarlier,  ///< a mark in ReadOptions::verified_cache: decoded as in Skip mode
  NotChecked,      ///< Skip mode, or a plain bundle (no hash)
};

/// The fixed header of a CCOB, all fields as stored.
struct CompressedHeader {
  std::uint16_t version = 0;  ///< 1, 2 or 3
  Compression method = Compression::None;
  std::uint32_t header_size = 0;  ///< 20 (v1), 24 (v2) or 32 (v3)
  /// Header + payload bytes (v2, v3). v1 has no such field.
  std::optional<std::uint64_t> total_size;
  std::uint64_t uncompressed_size = 0;
  /// First 8 bytes of the MD5 of the uncompressed bundle, as a little-endian u64.
  std::uint64_t hash = 0;
};

/// One entry of a bundle. `offset` is relative to the start of the
/// (uncompressed) bundle, as stored in its table.
struct BundleEntry {
  std::string_view id;  ///< bundle entry ID, trailing NUL bytes removed
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  bool is_host = false;              ///< the (normally empty) `host-…` entry
  std::span<const std::byte> bytes;  ///< the entry's contents
};

/// A plain bundle's entry table as a scan copied it out of a file (opaque:
/// read_bundle's to use).
struct PlainTableCopy;

/// One bundle located in a source, from its header only.
struct BundleInfo {
  std::size_t index = 0;     ///< position among the source's bundles, from 0
  std::uint64_t offset = 0;  ///< of the bundle's first byte within the source
  std::uint64_t size = 0;    ///< bytes the bundle occupies in the source (no padding)
  BundleFormat format = BundleFormat::Plain;
  std::optional<CompressedHeader> compressed;  ///< set for Compressed
  /// Plain bundles scanned through a copying SourceReader: the table as
  /// copied and parsed, which read_bundle uses instead of reading and
  /// parsing it a second time (unless its entries do not fit `size`: a
  /// hand-built BundleInfo is then read from the source). Null otherwise.
  std::shared_ptr<const PlainTableCopy> table;
};

/// A plain bundle's table parsed over `bytes`: the entries and the bundle's
/// extent (largest entry end, at least the header).
struct PlainBundle {
  std::uint64_t size = 0;
  std::uint64_t header_size = 0;
  std::vector<BundleEntry> entries;
};

/// Most entries a bundle's table may list (more is LimitExceeded). A toolchain
/// writes one per target, a few dozen at most; docs/reading-rules.md ("Plain
/// bundles") says why the count is bounded.
inline constexpr std::uint64_t kMaxBundleEntries = 4096;
/// Longest entry ID (id_len, trailing NULs included) a table may hold; target
/// IDs take under a hundred bytes.
inline constexpr std::uint64_t kMaxEntryIdBytes = 256;

/// Parses a plain bundle starting at bytes[0]; bytes may run past its end.
/// Errors: BadMagic, LimitExceeded (num_entries above kMaxBundleEntries, an
/// id_len above kMaxEntryIdBytes), Truncated (table), Overflow / OutOfBounds
/// (entry ranges), Malformed (entry inside the header, bad ID bytes), each
/// naming the entry, field, offset and value.
Expected<PlainBundle> parse_plain_bundle(std::span<const std::byte> bytes);

/// Parses a CCOB header at bytes[0] and checks it: known version and method,
/// sizes consistent with `bytes` and with options.max_decompressed_bytes.
/// Errors: BadMagic, Truncated, UnsupportedVersion, UnsupportedMethod,
/// Malformed, OutOfBounds, LimitExceeded.
Expected<CompressedHeader> parse_compressed_header(std::span<const std::byte> bytes, const ReadOptions& options = {});

/// Bytes the CCOB at bytes[0] occupies: total_size for v2/v3, and for v1 the
/// header plus the length of the compressed stream: read from its zstd frame
/// and block headers when every frame declares its content size (nothing is
/// decoded, so corrupt block contents show only when the bundle is read),
/// else measured by decoding it, without keeping the output, at most
/// uncompressed_size bytes.
/// Errors (v1): Truncated, CorruptData, SizeMismatch, and LimitExceeded for an
/// uncompressed_size above options.max_decompressed_bytes.
Expected<std::uint64_t> compressed_bundle_size(std::span<const std::byte> bytes, const CompressedHeader& header,
                                               const ReadOptions& options = {});

/// Decompresses the CCOB at bytes[0] (`bytes` bounded to its size) and checks
/// the result: exactly uncompressed_size bytes, and the stored MD5 prefix.
/// Errors: CorruptData, Truncated, SizeMismatch, HashMismatch, LimitExceeded.
Expected<std::vector<std::byte>> decompress_bundle(std::span<const std::byte> bytes, const CompressedHeader& header,
                                                   const ReadOptions& options = {});

/// A bundle with its entries. Copies share storage.
class Bundle {
 public:
  const BundleInfo& info() const { return info_; }
  std::span<const BundleEntry> entries() const { return entries_; }
  /// The uncompressed bundle bytes (a view into the source for plain bundles).
  std::span<const std::byte> uncompressed() const { return uncompressed_; }

  /// The first min(size, bytes) bytes of entry `index` (e.g. its ELF
  /// header): for a plain bundle of a large mapped file, read out of the file
  /// into `scratch` without touching the mapping (see SourceReader); a view
  /// of the entry otherwise. Errors: Io from the read; InvalidArgument for an
  /// index out of range.
  Expected<std::span<const std::byte>> head(std::size_t index, std::uint64_t bytes,
                                            std::vector<std::byte>& scratch) const;

  /// Builds a Bundle; `storage` owns what `uncompressed` and the entries view
  /// (their bytes, their IDs), or is null when they view the caller's bytes.
  /// `reader`, when it copies, is the source a plain bundle's entries lie in,
  /// for head(); other formats ignore it.
  Bundle(BundleInfo info, std::vector<BundleEntry> entries, std::span<const std::byte> uncompressed,
         std::shared_ptr<const void> storage, SourceReader reader = SourceReader())
      : info_(std::move(info)),
        entries_(std::move(entries)),
        uncompressed_(uncompressed),
        storage_(std::move(storage)),
        reader_(std::move(reader)) {}

 private:
  BundleInfo info_;
  std::vector<BundleEntry> entries_;
  std::span<const std::byte> uncompressed_;
  std::shared_ptr<const void> storage_;
  SourceReader reader_;
};

/// Finds every bundle of a source laid out as `layout` says: at the wrapper
/// offsets when there are any, otherwise by walking the region by declared
/// sizes and skipping zero padding. Nothing is decompressed except to measure
/// a v1 CCOB, and the v1 CCOBs of one call share one decode budget: their
/// uncompressed_size values together may not pass options.max_decompressed_bytes
/// (LimitExceeded on the first that would, naming what earlier ones used).
/// Errors name the bundle index and offset: BadMagic for bytes that start no
/// bundle, plus the errors of the header parsers.
Expected<std::vector<BundleInfo>> scan_bundles(std::span<const std::byte> source, const SourceLayout& layout,
                                               const ReadOptions& options = {});
/// The same through `source`: plain bundles' tables are read as copies when
/// it copies (a large mapped file), so the walk touches no mapped page of them.
Expected<std::vector<BundleInfo>> scan_bundles(const SourceReader& source, const SourceLayout& layout,
                                               const ReadOptions& options = {});

/// Reads one bundle found by scan_bundles: parses the table, decompressing and
/// verifying a CCOB first. A code object becomes one entry whose ID is built
/// from its ELF header.
Expected<Bundle> read_bundle(std::span<const std::byte> source, const BundleInfo& info,
                             const ReadOptions& options = {});
/// The same through `source`: when it copies, a plain bundle's table is read
/// as a copy (which the Bundle owns, entry IDs view it) and Bundle::head()
/// reads entries' first bytes the same way; the entries' bytes still view the
/// mapping, untouched until someone reads them.
Expected<Bundle> read_bundle(const SourceReader& source, const BundleInfo& info, const ReadOptions& options = {});

}  // namespace coload
