// `__CLANG_OFFLOAD_BUNDLE__` bundles: a header, an entry table, and payloads
// at offsets relative to the bundle start. There is no size field: the bundle
// ends at its largest entry end.
#include <algorithm>
#include <string>

#include "coload/bundle.h"
#include "common/bytes.h"
#include "common/magic.h"
#include "common/try.h"
#include "formats/plain_table.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;

using detail::kPlainBundleMagic;
constexpr std::uint64_t kEntryRecordMinSize = 24;  // offset, size, id_len

struct RawEntry {
  std::uint64_t offset;
  std::uint64_t size;
  std::string_view id;
};

// Printable ASCII without space; no early exit, so the loop vectorizes.
bool printable(std::string_view text) {
  bool outside = false;
  for (char c : text) outside |= static_cast<unsigned char>(c) - 0x21u > 0x7eu - 0x21u;
  return !outside;
}

// IDs are ASCII target strings; anything else means the table is garbage.
Expected<std::string_view> check_id(std::string_view raw, std::size_t index, std::uint64_t id_offset) {
  std::string_view id = raw;
  while (!id.empty() && id.back() == '\0') id.remove_suffix(1);  // some producers count a NUL
  if (!id.empty() && printable(id)) return id;
  // The entry is a field of the error; its ID, unreadable, is left unset.
  const std::string field = "entries[" + std::to_string(index) + "].id";
  if (id.empty()) {
    return Error(ErrorKind::Malformed, "id at offset " + hex(id_offset) + " is empty")
        .at_field(field, id_offset)
        .at_entry(index, {});
  }
  for (std::size_t i = 0; i < id.size(); ++i) {
    auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x21 || c > 0x7e) {
      return Error(ErrorKind::Malformed, "id at offset " + hex(id_offset) + ": byte " + hex(c) + " at offset " +
                                             hex(id_offset + i) + " is not a printable ASCII character")
          .at_field(field, id_offset + i, c)
          .at_entry(index, {});
    }
  }
  return id;
}

// An ID longer than any target ID by far: its copies (the selection's
// candidates, a stream's kept heads, the no-fit message) multiply it.
Expected<void> check_id_len(std::uint64_t id_len, std::uint64_t index, std::uint64_t at) {
  if (id_len <= kMaxEntryIdBytes) return {};
  return Error(ErrorKind::LimitExceeded, "id_len " + hex(id_len) + " at offset " + hex(at) + " exceeds the " +
                                             hex(kMaxEntryIdBytes) + " bytes an entry ID may take")
      .at_field("entries[" + std::to_string(index) + "].id_len", at, id_len, kMaxEntryIdBytes)
      .at_entry(index, {});
}

// One entry record (offset, size, id_len, id). The field names ("entry 3
// size") only go into the Truncated error of a short read, so they are built
// only for a read that will fail: a good table is parsed for every bundle of
// an image, twice (scan and read), and naming every field up front was a
// measurable part of `coload select` on a 128-bundle image.
Expected<RawEntry> read_record(detail::Cursor& cursor, std::uint64_t index) {
  auto name = [index](std::string_view field) { return "entry " + std::to_string(index) + " " + std::string(field); };
  auto u64 = [&](std::string_view field) {
    return cursor.remaining() >= sizeof(std::uint64_t) ? cursor.u64(field) : cursor.u64(name(field));
  };
  auto offset = u64("offset");
  COLOAD_RETURN_IF_ERROR(offset);
  auto size = u64("size");
  COLOAD_RETURN_IF_ERROR(size);
  const std::uint64_t id_len_at = cursor.position();
  auto id_len = u64("id_len");
  COLOAD_RETURN_IF_ERROR(id_len);
  COLOAD_RETURN_IF_ERROR(check_id_len(*id_len, index, id_len_at));
  auto id = cursor.remaining() >= *id_len ? cursor.take("id", *id_len) : cursor.take(name("id"), *id_len);
  COLOAD_RETURN_IF_ERROR(id);
  return RawEntry{*offset, *size, detail::as_chars(*id)};
}

}  // namespace

Expected<PlainBundle> parse_plain_bundle(std::span<const std::byte> bytes) {
  return detail::parse_plain_bundle_prefix(bytes, bytes.size());
}

