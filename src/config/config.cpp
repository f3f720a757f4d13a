// The one place coload reads the environment (docs/environment.md). Every
// variable is parsed strictly: unset or empty keeps the default, anything
// else must be one of the accepted values or it is an error naming the
// variable, the value and what would have been accepted.
#include "coload/config.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "coload/select.h"  // HotswapAllowlist checks COLOAD_HOTSWAP_PAIRS
#include "common/bytes.h"
#include "common/try.h"

namespace coload {
namespace {

constexpr std::string_view kUnbundler = "COLOAD_UNBUNDLER";
constexpr std::string_view kExtendedIsaCompat = "COLOAD_EXTENDED_ISA_COMPAT";
constexpr std::string_view kHotswap = "COLOAD_HOTSWAP";
constexpr std::string_view kHotswapPlugin = "COLOAD_HOTSWAP_PLUGIN";
constexpr std::string_view kHotswapPairs = "COLOAD_HOTSWAP_PAIRS";
constexpr std::string_view kLog = "COLOAD_LOG";
constexpr std::string_view kMaxDecompressedBytes = "COLOAD_MAX_DECOMPRESSED_BYTES";
constexpr std::string_view kHashCheck = "COLOAD_HASH_CHECK";
constexpr std::string_view kVerifyCache = "COLOAD_VERIFY_CACHE";
constexpr std::string_view kKpackRoot = "COLOAD_KPACK_ROOT";
// rocm-kpack's own variables, read as its loader reads them.
constexpr std::string_view kKpackPath = "ROCM_KPACK_PATH";
constexpr std::string_view kKpackPathPrefix = "ROCM_KPACK_PATH_PREFIX";
constexpr std::string_view kKpackDisable = "ROCM_KPACK_DISABLE";

/// `COLOAD_LOG="verbose": not a log level; accepted: error, warn, info, debug`,
/// with the variable as its field and `number`, a numeric value, as its value.
Error bad_value(std::string_view variable, std::string_view value, std::string_view problem, std::string_view accepted,
                std::optional<std::uint64_t> number = std::nullopt) {
  std::string message(variable);
  message += "=\"";
  message += value;
  message += "\": ";
  message += problem;
  message += "; accepted: ";
  message += accepted;
  return Error(ErrorKind::InvalidArgument, std::move(message)).at_field(variable, std::nullopt, number);
}

/// The variable's value, or nullopt when it is unset or empty (the default applies).
std::optional<std::string> non_empty(const Config::Lookup& lookup, std::string_view variable) {
  std::optional<std::string> value = lookup(variable);
  if (value && value->empty()) return std::nullopt;
  return value;
}

Expected<Unbundler> parse_unbundler(std::string_view value) {
  if (value == "builtin") return Unbundler::Builtin;
  if (value == "comgr") return Unbundler::Comgr;
  return bad_value(kUnbundler, value, "not an unbundler", "builtin, comgr");
}

Expected<bool> parse_hotswap(std::string_view value) {
  if (value == "0") return false;
  if (value == "1") return true;
  return bad_value(kHotswap, value, "not a switch", "0, 1");
}

Expected<StreamOptions::HashCheck> parse_hash_check(std::string_view value) {
  if (value == "verify") return StreamOptions::HashCheck::Verify;
  if (value == "skip") return StreamOptions::HashCheck::Skip;
  return bad_value(kHashCheck, value, "not a hash check mode", "verify, skip");
}

Expected<LogLevel> parse_log_level(std::string_view value) {
  for (LogLevel level : {LogLevel::Error, LogLevel::Warn, LogLevel::Info, LogLevel::Debug}) {
    if (value == to_string(level)) return level;
  }
  return bad_value(kLog, value, "not a log level", "error, warn, info, debug");
}

constexpr std::string_view kIsaCompatForms =
    "`all`, or device processors separated by commas without spaces, e.g. gfx1031,gfx1011";

/// Fills `config.extended_isa_compat` (canonical, unique, in the order given)
/// or `extended_isa_compat_all`.
Expected<void> parse_extended_isa_compat(std::string_view value, Config& config) {
  if (value == "all") {
    config.extended_isa_compat_all = true;
    return {};
  }
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t index = 0;; ++index) {
    std::size_t comma = value.find(',', start);
    std::string_view item = value.substr(start, comma == std::string_view::npos ? value.npos : comma - start);
    std::string where = "entry " + std::to_string(index);
    if (item.empty()) return bad_value(kExtendedIsaCompat, value, where + " is empty", kIsaCompatForms);
    if (item == "all") {
      return bad_value(kExtendedIsaCompat, value, "`all` must stand alone", kIsaCompatForms);
    }
    if (item.find(':') != std::string_view::npos) {
      return bad_value(kExtendedIsaCompat, value,
                       where + " (\"" + std::string(item) + "\") is a target ID; name the processor only",
                       kIsaCompatForms);
    }
    const Processor* processor = find_processor(item);
    if (!processor) {
      return bad_value(kExtendedIsaCompat, value, where + " (\"" + std::string(item) + "\") is not a known processor",
                       kIsaCompatForms);
    }
    if (processor->is_generic) {
      return bad_value(kExtendedIsaCompat, value,
                       where + " (\"" + std::string(item) + "\") is a generic target, not a device processor",
                       kIsaCompatForms);
    }
    std::string name(processor->name);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  config.extended_isa_compat = std::move(names);
  return {};
}

constexpr std::string_view kHotswapPairForms =
    "source>device pairs of processors separated by commas without spaces, e.g. gfx1030>gfx1031,gfx1250>gfx942";

/// "gfx1030>gfx1031,..." into canonical, unique "source>device" strings. The
/// pairs follow HotswapAllowlist::add's rules (known, non-generic, not identity).
Expected<std::vector<std::string>> parse_hotswap_pairs(std::string_view value) {
  std::vector<std::string> pairs;
  std::size_t start = 0;
  for (std::size_t index = 0;; ++index) {
    std::size_t comma = value.find(',', start);
    std::string_view item = value.substr(start, comma == std::string_view::npos ? value.npos : comma - start);
    std::string where = "entry " + std::to_string(index) + " (\"" + std::string(item) + "\")";
    std::size_t arrow = item.find('>');
    if (item.empty() || arrow == std::string_view::npos || item.find('>', arrow + 1) != std::string_view::npos) {
      return bad_value(kHotswapPairs, value, where + " is not one source>device pair", kHotswapPairForms);
    }
    HotswapAllowlist check;
    if (auto added = check.add(item.substr(0, arrow), item.substr(arrow + 1)); !added) {
      return bad_value(kHotswapPairs, value, where + ": " + added.error().message(), kHotswapPairForms);
    }
    const HotswapAllowlist::Pair& pair = check.pairs().front();
    std::string canonical = pair.source + ">" + pair.device;
    if (std::find(pairs.begin(), pairs.end(), canonical) == pairs.end()) pairs.push_back(std::move(canonical));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return pairs;
}

/// COLOAD_VERIFY_CACHE: `off`, or an absolute directory. Unset, the user's
/// cache directory as the XDG base directory rules give it (none without one).
Expected<std::string> parse_verify_cache(const Config::Lookup& lookup) {
  constexpr std::string_view kForms = "off, or an absolute directory";
  if (auto value = non_empty(lookup, kVerifyCache)) {
    if (*value == "off") return std::string();
    if (value->front() != '/') return bad_value(kVerifyCache, *value, "not an absolute path", kForms);
    return *value;
  }
  if (auto xdg = non_empty(lookup, "XDG_CACHE_HOME"); xdg && xdg->front() == '/') return *xdg + "/coload/verified";
  if (auto home = non_empty(lookup, "HOME"); home && home->front() == '/') return *home + "/.cache/coload/verified";
  return std::string();
}

/// A ':'-separated list of paths, empty parts dropped (rocm-kpack's split_path_list).
std::vector<std::string> path_list(std::string_view value) {
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t colon = value.find(':', start);
    std::string_view part =
        value.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (!part.empty()) paths.emplace_back(part);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return paths;
}

/// The kpack search as rocm-kpack's loader reads its variables: ROCM_KPACK_DISABLE
/// is on when set to anything but empty or a leading '0'.
KpackSearch parse_kpack_search(const Config::Lookup& lookup) {
  KpackSearch search;
  if (auto value = non_empty(lookup, kKpackPath)) search.paths = path_list(*value);
  if (auto value = non_empty(lookup, kKpackPathPrefix)) search.prefix_paths = path_list(*value);
  if (auto value = non_empty(lookup, kKpackDisable)) search.disabled = value->front() != '0';
  if (auto value = non_empty(lookup, kKpackRoot)) search.root = *value;
  return search;
}

constexpr std::string_view kByteCountForms =
    "a decimal byte count above 0, optionally followed by K, M or G (powers of 1024), e.g. 512M";

}  // namespace

Expected<std::uint64_t> parse_byte_count(std::string_view value, std::string_view what) {
  if (value.empty()) return bad_value(what, value, "no digits", kByteCountForms);
  std::string_view digits = value;
  std::uint64_t unit = 1;
  switch (value.back()) {
    case 'K': unit = std::uint64_t{1} << 10; break;
    case 'M': unit = std::uint64_t{1} << 20; break;
    case 'G': unit = std::uint64_t{1} << 30; break;
    default: break;
  }
  if (unit != 1) digits.remove_suffix(1);
  if (digits.empty()) return bad_value(what, value, "no digits", kByteCountForms);
  std::uint64_t count = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return bad_value(what, value, std::string("'") + c + "' is not a decimal digit or suffix", kByteCountForms);
    }
    auto scaled = detail::checked_mul(count, 10);
    auto next = scaled ? detail::checked_add(*scaled, static_cast<std::uint64_t>(c - '0')) : std::nullopt;
    if (!next) return bad_value(what, value, "overflows 64 bits", kByteCountForms);
    count = *next;
  }
  auto bytes = detail::checked_mul(count, unit);
  if (!bytes) return bad_value(what, value, "overflows 64 bits", kByteCountForms);
  if (*bytes == 0) {
    return bad_value(what, value, "a cap of 0 bytes refuses every compressed bundle", kByteCountForms, 0);
  }
  return *bytes;
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warn";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "unknown";
}

