#include <gtest/gtest.h>

#include "coload/bundle.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::FailsWith;
using testing::Succeeds;

Bytes payload(std::size_t size, std::uint8_t seed) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = std::byte(static_cast<std::uint8_t>(seed + i * 7));
  return bytes;
}

std::vector<testing::Entry> three_entries() {
  return {{"host-x86_64-unknown-linux-gnu-", {}},
          {"hipv4-amdgcn-amd-amdhsa--gfx1030", payload(3400, 1)},
          {"hipv4-amdgcn-amd-amdhsa--gfx90a", payload(4232, 2)}};
}

TEST(PlainBundle, ReadsEntriesAsViewsIntoTheInput) {
  Bytes bundle = testing::write_plain_bundle(three_entries(), 4096);
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(Succeeds(parsed));
  ASSERT_EQ(parsed->entries.size(), 3u);
  EXPECT_EQ(parsed->size, bundle.size());
  EXPECT_EQ(parsed->size, 0x2000u + 4232u);  // the example of docs/format.md ends there
  EXPECT_EQ(parsed->header_size, testing::plain_bundle_header_size(three_entries()));

  const BundleEntry& host = parsed->entries[0];
  EXPECT_EQ(host.id, "host-x86_64-unknown-linux-gnu-");
  EXPECT_TRUE(host.is_host);
  EXPECT_EQ(host.offset, 0x1000u);  // a size-0 entry shares the next entry's offset
  EXPECT_EQ(host.size, 0u);

  const BundleEntry& gfx90a = parsed->entries[2];
  EXPECT_EQ(gfx90a.id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_FALSE(gfx90a.is_host);
  EXPECT_EQ(gfx90a.offset, 0x2000u);
  EXPECT_EQ(gfx90a.bytes.data(), bundle.data() + 0x2000);  // a view, not a copy
  EXPECT_TRUE(std::equal(gfx90a.bytes.begin(), gfx90a.bytes.end(), payload(4232, 2).begin()));
}

TEST(PlainBundle, ReadsUnalignedEntriesAndBundlesWithoutHost) {
  std::vector<testing::Entry> entries = {{"hipv4-amdgcn-amd-amdhsa--gfx90a", payload(141, 3)},
                                         {"hipv4-amdgcn-amd-amdhsa--gfx942", payload(97, 4)}};
  Bytes bundle = testing::write_plain_bundle(entries, 1);
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(Succeeds(parsed));
  ASSERT_EQ(parsed->entries.size(), 2u);
  EXPECT_EQ(parsed->entries[0].offset, parsed->header_size);
  EXPECT_EQ(parsed->entries[1].offset, parsed->header_size + 141);
  EXPECT_EQ(parsed->size, bundle.size());
}

TEST(PlainBundle, TheEndIsTheLargestEntryEndWhateverTheOrder) {
  // Host last points at the end; a payload listed first may sit last.
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x2000, 0x100),
                 testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx1030", 0x1000, 0x80),
                 testing::raw_entry("host-x86_64-unknown-linux-gnu-", 0x2100, 0)};
  Bytes bundle = testing::write_raw_bundle_header(raw);
  testing::place(bundle, 0x2000, payload(0x100, 5));
  testing::place(bundle, 0x1000, payload(0x80, 6));
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(Succeeds(parsed));
  EXPECT_EQ(parsed->size, 0x2100u);
}

TEST(PlainBundle, ToleratesTrailingNulInIdsAndKeepsDuplicates) {
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry(std::string("hipv4-amdgcn-amd-amdhsa--gfx90a\0\0", 33), 0x1000, 4),
                 testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1004, 4)};
  Bytes bundle = testing::write_raw_bundle_header(raw);
  testing::place(bundle, 0x1000, payload(8, 7));
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(Succeeds(parsed));
  ASSERT_EQ(parsed->entries.size(), 2u);
  EXPECT_EQ(parsed->entries[0].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(parsed->entries[1].id, parsed->entries[0].id);
}

