#include "io/window_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "coload/bundle.h"
#include "coload/fat_binary.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::window_memory::allocate;
using detail::window_memory::drop_kept;
using detail::window_memory::kept_bytes;
using detail::window_memory::kHugePage;
using detail::window_memory::release;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Each test starts and ends with no kept mapping, so none sees another's.
class WindowMemory : public ::testing::Test {
 protected:
  void SetUp() override { drop_kept(); }
  void TearDown() override { drop_kept(); }
};

std::uintptr_t block_of(void* buffer) { return reinterpret_cast<std::uintptr_t>(buffer) - 64; }

// The resident bytes of the mapping that holds `at` (/proc/self/smaps).
std::uint64_t resident_bytes(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  auto address = reinterpret_cast<std::uintptr_t>(at);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0, kib = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {
      inside = begin <= address && address < end;
    } else if (inside && std::sscanf(line.c_str(), "Rss: %lu kB", &kib) == 1) {
      return std::uint64_t{kib} << 10;
    }
  }
  ADD_FAILURE() << "no mapping holds " << at;
  return 0;
}

TEST_F(WindowMemory, PopulateFaultsInTheWholePagesInsideTheRange) {
  constexpr std::size_t kSize = 8 * kMiB;
  void* mapping = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  madvise(mapping, kSize, MADV_NOHUGEPAGE);  // 4 KiB pages even where THP is "always"
  auto* bytes = static_cast<std::byte*>(mapping);
  ASSERT_EQ(resident_bytes(bytes), 0u);
  detail::window_memory::populate(bytes + 100, detail::window_memory::kPopulateFrom - 1);  // too small: left alone
  EXPECT_EQ(resident_bytes(bytes), 0u);
  detail::window_memory::populate(bytes + 100, kSize - 200);
  // Every page but the two the range shares with its neighbours.
  std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(resident_bytes(bytes), kSize - 2 * page);
  EXPECT_TRUE(std::all_of(bytes, bytes + kSize, [](std::byte b) { return b == std::byte{0}; }));
  munmap(mapping, kSize);
}

TEST_F(WindowMemory, LargeBuffersStartOnAHugePageAndAreKeptWhenReleased) {
  void* buffer = allocate(nullptr, 3 * kMiB);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(block_of(buffer) % kHugePage, 0u);
  std::memset(buffer, 0xa5, 3 * kMiB);  // all of it is writable
  EXPECT_EQ(kept_bytes(), 0u);
  release(nullptr, buffer);
  EXPECT_EQ(kept_bytes(), 4 * kMiB);  // 3 MiB and the header, in whole huge pages
}

TEST_F(WindowMemory, SmallBuffersComeFromMallocAndAreNotKept) {
  void* buffer = allocate(nullptr, 1000);
  ASSERT_NE(buffer, nullptr);
  std::memset(buffer, 0x5a, 1000);
  release(nullptr, buffer);
  EXPECT_EQ(kept_bytes(), 0u);
  release(nullptr, nullptr);  // as free(nullptr)
}

TEST_F(WindowMemory, AKeptMappingServesTheNextBufferThatFits) {
  void* first = allocate(nullptr, 5 * kMiB);
  ASSERT_NE(first, nullptr);
  release(nullptr, first);
  void* second = allocate(nullptr, 3 * kMiB);
  EXPECT_EQ(second, first);
  EXPECT_EQ(kept_bytes(), 0u);
  release(nullptr, second);
  EXPECT_EQ(kept_bytes(), 6 * kMiB);  // the whole mapping comes back
}

TEST_F(WindowMemory, AKeptMappingTooSmallIsLeftForLater) {
  void* small = allocate(nullptr, 3 * kMiB);
  ASSERT_NE(small, nullptr);
  release(nullptr, small);
  void* large = allocate(nullptr, 5 * kMiB);
  ASSERT_NE(large, nullptr);
  EXPECT_NE(large, small);
  EXPECT_EQ(kept_bytes(), 4 * kMiB);
  release(nullptr, large);
  EXPECT_EQ(kept_bytes(), 10 * kMiB);
}

TEST_F(WindowMemory, AtMostTwoMappingsAreKeptTheLargest) {
  ASSERT_EQ(detail::window_memory::kKeptMappings, 2u);
  void* middle = allocate(nullptr, 5 * kMiB);
  void* large = allocate(nullptr, 7 * kMiB);
  void* small = allocate(nullptr, 3 * kMiB);
  ASSERT_TRUE(middle && large && small);
  release(nullptr, middle);
  release(nullptr, large);
  release(nullptr, small);  // both slots hold larger ones: unmapped
  EXPECT_EQ(kept_bytes(), 14 * kMiB);
  void* again = allocate(nullptr, 7 * kMiB);
  EXPECT_EQ(again, large);
  release(nullptr, again);
  void* smaller = allocate(nullptr, 3 * kMiB);  // the smallest that fits: the 6 MiB one
  EXPECT_EQ(smaller, middle);
  release(nullptr, smaller);
}

