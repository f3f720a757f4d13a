// The coload CLI's subcommands. Each takes the arguments after its name and
// returns the process exit code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace coload::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;  ///< a file could not be read, or nothing matched
inline constexpr int kExitUsage = 2;       ///< the command line itself is wrong

int run_ls(std::span<const std::string> args);
int run_extract(std::span<const std::string> args);
int run_select(std::span<const std::string> args);
int run_check(std::span<const std::string> args);

/// Parses a decimal or 0x-prefixed unsigned number; nullopt if it is not one.
std::optional<std::uint64_t> parse_number(const std::string& text);

/// Prints "coload: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message);

/// Writes `bytes` to `path`; on failure prints why and returns false.
bool write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace coload::cli
