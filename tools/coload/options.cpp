// The commands' option tables, the one parser that reads a command line
// against them, and the --help text they give.
#include "options.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "commands.h"

namespace coload::cli {

// --- The tables ---------------------------------------------------------

namespace {

constexpr std::string_view kDevicesRuntimes[] = {"hsa", "hip"};
constexpr std::string_view kLoadRuntimes[] = {"hsa", "hip", "dry-run"};

/// --help and -h, which every command takes.
constexpr OptionSpec kHelp{.name = "--help", .alias = "-h", .kind = ValueKind::Flag, .help = "print this help"};

/// The device options, in the order --help lists them.
constexpr OptionSpec kDeviceOptions[] = {
    {.name = "--device",
     .kind = ValueKind::Text,  // read with the other three and the environment: build_device
     .value_name = "SPEC",
     .help = "the device: a target ID (gfx942, gfx90a:sramecc+:xnack-); features left out take the device's "
             "defaults"},
    {.name = "--extended-isa-compat",
     .kind = ValueKind::Flag,
     .help = "also accept same-ISA equivalents (gfx1030 code for gfx1031), as COLOAD_EXTENDED_ISA_COMPAT does"},
    {.name = "--lds",
     .kind = ValueKind::Number,
     .value_name = "BYTES",
     .help = "the device's LDS size in bytes, in place of its processor's",
     .needs = "a byte count"},
    {.name = "--co-versions",
     .kind = ValueKind::Versions,
     .value_name = "4,5,6",
     .help = "the code object versions the device's runtime takes"},
};
const OptionSpec& kDevice = kDeviceOptions[0];
const OptionSpec& kExtendedIsaCompat = kDeviceOptions[1];
const OptionSpec& kLds = kDeviceOptions[2];
const OptionSpec& kCoVersions = kDeviceOptions[3];

}  // namespace

const OptionSpec kJson{.name = "--json", .kind = ValueKind::Flag, .help = "print one JSON document (docs/cli-json.md)"};
const OptionSpec kOutput{
    .name = "-o",
    .kind = ValueKind::Text,
    .value_name = "OUT",
    .help = "write the code object to OUT, or to OUT.N (N = bundle index) when several bundles give one"};
const OptionSpec kMaxDecompressedBytes{
    .name = "--max-decompressed-bytes",
    .kind = ValueKind::ByteCount,
    .value_name = "N",
    .help =
        "cap on decompressed bytes, as COLOAD_MAX_DECOMPRESSED_BYTES takes it (decimal, optional K/M/G suffix, "
        "above 0)",
    .needs = "a byte count"};
const OptionSpec kTarget{.name = "--target",
                         .kind = ValueKind::Text,
                         .value_name = "ID",
                         .help =
                             "write the entry whose bundle entry ID (hipv4-amdgcn-amd-amdhsa--gfx90a) or target "
                             "ID (gfx90a, gfx90a:xnack-) equals ID; matching is exact"};
const OptionSpec kBundle{.name = "--bundle",
                         .kind = ValueKind::Number,
                         .value_name = "N",
                         .help = "search only bundle N",
                         .needs = "a bundle index"};
const OptionSpec kRetarget{.name = "--retarget",
                           .kind = ValueKind::Flag,
                           .help = "relabel a same-ISA equivalent for the device (implies --extended-isa-compat)"};
const OptionSpec kDevicesRuntime{.name = "--runtime",
                                 .kind = ValueKind::Choice,
                                 .help = "the runtime whose devices are listed",
                                 .choices = kDevicesRuntimes,
                                 .fallback = "hsa"};
const OptionSpec kLoadRuntime{.name = "--runtime",
                              .kind = ValueKind::Choice,
                              .help = "the runtime that loads (dry-run: no GPU needed, handles are 0)",
                              .choices = kLoadRuntimes,
                              .fallback = "hsa"};

const OptionSpec kRecursive{.name = "--recursive",
                            .kind = ValueKind::Flag,
                            .help = "a DIRECTORY operand takes the files of its subdirectories too"};
const OptionSpec kPattern{
    .name = "--pattern",
    .kind = ValueKind::Text,
    .value_name = "GLOB",
    .help =
        "a DIRECTORY operand takes only the files whose names match GLOB (fnmatch, e.g. '*.co'); a GLOB "
        "with a '/' matches paths relative to DIRECTORY ('gfx94*/*.co') and enters only the subdirectories "
        "it can reach"};

namespace {

constexpr const OptionSpec* kLsOptions[] = {&kJson, &kMaxDecompressedBytes, &kRecursive, &kPattern};
constexpr const OptionSpec* kExtractOptions[] = {&kTarget, &kRetarget, &kBundle, &kOutput, &kMaxDecompressedBytes};
constexpr const OptionSpec* kSelectOptions[] = {&kJson, &kOutput, &kMaxDecompressedBytes, &kRecursive, &kPattern};
constexpr const OptionSpec* kCheckOptions[] = {&kJson, &kMaxDecompressedBytes, &kRecursive, &kPattern};
constexpr const OptionSpec* kDevicesOptions[] = {&kDevicesRuntime, &kJson};
constexpr const OptionSpec* kLoadOptions[] = {&kLoadRuntime, &kJson, &kRecursive, &kPattern};

constexpr std::string_view kUnknownOrMissing = "unknown option or missing value: ";

}  // namespace

const CommandSpec kLsCommand{
    .name = "ls",
    .summary =
        "List every bundle of each FILE (a host executable or shared library with a .hip_fatbin section, a "
        "bundle file, or a bare code object) and each of its entries. A DIRECTORY is listed as one binary, "
        "a file set (docs/loading.md), whose grouped entries name their files. --json gives an object for "
        "one FILE, an array of them for several.",
    .device_options = false,
    .options = kLsOptions,
    .operands = "FILE...",
    .unknown = "unknown option ",
    .dash_is_operand = true,
    .names_missing_value = true,
};
const CommandSpec kExtractCommand{
    .name = "extract",
    .summary =
        "Write one entry's bytes to OUT: the entry --target names (as clang-offload-bundler --unbundle "
        "writes it), or the entry `coload select` chooses for the device --device gives. Give --target or "
        "--device, and -o. The device options need --device.",
    .device_options = true,
    .options = kExtractOptions,
    .operands = "FILE",
    .unknown = kUnknownOrMissing,
};
const CommandSpec kSelectCommand{
    .name = "select",
    .summary =
        "For the device --device gives (required), choose the entry of each bundle of FILE to load, and "
        "print every entry with its tier, verdict and reason. Exit 1 when some bundle has no entry for the "
        "device. A DIRECTORY or several FILEs are one binary, a file set (docs/loading.md): each choice "
        "says the file it came from.",
    .device_options = true,
    .options = kSelectOptions,
    .operands = "FILE...",
    .unknown = kUnknownOrMissing,
};
const CommandSpec kCheckCommand{
    .name = "check",
    .summary =
        "Read a code object and check its ELF tables, metadata note, kernel descriptors and kernarg "
        "layouts; with --device, also against the device. A fat binary needs --device (each bundle's entry "
        "is chosen as `select` does). Exit 1 when anything is wrong. A DIRECTORY or several FILEs are one "
        "binary, a file set (docs/loading.md).",
    .device_options = true,
    .options = kCheckOptions,
    .operands = "FILE...",
    .unknown = kUnknownOrMissing,
};
const CommandSpec kDevicesCommand{
    .name = "devices",
    .summary = "List the GPU devices the runtime reports: target ID, LDS, wave sizes, code object versions.",
    .device_options = false,
    .options = kDevicesOptions,
    .operands = {},
    .unknown = "unknown argument or missing value: ",
};
constexpr std::string_view kLogLevels[] = {"error", "warn", "info", "debug"};
const OptionSpec kRunDevice{.name = "--device",
                            .kind = ValueKind::Text,
                            .value_name = "SPEC",
                            .help =
                                "a GPU of the machine as a target ID (gfx1031); repeat it for each GPU, in "
                                "HIP's order (default: the KFD topology's GPUs)"};
const OptionSpec kRunExtendedIsaCompat{
    .name = "--extended-isa-compat",
    .help = "let a GPU take its same-ISA equivalents' code, relabelled (gfx1030 code on gfx1031)"};
const OptionSpec kRunLog{.name = "--log",
                         .kind = ValueKind::Choice,
                         .help = "what coload says on stderr (default: only a GPU with no code at all)",
                         .choices = kLogLevels};
const OptionSpec kRunDryRun{
    .name = "--dry-run",
    .help =
        "run nothing: list what each wrapper of PROGRAM (an executable or a shared library) and the "
        "libraries it links would get on each GPU"};
constexpr const OptionSpec* kRunOptions[] = {&kRunDevice, &kRunExtendedIsaCompat, &kRunLog, &kRunDryRun};
const CommandSpec kRunCommand{
    .name = "run",
    .summary =
        "Run PROGRAM with libcoload_preload.so in front of its HIP runtime, so that each GPU gets the code "
        "object coload chooses (docs/preload.md); the COLOAD_* variables apply. Exits with PROGRAM's status.",
    .device_options = false,
    .options = kRunOptions,
    .operands = "-- PROGRAM [ARG...]",
    .unknown = kUnknownOrMissing,
};
const CommandSpec kLoadCommand{
    .name = "load",
    .summary =
        "Select, validate and load FILE's code objects on one device, as a runtime would through coload's "
        "registry, and list each kernel. hsa/hip: --device is an index (default 0) or a target ID of a "
        "runtime device. dry-run: --device SPEC is required, and the other device options apply to it alone. "
        "A DIRECTORY or several FILEs are one binary, a file set (docs/loading.md).",
    .device_options = true,
    .options = kLoadOptions,
    .operands = "FILE...",
    .unknown = kUnknownOrMissing,
};

// --- Reading a command line ---------------------------------------------

namespace {

/// The option `arg` spells in `command`'s table (--help included), or null.
const OptionSpec* find_option(const CommandSpec& command, std::string_view arg) {
  auto spells = [&](const OptionSpec& option) {
    return arg == option.name || (!option.alias.empty() && arg == option.alias);
  };
  if (spells(kHelp)) return &kHelp;
  if (command.device_options) {
    for (const OptionSpec& option : kDeviceOptions) {
      if (spells(option)) return &option;
    }
  }
  for (const OptionSpec* option : command.options) {
    if (spells(*option)) return option;
  }
  return nullptr;
}

/// "a, b or c".
std::string either(std::span<const std::string_view> choices) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) text += i + 1 == choices.size() ? " or " : ", ";
    text += choices[i];
  }
  return text;
}

