// libcoload_preload.so in front of a HIP runtime (docs/preload.md): the
// clang-built template library (libhip_templates.so, 104 wrappers in four
// groups of target lists, docs/fixtures.md) and a kpack'd library, loaded by
// preload_probe (preload_probe_run.h). What the runtime receives is checked:
// the original wrappers, same pointers, where it finds native code itself;
// else a HIPF bundle in which comgr's own lookup finds exactly the code
// object coload chose, relabelled as `coload extract --retarget` relabels it.
// Modules, hotswap, `coload run` and the ID screen: preload_run_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "coload/detail/hotswap.h"
#include "coload/detail/kpack_archive.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "fake_topology.h"
#include "preload_probe_run.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace preload_testing;

TEST(Preload, AWrapperTheRuntimeServesGoesOnUntouched) {
  // gfx942 on HIP 7.0: units 1 and 3 hold gfx942 code, unit 0 gfx9-4-generic
  // (HIP 7 loads generics); unit 2 (gfx90a:xnack+, gfx1100) has nothing for it.
  const ProbeRun run = probe("7.0.70000", kTemplates, {"COLOAD_DEVICES=gfx942"});
  ASSERT_EQ(run.status, 0) << run.errors;
  const std::vector<std::uint64_t> originals = wrapper_addresses(kTemplates);
  ASSERT_EQ(originals.size(), kUnits);
  ASSERT_EQ(run.received.size(), kUnits) << run.errors;
  for (std::size_t i = 0; i < kUnits; ++i) {
    EXPECT_TRUE(run.received[i].accepted) << i;
    EXPECT_EQ(run.received[i].object, kTemplates) << i;
    EXPECT_EQ(run.received[i].offset, originals[i]) << "wrapper " << i << " is not the library's own";
  }
  // The one line for a GPU without a fit, naming the binary, the GPU and the nearest miss.
  EXPECT_EQ(count_lines(run.errors, "coload:"), 1u) << "nothing else is printed by default: " << run.errors;
  EXPECT_NE(run.errors.find(kTemplates + ": wrapper 2: GPU 0 (gfx942:sramecc+:xnack-) has no code object: "
                                         "no code object fits device gfx942:sramecc+:xnack-"),
            std::string::npos)
      << run.errors;
}

/// The lines of the files in `dir` named ccob-tables-*, each file's in order.
std::vector<std::vector<std::string>> kept_tables(const fs::path& dir) {
  std::vector<std::vector<std::string>> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with("ccob-tables-")) continue;
    std::ifstream in(entry.path());
    std::vector<std::string>& lines = files.emplace_back();
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  return files;
}

/// Rewrites the CCOB lines of the kept file: `edit` of each line's words.
void edit_kept_tables(const fs::path& dir, const std::function<void(std::vector<std::string>&)>& edit) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with("ccob-tables-")) continue;
    std::ifstream in(entry.path());
    std::string text, line;
    std::getline(in, line);
    text = line + "\n";
    while (std::getline(in, line)) {
      std::vector<std::string> words;
      std::istringstream split(line);
      for (std::string word; split >> word;) words.push_back(word);
      edit(words);
      for (std::size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
      text += "\n";
    }
    in.close();
    std::ofstream(entry.path(), std::ios::trunc) << text;
  }
}

