// select_in_bundle: coload's own selector, or comgr's amd_comgr_lookup_code_object
// (the HIP_USE_RUNTIME_UNBUNDLER-style toggle). The comgr path asks comgr the
// way CLR does (the device's ISA name, then its generic) and reports comgr's
// choice beside coload's own judgement of every entry. Whatever comgr cannot
// serve is an UnsupportedMethod error, never a silent miss; docs/comgr.md has
// the measurements of Debian's comgr 5.2.3 behind each rule.
#include "select/comgr_select.h"

#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/try.h"
#include "select/comgr_lookup.h"
#include "select/rank.h"
#include "target/isa_name.h"

namespace coload {
namespace detail {
namespace {

constexpr std::string_view kUseBuiltin = "; use COLOAD_UNBUNDLER=builtin";
constexpr std::string_view kChosen = "chosen by comgr amd_comgr_lookup_code_object";

std::string name_of(const Comgr& comgr) { return "comgr " + comgr.version() + " (" + comgr.path() + ")"; }

std::string name_of(const BundleEntry& entry, std::size_t index) {
  return "entry " + std::to_string(index) + " (" + std::string(entry.id) + ")";
}

// comgr matches a query against an entry through its own processor table. For
// a processor missing from that table it compares the two target IDs as whole
// strings (measured on 5.2.3): right when neither side can carry features,
// wrong as soon as the query does (an Any entry never matches, and neither
// does another feature order).
bool comgr_can_match(const Comgr& comgr, std::string_view isa_name) {
  return comgr.knows_processor(isa_processor(isa_name)) || isa_name.find(':') == std::string_view::npos;
}

std::string why_unmatched(const Comgr& comgr, std::string_view isa_name) {
  std::string known = "it lists no ISA";
  if (!comgr.isa_names().empty()) {
    known = "its " + std::to_string(comgr.isa_names().size()) + " ISAs run from " +
            std::string(isa_processor(comgr.isa_names().front())) + " to " +
            std::string(isa_processor(comgr.isa_names().back()));
  }
  return name_of(comgr) + " does not know " + std::string(isa_processor(isa_name)) + " (" + known +
         ") and compares the target IDs of processors it does not know as plain strings, so " + std::string(isa_name) +
         " would miss every entry that leaves a feature unspecified";
}

// The entry comgr's offset and size point at. comgr reports offsets relative
// to the bundle start, as the entry table stores them.
std::optional<std::size_t> entry_at(std::span<const BundleEntry> entries, const ComgrHit& hit) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].is_host && entries[i].offset == hit.offset && entries[i].size == hit.size) return i;
  }
  return std::nullopt;
}

// The first entry built for `processor`, by its entry ID (what comgr reads) or
// its ELF header (what coload reads).
std::optional<std::size_t> entry_built_for(std::span<const BundleEntry> entries, std::string_view processor) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].is_host) continue;
    auto id = EntryId::parse(entries[i].id);
    if (id && id->target && id->target->processor_name() == processor) return i;
    auto elf = read_code_object_target(entries[i].bytes);
    if (elf && elf->target.processor_name() == processor) return i;
  }
  return std::nullopt;
}

// comgr hands back entries by their IDs alone and never reads their ELF. The
// loader behind it must read the code object, and comgr 5.2.3 reads neither
// v5/v6 objects nor processors missing from its table: so the entry has to be
// one this comgr reads itself (amd_comgr_get_data_isa_name).
Expected<void> check_comgr_reads(const Comgr& comgr, const BundleEntry& entry, std::size_t index,
                                 std::string_view role) {
  std::string what = std::string(role) + " " + name_of(entry, index);
  auto target = read_code_object_target(entry.bytes);
  if (!target) return std::move(target).error().with_context(what);
  auto isa = comgr.code_object_isa_name(entry.bytes);
  if (isa) return {};
  std::string why = ": " + isa.error().message();
  if (target->code_object_version >= 5) {
    return Error(ErrorKind::UnsupportedMethod,
                 what + ", a code object v" + std::to_string(target->code_object_version) + ", which " +
                     name_of(comgr) + " cannot read" + why + "; comgr 5.2.3 reads code object v4 and older" +
                     std::string(kUseBuiltin))
        .at_field("code_object_version", std::nullopt, target->code_object_version, 4);
  }
  std::string_view processor = target->target.processor_name();
  if (!comgr.knows_processor(processor)) {
    return Error(ErrorKind::UnsupportedMethod, what + ", built for " + std::string(processor) + ", which " +
                                                   name_of(comgr) + " does not know and cannot read" + why +
                                                   std::string(kUseBuiltin))
        .at_field("processor", std::nullopt);
  }
  return std::move(isa).error().with_context(what);
}

// Every entry as coload's own rules judge it, then comgr's choice on top.
Selection report(const Device& device, std::span<const BundleEntry> entries, const SelectOptions& options,
                 std::optional<std::size_t> chosen, Tier tier, std::string_view query) {
  Selection selection = select_entry(device, entries, options);
  selection.selected.reset();
  for (std::size_t i = 0; i < selection.candidates.size(); ++i) {
    Candidate& candidate = selection.candidates[i];
    if (chosen && i == *chosen) {
      std::string objection =
          candidate.verdict == Verdict::Rejected ? "; coload's own rules reject it: " + candidate.reason : "";
      candidate.verdict = Verdict::Selected;
      candidate.tier = tier;
      candidate.reason = std::string(kChosen) + " for " + std::string(query) + objection;
      selection.selected = i;
      continue;
    }
    if (entries[i].is_host) continue;
    if (candidate.verdict == Verdict::Selected) {
      candidate.verdict = Verdict::Compatible;
      candidate.reason = "not chosen by comgr; the builtin unbundler would select it: " + candidate.reason;
    } else {
      candidate.reason = "not chosen by comgr; " + candidate.reason;
    }
  }
  return selection;
}

