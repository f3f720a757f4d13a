// The coload CLI's command lines: each command declares its options in a
// table (spelling, value name, help, kind of value), and one parser walks
// argv against it, reads every value, and writes the command's --help from
// it. What the options mean together (which are required, which exclude
// each other) stays with the command: its messages are its own.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/config.h"
#include "coload/device.h"
#include "coload/error.h"

namespace coload::cli {

/// What an option's value is, and so how it is read and what a bad one is told.
enum class ValueKind : std::uint8_t {
  Flag,       ///< no value
  Text,       ///< any text, kept as given (a path, an entry ID, a device SPEC)
  Number,     ///< decimal or 0x-prefixed (parse_number); a bad one "needs <needs>"
  ByteCount,  ///< as COLOAD_MAX_DECOMPRESSED_BYTES takes it (parse_byte_count)
  Versions,   ///< code object versions, "4,5,6" (parse_code_object_versions)
  Choice,     ///< one of `choices`
};

/// One declared option.
struct OptionSpec {
  std::string_view name;   ///< "--lds"
  std::string_view alias;  ///< a second spelling ("-h"), or empty
  ValueKind kind = ValueKind::Flag;
  std::string_view value_name;                ///< "BYTES" in the usage; empty for a flag or a choice
  std::string_view help;                      ///< a line or two for --help
  std::string_view needs;                     ///< what a bad Number or a named missing value needs ("a byte count")
  std::span<const std::string_view> choices;  ///< a Choice's values, in the order --help lists them
  std::string_view fallback;                  ///< the value read when the option is not given
};

/// One command's command line.
struct CommandSpec {
  std::string_view name;                       ///< "select"
  std::string_view summary;                    ///< what the command does, for --help (a few lines)
  bool device_options = false;                 ///< takes the device options (DeviceOptions), listed first
  std::span<const OptionSpec* const> options;  ///< its own options, in --help's order
  std::string_view operands;                   ///< "FILE" or "FILE..."; empty: the command takes none
  /// What an unknown option is called before it is quoted ("unknown option or missing value: ").
  std::string_view unknown;
  bool dash_is_operand = false;      ///< a lone "-" is an operand, not an unknown option
  bool names_missing_value = false;  ///< a valued option last on the line "needs <needs>"; else it is unknown
};

/// The device options `select`, `check`, `extract` and `load` share: --device
/// SPEC, --extended-isa-compat, --lds BYTES, --co-versions LIST.
struct DeviceOptions {
  std::string spec;
  DeviceOverrides overrides;
  bool overridden = false;  ///< an option besides --device was given
};

/// What parse_arguments read. Each valued option keeps the last value given.
class Arguments {
 public:
  bool help = false;                  ///< --help or -h came before any error: print the usage, nothing else
  std::vector<std::string> operands;  ///< in the order given

  /// Whether `option` was given.
  bool given(const OptionSpec& option) const { return find(option) != nullptr; }
  /// A Text or Choice option's value; its fallback (often empty) when not given.
  std::string text(const OptionSpec& option) const;
  /// Every value a repeated Text option was given, in order.
  std::vector<std::string> texts(const OptionSpec& option) const;
  /// A Number or ByteCount option's value.
  std::optional<std::uint64_t> number(const OptionSpec& option) const;
  /// The device fragment's options.
  DeviceOptions device_options() const;

 private:
  friend Expected<Arguments> parse_arguments(const CommandSpec& command, std::span<const std::string> args);
  struct Value {
    const OptionSpec* option;
    std::string text;
    std::uint64_t number = 0;
    std::vector<unsigned> versions;
  };
  const Value* find(const OptionSpec& option) const;
  std::vector<Value> values_;  ///< as given; a repeated option's last value is the one read
};

/// Walks `args` against `command`'s table, in order: the first bad option or
/// value is the error (InvalidArgument, "<command>: <what>"); --help or -h
/// ends the walk with `help` set. A valued option takes the next argument,
/// whatever it looks like.
Expected<Arguments> parse_arguments(const CommandSpec& command, std::span<const std::string> args);

/// `command`'s --help text, from its table.
std::string help_text(const CommandSpec& command);

/// Where the command line ends the command: prints --help's text to stdout
/// (kExitOk) or the usage error (kExitUsage); nullopt when the command goes on.
std::optional<int> stop_after_parse(const CommandSpec& command, const Expected<Arguments>& parsed);

/// Parses a decimal or 0x-prefixed unsigned number; nullopt if it is not one.
std::optional<std::uint64_t> parse_number(const std::string& text);

/// Prints "coload: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message);

/// The device the options describe, with the environment's config applied;
/// nullopt after printing a usage error.
std::optional<Device> build_device(const DeviceOptions& options, const Config& config, std::string_view command);

// The options the commands read.
extern const OptionSpec kJson;
extern const OptionSpec kOutput;
extern const OptionSpec kMaxDecompressedBytes;
extern const OptionSpec kTarget;
extern const OptionSpec kBundle;
extern const OptionSpec kRetarget;
extern const OptionSpec kDevicesRuntime;
extern const OptionSpec kLoadRuntime;
extern const OptionSpec kRecursive;
extern const OptionSpec kPattern;
extern const OptionSpec kRunDevice;
extern const OptionSpec kRunExtendedIsaCompat;
extern const OptionSpec kRunLog;
extern const OptionSpec kRunDryRun;

// The commands.
extern const CommandSpec kLsCommand;
extern const CommandSpec kExtractCommand;
extern const CommandSpec kSelectCommand;
extern const CommandSpec kCheckCommand;
extern const CommandSpec kRunCommand;
extern const CommandSpec kDevicesCommand;
extern const CommandSpec kLoadCommand;

}  // namespace coload::cli
