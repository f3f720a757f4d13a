// coload load: select, validate and load a fat binary's code objects on one
// device (through the registry, as a runtime would), then list the kernels
// with their handles and sizes.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "commands.h"
#include "json_writer.h"
#include "runtime_util.h"

namespace coload::cli {
namespace {

/// The index of the runtime device `spec` names: a number, or the first
/// device of the spec's processor whose modes agree with every mode the spec
/// states (`gfx90a`, `gfx90a:xnack-`, or the ISA name rocminfo prints).
std::optional<std::size_t> find_device(const Runtime& runtime, const std::string& spec) {
  if (spec.empty()) return 0;
  if (auto number = parse_number(spec)) return static_cast<std::size_t>(*number);
  auto wanted = device_target_from_runtime(spec);  // modes left out stay unconstrained below
  if (!wanted) return std::nullopt;
  auto agrees = [](FeatureState stated, FeatureState has) {
    return stated == FeatureState::Unsupported || stated == has;
  };
  auto devices = runtime.devices();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const TargetId& target = devices[i].target;
    if (target.processor == wanted->processor && agrees(wanted->xnack, target.xnack) &&
        agrees(wanted->sramecc, target.sramecc)) {
      return i;
    }
  }
  return std::nullopt;
}

/// `load --json`: the device, and each loaded code object with its kernels;
/// `error` (and `ok` false) when the load failed.
void print_json(const std::string& path, const std::string& runtime_name, std::size_t index, const Device& device,
                const Expected<std::vector<const LoadedModule*>>& modules) {
  JsonWriter json;
  json.begin_object();
  json.key("file");
  json.value(path);
  json.key("runtime");
  json.value(runtime_name);
  json.key("device_index");
  json.value(static_cast<std::uint64_t>(index));
  json.key("device");
  json.value(device.str());
  json.key("ok");
  json.value(modules.has_value());
  json.key("error");
  if (modules)
    json.null();
  else
    json.value(modules.error().message());
  json.key("code_objects");
  json.begin_array();
  if (modules) {
    for (const LoadedModule* module : *modules) {
      const CodeObjectTarget& target = module->code_object().target();
      json.begin_object();
      json.key("target");
      json.value(target.target.str());
      json.key("version");
      json.value(static_cast<std::uint64_t>(target.code_object_version));
      json.key("kernels");
      json.begin_array();
      for (const LoadedKernel& kernel : module->kernels()) {
        json.begin_object();
        json.key("name");
        json.value(kernel.name);
        json.key("symbol");
        json.value(kernel.symbol);
        json.key("handle");
        json.value(kernel.handle);
        json.key("kernarg_size");
        json.value(static_cast<std::uint64_t>(kernel.kernarg_segment_size));
        json.key("kernarg_align");
        json.value(static_cast<std::uint64_t>(kernel.kernarg_segment_align));
        json.key("group_segment_size");
        json.value(static_cast<std::uint64_t>(kernel.group_segment_size));
        json.key("private_segment_size");
        json.value(static_cast<std::uint64_t>(kernel.private_segment_size));
        json.key("dynamic_callstack");
        json.value(kernel.dynamic_callstack);
        json.end_object();
      }
      json.end_array();
      json.end_object();
    }
  }
  json.end_array();
  json.end_object();
  std::printf("%s\n", json.text().c_str());
}

}  // namespace