TEST(PlainBundle, EmptyTableIsABundleOfNothing) {
  testing::RawBundle raw;
  Bytes bundle = testing::write_raw_bundle_header(raw);
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(Succeeds(parsed));
  EXPECT_TRUE(parsed->entries.empty());
  EXPECT_EQ(parsed->size, 32u);
}

TEST(PlainBundle, RejectsWrongMagic) {
  Bytes bundle = testing::write_plain_bundle(three_entries());
  bundle[3] = std::byte{'X'};
  EXPECT_TRUE(FailsWith(parse_plain_bundle(bundle), ErrorKind::BadMagic));
}

TEST(PlainBundle, EntryPastTheEndNamesEntryOffsetAndSize) {
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1000, 0x8000)};
  Bytes bundle = testing::write_raw_bundle_header(raw);
  testing::place(bundle, 0x1000, payload(0x100, 8));
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::OutOfBounds));
  EXPECT_EQ(parsed.error().location().field, "entries[0].offset");
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(0x1000));
  EXPECT_EQ(parsed.error().location().limit, std::optional<std::uint64_t>(0x1100));
  EXPECT_EQ(parsed.error().location().entry, std::optional<std::size_t>(0));
  EXPECT_EQ(parsed.error().location().entry_id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(parsed.error().detail(), "offset 0x1000 + size 0x8000 runs past the end of the input (0x1100 bytes)");
}

TEST(PlainBundle, OffsetPlusSizeOverflowIsOverflow) {
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0xffffffffffffff00ull, 0x200)};
  Bytes bundle = testing::write_raw_bundle_header(raw);
  EXPECT_TRUE(FailsWith(parse_plain_bundle(bundle), ErrorKind::Overflow));
}

TEST(PlainBundle, HugeEntryCountFailsBeforeAllocating) {
  testing::RawBundle raw;
  raw.num_entries = 0x0fffffffffffffffull;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1000, 0)};
  auto parsed = parse_plain_bundle(testing::write_raw_bundle_header(raw));
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::LimitExceeded));
  EXPECT_EQ(parsed.error().location().field, "num_entries");
  EXPECT_EQ(parsed.error().location().offset, std::optional<std::uint64_t>(0x18));
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(0x0fffffffffffffffull));
  EXPECT_EQ(parsed.error().location().limit, std::optional<std::uint64_t>(kMaxBundleEntries));
}

TEST(PlainBundle, EntryCountPastTheBytesIsTruncated) {
  testing::RawBundle raw;
  raw.num_entries = 1000;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1000, 0)};
  auto parsed = parse_plain_bundle(testing::write_raw_bundle_header(raw));
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::Truncated));
  EXPECT_EQ(parsed.error().location().field, "num_entries");
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(1000));
  EXPECT_EQ(parsed.error().location().limit, std::optional<std::uint64_t>(0x37 / 24));
}

// Within the bytes at hand, but past what any toolchain writes: each parsed
// entry costs far more than its record, so the count itself is the limit.
TEST(PlainBundle, MoreEntriesThanABundleMayListIsLimitExceeded) {
  auto table_of = [](std::uint64_t count) {
    testing::RawBundle raw;
    raw.entries.assign(count, testing::raw_entry("x", 0, 0));
    return testing::write_raw_bundle_header(raw);
  };
  auto most = parse_plain_bundle(table_of(kMaxBundleEntries));
  ASSERT_TRUE(Succeeds(most));
  EXPECT_EQ(most->entries.size(), kMaxBundleEntries);
  auto parsed = parse_plain_bundle(table_of(kMaxBundleEntries + 1));
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::LimitExceeded));
  EXPECT_EQ(parsed.error().location().field, "num_entries");
  EXPECT_EQ(parsed.error().location().offset, std::optional<std::uint64_t>(0x18));
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(kMaxBundleEntries + 1));
  EXPECT_EQ(parsed.error().location().limit, std::optional<std::uint64_t>(kMaxBundleEntries));
}

