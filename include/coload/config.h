// coload/config.h: the options coload reads from the environment.
//
// Covers: the one place that reads COLOAD_* variables, once, into an immutable
// Config that the rest of the library takes as a value (the core never calls
// getenv), or builds one from a caller's settings. Every variable and value
// is in docs/environment.md. Does not cover: what each option does in the
// module that takes it (docs/selection.md, docs/reading-rules.md).
//
// Ownership: a Config is a value. Threads: process_config() reads the
// environment on its first call (thread-safe) and returns that Config ever after.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coload/bundle.h"
#include "coload/device.h"
#include "coload/error.h"

namespace coload {

enum class LogLevel : std::uint8_t { Error, Warn, Info, Debug };
std::string_view to_string(LogLevel level);

struct Config {
  /// COLOAD_UNBUNDLER=builtin|comgr
  Unbundler unbundler = Unbundler::Builtin;
  /// COLOAD_EXTENDED_ISA_COMPAT: comma-separated device processors, or `all`.
  std::vector<std::string> extended_isa_compat;  ///< canonical names
  bool extended_isa_compat_all = false;
  /// COLOAD_HOTSWAP=0|1
  bool hotswap = false;
  /// COLOAD_HOTSWAP_PLUGIN: path of a hotswap plugin (coload/hotswap_plugin.h); empty for none.
  std::string hotswap_plugin;
  /// COLOAD_HOTSWAP_PAIRS: "source>device" pairs (canonical processor names)
  /// the hotswap tier is narrowed to; empty for every validated pair.
  std::vector<std::string> hotswap_pairs;
  /// COLOAD_LOG=error|warn|info|debug
  LogLevel log_level = LogLevel::Warn;
  /// COLOAD_MAX_DECOMPRESSED_BYTES: a byte count, with an optional K/M/G suffix (powers of 1024).
  std::uint64_t max_decompressed_bytes = ReadOptions{}.max_decompressed_bytes;
  /// COLOAD_HASH_CHECK=verify|skip: whether a compressed bundle's stream is
  /// decoded to its end to check the stored MD5 prefix (StreamOptions::HashCheck).
  StreamOptions::HashCheck hash_check = StreamOptions::HashCheck::Verify;
  /// COLOAD_VERIFY_CACHE=off|DIRECTORY: where Verify mode keeps its marks of
  /// checked CCOBs (ReadOptions::verified_cache); empty for none. Unset,
  /// from_variables uses $XDG_CACHE_HOME/coload/verified, else
  /// $HOME/.cache/coload/verified; a default-constructed Config has none.
  std::string verified_cache;
  /// ROCM_KPACK_PATH, ROCM_KPACK_PATH_PREFIX, ROCM_KPACK_DISABLE (read as
  /// rocm-kpack reads them) and COLOAD_KPACK_ROOT: where a HIPK host image's
  /// archives are found (ReadOptions::kpack).
  KpackSearch kpack;

  /// Whether a device of `processor` opts into same-ISA equivalence.
  bool extended_isa_compat_for(std::string_view processor) const;
  /// Turns the device's extended_isa_compat on when this config lists its
  /// processor (or says `all`); never turns it off.
  void apply(Device& device) const;
  ReadOptions read_options() const;
  /// hash_check and read_options(), for streaming a CCOB (choose_in_binary).
  StreamOptions stream_options() const;

  /// Looks a variable up; nullopt when unset.
  using Lookup = std::function<std::optional<std::string>(std::string_view name)>;
  /// Builds a config from `lookup`. Unset or empty variables keep their
  /// defaults; any other unknown value is an InvalidArgument error naming the
  /// variable, the value and the accepted values.
  static Expected<Config> from_variables(const Lookup& lookup);
  /// from_variables over the process environment.
  static Expected<Config> from_environment();
  /// The process environment as from_environment reads it: secure_getenv,
  /// so in a setuid or setgid process (AT_SECURE) every variable is unset.
  static std::optional<std::string> environment_variable(std::string_view name);
  /// from_variables over `settings` (a caller's, spelled as the variables'
  /// values), then, for the variables it leaves unset, the process
  /// environment when `with_environment`.
  static Expected<Config> from_settings(const Lookup& settings, bool with_environment);
};

/// A byte count above 0 as COLOAD_MAX_DECOMPRESSED_BYTES takes it: decimal
/// digits with an optional K, M or G suffix (powers of 1024). Errors:
/// InvalidArgument naming `what` (the variable or option) and the value.
Expected<std::uint64_t> parse_byte_count(std::string_view value, std::string_view what);

/// The process environment read once (on first call; thread-safe) and kept.
const Expected<Config>& process_config();

}  // namespace coload