Error usage(const CommandSpec& command, const std::string& what) {
  return Error(ErrorKind::InvalidArgument, std::string(command.name) + ": " + what);
}

}  // namespace

Expected<Arguments> parse_arguments(const CommandSpec& command, std::span<const std::string> args) {
  Arguments parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const OptionSpec* option = find_option(command, arg);
    if (option == &kHelp) {
      parsed.help = true;
      return parsed;
    }
    if (option && option->kind == ValueKind::Flag) {
      parsed.values_.push_back({option, {}, 0, {}});
      continue;
    }
    if (option && i + 1 < args.size()) {
      Arguments::Value value{option, args[++i], 0, {}};
      const std::string name(option->name);
      switch (option->kind) {
        case ValueKind::Number: {
          auto number = parse_number(value.text);
          if (!number) return usage(command, name + " needs " + std::string(option->needs));
          value.number = *number;
          break;
        }
        case ValueKind::ByteCount: {
          auto count = parse_byte_count(value.text, name);
          if (!count) return usage(command, count.error().message());
          value.number = *count;
          break;
        }
        case ValueKind::Versions: {
          auto versions = parse_code_object_versions(value.text);
          if (!versions) return usage(command, name + ": " + versions.error().message());
          value.versions = std::move(*versions);
          break;
        }
        case ValueKind::Choice:
          if (std::ranges::find(option->choices, value.text) == option->choices.end()) {
            return usage(command, name + " is " + either(option->choices) + ", not '" + value.text + "'");
          }
          break;
        case ValueKind::Flag:
        case ValueKind::Text: break;
      }
      parsed.values_.push_back(std::move(value));
      continue;
    }
    if (option && command.names_missing_value) {
      return usage(command, std::string(option->name) + " needs " + std::string(option->needs));
    }
    bool is_option = arg.starts_with("-") && !(command.dash_is_operand && arg == "-");
    if (option || is_option || command.operands.empty()) {
      return usage(command, std::string(command.unknown) + "'" + arg + "'");
    }
    parsed.operands.push_back(arg);
  }
  return parsed;
}

