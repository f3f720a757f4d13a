// What the preload interposer does with one wrapper (wrapper_plan.h).
#include "preload/wrapper_plan.h"

#include <algorithm>
#include <exception>
#include <new>
#include <optional>

#include "coload/detail/hotswap.h"
#include "coload/detail/wrapper.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "common/try.h"
#include "formats/kpack_image.h"
#include "formats/plain_bundle_writer.h"
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
  auto copy = wrapped_image_in(wrapper, *reach, read);
  COLOAD_RETURN_IF_ERROR(copy);
  out.copy = std::move(*copy);
  auto binary = FatBinary::from_memory(out.copy, name, read);
  COLOAD_RETURN_IF_ERROR(binary);
  out.binary.emplace(std::move(*binary));
  return {};
}

/// Whether the runtime's own lookup serves `device` with `tier`'s entry: a
/// native one always (comgr finds it by its ID), a generic one where the
/// release loads generics (CLR asks for the device's generic ID too). A kpack
/// archive's entry never: a runtime without kpack support sees no code.
bool runtime_serves(Tier tier, const Device& device, bool kpack) {
  if (kpack) return false;
  return tier == Tier::Native || (tier == Tier::Generic && device.loads_generic);
}

/// The code object to write for `device` from `chosen` (its tier `tier`),
/// under the ID the runtime's lookup finds for the device.
Expected<Written> written_for(std::span<const std::byte> chosen, Tier tier, const Device& device) {
  std::vector<std::byte> bytes;
  const bool relabel = tier == Tier::Equivalent || (tier == Tier::Generic && !device.loads_generic);
  if (relabel) {
    auto retargeted = retarget_code_object(chosen, device);
    COLOAD_RETURN_IF_ERROR(retargeted);
    bytes = std::move(*retargeted);
  } else if (tier == Tier::Native || tier == Tier::Generic) {
    bytes.assign(chosen.begin(), chosen.end());
  } else {
    return Error(ErrorKind::UnsupportedMethod, "a hotswap pass's output is not handed on by the preload");
  }
  auto target = read_code_object_target(bytes);
  COLOAD_RETURN_IF_ERROR(target);
  return Written{hip_entry_id(target->target), std::move(bytes)};
}

void plan_opened(const Opened& opened, const PlanOptions& options, WrapperPlan& plan) {
  const FatBinary& binary = *opened.binary;
  std::vector<Written> entries;
  bool rewrite = false;
  auto keep = [&](Written written) {
    auto same = std::find_if(entries.begin(), entries.end(), [&](const Written& w) { return w.id == written.id; });
    if (same == entries.end()) entries.push_back(std::move(written));
  };
  for (const Device& device : options.devices) {
    GpuDecision& decision = plan.gpus.emplace_back();
    if (binary.bundles().empty()) {
      decision.why = "the image holds no bundle";
      continue;
    }
    // A generic the runtime does not load is still a choice: relabelled for the device, it loads.
    Device choosing = device;
    choosing.loads_generic = true;
    Selector selector(choosing, options.select);
    auto choice = select_in_bundle_at(binary, 0, selector, options.stream);
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
    if (runtime_serves(*chosen->tier, device, opened.kpack)) {
      decision.outcome = Outcome::RuntimeFinds;
      keep(Written{chosen->id, std::vector<std::byte>(bytes.begin(), bytes.end())});
      continue;
    }
    auto written = written_for(bytes, *chosen->tier, device);
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

}  // namespace

std::string hip_entry_id(const TargetId& target) {
  return "hipv4-" + std::string(detail::kIsaNamePrefix) + target.str();
}

WrapperPlan plan_wrapper(const void* wrapper, const std::string& name, const PlanOptions& options) {
  WrapperPlan plan;
  try {
    Opened opened;
    if (auto status = open_wrapper(wrapper, name, options.read, opened); !status) {
      plan.unreadable = status.error().message();
      return plan;
    }
    plan_opened(opened, options, plan);
  } catch (const std::bad_alloc&) {
    plan = WrapperPlan{.unreadable = "out of memory while reading it"};
  } catch (const std::exception& error) {
    plan = WrapperPlan{.unreadable = std::string("internal error: ") + error.what()};
  }
  return plan;
}

}  // namespace coload::preload
