// libcoload_preload.so for hipModuleLoadData's images, with a hotswap pass,
// under `coload run` and its dry run, and the ID screen on its own (the
// common case: no allocation). The wrappers of libraries: preload_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/detail/hotswap.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "preload/wrapper_plan.h"
#include "preload_probe_run.h"
#include "support/bundle_writer.h"
#include "support/counting_new.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace preload_testing;

TEST(Preload, CoLoadRunPreloadsTheLibraryWithItsOptions) {
  // `coload run --device gfx1031 --extended-isa-compat -- preload_probe ...`:
  // the same rewrite as the variables give, and the program's exit status.
  const ProbeRun run = probe("7.0.70000", kTemplates, {}, true,
                             {COLOAD_CLI, "run", "--device", "gfx1031", "--extended-isa-compat", "--log", "info"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.received.size(), kUnits) << run.errors;
  std::size_t rewritten = 0;
  for (const Received& received : run.received) rewritten += received.object == "anonymous";
  EXPECT_EQ(rewritten, kUnits / 4);
  EXPECT_EQ(count_lines(run.errors, "as hipv4-amdgcn-amd-amdhsa--gfx1031"), kUnits / 4) << run.errors;
  // A probe that cannot load its library exits 1, and so does coload run.
  const ProbeRun failed =
      probe("7.0.70000", "/nonexistent/libnone.so", {}, true, {COLOAD_CLI, "run", "--device", "gfx1031"});
  EXPECT_EQ(failed.status, 1) << failed.errors;
}

/// preload::screen_table's screens for `options.devices`; nullopt when it cannot decide.
std::optional<std::vector<preload::IdScreen>> screened(std::span<const std::byte> head,
                                                       const preload::PlanOptions& options) {
  std::vector<preload::IdScreen> out(options.devices.size());
  if (!preload::screen_table(head, options, out)) return std::nullopt;
  return out;
}

TEST(PreloadScreen, TheTableIdsAloneDecideServedRelatedOrNothing) {
  using preload::IdScreen;
  const std::vector<Device> devices{*device_from_spec("gfx90a:xnack-"), *device_from_spec("gfx1031"),
                                    *device_from_spec("gfx1100")};
  std::vector<Device> opted = devices;
  opted[1].extended_isa_compat = true;
  const testing::Bytes bundle =
      testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::Bytes(64)},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx1030", testing::Bytes(64)},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx11-generic", testing::Bytes(64)}});
  preload::PlanOptions options{.devices = devices};
  auto screens = screened(bundle, options);
  ASSERT_TRUE(screens);
  EXPECT_EQ(*screens, (std::vector<IdScreen>{IdScreen::Served, IdScreen::Nothing, IdScreen::Served}));
  options.devices = opted;
  EXPECT_EQ(*screened(bundle, options), (std::vector<IdScreen>{IdScreen::Served, IdScreen::Related, IdScreen::Served}));
  opted[2].loads_generic = false;  // a release without generics: gfx11-generic is relabelled, so planned
  EXPECT_EQ((*screened(bundle, options))[2], IdScreen::Related);
  // Anything the page does not hold whole, or that is no plain bundle, is left to the full plan.
  EXPECT_FALSE(screened(std::span(bundle).first(60), options));
  testing::Bytes huge = bundle;
  const std::uint64_t count = std::uint64_t{1} << 40;
  std::memcpy(huge.data() + 24, &count, sizeof count);
  EXPECT_FALSE(screened(huge, options));
  testing::Bytes long_id = bundle;
  const std::uint64_t id_size = 1 << 20;
  std::memcpy(long_id.data() + 32 + 16, &id_size, sizeof id_size);
  EXPECT_FALSE(screened(long_id, options));
  EXPECT_FALSE(screened(testing::Bytes(16), options));
  // A hotswap source allowlisted for the GPU is related, with the tier on only.
  const std::vector<Device> gfx942{*device_from_spec("gfx942")};
  options.devices = gfx942;
  ASSERT_TRUE(options.select.hotswap_allowlist.add("gfx1030", "gfx942"));
  EXPECT_EQ(*screened(bundle, options), std::vector<IdScreen>{IdScreen::Nothing});
  options.select.hotswap = true;
  EXPECT_EQ(*screened(bundle, options), std::vector<IdScreen>{IdScreen::Related});
}