TEST(Preload, ACcobsTableIdsAreKeptPerLibraryFileBetweenRuns) {
  // The 39 CCOB units' IDs are kept in the verified cache after the first
  // run; a later run decides from them. Shown by a doctored file: when every
  // kept line claims gfx942 code, the 26 CCOB units without it pass on
  // unplanned (no line at info); a line whose MD5 was not checked does not
  // count in Verify mode; a library file touched since gives a new file.
  const fs::path dir = fs::temp_directory_path() / ("coload_tables_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  const fs::path library = dir / "libhip_templates.so";
  fs::copy_file(kTemplates, library);
  const std::vector<std::string> settings{"COLOAD_DEVICES=gfx942", "COLOAD_LOG=info",
                                          "COLOAD_VERIFY_CACHE=" + (dir / "cache").string()};
  const std::string no_fit = ": GPU 0 (gfx942:sramecc+:xnack-) has no code object";
  const ProbeRun first = probe("7.0.70000", library.string(), settings);
  ASSERT_EQ(first.status, 0) << first.errors;
  EXPECT_EQ(count_lines(first.errors, no_fit), 26u) << first.errors;
  auto files = kept_tables(dir / "cache");
  ASSERT_EQ(files.size(), 1u);
  ASSERT_EQ(files[0].size(), 1u + 39u);
  EXPECT_TRUE(files[0][0].starts_with("coload CCOB tables 1: device ")) << files[0][0];
  for (std::size_t i = 1; i < files[0].size(); ++i) {
    EXPECT_NE(files[0][i].find(" 1 "), std::string::npos) << "checked in Verify mode: " << files[0][i];
    EXPECT_NE(files[0][i].find(" host-x86_64-unknown-linux-gnu-"), std::string::npos) << files[0][i];
  }
  // Every kept line says gfx942: the runs decide from the file, not the stream.
  edit_kept_tables(dir / "cache", [](std::vector<std::string>& words) {
    words.resize(4);
    words[3] = "1";
    words.push_back("hipv4-amdgcn-amd-amdhsa--gfx942");
  });
  const ProbeRun kept = probe("7.0.70000", library.string(), settings);
  ASSERT_EQ(kept.status, 0) << kept.errors;
  EXPECT_EQ(count_lines(kept.errors, no_fit), 0u) << kept.errors;
  ASSERT_EQ(kept.received.size(), kUnits);
  for (const Received& received : kept.received) EXPECT_TRUE(received.bundle.empty()) << "passed on untouched";
  // Lines not checked: read again in Verify mode (and kept checked), used in Skip mode.
  edit_kept_tables(dir / "cache", [](std::vector<std::string>& words) { words[2] = "0"; });
  std::vector<std::string> skip = settings;
  skip.push_back("COLOAD_HASH_CHECK=skip");
  EXPECT_EQ(count_lines(probe("7.0.70000", library.string(), skip).errors, no_fit), 0u);
  EXPECT_EQ(count_lines(probe("7.0.70000", library.string(), settings).errors, no_fit), 26u);
  EXPECT_EQ(kept_tables(dir / "cache")[0].size(), 1u + 39u + 39u);
  // The library written since (a new mtime and ctime): its file starts anew.
  edit_kept_tables(dir / "cache", [](std::vector<std::string>& words) {
    words.resize(4);
    words[2] = "1";
    words[3] = "1";
    words.push_back("hipv4-amdgcn-amd-amdhsa--gfx942");
  });
  fs::last_write_time(library, fs::file_time_type::clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(count_lines(probe("7.0.70000", library.string(), settings).errors, no_fit), 26u);
  files = kept_tables(dir / "cache");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].size(), 1u + 39u);
  fs::remove_all(dir);
}

