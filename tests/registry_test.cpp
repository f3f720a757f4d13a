// The registry over the dry-run runtime and toolchain-built fixtures: lazy
// registration, one load per (binary, device), code objects shared between
// devices, host images with several bundles, errors and unregistering.
#include "coload/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coload/code_object.h"
#include "coload/fat_binary.h"
#include "coload/stream_select.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsWith;
using testing::Succeeds;
using testing::CountingRuntime;
using testing::dry_run_devices;
using testing::fixture;
using testing::file_bytes;

struct RegistryTest : ::testing::Test {
  std::shared_ptr<CountingRuntime> runtime =
      std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx90a", "gfx1100", "gfx942"}));
  Registry registry{runtime, Config{}};
};

TEST_F(RegistryTest, RegisteringDoesNoWork) {
  ASSERT_TRUE(Succeeds(registry.register_file(fixture("host/libkernels_compressed.so"))));
  ASSERT_TRUE(Succeeds(registry.register_file(fixture("compressed/bundler22_v3.hipfb"))));
  ASSERT_TRUE(Succeeds(registry.register_file(fixture("bundles/driver_two_arch.hipfb"))));
  RegistryStats stats = registry.stats();
  EXPECT_EQ(stats.binaries_registered, 3u);
  EXPECT_EQ(stats.bundles_read, 0u);
  EXPECT_EQ(stats.bundles_decompressed, 0u);
  EXPECT_EQ(stats.code_objects_read, 0u);
  EXPECT_EQ(runtime->total_loads(), 0u);
}

TEST_F(RegistryTest, LoadsOncePerBinaryAndDevice) {
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(Succeeds(kernel));
  EXPECT_EQ((*kernel)->name, "_Z5saxpyfPKfPfi");
  EXPECT_EQ((*kernel)->symbol, "_Z5saxpyfPKfPfi.kd");
  EXPECT_EQ((*kernel)->handle, 0u);
  EXPECT_EQ((*kernel)->kernarg_segment_size, 288u);
  EXPECT_EQ(runtime->loads(0), 1u);

  // Later lookups, of the same or another kernel, are map hits.
  auto again = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ(*again, *kernel);
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z7add_onePii")));
  EXPECT_EQ(runtime->loads(0), 1u);
  EXPECT_EQ(runtime->loads(1), 0u);

  // Another device of the same binary loads once more, for itself.
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z7add_onePii")));
  EXPECT_EQ(runtime->loads(1), 1u);
  EXPECT_EQ(runtime->total_loads(), 2u);
}

// A kernel of a TU with no code for the device: the error says why it is missing.
TEST_F(RegistryTest, MissingKernelNamesTheBundlesSkippedForTheDevice) {
  auto binary = registry.register_file(fixture("host/libkernels_mixed.so"));
  ASSERT_TRUE(Succeeds(binary));
  auto present = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");  // bundle 0 has gfx90a
  ASSERT_TRUE(Succeeds(present));
  auto missing = registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj");  // bundle 1: gfx1100, gfx908, gfx942
  ASSERT_TRUE(FailsWith(missing, ErrorKind::NotFound));
  const std::string& message = missing.error().message();
  EXPECT_NE(message.find("kernel \"_Z9block_sumPKfPfj\" not found"), std::string::npos) << message;
  EXPECT_NE(message.find("2 bundles have no code object for this device, e.g. "), std::string::npos) << message;
  EXPECT_NE(message.find("bundle 1: no code object fits device gfx90a:sramecc+:xnack-"), std::string::npos)
      << message;
}

TEST_F(RegistryTest, DevicesOfOneProcessorShareTheDecompressedCodeObject) {
  auto binary = registry.register_file(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj")));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z9block_sumPKfPfj")));
  ASSERT_EQ(runtime->images().size(), 2u);
  EXPECT_EQ(runtime->images()[0].data(), runtime->images()[1].data());
  EXPECT_EQ(runtime->owners()[0].lock(), runtime->owners()[1].lock());
  RegistryStats stats = registry.stats();
  EXPECT_EQ(stats.bundles_decompressed, 1u);
  EXPECT_EQ(stats.code_objects_read, 1u);
  EXPECT_EQ(stats.modules_loaded, 2u);
}

TEST_F(RegistryTest, RegistrationsOfOneCompressedBundleShareItsBytes) {
  auto first = registry.register_file(fixture("compressed/bundler22_v3.hipfb"));
  auto second = registry.register_file(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_TRUE(Succeeds(first));
  ASSERT_TRUE(Succeeds(second));
  EXPECT_NE(first->value, second->value);
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*first, 0, "_Z9block_sumPKfPfj")));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*second, 0, "_Z9block_sumPKfPfj")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 1u);
  ASSERT_EQ(runtime->images().size(), 2u);
  EXPECT_EQ(runtime->images()[0].data(), runtime->images()[1].data());
}

