// coload/select.h: choosing, for one device, the entry of a bundle to load.
//
// Covers: ranking every entry of one bundle in tiers (native, opt-in
// equivalent ISA, generic, hotswap; the order is docs/selection.md's,
// "Tiers"), the report of why each entry was taken or refused, and the
// error for a device nothing fits. Does not cover: reading bundles
// (coload/bundle.h), streaming a CCOB (coload/detail/stream_select.h) or checking
// the chosen code object (coload/validate.h).
//
// Ownership: a Selection owns its report. Threads: threads may share one
// Selector; the free functions share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/bundle.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/target.h"

namespace coload {

enum class Tier : std::uint8_t { Native, Equivalent, Generic, Hotswap };
std::string_view to_string(Tier tier);

enum class Verdict : std::uint8_t {
  Selected,    ///< the chosen entry
  Compatible,  ///< fits the device, ranked lower
  Rejected,    ///< does not fit; `reason` says why
};
std::string_view to_string(Verdict verdict);

/// (source processor → device processor) pairs whose hotswap transpilation
/// is validated. Identity pairs are refused: tier 1 already covers them.
class HotswapAllowlist {
 public:
  struct Pair {
    std::string source;  ///< canonical processor names
    std::string device;
    friend bool operator==(const Pair&, const Pair&) = default;
  };
  /// Errors: NotFound for an unknown processor, InvalidArgument for an
  /// identity pair or a generic target.
  Expected<void> add(std::string_view source, std::string_view device);
  bool contains(std::string_view source, std::string_view device) const;
  std::span<const Pair> pairs() const { return pairs_; }
  bool empty() const { return pairs_.empty(); }

 private:
  std::vector<Pair> pairs_;
};

struct SelectOptions {
  Unbundler unbundler = Unbundler::Builtin;
  /// Hotswap tier on/off; with it off, allowlisted sources are only reported.
  bool hotswap = false;
  HotswapAllowlist hotswap_allowlist;
};

/// One entry as the selector judged it.
struct Candidate {
  std::size_t entry_index = 0;  ///< position in the bundle's entry table
  std::string id;               ///< entry ID as stored
  std::optional<Tier> tier;     ///< set when the entry fits
  Verdict verdict = Verdict::Rejected;
  std::string reason;
  /// From the entry's ELF header, when it is an AMDGPU code object. Not
  /// read (empty) when the entry ID names a processor unrelated to the
  /// device: such an entry is rejected on its ID alone.
  std::optional<CodeObjectTarget> code_object;
  bool needs_jit = false;  ///< SPIR-V: fits only through a JIT compiler
  /// Rejected only because the device's runtime release does not load it
  /// (its code object version, or generic code before that runtime knows it).
  bool runtime_limit = false;
};

/// The outcome for one device and one bundle: every entry, in entry order.
struct Selection {
  std::string device;  ///< the device's target ID
  std::vector<Candidate> candidates;
  std::optional<std::size_t> selected;  ///< index into candidates

  const Candidate* chosen() const { return selected ? &candidates[*selected] : nullptr; }
};

/// One entry as selection reads it: its table fields and its first bytes
/// (up to 64, the ELF header). Kept for every entry of a streamed bundle so
/// that selecting for another device needs no second decompression.
struct EntryHead {
  std::string id;  ///< entry ID, trailing NUL bytes removed
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  bool is_host = false;
  std::vector<std::byte> head;  ///< the first min(size, 64) bytes
};

/// Judges every entry. Never fails: problems with an entry (bad ID, not an
/// AMDGPU ELF, an ELF header contradicting its ID) are reasons in the report.
Selection select_entry(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options = {});

/// Selects in a bundle with the unbundler `options` names. Builtin never
/// fails. Comgr loads libamd_comgr.so.2 at run time and asks it for the
/// device's ISA name and its generic; errors: Io when comgr cannot be loaded,
/// UnsupportedMethod for what comgr 5.2.3 cannot read (compressed bundles,
/// code object v5+ entries), and comgr's own failures with the function name.
Expected<Selection> select_in_bundle(const Device& device, const Bundle& bundle, const SelectOptions& options = {});

namespace detail {
class IdVerdicts;
}

/// select_in_bundle for one device across many bundles: typically those of
/// one fat binary, which repeat the same entry IDs (one per offload target).
/// What an ID says (a rejection: an unreadable ID, an OpenMP or SPIR-V
/// entry, code for a processor unrelated to the device; or the target a
/// related entry's ELF header must agree with) is worked out once per
/// distinct ID and reused; every bundle's ELF headers are still read. Each
/// result is select_in_bundle's. Threads may share one Selector.
class Selector {
 public:
  explicit Selector(Device device, SelectOptions options = {});
  ~Selector();
  Selector(Selector&&) noexcept;
  Selector& operator=(Selector&&) noexcept;

  /// select_in_bundle(device(), bundle, options()); same errors.
  Expected<Selection> select(const Bundle& bundle) const;
  /// The same, written over `into`, whose storage (candidates and their
  /// strings) is reused: a caller judging bundle after bundle allocates
  /// almost nothing for the report. On an error `into` is left unspecified.
  Expected<void> select(const Bundle& bundle, Selection& into) const;
  const Device& device() const { return device_; }
  const SelectOptions& options() const { return options_; }

 private:
  Device device_;
  SelectOptions options_;
  std::unique_ptr<detail::IdVerdicts> verdicts_;
};

/// The NotFound error for a selection without a choice: the device's target
/// ID, the entries present (the first 32, then how many more) and the nearest
/// miss, e.g. "gfx90a:xnack+ present; device runs with xnack-".
Error no_fit_error(const Device& device, const Selection& selection);

}  // namespace coload
