#include "select/target_rules.h"

#include <algorithm>
#include <initializer_list>

namespace coload::detail {
namespace {

// The same-ISA groups of the Debian/Solus patches (docs/selection.md):
// code built for `code` runs on these devices. gfx904 is in no group; gfx906
// only receives; gfx1011-1013 code is not accepted on gfx1010.
struct Equivalence {
  std::initializer_list<std::string_view> code;
  std::initializer_list<std::string_view> devices;
};
const Equivalence kEquivalences[] = {
    {{"gfx900", "gfx902", "gfx909", "gfx90c"}, {"gfx900", "gfx902", "gfx906", "gfx909", "gfx90c"}},
    {{"gfx1010"}, {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
    {{"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"},
     {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
};

bool contains(std::initializer_list<std::string_view> list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string feature_summary(const TargetId& code) {
  if (exact_features(code) > 0) return "features match exactly (" + code.str() + ")";
  if (code.xnack == FeatureState::Any || code.sramecc == FeatureState::Any) return "runs in any feature mode";
  return "no feature modes";
}

}  // namespace

int exact_features(const TargetId& code) {
  int count = 0;
  for (FeatureState state : {code.sramecc, code.xnack})
    count += state == FeatureState::On || state == FeatureState::Off;
  return count;
}

bool runs_equivalently(std::string_view code, std::string_view device) {
  for (const Equivalence& group : kEquivalences) {
    if (contains(group.code, code) && contains(group.devices, device)) return true;
  }
  return false;
}

bool runs_equivalently(const Processor& code, const Processor& device) {
  // The groups by processor: the selector asks for every entry of every
  // bundle, and comparing names was a tenth of selecting in a host image.
  struct Group {
    std::vector<const Processor*> code, devices;
  };
  static const std::vector<Group> groups = [] {
    std::vector<Group> built;
    for (const Equivalence& group : kEquivalences) {
      Group& by_processor = built.emplace_back();
      for (std::string_view name : group.code) by_processor.code.push_back(find_processor(name));
      for (std::string_view name : group.devices) by_processor.devices.push_back(find_processor(name));
    }
    return built;
  }();
  auto has = [](const std::vector<const Processor*>& list, const Processor& processor) {
    return std::find(list.begin(), list.end(), &processor) != list.end();
  };
  return std::any_of(groups.begin(), groups.end(),
                     [&](const Group& group) { return has(group.code, code) && has(group.devices, device); });
}

std::vector<HotswapAllowlist::Pair> equivalent_pairs() {
  std::vector<HotswapAllowlist::Pair> pairs;
  for (const Equivalence& group : kEquivalences) {
    for (std::string_view code : group.code) {
      for (std::string_view device : group.devices) {
        if (code != device) pairs.push_back({std::string(code), std::string(device)});
      }
    }
  }
  return pairs;
}

bool related_processor(const Processor& code, const Processor& device, const SelectOptions& options) {
  if (&code == &device) return true;
  if (code.is_generic) return code.name == device.generic_family;
  return runs_equivalently(code, device) || options.hotswap_allowlist.contains(code.name, device.name);
}

std::optional<TargetJudgement> rule_out_processor(const Processor& code, const Device& device,
                                                  const SelectOptions& options) {
  const Processor* mine = device.target.processor;
  auto reject = [&](std::string reason) {
    return TargetJudgement{.tier = std::nullopt,
                           .kind = ErrorKind::InvalidArgument,
                           .field = "target",
                           .value = code.mach,
                           .limit = mine ? mine->mach : 0,
                           .reason = std::move(reason)};
  };
  if (!mine) return reject("no known processor");
  if (&code == mine) return std::nullopt;
  if (code.is_generic) {
    if (code.name == mine->generic_family) return std::nullopt;
    return reject("generic target " + std::string(code.name) + " does not cover " + std::string(mine->name) +
                  (mine->generic_family.empty() ? " (it has no generic family)"
                                                : " (its family is " + std::string(mine->generic_family) + ")"));
  }
  bool hotswap_pair = options.hotswap_allowlist.contains(code.name, mine->name);
  if (runs_equivalently(code, *mine)) {
    // Without the opt-in, an allowlisted pair may still reach the hotswap tier.
    if (device.extended_isa_compat || (hotswap_pair && options.hotswap)) return std::nullopt;
    return reject("runs on " + std::string(mine->name) +
                  " only with extended ISA compatibility, which is off for this device");
  }
  if (hotswap_pair) {
    if (options.hotswap) return std::nullopt;
    return reject("allowlisted hotswap source, but hotswap is off");
  }
  // The common rejection (every other GPU's entry), built in one allocation.
  std::string reason;
  reason.reserve(32 + code.name.size() + mine->name.size());
  reason.append("built for ").append(code.name).append("; device is ").append(mine->name);
  return reject(std::move(reason));
}

TargetJudgement judge_target(const CodeObjectTarget& code, const Device& device, const SelectOptions& options) {
  TargetJudgement judgement;
  const Processor* mine = device.target.processor;
  const Processor* theirs = code.target.processor;
  auto reject = [&](ErrorKind kind, std::string field, std::uint64_t value, std::uint64_t limit, std::string reason) {
    judgement.kind = kind;
    judgement.field = std::move(field);
    judgement.value = value;
    judgement.limit = limit;
    judgement.reason = std::move(reason);
    return std::move(judgement);  // each caller returns it at once
  };
  auto target_mismatch = [&](std::string reason) {
    return reject(ErrorKind::InvalidArgument, "target", theirs ? theirs->mach : 0, mine ? mine->mach : 0,
                  std::move(reason));
  };
  auto fit = [&](Tier tier, std::string reason) {
    judgement.tier = tier;
    judgement.reason = std::move(reason);
    return std::move(judgement);
  };
  if (!mine || !theirs) return target_mismatch("no known processor");
  // The processors first: a version says nothing about code that cannot run here.
  if (auto ruled_out = rule_out_processor(*theirs, device, options)) return std::move(*ruled_out);

  if (!device.accepts_code_object_version(code.code_object_version)) {
    judgement.runtime_limit = true;
    unsigned highest = device.code_object_versions.empty() ? 0 : device.code_object_versions.back();
    return reject(ErrorKind::UnsupportedVersion, "code_object_version", code.code_object_version, highest,
                  "code object version " + std::to_string(code.code_object_version) + "; coload offers versions " +
                      device.code_object_versions_text() + " to " + device.runtime_name());
  }
  // ROCr names an xnack-on object of an always-on processor "gfx1250:xnack+"
  // and refuses it unless it names the device so too (docs/selection.md,
  // "Always-on xnack").
  if (mine->xnack == XnackSupport::AlwaysOn && code.target.xnack == FeatureState::On &&
      device.target.xnack != FeatureState::On) {
    judgement.runtime_limit = true;
    return reject(ErrorKind::UnsupportedVersion, "target", theirs->mach, mine->mach,
                  "e_flags say xnack on, so " + device.runtime_name() + " names this object " + code.target.str() +
                      ", an ISA it does not list for " + device.str() + ", and refuses it (ROCm/rocm-systems#11737)");
  }
  // Past that, always-on xnack written out means what the bare name means.
  TargetId compared = code.target;
  if (theirs->xnack == XnackSupport::AlwaysOn && compared.xnack == FeatureState::On) {
    compared.xnack = FeatureState::Unsupported;
  }
  std::string mismatch = feature_mismatch(compared, device.target);
  if (theirs == mine) {
    if (!mismatch.empty()) return target_mismatch(mismatch);
    return fit(Tier::Native, "native: " + feature_summary(code.target));
  }
  if (theirs->is_generic) {  // of the device's family (rule_out_processor)
    if (!device.loads_generic) {
      judgement.runtime_limit = true;
      return reject(ErrorKind::UnsupportedVersion, "target", theirs->mach, 0,
                    "generic target " + std::string(theirs->name) + ": " + device.runtime_name() +
                        " does not load generic code objects");
    }
    if (code.code_object_version < 6) {
      return reject(ErrorKind::UnsupportedVersion, "code_object_version", code.code_object_version, 6,
                    "a generic code object needs v6, this one is v" + std::to_string(code.code_object_version));
    }
    if (code.generic_version < mine->min_generic_version) {
      return reject(ErrorKind::UnsupportedVersion, "generic_version", code.generic_version, mine->min_generic_version,
                    "generic version " + std::to_string(code.generic_version) + " is below " +
                        std::to_string(mine->min_generic_version) + ", the first to support " +
                        std::string(mine->name));
    }
    if (!mismatch.empty()) return target_mismatch(mismatch);
    return fit(Tier::Generic, "generic " + std::string(theirs->name) + " v" + std::to_string(code.generic_version) +
                                  ": " + feature_summary(code.target));
  }
  // Rule 1.2 holds in every tier: a hotswap source built for xnack- does not become xnack+ code.
  if (!mismatch.empty()) return target_mismatch(mismatch);
  if (device.extended_isa_compat && runs_equivalently(*theirs, *mine)) {
    return fit(Tier::Equivalent, "same ISA as " + std::string(mine->name) +
                                     " (extended ISA compatibility): " + feature_summary(code.target));
  }
  // An allowlisted pair with hotswap on: the only processor pair left.
  return fit(Tier::Hotswap, "hotswap source " + std::string(theirs->name) + " -> " + std::string(mine->name));
}

}  // namespace coload::detail
