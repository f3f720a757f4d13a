// The selector: tiers and ranking of shared/reference/isa-matching.md section
// 4.4, with the hotswap lesson of seeds/000 (never before native or generic).
#include <algorithm>
#include <tuple>

#include "coload/select.h"

namespace coload {
namespace {

// The same-ISA groups of the Debian/Solus patches (isa-matching.md section 5):
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

bool runs_equivalently(std::string_view code, std::string_view device) {
  for (const Equivalence& group : kEquivalences) {
    if (contains(group.code, code) && contains(group.devices, device)) return true;
  }
  return false;
}

std::string list_versions(const std::vector<unsigned>& versions) {
  std::string text;
  for (unsigned version : versions) text += (text.empty() ? "versions " : ", ") + std::to_string(version);
  return text;
}

// Features the code pins to the device's mode (On/Off); Any pins nothing.
int exact_features(const TargetId& code) {
  int count = 0;
  for (FeatureState state : {code.sramecc, code.xnack}) count += state == FeatureState::On || state == FeatureState::Off;
  return count;
}

std::string feature_summary(const TargetId& code) {
  int exact = exact_features(code);
  if (exact > 0) return "features match exactly (" + code.str() + ")";
  if (code.xnack == FeatureState::Any || code.sramecc == FeatureState::Any) return "runs in any feature mode";
  return "no feature modes";
}

// What an entry is, before it is compared with the device: its code object's
// target, or the reason it can never be loaded.
struct Judged {
  Candidate candidate;
  std::string id_note;  ///< entry ID and ELF header disagree
};

Judged judge_entry(const Device& device, const BundleEntry& entry, std::size_t index) {
  Judged judged;
  Candidate& candidate = judged.candidate;
  candidate.entry_index = index;
  candidate.id = std::string(entry.id);
  if (entry.is_host) {
    candidate.reason = "host entry";
    return judged;
  }
  auto id = EntryId::parse(entry.id);
  if (!id) {
    candidate.reason = id.error().message();
    return judged;
  }
  if (id->is_spirv) {
    candidate.needs_jit = true;
    candidate.reason = "SPIR-V (amdgcnspirv): needs a JIT compiler to run on " + device.str();
    return judged;
  }
  if (id->kind == OffloadKind::OpenMP) {
    candidate.reason = "OpenMP offload entry; HIP runtimes load hip, hipv4 and hcc entries";
    return judged;
  }
  if (id->kind == OffloadKind::Other) {
    candidate.reason = "offload kind '" + id->kind_text + "' is not hip, hipv4 or hcc";
    return judged;
  }
  if (!id->is_amdhsa()) {
    candidate.reason = "triple " + id->arch + "-" + id->vendor + "-" + id->os + "-" + id->environment +
                       " is not amdgcn-amd-amdhsa";
    return judged;
  }
  if (entry.bytes.empty()) {
    candidate.reason = "empty entry";
    return judged;
  }
  auto code_object = read_code_object_target(entry.bytes);
  if (!code_object) {
    candidate.reason = "not a loadable AMDGPU code object: " + code_object.error().message();
    return judged;
  }
  candidate.code_object = *code_object;
  const TargetId& elf = code_object->target;
  if (elf.processor != id->target->processor) {
    candidate.reason = "entry ID names " + std::string(id->target->processor_name()) + " but its ELF header says " +
                       elf.str() + "; neither is trusted";
    candidate.code_object.reset();
    return judged;
  }
  // A hand-built bundle may state features its ELF does not have; the loader
  // judges the ELF, so the ELF is what is matched.
  if (elf.xnack != id->target->xnack || elf.sramecc != id->target->sramecc) {
    judged.id_note = "; entry ID says " + id->target->str() + ", ELF header says " + elf.str() +
                     ", judged by the ELF header";
  }
  return judged;
}

// Places a loadable code object in a tier, or says why it does not fit.
void place(const Device& device, const SelectOptions& options, Judged& judged) {
  Candidate& candidate = judged.candidate;
  if (!candidate.code_object) return;
  const CodeObjectTarget& code = *candidate.code_object;
  const Processor& mine = *device.target.processor;
  const Processor& theirs = *code.target.processor;
  auto reject = [&](std::string reason) { candidate.reason = std::move(reason) + judged.id_note; };
  auto fit = [&](Tier tier, std::string reason) {
    candidate.tier = tier;
    candidate.verdict = Verdict::Compatible;
    candidate.reason = std::move(reason) + judged.id_note;
  };

  if (!device.accepts_code_object_version(code.code_object_version)) {
    return reject("code object version " + std::to_string(code.code_object_version) + "; the runtime loads " +
                  list_versions(device.code_object_versions));
  }
  std::string mismatch = feature_mismatch(code.target, device.target);
  if (&theirs == &mine) {
    if (!mismatch.empty()) return reject(mismatch);
    return fit(Tier::Native, "native: " + feature_summary(code.target));
  }
  if (theirs.is_generic) {
    if (theirs.name != mine.generic_family) {
      return reject("generic target " + std::string(theirs.name) + " does not cover " +
                    std::string(mine.name) +
                    (mine.generic_family.empty() ? " (it has no generic family)"
                                                 : " (its family is " + std::string(mine.generic_family) + ")"));
    }
    if (code.code_object_version < 6) {
      return reject("a generic code object needs v6, this one is v" +
                    std::to_string(code.code_object_version));
    }
    if (code.generic_version < mine.min_generic_version) {
      return reject("generic version " + std::to_string(code.generic_version) + " is below " +
                    std::to_string(mine.min_generic_version) + ", the first to support " + std::string(mine.name));
    }
    if (!mismatch.empty()) return reject(mismatch);
    return fit(Tier::Generic, "generic " + std::string(theirs.name) + " v" + std::to_string(code.generic_version) +
                                  ": " + feature_summary(code.target));
  }
  if (runs_equivalently(theirs.name, mine.name)) {
    if (!device.extended_isa_compat) {
      return reject("runs on " + std::string(mine.name) +
                    " only with extended ISA compatibility, which is off for this device");
    }
    if (!mismatch.empty()) return reject(mismatch);
    return fit(Tier::Equivalent, "same ISA as " + std::string(mine.name) + " (extended ISA compatibility): " +
                                     feature_summary(code.target));
  }
  if (options.hotswap_allowlist.contains(theirs.name, mine.name)) {
    if (!options.hotswap) return reject("allowlisted hotswap source, but hotswap is off");
    return fit(Tier::Hotswap, "hotswap source " + std::string(theirs.name) + " -> " + std::string(mine.name));
  }
  return reject("built for " + std::string(theirs.name) + "; device is " + std::string(mine.name));
}

// Lower sorts first: tier, then exact features, then generic version, then file order.
auto rank(const Candidate& candidate) {
  const CodeObjectTarget& code = *candidate.code_object;
  return std::make_tuple(static_cast<int>(*candidate.tier), -exact_features(code.target),
                         -static_cast<int>(code.generic_version), candidate.entry_index);
}

}  // namespace

std::string_view to_string(Tier tier) {
  switch (tier) {
    case Tier::Native: return "native";
    case Tier::Equivalent: return "equivalent";
    case Tier::Generic: return "generic";
    case Tier::Hotswap: return "hotswap";
  }
  return "?";
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Selected: return "selected";
    case Verdict::Compatible: return "compatible";
    case Verdict::Rejected: return "rejected";
  }
  return "?";
}