Expected<Selection> comgr_path(const Device& device, const Bundle& bundle, const SelectOptions& options,
                               std::string_view library) {
  const BundleInfo& info = bundle.info();
  if (info.format == BundleFormat::Compressed) {
    return Error(ErrorKind::UnsupportedMethod,
                 "compressed (CCOB) bundle: comgr 5.2.3's amd_comgr_lookup_code_object cannot read compressed "
                 "bundles (it answers INVALID_ARGUMENT)" +
                     std::string(kUseBuiltin));
  }
  if (info.format == BundleFormat::FileGroup) {
    return Error(ErrorKind::UnsupportedMethod,
                 "a file set's group of code objects: comgr's lookup reads one buffer, and its entries lie in "
                 "several files" +
                     std::string(kUseBuiltin));
  }
  if (info.format == BundleFormat::Kpack) {
    return Error(ErrorKind::UnsupportedMethod,
                 "a kpack archive's binary key: comgr has no kpack reader (CLR reads archives through rocm-kpack)" +
                     std::string(kUseBuiltin));
  }
  if (!device.target.processor) return Error(ErrorKind::InvalidArgument, "device has no processor");
  auto loaded = Comgr::load(library);
  COLOAD_RETURN_IF_ERROR(loaded);
  const Comgr& comgr = **loaded;
  std::span<const BundleEntry> entries = bundle.entries();

  ComgrInput input = ComgrInput::Bundle;
  if (info.format == BundleFormat::CodeObject) {
    // A bare code object goes to comgr as an executable, whose header comgr reads.
    input = ComgrInput::CodeObject;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      COLOAD_RETURN_IF_ERROR(check_comgr_reads(comgr, entries[i], i, "bare code object"));
    }
  }

  // CLR's queries: the device's ISA name, then its generic; native first.
  std::vector<std::string> queries{std::string(kIsaNamePrefix) + device.target.str()};
  if (std::string generic = generic_isa_name(device); !generic.empty()) queries.push_back(std::move(generic));
  auto hits = comgr.lookup(bundle.uncompressed(), input, queries);
  COLOAD_RETURN_IF_ERROR(hits);

  std::optional<std::size_t> chosen;
  std::size_t answered = 0;
  for (; answered < queries.size(); ++answered) {
    const std::string& query = queries[answered];
    if (const std::optional<ComgrHit>& hit = (*hits)[answered]) {
      chosen = entry_at(entries, *hit);
      if (!chosen) {
        return Error(ErrorKind::Malformed, name_of(comgr) + " answered offset " + hex(hit->offset) + " size " +
                                               hex(hit->size) + " for " + query + ", which is no entry of the bundle")
            .at_field("amd_comgr_lookup_code_object", hit->offset, hit->size);
      }
      break;
    }
    // A miss is only an answer when comgr can match this name; otherwise it
    // may hide an entry built for that processor.
    if (comgr_can_match(comgr, query)) continue;
    if (auto index = entry_built_for(entries, isa_processor(query))) {
      return Error(ErrorKind::UnsupportedMethod, "comgr found nothing for " + query + ", but " +
                                                     name_of(entries[*index], *index) + " is built for " +
                                                     std::string(isa_processor(query)) + ": " +
                                                     why_unmatched(comgr, query) + std::string(kUseBuiltin));
    }
  }

  if (chosen) {
    COLOAD_RETURN_IF_ERROR(check_comgr_reads(comgr, entries[*chosen], *chosen, "comgr chose"));
  }
  return report(device, entries, options, chosen, answered == 0 ? Tier::Native : Tier::Generic,
                chosen ? std::string_view(queries[answered]) : std::string_view());
}

}  // namespace

std::string generic_isa_name(const Device& device) {
  const Processor* processor = device.target.processor;
  if (!processor || processor->generic_family.empty()) return {};
  const Processor* generic = find_processor(processor->generic_family);
  if (!generic) return {};
  // Only the features the generic has (docs/selection.md): a gfx906
  // device asks for gfx9-generic:xnack-, never gfx9-generic:sramecc+:xnack-,
  // which comgr's target-ID parser rejects.
  TargetId target{
      .processor = generic,
      .sramecc = generic->sramecc ? device.target.sramecc : FeatureState::Unsupported,
      .xnack = generic->xnack == XnackSupport::OnOff ? device.target.xnack : FeatureState::Unsupported,
  };
  return std::string(kIsaNamePrefix) + target.str();
}

Expected<Selection> select_with_comgr(const Device& device, const Bundle& bundle, const SelectOptions& options,
                                      std::string_view library) {
  auto selection = comgr_path(device, bundle, options, library);
  if (!selection) {
    const BundleInfo& info = bundle.info();
    return std::move(selection).error().with_context("unbundler comgr").in_bundle(info.index, info.offset);
  }
  return selection;
}

}  // namespace detail

Expected<Selection> select_in_bundle(const Device& device, const Bundle& bundle, const SelectOptions& options) {
  if (options.unbundler == Unbundler::Comgr) {
    return detail::select_with_comgr(device, bundle, options, detail::kComgrLibrary);
  }
  Selection selection;
  detail::select_entries(device, bundle.entries(), options, &bundle, nullptr, selection);
  return selection;
}

}  // namespace coload