TEST(Preload, ASameIsaGpuGetsTheRelabelledCodeComgrFinds) {
  auto library = FatBinary::open(kTemplates);
  ASSERT_TRUE(library) << library.error().message();
  const Device gfx1031 = *device_from_spec("gfx1031");
  for (const bool opted_in : {false, true}) {
    SCOPED_TRACE(opted_in ? "with COLOAD_EXTENDED_ISA_COMPAT=all" : "without");
    std::vector<std::string> settings{"COLOAD_DEVICES=gfx1031", "COLOAD_LOG=info"};
    if (opted_in) settings.push_back("COLOAD_EXTENDED_ISA_COMPAT=all");
    const ProbeRun run = probe("7.0.70000", kTemplates, settings);
    ASSERT_EQ(run.status, 0) << run.errors;
    ASSERT_EQ(run.received.size(), kUnits) << run.errors;
    std::size_t rewritten = 0;
    for (std::size_t i = 0; i < kUnits; ++i) {
      const Received& received = run.received[i];
      EXPECT_TRUE(received.accepted) << i;
      // Unit group 3 (gfx942, gfx1100, gfx1030) is the one with gfx1030 code.
      if (!opted_in || i % 4 != 3) {
        EXPECT_EQ(received.object, kTemplates) << i;
        continue;
      }
      ++rewritten;
      ASSERT_EQ(received.object, "anonymous") << i;
      const Bytes found = comgr_finds(received.bundle, "amdgcn-amd-amdhsa--gfx1031");
      ASSERT_FALSE(found.empty()) << "comgr finds nothing for gfx1031 in wrapper " << i;
      auto expected = retarget_code_object(original_entry(*library, i, "hipv4-amdgcn-amd-amdhsa--gfx1030"), gfx1031);
      ASSERT_TRUE(expected) << expected.error().message();
      EXPECT_EQ(found, *expected) << "wrapper " << i;
      // And what `coload extract --device gfx1031 --retarget` writes of that bundle.
      const std::string out = (fs::temp_directory_path() / ("coload_retarget_" + std::to_string(::getpid()))).string();
      const std::string extract = std::string(COLOAD_CLI) + " extract --device gfx1031 --retarget --bundle " +
                                  std::to_string(i) + " -o " + out + " " + kTemplates;
      ASSERT_EQ(std::system(extract.c_str()), 0) << extract;
      EXPECT_EQ(found, testing::file_bytes(out)) << "wrapper " << i;
      fs::remove(out);
    }
    EXPECT_EQ(rewritten, opted_in ? kUnits / 4 : 0u);
    EXPECT_EQ(count_lines(run.errors,
                          ": equivalent hipv4-amdgcn-amd-amdhsa--gfx1030 as "
                          "hipv4-amdgcn-amd-amdhsa--gfx1031"),
              rewritten)
        << run.errors;
  }
}

TEST(Preload, AGenericIsRelabelledForAReleaseWithoutGenerics) {
  auto library = FatBinary::open(kTemplates);
  ASSERT_TRUE(library) << library.error().message();
  const Device gfx1101 = *device_from_spec("gfx1101");
  // Unit group 0 holds gfx11-generic (v6): HIP 7.0 loads it as it is, 6.2 only
  // relabelled, and so does a wheel's HIP 6 whose minor its names do not say.
  for (const std::string release : {"7.0.70000", "6.2.60200", "wheel6"}) {
    SCOPED_TRACE(release);
    const ProbeRun run = probe(release, kTemplates, {"COLOAD_DEVICES=gfx1101"});
    ASSERT_EQ(run.status, 0) << run.errors;
    ASSERT_EQ(run.received.size(), kUnits) << run.errors;
    for (std::size_t i = 0; i < kUnits; ++i) {
      const Received& received = run.received[i];
      if (release == "7.0.70000" || i % 4 != 0) {
        EXPECT_EQ(received.object, kTemplates) << i;
        continue;
      }
      ASSERT_EQ(received.object, "anonymous") << i;
      const Bytes found = comgr_finds(received.bundle, "amdgcn-amd-amdhsa--gfx1101");
      ASSERT_FALSE(found.empty()) << i;
      auto expected =
          retarget_code_object(original_entry(*library, i, "hipv4-amdgcn-amd-amdhsa--gfx11-generic"), gfx1101);
      ASSERT_TRUE(expected) << expected.error().message();
      EXPECT_EQ(found, *expected) << "wrapper " << i;
      auto target = read_code_object_target(found);
      ASSERT_TRUE(target);
      EXPECT_EQ(target->target.str(), "gfx1101");
      EXPECT_EQ(target->generic_version, 0u);
    }
  }
}

