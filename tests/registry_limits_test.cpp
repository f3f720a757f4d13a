// The registry's bounds on what a load keeps and how it decodes: every CCOB
// of a binary shares one max_decompressed_bytes, whether entries come from
// one thread or several, and decoding on several threads loads the same
// modules and reports the same first error as on one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coload/fat_binary.h"
#include "coload/registry.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace testing;

// Each CCOB is held to max_decompressed_bytes alone, and what one load keeps
// of all of them (their tables' IDs and ELF headers, the entries it chose)
// shares it: a small file of many CCOBs, each under the limit, cannot make a
// lookup keep many limits' worth.
constexpr const char* kHostId = "host-x86_64-unknown-linux-gnu-";

/// What the registry charges for a CCOB's kept table of these entries (ID, entry size).
std::uint64_t kept_table(std::initializer_list<std::pair<std::string_view, std::uint64_t>> entries) {
  std::uint64_t total = 0;
  for (auto [id, size] : entries) total += sizeof(EntryHead) + id.size() + std::min<std::uint64_t>(size, 64);
  return total;
}

struct KeptBytesLimit : ::testing::Test {
  static constexpr const char* kId = "hipv4-amdgcn-amd-amdhsa--gfx90a";
  std::vector<std::uint64_t> charges;  // per CCOB: its table, then its entry
  testing::Bytes file;                 // three CCOBs back to back, one gfx90a entry each

  void SetUp() override {
    const testing::Bytes code_object = file_bytes(fixture("co/gfx90a.co"));
    ASSERT_FALSE(code_object.empty());
    for (std::size_t i = 0; i < 3; ++i) {
      testing::Bytes entry = code_object;
      entry.resize(code_object.size() + 64 * 1024 + i);  // zeros past the ELF: each CCOB its own
      charges.push_back(kept_table({{kHostId, 0}, {kId, entry.size()}}));
      charges.push_back(entry.size());
      testing::Bytes plain = testing::write_plain_bundle({{kHostId, {}}, {kId, entry}});
      testing::append(file, testing::write_ccob(plain, 3, testing::CcobMethod::Zstd));
    }
  }

  std::uint64_t total() const { return std::accumulate(charges.begin(), charges.end(), std::uint64_t{0}); }

  Expected<std::vector<const LoadedModule*>> load(std::uint64_t limit, std::size_t threads,
                                                  std::shared_ptr<CountingRuntime> runtime) {
    Config config;
    config.max_decompressed_bytes = limit;
    registry.emplace(std::move(runtime), config, RegistryOptions{.decode_threads = threads});
    auto binary = registry->register_memory(file, "three.ccob");
    if (!binary) return std::move(binary).error();
    return registry->modules(*binary, 0);
  }

  std::optional<Registry> registry;
};

TEST_F(KeptBytesLimit, EntriesTakingTheWholeLimitLoad) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  auto modules = load(total(), 1, runtime);
  ASSERT_TRUE(Succeeds(modules));
  EXPECT_EQ(modules->size(), 3u);
}

TEST_F(KeptBytesLimit, TheEntryPassingItFailsTheLoadAndNothingStaysLoaded) {
  const std::uint64_t limit = total() - 1;
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  auto modules = load(limit, 1, runtime);
  ASSERT_TRUE(FailsWith(modules, ErrorKind::LimitExceeded));
  const ErrorLocation& at = modules.error().location();
  EXPECT_EQ(at.file, "three.ccob");
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(2));
  EXPECT_EQ(at.entry, std::optional<std::size_t>(1));
  EXPECT_EQ(at.entry_id, kId);
  EXPECT_EQ(at.field, "max_decompressed_bytes");
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(charges[5]));
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(limit));
  EXPECT_EQ(modules.error().detail().rfind("its size (", 0), 0u) << modules.error().message();
  EXPECT_EQ(runtime->live_modules(), 0);
}

