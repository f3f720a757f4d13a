// The test HSA runtime's entry points: the HSA functions coload calls,
// answering from the state and the release fake_hsa_state.cpp keeps (its
// opening comment says what is modelled and how it is scripted).
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "fake_hsa.h"

using namespace coload::fake_hsa;
using coload::fake::read_at;

namespace {

// ROCr's IsCompatible: same processor; a fixed feature must equal the agent's.
bool compatible(std::uint32_t e_flags, const IsaFeatures& agent) {
  if ((e_flags & 0xff) != agent.target->mach) return false;
  std::uint32_t xnack = e_flags & 0x300, sramecc = e_flags & 0xc00;  // V4+: 0x200 off, 0x300 on
  if (xnack == 0x200 && agent.xnack != '-') return false;
  if (xnack == 0x300 && agent.xnack != '+') return false;
  if (sramecc == 0x800 && agent.sramecc != '-') return false;
  if (sramecc == 0xc00 && agent.sramecc != '+') return false;
  return true;
}

// Whether the loader can name the code object's ISA (AmdHsaCode::GetIsa):
// its GetMachInfo must know the EF_AMDGPU_MACH, or the object is
// INVALID_CODE_OBJECT (gfx9-4-generic and gfx12-generic in 1.14, every
// generic before it).
bool names_isa(const State& s, std::uint32_t e_flags) {
  const Target* code = find_target(e_flags & 0xff);
  return code && (!s.release || loader_knows(*s.release, *code));
}

// Whether the agent runs the code object's ISA, as the release's loader
// decides: the ISA name must be in its registry (generic ones from 6.4), then
// one of the agent's ISAs must be compatible; a generic one also needs the
// code object's generic version to reach the native processor's minimum.
hsa_status_t check_isa(const State& s, const Agent& agent, std::uint32_t e_flags) {
  const Target* code = find_target(e_flags & 0xff);
  if (!code || (code->generic && !(s.release && s.release->lists_generic))) return HSA_STATUS_ERROR_INVALID_ISA_NAME;
  std::vector<std::string> isas = listed_isas(s, agent);
  auto native = isas.empty() ? std::nullopt : parse_isa(isas.front());
  for (const std::string& isa : isas) {
    auto features = parse_isa(isa);
    if (!features) return HSA_STATUS_ERROR_INVALID_ISA_NAME;
    if (!compatible(e_flags, *features)) continue;
    if (!code->generic) return HSA_STATUS_SUCCESS;
    unsigned generic_version = e_flags >> 24;
    if (native && !native->target->generic && generic_version >= native->target->min_generic_version) {
      return HSA_STATUS_SUCCESS;
    }
  }
  return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
}

}  // namespace

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
  alive(__func__);
  static std::map<hsa_status_t, std::string> texts = [] {
    std::map<hsa_status_t, std::string> built;
    for (std::size_t i = 0; i < kStatusCount; ++i) {
      const StatusName& known = kStatuses[i];
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

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attribute, void* value) {
  ENTER("hsa_system_get_info");
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attribute) {
    case HSA_SYSTEM_INFO_VERSION_MAJOR:
    case HSA_SYSTEM_INFO_VERSION_MINOR: *static_cast<std::uint16_t*>(value) = 1; return HSA_STATUS_SUCCESS;
    case HSA_AMD_SYSTEM_INFO_BUILD_VERSION:
      *static_cast<const char**>(value) = s.build_version.c_str();
      return HSA_STATUS_SUCCESS;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
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
    case HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS:
      if (!agent->gpu) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
      *static_cast<bool*>(value) = false;
      if (s.release && s.release->svm_query_falls_through) *static_cast<std::uint32_t*>(value) = 104;  // the CU count
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
    count = listed_isas(s, *agent).size();
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
  if (!agent) return HSA_STATUS_ERROR_INVALID_ISA;
  std::vector<std::string> isas = listed_isas(s, *agent);
  if (index >= isas.size()) return HSA_STATUS_ERROR_INVALID_ISA;
  std::string name = "amdgcn-amd-amdhsa--" + isas[index];
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
  const auto* bytes = static_cast<const std::byte*>(code_object);
  s.reader_views[handle] = ReaderView{bytes, size, checksum(bytes, size)};
  ++s.counters["readers_created"];
  reader->handle = handle;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) {
  ENTER("hsa_code_object_reader_destroy");
  auto view = s.reader_views.find(reader.handle);
  if (view == s.reader_views.end()) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  recheck(s, view->second);
  s.reader_views.erase(view);
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
  for (const auto& [handle, view] : found->second.readers) recheck(s, view);
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

  // As ROCr's loader: the size the reader was given is not used; the ELF is
  // read whole, as far as its own headers say (InitAsHandle, ElfSize).
  // Reading past the caller's bytes is counted here and faults under ASan.
  const std::byte* data = view->second.data;
  const std::size_t size = coload::fake::elf_extent(data);
  if (size > view->second.size) ++s.counters["read_past_size"];
  const ReaderView taken{data, size, checksum(data, size)};  // every byte ROCr takes
  std::uint16_t machine = 0;
  std::uint32_t e_flags = 0;
  if (size < 64 || !read_at(data, size, 18, &machine) || machine != 224 || !read_at(data, size, 0x30, &e_flags)) {
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  if (!names_isa(s, e_flags)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  unsigned abi_version = static_cast<unsigned char>(data[8]);  // 2 → v4, 3 → v5, 4 → v6
  if (abi_version + 2 > s.max_cov) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  if (hsa_status_t refused = check_isa(s, *agent, e_flags)) return refused;

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
  found->second.readers[reader.handle] = taken;
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
      // ROCr 1.5 answers false for every code object v3+ kernel.
      *static_cast<bool*>(value) = symbol.read.dynamic_callstack && (!s.release || s.release->reads_dynamic_callstack);
      break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}