TEST(PreloadScreen, AllocatesNothing) {
  // The common case must not allocate (issue 37): a table screened in place,
  // kept CCOB IDs screened, features that do not fit included.
  using preload::IdScreen;
  const std::vector<Device> devices{*device_from_spec("gfx90a:xnack-"), *device_from_spec("gfx1031"),
                                    *device_from_spec("gfx942")};
  const testing::Bytes bundle =
      testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", testing::Bytes(64)},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx1030", testing::Bytes(64)},
                                   {"hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", testing::Bytes(64)}});
  const std::vector<std::string> kept{"host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx942",
                                      "not an entry ID"};
  const preload::PlanOptions options{.devices = devices};
  std::vector<IdScreen> out(devices.size());
  const std::size_t before = allocations.load();
  const bool screened_table = preload::screen_table(bundle, options, out);
  EXPECT_EQ(allocations.load() - before, 0u);
  ASSERT_TRUE(screened_table);
  EXPECT_EQ(out, (std::vector<IdScreen>{IdScreen::Nothing, IdScreen::Nothing, IdScreen::Served}));
  const std::size_t kept_before = allocations.load();
  preload::screen_ids(kept, options, out);
  EXPECT_EQ(allocations.load() - kept_before, 0u);
  EXPECT_EQ(out, (std::vector<IdScreen>{IdScreen::Nothing, IdScreen::Nothing, IdScreen::Served}));
}

TEST(Preload, AModuleLoadedFromMemoryGetsTheSameTreatment) {
  // A plain bundle of gfx1030 and gfx90a code, loaded with hipModuleLoadData
  // on HIP's current device (the recording runtime's hipGetDevice).
  const std::string bundle = std::string(COLOAD_FIXTURE_DIR) + "/bundles/driver_two_arch.hipfb";
  auto file = FatBinary::open(bundle);
  ASSERT_TRUE(file) << file.error().message();
  const std::vector<std::string> gpus{"COLOAD_DEVICES=gfx90a,gfx1031", "COLOAD_EXTENDED_ISA_COMPAT=all"};
  // Device 0, gfx90a: the runtime finds its own; the same image is loaded.
  std::vector<std::string> on_gfx90a = gpus;
  on_gfx90a.push_back("PRELOAD_RECORDING_DEVICE=0");
  const ProbeRun native = probe("7.0.70000", "module:" + bundle, on_gfx90a);
  ASSERT_EQ(native.status, 0) << native.errors;
  ASSERT_EQ(native.modules.size(), 1u);
  EXPECT_EQ(native.modules[0].image, native.given.at(0));
  EXPECT_TRUE(native.modules[0].unloaded);
  // Device 1, gfx1031: a bundle whose gfx1031 entry comgr finds, relabelled from gfx1030.
  std::vector<std::string> on_gfx1031 = gpus;
  on_gfx1031.push_back("PRELOAD_RECORDING_DEVICE=1");
  on_gfx1031.push_back("COLOAD_LOG=info");
  const ProbeRun relabelled = probe("7.0.70000", "module:" + bundle, on_gfx1031);
  ASSERT_EQ(relabelled.status, 0) << relabelled.errors;
  ASSERT_EQ(relabelled.modules.size(), 1u);
  EXPECT_NE(relabelled.modules[0].image, relabelled.given.at(0));
  EXPECT_TRUE(relabelled.modules[0].unloaded);
  auto expected =
      retarget_code_object(original_entry(*file, 0, "hipv4-amdgcn-amd-amdhsa--gfx1030"), *device_from_spec("gfx1031"));
  ASSERT_TRUE(expected) << expected.error().message();
  EXPECT_EQ(comgr_finds(relabelled.modules[0].bytes, "amdgcn-amd-amdhsa--gfx1031"), *expected);
  EXPECT_NE(relabelled.errors.find("GPU 1 (gfx1031): equivalent hipv4-amdgcn-amd-amdhsa--gfx1030"), std::string::npos)
      << relabelled.errors;
}

