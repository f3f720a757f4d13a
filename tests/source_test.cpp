#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>

#include "coload/detail/source.h"
#include "common/bytes.h"
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

// map_file asks for O_NOATIME, which the kernel grants only to the file's
// owner: a file of another user is opened again without it.
TEST(Source, MapsAFileOfAnotherUser) {
  if (geteuid() != 0) {  // any root-owned file will do
    struct stat info{};
    ASSERT_EQ(stat("/etc/passwd", &info), 0);
    ASSERT_NE(info.st_uid, geteuid());
    auto source = Source::map_file("/etc/passwd");
    ASSERT_TRUE(Succeeds(source));
    EXPECT_EQ(source->bytes().size(), static_cast<std::size_t>(info.st_size));
    return;
  }
  // As root (CAP_FOWNER passes the check): a child that gives up root reads a root-owned file.
  auto path = std::filesystem::temp_directory_path() / "coload_source_other_user.bin";
  Bytes content = testing::to_bytes("__CLANG_OFFLOAD_BUNDLE__ owned by root");
  testing::write_file(path.string(), content);
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    constexpr uid_t kNobody = 65534;
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    int refused = open(path.c_str(), O_RDONLY | O_NOATIME);
    if (refused >= 0 || errno != EPERM) _exit(3);  // what the test rests on
    auto source = Source::map_file(path.string());
    _exit(source && source->bytes().size() == content.size() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  std::filesystem::remove(path);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: could not drop root, 3: O_NOATIME was not refused, 1: map_file failed";
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
  EXPECT_EQ(unknown.error().location().field, "magic");
  EXPECT_EQ(unknown.error().location().offset, std::optional<std::uint64_t>(0));
  EXPECT_NE(unknown.error().detail().find("4d 5a 90 01"), std::string::npos);  // the bytes found
  EXPECT_TRUE(FailsWith(inspect_source({}), ErrorKind::Truncated));
  auto prefix = inspect_source(testing::to_bytes("__CLANG_OFF"));
  ASSERT_TRUE(FailsWith(prefix, ErrorKind::Truncated));
  EXPECT_EQ(prefix.error().location().field, "magic");
  EXPECT_EQ(prefix.error().location().value, std::optional<std::uint64_t>(11));
  EXPECT_EQ(prefix.error().location().limit, std::optional<std::uint64_t>(24));
  auto ccob = inspect_source(testing::to_bytes("CC"));
  ASSERT_TRUE(FailsWith(ccob, ErrorKind::Truncated));
  EXPECT_EQ(ccob.error().location().value, std::optional<std::uint64_t>(2));
  EXPECT_EQ(ccob.error().location().limit, std::optional<std::uint64_t>(4));
}

TEST(InspectSource, ThirtyTwoBitElfIsRefused) {
  Bytes elf(64);
  auto magic = testing::to_bytes(
      "\x7f"
      "ELF");
  std::copy(magic.begin(), magic.end(), elf.begin());
  elf[4] = std::byte{1};  // ELFCLASS32
  elf[5] = std::byte{1};
  auto refused = inspect_source(elf);
  ASSERT_TRUE(FailsWith(refused, ErrorKind::Malformed));
  EXPECT_EQ(refused.error().location().field, "EI_CLASS");
  EXPECT_EQ(refused.error().location().offset, std::optional<std::uint64_t>(4));
  EXPECT_EQ(refused.error().location().value, std::optional<std::uint64_t>(1));
}

// Host images edited through their section header table: `edit` sees the
// headers (64 bytes each) and may change or append them; the new table goes
// at the end of the file, after `append`.
Bytes with_section_headers(Bytes elf, Bytes append,
                           const std::function<void(const Bytes& elf, std::vector<Bytes>& headers)>& edit) {
  auto u64 = [&](std::size_t at) { return detail::load_le<std::uint64_t>(elf.data() + at); };
  auto u16 = [&](std::size_t at) { return detail::load_le<std::uint16_t>(elf.data() + at); };
  const std::uint64_t shoff = u64(40);
  const std::uint16_t shnum = u16(60);
  std::vector<Bytes> headers;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    headers.emplace_back(elf.begin() + shoff + 64 * i, elf.begin() + shoff + 64 * (i + 1));
  }
  edit(elf, headers);
  testing::append(elf, append);
  testing::pad_to(elf, 8);
  const std::uint64_t table = elf.size();
  for (const Bytes& header : headers) testing::append(elf, header);
  testing::store_le(std::span(elf).subspan(40, 8), table, 8);
  testing::store_le(std::span(elf).subspan(60, 2), headers.size(), 2);
  return elf;
}

std::uint32_t header_u32(const Bytes& header, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, header.data() + at, 4);
  return v;
}

