// A test HSA runtime: the subset of the HSA C API coload calls, with scripted
// agents and failures, answering as a chosen ROCr release does, so the HSA
// backend's real call sequence runs without a GPU. Built as
// libcoload_test_hsa.so (file name .so.1.14.0: a ROCr 1.14 built outside
// ROCm, release 6.2 by default), once per release with ROCm's file name
// (libcoload_test_hsa_rocm62.so.1.14.60200, …), as a major 2 and under the
// names wheels give ROCr (libhsa-runtime64.so, libhsa-runtime64.so.1:
// CMakeLists.txt), and dlopen'ed in place of libhsa-runtime64.so.1. This file: the state, the
// script and the releases; fake_hsa_api.cpp: the HSA entry points.
//
// It really reads the code object (minimally, bounds-checked): the ELF
// header (magic, class, machine, EI_ABIVERSION, e_flags: mach, xnack and
// sramecc are checked against the agent's ISAs under ROCr's IsCompatible
// rule, generic targets by family and generic version), and the symbol table
// (../fake_elf.h), whose `.kd` STT_OBJECT symbols become kernel symbols with
// sizes read from their 64-byte descriptors, and whose other non-local
// STT_OBJECT symbols become variable symbols (address in a per-executable
// window, size st_size), as ROCr does. Agent handles are stable: agent i of
// the script is 0xa0000 + i.
//
// Releases (docs/loading.md, "HSA releases"): 5.0 (ROCr 1.5, v4), 5.2 (1.5,
// v4-v5), 6.2 (1.14, v4-v6), 6.4 (1.15, v4-v6, generic ISAs listed and
// loaded), 7.0 (1.18, as 6.4). HSA_AMD_SYSTEM_INFO_BUILD_VERSION answers as
// ROCr does, with the double quotes in the string:
// "\"1.<minor>.<ROCm as MMmmpp>-coload-test\"". In 5.0,
// HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS writes a 32-bit CU count over its
// bool, as ROCr before 5.2 does. In 5.0 and 5.2 (ROCr 1.5)
// KERNEL_DYNAMIC_CALLSTACK is false for every kernel, whatever the
// descriptor says. Loading answers as ROCr's loader, in its order: the ELF is
// read as far as its own headers reach, not by the reader's size; an
// EF_AMDGPU_MACH the release's loader cannot name is INVALID_CODE_OBJECT
// (every generic before 6.2; gfx9-4-generic and gfx12-generic in 6.2); a
// version above the release's is INVALID_CODE_OBJECT; a generic target it
// names but whose ISA is not in its registry (6.2) is INVALID_ISA_NAME; an
// ISA the agent does not run is INCOMPATIBLE_ARGUMENTS.
//
// Checks: each reader's bytes are checksummed at create and re-checked when
// the reader and each executable loaded from it are destroyed (a mismatch
// counts bytes_changed; freed bytes fail under ASan); a load whose ELF
// headers reach past the reader's size counts read_past_size (and the read
// faults under ASan). Any entry point called
// after the library's static state was destroyed (at exit) prints
// "coload_test_hsa: <function> called after the HSA runtime was torn down"
// and _exit(86)s.
//
// Control (looked up with dlsym by the tests):
//   int  coload_test_hsa_script(const char* script)  resets all state (the
//        library's own release again), then runs the script; returns 0, or
//        -1 for a line it does not understand.
//   long coload_test_hsa_counter(const char* name)   a counter (0 if never counted).
// A process that cannot call them before coload opens the library (a HIP
// program whose static constructors register through a layer) sets
// COLOAD_TEST_HSA_SCRIPT instead: the library runs that script when it loads.
// Script: statements separated by ';' or newlines, words by spaces:
//   release 5.0|5.2|6.2|6.4|7.0          answer as that release (first, or it resets max_cov)
//   gpu ISA[,ISA...] [lds=N] [wave=N] [asic=N]   a GPU agent; ISA names are
//        target IDs ("gfx90a:sramecc+:xnack-"), the first is the native one;
//        releases that list generic ISAs add the native one's after these
//   cpu                                 a CPU agent
//   fail FUNCTION STATUS [after=N]      FUNCTION returns HSA_STATUS_ERROR_STATUS
//        ("OUT_OF_RESOURCES") once N calls have succeeded (default 0)
//   missing SYMBOL                      get_symbol_by_name refuses SYMBOL (kernel or variable)
//   symbol SYMBOL kernarg=N|group=N|private=N   overrides a descriptor size
//   max_cov N                           highest code object version loaded (default: the release's)
// Counters: init (successful hsa_init), shut_down (successful), refcount,
// readers_created, readers_destroyed, executables_created,
// executables_destroyed, order_violations (a reader destroyed while an
// executable that loaded it lives), bytes_changed, read_past_size,
// calls.FUNCTION.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "fake_hsa.h"

