// 16 threads registering, looking up and unregistering kernels from many fat
// binaries on several devices at once. Built as its own executable so
// scripts/test.sh can run it under ThreadSanitizer. Checks, besides TSan's
// verdict: every lookup answers the same as a single-threaded one, and each
// (binary, device) pair was loaded exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coload/detail/registry_copies.h"
#include "coload/registry.h"
#include "registry_test_support.h"

namespace coload {
namespace {

using testing::CountingRuntime;
using testing::dry_run_devices;
using testing::file_bytes;
using testing::fixture;

constexpr int kThreads = 16;
constexpr int kRounds = 40;

struct Case {
  std::string path;
  std::size_t device;
  std::string kernel;
  bool found;  // whether the kernel is there for the device
};

/// Kernels present (and absent) per fixture, on devices gfx90a, gfx90a, gfx1100, gfx942.
std::vector<Case> cases() {
  return {
      {"bundles/driver_two_arch.hipfb", 0, "_Z5saxpyfPKfPfi", true},
      {"bundles/driver_two_arch.hipfb", 1, "_Z7add_onePii", true},
      {"bundles/driver_two_arch.hipfb", 3, "_Z5saxpyfPKfPfi", false},
      {"compressed/bundler22_v3.hipfb", 0, "_Z9block_sumPKfPfj", true},
      {"compressed/bundler22_v3.hipfb", 1, "_Z9histogramPKhPjj", true},
      {"compressed/clang19_driver_v2.hipfb", 0, "no_such_kernel", false},
      {"host/libkernels.so", 2, "_Z4fillPffy", true},
      {"host/libkernels.so", 3, "_Z7add_onePii", false},
      {"host/libkernels_compressed.so", 0, "_Z5saxpyfPKfPfi", true},
      {"host/libkernels_compressed.so", 2, "_Z9block_sumPKfPfj", true},
      {"host/libkernels_compressed.so", 1, "_Z12scale_doublePddx", true},
  };
}

TEST(RegistryStress, SixteenThreadsShareLongLivedBinaries) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx90a", "gfx1100", "gfx942"}));
  Registry registry(runtime, Config{});
  const std::vector<Case> all = cases();
  // Every fixture registered twice: once mapped, once from memory.
  std::vector<std::string> paths;
  for (const Case& c : all) {
    if (paths.empty() || paths.back() != c.path) paths.push_back(c.path);
  }
  std::vector<std::vector<std::byte>> buffers;
  for (const std::string& path : paths) buffers.push_back(file_bytes(fixture(path)));
  std::vector<BinaryHandle> mapped(paths.size()), borrowed(paths.size());
  std::barrier start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Registration itself races too: threads 0..paths-1 register concurrently.
      start.arrive_and_wait();
      if (static_cast<std::size_t>(t) < paths.size()) {
        auto file = registry.register_file(fixture(paths[t]));
        auto memory = registry.register_memory(buffers[t], paths[t]);
        if (!file || !memory) {
          failures.fetch_add(1);
        } else {
          mapped[t] = *file;
          borrowed[t] = *memory;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(failures.load(), 0);
  threads.clear();

  std::barrier again(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      again.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        const Case& c = all[static_cast<std::size_t>(t + round) % all.size()];
        std::size_t index = 0;
        while (paths[index] != c.path) ++index;
        for (BinaryHandle handle : {mapped[index], borrowed[index]}) {
          auto kernel = registry.lookup_kernel(handle, c.device, c.kernel);
          if (kernel.has_value() != c.found || (kernel && (*kernel)->name != c.kernel)) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  // Each (binary, device) pair that fits loaded its modules exactly once.
  RegistryStats stats = registry.stats();
  EXPECT_EQ(stats.binaries_registered, 2 * paths.size());
  std::size_t expected_modules = 0;
  for (std::size_t index = 0; index < paths.size(); ++index) {
    for (std::size_t device = 0; device < registry.devices().size(); ++device) {
      bool asked = false;
      for (const Case& c : all) asked = asked || (c.path == paths[index] && c.device == device);
      if (!asked) continue;
      auto modules = registry.modules(mapped[index], device);
      if (modules) expected_modules += 2 * modules->size();
    }
  }
  EXPECT_EQ(runtime->total_loads(), stats.modules_loaded);  // no dry-run load failed in these cases
  EXPECT_EQ(stats.modules_loaded, expected_modules);
  // 5 distinct CCOBs (1 + 1 + 3), each streamed at least once. In each of
  // libkernels_compressed's three bundles only one device kind chooses an
  // entry (gfx90a in bundle 0, gfx1100 in bundles 1 and 2); the bundle is
  // streamed again when the device that streamed it first chose nothing.
  // "First" is decided per bundle, not per binary (decode threads take
  // bundles in any order), so anything from 3 to 6 streams there, and
  // from 5 to 8 in all. Racing first lookups of the mapped and the borrowed
  // registration can each stream a CCOB: at most 2 + 2 + 3 × 3 = 13.
  EXPECT_GE(stats.bundles_decompressed, 5u);
  EXPECT_LE(stats.bundles_decompressed, 13u);
}

TEST(RegistryStress, RegisterLookUpAndUnregisterConcurrently) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx1100", "gfx942"}));
  const std::vector<Case> all = cases();
  {
    Registry registry(runtime, Config{});
    std::barrier start(kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int round = 0; round < kRounds / 4; ++round) {
          const Case& c = all[static_cast<std::size_t>(t * 3 + round) % all.size()];
          auto handle = registry.register_file(fixture(c.path));
          if (!handle) {
            failures.fetch_add(1);
            continue;
          }
          const std::size_t device = c.device % registry.devices().size();
          for (int i = 0; i < 4; ++i) (void)registry.lookup_kernel(*handle, device, c.kernel);
          if (!registry.unregister(*handle)) failures.fetch_add(1);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
  }
  EXPECT_EQ(runtime->live_modules(), 0);
}

// A memory registration's bytes may go once unregister returns, while other
// threads still look its kernels up (they get NotFound once it is gone):
// ASan or TSan would see a read of the freed buffer.
TEST(RegistryStress, UnregisterFreesTheBytesWhileOthersLookUp) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx1100"}));
  const std::vector<std::byte> image = file_bytes(fixture("host/libkernels_compressed.so"));
  ASSERT_FALSE(image.empty());
  Registry registry(runtime, Config{});
  constexpr int kLookers = 4;
  std::atomic<int> unexpected{0};
  for (int round = 0; round < 8; ++round) {
    auto bytes = std::make_unique<std::vector<std::byte>>(image);
    auto handle = registry.register_memory(*bytes, "round");
    ASSERT_TRUE(handle.has_value());
    std::barrier start(kLookers + 1);
    std::vector<std::thread> lookers;
    for (int t = 0; t < kLookers; ++t) {
      lookers.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int i = 0; i < 50; ++i) {
          auto kernel =
              detail::RegistryCopies::kernel(registry, *handle, static_cast<std::size_t>(t % 2), "_Z5saxpyfPKfPfi");
          if (kernel) {
            if (kernel->name != "_Z5saxpyfPKfPfi") unexpected.fetch_add(1);
          } else if (kernel.error().kind() != ErrorKind::NotFound) {
            unexpected.fetch_add(1);
          }
        }
      });
    }
    start.arrive_and_wait();
    std::this_thread::sleep_for(std::chrono::microseconds(200 * round));
    EXPECT_TRUE(registry.unregister(*handle).has_value());
    bytes.reset();  // the caller's right once unregister has returned
    for (auto& looker : lookers) looker.join();
  }
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(runtime->live_modules(), 0);
}

}  // namespace
}  // namespace coload