Expected<PlainBundle> detail::parse_plain_bundle_prefix(std::span<const std::byte> bytes, std::uint64_t extent) {
  detail::Cursor cursor(bytes, "plain bundle header");
  auto magic = cursor.take("magic", kPlainBundleMagic.size());
  COLOAD_RETURN_IF_ERROR(magic);
  if (detail::as_chars(*magic) != kPlainBundleMagic) {
    return Error(ErrorKind::BadMagic, "plain bundle header: offset 0x0 does not hold __CLANG_OFFLOAD_BUNDLE__")
        .at_field("magic", 0);
  }
  auto count = cursor.u64("num_entries");
  COLOAD_RETURN_IF_ERROR(count);
  if (*count > kMaxBundleEntries) {
    return Error(ErrorKind::LimitExceeded, "plain bundle header: num_entries " + hex(*count) +
                                               " at offset 0x18 exceeds the " + hex(kMaxBundleEntries) +
                                               " entries a bundle may list")
        .at_field("num_entries", kPlainBundleMagic.size(), *count, kMaxBundleEntries);
  }
  std::uint64_t follow = extent - cursor.position();
  if (*count > follow / kEntryRecordMinSize) {
    return Error(ErrorKind::Truncated, "plain bundle header: num_entries " + hex(*count) +
                                           " at offset 0x18 needs at least 24 bytes per entry, only " + hex(follow) +
                                           " bytes follow")
        .at_field("num_entries", kPlainBundleMagic.size(), *count, follow / kEntryRecordMinSize);
  }

  // Records first (their IDs raw), then the checks that need the header's
  // size: one vector, filled in place.
  PlainBundle bundle;
  // Bounded by the bytes at hand, not the extent: a prefix's count may
  // promise records that are not in it, which fail Truncated below.
  bundle.entries.reserve(std::min<std::uint64_t>(*count, cursor.remaining() / kEntryRecordMinSize));
  for (std::uint64_t i = 0; i < *count; ++i) {
    // A record wholly at hand (every record of a good table) is read in one
    // step; read_record's field-by-field reads name the field that runs short.
    Bytes rest = cursor.rest();
    if (rest.size() >= kEntryRecordMinSize) {
      auto id_len = detail::load_le<std::uint64_t>(rest.data() + 16);
      if (id_len <= rest.size() - kEntryRecordMinSize && id_len <= kMaxEntryIdBytes) {
        bundle.entries.push_back(BundleEntry{.id = detail::as_chars(rest.subspan(kEntryRecordMinSize, id_len)),
                                             .offset = detail::load_le<std::uint64_t>(rest.data()),
                                             .size = detail::load_le<std::uint64_t>(rest.data() + 8)});
        cursor.advance(kEntryRecordMinSize + id_len);
        continue;
      }
    }
    auto record = read_record(cursor, i);
    COLOAD_RETURN_IF_ERROR(record);
    bundle.entries.push_back(BundleEntry{.id = record->id, .offset = record->offset, .size = record->size});
  }
  bundle.header_size = cursor.position();
  bundle.size = bundle.header_size;
  const char* base = reinterpret_cast<const char*>(bytes.data());
  for (std::size_t i = 0; i < bundle.entries.size(); ++i) {
    BundleEntry& entry = bundle.entries[i];
    auto id = check_id(entry.id, i, static_cast<std::uint64_t>(entry.id.data() - base));
    COLOAD_RETURN_IF_ERROR(id);
    entry.id = *id;
    if (auto end = detail::checked_add(entry.offset, entry.size); !end || *end > extent) {
      auto in_range = detail::check_range({}, entry.offset, entry.size, extent, "the input");
      if (!in_range)
        return std::move(in_range)
            .error()
            .at_field("entries[" + std::to_string(i) + "].offset", std::nullopt, entry.offset, extent)
            .at_entry(i, *id);
    }
    if (entry.size > 0 && entry.offset < bundle.header_size) {
      return Error(ErrorKind::Malformed, "offset " + hex(entry.offset) + " lies inside the bundle header (" +
                                             hex(bundle.header_size) + " bytes)")
          .at_field("entries[" + std::to_string(i) + "].offset", std::nullopt, entry.offset, bundle.header_size)
          .at_entry(i, *id);
    }
    bundle.size = std::max(bundle.size, entry.offset + entry.size);
    entry.is_host = id->starts_with("host-");
    if (entry.offset + entry.size <= bytes.size()) entry.bytes = bytes.subspan(entry.offset, entry.size);
  }
  return bundle;
}

}  // namespace coload