#ifndef COLOAD_TEST_HSA_RELEASE
#define COLOAD_TEST_HSA_RELEASE "6.2"
#endif

namespace coload::fake_hsa {
namespace {

constexpr Release kReleases[] = {
    {"5.0", 5, 4, false, true, 0, false}, {"5.2", 5, 5, false, false, 0, false}, {"6.2", 14, 6, false, false, 4, true},
    {"6.4", 15, 6, true, false, 6, true}, {"7.0", 18, 6, true, false, 6, true},
};

// The generic targets in the order ROCr's loader learnt them: gfx9, gfx10-1,
// gfx10-3 and gfx11 by ROCm 6.2 (1.14), gfx12 and gfx9-4 in November 2024,
// before 1.15 (ROCm 6.4).
constexpr const char* kLoaderGenerics[] = {"gfx9-generic",  "gfx10-1-generic", "gfx10-3-generic",
                                           "gfx11-generic", "gfx12-generic",   "gfx9-4-generic"};

// Trivially destructible: it must still read true after every destructor ran.
bool torn_down = false;

// coload's own table of processors and generic targets.
enum Xnack { None, OnOff, AlwaysOn };
enum Waves { W64, W32_64, W32 };
constexpr Target kTargets[] = {
#define COLOAD_PROCESSOR(name, mach, major, minor, stepping, family, min_generic, xnack, sramecc, ...) \
  {name, mach, family, min_generic, false, xnack == OnOff, sramecc},
#define COLOAD_GENERIC(name, mach, major, minor, stepping, xnack, sramecc, ...) \
  {name, mach, "", 0, true, xnack == OnOff, sramecc},
#define COLOAD_ALIAS(alias, name)
#include "target/processors.def"
#undef COLOAD_PROCESSOR
#undef COLOAD_GENERIC
#undef COLOAD_ALIAS
};

}  // namespace

const StatusName kStatuses[] = {
    {"ERROR", HSA_STATUS_ERROR, "A generic error has occurred."},
    {"INVALID_ARGUMENT", HSA_STATUS_ERROR_INVALID_ARGUMENT,
     "One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal "
     "argument."},
    {"INVALID_AGENT", HSA_STATUS_ERROR_INVALID_AGENT, "The agent is invalid."},
    {"OUT_OF_RESOURCES", HSA_STATUS_ERROR_OUT_OF_RESOURCES,
     "The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library "
     "needs to spawn threads or create internal OS-specific events."},
    {"NOT_INITIALIZED", HSA_STATUS_ERROR_NOT_INITIALIZED,
     "An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero."},
    {"INCOMPATIBLE_ARGUMENTS", HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
     "Arguments passed to a function are not compatible."},
    {"INVALID_ISA", HSA_STATUS_ERROR_INVALID_ISA, "The instruction set architecture is invalid."},
    {"INVALID_CODE_OBJECT", HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "The code object is invalid."},
    {"INVALID_EXECUTABLE", HSA_STATUS_ERROR_INVALID_EXECUTABLE, "The executable is invalid."},
    {"FROZEN_EXECUTABLE", HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "The executable is frozen."},
    {"INVALID_SYMBOL_NAME", HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "There is no symbol with the given name."},
    {"INVALID_ISA_NAME", HSA_STATUS_ERROR_INVALID_ISA_NAME, "The instruction set architecture name is invalid."},
    {"INVALID_CODE_OBJECT_READER", HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "The code object reader is invalid."},
    {"INVALID_EXECUTABLE_SYMBOL", HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL, "The executable symbol is invalid."},
};
const std::size_t kStatusCount = std::size(kStatuses);

const Release* find_release(const std::string& name) {
  for (const Release& release : kReleases) {
    if (name == release.name) return &release;
  }
  return nullptr;
}

State::~State() { torn_down = true; }

State& state() {
  static State s;
  return s;
}

void alive(const char* function) {
  if (!torn_down) return;
  char message[256];
  int length = std::snprintf(message, sizeof message,
                             "coload_test_hsa: %s called after the HSA runtime was torn down\n", function);
  if (length > 0) (void)!write(2, message, static_cast<std::size_t>(length) < sizeof message ? length : sizeof message);
  _exit(86);
}

void set_release(State& s, const Release& release) {
  s.release = &release;
  s.max_cov = release.max_cov;
  // ROCr answers STRING(ROCR_BUILD_ID) over a string literal: the quotes are
  // part of the string ("\"1.18.70000-coload-test\"").
  const std::string name = release.name;  // "7.0" -> 70000
  const unsigned long rocm = std::stoul(name) * 10000 + std::stoul(name.substr(name.find('.') + 1)) * 100;
  s.build_version = "\"1." + std::to_string(release.rocr_minor) + "." + std::to_string(rocm) + "-coload-test\"";
}

bool loader_knows(const Release& release, const Target& target) {
  if (!target.generic) return true;
  for (unsigned i = 0; i < release.known_generics && i < std::size(kLoaderGenerics); ++i) {
    if (std::string_view(target.name) == kLoaderGenerics[i]) return true;
  }
  return false;
}

std::uint64_t checksum(const std::byte* data, std::size_t size) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<std::uint8_t>(data[i])) * 0x100000001b3ull;
  return hash;
}