TEST_F(KeptBytesLimit, TheTablesOfCcobsWithNothingChosenCountToo) {
  // Six CCOBs whose tables list empty gfx1030 entries, many more of them than
  // their few bytes of payload: a gfx90a load chooses nothing, yet keeps the tables.
  const char* id = "hipv4-amdgcn-amd-amdhsa--gfx1030";
  file.clear();
  std::vector<std::uint64_t> tables;
  for (std::size_t i = 0; i < 6; ++i) {
    std::vector<testing::Entry> entries{{kHostId, {}}};
    entries.resize(100 + i, testing::Entry{id, {}});
    tables.push_back(kept_table({{kHostId, 0}}) + (entries.size() - 1) * kept_table({{id, 0}}));
    testing::append(file, testing::write_ccob(testing::write_plain_bundle(entries), 3, testing::CcobMethod::Zstd));
  }
  const std::uint64_t all = std::accumulate(tables.begin(), tables.end(), std::uint64_t{0});
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  auto none_fits = load(all, 1, runtime);
  ASSERT_TRUE(FailsWith(none_fits, ErrorKind::NotFound));
  auto limited = load(all - 1, 1, runtime);
  ASSERT_TRUE(FailsWith(limited, ErrorKind::LimitExceeded));
  EXPECT_EQ(limited.error().location().bundle, std::optional<std::size_t>(5));
  EXPECT_EQ(limited.error().location().value, std::optional<std::uint64_t>(tables[5]));
  EXPECT_EQ(limited.error().location().file, "three.ccob");
  EXPECT_EQ(limited.error().location().entry, std::nullopt);  // no entry: the table
  EXPECT_EQ(limited.error().location().field, "max_decompressed_bytes");
  EXPECT_EQ(limited.error().location().limit, std::optional<std::uint64_t>(all - 1));
  EXPECT_EQ(limited.error().detail().rfind("CCOB of 105 entries: its table's IDs and ELF headers (", 0), 0u)
      << limited.error().message();
}

// A device taking an entry another device decompressed is charged for it as
// well, so its outcome does not depend on which device looked up first.
TEST(RegistryCompressed, EntriesReusedFromAnotherDeviceCountAgainstTheLimit) {
  auto padded = [](const char* name, std::size_t extra) {
    testing::Bytes bytes = file_bytes(fixture(std::string("co/") + name));
    bytes.resize(bytes.size() + extra);
    return bytes;
  };
  const char* any_id = "hipv4-amdgcn-amd-amdhsa--gfx90a";
  const char* on_id = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+";
  const char* off_id = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-";
  const testing::Bytes any = padded("gfx90a.co", 256 * 1024);  // both devices choose it
  const testing::Bytes on = padded("gfx90a_xnack+.co", 0);
  const testing::Bytes off = padded("gfx90a_xnack-.co", 64 * 1024);
  testing::Bytes file =
      testing::write_ccob(testing::write_plain_bundle({{kHostId, {}}, {any_id, any}}), 3, testing::CcobMethod::Zstd);
  testing::append(file, testing::write_ccob(testing::write_plain_bundle({{kHostId, {}}, {on_id, on}, {off_id, off}}), 3,
                                            testing::CcobMethod::Zstd));
  const std::uint64_t tables = kept_table({{kHostId, 0}, {any_id, any.size()}}) +
                               kept_table({{kHostId, 0}, {on_id, on.size()}, {off_id, off.size()}});
  Config config;
  config.max_decompressed_bytes = tables + any.size() + on.size();  // xnack+ fits exactly; xnack- alone would too
  ASSERT_LT(tables + off.size(), config.max_decompressed_bytes);
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a:xnack+", "gfx90a:xnack-"}));
  Registry registry(runtime, config, RegistryOptions{.decode_threads = 1});
  auto binary = registry.register_memory(file, "two.ccob");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.modules(*binary, 0)));
  auto second = registry.modules(*binary, 1);
  ASSERT_TRUE(FailsWith(second, ErrorKind::LimitExceeded));
  const ErrorLocation& at = second.error().location();
  EXPECT_EQ(at.file, "two.ccob");
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(1));
  EXPECT_EQ(at.field, "max_decompressed_bytes");
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(off.size()));
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(config.max_decompressed_bytes));
  EXPECT_EQ(at.entry, std::optional<std::size_t>(2));
  EXPECT_EQ(at.entry_id, off_id);
  EXPECT_EQ(second.error().detail().rfind("its size (", 0), 0u) << second.error().message();
}

