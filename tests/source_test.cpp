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


// A file of `size` bytes whose byte i is i % 251, mapped.
struct MappedFile {
  explicit MappedFile(std::uint64_t size, const char* name) : path(std::filesystem::temp_directory_path() / name) {
    Bytes content(size);
    for (std::uint64_t i = 0; i < size; ++i) content[i] = std::byte(i % 251);
    testing::write_file(path.string(), content);
  }
  ~MappedFile() { std::filesystem::remove(path); }
  std::filesystem::path path;
};

TEST(SourceReader, ViewsABorrowedBufferAndClipsAtTheEnd) {
  Bytes buffer = testing::to_bytes("0123456789");
  Source source = Source::borrow(buffer, "buffer");
  SourceReader reader = source.reader();
  EXPECT_FALSE(reader.copies());
  std::vector<std::byte> scratch;
  auto middle = reader.read(2, 4, scratch);
  ASSERT_TRUE(Succeeds(middle));
  EXPECT_EQ(middle->data(), buffer.data() + 2);
  EXPECT_EQ(middle->size(), 4u);
  EXPECT_TRUE(scratch.empty());
  auto tail = reader.read(8, 100, scratch);
  ASSERT_TRUE(Succeeds(tail));
  EXPECT_EQ(tail->size(), 2u);
  auto at_end = reader.read(10, 1, scratch);
  ASSERT_TRUE(Succeeds(at_end));
  EXPECT_TRUE(at_end->empty());
  auto past = reader.read(11, 1, scratch);
  ASSERT_TRUE(FailsWith(past, ErrorKind::OutOfBounds));
  EXPECT_NE(past.error().message().find("0xb"), std::string::npos);
}

TEST(SourceReader, SmallFilesAreViewedLargeFilesCopiedUpToTheCopyLimit) {
  MappedFile small(Source::kKeepOpenAbove, "coload_reader_small.bin");
  auto small_source = Source::map_file(small.path.string());
  ASSERT_TRUE(Succeeds(small_source));
  EXPECT_FALSE(small_source->reader().copies());

  MappedFile large(Source::kKeepOpenAbove + 1, "coload_reader_large.bin");
  auto source = Source::map_file(large.path.string());
  ASSERT_TRUE(Succeeds(source));
  SourceReader reader = source->reader();
  ASSERT_TRUE(reader.copies());
  std::vector<std::byte> scratch;
  auto piece = reader.read(1000, 64, scratch);
  ASSERT_TRUE(Succeeds(piece));
  EXPECT_EQ(piece->data(), scratch.data());  // copied, the mapping untouched
  ASSERT_EQ(piece->size(), 64u);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ((*piece)[i], std::byte((1000 + i) % 251)) << i;
  auto big = reader.read(0, SourceReader::kMaxCopy + 1, scratch);
  ASSERT_TRUE(Succeeds(big));
  EXPECT_EQ(big->data(), source->bytes().data());  // a view past the copy limit

  // A reader keeps the file open after its Source has moved.
  Source moved = std::move(*source);
  auto again = reader.read(Source::kKeepOpenAbove, 1, scratch);
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ((*again)[0], std::byte(Source::kKeepOpenAbove % 251));
}

TEST(SourceReader, AFileShrunkAfterMappingIsAnIoErrorNotACrash) {
  MappedFile file(2 * Source::kKeepOpenAbove, "coload_reader_shrunk.bin");
  auto source = Source::map_file(file.path.string());
  ASSERT_TRUE(Succeeds(source));
  std::filesystem::resize_file(file.path, Source::kKeepOpenAbove);
  std::vector<std::byte> scratch;
  auto read = source->reader().read(Source::kKeepOpenAbove + 4096, 64, scratch);
  ASSERT_TRUE(FailsWith(read, ErrorKind::Io));
  EXPECT_NE(read.error().message().find("shorter than when it was mapped"), std::string::npos);
}

}  // namespace
}  // namespace coload