TEST_F(RegistryTest, HostImageLoadsEveryBundleWithAnEntryForTheDevice) {
  auto binary = registry.register_file(fixture("host/libkernels.so"));
  ASSERT_TRUE(Succeeds(binary));
  // gfx1100: bundle 1 natively and bundle 2 through gfx11-generic; bundle 0 has none.
  auto modules = registry.modules(*binary, 2);
  ASSERT_TRUE(Succeeds(modules));
  ASSERT_EQ(modules->size(), 2u);
  EXPECT_EQ(runtime->loads(2), 2u);
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*binary, 2, "_Z9block_sumPKfPfj")));  // bundle 1
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*binary, 2, "_Z4fillPffy")));         // bundle 2
  EXPECT_EQ(runtime->loads(2), 2u);
  // gfx90a:xnack-: bundle 0 only (bundle 2 has gfx90a:xnack+).
  auto on_gfx90a = registry.modules(*binary, 0);
  ASSERT_TRUE(Succeeds(on_gfx90a));
  EXPECT_EQ(on_gfx90a->size(), 1u);
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "_Z4fillPffy"), ErrorKind::NotFound));
}

TEST_F(RegistryTest, CompressedHostImageDecompressesOnlyWhenLookedUp) {
  auto binary = registry.register_file(fixture("host/libkernels_compressed.so"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_EQ(registry.stats().bundles_decompressed, 0u);
  // gfx90a:xnack-: each bundle's table is needed to select, so all three are
  // streamed once; only bundle 0 (entry gfx90a) has an entry for it.
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 3u);
  EXPECT_EQ(registry.stats().bundles_read, 3u);
  EXPECT_EQ(registry.stats().bytes_decoded, 0x69c8u + 0x6eb0u + 0x5060u);  // Verify: whole streams
  // The second gfx90a device chooses the same entry: nothing is decoded again.
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 3u);
  EXPECT_EQ(registry.stats().code_objects_read, 1u);
  // gfx1100 selects on the kept headers: bundle 0 has nothing for it (no
  // decode); bundles 1 (gfx1100) and 2 (gfx11-generic) hold entries no device
  // chose yet, so each is streamed once more for that entry alone.
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 2, "_Z9block_sumPKfPfj")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 5u);
  EXPECT_EQ(registry.stats().bundles_read, 3u);
  EXPECT_EQ(registry.stats().code_objects_read, 3u);
}

// COLOAD_HASH_CHECK=skip: the stored hash is not checked (documented); the
// default refuses the same bytes.
TEST(RegistryCompressed, SkipModeDoesNotCheckTheStoredHash) {
  std::vector<std::byte> bytes = file_bytes(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_EQ(bytes[4], std::byte{3});  // CCOB v3: the hash is the u64 at offset 24
  bytes[24] ^= std::byte{0xff};
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));

  Registry verified(runtime, Config{});
  auto refused = verified.register_memory(bytes, "rehashed.hipfb");
  ASSERT_TRUE(Succeeds(refused));
  auto lookup = verified.lookup_kernel(*refused, 0, "_Z9block_sumPKfPfj");
  ASSERT_TRUE(FailsWith(lookup, ErrorKind::HashMismatch));
  EXPECT_NE(lookup.error().message().find("at offset 0x18"), std::string::npos) << lookup.error().message();

  Config skip;
  skip.hash_check = StreamOptions::HashCheck::Skip;
  Registry fast(runtime, skip);
  auto accepted = fast.register_memory(bytes, "rehashed.hipfb");
  ASSERT_TRUE(Succeeds(accepted));
  ASSERT_TRUE(Succeeds(fast.lookup_kernel(*accepted, 0, "_Z9block_sumPKfPfj")));
  EXPECT_EQ(fast.stats().bundles_decompressed, 1u);
}

