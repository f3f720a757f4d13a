// Internal: the selector's per-entry judgement and its ranking, shared by
// select_entry (all entries at hand) and select_in_compressed_bundle (entries
// judged one by one as a stream delivers them), so both apply the same rules.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coload/select.h"

namespace coload::detail {

/// What selection reads of an entry: its ELF header, all that
/// read_code_object_target looks at.
inline constexpr std::size_t kElfHeaderBytes = 64;

/// What an entry ID says, for one device and options: a rejection (reason),
/// or the target of an entry whose ELF header decides.
struct IdVerdict {
  std::string reason;
  bool needs_jit = false;
  /// Decided by the processor the ID names, which comes after the empty
  /// entry check: an empty entry with this ID is rejected as empty.
  bool by_processor = false;
  /// Set: the ID names a processor related to the device (and this is no
  /// rejection); the ELF header is read and must agree with it.
  std::optional<TargetId> target;
};

/// What entry ID `id` says for `device` and `options`.
IdVerdict judge_id(const Device& device, std::string_view id, const SelectOptions& options);

/// Judges entry `index` (ID `id`) by a `verdict` without a target, which
/// rejects it on its ID: the candidate judge_candidate makes of any entry
/// with that ID that is not empty, whatever its bytes.
void judge_by_id(Candidate& candidate, std::size_t index, std::string_view id, const IdVerdict& verdict);

/// A Selector's verdicts by entry ID, shared by the threads selecting with
/// it. Bounded: IDs past kMaxIds, or longer than kMaxIdBytes, are judged
/// every time instead.
class IdVerdicts {
 public:
  static constexpr std::size_t kMaxIds = 1024;
  static constexpr std::size_t kMaxIdBytes = 256;
  /// Table positions whose last ID is remembered for the next lookup.
  static constexpr std::size_t kMaxPositions = 64;

  explicit IdVerdicts(std::string device) : device_(std::move(device)) {}
  /// The device's target ID (Selection::device), built once.
  const std::string& device() const { return device_; }

  /// found[i]: the verdict for entries[i]'s ID, null when none is kept.
  /// Verdicts are never changed or dropped, so the pointers stay valid.
  void find(std::span<const BundleEntry> entries, std::span<const IdVerdict*> found) const;
  void add(std::span<std::pair<std::string_view, IdVerdict>> learned);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  std::string device_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, IdVerdict, Hash, std::equal_to<>> verdicts_;
  // The last table's IDs by position, with what find() gave for each: a fat
  // binary's tables list the same IDs in the same order, so a lookup is
  // mostly one comparison instead of a hash. Emptied by add().
  mutable std::vector<std::pair<std::string, const IdVerdict*>> previous_;
};

/// Judges one entry alone into `candidate` (whatever it held is replaced; its
/// strings' storage is reused): tier, verdict (Compatible or Rejected) and
/// reason. Only the entry's ID, whether its bytes are empty and their first
/// 64 bytes (the ELF header) are read; through bundle->head(index) when
/// `bundle` (the entry's own) is given. `known` is a verdict kept for the
/// entry's ID; `learned`, when given, receives what the ID said.
void judge_candidate(Candidate& candidate, const Device& device, const BundleEntry& entry, std::size_t index,
                     const SelectOptions& options, const Bundle* bundle = nullptr, const IdVerdict* known = nullptr,
                     std::optional<IdVerdict>* learned = nullptr);

/// select_entry into `selection` (replaced, its storage reused), reading the
/// entries' ELF headers through `bundle` (their own, see Bundle::head) when
/// it is given, and reusing and adding to `verdicts` when given.
void select_entries(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options,
                    const Bundle* bundle, IdVerdicts* verdicts, Selection& selection);

/// Orders fitting candidates (tier set): lower is better. Tier, then more
/// features matched exactly, then a higher generic version, then entry order.
using Rank = std::tuple<int, int, int, std::size_t>;
Rank rank(const Candidate& candidate);

/// Picks the best fitting candidate of `selection` (every entry judged, in
/// entry order) and writes the verdicts and reasons that compare the others
/// with it.
void finish_selection(Selection& selection);

}  // namespace coload::detail
