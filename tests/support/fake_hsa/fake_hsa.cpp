// A test HSA runtime: the subset of the HSA C API coload calls, with scripted
// agents and failures, so the HSA backend's real call sequence runs without a
// GPU. Built as libcoload_test_hsa.so and dlopen'ed in place of
// libhsa-runtime64.so.1.
//
// It really reads the code object (minimally, bounds-checked): the ELF
// header (magic, class, machine, EI_ABIVERSION, e_flags: mach, xnack and
// sramecc are checked against the agent's ISAs under ROCr's IsCompatible
// rule), and the symbol table (../fake_elf.h), whose `.kd` STT_OBJECT
// symbols become kernel symbols with sizes read from their 64-byte
// descriptors, and whose other non-local STT_OBJECT symbols become variable
// symbols (address in a per-executable window, size st_size), as ROCr does.
// Agent handles are stable: agent i of the script is 0xa0000 + i.
//
// Control (looked up with dlsym by the tests):
//   int  coload_test_hsa_script(const char* script)  resets all state, then
//        runs the script; returns 0, or -1 for a line it does not understand.
//   long coload_test_hsa_counter(const char* name)   a counter, -1 if unknown.
// A process that cannot call them before coload opens the library (a HIP
// program whose static constructors register through a layer) sets
// COLOAD_TEST_HSA_SCRIPT instead: the library runs that script when it loads.
// Script: statements separated by ';' or newlines, words by spaces:
//   gpu ISA[,ISA...] [lds=N] [wave=N] [asic=N]   a GPU agent; ISA names are
//        target IDs ("gfx90a:sramecc+:xnack-"), the first is the native one
//   cpu                                 a CPU agent
//   fail FUNCTION STATUS [after=N]      FUNCTION returns HSA_STATUS_ERROR_STATUS
//        ("OUT_OF_RESOURCES") once N calls have succeeded (default 0)
//   missing SYMBOL                      get_symbol_by_name refuses SYMBOL (kernel or variable)
//   symbol SYMBOL kernarg=N|group=N|private=N   overrides a descriptor size
//   max_cov N                           highest code object version loaded (default 6)
// Counters: init (successful hsa_init), shut_down (successful), refcount,
// readers_created, readers_destroyed, executables_created,
// executables_destroyed, order_violations (a reader destroyed while an
// executable that loaded it lives), calls.FUNCTION.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fake_elf.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Agent {
  bool gpu = false;
  std::vector<std::string> isas;  // target IDs, without the amdgcn-amd-amdhsa-- prefix
  std::uint64_t lds = 65536;
  std::uint32_t wave = 64;
  std::optional<std::uint32_t> asic;
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
  std::set<std::uint64_t> readers;                                  // loaded from
  std::map<std::pair<std::string, std::uint64_t>, Symbol> symbols;  // (name, agent) → symbol
};

struct Failure {
  hsa_status_t status;
  long after = 0;
};

struct State {
  std::mutex mutex;
  std::vector<Agent> agents;
  std::map<std::string, Failure> failures;
  std::set<std::string> missing;
  std::map<std::string, std::map<std::string, std::uint32_t>> overrides;
  unsigned max_cov = 6;
  long refcount = 0;
  std::map<std::string, long> counters;
  std::map<std::uint64_t, std::pair<const std::byte*, std::size_t>> reader_views;  // the caller's bytes
  std::map<std::uint64_t, Executable> executables;
  std::map<std::uint64_t, Symbol> symbol_handles;
  std::uint64_t next_handle = 0x1000;
};

State& state() {
  static State s;
  return s;
}

constexpr std::uint64_t kAgentBase = 0xa0000, kIsaBase = 0xb0000, kPoolBase = 0xc0000;

