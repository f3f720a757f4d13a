// load/hsa_agents.cpp: the HSA backend's devices: which agents are GPUs
// coload can describe (every one ROCr lists, or exactly the caller's), each
// agent's ISA name parsed into a target, its LDS and wave size, and the code
// object versions its ROCr loads. docs/loading.md has the rules.
#include <bit>
#include <charconv>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "load/hsa_library.h"
#include "load/hsa_runtime.h"

namespace coload::hsa {
namespace {
constexpr std::string_view kIsaPrefix = "amdgcn-amd-amdhsa--";
}  // namespace

Expected<TargetId> parse_isa_name(std::string_view isa_name) {
  std::string quoted = "ISA name '" + std::string(isa_name) + "'";
  if (!isa_name.starts_with(kIsaPrefix)) {
    return Error(ErrorKind::Malformed, quoted + " does not start with " + std::string(kIsaPrefix));
  }
  auto target = device_target_from_runtime(isa_name.substr(kIsaPrefix.size()));
  if (!target) {
    Error error = std::move(target).error();
    // A generic name is a malformed answer from the runtime, not a caller's mistake.
    ErrorKind kind = error.kind() == ErrorKind::InvalidArgument ? ErrorKind::Malformed : error.kind();
    return Error(kind, quoted + ": " + error.message());
  }
  return target;
}

std::vector<unsigned> code_object_versions_for_library(std::string_view library_file) {
  std::string_view name = library_file.substr(library_file.rfind('/') + 1);
  std::size_t so = name.find(".so.");
  if (so != std::string_view::npos) {
    std::string_view version = name.substr(so + 4);  // "1.5.0"
    unsigned major = 0, minor = 0;
    auto [dot, status] = std::from_chars(version.data(), version.data() + version.size(), major);
    if (status == std::errc() && dot != version.data() + version.size() && *dot == '.') {
      auto [end, minor_status] = std::from_chars(dot + 1, version.data() + version.size(), minor);
      (void)end;
      if (minor_status == std::errc() && (major > 1 || (major == 1 && minor >= 14))) return {4, 5, 6};
    }
  }
  return {4, 5};
}

namespace {

/// One ISA's name, as hsa_isa_get_info_alt gives it.
Expected<std::string> isa_name(const HsaLibrary& library, hsa_isa_t isa) {
  std::uint32_t length = 0;  // includes the NUL
  auto got_length = call(library, "hsa_isa_get_info_alt(NAME_LENGTH)", library.api().hsa_isa_get_info_alt, isa,
                         HSA_ISA_INFO_NAME_LENGTH, static_cast<void*>(&length));
  if (!got_length) return std::move(got_length).error();
  constexpr std::uint32_t kMaxIsaName = 256;
  if (length == 0 || length > kMaxIsaName) {
    return Error(ErrorKind::LimitExceeded, "hsa_isa_get_info_alt(NAME_LENGTH) gave " + std::to_string(length) +
                                               ", outside 1.." + std::to_string(kMaxIsaName));
  }
  std::string name(length, '\0');
  auto got_name = call(library, "hsa_isa_get_info_alt(NAME)", library.api().hsa_isa_get_info_alt, isa,
                       HSA_ISA_INFO_NAME, static_cast<void*>(name.data()));
  if (!got_name) return std::move(got_name).error();
  name.resize(name.find('\0') == std::string::npos ? name.size() : name.find('\0'));
  return name;
}

/// The agent's native ISA: the first processor (not generic) ISA that
/// hsa_agent_iterate_isas reports. ROCr lists the native one first and its
/// generic after it; every one is read, in case a runtime orders them otherwise.
Expected<TargetId> agent_target(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_isa_t> isas;
  auto iterated =
      COLOAD_HSA_CALL(library, hsa_agent_iterate_isas, agent, &collect<hsa_isa_t>, static_cast<void*>(&isas));
  if (!iterated) return std::move(iterated).error();
  if (isas.empty()) return Error(ErrorKind::NotFound, "hsa_agent_iterate_isas reported no ISA");
  // A generic ISA is not the device, whatever its place in the list: what
  // decides is the first processor ISA's error (NotFound for an unknown one).
  std::optional<Error> first_error, generic_error;
  for (hsa_isa_t isa : isas) {
    auto name = isa_name(library, isa);
    if (!name) return std::move(name).error();
    auto target = parse_isa_name(*name);
    if (target) return target;
    std::string_view id = std::string_view(*name).substr(std::min(name->size(), kIsaPrefix.size()));
    const Processor* named = find_processor(id.substr(0, id.find(':')));
    std::optional<Error>& slot = named && named->is_generic ? generic_error : first_error;
    if (!slot) slot = std::move(target).error();
  }
  return std::move(first_error ? *first_error : *generic_error);
}

/// The GROUP segment pool's size (what clr reports as shared memory per
/// block); 0 when the agent has no such pool.
Expected<std::uint64_t> agent_lds(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_amd_memory_pool_t> pools;
  auto iterated = COLOAD_HSA_CALL(library, hsa_amd_agent_iterate_memory_pools, agent, &collect<hsa_amd_memory_pool_t>,
                                  static_cast<void*>(&pools));
  if (!iterated) return std::move(iterated).error();
  for (hsa_amd_memory_pool_t pool : pools) {
    hsa_amd_segment_t segment{};
    auto got_segment =
        call(library, "hsa_amd_memory_pool_get_info(SEGMENT)", library.api().hsa_amd_memory_pool_get_info, pool,
             HSA_AMD_MEMORY_POOL_INFO_SEGMENT, static_cast<void*>(&segment));
    if (!got_segment) return std::move(got_segment).error();
    if (segment != HSA_AMD_SEGMENT_GROUP) continue;
    std::size_t size = 0;
    auto got_size = call(library, "hsa_amd_memory_pool_get_info(SIZE)", library.api().hsa_amd_memory_pool_get_info,
                         pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, static_cast<void*>(&size));
    if (!got_size) return std::move(got_size).error();
    return static_cast<std::uint64_t>(size);
  }
  return std::uint64_t{0};
}

Expected<Device> describe_agent(const HsaLibrary& library, hsa_agent_t agent, const TargetId& target,
                                const std::vector<unsigned>& code_object_versions) {
  Device device;
  device.target = target;
  const Processor& processor = *device.target.processor;

  auto wave = agent_info<std::uint32_t>(library, agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, "WAVEFRONT_SIZE");
  if (!wave) return std::move(wave).error();
  std::uint8_t wave_bit = *wave == 32 ? kWave32 : *wave == 64 ? kWave64 : 0;
  if (wave_bit == 0 || (processor.wave_sizes & wave_bit) == 0) {
    return Error(ErrorKind::Malformed, "HSA_AGENT_INFO_WAVEFRONT_SIZE is " + std::to_string(*wave) + " but " +
                                           std::string(processor.name) + " runs " +
                                           ((processor.wave_sizes & kWave32) ? "wave32" : "") +
                                           ((processor.wave_sizes == (kWave32 | kWave64)) ? " and " : "") +
                                           ((processor.wave_sizes & kWave64) ? "wave64" : "") + " only");
  }
  device.wave_sizes = processor.wave_sizes;

  auto lds = agent_lds(library, agent);
  if (!lds) return std::move(lds).error();
  device.lds_bytes = *lds;

  // Optional: older runtimes refuse the attribute. An AMD attribute lies
  // outside hsa_agent_info_t's enumerators, so it is bit_cast, not converted.
  std::uint32_t revision = 0;
  const auto asic_revision = std::bit_cast<hsa_agent_info_t>(
      static_cast<std::underlying_type_t<hsa_agent_info_t>>(HSA_AMD_AGENT_INFO_ASIC_REVISION));
  if (library.api().hsa_agent_get_info(agent, asic_revision, &revision) == HSA_STATUS_SUCCESS) {
    device.asic_revision = revision;
  }
  device.code_object_versions = code_object_versions;
  return device;
}

/// A GPU agent and its place among every agent hsa_iterate_agents lists.
struct GpuAgent {
  std::size_t index = 0;
  hsa_agent_t agent{};
};

/// The GPU agents hsa_iterate_agents lists, in its order.
Expected<std::vector<GpuAgent>> gpu_agents(const HsaLibrary& library, std::size_t* agent_count) {
  std::vector<hsa_agent_t> all;
  auto iterated = COLOAD_HSA_CALL(library, hsa_iterate_agents, &collect<hsa_agent_t>, static_cast<void*>(&all));
  if (!iterated) return std::move(iterated).error();
  *agent_count = all.size();
  std::vector<GpuAgent> gpus;
  for (std::size_t i = 0; i < all.size(); ++i) {
    // Enums are read as their 32-bit values: no HSA type reaches an exported template.
    auto type = agent_info<std::uint32_t>(library, all[i], HSA_AGENT_INFO_DEVICE, "DEVICE");
    if (!type) return std::move(type).error().with_context("HSA agent " + std::to_string(i));
    if (*type == HSA_DEVICE_TYPE_GPU) gpus.push_back({i, all[i]});
  }
  return gpus;
}

/// Every GPU coload can describe; the others left out.
Expected<AgentDevices> every_gpu(const HsaLibrary& library, const std::vector<unsigned>& versions) {
  std::size_t agent_count = 0;
  auto gpus = gpu_agents(library, &agent_count);
  if (!gpus) return std::move(gpus).error();
  AgentDevices found;
  std::size_t skipped = 0;
  std::optional<Error> first_skipped;
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const hsa_agent_t agent = (*gpus)[i].agent;
    const std::string where = "HSA agent " + std::to_string((*gpus)[i].index) + " (GPU " + std::to_string(i) + ")";
    auto target = agent_target(library, agent);
    if (!target && target.error().kind() == ErrorKind::NotFound) {
      // A GPU of a processor coload does not know is left out, as CLR leaves
      // out GPUs missing from its table; the others stay usable.
      if (!first_skipped) first_skipped = std::move(target).error().with_context(where);
      ++skipped;
      continue;
    }
    if (!target) return std::move(target).error().with_context(where);
    auto device = describe_agent(library, agent, *target, versions);
    if (!device) return std::move(device).error().with_context(where);
    found.agents.push_back(agent);
    found.devices.push_back(std::move(*device));
  }
  if (found.devices.empty() && first_skipped) {
    return std::move(*first_skipped)
        .with_context("no GPU agent coload can describe (" + std::to_string(skipped) + " left out)");
  }
  if (found.devices.empty()) {  // as HIP's hipErrorNoDevice: a caller falls back to another runtime
    return Error(ErrorKind::NotFound, "no AMD GPU: hsa_iterate_agents reported " + std::to_string(agent_count) +
                                          " agent(s), none of them a GPU");
  }
  return found;
}

/// Exactly the caller's agents, in the caller's order: none is left out.
Expected<AgentDevices> named_gpus(const HsaLibrary& library, std::span<const std::uint64_t> requested,
                                  const std::vector<unsigned>& versions) {
  if (requested.empty()) return Error(ErrorKind::InvalidArgument, "the list of HSA agents is empty");
  std::size_t agent_count = 0;
  auto gpus = gpu_agents(library, &agent_count);
  if (!gpus) return std::move(gpus).error();
  AgentDevices found;
  for (std::size_t i = 0; i < requested.size(); ++i) {
    const std::string where = "hsa_agents[" + std::to_string(i) + "] = " + detail::hex(requested[i]);
    auto refuse = [&](const std::string& why) { return Error(ErrorKind::InvalidArgument, where + ": " + why); };
    for (std::size_t j = 0; j < i; ++j) {
      if (requested[j] == requested[i]) return refuse("repeats hsa_agents[" + std::to_string(j) + "]");
    }
    const hsa_agent_t* agent = nullptr;
    for (const GpuAgent& gpu : *gpus) {
      if (gpu.agent.handle == requested[i]) agent = &gpu.agent;
    }
    if (!agent) {
      return refuse("not a GPU agent of the HSA runtime '" + library.file() + "' (" + std::to_string(gpus->size()) +
                    " of its " + std::to_string(agent_count) + " agents are GPUs)");
    }
    // A named device the backend cannot describe is the caller's problem to
    // hear about, never one silently left out; a failing query stays Io.
    auto target = agent_target(library, *agent);
    if (!target && target.error().kind() != ErrorKind::Io) return refuse(target.error().message());
    if (!target) return std::move(target).error().with_context(where);
    auto device = describe_agent(library, *agent, *target, versions);
    if (!device && device.error().kind() != ErrorKind::Io) return refuse(device.error().message());
    if (!device) return std::move(device).error().with_context(where);
    found.agents.push_back(*agent);
    found.devices.push_back(std::move(*device));
  }
  return found;
}

}  // namespace

Expected<AgentDevices> agent_devices(const HsaLibrary& library,
                                     const std::optional<std::vector<std::uint64_t>>& requested) {
  const std::vector<unsigned> versions = code_object_versions_for_library(library.file());
  if (requested) return named_gpus(library, *requested, versions);
  return every_gpu(library, versions);
}

}  // namespace coload::hsa
