// coload devices: the GPU devices a runtime (HSA or HIP) reports, as coload
// sees them (target ID, LDS, wave sizes, code object versions).
#include <cstdio>
#include <string>

#include "coload/config.h"
#include "coload/runtime.h"
#include "commands.h"
#include "json_writer.h"
#include "runtime_util.h"

namespace coload::cli {

Expected<std::unique_ptr<Runtime>> open_gpu_runtime(std::string_view name) {
  if (name == "hsa") return open_hsa_runtime();
  if (name == "hip") return open_hip_runtime();
  return Error(ErrorKind::InvalidArgument, "unknown runtime '" + std::string(name) + "' (hsa or hip)");
}

std::string wave_sizes_text(std::uint8_t mask) {
  std::string text;
  if (mask & kWave32) text = "wave32";
  if (mask & kWave64) text += text.empty() ? "wave64" : ",wave64";
  return text.empty() ? "unknown" : text;
}

int run_devices(std::span<const std::string> args) {
  Expected<Arguments> parsed = parse_arguments(kDevicesCommand, args);
  if (std::optional<int> exit = stop_after_parse(kDevicesCommand, parsed)) return *exit;
  std::string runtime_name = parsed->text(kDevicesRuntime);
  bool json = parsed->given(kJson);
  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  auto runtime = open_gpu_runtime(runtime_name);
  if (!runtime) {
    std::fprintf(stderr, "coload: no GPU devices: the %s runtime cannot be used: %s\n", runtime_name.c_str(),
                 runtime.error().message().c_str());
    return kExitInputError;
  }
  if ((*runtime)->devices().empty()) {
    std::fprintf(stderr, "coload: no GPU devices: the %s runtime reports none\n", runtime_name.c_str());
    return kExitInputError;
  }
  JsonWriter out;
  if (json) {
    out.begin_object();
    out.key("runtime");
    out.value(runtime_name);
    out.key("devices");
    out.begin_array();
  }
  std::size_t index = 0;
  for (Device device : (*runtime)->devices()) {
    config->apply(device);
    if (json) {
      out.begin_object();
      out.key("index");
      out.value(std::uint64_t{index});
      out.key("target");
      out.value(device.str());
      out.key("lds_bytes");
      out.value(device.lds_bytes);
      out.key("wave_sizes");
      out.value(wave_sizes_text(device.wave_sizes));
      out.key("code_object_versions");
      out.begin_array();
      for (unsigned version : device.code_object_versions) out.value(std::uint64_t{version});
      out.end_array();
      out.key("extended_isa_compat");
      out.value(device.extended_isa_compat);
      out.end_object();
    } else {
      std::string versions;
      for (unsigned version : device.code_object_versions)
        versions += (versions.empty() ? "" : ",") + std::to_string(version);
      std::printf("device %zu: %s, LDS %llu, %s, code object v%s%s\n", index, device.str().c_str(),
                  static_cast<unsigned long long>(device.lds_bytes), wave_sizes_text(device.wave_sizes).c_str(),
                  versions.c_str(), device.extended_isa_compat ? ", extended ISA compatibility" : "");
    }
    ++index;
  }
  if (json) {
    out.end_array();
    out.end_object();
    std::printf("%s\n", out.text().c_str());
  }
  return kExitOk;
}

}  // namespace coload::cli
