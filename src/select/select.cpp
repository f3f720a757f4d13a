// The selector: the tiers and ranking of docs/selection.md, hotswap sources
// never before native or generic ones ("Hotswap last" there says why).
#include <algorithm>
#include <array>
#include <tuple>

#include "coload/select.h"
#include "common/bytes.h"
#include "common/try.h"
#include "select/rank.h"
#include "select/target_rules.h"
#include "target/entry_id_view.h"

namespace coload {
namespace {
constexpr std::uint16_t kElfTypeShared = 3;  // ET_DYN
}  // namespace

// What the entry ID alone says: a rejection, or (`target` set) the target
// of an entry whose ELF header decides. Depends on the ID's text, the device
// and the options only, which is what lets a Selector keep it per ID.
detail::IdVerdict detail::judge_id(const Device& device, std::string_view text, const SelectOptions& options) {
  detail::IdVerdict verdict;
  auto id = detail::parse_entry_id(text);
  if (!id) {
    verdict.reason = id.error().message();
    return verdict;
  }
  if (id->is_spirv) {
    verdict.needs_jit = true;
    verdict.reason = "SPIR-V (amdgcnspirv): needs a JIT compiler to run on " + device.str();
    return verdict;
  }
  if (id->kind == OffloadKind::OpenMP) {
    verdict.reason = "OpenMP offload entry; HIP runtimes load hip, hipv4 and hcc entries";
    return verdict;
  }
  if (id->kind == OffloadKind::Other) {
    verdict.reason = "offload kind '" + std::string(id->kind_text) + "' is not hip, hipv4 or hcc";
    return verdict;
  }
  if (!id->is_amdhsa()) {
    verdict.reason = "triple " + std::string(id->arch) + "-" + std::string(id->vendor) + "-" + std::string(id->os) +
                     "-" + std::string(id->environment) + " is not amdgcn-amd-amdhsa";
    return verdict;
  }
  // Code for an unrelated processor is rejected on its entry ID alone:
  // selection then reads the ELF headers of the few related entries, not of
  // every entry (most of a fat binary's page faults). Whatever its ELF says,
  // such an entry is rejected. Related ones are read even when their tier is
  // closed, for the nearest-miss report.
  const Processor* mine = device.target.processor;
  const Processor* named = id->target->processor;
  if (mine && named && !detail::related_processor(*named, *mine, options)) {
    verdict.reason = std::move(detail::rule_out_processor(*named, device, options)->reason);
    verdict.by_processor = true;
    return verdict;
  }
  verdict.target = id->target;
  return verdict;
}

namespace {

// Makes `candidate` a fresh, rejected judgement of entry `index`, keeping
// its strings' storage (a reused Selection allocates nothing for them).
void reset(Candidate& candidate, std::size_t index, std::string_view id) {
  candidate.entry_index = index;
  candidate.id.assign(id);
  candidate.tier.reset();
  candidate.verdict = Verdict::Rejected;
  candidate.reason.clear();
  candidate.code_object.reset();
  candidate.needs_jit = false;
  candidate.runtime_limit = false;
}

// What an entry is, before it is compared with the device: its code object's
// target in `candidate`, or the reason it can never be loaded. `id_note`
// receives where its entry ID and ELF header disagree.
// The header comes from `bundle` when given (Bundle::head copies it out of a
// large mapped file instead of touching the mapping), else from entry.bytes.
// `known` is what a Selector already kept for this ID; `learned`, when
// given, receives what the ID said here.
void judge_entry(Candidate& candidate, std::string& id_note, const Device& device, const BundleEntry& entry,
                 std::size_t index, const SelectOptions& options, const Bundle* bundle, const detail::IdVerdict* known,
                 std::optional<detail::IdVerdict>* learned) {
  reset(candidate, index, entry.id);
  if (entry.is_host) {
    candidate.reason = "host entry";
    return;
  }
  detail::IdVerdict fresh;
  if (!known) {
    fresh = detail::judge_id(device, entry.id, options);
    known = &fresh;
    if (learned) *learned = fresh;
  }
  if (entry.bytes.empty() && (known->target || known->by_processor)) {
    candidate.reason = "empty entry";
    return;
  }
  if (!known->target) {
    detail::judge_by_id(candidate, index, entry.id, *known);
    return;
  }
  const TargetId& named = *known->target;
  std::vector<std::byte> scratch;
  auto head = bundle ? bundle->head(index, detail::kElfHeaderBytes, scratch) : Expected<detail::Bytes>(entry.bytes);
  if (!head) {
    candidate.reason = "cannot read its ELF header: " + head.error().message();
    return;
  }
  auto code_object = read_code_object_target(*head);
  if (!code_object) {
    candidate.reason = "not a loadable AMDGPU code object: " + code_object.error().message();
    return;
  }
  // What no loader takes is not chosen over an entry it does (docs/selection.md).
  if (code_object->e_type != kElfTypeShared) {
    candidate.reason = "not a loadable AMDGPU code object: e_type " + std::to_string(code_object->e_type) +
                       " at offset 0x10 is not ET_DYN (3); the loader takes only linked code objects";
    return;
  }
  const TargetId& elf = code_object->target;
  if (elf.processor != named.processor) {
    candidate.reason = "entry ID names " + std::string(named.processor_name()) + " but its ELF header says " +
                       elf.str() + "; neither is trusted";
    return;
  }
  // A hand-built bundle may state features its ELF does not have; the loader
  // judges the ELF, so the ELF is what is matched.
  if (elf.xnack != named.xnack || elf.sramecc != named.sramecc) {
    id_note = "; entry ID says " + named.str() + ", ELF header says " + elf.str() + ", judged by the ELF header";
  }
  candidate.code_object = *code_object;
}

// Places a loadable code object in a tier, or says why it does not fit.
void place(const Device& device, const SelectOptions& options, Candidate& candidate, const std::string& id_note) {
  if (!candidate.code_object) return;
  detail::TargetJudgement judgement = detail::judge_target(*candidate.code_object, device, options);
  candidate.reason = std::move(judgement.reason) + id_note;
  candidate.runtime_limit = judgement.runtime_limit;
  if (!judgement.tier) return;
  candidate.tier = judgement.tier;
  candidate.verdict = Verdict::Compatible;
}

}  // namespace

void detail::judge_by_id(Candidate& candidate, std::size_t index, std::string_view id, const IdVerdict& verdict) {
  reset(candidate, index, id);
  candidate.reason = verdict.reason;
  candidate.needs_jit = verdict.needs_jit;
}

// Lower sorts first: tier, then exact features, then generic version, then file order.
detail::Rank detail::rank(const Candidate& candidate) {
  const CodeObjectTarget& code = *candidate.code_object;
  return {static_cast<int>(*candidate.tier), -detail::exact_features(code.target),
          -static_cast<int>(code.generic_version), candidate.entry_index};
}

void detail::judge_candidate(Candidate& candidate, const Device& device, const BundleEntry& entry, std::size_t index,
                             const SelectOptions& options, const Bundle* bundle, const IdVerdict* known,
                             std::optional<IdVerdict>* learned) {
  std::string id_note;
  judge_entry(candidate, id_note, device, entry, index, options, bundle, known, learned);
  if (device.target.processor) place(device, options, candidate, id_note);
}

void detail::finish_selection(Selection& selection) {
  // The best by rank (ranks differ: they end with the entry index); no list
  // of the fitting ones, which is an allocation per bundle of an image.
  Candidate* best = nullptr;
  for (Candidate& candidate : selection.candidates) {
    if (candidate.tier && (!best || detail::rank(candidate) < detail::rank(*best))) best = &candidate;
  }
  if (!best) return;
  best->verdict = Verdict::Selected;
  selection.selected = best->entry_index;
  for (Candidate& other : selection.candidates) {
    if (!other.tier || &other == best) continue;
    if (*other.tier == Tier::Hotswap && *best->tier != Tier::Hotswap) {
      other.reason += "; not used: a " + std::string(to_string(*best->tier)) + " entry fits";
    } else {
      other.reason += "; ranked below entry " + std::to_string(best->entry_index);
    }
  }
}

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

Expected<void> HotswapAllowlist::add(std::string_view source, std::string_view device) {
  const Processor* from = find_processor(source);
  const Processor* to = find_processor(device);
  // The field at fault is the pair's side: "source" or "device".
  for (auto [side, name, processor] : {std::tuple{"source", source, from}, std::tuple{"device", device, to}}) {
    if (!processor) {
      return Error(ErrorKind::NotFound, "hotswap pair: unknown processor '" + std::string(name) + "'")
          .at_field(side, std::nullopt);
    }
    if (processor->is_generic) {
      return Error(ErrorKind::InvalidArgument,
                   "hotswap pair: " + std::string(processor->name) + " is a generic target, not a processor")
          .at_field(side, std::nullopt);
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

void detail::select_entries(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options,
                            const Bundle* bundle, IdVerdicts* verdicts, Selection& selection) {
  if (verdicts) {
    selection.device.assign(verdicts->device());
  } else {
    selection.device = device.str();
  }
  selection.selected.reset();
  selection.candidates.resize(entries.size());  // the ones kept keep their strings' storage
  // A bundle lists a dozen entries or so: their verdicts fit on the stack.
  std::array<const IdVerdict*, 32> few{};
  std::vector<const IdVerdict*> many;
  std::span<const IdVerdict*> known(few.data(), verdicts ? entries.size() : 0);
  if (known.size() > few.size()) known = many = std::vector<const IdVerdict*>(entries.size());
  if (verdicts) verdicts->find(entries, known);
  std::vector<std::pair<std::string_view, IdVerdict>> learned;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const IdVerdict* kept = verdicts ? known[i] : nullptr;
    std::optional<IdVerdict> decided;
    detail::judge_candidate(selection.candidates[i], device, entries[i], i, options, bundle, kept,
                            verdicts && !kept ? &decided : nullptr);
    if (decided) learned.emplace_back(entries[i].id, std::move(*decided));
  }
  if (!learned.empty()) verdicts->add(learned);
  detail::finish_selection(selection);
}

void detail::IdVerdicts::find(std::span<const BundleEntry> entries, std::span<const IdVerdict*> found) const {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::string_view id = entries[i].id;
    if (i < previous_.size() && previous_[i].first == id) {
      found[i] = previous_[i].second;
      continue;
    }
    auto it = verdicts_.find(id);
    found[i] = it == verdicts_.end() ? nullptr : &it->second;
    if (i >= kMaxPositions || id.size() > kMaxIdBytes) continue;
    if (i >= previous_.size()) previous_.resize(i + 1);
    previous_[i].first.assign(id);
    previous_[i].second = found[i];
  }
}

void detail::IdVerdicts::add(std::span<std::pair<std::string_view, IdVerdict>> learned) {
  std::lock_guard lock(mutex_);
  previous_.clear();  // it may say "none kept" for an ID added now
  for (auto& [id, verdict] : learned) {
    if (verdicts_.size() >= kMaxIds) return;
    if (id.size() <= kMaxIdBytes) verdicts_.try_emplace(std::string(id), std::move(verdict));
  }
}

Selector::Selector(Device device, SelectOptions options)
    : device_(std::move(device)),
      options_(std::move(options)),
      verdicts_(std::make_unique<detail::IdVerdicts>(device_.str())) {}
Selector::~Selector() = default;
Selector::Selector(Selector&&) noexcept = default;
Selector& Selector::operator=(Selector&&) noexcept = default;

Expected<Selection> Selector::select(const Bundle& bundle) const {
  Selection selection;
  COLOAD_RETURN_IF_ERROR(select(bundle, selection));
  return selection;
}

Expected<void> Selector::select(const Bundle& bundle, Selection& into) const {
  if (options_.unbundler != Unbundler::Builtin) {
    auto selection = select_in_bundle(device_, bundle, options_);
    COLOAD_RETURN_IF_ERROR(selection);
    into = std::move(*selection);
    return {};
  }
  detail::select_entries(device_, bundle.entries(), options_, &bundle, verdicts_.get(), into);
  return {};
}

Selection select_entry(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options) {
  Selection selection;
  detail::select_entries(device, entries, options, nullptr, nullptr, selection);
  return selection;
}

Error no_fit_error(const Device& device, const Selection& selection) {
  // The first 32 IDs: a table may list 4 096, and tools keep or print this per bundle.
  constexpr std::size_t kListed = 32;
  std::string present;
  std::size_t listed = 0, unlisted = 0;
  for (const Candidate& candidate : selection.candidates) {
    if (candidate.id.starts_with("host-")) continue;
    if (listed == kListed) {
      ++unlisted;
      continue;
    }
    present += (present.empty() ? "" : ", ") + candidate.id;
    ++listed;
  }
  if (unlisted > 0) present += ", and " + std::to_string(unlisted) + " more";
  // The nearest miss: same processor first, then the device's generic family,
  // then an equivalent ISA, then a hotswap source, then SPIR-V.
  const Processor* mine = device.target.processor;
  auto closeness = [&](const Candidate& candidate) -> int {
    if (candidate.needs_jit) return 4;
    if (!candidate.code_object || !mine) return 99;
    const Processor* theirs = candidate.code_object->target.processor;
    if (theirs == mine) return 0;
    if (theirs->is_generic && theirs->name == mine->generic_family) return 1;
    if (detail::runs_equivalently(theirs->name, mine->name)) return 2;
    if (candidate.reason.find("hotswap") != std::string::npos) return 3;
    return 99;
  };
  const Candidate* nearest = nullptr;
  for (const Candidate& candidate : selection.candidates) {
    if (closeness(candidate) < 99 && (!nearest || closeness(candidate) < closeness(*nearest))) nearest = &candidate;
  }
  std::string message = "no code object fits device " + selection.device +
                        "; entries present: " + (present.empty() ? std::string("none") : present);
  if (nearest) {
    std::string what = nearest->code_object ? nearest->code_object->target.str() : nearest->id;
    message += "; nearest miss: " + what + " present; " + nearest->reason;
  }
  // Code there is for this GPU, but the runtime's release cannot load it.
  if (nearest && nearest->runtime_limit && !device.runtime_release.empty()) {
    return Error(ErrorKind::UnsupportedVersion, std::move(message));
  }
  return Error(ErrorKind::NotFound, std::move(message));
}

}  // namespace coload