std::string_view to_string(Unbundler unbundler) {
  return unbundler == Unbundler::Comgr ? "comgr" : "builtin";
}

Expected<void> HotswapAllowlist::add(std::string_view source, std::string_view device) {
  const Processor* from = find_processor(source);
  const Processor* to = find_processor(device);
  for (auto [name, processor] : {std::pair{source, from}, std::pair{device, to}}) {
    if (!processor) return Error(ErrorKind::NotFound, "hotswap pair: unknown processor '" + std::string(name) + "'");
    if (processor->is_generic) {
      return Error(ErrorKind::InvalidArgument,
                   "hotswap pair: " + std::string(processor->name) + " is a generic target, not a processor");
    }
  }
  if (from == to) {
    return Error(ErrorKind::InvalidArgument, "hotswap pair " + std::string(from->name) + " -> " +
                                                 std::string(to->name) +
                                                 ": an identity pair is native code, which tier 1 already takes");
  }
  Pair pair{std::string(from->name), std::string(to->name)};
  if (std::find(pairs_.begin(), pairs_.end(), pair) == pairs_.end()) pairs_.push_back(std::move(pair));
  return {};
}

bool HotswapAllowlist::contains(std::string_view source, std::string_view device) const {
  return std::any_of(pairs_.begin(), pairs_.end(),
                     [&](const Pair& pair) { return pair.source == source && pair.device == device; });
}

Selection select_entry(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options) {
  Selection selection;
  selection.device = device.str();
  selection.candidates.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Judged judged = judge_entry(device, entries[i], i);
    if (device.target.processor) place(device, options, judged);
    selection.candidates.push_back(std::move(judged.candidate));
  }

  std::vector<Candidate*> fitting;
  for (Candidate& candidate : selection.candidates) {
    if (candidate.tier) fitting.push_back(&candidate);
  }
  std::sort(fitting.begin(), fitting.end(), [](const Candidate* a, const Candidate* b) { return rank(*a) < rank(*b); });
  if (fitting.empty()) return selection;

  Candidate& best = *fitting.front();
  best.verdict = Verdict::Selected;
  selection.selected = best.entry_index;
  for (Candidate* other : std::span(fitting).subspan(1)) {
    if (*other->tier == Tier::Hotswap && *best.tier != Tier::Hotswap) {
      other->reason += "; not used: a " + std::string(to_string(*best.tier)) + " entry fits";
    } else {
      other->reason += "; ranked below entry " + std::to_string(best.entry_index);
    }
  }
  return selection;
}

Error no_fit_error(const Device& device, const Selection& selection) {
  std::string present;
  for (const Candidate& candidate : selection.candidates) {
    if (candidate.id.starts_with("host-")) continue;
    present += (present.empty() ? "" : ", ") + candidate.id;
  }
  // The nearest miss: same processor first, then the device's generic family,
  // then an equivalent ISA, then a hotswap source, then SPIR-V.
  const Processor* mine = device.target.processor;
  auto closeness = [&](const Candidate& candidate) -> int {
    if (candidate.needs_jit) return 4;
    if (!candidate.code_object || !mine) return 99;
    const Processor* theirs = candidate.code_object->target.processor;
    if (theirs == mine) return 0;
    if (theirs->is_generic && theirs->name == mine->generic_family) return 1;
    if (runs_equivalently(theirs->name, mine->name)) return 2;
    if (candidate.reason.find("hotswap") != std::string::npos) return 3;
    return 99;
  };
  const Candidate* nearest = nullptr;
  for (const Candidate& candidate : selection.candidates) {
    if (closeness(candidate) < 99 && (!nearest || closeness(candidate) < closeness(*nearest))) nearest = &candidate;
  }
  std::string message = "no code object fits device " + selection.device + "; entries present: " +
                        (present.empty() ? std::string("none") : present);
  if (nearest) {
    std::string what = nearest->code_object ? nearest->code_object->target.str() : nearest->id;
    message += "; nearest miss: " + what + " present; " + nearest->reason;
  }
  return Error(ErrorKind::NotFound, std::move(message));
}

}  // namespace coload