// Skip mode: gfx1030's stream stops after its entry, before gfx90a's ELF
// header, so the heads it kept cannot choose for gfx90a; that device streams
// the bundle itself and gets its own entry, byte for byte.
TEST(RegistryCompressed, SkipModeHeadsCutShortAreNotUsedForAnotherDevice) {
  const std::string path = fixture("compressed/bundler22_v3.hipfb");
  auto whole = FatBinary::open(path);
  ASSERT_TRUE(Succeeds(whole));
  auto bundle = whole->read(0);
  ASSERT_TRUE(Succeeds(bundle));
  ASSERT_EQ(bundle->entries().size(), 3u);
  ASSERT_EQ(bundle->entries()[1].id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
  ASSERT_EQ(bundle->entries()[2].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1030", "gfx90a"}));
  Config skip;
  skip.hash_check = StreamOptions::HashCheck::Skip;
  Registry registry(runtime, skip);
  auto binary = registry.register_file(path);
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 1u);
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z9block_sumPKfPfj")));
  EXPECT_EQ(registry.stats().bundles_decompressed, 2u);
  ASSERT_EQ(runtime->images().size(), 2u);
  EXPECT_TRUE(std::ranges::equal(runtime->images()[0], bundle->entries()[1].bytes));
  EXPECT_TRUE(std::ranges::equal(runtime->images()[1], bundle->entries()[2].bytes));
}

// Verified marks: the first registry checks the CCOB and marks it; a later
// one (another process, in practice) trusts the mark and decodes as Skip mode
// does; either way each device gets its entry byte for byte.
TEST(RegistryCompressed, AMarkedCcobIsNotCheckedAgain) {
  const std::string path = fixture("compressed/bundler22_v3.hipfb");
  auto whole = FatBinary::open(path);
  ASSERT_TRUE(Succeeds(whole));
  auto bundle = whole->read(0);
  ASSERT_TRUE(Succeeds(bundle));
  ASSERT_EQ(bundle->entries()[1].id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
  const std::uint64_t uncompressed = whole->bundles()[0].compressed->uncompressed_size;
  testing::ScratchDirectory cache;
  Config marked;
  marked.verified_cache = cache.str();
  marked.log_level = LogLevel::Debug;
  for (int run = 0; run < 2; ++run) {
    auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1030", "gfx90a"}));
    std::vector<std::string> logged;
    Registry registry(runtime, marked,
                      {.log = [&](LogLevel, std::string_view message) { logged.emplace_back(message); }});
    auto binary = registry.register_file(path);
    ASSERT_TRUE(Succeeds(binary));
    ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj")));
    // (This bundle is smaller than a decoder chunk, so run 1 decodes all of it too.)
    EXPECT_EQ(registry.stats().bytes_decoded, uncompressed);
    ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z9block_sumPKfPfj")));
    EXPECT_EQ(registry.stats().bundles_decompressed, 2u) << run;  // gfx90a's entry is another one
    ASSERT_EQ(runtime->images().size(), 2u);
    EXPECT_TRUE(std::ranges::equal(runtime->images()[0], bundle->entries()[1].bytes)) << run;
    EXPECT_TRUE(std::ranges::equal(runtime->images()[1], bundle->entries()[2].bytes)) << run;
    std::string first_stream;
    for (const std::string& message : logged) {
      if (message.find("CCOB streamed") != std::string::npos) {
        first_stream = message;
        break;
      }
    }
    EXPECT_NE(first_stream.find(run == 0 ? "hash verified, kept" : "hash verified earlier (marked), kept"),
              std::string::npos)
        << first_stream;
  }
}

TEST_F(RegistryTest, KeptEntryIsTheChosenOneByteForByte) {
  auto binary = registry.register_file(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj")));
  ASSERT_EQ(runtime->images().size(), 1u);
  auto whole = FatBinary::open(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_TRUE(Succeeds(whole));
  auto bundle = whole->read(0);
  ASSERT_TRUE(Succeeds(bundle));
  std::span<const std::byte> expected;
  for (const BundleEntry& entry : bundle->entries()) {
    if (entry.id == "hipv4-amdgcn-amd-amdhsa--gfx90a") expected = entry.bytes;
  }
  ASSERT_FALSE(expected.empty());
  std::span<const std::byte> loaded = runtime->images()[0];
  EXPECT_TRUE(std::ranges::equal(loaded, expected));
}

TEST(RegistryCompressed, CorruptStreamIsAnErrorForEveryDeviceAndNotRetried) {
  std::vector<std::byte> bytes = file_bytes(fixture("compressed/bundler22_v3.hipfb"));
  bytes[bytes.size() - 8] ^= std::byte{0x5a};  // inside the zstd payload
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx1030"}));
  Registry registry(runtime, Config{});
  auto binary = registry.register_memory(bytes, "corrupt.hipfb");
  ASSERT_TRUE(Succeeds(binary));
  auto first = registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj");
  ASSERT_FALSE(first.has_value());
  EXPECT_TRUE(first.error().kind() == ErrorKind::CorruptData || first.error().kind() == ErrorKind::HashMismatch)
      << first.error().message();
  EXPECT_EQ(first.error().location().file, "corrupt.hipfb");
  EXPECT_EQ(first.error().location().bundle, std::optional<std::size_t>(0));
  auto other = registry.lookup_kernel(*binary, 1, "_Z9block_sumPKfPfj");
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().kind(), first.error().kind());
  EXPECT_EQ(registry.stats().bundles_decompressed, 0u);  // counted only when a stream decodes
  EXPECT_EQ(runtime->total_loads(), 0u);
}

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

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
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
  EXPECT_EQ(modules.error().message(),
            "three.ccob: bundle 2: entry 1 (" + std::string(kId) + "): its size (" + hex(charges[5]) +
                " bytes) would pass the limit " + hex(limit) +
                " (max_decompressed_bytes) on what one load keeps of its compressed bundles, of which " +
                hex(total() - charges[5]) + " is kept already");
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
  EXPECT_EQ(limited.error().message(),
            "three.ccob: bundle 5: CCOB of 105 entries: its table's IDs and ELF headers (" + hex(tables[5]) +
                " bytes) would pass the limit " + hex(all - 1) +
                " (max_decompressed_bytes) on what one load keeps of its compressed bundles, of which " +
                hex(all - tables[5]) + " is kept already");
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
  testing::Bytes file = testing::write_ccob(testing::write_plain_bundle({{kHostId, {}}, {any_id, any}}), 3,
                                            testing::CcobMethod::Zstd);
  testing::append(file, testing::write_ccob(testing::write_plain_bundle({{kHostId, {}}, {on_id, on}, {off_id, off}}),
                                            3, testing::CcobMethod::Zstd));
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

// COLOAD_LOG: the registry reports what it chose (info), each stream and
// reuse (debug) and failed loads (warn), to the RegistryOptions::log sink.
struct LogCapture {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> lines;
  std::function<void(LogLevel, std::string_view)> sink() {
    return [this](LogLevel level, std::string_view text) {
      std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(text));
    };
  }
  std::size_t count(LogLevel level, std::string_view part) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& line) {
      return line.first == level && line.second.find(part) != std::string::npos;
    }));
  }
};

