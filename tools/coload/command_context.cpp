// The dispatcher: builds a command's context, in the order its errors win,
// then runs it; and the choosing helpers every command shares (commands.h).
#include "command_context.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "coload/detail/hotswap.h"

namespace coload::cli {

std::optional<SelectOptions> cli_select_options(const Config& config) {
  if (!config.hotswap) {
    if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {  // not a silent no-op (docs/environment.md)
      std::fprintf(stderr,
                   "coload: warning: COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but "
                   "COLOAD_HOTSWAP is not 1: the hotswap tier is off\n");
    }
    return select_options(config);
  }
  auto registry = hotswap_registry(config);
  if (!registry) {
    std::fprintf(stderr, "coload: hotswap: %s\n", registry.error().message().c_str());
    return std::nullopt;
  }
  return select_options(config, *registry);
}

KeptBytes command_budget(std::uint64_t limit) {
  return KeptBytes(limit, "what this command keeps of the file's compressed bundles");
}

std::string no_fit_message(const FatBinary& binary, std::size_t index, const Device& device,
                           const Selection& selection) {
  Error error = no_fit_error(device, selection);
  if (binary.file_count() > 1) return binary.at_bundle(std::move(error), index).message();
  return error.message();
}

void print_error(const Error& error) { std::fprintf(stderr, "coload: %s\n", error.message().c_str()); }

const std::optional<SelectOptions>& CommandContext::select_options() {
  if (!select_options_) select_options_.emplace(cli_select_options(*config));
  return *select_options_;
}

namespace {

constexpr const Command* kCommands[] = {&kLs, &kExtract, &kSelect, &kCheck, &kDevices, &kLoad, &kRun};

/// The environment's Config, or the usage error that ends the command.
std::optional<int> read_environment(const Config*& config) {
  const Expected<Config>& environment = process_config();
  if (!environment) return usage_error("environment: " + environment.error().message());
  config = &*environment;
  return std::nullopt;
}

int run(const Command& command, std::span<const std::string> args) {
  const CommandSpec& spec = *command.spec;
  std::vector<std::string> program;
  if (command.takes_program) {
    auto dashes = std::find(args.begin(), args.end(), "--");
    if (dashes != args.end()) program.assign(dashes + 1, args.end());
    args = std::span<const std::string>(args.begin(), dashes);
  }
  Expected<Arguments> parsed = parse_arguments(spec, args);
  const Config* config = nullptr;
  if (command.environment_first && !(parsed && parsed->help)) {
    if (std::optional<int> exit = read_environment(config)) return *exit;
  }
  if (std::optional<int> exit = stop_after_parse(spec, parsed)) return *exit;

  CommandContext context;
  context.arguments = std::move(*parsed);
  context.operands = std::move(context.arguments.operands);
  context.program = std::move(program);
  context.device_options = context.arguments.device_options();
  context.json = context.arguments.given(kJson);
  if (command.check_usage) {
    if (std::optional<int> exit = command.check_usage(context)) return *exit;
  }
  if (!config) {
    if (std::optional<int> exit = read_environment(config)) return *exit;
  }
  context.config = config;
  if (command.builds_device && !context.device_options.spec.empty()) {
    context.device = build_device(context.device_options, *config, spec.name);
    if (!context.device) return kExitUsage;
  }
  context.stream = config->stream_options();
  if (auto limit = context.arguments.number(kMaxDecompressedBytes)) {
    context.stream.read.max_decompressed_bytes = *limit;
  }
  context.report = make_report_printer(context.json);
  return command.run(context);
}

}  // namespace

std::optional<int> dispatch(std::string_view name, std::span<const std::string> args) {
  for (const Command* command : kCommands) {
    if (command->spec->name == name) return run(*command, args);
  }
  return std::nullopt;
}

}  // namespace coload::cli