TEST(Preload, AHotswapPassesOutputIsWrittenForTheGpu) {
  // Only gfx1250 code, on a gfx90a: with the hotswap tier on and a plugin
  // validated for gfx1250 -> gfx90a (its output: clang-22's gfx90a object),
  // the runtime gets a bundle whose gfx90a entry is the pass's output.
  const std::string bundle = std::string(COLOAD_FIXTURE_DIR) + "/select/gfx1250_only.hipfb";
  const std::vector<std::string> gpu{"COLOAD_DEVICES=gfx90a:xnack-",
                                     std::string("COLOAD_HOTSWAP_PLUGIN=") + COLOAD_PLUGIN_EMITS_GFX90A};
  std::vector<std::string> on = gpu;
  on.insert(on.end(), {"COLOAD_HOTSWAP=1", "COLOAD_LOG=info"});
  const ProbeRun transformed = probe("7.0.70000", "module:" + bundle, on);
  ASSERT_EQ(transformed.status, 0) << transformed.errors;
  ASSERT_EQ(transformed.modules.size(), 1u);
  EXPECT_NE(transformed.modules[0].image, transformed.given.at(0));
  EXPECT_EQ(comgr_finds(transformed.modules[0].bytes, "amdgcn-amd-amdhsa--gfx90a:xnack-"),
            testing::file_bytes(std::string(COLOAD_FIXTURE_DIR) + "/co/gfx90a.co"));
  EXPECT_NE(transformed.errors.find("GPU 0 (gfx90a:sramecc+:xnack-): hotswap hipv4-amdgcn-amd-amdhsa--gfx1250 as "
                                    "hipv4-amdgcn-amd-amdhsa--gfx90a\n"),
            std::string::npos)
      << transformed.errors;
  // The tier off (the plugin named, not switched on): the image as it was, and the no-fit line.
  const ProbeRun off = probe("7.0.70000", "module:" + bundle, gpu);
  ASSERT_EQ(off.status, 0) << off.errors;
  ASSERT_EQ(off.modules.size(), 1u);
  EXPECT_EQ(off.modules[0].image, off.given.at(0));
  EXPECT_NE(off.errors.find("has no code object"), std::string::npos) << off.errors;
}

TEST(Preload, AModuleCcobOrBareCodeObjectGetsTheSameTreatment) {
  // hipModuleLoadData of a CCOB (gfx1030 + gfx90a) and of a bare gfx1030
  // code object, on a gfx1031 that opts in: each becomes a bundle whose
  // gfx1031 entry is the relabelled gfx1030 code; a bare gfx90a object on a
  // gfx90a is loaded as it is.
  const Device gfx1031 = *device_from_spec("gfx1031");
  const std::vector<std::string> on_gfx1031{"COLOAD_DEVICES=gfx1031", "COLOAD_EXTENDED_ISA_COMPAT=all"};
  const std::string ccob = std::string(COLOAD_FIXTURE_DIR) + "/compressed/bundler22_v3.hipfb";
  auto file = FatBinary::open(ccob);
  ASSERT_TRUE(file) << file.error().message();
  const std::string bare = std::string(COLOAD_FIXTURE_DIR) + "/co/gfx1030.co";
  const std::vector<std::pair<std::string, Bytes>> cases{
      {ccob, original_entry(*file, 0, "hipv4-amdgcn-amd-amdhsa--gfx1030")}, {bare, testing::file_bytes(bare)}};
  for (const auto& [image, gfx1030] : cases) {
    SCOPED_TRACE(image);
    const ProbeRun run = probe("7.0.70000", "module:" + image, on_gfx1031);
    ASSERT_EQ(run.status, 0) << run.errors;
    ASSERT_EQ(run.modules.size(), 1u);
    EXPECT_NE(run.modules[0].image, run.given.at(0));
    EXPECT_TRUE(run.modules[0].unloaded);
    auto expected = retarget_code_object(gfx1030, gfx1031);
    ASSERT_TRUE(expected) << expected.error().message();
    EXPECT_EQ(comgr_finds(run.modules[0].bytes, "amdgcn-amd-amdhsa--gfx1031"), *expected);
  }
  const ProbeRun native = probe("7.0.70000", "module:" + std::string(COLOAD_FIXTURE_DIR) + "/co/gfx90a.co",
                                {"COLOAD_DEVICES=gfx90a:xnack-"});
  ASSERT_EQ(native.status, 0) << native.errors;
  ASSERT_EQ(native.modules.size(), 1u);
  EXPECT_EQ(native.modules[0].image, native.given.at(0));
}

