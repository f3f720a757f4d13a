// Locating bundles in a source (by wrapper pointers or by walking a region by
// declared sizes) and reading one bundle's entries.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "ccob/ccob_layout.h"
#include "ccob/decompress.h"
#include "coload/bundle.h"
#include "coload/detail/wrapper.h"
#include "common/bytes.h"
#include "common/magic.h"
#include "common/try.h"
#include "formats/plain_table.h"
#include "target/elf_target.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;

using detail::kElfMagic;
using detail::kPlainBundleMagic;

// A plain bundle's table is read from a first 1 KiB prefix, grown when the
// table runs past it. 1 KiB holds a table of 15 entries with 40-character
// IDs (the host and 14 GPUs) and copies a quarter of a page.
constexpr std::uint64_t kFirstRead = 1024;

/// The first bytes of the bundle at `offset`, `extent` bytes long: a page
/// copied out of the file when `source` copies, the whole bundle viewed
/// otherwise.
Expected<Bytes> read_first(const SourceReader& source, std::uint64_t offset, std::uint64_t extent,
                           std::vector<std::byte>& scratch) {
  return source.read(offset, source.copies() ? std::min(extent, kFirstRead) : extent, scratch);
}

/// A plain bundle's table: the entries (bytes viewing the source) or, when
/// the table was copied out of the file, the copy alone.
struct PlainTable {
  PlainBundle plain;
  std::shared_ptr<const PlainTableCopy> copy;  // set: plain.entries is empty
};

/// Points the entries' bytes at the bundle at `offset` in `source`.
void view_entries(std::vector<BundleEntry>& entries, const SourceReader& source, std::uint64_t offset,
                  std::uint64_t extent) {
  Bytes bundle = source.bytes().subspan(offset, extent);
  for (BundleEntry& entry : entries) entry.bytes = bundle.subspan(entry.offset, entry.size);
}

/// The entries a copied table holds, their bytes empty.
std::vector<BundleEntry> entries_of(const PlainTableCopy& copy) {
  std::vector<BundleEntry> entries;
  entries.reserve(copy.entries.size());
  for (const PlainTableCopy::Entry& entry : copy.entries) {
    entries.push_back(
        {.id = entry.id, .offset = entry.offset, .size = entry.size, .is_host = entry.id.starts_with("host-")});
  }
  return entries;
}

/// The table of the plain bundle at `offset`, `extent` bytes long, parsed
/// from `prefix` (read_first's bytes into `scratch`), read again longer while
/// the table runs past it: parse_plain_bundle's result over the whole bundle.
/// When the table was copied out of the file, the result is the copy alone,
/// its IDs kept in `ids`: a scan keeps only the copy.
Expected<PlainTable> read_plain_table(const SourceReader& source, std::uint64_t offset, std::uint64_t extent,
                                      Bytes prefix, std::vector<std::byte>& scratch,
                                      const std::shared_ptr<detail::ScannedIds>& ids) {
  for (;;) {
    auto table = detail::parse_plain_bundle_prefix(prefix, extent);
    if (!table && table.error().kind() == ErrorKind::Truncated && prefix.size() < extent) {
      // Past SourceReader::kMaxCopy the read is a view, at the latest of the whole bundle.
      auto longer = source.read(offset, std::min(extent, std::max(prefix.size() * 4, kFirstRead)), scratch);
      COLOAD_RETURN_IF_ERROR(longer);
      prefix = *longer;
      continue;
    }
    COLOAD_RETURN_IF_ERROR(table);
    PlainTable result{std::move(*table), nullptr};
    if (prefix.data() != scratch.data()) {
      view_entries(result.plain.entries, source, offset, extent);
      return result;
    }
    // The IDs view `scratch`, which the next read overwrites: they move to `ids`.
    auto copy = std::make_shared<PlainTableCopy>();
    copy->entries.reserve(result.plain.entries.size());
    for (std::size_t i = 0; i < result.plain.entries.size(); ++i) {
      const BundleEntry& entry = result.plain.entries[i];
      copy->entries.push_back({.id = ids->intern(entry.id, i), .offset = entry.offset, .size = entry.size});
    }
    copy->ids = ids;
    result.plain.entries.clear();
    result.copy = std::move(copy);
    return result;
  }
}