TEST(RegistryLog, DebugShowsStreamsReuseAndChoices) {
  LogCapture capture;
  Config config;
  config.log_level = LogLevel::Debug;
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx90a"}));
  Registry registry(runtime, config, RegistryOptions{.decode_threads = 1, .log = capture.sink()});
  auto binary = registry.register_file(fixture("compressed/bundler22_v3.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.modules(*binary, 0)));
  ASSERT_TRUE(Succeeds(registry.modules(*binary, 1)));
  EXPECT_EQ(capture.count(LogLevel::Debug, "bundler22_v3.hipfb: bundle 0: CCOB streamed for gfx90a"), 1u);
  EXPECT_EQ(capture.count(LogLevel::Debug, "hash verified, kept entry 2"), 1u);
  EXPECT_EQ(capture.count(LogLevel::Debug, "entry 2 (hipv4-amdgcn-amd-amdhsa--gfx90a) reused for gfx90a"), 1u);
  EXPECT_EQ(capture.count(LogLevel::Info, "bundle 0 entry 2 (hipv4-amdgcn-amd-amdhsa--gfx90a): native for device 0"), 1u);
  EXPECT_EQ(capture.count(LogLevel::Info, "native for device 1"), 1u);
  EXPECT_EQ(capture.count(LogLevel::Warn, ""), 0u);
}

TEST(RegistryLog, DefaultLevelReportsFailedLoadsOnly) {
  LogCapture capture;
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx942"}));
  Registry registry(runtime, Config{}, RegistryOptions{.log = capture.sink()});
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.modules(*binary, 0)));
  ASSERT_FALSE(registry.modules(*binary, 1).has_value());
  ASSERT_FALSE(registry.modules(*binary, 1).has_value());  // remembered: reported once
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0].first, LogLevel::Warn);
  EXPECT_NE(capture.lines[0].second.find("device 1 (gfx942"), std::string::npos) << capture.lines[0].second;
  EXPECT_NE(capture.lines[0].second.find("no code object fits device gfx942"), std::string::npos)
      << capture.lines[0].second;
}

