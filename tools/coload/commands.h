// What the coload CLI's commands share: exit codes, choosing, operands
// and errors (output files: output_file.h). The commands themselves: command_context.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/bundle.h"
#include "coload/config.h"
#include "coload/detail/stream_select.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/select.h"
#include "options.h"

namespace coload::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;  ///< a file could not be read, or nothing matched
inline constexpr int kExitUsage = 2;       ///< the command line itself is wrong

/// The select options of `config`, with COLOAD_HOTSWAP_PLUGIN's pairs on the
/// allowlist when hotswap is on (what `select`, `check` and `extract --device`
/// all choose with). A plugin that cannot be used is printed; nullopt then.
std::optional<SelectOptions> cli_select_options(const Config& config);

/// The budget a command's CCOBs share (coload/pipeline.h).
KeptBytes command_budget(std::uint64_t limit);

/// The files of a command's operands: one path that is no directory, as
/// given (`set` false); otherwise a file set (docs/loading.md, "File sets")
/// of every file and each directory's files (those --pattern and
/// --recursive take, in sorted order), named the directory when it is the
/// only operand.
struct BinaryPaths {
  std::vector<std::string> files;
  std::string name;  ///< empty: FatBinary::open_files names the set
  bool set = false;
};
Expected<BinaryPaths> binary_paths(std::span<const std::string> operands, const Arguments& parsed);
/// The binary a command's operands name (binary_paths): FatBinary::open of
/// the one file, or FatBinary::open_files of the set.
Expected<FatBinary> open_operands(std::span<const std::string> operands, const Arguments& parsed,
                                  const ReadOptions& options);
/// Why bundle `index` of `binary` has nothing for `device`: a file set's
/// report names the bundle and its files (FatBinary::at_bundle), a one-file
/// binary's only the selection.
std::string no_fit_message(const FatBinary& binary, std::size_t index, const Device& device,
                           const Selection& selection);

/// Prints "coload: <error's message>" to stderr.
void print_error(const Error& error);

}  // namespace coload::cli