/// A v1 CCOB has no total_size, so the walk measures it: from its zstd frame
/// headers where they tell, else by decoding its stream, which stops at the
/// declared uncompressed_size. All v1 streams one walk decodes share one
/// max_decompressed_bytes: a file of N v1 bombs costs one limit of decoding,
/// not N. `used` is what earlier decoded v1 bundles declared (never above the limit).
Expected<void> charge_v1(const CompressedHeader& header, std::uint64_t& used, const ReadOptions& options) {
  std::uint64_t left = options.max_decompressed_bytes - used;
  if (header.uncompressed_size > left) {
    return Error(ErrorKind::LimitExceeded,
                 "CCOB v1 header: uncompressed_size " + hex(header.uncompressed_size) + " at offset " +
                     hex(detail::kCcobV1.uncompressed_size.offset) + " exceeds the " + hex(left) +
                     " bytes left for measuring v1 streams in this walk: earlier v1 bundles used " + hex(used) +
                     " of the limit " + hex(options.max_decompressed_bytes) + " (max_decompressed_bytes)")
        .at_field("uncompressed_size", detail::kCcobV1.uncompressed_size.offset, header.uncompressed_size, left);
  }
  used += header.uncompressed_size;
  return {};
}

/// Identifies and sizes the bundle at `offset` by its leading magic. `v1_used`
/// is the walk's v1 decoding so far (charge_v1); `scratch`, the walk's buffer
/// for copied reads; `ids`, the IDs of the tables it copied.
Expected<BundleInfo> measure_format(const SourceReader& source, std::uint64_t offset, std::uint64_t end,
                                    const ReadOptions& options, std::uint64_t& v1_used, std::vector<std::byte>& scratch,
                                    const std::shared_ptr<detail::ScannedIds>& ids) {
  BundleInfo info;
  info.offset = offset;
  auto first = read_first(source, offset, end - offset, scratch);
  COLOAD_RETURN_IF_ERROR(first);
  if (detail::starts_with(*first, kPlainBundleMagic)) {
    auto table = read_plain_table(source, offset, end - offset, *first, scratch, ids);
    COLOAD_RETURN_IF_ERROR(table);
    info.format = BundleFormat::Plain;
    info.size = table->plain.size;
    info.table = std::move(table->copy);
    return info;
  }
  // A CCOB's payload or a code object's tables are read through the mapping
  // anyway; their headers are read there too.
  Bytes bytes = source.bytes().subspan(offset, end - offset);
  if (detail::starts_with(bytes, detail::kCcobMagic)) {
    auto header = parse_compressed_header(bytes, options);
    COLOAD_RETURN_IF_ERROR(header);
    std::optional<std::uint64_t> size = header->total_size;
    if (!size) {
      // A v1 stream whose zstd frame headers tell its length costs no
      // decoding; only one measured by decoding it is charged.
      Bytes payload = bytes.subspan(std::min<std::size_t>(bytes.size(), header->header_size));
      if (auto walked = detail::measure_from_frame_headers(header->method, payload, header->uncompressed_size)) {
        size = header->header_size + *walked;
      } else {
        COLOAD_RETURN_IF_ERROR(charge_v1(*header, v1_used, options));
        auto measured = compressed_bundle_size(bytes, *header, options);
        COLOAD_RETURN_IF_ERROR(measured);
        size = *measured;
      }
    }
    info.format = BundleFormat::Compressed;
    info.size = *size;
    info.compressed = *header;
    return info;
  }
  if (detail::starts_with(bytes, kElfMagic)) {
    // CLR also registers a bare AMDGPU ELF as a fat binary image.
    auto size = detail::code_object_size(bytes);
    COLOAD_RETURN_IF_ERROR(size);
    info.format = BundleFormat::CodeObject;
    info.size = *size;
    return info;
  }
  return Error(ErrorKind::BadMagic,
               "bytes " + detail::show_bytes(bytes) + " start no __CLANG_OFFLOAD_BUNDLE__, CCOB or AMDGPU ELF image")
      .at_field("magic", 0);
}

