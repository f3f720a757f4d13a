// What the preload interposer does with one wrapper (wrapper_plan.h).
#include "preload/wrapper_plan.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>

#include "coload/detail/hotswap.h"
#include "coload/detail/stream_select.h"
#include "coload/detail/wrapper.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/validate.h"
#include "common/magic.h"
#include "common/try.h"
#include "formats/kpack_image.h"
#include "formats/plain_bundle_writer.h"
#include "select/target_rules.h"
#include "target/entry_id_view.h"
#include "target/isa_name.h"

namespace coload::preload {

namespace {

/// An entry of the bundle to write: its ID and bytes (owned: a stream's or
/// a retarget's output outlives the choice that made it).
struct Written {
  std::string id;
  std::vector<std::byte> bytes;
};

/// The wrapper's image as one binary of one bundle: a HIPF image copied
/// through checked reads, a HIPK record's entry of its kpack'd image.
struct Opened {
  std::vector<std::byte> copy;  // what a HIPF binary views
  std::optional<FatBinary> binary;
  bool kpack = false;
};

/// Keeps `copy` (an image copied through checked reads) in `out` and opens it.
Expected<void> open_copy(Expected<std::vector<std::byte>> copy, const std::string& name, const ReadOptions& read,
                         Opened& out) {
  COLOAD_RETURN_IF_ERROR(copy);
  out.copy = std::move(*copy);
  auto binary = FatBinary::from_memory(out.copy, name, read);
  COLOAD_RETURN_IF_ERROR(binary);
  out.binary.emplace(std::move(*binary));
  return {};
}

Expected<void> open_wrapper(const void* wrapper, const std::string& name, const ReadOptions& read, Opened& out) {
  auto record = read_wrapper_record(wrapper);
  COLOAD_RETURN_IF_ERROR(record);
  if (record->kpack()) {
    out.kpack = true;
    auto file = detail::kpack_wrapper_file(wrapper, name, read);
    COLOAD_RETURN_IF_ERROR(file);
    // The record's index is the low 32 bits of `reserved` (docs/format.md, "kpack'd host images").
    auto binary = FatBinary::open_kpack_wrapper(*file, static_cast<std::uint32_t>(record->reserved), name, read);
    COLOAD_RETURN_IF_ERROR(binary);
    out.binary.emplace(std::move(*binary));
    return {};
  }
  auto reach = wrapper_reach(wrapper, *record);
  COLOAD_RETURN_IF_ERROR(reach);
  return open_copy(wrapped_image_in(wrapper, *reach, read), name, read, out);
}

/// Whether the runtime's own lookup serves `device` with `tier`'s entry: a
/// native one always (comgr finds it by its ID), a generic one where the
/// release loads generics (CLR asks for the device's generic ID too). A kpack
/// archive's entry only when the runtime loads kpack archives itself.
bool runtime_serves(Tier tier, const Device& device, bool kpack, const PlanOptions& options) {
  if (kpack && !options.runtime_loads_kpack) return false;
  return tier == Tier::Native || (tier == Tier::Generic && device.loads_generic);
}

/// The code object to write for `device` from `chosen` (its tier `tier`),
/// under the ID the runtime's lookup finds for the device.
Expected<Written> written_for(std::span<const std::byte> chosen, Tier tier, const Device& device,
                              const PlanOptions& options) {
  std::vector<std::byte> bytes;
  if (tier == Tier::Equivalent || (tier == Tier::Generic && !device.loads_generic)) {
    auto retargeted = retarget_code_object(chosen, device);
    COLOAD_RETURN_IF_ERROR(retargeted);
    bytes = std::move(*retargeted);
  } else if (tier == Tier::Hotswap) {
    // As a registry runs it (registry/transform.cpp): the pass, then its output read and validated.
    if (!options.hotswap) return Error(ErrorKind::NotFound, "no hotswap passes were given");
    auto source = read_code_object_target(chosen);
    COLOAD_RETURN_IF_ERROR(source);
    auto ran = run_hotswap_pass(*options.hotswap, chosen, source->target.processor, device);
    COLOAD_RETURN_IF_ERROR(ran);
    auto read = CodeObject::read(ran->bytes);
    if (!read) return std::move(read).error().with_context(ran->where + ": output");
    COLOAD_RETURN_IF_ERROR(admit(*read, device, ran->where + ": output"));
    bytes = std::move(ran->bytes);
  } else {
    bytes.assign(chosen.begin(), chosen.end());
  }
  auto target = read_code_object_target(bytes);
  COLOAD_RETURN_IF_ERROR(target);
  return Written{hip_entry_id(target->target), std::move(bytes)};
}

/// Plans bundle `index` of `binary`; `kpack`: its entries come from kpack
/// archives, which a runtime without kpack support never sees.
void plan_in(const FatBinary& binary, std::size_t index, bool kpack, const PlanOptions& options, WrapperPlan& plan) {
  std::vector<Written> entries;
  bool rewrite = false;
  auto keep = [&](Written written) {
    auto same = std::find_if(entries.begin(), entries.end(), [&](const Written& w) { return w.id == written.id; });
    if (same == entries.end()) entries.push_back(std::move(written));
  };
  for (const Device& device : options.devices) {
    GpuDecision& decision = plan.gpus.emplace_back();
    if (index >= binary.bundles().size()) {
      decision.why = "the image holds no bundle";
      continue;
    }
    // A generic the runtime does not load is still a choice: relabelled for the device, it loads.
    Device choosing = device;
    choosing.loads_generic = true;
    Selector selector(choosing, options.select);
    auto choice = select_in_bundle_at(binary, index, selector, options.stream);
    if (!choice) {
      decision.why = choice.error().message();
      continue;
    }
    const Candidate* chosen = choice->selection.chosen();
    if (!chosen || !chosen->tier) {
      decision.why = no_fit_error(device, choice->selection).message();
      continue;
    }
    decision.tier = chosen->tier;
    decision.source_id = chosen->id;
    const std::span<const std::byte> bytes = choice->chosen_bytes();
    if (runtime_serves(*chosen->tier, device, kpack, options)) {
      decision.outcome = Outcome::RuntimeFinds;
      keep(Written{chosen->id, std::vector<std::byte>(bytes.begin(), bytes.end())});
      continue;
    }
    auto written = written_for(bytes, *chosen->tier, device, options);
    if (!written) {
      decision.why = written.error().message();
      continue;
    }
    decision.outcome = Outcome::Rewritten;
    decision.written_id = written->id;
    keep(std::move(*written));
    rewrite = true;
  }
  if (!rewrite) return;
  std::vector<detail::EntryToWrite> table{{detail::kHostEntryId, {}}};
  for (const Written& entry : entries) table.push_back({entry.id, entry.bytes});
  plan.bundle = detail::write_plain_bundle(table);
}

std::uint64_t load_u64(const std::byte* at) {
  std::uint64_t value = 0;
  std::memcpy(&value, at, sizeof value);
  return value;
}

/// What entry ID `id` offers `device` (IdScreen::Nothing for an ID that is
/// no HIP code object).
IdScreen screen_id(std::string_view id, const Device& device, const SelectOptions& select) {
  // Only HIP entries can serve a GPU; the rest (the host's, above all) are passed without parsing.
  if (!id.starts_with("hip-") && !id.starts_with("hipv4-")) return IdScreen::Nothing;
  auto parsed = detail::parse_entry_id(id);
  if (!parsed || !parsed->is_amdhsa() || !parsed->target || !parsed->target->processor) return IdScreen::Nothing;
  if (parsed->kind != OffloadKind::Hip && parsed->kind != OffloadKind::HipV4) return IdScreen::Nothing;
  const Processor& code = *parsed->target->processor;
  const Processor& gpu = *device.target.processor;
  if (&code == &gpu) {
    return features_fit(*parsed->target, device.target) ? IdScreen::Served : IdScreen::Nothing;
  }
  if (code.is_generic && gpu.generic_family == code.name) {
    return device.loads_generic ? IdScreen::Served : IdScreen::Related;
  }
  if (device.extended_isa_compat && detail::runs_equivalently(code, gpu)) return IdScreen::Related;
  if (select.hotswap && select.hotswap_allowlist.contains(code.name, gpu.name)) return IdScreen::Related;
  return IdScreen::Nothing;
}

/// Raises each device's screen in `out` to what `id` offers it.
void screen_into(std::string_view id, const PlanOptions& options, std::span<IdScreen> out) {
  for (std::size_t gpu = 0; gpu < out.size(); ++gpu) {
    if (out[gpu] == IdScreen::Served) continue;
    const IdScreen screen = screen_id(id, options.devices[gpu], options.select);
    if (screen != IdScreen::Nothing) out[gpu] = screen;
  }
}

}  // namespace

void screen_ids(std::span<const std::string_view> ids, const PlanOptions& options, std::span<IdScreen> out) {
  std::fill(out.begin(), out.end(), IdScreen::Nothing);
  for (std::string_view id : ids) screen_into(id, options, out);
}

void screen_ids(std::span<const std::string> ids, const PlanOptions& options, std::span<IdScreen> out) {
  std::fill(out.begin(), out.end(), IdScreen::Nothing);
  for (const std::string& id : ids) screen_into(id, options, out);
}

bool screen_table(std::span<const std::byte> head, const PlanOptions& options, std::span<IdScreen> out) {
  const std::size_t size = head.size();
  constexpr std::size_t kHeader = detail::kPlainBundleMagic.size() + sizeof(std::uint64_t);
  if (size < kHeader || std::memcmp(head.data(), detail::kPlainBundleMagic.data(), kHeader - 8) != 0) return false;
  const std::uint64_t count = load_u64(head.data() + kHeader - 8);
  if (count > kScreenedBytes / (3 * sizeof(std::uint64_t))) return false;
  std::array<std::string_view, kScreenedBytes / (3 * sizeof(std::uint64_t))> ids;
  std::size_t at = kHeader;
  for (std::uint64_t entry = 0; entry < count; ++entry) {
    if (size - at < 3 * sizeof(std::uint64_t)) return false;
    const std::uint64_t id_size = load_u64(head.data() + at + 16);
    at += 3 * sizeof(std::uint64_t);
    if (id_size > size - at) return false;
    ids[entry] = std::string_view(reinterpret_cast<const char*>(head.data() + at), id_size);
    at += id_size;
  }
  screen_ids(std::span<const std::string_view>(ids).first(count), options, out);
  return true;
}

std::optional<std::vector<std::string>> compressed_table_ids(std::span<const std::byte> image,
                                                             const PlanOptions& options) {
  if (image.size() < 8 || std::memcmp(image.data(), "CCOB", 4) != 0) return std::nullopt;
  // Version 1 declares no size: measuring it would decode it all.
  std::uint16_t version = 0;
  std::memcpy(&version, image.data() + 4, sizeof version);
  if (version < 2) return std::nullopt;
  auto info = measure_image(image, options.read);
  if (!info) return std::nullopt;
  std::vector<std::string> ids;
  StreamOptions stream = options.stream;
  stream.keep_chosen = false;
  // Skip mode checks nothing, so the stream may stop early: the picker names
  // the entry that ends first, and decoding stops once it is complete (a
  // host entry: right after the table). Verify mode reads it to its end (the
  // CCOB's MD5; a verified mark makes that a Skip-mode read).
  const bool table_only = stream.hash == StreamOptions::HashCheck::Skip;
  auto streamed = extract_from_compressed_bundle(
      image, *info,
      [&](std::span<const BundleEntry> table) -> std::optional<std::size_t> {
        for (const BundleEntry& entry : table) ids.emplace_back(entry.id);
        if (!table_only || table.empty()) return std::nullopt;
        auto first_end = std::min_element(table.begin(), table.end(), [](const BundleEntry& a, const BundleEntry& b) {
          return a.offset + a.size < b.offset + b.size;
        });
        return static_cast<std::size_t>(first_end - table.begin());
      },
      stream);
  // A stream read as far as its table: what stopped it after that is not this screen's.
  if (!streamed && !(table_only && !ids.empty())) return std::nullopt;
  if (ids.empty()) return std::nullopt;
  return ids;
}

bool kpack_needs_nothing(const PlanOptions& options) {
  if (!options.runtime_loads_kpack || options.select.hotswap) return false;
  return std::all_of(options.devices.begin(), options.devices.end(),
                     [](const Device& device) { return !device.extended_isa_compat && device.loads_generic; });
}

std::string hip_entry_id(const TargetId& target) {
  return "hipv4-" + std::string(detail::kIsaNamePrefix) + target.str();
}

namespace {

/// The image at `image` (a pointer without a size: hipModuleLoadData's),
/// measured and copied through checked reads within its mapping.
Expected<void> open_image(const void* image, const std::string& name, const ReadOptions& read, Opened& out) {
  auto reach = readable_bytes_at(image);
  COLOAD_RETURN_IF_ERROR(reach);
  return open_copy(copy_image(*reach, read), name, read, out);
}

/// plan_wrapper and plan_image: `open` fills an Opened, then every device is planned.
template <class Open>
WrapperPlan plan_with(const Open& open, const PlanOptions& options) {
  WrapperPlan plan;
  try {
    Opened opened;
    if (auto status = open(opened); !status) {
      plan.unreadable = status.error().message();
      return plan;
    }
    plan_in(*opened.binary, 0, opened.kpack, options, plan);
  } catch (const std::bad_alloc&) {
    plan = WrapperPlan{.unreadable = "out of memory while reading it"};
  } catch (const std::exception& error) {
    plan = WrapperPlan{.unreadable = std::string("internal error: ") + error.what()};
  }
  return plan;
}

}  // namespace

WrapperPlan plan_wrapper(const void* wrapper, const std::string& name, const PlanOptions& options) {
  return plan_with([&](Opened& opened) { return open_wrapper(wrapper, name, options.read, opened); }, options);
}

WrapperPlan plan_image(const void* image, const std::string& name, const PlanOptions& options) {
  return plan_with([&](Opened& opened) { return open_image(image, name, options.read, opened); }, options);
}

WrapperPlan plan_bundle(const FatBinary& binary, std::size_t index, const PlanOptions& options) {
  WrapperPlan plan;
  try {
    const bool kpack = index < binary.bundles().size() && binary.bundles()[index].format == BundleFormat::Kpack;
    plan_in(binary, index, kpack, options, plan);
  } catch (const std::exception& error) {
    plan = WrapperPlan{.unreadable = std::string("internal error: ") + error.what()};
  }
  return plan;
}

}  // namespace coload::preload