const Arguments::Value* Arguments::find(const OptionSpec& option) const {
  for (auto value = values_.rbegin(); value != values_.rend(); ++value) {
    if (value->option == &option) return &*value;
  }
  return nullptr;
}

std::string Arguments::text(const OptionSpec& option) const {
  const Value* value = find(option);
  return value ? value->text : std::string(option.fallback);
}

std::vector<std::string> Arguments::texts(const OptionSpec& option) const {
  std::vector<std::string> given;
  for (const Value& value : values_)
    if (value.option == &option) given.push_back(value.text);
  return given;
}

std::optional<std::uint64_t> Arguments::number(const OptionSpec& option) const {
  const Value* value = find(option);
  if (!value) return std::nullopt;
  return value->number;
}

DeviceOptions Arguments::device_options() const {
  DeviceOptions options;
  options.spec = text(kDevice);
  options.overrides.extended_isa_compat = given(kExtendedIsaCompat);
  options.overrides.lds_bytes = number(kLds);
  if (const Value* versions = find(kCoVersions)) options.overrides.code_object_versions = versions->versions;
  options.overridden = given(kExtendedIsaCompat) || given(kLds) || given(kCoVersions);
  return options;
}

std::optional<std::uint64_t> parse_number(const std::string& text) {
  // Digits only: strtoull alone would take a leading 0 as octal, and skip
  // spaces before a minus sign (" -1" would be 2^64-1).
  bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  std::string_view digits = std::string_view(text).substr(hex ? 2 : 0);
  if (digits.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
  if (status != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<Device> build_device(const DeviceOptions& options, const Config& config, std::string_view command) {
  auto device = device_from_spec(options.spec, options.overrides);
  if (!device) {
    usage_error(std::string(command) + ": --device: " + device.error().message());
    return std::nullopt;
  }
  config.apply(*device);
  return std::move(*device);
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "coload: %s\n", message.c_str());
  return kExitUsage;
}

// --- --help -------------------------------------------------------------

namespace {

constexpr std::size_t kWidth = 100;  ///< --help's lines wrap before this column

/// `text` wrapped at spaces before kWidth, starting at `column`; each line
/// after the first is indented by `indent`.
std::string wrap(std::string_view text, std::size_t column, std::size_t indent) {
  std::string out;
  while (!text.empty()) {
    std::size_t end = text.find(' ');
    std::string_view word = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!out.empty() && column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (!out.empty()) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

/// "--lds BYTES", "--runtime hsa|hip", "-h, --help".
std::string label(const OptionSpec& option) {
  std::string text =
      option.alias.empty() ? std::string(option.name) : std::string(option.alias) + ", " + std::string(option.name);
  if (option.kind == ValueKind::Choice) {
    text += ' ';
    for (std::size_t i = 0; i < option.choices.size(); ++i) {
      text += (i > 0 ? "|" : "") + std::string(option.choices[i]);
    }
  } else if (option.kind != ValueKind::Flag) {
    text += " " + std::string(option.value_name);
  }
  return text;
}

}  // namespace

std::string help_text(const CommandSpec& command) {
  std::vector<const OptionSpec*> options;
  if (command.device_options) {
    for (const OptionSpec& option : kDeviceOptions) options.push_back(&option);
  }
  options.insert(options.end(), command.options.begin(), command.options.end());
  options.push_back(&kHelp);

  std::string text = "usage: coload " + std::string(command.name) + " [options]";
  if (!command.operands.empty()) text += " " + std::string(command.operands);
  text += "\n\n" + wrap(command.summary, 0, 0) + "\n\noptions:\n";
  std::size_t column = 0;
  for (const OptionSpec* option : options) column = std::max(column, label(*option).size());
  column += 4;  // two spaces before the label, two after the longest
  for (const OptionSpec* option : options) {
    std::string line = "  " + label(*option);
    line.resize(column, ' ');
    std::string help(option->help);
    if (!option->fallback.empty()) help += " (default " + std::string(option->fallback) + ")";
    text += line + wrap(help, column, column) + "\n";
  }
  auto is_number = [](const OptionSpec* option) { return option->kind == ValueKind::Number; };
  if (std::ranges::any_of(options, is_number)) text += "\nNumbers are decimal or 0x-prefixed.";
  text += "\n`coload --help` describes every command.\n";
  return text;
}

std::optional<int> stop_after_parse(const CommandSpec& command, const Expected<Arguments>& parsed) {
  if (!parsed) return usage_error(parsed.error().message());
  if (parsed->help) {
    std::fputs(help_text(command).c_str(), stdout);
    return kExitOk;
  }
  return std::nullopt;
}

}  // namespace coload::cli
