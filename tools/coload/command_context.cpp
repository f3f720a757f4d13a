// The dispatcher: builds a command's context, in the order its errors win,
// then runs it.
#include "command_context.h"

#include <utility>

namespace coload::cli {

const std::optional<SelectOptions>& CommandContext::select_options() {
  if (!select_options_) select_options_.emplace(cli_select_options(*config));
  return *select_options_;
}

namespace {

constexpr const Command* kCommands[] = {&kLs, &kExtract, &kSelect, &kCheck, &kDevices, &kLoad};

/// The environment's Config, or the usage error that ends the command.
std::optional<int> read_environment(const Config*& config) {
  const Expected<Config>& environment = process_config();
  if (!environment) return usage_error("environment: " + environment.error().message());
  config = &*environment;
  return std::nullopt;
}

int run(const Command& command, std::span<const std::string> args) {
  const CommandSpec& spec = *command.spec;
  Expected<Arguments> parsed = parse_arguments(spec, args);
  const Config* config = nullptr;
  if (command.environment_first && !(parsed && parsed->help)) {
    if (std::optional<int> exit = read_environment(config)) return *exit;
  }
  if (std::optional<int> exit = stop_after_parse(spec, parsed)) return *exit;

  CommandContext context;
  context.arguments = std::move(*parsed);
  context.operands = std::move(context.arguments.operands);
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
