// Helpers the subcommands share: numbers, usage errors, output files.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "coload/hotswap.h"
#include "commands.h"

namespace coload::cli {

std::optional<SelectOptions> cli_select_options(const Config& config) {
  if (!config.hotswap) {
    if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {  // not a silent no-op (docs/environment.md)
      std::fprintf(stderr, "coload: warning: COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but "
                           "COLOAD_HOTSWAP is not 1: the hotswap tier is off\n");
    }
    return config.select_options();
  }
  auto registry = hotswap_registry(config);
  if (!registry) {
    std::fprintf(stderr, "coload: hotswap: %s\n", registry.error().message().c_str());
    return std::nullopt;
  }
  return config.select_options(*registry);
}

KeptBytes command_budget(std::uint64_t limit) {
  return KeptBytes(limit, "what this command keeps of the file's compressed bundles");
}

void print_error(const Error& error) { std::fprintf(stderr, "coload: %s\n", error.message().c_str()); }

bool write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "coload: %s: cannot create: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) std::fprintf(stderr, "coload: %s: write failed: %s\n", path.c_str(), std::strerror(errno));
  return ok;
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

Option take_device_option(std::span<const std::string> args, std::size_t& i, std::string_view command,
                          DeviceOptions& options) {
  const std::string& arg = args[i];
  bool has_value = i + 1 < args.size();
  std::string name(command);
  if (arg == "--device" && has_value) {
    options.spec = args[++i];
  } else if (arg == "--extended-isa-compat") {
    options.overrides.extended_isa_compat = true;
    options.overridden = true;
  } else if (arg == "--lds" && has_value) {
    auto bytes = parse_number(args[++i]);
    if (!bytes) {
      usage_error(name + ": --lds needs a byte count");
      return Option::UsageError;
    }
    options.overrides.lds_bytes = *bytes;
    options.overridden = true;
  } else if (arg == "--co-versions" && has_value) {
    auto versions = parse_code_object_versions(args[++i]);
    if (!versions) {
      usage_error(name + ": --co-versions: " + versions.error().message());
      return Option::UsageError;
    }
    options.overrides.code_object_versions = *versions;
    options.overridden = true;
  } else {
    return Option::NotMine;
  }
  return Option::Taken;
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

}  // namespace coload::cli
