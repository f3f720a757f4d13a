// What every command starts from, built once by the dispatcher before the
// command runs: its parsed command line, the environment's Config, the
// device its options describe, the read options, its operands and the
// printer of its report. The dispatcher keeps the order in which a
// command's errors win: the command line (ls: the environment first), the
// command's own usage rules, the environment, the device.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/config.h"
#include "coload/detail/stream_select.h"
#include "coload/device.h"
#include "coload/select.h"
#include "commands.h"
#include "options.h"
#include "report_printer.h"

namespace coload::cli {

/// One run of one command.
struct CommandContext {
  Arguments arguments;                    ///< as parsed; the operands moved out to `operands`
  std::vector<std::string> operands;      ///< the FILEs, in the order given
  DeviceOptions device_options;           ///< --device and the device options; a usage rule may adjust them
  const Config* config = nullptr;         ///< the environment's (process_config); set before `run`
  std::optional<Device> device;           ///< built from device_options when --device is given (Command::builds_device)
  StreamOptions stream;                   ///< the Config's, with --max-decompressed-bytes
  bool json = false;                      ///< --json
  std::unique_ptr<ReportPrinter> report;  ///< text or JSON, as --json says
  std::optional<BinaryPaths> paths;       ///< load: the operands' files, listed before the environment is read
  std::vector<std::string> program;       ///< run: the words after "--"

  /// The select options (cli_select_options), worked out once, when the
  /// command first needs them: a hotswap plugin that cannot be used is
  /// printed then, and nullopt returned.
  const std::optional<SelectOptions>& select_options();

 private:
  std::optional<std::optional<SelectOptions>> select_options_;
};

/// A command: its command line, its own usage rules and its body.
struct Command {
  const CommandSpec* spec;
  /// The environment's error wins over the command line's (ls).
  bool environment_first = false;
  /// The context's device is built from --device when given (select, check, extract).
  bool builds_device = false;
  /// The words after the first "--" are a program's command line, not the command's (run).
  bool takes_program = false;
  /// The command's own rules for its command line, checked before the
  /// environment is read; an exit code (after printing why) ends the run.
  std::optional<int> (*check_usage)(CommandContext&) = nullptr;
  int (*run)(CommandContext&) = nullptr;
};

extern const Command kLs;
extern const Command kExtract;
extern const Command kSelect;
extern const Command kCheck;
extern const Command kDevices;
extern const Command kLoad;
extern const Command kRun;

/// Runs the command named `name` with `args` (the arguments after its name);
/// nullopt when there is no such command.
std::optional<int> dispatch(std::string_view name, std::span<const std::string> args);

}  // namespace coload::cli
