#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "coload/source.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::FailsWith;
using testing::Succeeds;

TEST(Source, MapsAFileWithoutCopying) {
  auto path = std::filesystem::temp_directory_path() / "coload_source_test.bin";
  Bytes content = testing::to_bytes("__CLANG_OFFLOAD_BUNDLE__ and more");
  testing::write_file(path.string(), content);
  auto source = Source::map_file(path.string());
  ASSERT_TRUE(Succeeds(source));
  EXPECT_EQ(Bytes(source->bytes().begin(), source->bytes().end()), content);
  EXPECT_EQ(source->name(), path.string());
  Source moved = std::move(*source);
  EXPECT_EQ(moved.bytes().size(), content.size());
  EXPECT_TRUE(source->bytes().empty());
  std::filesystem::remove(path);
}

TEST(Source, MissingFileIsIoNamingThePath) {
  auto source = Source::map_file("/nonexistent/coload.so");
  ASSERT_TRUE(FailsWith(source, ErrorKind::Io));
  EXPECT_NE(source.error().message().find("/nonexistent/coload.so"), std::string::npos);
  EXPECT_TRUE(FailsWith(Source::map_file("/"), ErrorKind::Io));
}

TEST(Source, BorrowViewsTheCallersBuffer) {
  Bytes buffer = testing::to_bytes("CCOB");
  Source source = Source::borrow(buffer, "buffer");
  EXPECT_EQ(source.bytes().data(), buffer.data());
}

TEST(InspectSource, ClassifiesByLeadingMagic) {
  auto plain = inspect_source(testing::to_bytes("__CLANG_OFFLOAD_BUNDLE__xxxxxxxx"));
  ASSERT_TRUE(Succeeds(plain));
  EXPECT_EQ(plain->kind, SourceKind::BundleFile);
  EXPECT_EQ(plain->region_size, 32u);
  auto compressed = inspect_source(testing::to_bytes("CCOB...."));
  ASSERT_TRUE(Succeeds(compressed));
  EXPECT_EQ(compressed->kind, SourceKind::BundleFile);
}

TEST(InspectSource, UnknownBytesAreBadMagicAndPrefixesTruncated) {
  auto unknown = inspect_source(testing::to_bytes("MZ\x90\x01 not a fat binary"));
  ASSERT_TRUE(FailsWith(unknown, ErrorKind::BadMagic));
  EXPECT_NE(unknown.error().message().find("4d 5a 90 01"), std::string::npos);
  EXPECT_TRUE(FailsWith(inspect_source({}), ErrorKind::Truncated));
  EXPECT_TRUE(FailsWith(inspect_source(testing::to_bytes("__CLANG_OFF")), ErrorKind::Truncated));
  EXPECT_TRUE(FailsWith(inspect_source(testing::to_bytes("CC")), ErrorKind::Truncated));
}

TEST(InspectSource, ThirtyTwoBitElfIsRefused) {
  Bytes elf(64);
  auto magic = testing::to_bytes("\x7f" "ELF");
  std::copy(magic.begin(), magic.end(), elf.begin());
  elf[4] = std::byte{1};  // ELFCLASS32
  elf[5] = std::byte{1};
  EXPECT_TRUE(FailsWith(inspect_source(elf), ErrorKind::Malformed));
}

}  // namespace
}  // namespace coload