/// Measures the bundle starting at `offset`, which may extend up to `end`.
/// A bundle always occupies bytes: the walk relies on it to advance.
Expected<BundleInfo> measure(const SourceReader& source, std::uint64_t offset, std::uint64_t end,
                             const ReadOptions& options, std::uint64_t& v1_used, std::vector<std::byte>& scratch,
                             const std::shared_ptr<detail::ScannedIds>& ids) {
  auto info = measure_format(source, offset, end, options, v1_used, scratch, ids);
  if (info && info->size == 0) {
    return Error(ErrorKind::Malformed, std::string(to_string(info->format)) + " image measures 0 bytes")
        .at_field("size", std::nullopt, 0);
  }
  return info;
}

// Padding between bundles is read in pieces of this size: 4096 is the old
// driver's alignment, so one piece usually spans a whole gap.
constexpr std::uint64_t kPaddingRead = 4096;

/// The first nonzero byte at or after `position` and before `end` (`end`
/// when there is none): where the bundle after the zero padding begins. A
/// large file's padding is copied out in pieces, not touched through the
/// mapping, where each gap cost a page fault and its fault-around.
Expected<std::uint64_t> skip_padding(const SourceReader& source, std::uint64_t position, std::uint64_t end,
                                     std::vector<std::byte>& scratch) {
  while (position < end) {
    auto piece =
        source.read(position, source.copies() ? std::min(end - position, kPaddingRead) : end - position, scratch);
    COLOAD_RETURN_IF_ERROR(piece);
    auto nonzero = std::find_if(piece->begin(), piece->end(), [](std::byte b) { return b != std::byte{0}; });
    position += static_cast<std::uint64_t>(nonzero - piece->begin());
    if (nonzero != piece->end()) break;
  }
  return position;
}

}  // namespace

Expected<BundleInfo> measure_image(std::span<const std::byte> bytes, const ReadOptions& options) {
  std::uint64_t v1_used = 0;
  std::vector<std::byte> scratch;
  return measure(SourceReader(bytes), 0, bytes.size(), options, v1_used, scratch,
                 std::make_shared<detail::ScannedIds>());
}

Expected<std::vector<BundleInfo>> scan_bundles(std::span<const std::byte> source, const SourceLayout& layout,
                                               const ReadOptions& options) {
  return scan_bundles(SourceReader(source), layout, options);
}