TEST(PlainBundle, IdLengthPastTheLimitIsLimitExceeded) {
  testing::RawBundle raw;
  testing::RawEntry entry = testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1000, 0);
  entry.id_len = 0xffffffffffffull;
  raw.entries = {entry};
  auto parsed = parse_plain_bundle(testing::write_raw_bundle_header(raw));
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::LimitExceeded));
  EXPECT_EQ(parsed.error().location().field, "entries[0].id_len");
  EXPECT_EQ(parsed.error().location().offset, std::optional<std::uint64_t>(0x30));
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(0xffffffffffffull));
  EXPECT_EQ(parsed.error().location().limit, std::optional<std::uint64_t>(kMaxEntryIdBytes));
  EXPECT_EQ(parsed.error().location().entry, std::optional<std::size_t>(0));
  EXPECT_EQ(parsed.error().location().entry_id, "");  // not read yet
  // The longest allowed ID reads; one byte more, even with every byte present, does not.
  for (std::uint64_t length : {kMaxEntryIdBytes, kMaxEntryIdBytes + 1}) {
    raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a" + std::string(length - 31, 'x'), 0, 0)};
    auto read = parse_plain_bundle(testing::write_raw_bundle_header(raw));
    if (length == kMaxEntryIdBytes) {
      ASSERT_TRUE(Succeeds(read));
      EXPECT_EQ(read->entries.at(0).id.size(), length);
    } else {
      EXPECT_TRUE(FailsWith(read, ErrorKind::LimitExceeded));
    }
  }
}

TEST(PlainBundle, IdLengthPastTheBytesIsTruncated) {
  testing::RawBundle raw;
  testing::RawEntry entry = testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x1000, 0);
  entry.id_len = 0x100;
  raw.entries = {entry};
  auto parsed = parse_plain_bundle(testing::write_raw_bundle_header(raw));
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::Truncated));
  EXPECT_EQ(parsed.error().location().field, "entry 0 id");
  EXPECT_EQ(parsed.error().location().offset, std::optional<std::uint64_t>(0x38));
}

TEST(PlainBundle, PayloadInsideTheHeaderIsMalformed) {
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 8, 16)};
  EXPECT_TRUE(FailsWith(parse_plain_bundle(testing::write_raw_bundle_header(raw)), ErrorKind::Malformed));
}

TEST(PlainBundle, ControlBytesInAnIdAreMalformed) {
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn\x01-amd-amdhsa--gfx90a", 0x100, 0)};
  Bytes bundle = testing::write_raw_bundle_header(raw);
  testing::place(bundle, 0xff, payload(1, 0));
  auto parsed = parse_plain_bundle(bundle);
  ASSERT_TRUE(FailsWith(parsed, ErrorKind::Malformed));
  EXPECT_EQ(parsed.error().location().field, "entries[0].id");
  EXPECT_EQ(parsed.error().location().value, std::optional<std::uint64_t>(1));
  EXPECT_EQ(parsed.error().location().offset, std::optional<std::uint64_t>(0x38 + 12));
}

TEST(PlainBundle, NoPrefixOfABundleIsAccepted) {
  Bytes bundle = testing::write_plain_bundle(three_entries(), 4096);
  auto header_size = testing::plain_bundle_header_size(three_entries());
  for (std::size_t length = 0; length < bundle.size(); ++length) {
    auto parsed = parse_plain_bundle(std::span<const std::byte>(bundle).first(length));
    // Cut inside the header or table: truncated; cut inside a payload: the
    // entry runs past the end of what is there.
    ErrorKind expected = length < header_size ? ErrorKind::Truncated : ErrorKind::OutOfBounds;
    ASSERT_TRUE(FailsWith(parsed, expected)) << "prefix of " << length << " bytes";
  }
  EXPECT_TRUE(Succeeds(parse_plain_bundle(bundle)));
}

}  // namespace
}  // namespace coload
