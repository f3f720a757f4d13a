// coload devices: the GPU devices a runtime (HSA or HIP) reports, as coload
// sees them (target ID, LDS, wave sizes, code object versions).
#include <cstdio>
#include <string>

#include "coload/config.h"
#include "coload/runtime.h"
#include "command_context.h"
#include "commands.h"
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

namespace {

/// devices: the runtime's GPU devices, with the COLOAD_* device settings applied.
int run_devices(CommandContext& context) {
  const std::string runtime_name = context.arguments.text(kDevicesRuntime);
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
  ReportPrinter& out = *context.report;
  out.begin_object();
  out.field("runtime", runtime_name);
  out.begin_array("devices");
  std::size_t index = 0;
  for (Device device : (*runtime)->devices()) {
    context.config->apply(device);
    out.begin_object();
    out.field("index", index);
    out.field("target", device.str());
    out.field("lds_bytes", device.lds_bytes);
    out.field("wave_sizes", wave_sizes_text(device.wave_sizes));
    out.begin_array("code_object_versions");
    for (unsigned version : device.code_object_versions) out.field("", version);
    out.end_array();
    out.field("extended_isa_compat", device.extended_isa_compat);
    out.text(
        "device {index}: {target}, LDS {lds_bytes}, {wave_sizes}, code object v{code_object_versions}"
        "{extended_isa_compat?, extended ISA compatibility}\n");
    out.end_object();
    ++index;
  }
  out.end_array();
  out.end_object();
  out.finish();
  return kExitOk;
}

}  // namespace

const Command kDevices{.spec = &kDevicesCommand, .run = run_devices};

}  // namespace coload::cli