// A plugin or pairs without the switch is not a silent no-op (docs/environment.md): it is said once.
TEST(RegistryLog, HotswapSettingsWithoutTheSwitchAreReported) {
  LogCapture capture;
  Config config;
  config.hotswap_plugin = "/nonexistent/plugin.so";
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  Registry registry(runtime, config, RegistryOptions{.log = capture.sink()});
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0].first, LogLevel::Warn);
  EXPECT_NE(capture.lines[0].second.find("COLOAD_HOTSWAP is not 1"), std::string::npos) << capture.lines[0].second;
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(Succeeds(registry.modules(*binary, 0)));  // nothing loaded the plugin
  EXPECT_EQ(capture.lines.size(), 1u);
}

TEST_F(RegistryTest, NoFitNamesTheDeviceTheEntriesAndTheBinary) {
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 3, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::NotFound));
  const std::string& message = kernel.error().message();
  EXPECT_NE(message.find("driver_two_arch.hipfb: bundle 0"), std::string::npos) << message;
  EXPECT_NE(message.find("no code object fits device gfx942"), std::string::npos) << message;
  EXPECT_NE(message.find("hipv4-amdgcn-amd-amdhsa--gfx1030"), std::string::npos) << message;
  EXPECT_EQ(runtime->loads(3), 0u);
  // The failure is remembered, not retried.
  auto again = registry.lookup_kernel(*binary, 3, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(again, ErrorKind::NotFound));
  EXPECT_EQ(again.error().message(), message);
  EXPECT_EQ(registry.stats().bundles_read, 1u);
}

TEST_F(RegistryTest, NoBundleOfAHostImageFits) {
  auto runtime942 = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1201"}));
  Registry only(runtime942, Config{});
  auto binary = only.register_file(fixture("host/libkernels.so"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = only.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::NotFound));
  EXPECT_NE(kernel.error().message().find("none of its 3 bundles fits"), std::string::npos)
      << kernel.error().message();
}

// Only the first miss's report is kept, whichever thread finds which miss first.
TEST(RegistryDecodeThreads, TheReportOfTheFirstMissIsTheOneNamed) {
  for (std::size_t threads : {1u, 3u}) {
    for (int round = 0; round < 20; ++round) {
      auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1201"}));
      Registry registry(runtime, Config{}, RegistryOptions{.decode_threads = threads});
      auto binary = registry.register_file(fixture("host/libkernels_compressed.so"));
      ASSERT_TRUE(Succeeds(binary));
      auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
      ASSERT_TRUE(FailsWith(kernel, ErrorKind::NotFound));
      EXPECT_NE(kernel.error().message().find("none of its 3 bundles fits; bundle 0: no code object fits device "
                                              "gfx1201; entries present: hipv4-amdgcn-amd-amdhsa--gfx1030, "
                                              "hipv4-amdgcn-amd-amdhsa--gfx90a"),
                std::string::npos)
          << threads << ": " << kernel.error().message();
    }
  }
}

TEST_F(RegistryTest, UnknownKernelNamesKernelAndBinary) {
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "no_such_kernel");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::NotFound));
  EXPECT_NE(kernel.error().message().find("\"no_such_kernel\""), std::string::npos);
  EXPECT_NE(kernel.error().message().find("driver_two_arch.hipfb"), std::string::npos);
}

TEST_F(RegistryTest, BadHandleDeviceAndInput) {
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(BinaryHandle{}, 0, "k"), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(BinaryHandle{42}, 0, "k"), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(registry.unregister(BinaryHandle{42}), ErrorKind::NotFound));
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 4, "k"), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(registry.register_file(fixture("no/such/file")), ErrorKind::Io));
  static const std::byte garbage[64] = {};
  EXPECT_TRUE(FailsWith(registry.register_memory(garbage, "garbage"), ErrorKind::BadMagic));
}

TEST_F(RegistryTest, ValidationFailureIsTheFirstViolationsKind) {
  DeviceOverrides small_lds;
  small_lds.lds_bytes = 65536;
  auto device = device_from_spec("gfx950", small_lds);
  ASSERT_TRUE(Succeeds(device));
  auto small = std::make_shared<CountingRuntime>(std::vector<Device>{*device});
  Registry one(small, Config{});
  auto binary = one.register_file(fixture("check/lds_heavy-gfx950.co"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = one.lookup_kernel(*binary, 0, "gemm_128x128");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::LimitExceeded));
  EXPECT_NE(kernel.error().message().find("group_segment_fixed_size 98304"), std::string::npos)
      << kernel.error().message();
  EXPECT_EQ(small->live_modules(), 0);
}

TEST_F(RegistryTest, ExtendedIsaCompatFromTheConfig) {
  // gfx90a code runs on gfx942 only with the opt-in: without it, no fit.
  auto binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 3, "_Z5saxpyfPKfPfi"), ErrorKind::NotFound));
  EXPECT_FALSE(registry.devices()[3].extended_isa_compat);
  Config config;
  config.extended_isa_compat_all = true;
  Registry opted(runtime, config);
  EXPECT_TRUE(opted.devices()[3].extended_isa_compat);
}