bool Config::extended_isa_compat_for(std::string_view processor) const {
  if (extended_isa_compat_all) return true;
  // Accept a full target ID ("gfx1031:xnack-") or an alias ("fiji").
  processor = processor.substr(0, processor.find(':'));
  if (const Processor* known = find_processor(processor)) processor = known->name;
  return std::find(extended_isa_compat.begin(), extended_isa_compat.end(), processor) != extended_isa_compat.end();
}

void Config::apply(Device& device) const {
  // Opt-in only: a device the caller already opted in stays in.
  if (extended_isa_compat_for(device.target.processor_name())) device.extended_isa_compat = true;
}

ReadOptions Config::read_options() const {
  ReadOptions options;
  options.max_decompressed_bytes = max_decompressed_bytes;
  options.verified_cache = verified_cache;
  options.kpack = kpack;
  return options;
}

StreamOptions Config::stream_options() const { return StreamOptions{.hash = hash_check, .read = read_options()}; }

Expected<Config> Config::from_variables(const Lookup& lookup) {
  Config config;
  if (auto value = non_empty(lookup, kUnbundler)) {
    auto parsed = parse_unbundler(*value);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.unbundler = *parsed;
  }
  if (auto value = non_empty(lookup, kExtendedIsaCompat)) {
    COLOAD_RETURN_IF_ERROR(parse_extended_isa_compat(*value, config));
  }
  if (auto value = non_empty(lookup, kHotswap)) {
    auto parsed = parse_hotswap(*value);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.hotswap = *parsed;
  }
  if (auto value = non_empty(lookup, kHotswapPlugin)) config.hotswap_plugin = *value;
  if (auto value = non_empty(lookup, kHotswapPairs)) {
    auto parsed = parse_hotswap_pairs(*value);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.hotswap_pairs = std::move(*parsed);
  }
  if (auto value = non_empty(lookup, kLog)) {
    auto parsed = parse_log_level(*value);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.log_level = *parsed;
  }
  if (auto value = non_empty(lookup, kMaxDecompressedBytes)) {
    auto parsed = parse_byte_count(*value, kMaxDecompressedBytes);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.max_decompressed_bytes = *parsed;
  }
  if (auto value = non_empty(lookup, kHashCheck)) {
    auto parsed = parse_hash_check(*value);
    COLOAD_RETURN_IF_ERROR(parsed);
    config.hash_check = *parsed;
  }
  auto verify_cache = parse_verify_cache(lookup);
  COLOAD_RETURN_IF_ERROR(verify_cache);
  config.verified_cache = std::move(*verify_cache);
  config.kpack = parse_kpack_search(lookup);
  return config;
}

std::optional<std::string> Config::environment_variable(std::string_view name) {
  // secure_getenv: in a setuid or setgid process (AT_SECURE) every variable
  // reads as unset, so an unprivileged user cannot name a plugin that a
  // privileged program would load (docs/environment.md). The library's and
  // the preload's only getenv.
  const char* value = ::secure_getenv(std::string(name).c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

Expected<Config> Config::from_environment() { return from_variables(environment_variable); }

Expected<Config> Config::from_settings(const Lookup& settings, bool with_environment) {
  return from_variables([&](std::string_view name) -> std::optional<std::string> {
    if (auto value = settings(name)) return value;
    return with_environment ? environment_variable(name) : std::nullopt;
  });
}

const Expected<Config>& process_config() {
  static const Expected<Config> config = Config::from_environment();  // initialised once, thread-safe
  return config;
}

}  // namespace coload
