// load/hsa_agents.cpp: the HSA backend's devices: which agents are GPUs
// coload can describe (every one ROCr lists, or exactly the caller's), each
// agent's ISA names parsed into a target and whether it loads generic code,
// its LDS and wave size, and the ROCr release with the code object versions
// it loads. docs/loading.md has the rules ("HSA releases").
#include <bit>
#include <charconv>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/try.h"
#include "load/hsa_library.h"
#include "load/hsa_runtime.h"
#include "target/isa_name.h"

namespace coload::hsa {
using detail::kIsaNamePrefix;

Expected<TargetId> parse_isa_name(std::string_view isa_name) {
  std::string quoted = "ISA name '" + std::string(isa_name) + "'";
  if (!isa_name.starts_with(kIsaNamePrefix)) {
    return Error(ErrorKind::Malformed, quoted + " does not start with " + std::string(kIsaNamePrefix));
  }
  auto target = device_target_from_runtime(isa_name.substr(kIsaNamePrefix.size()));
  if (!target) {
    Error error = std::move(target).error();
    // A generic name is a malformed answer from the runtime, not a caller's mistake.
    ErrorKind kind = error.kind() == ErrorKind::InvalidArgument ? ErrorKind::Malformed : error.kind();
    return Error(kind, quoted + ": " + error.message());
  }
  return target;
}

namespace {

/// Up to three dot-separated numbers at the start of `text` ("1.14.60200",
/// "1.5.0-local-build-unknown"); how many were read.
std::size_t leading_numbers(std::string_view text, unsigned (&numbers)[3]) {
  std::size_t count = 0;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (count < 3) {
    auto [next, status] = std::from_chars(at, end, numbers[count]);
    if (status != std::errc()) break;
    ++count;
    if (next == end || *next != '.') break;
    at = next + 1;
  }
  return count;
}

/// "6.2", "6.2.2" from MMmmpp.
std::string rocm_text(unsigned rocm) {
  std::string text = std::to_string(rocm / 10000) + "." + std::to_string(rocm / 100 % 100);
  if (rocm % 100) text += "." + std::to_string(rocm % 100);
  return text;
}

/// The build version without the double quotes ROCr's answer carries (it is
/// STRING(ROCR_BUILD_ID) over a string literal, so "\"1.14.0-...\"") and
/// without blanks around it.
std::string_view unquoted(std::string_view text) {
  constexpr std::string_view kStrip = " \t\r\n\"";
  const std::size_t first = text.find_first_not_of(kStrip);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kStrip) - first + 1);
}

}  // namespace

RocrRelease rocr_release(std::string_view library_file, std::string_view build_version) {
  build_version = unquoted(build_version);
  RocrRelease release;
  unsigned file[3] = {}, build[3] = {};
  std::string_view name = library_file.substr(library_file.rfind('/') + 1);
  std::size_t so = name.find(".so.");
  std::string_view file_version = so == std::string_view::npos ? std::string_view() : name.substr(so + 4);
  std::size_t file_count = leading_numbers(file_version, file);
  std::size_t build_count = leading_numbers(build_version, build);
  // The runtime's answer first: a renamed or copied file may say anything.
  if (build_count >= 2) {
    release.major = build[0], release.minor = build[1];
  } else if (file_count >= 2) {
    release.major = file[0], release.minor = file[1];
  }
  const bool file_agrees = file_count >= 2 && file[0] == release.major && file[1] == release.minor;
  // ROCm's builds set the patch to ROCM_PATCH_VERSION (60200); a source or
  // distribution build keeps 0.
  if (file_agrees && file_count == 3 && file[2] >= 10000) release.rocm = file[2];

  if (release.major == 0 && release.minor == 0) {
    release.name = "ROCr of unknown release";
  } else {
    release.name =
        "ROCr " + (file_agrees ? std::string(file_version.substr(0, file_version.find_first_not_of("0123456789.")))
                               : std::to_string(release.major) + "." + std::to_string(release.minor));
    if (release.rocm) release.name += " (ROCm " + rocm_text(release.rocm) + ")";
  }

  if (release.rocm) {
    release.code_object_versions = release.rocm < 50200   ? std::vector<unsigned>{4}
                                   : release.rocm < 60200 ? std::vector<unsigned>{4, 5}
                                                          : std::vector<unsigned>{4, 5, 6};
  } else if (release.major > 1 || release.minor >= 14) {
    release.code_object_versions = {4, 5, 6};
  } else if (release.minor > 5) {
    release.code_object_versions = {4, 5};
  } else {
    release.code_object_versions = {4};  // 1.5 of an unknown ROCm (5.0 and 5.1 refuse v5), or nothing known
  }
  return release;
}