void recheck(State& s, const ReaderView& view) {
  if (checksum(view.data, view.size) != view.checksum) ++s.counters["bytes_changed"];
}

hsa_status_t enter(State& s, const char* function, bool needs_init) {
  long calls = s.counters[std::string("calls.") + function]++;
  auto failure = s.failures.find(function);
  if (failure != s.failures.end() && calls >= failure->second.after) return failure->second.status;
  if (needs_init && s.refcount == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  return HSA_STATUS_SUCCESS;
}

Agent* find_agent(State& s, std::uint64_t handle) {
  if (handle < kAgentBase || handle >= kAgentBase + s.agents.size()) return nullptr;
  return &s.agents[handle - kAgentBase];
}

const Target* find_target(const std::string& name) {
  for (const Target& target : kTargets) {
    if (name == target.name) return &target;
  }
  return nullptr;
}

const Target* find_target(std::uint32_t mach) {
  for (const Target& target : kTargets) {
    if (mach == target.mach) return &target;
  }
  return nullptr;
}

std::optional<IsaFeatures> parse_isa(const std::string& isa) {
  IsaFeatures features;
  features.target = find_target(isa.substr(0, isa.find(':')));
  if (!features.target) return std::nullopt;
  if (isa.find("xnack+") != std::string::npos) features.xnack = '+';
  if (isa.find("xnack-") != std::string::npos) features.xnack = '-';
  if (isa.find("sramecc+") != std::string::npos) features.sramecc = '+';
  if (isa.find("sramecc-") != std::string::npos) features.sramecc = '-';
  return features;
}

std::vector<std::string> listed_isas(const State& s, const Agent& agent) {
  std::vector<std::string> isas = agent.isas;
  if (!s.release || !s.release->lists_generic || isas.empty()) return isas;
  auto native = parse_isa(isas.front());
  if (!native || native->target->generic || !*native->target->generic_family) return isas;
  const Target* generic = find_target(native->target->generic_family);
  if (!generic) return isas;
  for (const std::string& isa : isas) {
    if (isa.substr(0, isa.find(':')) == generic->name) return isas;  // the script lists it already
  }
  // The generic ISA with the native one's modes, where the generic has them.
  std::string name = generic->name;
  if (generic->sramecc && native->sramecc) name += std::string(":sramecc") + native->sramecc;
  if (generic->xnack && native->xnack) name += std::string(":xnack") + native->xnack;
  isas.push_back(name);
  return isas;
}

}  // namespace coload::fake_hsa

