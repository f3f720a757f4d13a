// The coload CLI's subcommands. Each takes the arguments after its name and
// returns the process exit code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "coload/bundle.h"
#include "coload/config.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/select.h"
#include "coload/stream_select.h"

namespace coload::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;  ///< a file could not be read, or nothing matched
inline constexpr int kExitUsage = 2;       ///< the command line itself is wrong

int run_ls(std::span<const std::string> args);
int run_extract(std::span<const std::string> args);
int run_select(std::span<const std::string> args);
int run_check(std::span<const std::string> args);
int run_devices(std::span<const std::string> args);
int run_load(std::span<const std::string> args);

/// Parses a decimal or 0x-prefixed unsigned number; nullopt if it is not one.
std::optional<std::uint64_t> parse_number(const std::string& text);

/// Prints "coload: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message);

/// The device options `select` and `check` share: --device SPEC, --lds BYTES,
/// --co-versions LIST, --extended-isa-compat.
struct DeviceOptions {
  std::string spec;
  DeviceOverrides overrides;
  bool overridden = false;  ///< an option besides --device was given
};
enum class Option { NotMine, Taken, UsageError };
/// Takes args[i] (and its value, advancing i) when it is a device option; a
/// bad value prints a usage error for `command`.
Option take_device_option(std::span<const std::string> args, std::size_t& i, std::string_view command,
                          DeviceOptions& options);
/// The device the options describe, with the environment's config applied;
/// nullopt after printing a usage error.
std::optional<Device> build_device(const DeviceOptions& options, const Config& config, std::string_view command);

/// The select options of `config`, with COLOAD_HOTSWAP_PLUGIN's pairs on the
/// allowlist when hotswap is on (what `select`, `check` and `extract --device`
/// all choose with). A plugin that cannot be used is printed; nullopt then.
std::optional<SelectOptions> cli_select_options(const Config& config);

/// The budget a command's CCOBs share (coload/pipeline.h).
KeptBytes command_budget(std::uint64_t limit);

/// Prints "coload: <error's message>" to stderr.
void print_error(const Error& error);

/// Writes `bytes` to `path`; on failure prints why and returns false.
bool write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace coload::cli