TEST(HostImageLimits, SectionHeadersSharingARelocationTableAreRefused) {
  Bytes image = testing::read_file(std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels.so");
  // Headers of a RELA table over the whole file: each one, walked, visits the file's worth of entries.
  Bytes shared = with_section_headers(image, {}, [](const Bytes& elf, std::vector<Bytes>& headers) {
    std::optional<Bytes> rela;
    for (const Bytes& header : headers) {
      if (header_u32(header, 4) == 4) rela = header;  // SHT_RELA
    }
    ASSERT_TRUE(rela.has_value());
    testing::store_le(std::span(*rela).subspan(24, 8), 0, 8);                     // sh_offset
    testing::store_le(std::span(*rela).subspan(32, 8), elf.size() / 24 * 24, 8);  // sh_size
    for (int i = 0; i < 4; ++i) headers.push_back(*rela);
  });
  auto layout = inspect_source(shared);
  ASSERT_TRUE(FailsWith(layout, ErrorKind::LimitExceeded));
  const ErrorLocation& at = layout.error().location();
  EXPECT_EQ(at.field, "SHT_RELA entries");
  EXPECT_EQ(at.offset, std::optional<std::uint64_t>(0));                  // the shared table's sh_offset
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(shared.size() / 24));  // the file's worth of Elf64_Rela
  ASSERT_TRUE(at.value.has_value());
  EXPECT_GT(*at.value, *at.limit);
  ASSERT_TRUE(Succeeds(inspect_source(image)));
}

