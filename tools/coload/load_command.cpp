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
#include "command_context.h"
#include "commands.h"
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

/// The load's report: the device, and each loaded code object with its
/// kernels; `error` (and `ok` false) when the load failed. `from`: a file
/// set's modules' files, which the text names.
void write_report(ReportPrinter& out, const std::string& path, const std::string& runtime_name, std::size_t index,
                  const Device& device, const Expected<std::vector<const LoadedModule*>>& modules,
                  const std::vector<std::string>& from) {
  out.begin_object();
  out.field("file", path);
  out.field("runtime", runtime_name);
  out.field("device_index", index);
  out.field("device", device.str());
  out.field("ok", modules.has_value());
  if (modules)
    out.null("error");
  else
    out.field("error", modules.error().message());
  out.begin_array("code_objects");
  if (modules) {
    out.text_field("module_count", count_of(modules->size(), "code object"));
    out.text("{file}: loaded on device {device_index} ({device}) with the {runtime} runtime: {module_count}\n");
    for (std::size_t m = 0; m < modules->size(); ++m) {
      const LoadedModule& module = *(*modules)[m];
      const CodeObjectTarget& target = module.code_object().target();
      out.begin_object();
      out.field("target", target.target.str());
      out.field("version", target.code_object_version);
      out.text_field("module", m);
      out.text_field("kernel_count", module.kernels().size());
      out.text_field("from", m < from.size() ? " from " + from[m] : std::string());
      out.text("code object {module}: v{version}, target {target}, {kernel_count} kernels{from}\n");
      out.begin_array("kernels");
      for (const LoadedKernel& kernel : module.kernels()) {
        out.begin_object();
        out.field("name", kernel.name);
        out.field("symbol", kernel.symbol);
        out.field("handle", kernel.handle);
        out.field("kernarg_size", kernel.kernarg_segment_size);
        out.field("kernarg_align", kernel.kernarg_segment_align);
        out.field("group_segment_size", kernel.group_segment_size);
        out.field("private_segment_size", kernel.private_segment_size);
        out.field("dynamic_callstack", kernel.dynamic_callstack);
        out.text(
            "  kernel {name}: handle {handle:x}, kernarg {kernarg_size} (align {kernarg_align}), LDS "
            "{group_segment_size}, private {private_segment_size}{dynamic_callstack? (dynamic stack)}\n");
        out.end_object();
      }
      out.end_array();
      out.end_object();
    }
  }
  out.end_array();
  out.end_object();
  out.finish();
}

/// load: FILE's code objects loaded on one device through the registry.
int run_load(CommandContext& context) {
  const std::string runtime_name = context.arguments.text(kLoadRuntime);
  const DeviceOptions& device_options = context.device_options;
  const BinaryPaths& paths = *context.paths;
  std::string path = paths.name.empty() ? context.operands.front() : paths.name;  // a set's, once registered: its name
  const bool dry_run = runtime_name == "dry-run";
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
  Registry registry(runtime, *context.config, std::move(options));
  const Device& device = registry.devices()[*index];
  auto binary = paths.set ? registry.register_files(paths.files, paths.name) : registry.register_file(path);
  // A failed load prints its document with --json; the text is the error, on stderr.
  if (!binary) {
    // A file that cannot be read is a failed load too.
    if (context.json) {
      write_report(*context.report, path, runtime_name, *index, device,
                   Expected<std::vector<const LoadedModule*>>(binary.error()), {});
    } else {
      print_error(binary.error());
    }
    return kExitInputError;
  }
  if (auto name = registry.binary_name(*binary)) path = std::move(*name);
  auto modules = registry.modules(*binary, *index);
  if (!modules && !context.json) {
    print_error(modules.error());
    return kExitInputError;
  }
  // A file set's modules say their files in the text (the document has no
  // place for them); asked only for the text, as before.
  std::vector<std::string> from;
  if (modules && paths.set && !context.json) {
    if (auto files = registry.module_files(*binary, *index)) from = std::move(*files);
  }
  write_report(*context.report, path, runtime_name, *index, device, modules, from);
  return modules ? kExitOk : kExitInputError;
}

std::optional<int> check_load_usage(CommandContext& context) {
  if (context.operands.empty()) return usage_error("load: a FILE or DIRECTORY is required");
  auto paths = binary_paths(context.operands, context.arguments);
  if (!paths) {
    print_error(paths.error());
    return kExitInputError;
  }
  context.paths = std::move(*paths);
  const std::string& spec = context.device_options.spec;
  if (context.arguments.text(kLoadRuntime) == "dry-run") {
    if (spec.empty() || parse_number(spec)) {
      return usage_error("load: the dry-run runtime needs --device SPEC (a target ID such as gfx90a)");
    }
  } else if (context.device_options.overridden) {
    return usage_error("load: --lds, --co-versions and --extended-isa-compat apply to --runtime dry-run only");
  }
  return std::nullopt;
}

}  // namespace

const Command kLoad{.spec = &kLoadCommand, .check_usage = check_load_usage, .run = run_load};

}  // namespace coload::cli
