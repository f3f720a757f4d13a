// The preload tests' runs (tests/preload_test.cpp, preload_run_test.cpp):
// preload_probe of a HIP library (or an image for hipModuleLoadData) under
// LD_PRELOAD=libcoload_preload.so in front of the recording HIP runtime of a
// release (tests/support/preload_recording_hip.c, CLR's magic check), and
// what that runtime received; comgr's own lookup (Debian's comgr,
// amd_comgr_lookup_code_object with a GPU's ISA name, as CLR's comgr
// unbundler asks) on each bundle it was handed.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "coload/fat_binary.h"
#include "loaded_wrappers.h"
#include "select/comgr_lookup.h"
#include "test_util.h"

extern char** environ;

namespace coload::preload_testing {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

inline const std::string kTemplates = COLOAD_TEMPLATE_LIBRARY;
inline constexpr std::size_t kUnits = 104;

/// The recording runtime of `release`: "7.0.70000" under ROCm's names, or
/// "wheel6", a wheel's torch/lib/libamdhip64.so (SONAME libamdhip64.so.6).
inline std::string runtime(const std::string& release) {
  if (release == "wheel6") return std::string(COLOAD_PRELOAD_HIP_DIR) + "/wheel6/torch/lib/libamdhip64.so";
  if (release == "kpack7") return std::string(COLOAD_PRELOAD_HIP_DIR) + "/kpack7/libamdhip64.so.7.1.70100";
  return std::string(COLOAD_PRELOAD_HIP_DIR) + "/" + release + "/libamdhip64.so." + release;
}

/// One registration as the runtime received it (received.tsv).
struct Received {
  bool accepted = false;
  std::string object;  ///< the loaded object holding the record, or "anonymous"
  std::uint64_t offset = 0;
  std::string address;  ///< the record's address, as %p prints it
  Bytes bundle;         ///< for an anonymous record coload made: the bundle it points at
};

struct ProbeRun {
  int status = -1;
  std::string errors;  ///< the probe's stderr
  std::vector<Received> received;
  std::vector<std::string> given;  ///< hostile: the addresses of the records the probe registered
  struct Module {
    std::string image;  ///< the address hipModuleLoadData was given
    bool unloaded = false;
    Bytes bytes;
  };
  std::vector<Module> modules;
};

/// preload_probe of `library` in front of HIP `release`, with `settings`
/// (NAME=value) added to an environment without COLOAD_* variables;
/// `preload` false runs it without libcoload_preload.so.
inline ProbeRun probe(const std::string& release, const std::string& library, const std::vector<std::string>& settings,
                      bool preload = true, std::vector<std::string> runner = {}) {
  static int serial = 0;
  const fs::path dir =
      fs::temp_directory_path() / ("coload_preload_" + std::to_string(::getpid()) + "_" + std::to_string(serial++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> environment;
  for (char** variable = environ; *variable; ++variable) {
    const std::string_view text(*variable);
    if (!text.starts_with("COLOAD_") && !text.starts_with("LD_PRELOAD=")) environment.emplace_back(text);
  }
  if (preload && runner.empty()) environment.push_back(std::string("LD_PRELOAD=") + COLOAD_PRELOAD_LIBRARY);
  environment.insert(environment.end(), settings.begin(), settings.end());
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  // The probe, or `runner -- probe` (coload run).
  if (!runner.empty()) runner.push_back("--");
  for (std::string word : {std::string(COLOAD_PRELOAD_PROBE), runtime(release), library, dir.string()})
    runner.push_back(std::move(word));
  std::vector<char*> argv;
  for (std::string& word : runner) argv.push_back(word.data());
  argv.push_back(nullptr);
  const std::string probe_path = runner.front();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string errors_path = (dir / "stderr.txt").string();
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ProbeRun run;
  pid_t child = 0;
  EXPECT_EQ(posix_spawn(&child, probe_path.c_str(), &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream errors(errors_path);
  run.errors.assign(std::istreambuf_iterator<char>(errors), {});
  // index, accepted, object, offset, address
  for (const auto& row : testing::read_tsv((dir / "received.tsv").string())) {
    if (row.size() < 5) continue;
    Received received{
        .accepted = row[1] == "1", .object = row[2], .offset = std::stoull(row[3], nullptr, 16), .address = row[4]};
    const fs::path bundle = dir / ("wrapper_" + row[0] + ".bundle");
    if (fs::exists(bundle)) received.bundle = testing::file_bytes(bundle.string());
    run.received.push_back(std::move(received));
  }
  for (const auto& row : testing::read_tsv((dir / "given.tsv").string()))
    if (row.size() >= 2) run.given.push_back(row[1]);
  for (const auto& row : testing::read_tsv((dir / "modules.tsv").string())) {
    if (row.size() < 3) continue;
    run.modules.push_back(
        {row[1], row[2] == "1", testing::file_bytes((dir / ("module_" + row[0] + ".image")).string())});
  }
  fs::remove_all(dir);
  return run;
}

/// The link-time addresses of `library`'s wrapper records (.hipFatBinSegment), in order.
inline std::vector<std::uint64_t> wrapper_addresses(const std::string& library) {
  const Bytes file = testing::file_bytes(library);
  Elf64_Ehdr header;
  std::memcpy(&header, file.data(), sizeof header);
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), file.data() + header.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  const char* names = reinterpret_cast<const char*>(file.data()) + sections[header.e_shstrndx].sh_offset;
  std::vector<std::uint64_t> addresses;
  for (const Elf64_Shdr& section : sections) {
    if (std::string_view(names + section.sh_name) != ".hipFatBinSegment") continue;
    for (std::uint64_t at = 0; at + 24 <= section.sh_size; at += 24) addresses.push_back(section.sh_addr + at);
  }
  return addresses;
}

/// What comgr's lookup finds in `bundle` for the GPU named `isa`; empty when nothing.
inline Bytes comgr_finds(const Bytes& bundle, const std::string& isa) {
  auto comgr = detail::Comgr::load();
  EXPECT_TRUE(comgr) << comgr.error().message();
  if (!comgr) return {};
  const std::string names[] = {isa};
  auto hits = (*comgr)->lookup(bundle, detail::ComgrInput::Bundle, names);
  EXPECT_TRUE(hits) << hits.error().message();
  if (!hits || !(*hits)[0]) return {};
  const auto& hit = *(*hits)[0];
  return Bytes(bundle.begin() + hit.offset, bundle.begin() + hit.offset + hit.size);
}

/// The entry of bundle `index` of the original library with entry ID `id`.
inline Bytes original_entry(const FatBinary& library, std::size_t index, const std::string& id) {
  auto bundle = library.read(index);
  EXPECT_TRUE(bundle) << bundle.error().message();
  if (!bundle) return {};
  for (const BundleEntry& entry : bundle->entries())
    if (entry.id == id) return Bytes(entry.bytes.begin(), entry.bytes.end());
  ADD_FAILURE() << "bundle " << index << " has no " << id;
  return {};
}

inline std::size_t count_lines(const std::string& text, const std::string& containing) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.find(containing) != std::string::npos;
  return count;
}

/// What `command` prints on stdout, and its exit status.
inline std::pair<std::string, int> output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {out, -1};
  char buffer[4096];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, got);
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace coload::preload_testing