Expected<std::vector<BundleInfo>> scan_bundles(const SourceReader& reader, const SourceLayout& layout,
                                               const ReadOptions& options) {
  Bytes source = reader.bytes();
  if (auto fits =
          detail::check_range("bundle region", layout.region_offset, layout.region_size, source.size(), "the input");
      !fits) {
    return std::move(fits).error().at_field("bundle region", layout.region_offset, layout.region_size, source.size());
  }
  std::uint64_t end = layout.region_offset + layout.region_size;
  std::vector<BundleInfo> bundles;
  std::uint64_t v1_used = 0;                          // see charge_v1
  std::vector<std::byte> scratch;                     // one buffer for the walk's table reads
  auto ids = std::make_shared<detail::ScannedIds>();  // the IDs of the tables it copies, each once
  if (layout.kind == SourceKind::CodeObject) {
    bundles.push_back({.index = 0,
                       .offset = layout.region_offset,
                       .size = layout.region_size,
                       .format = BundleFormat::CodeObject,
                       .compressed = std::nullopt});
    return bundles;
  }

  if (!layout.wrapper_offsets.empty()) {
    std::uint64_t previous_end = layout.region_offset;
    for (std::uint64_t offset : layout.wrapper_offsets) {
      std::size_t index = bundles.size();
      if (offset < layout.region_offset || offset >= end) {
        return Error(ErrorKind::OutOfBounds, "wrapper pointer lies outside the bundle region")
            .in_bundle(index, offset)
            .at_field("wrapper pointer", std::nullopt, offset, end);
      }
      if (offset < previous_end) {
        return Error(ErrorKind::Malformed,
                     "wrapper pointer lands inside the previous bundle, which ends at " + hex(previous_end))
            .in_bundle(index, offset)
            .at_field("wrapper pointer", std::nullopt, offset, previous_end);
      }
      auto info = measure(reader, offset, end, options, v1_used, scratch, ids);
      if (!info) return std::move(info).error().in_bundle(index, offset, " (from __hip_fatbin_wrapper)");
      info->index = index;
      previous_end = offset + info->size;
      bundles.push_back(std::move(*info));
    }
    return bundles;
  }

  // No wrappers: walk by declared sizes, skipping the zero padding that aligns
  // bundles (4096 for the old driver, 16 for the new one). Never search for a
  // magic string: compressed payloads may contain one.
  std::uint64_t position = layout.region_offset;
  while (position < end) {
    auto next = skip_padding(reader, position, end, scratch);
    if (!next) {
      return std::move(next).error().with_context("padding at offset " + hex(position)).at_field("padding", position);
    }
    position = *next;
    if (position == end) break;
    std::size_t index = bundles.size();
    auto info = measure(reader, position, end, options, v1_used, scratch, ids);
    if (!info) {
      std::string view;
      if (index > 0) {
        // A CCOB whose total_size is short ends inside its own payload: say whose size led here.
        const BundleInfo& before = bundles.back();
        bool sized = before.compressed && before.compressed->total_size;
        view = " (after bundle " + std::to_string(index - 1) +
               (sized ? ", whose total_size " + hex(*before.compressed->total_size) + " ends there" : "") + ")";
      }
      return std::move(info).error().in_bundle(index, position, view);
    }
    info->index = index;
    position += info->size;
    bundles.push_back(std::move(*info));
  }
  if (bundles.empty()) {
    return Error(ErrorKind::NotFound, "bundle region at offset " + hex(layout.region_offset) + " (" +
                                          hex(layout.region_size) + " bytes) holds no bundle")
        .at_field("bundle region", layout.region_offset, layout.region_size);
  }
  return bundles;
}

std::string_view detail::ScannedIds::intern(std::string_view id, std::size_t position) {
  if (position < previous_.size() && previous_[position] == id) return previous_[position];
  auto found = index_.find(id);
  std::string_view kept = found != index_.end() ? *found : *index_.insert(kept_.emplace_back(id)).first;
  if (position >= previous_.size()) previous_.resize(position + 1);
  previous_[position] = kept;
  return kept;
}

Expected<std::span<const std::byte>> Bundle::head(std::size_t index, std::uint64_t bytes,
                                                  std::vector<std::byte>& scratch) const {
  if (index >= entries_.size()) {
    return Error(ErrorKind::InvalidArgument, "bundle entry " + std::to_string(index) +
                                                 " does not exist (the bundle has " + std::to_string(entries_.size()) +
                                                 ")")
        .at_field("entries", std::nullopt, index, entries_.size());
  }
  const BundleEntry& entry = entries_[index];
  std::uint64_t size = std::min<std::uint64_t>(bytes, entry.bytes.size());
  // Only a plain bundle's entries lie in the source at info.offset + entry.offset.
  if (!reader_.copies() || info_.format != BundleFormat::Plain || size == 0) return entry.bytes.first(size);
  return reader_.read(info_.offset + entry.offset, size, scratch);
}

Expected<Bundle> read_bundle(std::span<const std::byte> source, const BundleInfo& info, const ReadOptions& options) {
  return read_bundle(SourceReader(source), info, options);
}