TEST(Preload, CoLoadRunDryRunListsEachWrappersPlanWithoutRunningIt) {
  const std::string hipk = COLOAD_HIPK_FIXTURE_DIR;
  const std::string command = std::string(COLOAD_CLI) + " run --dry-run --device gfx942 -- ";
  // The original executable: the runtime finds gfx942 code in each of its three wrappers.
  const std::string original = hipk + "/orig/consistent/bin/app_consistent";
  auto [listed, status] = output_of(command + original);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(count_lines(listed, "GPUs (COLOAD_DEVICES): 0 gfx942:sramecc+:xnack-; an unknown HIP release"), 1u)
      << listed;
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(count_lines(listed, original + ": wrapper " + std::to_string(w) +
                                      ": GPU 0 (gfx942:sramecc+:xnack-): the runtime finds "
                                      "hipv4-amdgcn-amd-amdhsa--gfx942"),
              1u)
        << listed;
  }
  EXPECT_EQ(count_lines(listed, ": wrapper "), 3u) << "libc and the loader are left out: " << listed;
  // Its kpack'd build: each wrapper's archive entry is written for a runtime without kpack.
  const std::string kpacked = hipk + "/none/consistent/bin/app_consistent";
  auto [planned, kpack_status] = output_of(command + kpacked);
  EXPECT_EQ(kpack_status, 0);
  EXPECT_EQ(count_lines(planned, "native hipv4-amdgcn-amd-amdhsa--gfx942 as hipv4-amdgcn-amd-amdhsa--gfx942"), 3u)
      << planned;
  // A shared library given itself (a wheel's, which python dlopens): its wrappers are listed.
  auto [library, library_status] = output_of(command + kTemplates);
  EXPECT_EQ(library_status, 0);
  EXPECT_EQ(count_lines(library, kTemplates + ": wrapper "), kUnits) << library;
  // A statically linked program is not run (its loader cannot list it; it would run itself).
  const fs::path copy = fs::temp_directory_path() / ("coload_static_" + std::to_string(::getpid()));
  fs::copy_file(COLOAD_STATIC_PROGRAM, copy, fs::copy_options::overwrite_existing);
  const fs::path ran = copy.string() + ".ran";
  auto [static_listed, static_status] = output_of(command + copy.string());
  EXPECT_EQ(static_status, 0);
  EXPECT_EQ(count_lines(static_listed, ": wrapper "), 0u) << static_listed;
  EXPECT_FALSE(fs::exists(ran)) << "the dry run ran the program";
  EXPECT_EQ(output_of(std::string(COLOAD_CLI) + " run --device gfx942 -- " + copy.string()).second, 0);
  EXPECT_TRUE(fs::exists(ran)) << "coload run itself runs it";
  fs::remove(copy);
  fs::remove(ran);
  // A bad device list: the preload would pass everything on; the dry run says why and fails.
  auto [refused, refused_status] =
      output_of("COLOAD_DEVICES=gfx9999 " + std::string(COLOAD_CLI) + " run --dry-run -- " + original + " 2>&1");
  EXPECT_EQ(refused_status, 1);
  EXPECT_NE(refused.find("coload: run --dry-run: COLOAD_DEVICES \"gfx9999\""), std::string::npos) << refused;
}

}  // namespace
}  // namespace coload
