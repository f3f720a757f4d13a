// The test HSA runtime's state, shared by its two halves: fake_hsa_state.cpp
// (the script, the releases, counters and checks) and fake_hsa_api.cpp (the
// HSA entry points coload calls). What it models and how it is scripted:
// fake_hsa_state.cpp's opening comment. Internal to the test library.
#pragma once

#include <hsa/hsa.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fake_elf.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace coload::fake_hsa {

/// What one ROCr release does, as far as coload can tell (docs/loading.md,
/// "HSA releases").
struct Release {
  const char* name;     ///< the ROCm release: "5.0", "6.2", …
  unsigned rocr_minor;  ///< ROCr 1.<minor>: what HSA_AMD_SYSTEM_INFO_BUILD_VERSION starts with
  unsigned max_cov;     ///< highest code object version its loader takes
  bool lists_generic;   ///< agents list their family's generic ISA after the native one
  /// SVM_DIRECT_HOST_ACCESS writes a 32-bit CU count over its bool (ROCm 5.0/5.1's missing break)
  bool svm_query_falls_through;
  /// The generic targets its loader's GetMachInfo knows (a name; others are
  /// INVALID_CODE_OBJECT): none before 1.14, four in 1.14, six from 1.15.
  unsigned known_generics;
  /// KERNEL_DYNAMIC_CALLSTACK is the descriptor's bit (from ROCr 1.7); false for every kernel before.
  bool reads_dynamic_callstack;
};
/// The release named `name`; null when there is none of that name.
const Release* find_release(const std::string& name);

struct Agent {
  bool gpu = false;
  std::vector<std::string> isas;  // target IDs, without the amdgcn-amd-amdhsa-- prefix
  std::uint64_t lds = 65536;
  std::uint32_t wave = 64;
  std::optional<std::uint32_t> asic;
};

/// The bytes a reader was given, and their checksum then.
struct ReaderView {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::uint64_t checksum = 0;
};

// A loaded symbol: `address` is a kernel's kernel object or a variable's
// address; `handle` is its hsa_executable_symbol_t.
struct Symbol {
  coload::fake::CodeObjectSymbol read;
  std::uint64_t address = 0;
  std::uint64_t handle = 0;
};

struct Executable {
  bool frozen = false;
  std::map<std::uint64_t, ReaderView> readers;                      // loaded from, by reader handle
  std::map<std::pair<std::string, std::uint64_t>, Symbol> symbols;  // (name, agent) → symbol
};

struct Failure {
  hsa_status_t status;
  long after = 0;
};

struct State {
  std::mutex mutex;
  const Release* release = nullptr;
  std::string build_version;  // HSA_AMD_SYSTEM_INFO_BUILD_VERSION's answer, quoted as ROCr's is
  std::vector<Agent> agents;
  std::map<std::string, Failure> failures;
  std::set<std::string> missing;
  std::map<std::string, std::map<std::string, std::uint32_t>> overrides;
  unsigned max_cov = 6;
  long refcount = 0;
  std::map<std::string, long> counters;
  std::map<std::uint64_t, ReaderView> reader_views;  // the caller's bytes
  std::map<std::uint64_t, Executable> executables;
  std::map<std::uint64_t, Symbol> symbol_handles;
  std::uint64_t next_handle = 0x1000;

  ~State();  // marks the runtime torn down (alive())
};

/// The library's state. Call alive() first: after exit has destroyed it,
/// this is a dead object.
State& state();

/// Ends the process (stderr "coload_test_hsa: <function> called after the HSA
/// runtime was torn down", _exit(86)) when `function` runs after the state's
/// static destructor: what a ROCr called from static destructors would meet.
void alive(const char* function);

/// Sets the release's answers (build version, code object versions). Under the state's lock.
void set_release(State& s, const Release& release);

/// FNV-1a of the bytes a reader was given; re-checked when they are dropped.
std::uint64_t checksum(const std::byte* data, std::size_t size);
/// Counts bytes_changed when `view`'s bytes no longer have their checksum.
void recheck(State& s, const ReaderView& view);

/// Under the caller's lock: counts the call and returns the scripted failure, if due.
hsa_status_t enter(State& s, const char* function, bool needs_init = true);

constexpr std::uint64_t kAgentBase = 0xa0000, kIsaBase = 0xb0000, kPoolBase = 0xc0000;

/// The agent `handle` names; null for any other handle.
Agent* find_agent(State& s, std::uint64_t handle);

/// The ISAs hsa_agent_iterate_isas lists: the script's, then (in releases
/// that list it) the native processor's generic, with the features it has.
std::vector<std::string> listed_isas(const State& s, const Agent& agent);

/// A processor or generic target of coload's table, by name or EF_AMDGPU_MACH.
struct Target {
  const char* name;
  std::uint32_t mach;
  const char* generic_family;  ///< "" for a generic target or a processor without one
  unsigned min_generic_version;
  bool generic;
  bool xnack;    ///< selectable xnack
  bool sramecc;  ///< selectable sramecc
};
const Target* find_target(const std::string& name);
const Target* find_target(std::uint32_t mach);

/// Whether the release's loader knows `target`'s EF_AMDGPU_MACH (GetMachInfo).
bool loader_knows(const Release& release, const Target& target);

/// ISA target ID → (target, xnack, sramecc) with features as 0 (absent), '+' or '-'.
struct IsaFeatures {
  const Target* target = nullptr;
  char xnack = 0, sramecc = 0;
};
std::optional<IsaFeatures> parse_isa(const std::string& isa);

/// The statuses a script may name, with hsa_status_string's texts.
struct StatusName {
  const char* name;
  hsa_status_t status;
  const char* text;
};
extern const StatusName kStatuses[];
extern const std::size_t kStatusCount;

}  // namespace coload::fake_hsa

#define ENTER(...)                                            \
  ::coload::fake_hsa::alive(__func__);                        \
  ::coload::fake_hsa::State& s = ::coload::fake_hsa::state(); \
  std::lock_guard<std::mutex> lock(s.mutex);                  \
  if (hsa_status_t entered = ::coload::fake_hsa::enter(s, __VA_ARGS__)) return entered
