// Internal: the selector's per-entry judgement and its ranking, shared by
// select_entry (all entries at hand) and select_in_compressed_bundle (entries
// judged one by one as a stream delivers them), so both apply the same rules.
#pragma once

#include <cstddef>
#include <tuple>

#include "coload/select.h"

namespace coload::detail {

/// What selection reads of an entry: its ELF header, all that
/// read_code_object_target looks at.
inline constexpr std::size_t kElfHeaderBytes = 64;

/// Judges one entry alone: its candidate with tier, verdict (Compatible or
/// Rejected) and reason. Only the entry's ID, whether its bytes are empty and
/// their first 64 bytes (the ELF header) are read; through bundle->head(index)
/// when `bundle` (the entry's own) is given.
Candidate judge_candidate(const Device& device, const BundleEntry& entry, std::size_t index,
                          const SelectOptions& options, const Bundle* bundle = nullptr);

/// select_entry, reading the entries' ELF headers through `bundle` (their
/// own, see Bundle::head) when it is given.
Selection select_entries(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options,
                         const Bundle* bundle);

/// Orders fitting candidates (tier set): lower is better. Tier, then more
/// features matched exactly, then a higher generic version, then entry order.
using Rank = std::tuple<int, int, int, std::size_t>;
Rank rank(const Candidate& candidate);

/// Picks the best fitting candidate of `selection` (every entry judged, in
/// entry order) and writes the verdicts and reasons that compare the others
/// with it.
void finish_selection(Selection& selection);

}  // namespace coload::detail
