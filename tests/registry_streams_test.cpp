// The registry's first use of a many-CCOB image streams each CCOB at most
// once per device (docs/pipeline.md): counted per (bundle, device) from the
// debug log, with the full hash check and with Skip, whose partial heads
// make a later device stream again for itself, and on several threads.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "coload/registry.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace testing;

constexpr const char* kHostId = "host-x86_64-unknown-linux-gnu-";
constexpr std::size_t kBundles = 12;

/// kBundles CCOBs, each with a gfx90a and a gfx1030 entry padded by its own
/// length, so no two share a stored hash.
testing::Bytes many_ccobs() {
  testing::Bytes file;
  for (std::size_t i = 0; i < kBundles; ++i) {
    testing::Bytes gfx90a = file_bytes(fixture("co/gfx90a.co"));
    testing::Bytes gfx1030 = file_bytes(fixture("co/gfx1030.co"));
    gfx90a.resize(gfx90a.size() + 16 * i);
    gfx1030.resize(gfx1030.size() + 16 * i);
    testing::Bytes plain = testing::write_plain_bundle(
        {{kHostId, {}}, {"hipv4-amdgcn-amd-amdhsa--gfx90a", gfx90a}, {"hipv4-amdgcn-amd-amdhsa--gfx1030", gfx1030}});
    testing::append(file, testing::write_ccob(plain, 3, testing::CcobMethod::Zstd));
  }
  return file;
}

/// "many.ccob: bundle 3: CCOB streamed for gfx90a: ..." lines, counted by (bundle, device).
class StreamLog {
 public:
  void operator()(LogLevel, std::string_view message) {
    const std::string_view marker = ": CCOB streamed for ";
    const std::size_t at = message.find(marker);
    if (at == std::string_view::npos) return;
    const std::string_view before = message.substr(0, at);
    const std::string bundle(before.substr(before.rfind(' ') + 1));
    std::string_view device = message.substr(at + marker.size());
    device = device.substr(0, device.find(':'));
    std::lock_guard lock(mutex_);
    ++streams_[{std::stoul(bundle), std::string(device)}];
  }
  std::map<std::pair<std::size_t, std::string>, int> streams() const {
    std::lock_guard lock(mutex_);
    return streams_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::size_t, std::string>, int> streams_;
};

struct Case {
  StreamOptions::HashCheck hash;
  std::size_t threads;
};

class RegistryStreams : public ::testing::TestWithParam<Case> {};

TEST_P(RegistryStreams, EachCcobOncePerDevice) {
  Config config;
  config.log_level = LogLevel::Debug;
  config.hash_check = GetParam().hash;
  auto log = std::make_shared<StreamLog>();
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx1030", "gfx90a"}));
  Registry registry(
      runtime, config,
      RegistryOptions{.decode_threads = GetParam().threads,
                      .log = [log](LogLevel level, std::string_view message) { (*log)(level, message); }});
  const testing::Bytes file = many_ccobs();
  auto binary = registry.register_memory(file, "many.ccob");
  ASSERT_TRUE(Succeeds(binary));
  for (std::size_t device = 0; device < 3; ++device) {
    auto modules = registry.modules(*binary, device);
    ASSERT_TRUE(Succeeds(modules)) << device;
    EXPECT_EQ(modules->size(), kBundles) << device;
  }
  // gfx90a and gfx1030 choose different entries: each streams every CCOB
  // once. The second gfx90a device reuses the first one's code objects.
  std::map<std::pair<std::size_t, std::string>, int> expected;
  for (std::size_t i = 0; i < kBundles; ++i) {
    expected[{i, "gfx90a"}] = 1;
    expected[{i, "gfx1030"}] = 1;
  }
  EXPECT_EQ(log->streams(), expected);
  EXPECT_EQ(registry.stats().bundles_decompressed, 2 * kBundles);
  EXPECT_EQ(registry.stats().code_objects_read, 2 * kBundles);
  EXPECT_EQ(runtime->loads(2), kBundles);

  // A second registration of the same bytes shares the heads and the code
  // objects the first one still uses: nothing is streamed again.
  auto again = registry.register_memory(file, "again.ccob");
  ASSERT_TRUE(Succeeds(again));
  ASSERT_TRUE(Succeeds(registry.modules(*again, 1)));
  EXPECT_EQ(registry.stats().bundles_decompressed, 2 * kBundles);
}

INSTANTIATE_TEST_SUITE_P(HashChecks, RegistryStreams,
                         ::testing::Values(Case{StreamOptions::HashCheck::Verify, 1},
                                           Case{StreamOptions::HashCheck::Skip, 1},
                                           Case{StreamOptions::HashCheck::Verify, 4},
                                           Case{StreamOptions::HashCheck::Skip, 4}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.hash == StreamOptions::HashCheck::Skip ? "Skip" : "Verify") +
                                  "On" + std::to_string(info.param.threads) + "Threads";
                         });

}  // namespace
}  // namespace coload