// .hip_fatbin's section header edited by `edit`: the error names the field
// of that header by its file offset.
TEST(HostImageLimits, AFatbinSectionWithoutContentsNamesItsSectionHeaderField) {
  Bytes image = testing::read_file(std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels.so");
  auto layout = inspect_source(image);
  ASSERT_TRUE(Succeeds(layout));
  auto u64 = [](const Bytes& bytes, std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  std::size_t fatbin = 0;  // its index in the section header table
  auto edited = [&](std::size_t at, std::uint64_t value, int size) {
    return with_section_headers(image, {}, [&](const Bytes&, std::vector<Bytes>& headers) {
      for (std::size_t i = 0; i < headers.size(); ++i) {
        if (u64(headers[i], 24) != layout->region_offset || u64(headers[i], 32) != layout->region_size) continue;
        fatbin = i;
        testing::store_le(std::span(headers[i]).subspan(at, size), value, size);
      }
    });
  };
  Bytes past = edited(24, image.size(), 8);  // sh_offset: the end of the file
  auto moved = inspect_source(past);
  ASSERT_TRUE(FailsWith(moved, ErrorKind::OutOfBounds));
  EXPECT_EQ(moved.error().location().field, ".hip_fatbin.sh_offset");
  EXPECT_EQ(moved.error().location().offset, std::optional<std::uint64_t>(u64(past, 40) + 64 * fatbin + 24));
  EXPECT_EQ(moved.error().location().value, std::optional<std::uint64_t>(image.size()));
  EXPECT_EQ(moved.error().location().limit, std::optional<std::uint64_t>(past.size()));

  Bytes nobits = edited(4, 8, 4);  // sh_type: SHT_NOBITS
  auto empty = inspect_source(nobits);
  ASSERT_TRUE(FailsWith(empty, ErrorKind::Malformed));
  EXPECT_EQ(empty.error().location().field, ".hip_fatbin.sh_type");
  EXPECT_EQ(empty.error().location().offset, std::optional<std::uint64_t>(u64(nobits, 40) + 64 * fatbin + 4));
  EXPECT_EQ(empty.error().location().value, std::optional<std::uint64_t>(8));
}

TEST(HostImageLimits, WrapperWarningsPastSixteenAreCounted) {
  Bytes image = testing::read_file(std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels.so");
  const std::uint64_t records_at = (image.size() + 7) / 8 * 8;
  Bytes records(100 * 24, std::byte{0xaa});  // 100 wrappers without the HIPF magic
  Bytes padded(records_at - image.size());
  testing::append(padded, records);
  Bytes edited = with_section_headers(image, padded, [&](const Bytes& elf, std::vector<Bytes>& headers) {
    std::uint16_t names = 0;
    std::uint64_t strings = 0;
    std::memcpy(&names, elf.data() + 62, 2);  // e_shstrndx
    std::memcpy(&strings, headers.at(names).data() + 24, 8);
    for (Bytes& header : headers) {
      const char* name = reinterpret_cast<const char*>(elf.data() + strings + header_u32(header, 0));
      if (std::string_view(name) != ".hipFatBinSegment") continue;
      testing::store_le(std::span(header).subspan(24, 8), records_at, 8);      // sh_offset
      testing::store_le(std::span(header).subspan(32, 8), records.size(), 8);  // sh_size
    }
  });
  auto layout = inspect_source(edited);
  ASSERT_TRUE(Succeeds(layout));
  ASSERT_EQ(layout->warnings.size(), 17u);
  EXPECT_NE(layout->warnings.front().find("is not HIPF"), std::string::npos) << layout->warnings.front();
  EXPECT_EQ(layout->warnings.back(), "and 84 more such warnings");
}

// libkernels.so (lld -shared) with the RELATIVE relocations of its wrapper
// pointers rewritten as R_X86_64_64 against a .dynsym symbol, as a linker
// writes them when the bundle's symbol is a preemptible global: the addend
// becomes the address minus the symbol's value (or, with `undefine`, the
// symbol is made undefined).
Bytes with_symbol_relocations(bool undefine) {
  Bytes elf = testing::read_file(std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels.so");
  auto u64 = [&](std::size_t at) { return detail::load_le<std::uint64_t>(elf.data() + at); };
  auto u32 = [&](std::size_t at) { return detail::load_le<std::uint32_t>(elf.data() + at); };
  auto u16 = [&](std::size_t at) { return detail::load_le<std::uint16_t>(elf.data() + at); };
  const std::uint64_t shoff = u64(40);
  const std::uint16_t shnum = u16(60);
  auto header = [&](std::size_t i) { return shoff + 64 * i; };
  const char* names = reinterpret_cast<const char*>(elf.data() + u64(header(u16(62)) + 24));
  std::uint64_t segment = 0, dynsym = 0, dynsym_size = 0, rela = 0, rela_size = 0;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::string_view name = names + u32(header(i));
    if (name == ".hipFatBinSegment") segment = u64(header(i) + 16);  // sh_addr
    if (name == ".dynsym") dynsym = u64(header(i) + 24), dynsym_size = u64(header(i) + 32);
    if (name == ".rela.dyn") rela = u64(header(i) + 24), rela_size = u64(header(i) + 32);
  }
  EXPECT_TRUE(segment && dynsym && rela);
  std::uint32_t symbol = 0;  // the first defined one (Elf64_Sym: st_shndx at 6, st_value at 8)
  for (std::uint32_t i = 1; i < dynsym_size / 24 && !symbol; ++i) {
    if (u16(dynsym + 24 * i + 6) != 0) symbol = i;
  }
  EXPECT_NE(symbol, 0u);
  const std::uint64_t value = u64(dynsym + 24 * symbol + 8);
  if (undefine) testing::store_le(std::span(elf).subspan(dynsym + 24 * symbol + 6, 2), 0, 2);
  int rewritten = 0;
  for (std::uint64_t at = rela; at < rela + rela_size; at += 24) {  // Elf64_Rela: r_offset, r_info, r_addend
    const std::uint64_t offset = u64(at);
    if (offset < segment || (offset - segment) % 24 != 8 || u64(at + 8) != 8) continue;          // R_X86_64_RELATIVE
    testing::store_le(std::span(elf).subspan(at + 8, 8), (std::uint64_t{symbol} << 32) | 1, 8);  // R_X86_64_64
    testing::store_le(std::span(elf).subspan(at + 16, 8), u64(at + 16) - value, 8);
    ++rewritten;
  }
  EXPECT_EQ(rewritten, 3);  // one wrapper per translation unit
  return elf;
}

TEST(HostImage, AWrapperPointerRelocatedAgainstADefinedSymbolIsThatSymbolPlusItsAddend) {
  Bytes image = testing::read_file(std::string(COLOAD_FIXTURE_DIR) + "/host/libkernels.so");
  auto relative = inspect_source(image);
  ASSERT_TRUE(Succeeds(relative));
  auto symbolic = inspect_source(with_symbol_relocations(false));
  ASSERT_TRUE(Succeeds(symbolic));
  EXPECT_EQ(symbolic->wrapper_offsets, relative->wrapper_offsets);
  EXPECT_EQ(symbolic->wrapper_offsets.size(), 3u);
  EXPECT_TRUE(symbolic->warnings.empty()) << symbolic->warnings.front();
}

TEST(HostImage, AWrapperPointerRelocatedAgainstAnUndefinedSymbolIsSkippedSayingSo) {
  auto layout = inspect_source(with_symbol_relocations(true));
  ASSERT_TRUE(Succeeds(layout));
  EXPECT_TRUE(layout->wrapper_offsets.empty());  // the region is walked instead
  ASSERT_EQ(layout->warnings.size(), 3u);
  EXPECT_NE(layout->warnings.front().find("relocation against an undefined symbol"), std::string::npos)
      << layout->warnings.front();
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
  EXPECT_EQ(past.error().location().field, "read");
  EXPECT_EQ(past.error().location().offset, std::optional<std::uint64_t>(11));
  EXPECT_EQ(past.error().location().value, std::optional<std::uint64_t>(1));
  EXPECT_EQ(past.error().location().limit, std::optional<std::uint64_t>(10));
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
