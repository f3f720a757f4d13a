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
#include "coload/select.h"
#include "coload/stream_select.h"
#include "options.h"

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

/// A device's choice in one bundle and the chosen entry's bytes.
struct BundleChoice {
  Selection selection;
  std::optional<Bundle> bundle;     ///< plain bundles: read in place, the entries view the file
  std::vector<std::byte> streamed;  ///< compressed bundles: only the chosen entry is kept
  /// The chosen entry's bytes; empty when nothing was chosen.
  std::span<const std::byte> chosen_bytes() const;
};

/// Selects with `selector` in bundle `index` of `binary`. A CCOB is streamed
/// (select_in_compressed_bundle, `stream`'s hash check) and never kept whole,
/// unless the comgr unbundler is asked for (which refuses it). Selection and
/// stream errors get "PATH: bundle INDEX" in front; read errors name the file already.
/// `spent`, when given, is a selection no longer needed, whose storage a
/// plain bundle's selection reuses (Selector::select into it).
Expected<BundleChoice> choose_in_bundle(const FatBinary& binary, std::size_t index, const Selector& selector,
                                        const StreamOptions& stream, std::string_view path,
                                        Selection* spent = nullptr);

/// What a command keeps of a file's compressed bundles until it prints or
/// writes (their tables, the entries it chose), held to max_decompressed_bytes
/// together, as a registry load is: each CCOB is held to that limit alone, so
/// a small file of many CCOBs would otherwise keep many limits' worth.
class KeptBudget {
 public:
  explicit KeptBudget(std::uint64_t limit) : limit_(limit) {}
  /// False, with the error printed, when `size` more bytes would pass the
  /// limit; `what` names them ("its chosen entry").
  bool charge(std::uint64_t size, std::string_view path, std::size_t bundle, std::string_view what);

 private:
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
};

/// The bytes a selection's report holds (candidates, their IDs and reasons).
std::uint64_t selection_bytes(const Selection& selection);

/// The error for an exception out of reading bundle `index` (caught, as on a
/// helper thread it would end the process): LimitExceeded for bad_alloc,
/// InvalidArgument otherwise, with "PATH: bundle INDEX" in front.
Error bundle_read_failure(std::string_view path, std::size_t index, const std::exception& exception);
/// `error` prefixed with "<path>: bundle <index>: ", or with "<path>: " alone
/// when the reader already named the bundle ("bundle 0 at offset 0x0: ...").
Error in_bundle(Error error, std::string_view path, std::size_t index);

/// The select options of `config`, with COLOAD_HOTSWAP_PLUGIN's pairs on the
/// allowlist when hotswap is on (what `select`, `check` and `extract --device`
/// all choose with). A plugin that cannot be used is printed; nullopt then.
std::optional<SelectOptions> cli_select_options(const Config& config);

/// Threads worth reading bundles `indices` of `binary` on: one per CCOB, up
/// to the hardware's concurrency (at most 8), as the registry's decode
/// threads; 1 when fewer than two are compressed (the core count is then
/// not read) or the comgr unbundler reads them.
std::size_t decode_threads(const FatBinary& binary, std::span<const std::size_t> indices, Unbundler unbundler);

/// choose_in_bundle for each bundle of `indices` with one Selector for
/// `device` and `select`, on decode_threads threads,
/// handed to `take` on this thread in that order (in_bundle_order, bundle_order.h);
/// `take` may move the choice out, and returns false to stop. On one thread,
/// a selection `take` leaves in place is reused for the next bundle.
void choose_in_bundles(const FatBinary& binary, std::span<const std::size_t> indices, const Device& device,
                       const SelectOptions& select, const StreamOptions& stream, std::string_view path,
                       const std::function<bool(std::size_t index, Expected<BundleChoice>& choice)>& take);

/// Writes `bytes` to `path`; on failure prints why and returns false.
bool write_file(const std::string& path, std::span<const std::byte> bytes);

}  // namespace coload::cli
