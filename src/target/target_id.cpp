// Target IDs, bundle entry IDs and the xnack/sramecc rule
// (docs/format.md, "Bundle entry IDs and target IDs"; docs/selection.md).
#include <array>

#include "coload/target.h"
#include "common/try.h"
#include "target/entry_id_view.h"

namespace coload {
namespace {

enum class Feature { Sramecc, Xnack };

std::string_view feature_name(Feature feature) { return feature == Feature::Sramecc ? "sramecc" : "xnack"; }

bool selectable(const Processor& processor, Feature feature) {
  return feature == Feature::Sramecc ? processor.sramecc : processor.xnack == XnackSupport::OnOff;
}

FeatureState& state_of(TargetId& id, Feature feature) { return feature == Feature::Sramecc ? id.sramecc : id.xnack; }
FeatureState state_of(const TargetId& id, Feature feature) {
  return feature == Feature::Sramecc ? id.sramecc : id.xnack;
}

constexpr std::array kFeatures = {Feature::Sramecc, Feature::Xnack};  // canonical order

/// 'text': how target ID messages quote what they were given.
std::string single_quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// Cuts the text before the first `separator` off `rest` (all of it when there
// is none) and says whether there was one. Views only, one search: IDs are
// parsed for every entry of every bundle an image holds.
struct Token {
  std::string_view text;
  bool cut = false;
};
Token take_token(std::string_view& rest, char separator) {
  std::size_t at = rest.find(separator);
  Token token{rest.substr(0, at), at != std::string_view::npos};
  rest.remove_prefix(token.cut ? at + 1 : rest.size());
  return token;
}

bool is_amdhsa_triple(std::string_view arch, std::string_view vendor, std::string_view os, std::string_view env) {
  return arch == "amdgcn" && vendor == "amd" && os == "amdhsa" && (env.empty() || env == "unknown");
}

}  // namespace

std::string_view to_string(FeatureState state) {
  switch (state) {
    case FeatureState::Unsupported: return "unsupported";
    case FeatureState::Any: return "any";
    case FeatureState::Off: return "off";
    case FeatureState::On: return "on";
  }
  return "?";
}

std::string_view to_string(OffloadKind kind) {
  switch (kind) {
    case OffloadKind::Host: return "host";
    case OffloadKind::Hip: return "hip";
    case OffloadKind::HipV4: return "hipv4";
    case OffloadKind::Hcc: return "hcc";
    case OffloadKind::OpenMP: return "openmp";
    case OffloadKind::Other: return "other";
  }
  return "?";
}

Expected<TargetId> TargetId::parse(std::string_view text) {
  std::string_view rest = text;
  auto [name, more] = take_token(rest, ':');
  if (name.empty()) {
    return Error(ErrorKind::Malformed, "target ID " + single_quoted(text) + " names no processor")
        .at_field("processor", 0);
  }
  const Processor* processor = find_processor(name);
  if (!processor) {
    return Error(ErrorKind::NotFound, "target ID " + single_quoted(text) + ": unknown processor " + single_quoted(name))
        .at_field("processor", 0);
  }
  TargetId id{.processor = processor,
              .sramecc = processor->sramecc ? FeatureState::Any : FeatureState::Unsupported,
              .xnack = processor->xnack == XnackSupport::OnOff ? FeatureState::Any : FeatureState::Unsupported};
  std::array<bool, kFeatures.size()> seen{};
  while (more) {
    Token piece = take_token(rest, ':');
    more = piece.cut;
    std::string_view token = piece.text;
    auto bad = [&](std::string why) {
      // The field's offset is the token's position in the ID.
      return Error(ErrorKind::Malformed,
                   "target ID " + single_quoted(text) + ": feature " + single_quoted(token) + " " + why)
          .at_field("feature", static_cast<std::uint64_t>(token.data() - text.data()));
    };
    if (token.size() < 2 || (token.back() != '+' && token.back() != '-')) {
      return bad("is not `sramecc+`, `sramecc-`, `xnack+` or `xnack-`");
    }
    std::string_view feature_text = token.substr(0, token.size() - 1);
    const Feature* feature = nullptr;
    for (const Feature& candidate : kFeatures) {
      if (feature_name(candidate) == feature_text) feature = &candidate;
    }
    if (!feature) return bad("is not `sramecc+`, `sramecc-`, `xnack+` or `xnack-`");
    std::size_t slot = static_cast<std::size_t>(*feature);
    if (seen[slot]) return bad("repeats " + std::string(feature_text));
    seen[slot] = true;
    if (*feature == Feature::Xnack && processor->xnack == XnackSupport::AlwaysOn) {
      return bad("is not allowed: xnack is always on for " + std::string(processor->name) +
                 " and is not part of its target ID");
    }
    if (!selectable(*processor, *feature)) {
      return bad("is not allowed: " + std::string(processor->name) + " has no " + std::string(feature_text) + " mode");
    }
    state_of(id, *feature) = token.back() == '+' ? FeatureState::On : FeatureState::Off;
  }
  return id;
}

std::string TargetId::str() const {
  std::string text(processor_name());
  for (Feature feature : kFeatures) {
    FeatureState state = state_of(*this, feature);
    if (state != FeatureState::On && state != FeatureState::Off) continue;
    text += ':';
    text += feature_name(feature);
    text += state == FeatureState::On ? '+' : '-';
  }
  return text;
}

bool TargetId::is_concrete() const {
  if (!processor) return false;
  for (Feature feature : kFeatures) {
    if (selectable(*processor, feature) && state_of(*this, feature) != FeatureState::On &&
        state_of(*this, feature) != FeatureState::Off) {
      return false;
    }
  }
  return true;
}

namespace {

bool always_on(const TargetId& device, Feature feature) {
  return feature == Feature::Xnack && device.processor && device.processor->xnack == XnackSupport::AlwaysOn;
}

/// Whether code wanting `feature` as `code` says runs in `device`'s mode of it.
bool feature_fits(const TargetId& code, const TargetId& device, Feature feature) {
  const FeatureState wanted = state_of(code, feature);
  if (wanted != FeatureState::On && wanted != FeatureState::Off) return true;
  return (always_on(device, feature) ? FeatureState::On : state_of(device, feature)) == wanted;
}

}  // namespace

bool features_fit(const TargetId& code, const TargetId& device) {
  for (Feature feature : kFeatures)
    if (!feature_fits(code, device, feature)) return false;
  return true;
}

std::string feature_mismatch(const TargetId& code, const TargetId& device) {
  std::string mismatch;
  for (Feature feature : kFeatures) {
    if (feature_fits(code, device, feature)) continue;
    const bool always_on = coload::always_on(device, feature);
    const FeatureState has = always_on ? FeatureState::On : state_of(device, feature);
    std::string name(feature_name(feature));
    if (!mismatch.empty()) mismatch += ", ";
    if (always_on) {
      mismatch += "device runs with " + name + " always on";
    } else if (has == FeatureState::Unsupported) {
      mismatch += "device has no " + name + " mode";
    } else if (has == FeatureState::Any) {
      mismatch += "device's " + name + " mode is unspecified";
    } else {
      mismatch += "device runs with " + name + (has == FeatureState::On ? "+" : "-");
    }
  }
  return mismatch;
}

bool detail::EntryIdView::is_amdhsa() const { return is_amdhsa_triple(arch, vendor, os, environment); }

bool EntryId::is_amdhsa() const { return is_amdhsa_triple(arch, vendor, os, environment); }

Expected<detail::EntryIdView> detail::parse_entry_id(std::string_view text) {
  EntryIdView id;
  id.text = text;
  // `part` is the ID's part at fault, at its character offset in the ID.
  auto fail = [&](std::string why, std::string_view part, std::string_view at) {
    return Error(ErrorKind::Malformed, "bundle entry ID " + single_quoted(text) + " " + why)
        .at_field(part, static_cast<std::uint64_t>(at.data() - text.data()));
  };
  std::string_view rest = text;
  std::array<std::string_view*, 6> fields = {&id.kind_text, &id.arch,        &id.vendor,
                                             &id.os,        &id.environment, &id.target_text};
  std::size_t parts = 0;  // the target keeps its dashes: split at the first five only
  for (std::string_view* field : fields) {
    ++parts;
    if (field == fields.back()) {
      *field = rest;
      break;
    }
    Token token = take_token(rest, '-');
    *field = token.text;
    if (!token.cut) break;
  }
  if (id.kind_text == "host")
    id.kind = OffloadKind::Host;
  else if (id.kind_text == "hip")
    id.kind = OffloadKind::Hip;
  else if (id.kind_text == "hipv4")
    id.kind = OffloadKind::HipV4;
  else if (id.kind_text == "hcc")
    id.kind = OffloadKind::Hcc;
  else if (id.kind_text == "openmp")
    id.kind = OffloadKind::OpenMP;
  if (parts < 2 || id.kind_text.empty()) return fail("has no `<kind>-` prefix", "kind", text);
  // Host triples come in 3 and 4 parts (clang-14 wrote `host-x86_64-unknown-linux`).
  if (id.kind == OffloadKind::Host) return id;
  if (parts < 6) {
    return Error(ErrorKind::Malformed,
                 "bundle entry ID " + single_quoted(text) + " has " + std::to_string(parts - 1) +
                     " dashes; a device entry is `<kind>-<arch>-<vendor>-<os>-<environment>-<target>`")
        .at_field("dashes", std::nullopt, parts - 1, fields.size() - 1);
  }
  if (id.arch == "spirv64" && id.vendor == "amd" && id.os == "amdhsa") {
    if (id.target_text == "amdgcnspirv") {
      id.is_spirv = true;
    } else if (id.target_text.starts_with("amdgcnspirv:")) {
      return fail("puts features on amdgcnspirv, which has none", "target", id.target_text);
    }
    return id;
  }
  if (!id.is_amdhsa()) return id;
  if (id.target_text.empty()) return fail("names no processor after its triple", "target", id.target_text);
  auto target = TargetId::parse(id.target_text);
  if (!target) return std::move(target).error().with_context("bundle entry ID " + single_quoted(text));
  id.target = *target;
  return id;
}

Expected<EntryId> EntryId::parse(std::string_view text) {
  auto view = detail::parse_entry_id(text);
  COLOAD_RETURN_IF_ERROR(view);
  EntryId id;
  id.text = std::string(text);
  id.kind = view->kind;
  id.kind_text = std::string(view->kind_text);
  id.arch = std::string(view->arch);
  id.vendor = std::string(view->vendor);
  id.os = std::string(view->os);
  id.environment = std::string(view->environment);
  id.target_text = std::string(view->target_text);
  id.target = view->target;
  id.is_spirv = view->is_spirv;
  return id;
}

std::string EntryId::canonical() const {
  if (kind == OffloadKind::Host) return text;
  std::string env = is_amdhsa() ? std::string() : environment;
  return kind_text + "-" + arch + "-" + vendor + "-" + os + "-" + env + "-" + (target ? target->str() : target_text);
}

}  // namespace coload
