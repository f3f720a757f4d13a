// detail::Md5Stream: on the calling thread and on its helper, the digest
// (libcrypto's) is LLVM's MD5 of the bytes (what wrote the stored hashes),
// however they are cut into chunks; the helper is joined whether or not the
// digest is taken, and not started on one CPU. In coload_concurrency_test, so
// scripts/test.sh runs it under TSan too.
#include "ccob/md5_stream.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/bundle_writer.h"

namespace coload {
namespace {

using detail::Md5Stream;

// The helper runs only where this thread may use two CPUs or more.
bool two_cpus() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) > 1;
}

testing::Bytes content(std::size_t size) {
  testing::Bytes bytes(size);
  std::uint32_t state = 7;
  for (std::byte& byte : bytes) {
    state = state * 1664525u + 1013904223u;
    byte = std::byte(static_cast<std::uint8_t>(state >> 24));
  }
  return bytes;
}

std::uint64_t hash_in_chunks(const testing::Bytes& bytes, std::uint64_t expected_size, std::size_t chunk,
                             bool& threaded) {
  Md5Stream md5(expected_size);
  threaded = md5.threaded();
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    md5.update(std::span(bytes).subspan(at, std::min(chunk, bytes.size() - at)));
  }
  return md5.low();
}

TEST(Md5Stream, EitherWayTheDigestIsLlvmsMd5) {
  constexpr std::size_t kSlot = Md5Stream::kSlotBytes;
  // 55, 56, 63, 64, 65: where MD5's padding and length field cross a 64-byte block.
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{55}, std::size_t{56}, std::size_t{63}, std::size_t{64},
        std::size_t{65}, kSlot - 1, kSlot, kSlot + 1, Md5Stream::kSlots * kSlot, 5 * kSlot + 7}) {
    testing::Bytes bytes = content(size);
    const std::uint64_t want = testing::ccob_hash(bytes);
    for (std::size_t chunk : {std::size_t{1} << 30, std::size_t{4096}, std::size_t{100'003}, kSlot, std::size_t{7}}) {
      std::string label = std::to_string(size) + " bytes in chunks of " + std::to_string(chunk);
      bool threaded = true;
      EXPECT_EQ(hash_in_chunks(bytes, 0, chunk, threaded), want) << label;
      EXPECT_FALSE(threaded) << label;
      EXPECT_EQ(hash_in_chunks(bytes, Md5Stream::kThreadedFrom, chunk, threaded), want) << label;
      EXPECT_EQ(threaded, two_cpus()) << label;
    }
  }
  // The size that starts the helper, hashed through it.
  testing::Bytes large = content(Md5Stream::kThreadedFrom + 12'345);
  bool threaded = false;
  EXPECT_EQ(hash_in_chunks(large, large.size(), 128u << 10, threaded), testing::ccob_hash(large));
  EXPECT_EQ(threaded, two_cpus());
}

TEST(Md5Stream, OnOneCpuItHashesOnTheCallingThread) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  testing::Bytes bytes = content(3 * Md5Stream::kSlotBytes);
  bool threaded = true;
  std::uint64_t digest = hash_in_chunks(bytes, Md5Stream::kThreadedFrom, 4096, threaded);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_FALSE(threaded);
  EXPECT_EQ(digest, testing::ccob_hash(bytes));
}

TEST(Md5Stream, AnAbandonedHashJoinsItsHelper) {
  testing::Bytes bytes = content(9 * Md5Stream::kSlotBytes + 5);  // more than the ring holds
  if (!two_cpus()) GTEST_SKIP() << "one CPU: no helper to join";
  for (int round = 0; round < 20; ++round) {
    Md5Stream md5(Md5Stream::kThreadedFrom);
    ASSERT_TRUE(md5.threaded());
    md5.update(std::span(bytes).first(round * 12'345 % bytes.size()));
  }  // each destructor stops and joins; a hang here fails by ctest's timeout
}

}  // namespace
}  // namespace coload