TEST(Preload, Hip5TakesNeitherGenericsNorCodeObjectV6) {
  // HIP 5.7 (libamdhip64.so.5.7.50700) loads code object v4 and v5 only:
  // the gfx11-generic units (v6) have nothing for a gfx1101 even relabelled,
  // so they go on as they came, with the no-fit line; gfx1030 code (v5) is
  // still relabelled for a gfx1031 that opts in.
  const ProbeRun generic = probe("5.7.50700", kTemplates, {"COLOAD_DEVICES=gfx1101", "COLOAD_LOG=info"});
  ASSERT_EQ(generic.status, 0) << generic.errors;
  ASSERT_EQ(generic.received.size(), kUnits) << generic.errors;
  for (std::size_t i = 0; i < kUnits; ++i) EXPECT_EQ(generic.received[i].object, kTemplates) << i;
  EXPECT_NE(generic.errors.find(kTemplates + ": wrapper 0: GPU 0 (gfx1101) has no code object"), std::string::npos)
      << generic.errors;
  EXPECT_NE(generic.errors.find("nearest miss: gfx11-generic present; code object version 6; coload offers versions "
                                "4, 5 to HIP 5.7 (libamdhip64.so.5.7.50700)"),
            std::string::npos)
      << generic.errors;
  const ProbeRun same_isa =
      probe("5.7.50700", kTemplates, {"COLOAD_DEVICES=gfx1031", "COLOAD_EXTENDED_ISA_COMPAT=all"});
  ASSERT_EQ(same_isa.status, 0) << same_isa.errors;
  ASSERT_EQ(same_isa.received.size(), kUnits) << same_isa.errors;
  for (std::size_t i = 0; i < kUnits; ++i) {
    if (i % 4 != 3) continue;
    ASSERT_EQ(same_isa.received[i].object, "anonymous") << i;
    EXPECT_FALSE(comgr_finds(same_isa.received[i].bundle, "amdgcn-amd-amdhsa--gfx1031").empty()) << i;
  }
}