struct StatusName {
  const char* name;
  hsa_status_t status;
  const char* text;
};
constexpr StatusName kStatuses[] = {
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

// EF_AMDGPU_MACH by processor name, from coload's own table.
struct Mach {
  const char* name;
  std::uint32_t mach;
};
constexpr Mach kMachs[] = {
#define COLOAD_PROCESSOR(name, mach, ...) {name, mach},
#define COLOAD_GENERIC(name, mach, ...) {name, mach},
#define COLOAD_ALIAS(alias, name)
#include "target/processors.def"
#undef COLOAD_PROCESSOR
#undef COLOAD_GENERIC
#undef COLOAD_ALIAS
};

// Under the caller's lock: counts the call and returns the scripted failure, if due.
hsa_status_t enter(State& s, const char* function, bool needs_init = true) {
  long calls = s.counters[std::string("calls.") + function]++;
  auto failure = s.failures.find(function);
  if (failure != s.failures.end() && calls >= failure->second.after) return failure->second.status;
  if (needs_init && s.refcount == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  return HSA_STATUS_SUCCESS;
}
#define ENTER(...)                           \
  State& s = state();                        \
  std::lock_guard<std::mutex> lock(s.mutex); \
  if (hsa_status_t entered = enter(s, __VA_ARGS__)) return entered

Agent* find_agent(State& s, std::uint64_t handle) {
  if (handle < kAgentBase || handle >= kAgentBase + s.agents.size()) return nullptr;
  return &s.agents[handle - kAgentBase];
}

using coload::fake::read_at;

// ISA target ID → (mach, xnack, sramecc) with features as 0 (absent), '+' or '-'.
struct IsaFeatures {
  std::uint32_t mach = 0;
  char xnack = 0, sramecc = 0;
};
std::optional<IsaFeatures> parse_isa(const std::string& isa) {
  IsaFeatures features;
  std::string processor = isa.substr(0, isa.find(':'));
  bool known = false;
  for (const Mach& m : kMachs) {
    if (processor == m.name) features.mach = m.mach, known = true;
  }
  if (!known) return std::nullopt;
  if (isa.find("xnack+") != std::string::npos) features.xnack = '+';
  if (isa.find("xnack-") != std::string::npos) features.xnack = '-';
  if (isa.find("sramecc+") != std::string::npos) features.sramecc = '+';
  if (isa.find("sramecc-") != std::string::npos) features.sramecc = '-';
  return features;
}

// ROCr's IsCompatible: same processor; a fixed feature must equal the agent's.
bool compatible(std::uint32_t e_flags, const IsaFeatures& agent) {
  if ((e_flags & 0xff) != agent.mach) return false;
  std::uint32_t xnack = e_flags & 0x300, sramecc = e_flags & 0xc00;  // V4+: 0x200 off, 0x300 on
  if (xnack == 0x200 && agent.xnack != '-') return false;
  if (xnack == 0x300 && agent.xnack != '+') return false;
  if (sramecc == 0x800 && agent.sramecc != '-') return false;
  if (sramecc == 0xc00 && agent.sramecc != '+') return false;
  return true;
}

}  // namespace

EXPORT int coload_test_hsa_script(const char* script) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.agents.clear();
  s.failures.clear();
  s.missing.clear();
  s.overrides.clear();
  s.max_cov = 6;
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

/// COLOAD_TEST_HSA_SCRIPT, run when the library is loaded (see the top).
__attribute__((constructor)) void run_script_from_environment() {
  if (const char* script = std::getenv("COLOAD_TEST_HSA_SCRIPT")) coload_test_hsa_script(script);
}

EXPORT long coload_test_hsa_counter(const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (std::string_view(name) == "refcount") return s.refcount;
  auto found = s.counters.find(name);
  return found == s.counters.end() ? 0 : found->second;
}

EXPORT hsa_status_t hsa_init() {
  ENTER("hsa_init", false);
  ++s.refcount;
  ++s.counters["init"];
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  ENTER("hsa_shut_down");
  --s.refcount;
  ++s.counters["shut_down"];
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t status, const char** text) {
  static std::map<hsa_status_t, std::string> texts = [] {
    std::map<hsa_status_t, std::string> built;
    for (const StatusName& known : kStatuses) {
      built[known.status] = std::string("HSA_STATUS_") + (known.status == HSA_STATUS_ERROR ? "" : "ERROR_") +
                            known.name + ": " + known.text;
    }
    return built;
  }();
  if (!text) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto found = texts.find(status);
  if (found == texts.end()) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *text = found->second.c_str();
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*callback)(hsa_agent_t, void*), void* data) {
  std::size_t count;
  {
    ENTER("hsa_iterate_agents");
    count = s.agents.size();
  }
  for (std::size_t i = 0; i < count; ++i) {
    hsa_status_t status = callback(hsa_agent_t{kAgentBase + i}, data);
    if (status != HSA_STATUS_SUCCESS) return status;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t handle, hsa_agent_info_t attribute, void* value) {
  ENTER("hsa_agent_get_info");
  Agent* agent = find_agent(s, handle.handle);
  if (!agent) return HSA_STATUS_ERROR_INVALID_AGENT;
  int raw = 0;  // AMD attributes lie outside hsa_agent_info_t's enumerators: never load it as the enum
  static_assert(sizeof raw == sizeof attribute);
  std::memcpy(&raw, &attribute, sizeof raw);
  switch (raw) {
    case HSA_AGENT_INFO_DEVICE:
      *static_cast<hsa_device_type_t*>(value) = agent->gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      if (!agent->gpu) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      *static_cast<std::uint32_t*>(value) = agent->wave;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_AGENT_INFO_ASIC_REVISION:
      if (!agent->asic) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      *static_cast<std::uint32_t*>(value) = *agent->asic;
      return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t handle, hsa_status_t (*callback)(hsa_isa_t, void*), void* data) {
  std::size_t count;
  {
    ENTER("hsa_agent_iterate_isas");
    Agent* agent = find_agent(s, handle.handle);
    if (!agent) return HSA_STATUS_ERROR_INVALID_AGENT;
    count = agent->isas.size();
  }
  for (std::size_t i = 0; i < count; ++i) {
    hsa_status_t status = callback(hsa_isa_t{kIsaBase + ((handle.handle - kAgentBase) << 8) + i}, data);
    if (status != HSA_STATUS_SUCCESS) return status;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, hsa_isa_info_t attribute, void* value) {
  ENTER("hsa_isa_get_info_alt");
  if (isa.handle < kIsaBase) return HSA_STATUS_ERROR_INVALID_ISA;
  Agent* agent = find_agent(s, kAgentBase + ((isa.handle - kIsaBase) >> 8));
  std::size_t index = (isa.handle - kIsaBase) & 0xff;
  if (!agent || index >= agent->isas.size()) return HSA_STATUS_ERROR_INVALID_ISA;
  std::string name = "amdgcn-amd-amdhsa--" + agent->isas[index];
  if (attribute == HSA_ISA_INFO_NAME_LENGTH) {
    *static_cast<std::uint32_t*>(value) = static_cast<std::uint32_t>(name.size() + 1);
  } else if (attribute == HSA_ISA_INFO_NAME) {
    std::memcpy(value, name.c_str(), name.size() + 1);
  } else {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t handle,
                                                       hsa_status_t (*callback)(hsa_amd_memory_pool_t, void*),
                                                       void* data) {
  {
    ENTER("hsa_amd_agent_iterate_memory_pools");
    if (!find_agent(s, handle.handle)) return HSA_STATUS_ERROR_INVALID_AGENT;
  }
  // Pool 0: a global pool; pool 1: the group (LDS) pool.
  std::uint64_t base = kPoolBase + ((handle.handle - kAgentBase) << 4);
  for (std::uint64_t pool = 0; pool < 2; ++pool) {
    hsa_status_t status = callback(hsa_amd_memory_pool_t{base + pool}, data);
    if (status != HSA_STATUS_SUCCESS) return status;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, hsa_amd_memory_pool_info_t attribute,
                                                 void* value) {
  ENTER("hsa_amd_memory_pool_get_info");
  if (pool.handle < kPoolBase) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  Agent* agent = find_agent(s, kAgentBase + ((pool.handle - kPoolBase) >> 4));
  if (!agent) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  bool group = (pool.handle & 0xf) == 1;
  if (attribute == HSA_AMD_MEMORY_POOL_INFO_SEGMENT) {
    *static_cast<hsa_amd_segment_t*>(value) = group ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL;
  } else if (attribute == HSA_AMD_MEMORY_POOL_INFO_SIZE) {
    *static_cast<std::size_t*>(value) = group ? agent->lds : (std::size_t{16} << 30);
  } else {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void* code_object, std::size_t size,
                                                              hsa_code_object_reader_t* reader) {
  ENTER("hsa_code_object_reader_create_from_memory");
  if (!code_object || size == 0 || !reader) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::uint64_t handle = s.next_handle++;
  s.reader_views[handle] = {static_cast<const std::byte*>(code_object), size};
  ++s.counters["readers_created"];
  reader->handle = handle;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) {
  ENTER("hsa_code_object_reader_destroy");
  if (!s.reader_views.erase(reader.handle)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  for (const auto& [handle, executable] : s.executables) {
    if (executable.readers.count(reader.handle)) ++s.counters["order_violations"];
  }
  ++s.counters["readers_destroyed"];
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t profile, hsa_default_float_rounding_mode_t rounding,
                                              const char* options, hsa_executable_t* executable) {
  ENTER("hsa_executable_create_alt");
  if (!executable || profile != HSA_PROFILE_FULL) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::uint64_t handle = s.next_handle++;
  s.executables[handle] = Executable{};
  ++s.counters["executables_created"];
  executable->handle = handle;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t executable) {
  ENTER("hsa_executable_destroy");
  auto found = s.executables.find(executable.handle);
  if (found == s.executables.end()) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  for (const auto& [key, symbol] : found->second.symbols) s.symbol_handles.erase(symbol.handle);
  s.executables.erase(found);
  ++s.counters["executables_destroyed"];
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t executable, hsa_agent_t agent_handle,
                                                          hsa_code_object_reader_t reader, const char* options,
                                                          hsa_loaded_code_object_t* loaded) {
  ENTER("hsa_executable_load_agent_code_object");
  auto found = s.executables.find(executable.handle);
  if (found == s.executables.end()) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (found->second.frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  auto view = s.reader_views.find(reader.handle);
  if (view == s.reader_views.end()) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  Agent* agent = find_agent(s, agent_handle.handle);
  if (!agent || !agent->gpu) return HSA_STATUS_ERROR_INVALID_AGENT;

  const auto [data, size] = view->second;
  std::uint16_t machine = 0;
  std::uint32_t e_flags = 0;
  if (size < 64 ||
      std::memcmp(data,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      static_cast<unsigned char>(data[4]) != 2 || !read_at(data, size, 18, &machine) || machine != 224 ||
      !read_at(data, size, 0x30, &e_flags)) {
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  unsigned abi_version = static_cast<unsigned char>(data[8]);  // 2 → v4, 3 → v5, 4 → v6
  if (abi_version + 2 > s.max_cov) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  bool any = false;
  for (const std::string& isa : agent->isas) {
    auto features = parse_isa(isa);
    if (!features) return HSA_STATUS_ERROR_INVALID_ISA_NAME;
    any = any || compatible(e_flags, *features);
  }
  if (!any) return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;

  std::map<std::string, coload::fake::CodeObjectSymbol> read;
  if (!coload::fake::read_symbols(data, size, &read)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  for (auto& [name, symbol] : read) {
    auto key = std::make_pair(name, agent_handle.handle);
    if (found->second.symbols.count(key)) return HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED;
    for (const auto& [field, value] : s.overrides[name]) {
      if (field == "kernarg") symbol.kernarg = value;
      if (field == "group") symbol.group = value;
      if (field == "private") symbol.private_size = value;
    }
    // A fake device address: the symbol's value within a per-executable window.
    Symbol loaded{symbol, symbol.value + 0x7f0000000000ull + (executable.handle << 24), 0};
    loaded.handle = symbol.kernel ? loaded.address : s.next_handle++;
    found->second.symbols[key] = loaded;
    s.symbol_handles[loaded.handle] = loaded;
  }
  found->second.readers.insert(reader.handle);
  if (loaded) loaded->handle = s.next_handle++;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t executable, const char* options) {
  ENTER("hsa_executable_freeze");
  auto found = s.executables.find(executable.handle);
  if (found == s.executables.end()) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (found->second.frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  found->second.frozen = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t executable, const char* name,
                                                      const hsa_agent_t* agent, hsa_executable_symbol_t* symbol) {
  ENTER("hsa_executable_get_symbol_by_name");
  auto found = s.executables.find(executable.handle);
  if (found == s.executables.end()) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!name || !symbol) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!agent || s.missing.count(name)) return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;  // NULL: program symbols only
  auto entry = found->second.symbols.find({name, agent->handle});
  if (entry == found->second.symbols.end()) return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
  symbol->handle = entry->second.handle;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t handle,
                                                   hsa_executable_symbol_info_t attribute, void* value) {
  ENTER("hsa_executable_symbol_get_info");
  auto found = s.symbol_handles.find(handle.handle);
  if (found == s.symbol_handles.end()) return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
  const Symbol& symbol = found->second;
  if (attribute == HSA_EXECUTABLE_SYMBOL_INFO_TYPE) {
    *static_cast<hsa_symbol_kind_t*>(value) = symbol.read.kernel ? HSA_SYMBOL_KIND_KERNEL : HSA_SYMBOL_KIND_VARIABLE;
    return HSA_STATUS_SUCCESS;
  }
  if (!symbol.read.kernel) {
    switch (attribute) {
      case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS: *static_cast<std::uint64_t*>(value) = symbol.address; break;
      case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
        *static_cast<std::uint32_t*>(value) = static_cast<std::uint32_t>(symbol.read.size);
        break;
      default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    return HSA_STATUS_SUCCESS;
  }
  switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: *static_cast<std::uint64_t*>(value) = symbol.address; break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      *static_cast<std::uint32_t*>(value) = symbol.read.kernarg;
      break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: *static_cast<std::uint32_t*>(value) = 16; break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      *static_cast<std::uint32_t*>(value) = symbol.read.group;
      break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      *static_cast<std::uint32_t*>(value) = symbol.read.private_size;
      break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK:
      *static_cast<bool*>(value) = symbol.read.dynamic_callstack;
      break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}