int run_load(std::span<const std::string> args) {
  Expected<Arguments> parsed = parse_arguments(kLoadCommand, args);
  if (std::optional<int> exit = stop_after_parse(kLoadCommand, parsed)) return *exit;
  std::string runtime_name = parsed->text(kLoadRuntime);
  bool json = parsed->given(kJson);
  DeviceOptions device_options = parsed->device_options();
  std::vector<std::string> files = std::move(parsed->operands);
  if (files.empty()) return usage_error("load: a FILE or DIRECTORY is required");
  auto paths = binary_paths(files, *parsed);
  if (!paths) {
    print_error(paths.error());
    return kExitInputError;
  }
  std::string path = paths->name.empty() ? files.front() : paths->name;  // a set's, once registered: its name
  const bool dry_run = runtime_name == "dry-run";
  if (dry_run && (device_options.spec.empty() || parse_number(device_options.spec))) {
    return usage_error("load: the dry-run runtime needs --device SPEC (a target ID such as gfx90a)");
  }
  if (!dry_run && device_options.overridden) {
    return usage_error("load: --lds, --co-versions and --extended-isa-compat apply to --runtime dry-run only");
  }

  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  std::shared_ptr<Runtime> runtime;
  if (dry_run) {
    auto device = device_from_spec(device_options.spec, device_options.overrides);
    if (!device) return usage_error("load: --device: " + device.error().message());
    runtime = open_dry_run_runtime({std::move(*device)});
  } else {
    auto opened = open_gpu_runtime(runtime_name);
    if (!opened) {
      std::fprintf(stderr, "coload: cannot load on a GPU: the %s runtime cannot be used: %s\n", runtime_name.c_str(),
                   opened.error().message().c_str());
      return kExitInputError;
    }
    runtime = std::move(*opened);
  }
  std::optional<std::size_t> index =
      dry_run ? std::optional<std::size_t>(0) : find_device(*runtime, device_options.spec);
  if (!index || *index >= runtime->devices().size()) {
    std::string present;
    for (const Device& device : runtime->devices()) present += (present.empty() ? "" : ", ") + device.str();
    std::fprintf(stderr, "coload: load: no device '%s' in the %s runtime (devices: %s)\n", device_options.spec.c_str(),
                 runtime_name.c_str(), present.empty() ? "none" : present.c_str());
    return kExitInputError;
  }

  // The registry's warnings are the errors this command prints itself; what
  // COLOAD_LOG=info or debug asks for goes to stderr.
  RegistryOptions options;
  options.log = [](LogLevel level, std::string_view message) {
    if (level >= LogLevel::Info)
      std::fprintf(stderr, "coload: %s: %.*s\n", std::string(to_string(level)).c_str(),
                   static_cast<int>(message.size()), message.data());
  };
  Registry registry(runtime, *config, std::move(options));
  const Device& device = registry.devices()[*index];
  auto binary = paths->set ? registry.register_files(paths->files, paths->name) : registry.register_file(path);
  if (!binary) {
    // A file that cannot be read is a failed load: --json still prints its document.
    if (json) {
      print_json(path, runtime_name, *index, device, Expected<std::vector<const LoadedModule*>>(binary.error()));
    } else {
      std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    }
    return kExitInputError;
  }
  if (auto name = registry.binary_name(*binary)) path = std::move(*name);
  auto modules = registry.modules(*binary, *index);
  if (json) {
    print_json(path, runtime_name, *index, device, modules);
    return modules ? kExitOk : kExitInputError;
  }
  if (!modules) {
    std::fprintf(stderr, "coload: %s\n", modules.error().message().c_str());
    return kExitInputError;
  }
  std::printf("%s: loaded on device %zu (%s) with the %s runtime: %zu code object%s\n", path.c_str(), *index,
              device.str().c_str(), runtime_name.c_str(), modules->size(), modules->size() == 1 ? "" : "s");
  // A file set's modules say their files.
  std::vector<std::string> from;
  if (paths->set) {
    if (auto files = registry.module_files(*binary, *index)) {
      for (const std::string& file : *files) from.push_back(" from " + file);
    }
  }
  for (std::size_t m = 0; m < modules->size(); ++m) {
    const LoadedModule& module = *(*modules)[m];
    std::printf("code object %zu: v%u, target %s, %zu kernels%s\n", m,
                module.code_object().target().code_object_version, module.code_object().target().target.str().c_str(),
                module.kernels().size(), m < from.size() ? from[m].c_str() : "");
    for (const LoadedKernel& kernel : module.kernels()) {
      std::printf("  kernel %s: handle 0x%llx, kernarg %u (align %u), LDS %u, private %u%s\n", kernel.name.c_str(),
                  static_cast<unsigned long long>(kernel.handle), kernel.kernarg_segment_size,
                  kernel.kernarg_segment_align, kernel.group_segment_size, kernel.private_segment_size,
                  kernel.dynamic_callstack ? " (dynamic stack)" : "");
    }
  }
  return kExitOk;
}

}  // namespace coload::cli