TEST_F(KeptBytesLimit, OnSeveralThreadsTheLimitHoldsAsOnOne) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  auto modules = load(total() - 1, 3, runtime);
  ASSERT_TRUE(FailsWith(modules, ErrorKind::LimitExceeded));
  EXPECT_EQ(modules.error().location().field, "max_decompressed_bytes");
  EXPECT_EQ(modules.error().location().limit, std::optional<std::uint64_t>(total() - 1));
  EXPECT_EQ(runtime->live_modules(), 0);
}

// A host image's CCOBs decoded on several threads: the same modules, in
// bundle order, and the same work as on one thread.
TEST(RegistryDecodeThreads, SameModulesOnOneOrFourThreads) {
  std::vector<std::vector<std::byte>> loaded;
  std::vector<RegistryStats> stats;
  for (std::size_t threads : {1u, 4u}) {
    auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1100"}));
    Registry registry(runtime, Config{}, RegistryOptions{.decode_threads = threads});
    auto binary = registry.register_file(fixture("host/libkernels_compressed.so"));
    ASSERT_TRUE(Succeeds(binary));
    auto modules = registry.modules(*binary, 0);
    ASSERT_TRUE(Succeeds(modules)) << threads;
    ASSERT_EQ(modules->size(), 2u) << threads;  // bundle 1 (gfx1100), bundle 2 (gfx11-generic)
    std::vector<std::byte> all;
    for (std::span<const std::byte> image : runtime->images()) all.insert(all.end(), image.begin(), image.end());
    loaded.push_back(std::move(all));
    stats.push_back(registry.stats());
  }
  EXPECT_EQ(loaded[0], loaded[1]);
  EXPECT_EQ(stats[0].bundles_decompressed, 3u);
  EXPECT_EQ(stats[1].bundles_decompressed, 3u);
  EXPECT_EQ(stats[0].bytes_decoded, stats[1].bytes_decoded);
  EXPECT_EQ(stats[0].code_objects_read, stats[1].code_objects_read);
}

// The first error in bundle order is reported, whichever thread met it.
TEST(RegistryDecodeThreads, FirstErrorInBundleOrder) {
  std::vector<std::byte> bytes = file_bytes(fixture("host/libkernels_compressed.so"));
  auto fat = FatBinary::from_memory(bytes);
  ASSERT_TRUE(Succeeds(fat));
  ASSERT_EQ(fat->bundles().size(), 3u);
  for (std::size_t bundle : {1u, 2u}) {  // stored hash of that CCOB (v3: u64 at offset 24)
    bytes[fat->bundles()[bundle].offset + 24] ^= std::byte{0xff};
  }
  for (std::size_t threads : {1u, 3u}) {
    auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1100"}));
    Registry registry(runtime, Config{}, RegistryOptions{.decode_threads = threads});
    auto binary = registry.register_memory(bytes, "two_bad.so");
    ASSERT_TRUE(Succeeds(binary));
    auto modules = registry.modules(*binary, 0);
    ASSERT_TRUE(FailsWith(modules, ErrorKind::HashMismatch)) << threads;
    EXPECT_EQ(modules.error().location().file, "two_bad.so") << threads;
    EXPECT_EQ(modules.error().location().bundle, std::optional<std::size_t>(1)) << threads;  // the first bad one
    EXPECT_EQ(runtime->total_loads(), 0u);
  }
}

}  // namespace
}  // namespace coload