TEST_F(RegistryTest, UnregisterUnloadsThenReleasesTheBytes) {
  std::vector<std::byte> bytes = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  auto binary = registry.register_memory(bytes, "two_arch");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 1, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(runtime->live_modules(), 2);
  // A plain bundle's entry is a view into the caller's bytes: no copy.
  EXPECT_GE(runtime->images()[0].data(), bytes.data());
  EXPECT_LT(runtime->images()[0].data(), bytes.data() + bytes.size());
  std::weak_ptr<const void> owner = runtime->owners()[0];
  EXPECT_FALSE(owner.expired());

  ASSERT_TRUE(Succeeds(registry.unregister(*binary)));
  EXPECT_EQ(runtime->live_modules(), 0);
  EXPECT_TRUE(owner.expired());
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi"), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(registry.unregister(*binary), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(registry.binary_name(*binary), ErrorKind::NotFound));
}

TEST_F(RegistryTest, DestructionUnloadsEverything) {
  auto counting = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a", "gfx1100"}));
  std::weak_ptr<const void> owner;
  {
    Registry scoped(counting, Config{});
    auto first = scoped.register_file(fixture("host/libkernels_compressed.so"));
    auto second = scoped.register_file(fixture("compressed/bundler22_v3.hipfb"));
    ASSERT_TRUE(Succeeds(first));
    ASSERT_TRUE(Succeeds(second));
    ASSERT_TRUE(Succeeds(scoped.lookup_kernel(*first, 1, "_Z4fillPffy")));
    ASSERT_TRUE(Succeeds(scoped.lookup_kernel(*second, 0, "_Z9histogramPKhPjj")));
    EXPECT_EQ(counting->live_modules(), 3);
    owner = counting->owners().back();
  }
  EXPECT_EQ(counting->live_modules(), 0);
  EXPECT_TRUE(owner.expired());
}

// --- Hotswap and same-ISA retargeting through the registry ------------------

/// A pass for gfx1250 -> gfx942 that counts its calls and returns `output`
/// (or the source, when `output` is empty).
struct CountingPass {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<const HotswapRegistry> registry;

  explicit CountingPass(std::vector<std::byte> output) {
    HotswapPass pass;
    pass.name = "counting";
    pass.pairs = {{"gfx1250", "gfx942"}};
    pass.transform = [calls = calls, output = std::move(output)](std::span<const std::byte> source,
                                                                 const Device&) -> Expected<std::vector<std::byte>> {
      calls->fetch_add(1);
      if (output.empty()) return std::vector<std::byte>(source.begin(), source.end());
      return output;
    };
    auto built = std::make_shared<HotswapRegistry>();
    EXPECT_TRUE(Succeeds(built->add(std::move(pass))));
    registry = std::move(built);
  }
};

Config hotswap_on() {
  Config config;
  config.hotswap = true;
  return config;
}

/// lds_heavy (built for gfx950, 160 KiB LDS) relabelled gfx942 (64 KiB):
/// a well-formed gfx942 object whose LDS the device cannot hold.
std::vector<std::byte> oversized_lds_gfx942_object() {
  std::vector<std::byte> bytes = file_bytes(fixture("check/lds_heavy-gfx950.co"));
  EXPECT_GT(bytes.size(), 64u);
  const std::string from = "gfx950", to = "gfx942";
  for (std::size_t i = 0; i + from.size() <= bytes.size(); ++i) {
    if (std::equal(from.begin(), from.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   [](char c, std::byte b) { return static_cast<std::byte>(c) == b; })) {
      for (std::size_t j = 0; j < to.size(); ++j) bytes[i + j] = static_cast<std::byte>(to[j]);
    }
  }
  bytes[48] = std::byte{0x4c};  // e_flags' EF_AMDGPU_MACH: gfx950 0x4f -> gfx942 0x4c
  return bytes;
}

std::string loaded_processor(Registry& registry, BinaryHandle binary, std::size_t device) {
  auto modules = registry.modules(binary, device);
  if (!modules || modules->size() != 1) return "<none>";
  return std::string((*modules)[0]->code_object().target().target.processor_name());
}

TEST(RegistryHotswap, NativeWinsAndThePassIsNeverCalled) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/native_and_foreign.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(pass.calls->load(), 0);  // docs/selection.md, "Hotswap last": a listed pair never beats native code
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx942");
  EXPECT_EQ(runtime->total_loads(), 1u);
}

