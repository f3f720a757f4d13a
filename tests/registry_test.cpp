// The registry over the dry-run runtime and toolchain-built fixtures: lazy
// registration, one load per (binary, device), code objects shared between
// devices, host images with several bundles, errors and unregistering.
#include "coload/registry.h"
#include "coload/detail/registry_copies.h"

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
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::CountingRuntime;
using testing::dry_run_devices;
using testing::FailsWith;
using testing::file_bytes;
using testing::fixture;
using testing::Succeeds;

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
  EXPECT_NE(message.find("bundle 1: no code object fits device gfx90a:sramecc+:xnack-"), std::string::npos) << message;
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
  EXPECT_EQ(capture.count(LogLevel::Info, "bundle 0 entry 2 (hipv4-amdgcn-amd-amdhsa--gfx90a): native for device 0"),
            1u);
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
  EXPECT_EQ(kernel.error().location().file, fixture("bundles/driver_two_arch.hipfb"));
  EXPECT_EQ(kernel.error().location().bundle, std::optional<std::size_t>(0));
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
  EXPECT_NE(kernel.error().message().find("none of its 3 bundles fits"), std::string::npos) << kernel.error().message();
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
      EXPECT_EQ(kernel.error().location().bundle, std::optional<std::size_t>(0)) << threads;
      EXPECT_EQ(kernel.error().detail(),
                "no code object fits device gfx1201; entries present: hipv4-amdgcn-amd-amdhsa--gfx1030, "
                "hipv4-amdgcn-amd-amdhsa--gfx90a")
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
  EXPECT_EQ(kernel.error().location().field, "group_segment_fixed_size") << kernel.error().message();
  EXPECT_EQ(kernel.error().location().value, std::optional<std::uint64_t>(98304));
  EXPECT_EQ(kernel.error().location().limit, std::optional<std::uint64_t>(65536));
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
  std::thread lookup(
      [&] { looked_up.emplace(detail::RegistryCopies::kernel(registry, *binary, 0, "_Z5saxpyfPKfPfi")); });
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
