// Internal: whether a code object's target runs on a device, and in which
// tier: the rules the selector ranks by and the validator checks by
// (docs/selection.md: the feature rule, tiers, generic families, same-ISA groups).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coload/device.h"
#include "coload/select.h"
#include "coload/target.h"

namespace coload::detail {

/// A tier, or why there is none: the field at fault with its value and limit.
struct TargetJudgement {
  std::optional<Tier> tier;
  ErrorKind kind = ErrorKind::InvalidArgument;
  std::string field;  ///< "code_object_version", "generic_version" or "target"
  std::uint64_t value = 0;
  std::uint64_t limit = 0;
  std::string reason;          ///< what fits or what does not, without the code object's name
  bool runtime_limit = false;  ///< refused by the runtime's release alone (Candidate::runtime_limit)
};

TargetJudgement judge_target(const CodeObjectTarget& code, const Device& device, const SelectOptions& options);

/// Whether code built for `code` is anything to `device`: the same
/// processor, its generic family, its ISA group or an allowlisted hotswap
/// source (whether or not that tier is open). Unrelated code never fits.
bool related_processor(const Processor& code, const Processor& device, const SelectOptions& options);

/// The rejection when code built for processor `code` fits `device` in no
/// tier whatever its features and versions; nothing when some tier could
/// hold it. judge_target asks this first; the selector asks it before it
/// reads an entry's ELF header.
std::optional<TargetJudgement> rule_out_processor(const Processor& code, const Device& device,
                                                  const SelectOptions& options);

/// Features the code pins to one mode (On/Off): more is a closer match.
int exact_features(const TargetId& code);

/// The Debian/Solus same-ISA groups: code built for `code` runs on `device`.
bool runs_equivalently(std::string_view code, std::string_view device);
bool runs_equivalently(const Processor& code, const Processor& device);

/// Every (code, device) pair of those groups, identity pairs left out, in
/// table order: what the built-in same-ISA retarget pass is validated for.
std::vector<HotswapAllowlist::Pair> equivalent_pairs();

}  // namespace coload::detail