TEST(RegistryHotswap, ForeignOnlyEntryGoesThroughThePassOnce) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z7add_onePii")));
  EXPECT_EQ(pass.calls->load(), 1);
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx942");
  EXPECT_EQ(runtime->total_loads(), 1u);
}

TEST(RegistryHotswap, HotswapOffNeverCallsThePass) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, Config{}, RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi"), ErrorKind::NotFound));
  EXPECT_EQ(pass.calls->load(), 0);
}

TEST(RegistryHotswap, OutputForTheWrongTargetIsRefusedByTheValidator) {
  CountingPass pass(file_bytes(fixture("co/gfx90a.co")));  // a well-formed object for another processor
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::InvalidArgument));
  const std::string& message = kernel.error().message();
  for (const char* part : {"hotswap pass \"counting\"", "gfx1250", "gfx942", "gfx90a", "validator"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in " << message;
  }
  EXPECT_EQ(pass.calls->load(), 1);
  EXPECT_EQ(runtime->total_loads(), 0u);
}

TEST(RegistryHotswap, OutputWithOversizedLdsIsRefusedByTheValidator) {
  CountingPass pass(oversized_lds_gfx942_object());
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto modules = registry.modules(*binary, 0);
  ASSERT_TRUE(FailsWith(modules, ErrorKind::LimitExceeded));
  EXPECT_NE(modules.error().message().find("group_segment_fixed_size"), std::string::npos)
      << modules.error().message();
  EXPECT_EQ(runtime->total_loads(), 0u);
}

TEST(RegistryHotswap, BadPluginFailsEveryLoadWithItsError) {
  Config config = hotswap_on();
  config.hotswap_plugin = "/nonexistent/libcoload_plugin.so";
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, config);
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::Io));
  EXPECT_NE(kernel.error().message().find("COLOAD_HOTSWAP_PLUGIN"), std::string::npos) << kernel.error().message();
}

TEST(RegistryHotswap, EquivalentEntryIsRetargetedForTheDevice) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1031"}));
  Config config;
  config.extended_isa_compat = {"gfx1031"};
  Registry registry(runtime, config);
  auto binary = registry.register_file(fixture("select/gfx1030_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx1031");  // what ROCr needs to see
}

// The registry checks every code object before a runtime sees it, native ones
// included: ROCr would take a kernel whose LDS the device lacks and fail only
// at dispatch. The counting runtime is never called.
TEST(RegistryChecks, ACodeObjectTheValidatorRefusesIsNotHandedToTheRuntime) {
  auto small = device_from_spec("gfx90a:sramecc+:xnack-", {.lds_bytes = 512});
  ASSERT_TRUE(Succeeds(small));
  auto runtime = std::make_shared<CountingRuntime>(std::vector<Device>{*small});
  Registry registry{runtime, Config{}};
  auto binary = registry.register_file(fixture("bundles/bundler_plain.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::LimitExceeded));
  const std::string& message = kernel.error().message();
  EXPECT_NE(message.find("entry 2 (hipv4-amdgcn-amd-amdhsa--gfx90a) refused by the validator"), std::string::npos)
      << message;
  EXPECT_NE(message.find("group_segment_fixed_size 1024 exceeds the 512"), std::string::npos) << message;
  EXPECT_EQ(runtime->total_loads(), 0u);
}

// Metadata strings no runtime reads (an old amdhsa.version, as hand-written
// assembly kernels carry) do not refuse a code object; a kernel whose
// descriptor disagrees with its metadata does, before the runtime sees it.
TEST(RegistryChecks, KernelProblemsRefuseTheObjectMetadataStringsDoNot) {
  const std::vector<std::byte> good = file_bytes(fixture("co/gfx90a.co"));
  auto good_object = CodeObject::read(good);
  ASSERT_TRUE(Succeeds(good_object));
  ASSERT_TRUE(good_object->problems().empty());
  const std::string kernel_name = good_object->kernels()[0].name;

  std::vector<std::byte> old_version = good;  // amdhsa.version [1, 2] -> [1, 0]
  const std::string key = "amdhsa.version";
  auto key_at = std::search(old_version.begin(), old_version.end(), key.begin(), key.end(),
                            [](std::byte b, char c) { return b == static_cast<std::byte>(c); });
  ASSERT_NE(key_at, old_version.end());
  std::size_t value = static_cast<std::size_t>(key_at - old_version.begin()) + key.size();
  ASSERT_EQ(old_version[value], std::byte{0x92});  // fixarray of 2
  ASSERT_EQ(old_version[value + 2], std::byte{0x02});
  old_version[value + 2] = std::byte{0x00};
  auto old_object = CodeObject::read(old_version);
  ASSERT_TRUE(Succeeds(old_object));
  ASSERT_EQ(old_object->problems().size(), 1u);
  EXPECT_EQ(old_object->problems()[0].field, "amdhsa.version");

  std::vector<std::byte> mismatch = good;  // descriptor private_segment_fixed_size + 16
  const Kernel& kernel = good_object->kernels()[0];
  std::uint64_t kd = kernel.descriptor->address;  // lld places .rodata at its file offset
  std::uint32_t private_size = kernel.private_segment_fixed_size + 16;
  std::memcpy(mismatch.data() + kd + 4, &private_size, sizeof private_size);
  auto mismatch_object = CodeObject::read(mismatch);
  ASSERT_TRUE(Succeeds(mismatch_object));
  ASSERT_EQ(mismatch_object->problems().size(), 1u);
  ASSERT_EQ(mismatch_object->problems()[0].field, "private_segment_fixed_size");

  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  Registry registry{runtime, Config{}};
  auto loads = registry.register_memory(old_version, "old_version.co");
  ASSERT_TRUE(Succeeds(loads));
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*loads, 0, kernel_name)));
  EXPECT_EQ(runtime->total_loads(), 1u);

  auto refused = registry.register_memory(mismatch, "mismatch.co");
  ASSERT_TRUE(Succeeds(refused));
  auto lookup = registry.lookup_kernel(*refused, 0, kernel_name);
  ASSERT_TRUE(FailsWith(lookup, ErrorKind::SizeMismatch));
  EXPECT_NE(lookup.error().message().find("mismatch.co: bundle 0 entry 0"), std::string::npos)
      << lookup.error().message();
  EXPECT_NE(lookup.error().message().find("has 1 kernel problem(s), first: "), std::string::npos)
      << lookup.error().message();
  EXPECT_EQ(runtime->total_loads(), 1u);
}