TEST(Preload, TwoGpusOfDifferentIsasEachFindTheirOwn) {
  auto library = FatBinary::open(kTemplates);
  ASSERT_TRUE(library) << library.error().message();
  const ProbeRun run =
      probe("7.0.70000", kTemplates, {"COLOAD_DEVICES=gfx90a:xnack-,gfx1031", "COLOAD_EXTENDED_ISA_COMPAT=gfx1031"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.received.size(), kUnits) << run.errors;
  for (std::size_t i = 3; i < kUnits; i += 4) {  // gfx942, gfx1100, gfx1030: only gfx1031 gets code
    const Received& received = run.received[i];
    ASSERT_EQ(received.object, "anonymous") << i;
    EXPECT_FALSE(comgr_finds(received.bundle, "amdgcn-amd-amdhsa--gfx1031").empty()) << i;
    EXPECT_TRUE(comgr_finds(received.bundle, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").empty()) << i;
  }
  // Unit group 1 (gfx90a xnack any, gfx942): gfx90a finds its own, gfx1031 nothing: untouched.
  for (std::size_t i = 1; i < kUnits; i += 4) EXPECT_EQ(run.received[i].object, kTemplates) << i;
}

TEST(Preload, AGpuNothingFitsGetsTheOriginalsAndOneLine) {
  const ProbeRun run = probe("7.0.70000", kTemplates, {"COLOAD_DEVICES=gfx908"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.received.size(), kUnits);
  for (const Received& received : run.received) EXPECT_EQ(received.object, kTemplates);
  EXPECT_EQ(count_lines(run.errors, "GPU 0 (gfx908:sramecc+:xnack-) has no code object"), 1u) << run.errors;
  const ProbeRun told = probe("7.0.70000", kTemplates, {"COLOAD_DEVICES=gfx908", "COLOAD_LOG=info"});
  EXPECT_EQ(count_lines(told.errors, "GPU 0 (gfx908:sramecc+:xnack-) has no code object"), kUnits) << told.errors;
}

TEST(Preload, ABadSettingPassesEverythingOnAndSaysWhy) {
  const ProbeRun run = probe("7.0.70000", kTemplates, {"COLOAD_DEVICES=gfx9999", "COLOAD_LOG=warn"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.received.size(), kUnits);
  for (const Received& received : run.received) EXPECT_EQ(received.object, kTemplates);
  EXPECT_EQ(count_lines(run.errors, "coload:"), 1u) << run.errors;
  EXPECT_NE(run.errors.find("COLOAD_DEVICES \"gfx9999\""), std::string::npos) << run.errors;
}

TEST(Preload, AKpackdLibraryReachesARuntimeWithoutKpackAsHipf) {
  const std::string library = std::string(COLOAD_HIPK_FIXTURE_DIR) + "/zstd-per-kernel/consistent/lib/libconsistent.so";
  const std::string archive =
      std::string(COLOAD_HIPK_FIXTURE_DIR) + "/zstd-per-kernel/consistent/.kpack/consistent_gfx942.kpack";
  // Without coload, CLR's check refuses every HIPK record.
  const ProbeRun bare = probe("7.0.70000", library, {}, false);
  ASSERT_EQ(bare.status, 0) << bare.errors;
  ASSERT_EQ(bare.received.size(), 3u);
  for (const Received& received : bare.received) EXPECT_FALSE(received.accepted);

  const ProbeRun run = probe("7.0.70000", library, {"COLOAD_DEVICES=gfx942"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.received.size(), 3u) << run.errors;
  const Bytes archive_file = testing::file_bytes(archive);
  auto listed = detail::kpack::Archive::parse(SourceReader(archive_file));
  ASSERT_TRUE(listed) << listed.error().message();
  for (std::size_t i = 0; i < 3; ++i) {
    const Received& received = run.received[i];
    EXPECT_TRUE(received.accepted) << i;
    ASSERT_EQ(received.object, "anonymous") << i;
    const Bytes found = comgr_finds(received.bundle, "amdgcn-amd-amdhsa--gfx942");
    ASSERT_FALSE(found.empty()) << i;
    // The archive's entry for key "consistent/lib/libconsistent.so#<i>", target gfx942.
    const std::string key = "consistent/lib/libconsistent.so#" + std::to_string(i);
    const auto entries = (*listed)->entries();
    auto entry = std::find_if(entries.begin(), entries.end(),
                              [&](const detail::kpack::Entry& e) { return e.key == key && e.target == "gfx942"; });
    ASSERT_NE(entry, entries.end()) << key;
    std::vector<std::byte> decoded;
    auto bytes = (*listed)->bytes(*entry, decoded);
    ASSERT_TRUE(bytes) << bytes.error().message();
    const Bytes expected(bytes->begin(), bytes->end());
    EXPECT_EQ(found, expected) << "wrapper " << i;
  }
}

TEST(Preload, AKpackdLibraryGoesOnAsItCameToARuntimeWithRocmKpack) {
  // TheRock's CLR (linked to librocm_kpack) reads HIPK records and their
  // archives itself, lazily: coload, offering no GPU more, passes each on
  // untouched and reads no archive. ROCM_KPACK_DISABLE=1 turns every kpack
  // reader off, CLR's and coload's: the records go on as they came (CLR
  // refuses them), and coload says that it looked at no archive.
  const std::string library = std::string(COLOAD_HIPK_FIXTURE_DIR) + "/zstd-per-kernel/consistent/lib/libconsistent.so";
  const std::vector<std::uint64_t> originals = wrapper_addresses(library);
  ASSERT_EQ(originals.size(), 3u);
  for (const std::vector<std::string>& settings : std::vector<std::vector<std::string>>{
           {"COLOAD_DEVICES=gfx942", "COLOAD_LOG=info"},
           {"COLOAD_DEVICES=gfx942", "COLOAD_EXTENDED_ISA_COMPAT=all"}}) {  // planned, and still the runtime's
    const ProbeRun run = probe("kpack7", library, settings);
    ASSERT_EQ(run.status, 0) << run.errors;
    ASSERT_EQ(run.received.size(), 3u) << run.errors;
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(run.received[i].accepted) << i;
      EXPECT_EQ(run.received[i].object, library) << i;
      EXPECT_EQ(run.received[i].offset, originals[i]) << i;
    }
    EXPECT_EQ(count_lines(run.errors, "coload:"), 0u) << run.errors;
  }
  const ProbeRun disabled = probe("kpack7", library, {"COLOAD_DEVICES=gfx942", "ROCM_KPACK_DISABLE=1"});
  ASSERT_EQ(disabled.status, 0) << disabled.errors;
  ASSERT_EQ(disabled.received.size(), 3u) << disabled.errors;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(disabled.received[i].accepted) << i;
    EXPECT_EQ(disabled.received[i].offset, originals[i]) << i;
  }
  EXPECT_NE(disabled.errors.find("wrapper 0: GPU 0 (gfx942:sramecc+:xnack-) has no code object: "), std::string::npos)
      << disabled.errors;
  EXPECT_NE(disabled.errors.find("(looked at nothing: ROCM_KPACK_DISABLE)"), std::string::npos) << disabled.errors;
}

TEST(Preload, TheGpusComeFromTheKfdTopology) {
  // A fake machine: a gfx90a (node 1) and a gfx1031 (node 2); HIP_VISIBLE_DEVICES=1
  // leaves the gfx1031 alone, which gets unit group 3's gfx1030 code relabelled.
  const fs::path machine = fs::temp_directory_path() / ("coload_preload_kfd_" + std::to_string(::getpid()));
  fs::remove_all(machine);
  testing::GpuProperties gfx90a, gfx1031;
  gfx1031.gfx_target_version = 100301;
  gfx1031.drm_render_minor = 129;
  testing::write_fake_topology(machine, machine / "dri", {gfx90a, gfx1031});
  const std::string root = "COLOAD_KFD_TOPOLOGY=" + machine.string();
  const ProbeRun both = probe("7.0.70000", kTemplates, {root, "COLOAD_EXTENDED_ISA_COMPAT=all", "COLOAD_LOG=info"});
  ASSERT_EQ(both.status, 0) << both.errors;
  EXPECT_NE(both.errors.find("GPU 0 (gfx90a:sramecc-:xnack-)"), std::string::npos) << both.errors;
  EXPECT_NE(both.errors.find("GPU 1 (gfx1031)"), std::string::npos) << both.errors;
  const ProbeRun one =
      probe("7.0.70000", kTemplates, {root, "HIP_VISIBLE_DEVICES=1", "COLOAD_EXTENDED_ISA_COMPAT=all"});
  ASSERT_EQ(one.status, 0) << one.errors;
  ASSERT_EQ(one.received.size(), kUnits) << one.errors;
  for (std::size_t i = 0; i < kUnits; ++i) {
    EXPECT_EQ(one.received[i].object == "anonymous", i % 4 == 3) << i;
    if (i % 4 == 3) EXPECT_FALSE(comgr_finds(one.received[i].bundle, "amdgcn-amd-amdhsa--gfx1031").empty()) << i;
  }
  // A topology that cannot be read passes everything on, saying why at warn.
  const ProbeRun broken = probe("7.0.70000", kTemplates, {"COLOAD_KFD_TOPOLOGY=/nonexistent", "COLOAD_LOG=warn"});
  ASSERT_EQ(broken.status, 0) << broken.errors;
  for (const Received& received : broken.received) EXPECT_EQ(received.object, kTemplates);
  EXPECT_NE(broken.errors.find("the GPUs cannot be read from the KFD topology"), std::string::npos) << broken.errors;
  fs::remove_all(machine);
}

TEST(Preload, EachMachineOfTheIssueReadFromAFakeKfdTopology) {
  // The machines of issue 37, each a fake KFD topology (no COLOAD_DEVICES):
  // which template units reach the runtime rewritten, and what comgr finds
  // in them for each GPU's ISA name. Unit group 0 holds generics (gfx11-generic,
  // gfx10-3-generic, gfx9-4-generic), group 3 gfx1030 code, none gfx908 code.
  struct Machine {
    std::string name;
    std::vector<std::uint64_t> gfx_target_versions;
    std::string release;
    std::vector<std::string> settings;
    int rewritten_group;            // units i % 4 == this are rewritten; -1: none
    std::vector<std::string> isas;  // what comgr must find in a rewritten unit
  };
  const std::vector<Machine> machines{
      {"gfx942, native", {90402}, "7.0.70000", {}, -1, {}},
      {"gfx1031 without opting in", {100301}, "7.0.70000", {}, -1, {}},
      {"gfx1031 opting in",
       {100301},
       "7.0.70000",
       {"COLOAD_EXTENDED_ISA_COMPAT=all"},
       3,
       {"amdgcn-amd-amdhsa--gfx1031"}},
      {"gfx1101 on a release without generics", {110001}, "6.2.60200", {}, 0, {"amdgcn-amd-amdhsa--gfx1101"}},
      {"gfx1101 on a release with generics", {110001}, "6.4.60400", {}, -1, {}},
      {"gfx90a and gfx1031",
       {90010, 100301},
       "7.0.70000",
       {"COLOAD_EXTENDED_ISA_COMPAT=all"},
       3,
       {"amdgcn-amd-amdhsa--gfx1031"}},
      {"gfx908, nothing fits", {90008}, "7.0.70000", {}, -1, {}},
  };
  for (const Machine& machine : machines) {
    SCOPED_TRACE(machine.name);
    const fs::path root = fs::temp_directory_path() / ("coload_machine_" + std::to_string(::getpid()));
    fs::remove_all(root);
    std::vector<testing::GpuProperties> gpus;
    for (std::size_t i = 0; i < machine.gfx_target_versions.size(); ++i) {
      testing::GpuProperties gpu;
      gpu.gfx_target_version = machine.gfx_target_versions[i];
      gpu.drm_render_minor = 128 + i;
      gpus.push_back(gpu);
    }
    testing::write_fake_topology(root, root / "dri", gpus);
    std::vector<std::string> settings = machine.settings;
    settings.push_back("COLOAD_KFD_TOPOLOGY=" + root.string());
    const ProbeRun run = probe(machine.release, kTemplates, settings);
    fs::remove_all(root);
    ASSERT_EQ(run.status, 0) << run.errors;
    ASSERT_EQ(run.received.size(), kUnits) << run.errors;
    const std::vector<std::uint64_t> originals = wrapper_addresses(kTemplates);
    for (std::size_t i = 0; i < kUnits; ++i) {
      const Received& received = run.received[i];
      EXPECT_TRUE(received.accepted) << i;
      if (static_cast<int>(i % 4) != machine.rewritten_group) {
        EXPECT_EQ(received.object, kTemplates) << i;
        EXPECT_EQ(received.offset, originals[i]) << "wrapper " << i << " is not the library's own";
        continue;
      }
      ASSERT_EQ(received.object, "anonymous") << i;
      for (const std::string& isa : machine.isas) EXPECT_FALSE(comgr_finds(received.bundle, isa).empty()) << i << isa;
    }
    if (machine.name == "gfx908, nothing fits") {
      EXPECT_EQ(count_lines(run.errors, "coload:"), 1u) << run.errors;
      EXPECT_NE(run.errors.find(": wrapper 0: GPU 0 (gfx908"), std::string::npos) << run.errors;
    }
  }
}

TEST(Preload, RecordsNoClangWritesGoOnAsTheyCame) {
  // Garbage for a bundle, a table cut by a PROT_NONE page, a null binary,
  // version 2, another magic, a count of 2^40: the runtime receives each
  // record itself, at its address, and judges it as without coload.
  const ProbeRun bare = probe("7.0.70000", "hostile", {}, false);
  ASSERT_EQ(bare.status, 0) << bare.errors;
  const ProbeRun run = probe("7.0.70000", "hostile", {"COLOAD_DEVICES=gfx90a", "COLOAD_LOG=warn"});
  ASSERT_EQ(run.status, 0) << run.errors;
  ASSERT_EQ(run.given.size(), 6u);
  ASSERT_EQ(run.received.size(), 6u) << run.errors;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(run.received[i].address, run.given[i]) << "record " << i << " was replaced";
    EXPECT_EQ(run.received[i].accepted, bare.received[i].accepted) << i;
  }
  EXPECT_EQ(count_lines(run.errors, "is passed on unchanged"), 6u) << run.errors;
  for (const char* why : {"bytes 5a 5a 5a 5a 5a 5a 5a 5a start no __CLANG_OFFLOAD_BUNDLE__",
                          "num_entries 0x3 at offset 0x18 needs at least 24 bytes per entry, only 0x8 bytes follow",
                          "binary at offset 0x8 is null", "version 2 at offset 0x4 is not 1",
                          "magic 0x58585858 at offset 0x0 is not HIPF",
                          "num_entries 0x10000000000 at offset 0x18 exceeds the 0x1000 entries"})
    EXPECT_NE(run.errors.find(why), std::string::npos) << why << " in: " << run.errors;
}

}  // namespace
}  // namespace coload
