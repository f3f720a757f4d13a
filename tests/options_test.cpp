// The CLI's option tables and their parser (tools/coload/options.cpp): every
// kind of value, which error a command line gets first, each command's own
// wording, --help where it stands, and the --help text the tables give.
#include "options.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace coload::cli {
namespace {

Expected<Arguments> parse(const CommandSpec& command, std::vector<std::string> args) {
  return parse_arguments(command, args);
}

/// The usage error `args` gets; fails the test when they parse.
std::string error_of(const CommandSpec& command, std::vector<std::string> args) {
  auto parsed = parse(command, args);
  EXPECT_FALSE(parsed);
  if (parsed) return {};
  EXPECT_EQ(parsed.error().kind(), ErrorKind::InvalidArgument);
  return parsed.error().message();
}

TEST(ParseNumber, TakesDecimalAndHexOnly) {
  EXPECT_EQ(parse_number("65536"), 65536u);
  EXPECT_EQ(parse_number("0x10000"), 65536u);
  EXPECT_EQ(parse_number("0X1f"), 31u);
  EXPECT_EQ(parse_number("010"), 10u);  // not octal
  EXPECT_EQ(parse_number("0"), 0u);
  EXPECT_EQ(parse_number("18446744073709551615"), 18446744073709551615u);
  for (const char* bad : {"", "0x", " 1", " -1", "+5", "-1", "12x", "1 ", "18446744073709551616", "0xg"}) {
    EXPECT_EQ(parse_number(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(ParseArguments, ReadsEveryKindOfValue) {
  auto parsed = parse(kSelectCommand, {"--device", "gfx90a", "--lds", "0x8000", "--co-versions", "5,4", "--json", "-o",
                                       "out.co", "--max-decompressed-bytes", "4K", "in.so"});
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_FALSE(parsed->help);
  EXPECT_TRUE(parsed->given(kJson));
  EXPECT_EQ(parsed->text(kOutput), "out.co");
  EXPECT_EQ(parsed->number(kMaxDecompressedBytes), 4096u);
  EXPECT_EQ(parsed->operands, std::vector<std::string>{"in.so"});
  DeviceOptions device = parsed->device_options();
  EXPECT_EQ(device.spec, "gfx90a");
  EXPECT_EQ(device.overrides.lds_bytes, 0x8000u);
  EXPECT_EQ(device.overrides.code_object_versions, (std::vector<unsigned>{4, 5}));
  EXPECT_FALSE(device.overrides.extended_isa_compat);
  EXPECT_TRUE(device.overridden);

  auto runtime = parse(kLoadCommand, {"--runtime", "dry-run", "f"});
  ASSERT_TRUE(runtime);
  EXPECT_EQ(runtime->text(kLoadRuntime), "dry-run");
}

TEST(ParseArguments, OptionsNotGivenReadEmpty) {
  auto parsed = parse(kExtractCommand, {"f"});
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->given(kRetarget));
  EXPECT_EQ(parsed->text(kTarget), "");
  EXPECT_EQ(parsed->number(kBundle), std::nullopt);
  DeviceOptions device = parsed->device_options();
  EXPECT_EQ(device.spec, "");
  EXPECT_FALSE(device.overridden);
  EXPECT_EQ(device.overrides.lds_bytes, std::nullopt);
  EXPECT_EQ(device.overrides.code_object_versions, std::nullopt);
}

TEST(ParseArguments, OnlyLdsVersionsAndCompatOverrideTheDevice) {
  EXPECT_FALSE(parse(kCheckCommand, {"--device", "gfx90a"})->device_options().overridden);
  EXPECT_TRUE(parse(kCheckCommand, {"--extended-isa-compat"})->device_options().overridden);
  EXPECT_TRUE(parse(kCheckCommand, {"--extended-isa-compat"})->device_options().overrides.extended_isa_compat);
  EXPECT_TRUE(parse(kCheckCommand, {"--lds", "0"})->device_options().overridden);
  EXPECT_TRUE(parse(kCheckCommand, {"--co-versions", "4"})->device_options().overridden);
}

TEST(ParseArguments, TheLastValueOfARepeatedOptionWins) {
  auto parsed = parse(kExtractCommand, {"-o", "a", "--bundle", "1", "-o", "b", "--bundle", "0x2", "--device", "x",
                                        "--device", "gfx942", "--co-versions", "4", "--co-versions", "5,6"});
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->text(kOutput), "b");
  EXPECT_EQ(parsed->number(kBundle), 2u);
  EXPECT_EQ(parsed->device_options().spec, "gfx942");
  EXPECT_EQ(parsed->device_options().overrides.code_object_versions, (std::vector<unsigned>{5, 6}));
}

TEST(ParseArguments, AValueIsTheNextArgumentWhateverItLooksLike) {
  auto parsed = parse(kSelectCommand, {"-o", "--json", "--device", "-h", "", "f"});
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->help);
  EXPECT_FALSE(parsed->given(kJson));
  EXPECT_EQ(parsed->text(kOutput), "--json");
  EXPECT_EQ(parsed->device_options().spec, "-h");
  EXPECT_EQ(parsed->operands, (std::vector<std::string>{"", "f"}));
}

TEST(ParseArguments, HelpEndsTheWalkWhereItStands) {
  for (const char* spelling : {"--help", "-h"}) {
    auto parsed = parse(kSelectCommand, {"--device", "gfx90a", spelling, "--frob", "--lds", "x"});
    ASSERT_TRUE(parsed) << spelling;
    EXPECT_TRUE(parsed->help);
  }
  EXPECT_EQ(error_of(kSelectCommand, {"--frob", "--help"}), "select: unknown option or missing value: '--frob'");
  EXPECT_EQ(error_of(kDevicesCommand, {"x", "-h"}), "devices: unknown argument or missing value: 'x'");
  auto devices = parse(kDevicesCommand, {"-h"});
  ASSERT_TRUE(devices);
  EXPECT_TRUE(devices->help);
}

TEST(ParseArguments, TheFirstErrorInArgvWins) {
  EXPECT_EQ(error_of(kSelectCommand, {"--lds", "12x", "--frob"}), "select: --lds needs a byte count");
  EXPECT_EQ(error_of(kSelectCommand, {"--frob", "--lds", "12x"}), "select: unknown option or missing value: '--frob'");
  EXPECT_EQ(error_of(kLoadCommand, {"--runtime", "cuda", "--frob"}),
            "load: --runtime is hsa, hip or dry-run, not 'cuda'");
  EXPECT_EQ(error_of(kLoadCommand, {"--frob", "--runtime", "cuda"}), "load: unknown option or missing value: '--frob'");
}

TEST(ParseArguments, EachKindOfBadValueIsSaidAsTheCommandSaysIt) {
  EXPECT_EQ(error_of(kCheckCommand, {"--lds", " -1"}), "check: --lds needs a byte count");
  EXPECT_EQ(error_of(kExtractCommand, {"--bundle", "x"}), "extract: --bundle needs a bundle index");
  EXPECT_EQ(error_of(kExtractCommand, {"--max-decompressed-bytes", "0"}),
            "extract: " + parse_byte_count("0", "--max-decompressed-bytes").error().message());
  EXPECT_EQ(error_of(kLsCommand, {"--max-decompressed-bytes", "1Q"}),
            "ls: " + parse_byte_count("1Q", "--max-decompressed-bytes").error().message());
  EXPECT_EQ(error_of(kSelectCommand, {"--co-versions", "4,9"}),
            "select: --co-versions: " + parse_code_object_versions("4,9").error().message());
  EXPECT_EQ(error_of(kDevicesCommand, {"--runtime", "dry-run"}), "devices: --runtime is hsa or hip, not 'dry-run'");
}

TEST(ParseArguments, UnknownOptionsAndMissingValuesPerCommand) {
  EXPECT_EQ(error_of(kSelectCommand, {"f", "-o"}), "select: unknown option or missing value: '-o'");
  EXPECT_EQ(error_of(kSelectCommand, {"--device=gfx90a"}),
            "select: unknown option or missing value: '--device=gfx90a'");
  EXPECT_EQ(error_of(kCheckCommand, {"-o", "x"}), "check: unknown option or missing value: '-o'");
  EXPECT_EQ(error_of(kExtractCommand, {"-"}), "extract: unknown option or missing value: '-'");
  EXPECT_EQ(error_of(kLoadCommand, {"--runtime"}), "load: unknown option or missing value: '--runtime'");
  // ls: its own wording, a missing value named, and "-" an operand.
  EXPECT_EQ(error_of(kLsCommand, {"--frob"}), "ls: unknown option '--frob'");
  EXPECT_EQ(error_of(kLsCommand, {"f", "--max-decompressed-bytes"}), "ls: --max-decompressed-bytes needs a byte count");
  auto ls = parse(kLsCommand, {"-", "--json", "f"});
  ASSERT_TRUE(ls);
  EXPECT_EQ(ls->operands, (std::vector<std::string>{"-", "f"}));
  // devices takes no operand: every argument it does not know is an error.
  EXPECT_EQ(error_of(kDevicesCommand, {"--runtime"}), "devices: unknown argument or missing value: '--runtime'");
  EXPECT_EQ(error_of(kDevicesCommand, {"-"}), "devices: unknown argument or missing value: '-'");
  // A device option belongs to the commands that take the device options.
  EXPECT_EQ(error_of(kLsCommand, {"--device", "gfx90a"}), "ls: unknown option '--device'");
  EXPECT_EQ(error_of(kDevicesCommand, {"--lds", "1"}), "devices: unknown argument or missing value: '--lds'");
}

/// The option lines of a --help text: what follows "options:" up to the blank line.
std::vector<std::string> option_lines(const std::string& help) {
  std::vector<std::string> lines;
  std::istringstream in(help.substr(help.find("\noptions:\n") + 10));
  for (std::string line; std::getline(in, line) && !line.empty();) {
    if (line.starts_with("  -")) lines.push_back(line);
  }
  return lines;
}

TEST(HelpText, ListsEachOptionOfTheTableOnce) {
  struct Case {
    const CommandSpec* command;
    std::vector<std::string> labels;
  };
  const std::vector<std::string> device = {"--device SPEC", "--extended-isa-compat", "--lds BYTES",
                                           "--co-versions 4,5,6"};
  auto with_device = [&](std::vector<std::string> own) {
    own.insert(own.begin(), device.begin(), device.end());
    return own;
  };
  const std::vector<Case> cases = {
      {&kLsCommand, {"--json", "--max-decompressed-bytes N", "--recursive", "--pattern GLOB"}},
      {&kExtractCommand,
       with_device({"--target ID", "--retarget", "--bundle N", "-o OUT", "--max-decompressed-bytes N"})},
      {&kSelectCommand,
       with_device({"--json", "-o OUT", "--max-decompressed-bytes N", "--recursive", "--pattern GLOB"})},
      {&kCheckCommand, with_device({"--json", "--max-decompressed-bytes N", "--recursive", "--pattern GLOB"})},
      {&kDevicesCommand, {"--runtime hsa|hip", "--json"}},
      {&kLoadCommand, with_device({"--runtime hsa|hip|dry-run", "--json", "--recursive", "--pattern GLOB"})},
  };
  for (const Case& c : cases) {
    std::string help = help_text(*c.command);
    std::string name(c.command->name);
    EXPECT_TRUE(help.starts_with("usage: coload " + name + " [options]")) << help;
    std::vector<std::string> lines = option_lines(help);
    std::vector<std::string> labels = c.labels;
    labels.push_back("-h, --help");
    ASSERT_EQ(lines.size(), labels.size()) << help;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      EXPECT_TRUE(lines[i].starts_with("  " + labels[i] + "  ")) << name << ": " << lines[i];
    }
  }
}

TEST(HelpText, WrapsAt100ColumnsAndAlignsTheHelp) {
  for (const CommandSpec* command :
       {&kLsCommand, &kExtractCommand, &kSelectCommand, &kCheckCommand, &kDevicesCommand, &kLoadCommand}) {
    std::string help = help_text(*command);
    std::istringstream in(help);
    for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
    std::vector<std::string> lines = option_lines(help);
    std::size_t column = lines.front().find("  ", 2);
    column = lines.front().find_first_not_of(' ', column);
    for (const std::string& line : lines) {
      EXPECT_EQ(line[column - 1], ' ') << line;
      EXPECT_NE(line[column], ' ') << line;
    }
  }
  EXPECT_TRUE(help_text(kSelectCommand)
                  .ends_with("\nNumbers are decimal or 0x-prefixed.\n"
                             "`coload --help` describes every command.\n"));
  EXPECT_TRUE(help_text(kDevicesCommand).ends_with("print this help\n\n`coload --help` describes every command.\n"));
}

}  // namespace
}  // namespace coload::cli
