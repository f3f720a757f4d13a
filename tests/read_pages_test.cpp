// A large CCOB streamed out of a file coload mapped gives its payload's pages
// back as the decoder reads them (io/read_pages.h); memory coload did
// not map is never advised.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "io/read_pages.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::CcobMethod;
using testing::Succeeds;

constexpr std::uint32_t kGfx90a = 0x3f, kGfx942 = 0x4c;
constexpr std::size_t kEntrySize = std::size_t{6} << 20;

// How the payload is written: decoded in place (the bundler's single-segment
// zstd frame), through libzstd's window, or by zlib.
enum class Payload { ZstdWhole, ZstdWindowed, Zlib };

// Incompressible after its ELF header, so the payload is as large as the entry.
Bytes random_entry(std::uint32_t e_flags, std::uint64_t seed) {
  Bytes bytes = testing::amdgpu_elf_header(e_flags);
  std::mt19937_64 random(seed);
  while (bytes.size() < kEntrySize) {
    std::uint64_t word = random();
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>(word >> (8 * i)));
  }
  return bytes;
}

struct LargeCcob {
  Bytes gfx90a = random_entry(kGfx90a, 1);
  Bytes gfx942 = random_entry(kGfx942, 2);
  Bytes ccob;
  std::filesystem::path path;

  // The file is the process's own: ctest runs each instance in a process of its own, two at once.
  explicit LargeCcob(Payload payload, const char* name)
      : path(std::filesystem::temp_directory_path() /
             (std::string(name) + "." + std::to_string(::getpid()) + "." + std::to_string(static_cast<int>(payload)))) {
    Bytes plain = testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu", {}},
                                               {"hipv4-amdgcn-amd-amdhsa--gfx942", gfx942},
                                               {"hipv4-amdgcn-amd-amdhsa--gfx90a", gfx90a}});
    testing::CcobOptions options;
    if (payload == Payload::ZstdWindowed) options.payload = testing::compress_zstd(plain, {.window_log = 20});
    ccob = testing::write_ccob(plain, 3, payload == Payload::Zlib ? CcobMethod::Zlib : CcobMethod::Zstd, options);
    testing::write_file(path.string(), ccob);
  }
  ~LargeCcob() { std::filesystem::remove(path); }
};

// The resident size, in bytes, of the mapping that holds `at` (/proc/self/smaps).
std::uint64_t resident_bytes(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  auto address = reinterpret_cast<std::uintptr_t>(at);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {  // a mapping's first line
      inside = begin <= address && address < end;
      continue;
    }
    unsigned long kib = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %lu kB", &kib) == 1) return std::uint64_t{kib} << 10;
  }
  ADD_FAILURE() << "no mapping holds " << at;
  return 0;
}

Expected<StreamSelection> select_gfx90a(const FatBinary& binary) {
  return select_in_compressed_bundle(testing::device("gfx90a"), binary.source().bytes(), binary.bundles()[0], {}, {});
}

class ReadPagesTest : public ::testing::TestWithParam<Payload> {};

TEST_P(ReadPagesTest, AMappedFilesPayloadIsGivenBackAsItIsRead) {
  LargeCcob input(GetParam(), "coload_read_pages_test");
  ASSERT_GT(input.ccob.size(), 2 * kEntrySize);  // incompressible: the payload is the entries
  auto binary = FatBinary::open(input.path.string());
  ASSERT_TRUE(Succeeds(binary));
  for (int round = 0; round < 2; ++round) {  // the second reads pages faulted in again
    auto chosen = select_gfx90a(*binary);
    ASSERT_TRUE(Succeeds(chosen));
    EXPECT_EQ(chosen->hash, StreamSelection::Hash::Checked);
    ASSERT_TRUE(chosen->selection.chosen());
    EXPECT_EQ(chosen->selection.chosen()->entry_index, 2u);
    EXPECT_EQ(chosen->chosen, input.gfx90a);
    // What is left resident: the pages read since the last step, the
    // header's, and what a fault maps around them (up to a 2 MiB folio of
    // the page cache); 12 MiB if nothing were given back.
    EXPECT_LE(resident_bytes(binary->source().bytes().data()), detail::ReadPages::kStep + (2u << 20) + (64u << 10))
        << "round " << round;
  }
}

TEST_P(ReadPagesTest, LentMemoryIsNeverAdvised) {
  LargeCcob input(GetParam(), "coload_read_pages_lent");
  // Anonymous memory would read back as zeros once advised.
  const Bytes copy = input.ccob;
  auto binary = FatBinary::from_memory(input.ccob);
  ASSERT_TRUE(Succeeds(binary));
  auto chosen = select_gfx90a(*binary);
  ASSERT_TRUE(Succeeds(chosen));
  EXPECT_EQ(chosen->chosen, input.gfx90a);
  EXPECT_TRUE(input.ccob == copy);

  // Nor is a file mapping the caller made.
  int fd = ::open(input.path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* mapping = ::mmap(nullptr, input.ccob.size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(mapping, MAP_FAILED);
  std::span<const std::byte> mapped(static_cast<const std::byte*>(mapping), input.ccob.size());
  auto lent = FatBinary::from_memory(mapped);
  ASSERT_TRUE(Succeeds(lent));
  auto again = select_gfx90a(*lent);
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ(again->chosen, input.gfx90a);
  EXPECT_GE(resident_bytes(mapping), input.ccob.size() - (64u << 10));
  ::munmap(mapping, input.ccob.size());
}

INSTANTIATE_TEST_SUITE_P(Payloads, ReadPagesTest,
                         ::testing::Values(Payload::ZstdWhole, Payload::ZstdWindowed, Payload::Zlib),
                         [](const auto& info) -> std::string {
                           switch (info.param) {
                             case Payload::ZstdWhole: return "zstd_in_place";
                             case Payload::ZstdWindowed: return "zstd_windowed";
                             case Payload::Zlib: break;
                           }
                           return "zlib";
                         });

}  // namespace
}  // namespace coload