// Mappings are kept largest first within kKeptBytes; one larger than that is
// never kept. (Untouched mappings: the sizes cost address space only.)
TEST_F(WindowMemory, KeptMappingsStayWithinTheirByteCap) {
  ASSERT_EQ(detail::window_memory::kKeptBytes, 64 * kMiB);
  void* a = allocate(nullptr, 40 * kMiB);  // mapped: 42 MiB with the header
  void* b = allocate(nullptr, 20 * kMiB);  // 22 MiB
  void* c = allocate(nullptr, 30 * kMiB);  // 32 MiB
  ASSERT_TRUE(a && b && c);
  release(nullptr, c);
  EXPECT_EQ(kept_bytes(), 32 * kMiB);
  release(nullptr, a);  // 42 + 32 passes the cap: the smaller goes
  EXPECT_EQ(kept_bytes(), 42 * kMiB);
  release(nullptr, b);  // 42 + 22 is the cap
  EXPECT_EQ(kept_bytes(), 64 * kMiB);
  void* huge = allocate(nullptr, 64 * kMiB);  // fits no kept mapping: mapped afresh, 66 MiB
  ASSERT_NE(huge, nullptr);
  release(nullptr, huge);
  EXPECT_EQ(kept_bytes(), 64 * kMiB);
  void* again = allocate(nullptr, 40 * kMiB);
  EXPECT_EQ(again, a);
  release(nullptr, again);
}

TEST_F(WindowMemory, ASizeThatCannotBeMappedIsNull) {
  EXPECT_EQ(allocate(nullptr, SIZE_MAX), nullptr);
  EXPECT_EQ(allocate(nullptr, SIZE_MAX - 64), nullptr);
  EXPECT_EQ(kept_bytes(), 0u);
}

TEST_F(WindowMemory, ThreadsNeverShareABuffer) {
  // Each thread fills its buffer with its own byte and checks it is still
  // there before releasing: a mapping handed to two threads at once would
  // show the other's byte.
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      const std::size_t size = (3 + t % 2 * 2) * kMiB;
      for (int round = 0; round < 20; ++round) {
        auto* buffer = static_cast<unsigned char*>(allocate(nullptr, size));
        if (buffer == nullptr) {
          ++failures[t];
          continue;
        }
        std::memset(buffer, t + 1, size);
        std::this_thread::yield();
        for (std::size_t i = 0; i < size; i += 4096) failures[t] += buffer[i] != t + 1;
        release(nullptr, buffer);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
  EXPECT_LE(kept_bytes(), 12 * kMiB);
}

// A child forked while another thread holds the kept mappings' lock (here,
// most of the time: kept_bytes() in a loop) can still allocate: it never
// inherits the lock held by a thread it does not have.
TEST_F(WindowMemory, AForkedChildCanAllocate) {
  release(nullptr, allocate(nullptr, 3 * kMiB));  // one kept mapping, for the child to take
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> seen{0};  // an atomic store, so the calls stay
  std::thread churn([&stop, &seen] {
    while (!stop.load()) seen.store(kept_bytes(), std::memory_order_relaxed);
  });
  int stuck = 0;
  for (int round = 0; round < 50; ++round) {
    pid_t child = fork();
    if (child == 0) {
      alarm(5);  // a deadlocked child dies of SIGALRM
      void* buffer = allocate(nullptr, 3 * kMiB);
      release(nullptr, buffer);
      _exit(buffer != nullptr ? 0 : 1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) {
      ADD_FAILURE() << "fork or waitpid failed in round " << round;
      break;  // still stop and join the thread below
    }
    stuck += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  stop = true;
  churn.join();
  EXPECT_EQ(stuck, 0);
}

TEST_F(WindowMemory, LargeZstdFramesDecodeThroughAKeptMapping) {
  testing::Bytes code(6 * kMiB);
  std::uint32_t state = 1;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (i % 64 == 0) state = state * 1664525u + 1013904223u;
    code[i] = std::byte(static_cast<std::uint8_t>(state >> (i % 4 * 8)));
  }
  testing::Bytes plain = testing::write_plain_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", code}});
  // As the bundler writes it, a single-segment frame: decoded in place into
  // 6 MiB of scratch memory. Without its content size: through libzstd's
  // 4 MiB window (a context too large to be kept per thread). Either buffer
  // takes the mapped path, and the second decode reuses it.
  testing::CcobOptions streamed;
  streamed.payload = testing::compress_zstd(plain, {.window_log = 22, .content_size = false});
  testing::Bytes ccob = testing::write_ccob(plain, 3, testing::CcobMethod::Zstd);
  for (const testing::Bytes& each : {ccob, testing::write_ccob(plain, 3, testing::CcobMethod::Zstd, streamed)}) {
    drop_kept();
    auto header = parse_compressed_header(each);
    ASSERT_TRUE(testing::Succeeds(header));
    auto decompressed = decompress_bundle(each, *header);
    ASSERT_TRUE(testing::Succeeds(decompressed));
    EXPECT_EQ(*decompressed, plain);
    std::size_t kept = kept_bytes();  // the decoder's buffer, released
    EXPECT_GE(kept, 4 * kMiB);
    decompressed = decompress_bundle(each, *header);
    ASSERT_TRUE(testing::Succeeds(decompressed));
    EXPECT_EQ(*decompressed, plain);
    EXPECT_EQ(kept_bytes(), kept);  // the same mapping, reused
  }

  // read_bundle keeps the decompressed bundle in such a mapping too.
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(testing::Succeeds(binary));
  auto bundle = binary->read(0);
  ASSERT_TRUE(testing::Succeeds(bundle));
  EXPECT_TRUE(std::ranges::equal(bundle->uncompressed(), plain));
  EXPECT_EQ(block_of(const_cast<std::byte*>(bundle->uncompressed().data())) % kHugePage, 0u);
  ASSERT_EQ(bundle->entries().size(), 1u);
  EXPECT_TRUE(std::ranges::equal(bundle->entries()[0].bytes, code));
}

}  // namespace
}  // namespace coload