namespace {

/// One ISA's name, as hsa_isa_get_info_alt gives it.
Expected<std::string> isa_name(const HsaLibrary& library, hsa_isa_t isa) {
  std::uint32_t length = 0;  // includes the NUL
  auto got_length = call(library, "hsa_isa_get_info_alt(NAME_LENGTH)", library.api().hsa_isa_get_info_alt, isa,
                         HSA_ISA_INFO_NAME_LENGTH, static_cast<void*>(&length));
  COLOAD_RETURN_IF_ERROR(got_length);
  constexpr std::uint32_t kMaxIsaName = 256;
  if (length == 0 || length > kMaxIsaName) {
    return Error(ErrorKind::LimitExceeded, "hsa_isa_get_info_alt(NAME_LENGTH) gave " + std::to_string(length) +
                                               ", outside 1.." + std::to_string(kMaxIsaName));
  }
  std::string name(length, '\0');
  auto got_name = call(library, "hsa_isa_get_info_alt(NAME)", library.api().hsa_isa_get_info_alt, isa,
                       HSA_ISA_INFO_NAME, static_cast<void*>(name.data()));
  COLOAD_RETURN_IF_ERROR(got_name);
  name.resize(name.find('\0') == std::string::npos ? name.size() : name.find('\0'));
  return name;
}

/// What an agent's ISA list says: its native target, and whether it lists
/// its family's generic ISA (ROCr 1.15 and later do: docs/loading.md).
struct AgentIsa {
  TargetId target;
  bool lists_generic = false;
};

/// The agent's native ISA: the first processor (not generic) ISA that
/// hsa_agent_iterate_isas reports. ROCr lists the native one first and its
/// generic after it; every one is read, in case a runtime orders them otherwise.
Expected<AgentIsa> agent_isa(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_isa_t> isas;
  auto iterated =
      COLOAD_HSA_CALL(library, hsa_agent_iterate_isas, agent, &collect<hsa_isa_t>, static_cast<void*>(&isas));
  COLOAD_RETURN_IF_ERROR(iterated);
  if (isas.empty()) return Error(ErrorKind::NotFound, "hsa_agent_iterate_isas reported no ISA");
  // A generic ISA is not the device, whatever its place in the list: what
  // decides is the first processor ISA's error (NotFound for an unknown one).
  std::optional<TargetId> native;
  std::optional<Error> first_error, generic_error;
  std::vector<const Processor*> generics;
  for (hsa_isa_t isa : isas) {
    auto name = isa_name(library, isa);
    COLOAD_RETURN_IF_ERROR(name);
    std::string_view id = std::string_view(*name).substr(std::min(name->size(), kIsaNamePrefix.size()));
    const Processor* named = find_processor(id.substr(0, id.find(':')));
    if (named && named->is_generic) generics.push_back(named);
    auto target = parse_isa_name(*name);
    if (target && !native) native = *target;
    if (target) continue;
    std::optional<Error>& slot = named && named->is_generic ? generic_error : first_error;
    if (!slot) slot = std::move(target).error();
  }
  if (!native) return std::move(first_error ? *first_error : *generic_error);
  AgentIsa found{*native};
  for (const Processor* generic : generics) {
    found.lists_generic = found.lists_generic || generic->name == native->processor->generic_family;
  }
  return found;
}

/// The GROUP segment pool's size (what clr reports as shared memory per
/// block); 0 when the agent has no such pool.
Expected<std::uint64_t> agent_lds(const HsaLibrary& library, hsa_agent_t agent) {
  std::vector<hsa_amd_memory_pool_t> pools;
  auto iterated = COLOAD_HSA_CALL(library, hsa_amd_agent_iterate_memory_pools, agent, &collect<hsa_amd_memory_pool_t>,
                                  static_cast<void*>(&pools));
  COLOAD_RETURN_IF_ERROR(iterated);
  for (hsa_amd_memory_pool_t pool : pools) {
    hsa_amd_segment_t segment{};
    auto got_segment =
        call(library, "hsa_amd_memory_pool_get_info(SEGMENT)", library.api().hsa_amd_memory_pool_get_info, pool,
             HSA_AMD_MEMORY_POOL_INFO_SEGMENT, static_cast<void*>(&segment));
    COLOAD_RETURN_IF_ERROR(got_segment);
    if (segment != HSA_AMD_SEGMENT_GROUP) continue;
    std::size_t size = 0;
    auto got_size = call(library, "hsa_amd_memory_pool_get_info(SIZE)", library.api().hsa_amd_memory_pool_get_info,
                         pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, static_cast<void*>(&size));
    COLOAD_RETURN_IF_ERROR(got_size);
    return static_cast<std::uint64_t>(size);
  }
  return std::uint64_t{0};
}

Expected<Device> describe_agent(const HsaLibrary& library, hsa_agent_t agent, const AgentIsa& isa,
                                const RocrRelease& release) {
  Device device;
  device.target = isa.target;
  const Processor& processor = *device.target.processor;

  auto wave = agent_info<std::uint32_t>(library, agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, "WAVEFRONT_SIZE");
  COLOAD_RETURN_IF_ERROR(wave);
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
  COLOAD_RETURN_IF_ERROR(lds);
  device.lds_bytes = *lds;

  // Optional: older runtimes refuse the attribute. An AMD attribute lies
  // outside hsa_agent_info_t's enumerators, so it is bit_cast, not converted.
  std::uint32_t revision = 0;
  const auto asic_revision = std::bit_cast<hsa_agent_info_t>(
      static_cast<std::underlying_type_t<hsa_agent_info_t>>(HSA_AMD_AGENT_INFO_ASIC_REVISION));
  if (library.api().hsa_agent_get_info(agent, asic_revision, &revision) == HSA_STATUS_SUCCESS) {
    device.asic_revision = revision;
  }
  device.code_object_versions = release.code_object_versions;
  device.loads_generic = isa.lists_generic;
  device.runtime_release = release.name;
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
  COLOAD_RETURN_IF_ERROR(iterated);
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

/// Every GPU coload can describe; the others left out, each named in a warning.
Expected<AgentDevices> every_gpu(const HsaLibrary& library, const RocrRelease& release) {
  std::size_t agent_count = 0;
  auto gpus = gpu_agents(library, &agent_count);
  COLOAD_RETURN_IF_ERROR(gpus);
  AgentDevices found;
  std::optional<Error> first_skipped;
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const hsa_agent_t agent = (*gpus)[i].agent;
    const std::string where = "HSA agent " + std::to_string((*gpus)[i].index) + " (GPU " + std::to_string(i) + ")";
    auto isa = agent_isa(library, agent);
    Expected<Device> device = isa ? describe_agent(library, agent, *isa, release) : std::move(isa).error();
    // A query that fails is the runtime's failure, for every GPU alike.
    if (!device && device.error().kind() == ErrorKind::Io) return std::move(device).error().with_context(where);
    if (!device) {
      // A GPU coload cannot reconcile (a processor it does not know, as CLR
      // leaves out GPUs missing from its table; an ISA name or wave size it
      // cannot square with its table) is left out; the others stay usable.
      Error skipped = std::move(device).error().with_context(where);
      found.warnings.push_back(skipped.message() + "; this GPU is left out");
      if (!first_skipped) first_skipped = std::move(skipped);
      continue;
    }
    found.agents.push_back(agent);
    found.devices.push_back(std::move(*device));
  }
  if (found.devices.empty() && first_skipped) {
    return Error(ErrorKind::NotFound, first_skipped->message())
        .with_context("no GPU agent coload can describe (" + std::to_string(found.warnings.size()) + " left out)");
  }
  if (found.devices.empty()) {  // as HIP's hipErrorNoDevice: a caller falls back to another runtime
    return Error(ErrorKind::NotFound, "no AMD GPU: hsa_iterate_agents reported " + std::to_string(agent_count) +
                                          " agent(s), none of them a GPU");
  }
  return found;
}

/// Exactly the caller's agents, in the caller's order: none is left out.
Expected<AgentDevices> named_gpus(const HsaLibrary& library, std::span<const std::uint64_t> requested,
                                  const RocrRelease& release) {
  if (requested.empty()) return Error(ErrorKind::InvalidArgument, "the list of HSA agents is empty");
  std::size_t agent_count = 0;
  auto gpus = gpu_agents(library, &agent_count);
  COLOAD_RETURN_IF_ERROR(gpus);
  AgentDevices found;
  for (std::size_t i = 0; i < requested.size(); ++i) {
    const std::string where = "hsa_agents[" + std::to_string(i) + "] = " + detail::hex(requested[i]);
    auto refuse = [&](const std::string& why) {
      return Error(ErrorKind::InvalidArgument, where + ": " + why)
          .at_field("hsa_agents[" + std::to_string(i) + "]", std::nullopt, requested[i]);
    };
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
    auto isa = agent_isa(library, *agent);
    if (!isa && isa.error().kind() != ErrorKind::Io) return refuse(isa.error().message());
    if (!isa) return std::move(isa).error().with_context(where);
    auto device = describe_agent(library, *agent, *isa, release);
    if (!device && device.error().kind() != ErrorKind::Io) return refuse(device.error().message());
    if (!device) return std::move(device).error().with_context(where);
    found.agents.push_back(*agent);
    found.devices.push_back(std::move(*device));
  }
  return found;
}

/// ROCr 1.5 shipped with ROCm 5.0, 5.1 and 5.2, and only 5.2 loads v5; a
/// distribution's build (Debian 12's is ROCm 5.2.3) names its file 1.5.0.
/// One answer tells them apart: before 5.2, GpuAgent::GetInfo of
/// HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS lacks its `break` and falls into
/// COOPERATIVE_COMPUTE_UNIT_COUNT, writing a 32-bit CU count over the bool
/// (ROCR-Runtime amd_gpu_agent.cpp, rocm-5.0.0 to rocm-5.1.3; the break came
/// in rocm-5.2.0). So of four 0xff bytes, 5.2 keeps the last three.
void settle_rocr_1_5(const HsaLibrary& library, RocrRelease& release) {
  std::size_t agent_count = 0;
  auto gpus = gpu_agents(library, &agent_count);
  if (!gpus || gpus->empty()) return;  // nothing to ask: v4 only, as before
  std::uint32_t answer = 0xffffffff;
  const auto attribute = std::bit_cast<hsa_agent_info_t>(
      static_cast<std::underlying_type_t<hsa_agent_info_t>>(HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS));
  if (library.api().hsa_agent_get_info(gpus->front().agent, attribute, &answer) != HSA_STATUS_SUCCESS) return;
  if ((answer & 0xffffff00u) == 0xffffff00u) {
    release.name += " (ROCm 5.2)";
    release.code_object_versions = {4, 5};
  } else {
    release.name += " (ROCm 5.0 or 5.1)";
  }
}

}  // namespace

Expected<AgentDevices> agent_devices(const HsaLibrary& library,
                                     const std::optional<std::vector<std::uint64_t>>& requested) {
  // Optional: a runtime without the attribute is read by its file name alone.
  const char* build = nullptr;
  if (library.api().hsa_system_get_info(HSA_AMD_SYSTEM_INFO_BUILD_VERSION, static_cast<void*>(&build)) !=
      HSA_STATUS_SUCCESS) {
    build = nullptr;
  }
  RocrRelease release = rocr_release(library.file(), build ? std::string_view(build) : std::string_view());
  if (release.major == 1 && release.minor == 5 && release.rocm == 0) settle_rocr_1_5(library, release);
  if (requested) return named_gpus(library, *requested, release);
  return every_gpu(library, release);
}

}  // namespace coload::hsa