Expected<Bundle> read_bundle(const SourceReader& reader, const BundleInfo& info, const ReadOptions& options) {
  Bytes source = reader.bytes();
  auto here = [&](Error error) { return std::move(error).in_bundle(info.index, info.offset); };
  if (auto end = detail::checked_add(info.offset, info.size); !end || *end > source.size()) {
    // Only a BundleInfo built by hand gets here: scan_bundles measured its own.
    auto fits = detail::check_range({}, info.offset, info.size, source.size(), "the input");
    if (!fits) return here(std::move(fits).error().at_field("bundle", info.offset, info.size, source.size()));
  }
  Bytes bytes = source.subspan(info.offset, info.size);
  switch (info.format) {
    case BundleFormat::Plain: {
      if (info.table) {  // copied and parsed by the scan: read nothing
        std::vector<BundleEntry> entries = entries_of(*info.table);
        // A BundleInfo may be built by hand: entries that do not fit the
        // bundle mean the table is read from the source instead, and judged
        // (or refused, naming the fault) as the file has it.
        bool fit = std::all_of(entries.begin(), entries.end(), [&](const BundleEntry& entry) {
          auto end = detail::checked_add(entry.offset, entry.size);
          return end && *end <= info.size;
        });
        if (fit) {
          view_entries(entries, reader, info.offset, info.size);
          return Bundle(info, std::move(entries), bytes, info.table, reader);
        }
      }
      std::vector<std::byte> scratch;
      auto first = read_first(reader, info.offset, info.size, scratch);
      if (!first) return here(std::move(first).error());
      auto table =
          read_plain_table(reader, info.offset, info.size, *first, scratch, std::make_shared<detail::ScannedIds>());
      if (!table) return here(std::move(table).error());
      if (!table->copy) return Bundle(info, std::move(table->plain.entries), bytes, nullptr, reader);
      std::vector<BundleEntry> entries = entries_of(*table->copy);
      view_entries(entries, reader, info.offset, info.size);
      return Bundle(info, std::move(entries), bytes, std::move(table->copy), reader);
    }
    case BundleFormat::Compressed: {
      auto header =
          info.compressed ? Expected<CompressedHeader>(*info.compressed) : parse_compressed_header(bytes, options);
      if (!header) return here(std::move(header).error());
      auto decompressed = detail::decompress_bundle_mapped(bytes, *header, options);
      if (!decompressed) return here(std::move(decompressed).error());
      Bytes uncompressed = (*decompressed)->bytes();
      auto plain = parse_plain_bundle(uncompressed);
      if (!plain) return std::move(plain).error().in_bundle(info.index, info.offset, ", decompressed");
      return Bundle(info, std::move(plain->entries), uncompressed, std::move(*decompressed));
    }
    case BundleFormat::CodeObject: {
      auto target = detail::target_id_from_elf_header(bytes);
      if (!target) return here(std::move(target).error());
      // The synthesized ID needs an owner; the Bundle's storage holds it.
      std::string id = "hipv4-amdgcn-amd-amdhsa--" + *target;
      auto storage = std::make_shared<const std::vector<std::byte>>(
          reinterpret_cast<const std::byte*>(id.data()), reinterpret_cast<const std::byte*>(id.data() + id.size()));
      std::vector<BundleEntry> entries{BundleEntry{
          .id = detail::as_chars(*storage), .offset = 0, .size = bytes.size(), .is_host = false, .bytes = bytes}};
      return Bundle(info, std::move(entries), bytes, std::move(storage));
    }
    case BundleFormat::FileGroup:  // its entries lie in several files, which only its FatBinary has
      return here(Error(ErrorKind::InvalidArgument, "a file group is read through the FatBinary that holds it"));
    case BundleFormat::Kpack:  // its entries lie in archives, which only its FatBinary has
      return here(Error(ErrorKind::InvalidArgument, "a kpack bundle is read through the FatBinary that holds it"));
  }
  return here(Error(ErrorKind::InvalidArgument, "unknown bundle format"));
}

}  // namespace coload