// A runtime whose load waits until the test lets it go.
class GatedRuntime final : public Runtime {
 public:
  explicit GatedRuntime(std::vector<Device> devices) : inner_(open_dry_run_runtime(std::move(devices))) {}
  std::string_view name() const override { return inner_->name(); }
  std::span<const Device> devices() const override { return inner_->devices(); }
  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    entered.set_value();
    gate.wait();
    return inner_->load(device, image, code_object);
  }
  std::promise<void> entered;
  std::shared_future<void> gate;

 private:
  std::unique_ptr<Runtime> inner_;
};

// A memory registration's bytes may go once unregister returns (registry.h):
// so unregister waits for a lookup of the binary running on another thread.
TEST(RegistryUnregister, WaitsForALookupInFlightBeforeReturning) {
  auto runtime = std::make_shared<GatedRuntime>(dry_run_devices({"gfx90a"}));
  std::promise<void> open_gate;
  runtime->gate = open_gate.get_future().share();
  std::future<void> entered = runtime->entered.get_future();
  Registry registry{runtime, Config{}};
  auto bytes = std::make_unique<std::vector<std::byte>>(file_bytes(fixture("bundles/driver_two_arch.hipfb")));
  auto binary = registry.register_memory(*bytes, "two_arch");
  ASSERT_TRUE(Succeeds(binary));

  std::optional<Expected<LoadedKernel>> looked_up;
  std::thread lookup([&] { looked_up.emplace(registry.lookup_kernel_copy(*binary, 0, "_Z5saxpyfPKfPfi")); });
  // The lookup is inside Runtime::load, holding the binary (a broken fixture fails here instead of hanging).
  if (entered.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    open_gate.set_value();
    lookup.join();
    FAIL() << "the lookup never reached Runtime::load";
  }
  std::atomic<bool> returned{false};
  std::thread unregister([&] {
    EXPECT_TRUE(Succeeds(registry.unregister(*binary)));
    returned = true;
  });
  // Once the handle is gone, unregister has run up to its wait; give it time to (wrongly) return.
  while (registry.binary_name(*binary).has_value()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "unregister returned while a lookup still used the bytes";
  open_gate.set_value();
  lookup.join();
  unregister.join();
  EXPECT_TRUE(returned.load());
  bytes.reset();  // what the caller may do now; ASan would see a later read
  ASSERT_TRUE(looked_up.has_value());
  ASSERT_TRUE(Succeeds(*looked_up));
  EXPECT_EQ((*looked_up)->name, "_Z5saxpyfPKfPfi");
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi"), ErrorKind::NotFound));
}

}  // namespace
}  // namespace coload