using namespace coload::fake_hsa;

EXPORT int coload_test_hsa_script(const char* script) {
  alive(__func__);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.agents.clear();
  s.failures.clear();
  s.missing.clear();
  s.overrides.clear();
  set_release(s, *find_release(COLOAD_TEST_HSA_RELEASE));
  s.refcount = 0;
  s.counters.clear();
  s.reader_views.clear();
  s.executables.clear();
  s.symbol_handles.clear();
  std::string text(script ? script : "");
  for (char& c : text) {
    if (c == ';') c = '\n';
  }
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string verb;
    if (!(words >> verb)) continue;
    std::vector<std::string> args;
    for (std::string word; words >> word;) args.push_back(word);
    auto number = [](const std::string& text) { return std::stoull(text, nullptr, 0); };
    if (verb == "cpu") {
      s.agents.push_back(Agent{});
    } else if (verb == "gpu" && !args.empty()) {
      Agent agent;
      agent.gpu = true;
      std::istringstream isas(args[0]);
      for (std::string isa; std::getline(isas, isa, ',');) agent.isas.push_back(isa);
      for (std::size_t i = 1; i < args.size(); ++i) {
        std::string key = args[i].substr(0, args[i].find('='));
        std::string value = args[i].substr(args[i].find('=') + 1);
        if (key == "lds")
          agent.lds = number(value);
        else if (key == "wave")
          agent.wave = static_cast<std::uint32_t>(number(value));
        else if (key == "asic")
          agent.asic = static_cast<std::uint32_t>(number(value));
        else
          return -1;
      }
      s.agents.push_back(agent);
    } else if (verb == "release" && args.size() == 1 && find_release(args[0])) {
      set_release(s, *find_release(args[0]));
    } else if (verb == "fail" && args.size() >= 2) {
      Failure failure{HSA_STATUS_ERROR, 0};
      bool known = false;
      for (const StatusName& status : kStatuses) {
        if (args[1] == status.name) failure.status = status.status, known = true;
      }
      if (!known) return -1;
      if (args.size() > 2 && args[2].starts_with("after="))
        failure.after = static_cast<long>(number(args[2].substr(6)));
      s.failures[args[0]] = failure;
    } else if (verb == "missing" && args.size() == 1) {
      s.missing.insert(args[0]);
    } else if (verb == "symbol" && args.size() == 2) {
      std::string key = args[1].substr(0, args[1].find('='));
      s.overrides[args[0]][key] = static_cast<std::uint32_t>(number(args[1].substr(args[1].find('=') + 1)));
    } else if (verb == "max_cov" && args.size() == 1) {
      s.max_cov = static_cast<unsigned>(number(args[0]));
    } else {
      return -1;
    }
  }
  return 0;
}

/// The library's own release, then COLOAD_TEST_HSA_SCRIPT, when it is loaded (see the top).
__attribute__((constructor)) void run_script_from_environment() {
  const char* script = std::getenv("COLOAD_TEST_HSA_SCRIPT");
  coload_test_hsa_script(script ? script : "");
}

EXPORT long coload_test_hsa_counter(const char* name) {
  alive(__func__);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (std::string_view(name) == "refcount") return s.refcount;
  auto found = s.counters.find(name);
  return found == s.counters.end() ? 0 : found->second;
}
