// coload extract: write one entry's bytes, as clang-offload-bundler --unbundle
// does (--target), or the entry `coload select` chooses for a device
// (--device), retargeted for it when it is a same-ISA equivalent (--retarget).
#include <algorithm>
#include <cstdio>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/detail/hotswap.h"
#include "coload/detail/ordered_pool.h"
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/select.h"
#include "command_context.h"
#include "commands.h"
#include "output_file.h"

namespace coload::cli {
namespace {

/// The target ID part of a bundle entry ID: what follows
/// "<kind>-<arch>-<vendor>-<os>-<environment>-" (five dashes; a generic target
/// such as gfx10-3-generic keeps its own dashes).
std::string_view target_part(std::string_view id) {
  std::size_t position = 0;
  for (int dash = 0; dash < 5; ++dash) {
    position = id.find('-', position);
    if (position == std::string_view::npos) return {};
    ++position;
  }
  return id.substr(position);
}

/// Indices of the entries whose entry ID, or failing that target ID, equals `wanted`.
std::vector<std::size_t> matching(std::span<const BundleEntry> entries, std::string_view wanted) {
  std::vector<std::size_t> by_id;
  std::vector<std::size_t> by_target;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].id == wanted)
      by_id.push_back(i);  // a host entry only by its whole ID
    else if (!entries[i].is_host && target_part(entries[i].id) == wanted)
      by_target.push_back(i);
  }
  return by_id.empty() ? by_target : by_id;
}

/// What --target makes of one bundle's table: the entry to write (the first
/// match in table order when an ID repeats, as comgr does), or why none.
struct TargetPick {
  std::optional<std::size_t> index;
  std::vector<std::string> distinct;  ///< distinct IDs that matched: more than one is ambiguous
  std::vector<std::string> present;   ///< every entry ID, for the "no entry matches" message
};

TargetPick pick_target(std::span<const BundleEntry> entries, std::string_view wanted) {
  TargetPick pick;
  std::vector<std::size_t> hits = matching(entries, wanted);
  for (std::size_t hit : hits) {
    if (std::find(pick.distinct.begin(), pick.distinct.end(), entries[hit].id) == pick.distinct.end()) {
      pick.distinct.emplace_back(entries[hit].id);
    }
  }
  for (const BundleEntry& entry : entries) pick.present.emplace_back(entry.id);
  if (!hits.empty() && pick.distinct.size() == 1) pick.index = hits.front();
  return pick;
}

struct Found {
  std::size_t bundle_index;
  std::optional<Bundle> bundle;     ///< plain: the entries view the file
  std::vector<std::byte> streamed;  ///< compressed: only the entry found is kept
  std::span<const std::byte> bytes;
};

/// What one bundle contributes to `extract --device`: the bytes to write.
struct Chosen {
  std::size_t bundle_index;
  std::vector<std::byte> bytes;
};

/// Opens FILE and checks --bundle against it; prints why and returns nullopt on failure.
std::optional<FatBinary> open_checked(const std::string& path, const ReadOptions& options,
                                      std::optional<std::size_t> only_bundle) {
  auto binary = FatBinary::open(path, options);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return std::nullopt;
  }
  if (only_bundle && *only_bundle >= binary->bundles().size()) {
    std::fprintf(stderr, "coload: %s: --bundle %zu: the file has %zu bundle(s)\n", path.c_str(), *only_bundle,
                 binary->bundles().size());
    return std::nullopt;
  }
  return std::move(*binary);
}

/// extract --device: the entry the selector chooses in each bundle (every
/// bundle must have one), retargeted when `retarget` is set and the entry is
/// a same-ISA equivalent. Native and generic entries are written unchanged.
int extract_for_device(CommandContext& context, const std::string& path, const std::string& output,
                       std::optional<std::size_t> only_bundle) {
  const bool retarget = context.arguments.given(kRetarget);
  const Device* device = &*context.device;
  const StreamOptions& stream_options = context.stream;

  std::optional<FatBinary> binary = open_checked(path, stream_options.read, only_bundle);
  if (!binary) return kExitInputError;
  std::vector<Chosen> chosen;
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    if (!only_bundle || i == *only_bundle) indices.push_back(i);
  }
  // Asked once the file is open: a file that cannot be read is told first.
  const std::optional<SelectOptions>& select_options = context.select_options();
  if (!select_options) return kExitInputError;
  bool failed = false;
  KeptBytes budget = command_budget(stream_options.read.max_decompressed_bytes);
  // Stops at the first bundle without a usable entry, as the loop did.
  auto take = [&](std::size_t i, Expected<BundleChoice>& choice) {
    std::string where = path + ": bundle " + std::to_string(i);
    if (!choice) {
      std::fprintf(stderr, "coload: %s\n", choice.error().message().c_str());
      failed = true;
      return false;
    }
    const Candidate* candidate = choice->selection.chosen();
    if (!candidate) {
      std::fprintf(stderr, "coload: %s\n",
                   no_fit_error(*device, choice->selection).with_context(where).message().c_str());
      failed = true;
      return false;
    }
    std::span<const std::byte> bytes = choice->chosen_bytes();
    if (choice->compressed()) {
      if (auto charged = budget.charge(bytes.size(), "its chosen entry"); !charged) {
        print_error(std::move(charged).error().in_bundle(i).in_file(path));
        failed = true;
        return false;
      }
    }
    std::string tier(to_string(*candidate->tier));
    if (retarget && candidate->tier == Tier::Equivalent) {
      auto retargeted = retarget_code_object(bytes, *device);
      if (!retargeted) {
        std::fprintf(stderr, "coload: %s: %s: %s\n", where.c_str(), candidate->id.c_str(),
                     retargeted.error().message().c_str());
        failed = true;
        return false;
      }
      std::fprintf(stderr, "coload: %s: %s retargeted for %s\n", where.c_str(), candidate->id.c_str(),
                   device->str().c_str());
      chosen.push_back({i, std::move(*retargeted)});
    } else {
      if (retarget) {
        std::fprintf(stderr, "coload: %s: %s is a %s fit for %s; written unchanged\n", where.c_str(),
                     candidate->id.c_str(), tier.c_str(), device->str().c_str());
      }
      // A streamed entry is the choice's own vector: taken, not copied.
      StreamedChoice* streamed = choice->streamed();
      chosen.push_back(
          {i, streamed ? std::move(streamed->chosen) : std::vector<std::byte>(bytes.begin(), bytes.end())});
    }
    return true;
  };
  choose_in_binary(*binary, indices, *device, {.select = *select_options, .stream = stream_options}, take);
  if (failed) return kExitInputError;
  if (chosen.size() == 1) return write_file(output, chosen.front().bytes) ? kExitOk : kExitInputError;
  for (const Chosen& hit : chosen) {
    std::string name = output + "." + std::to_string(hit.bundle_index);
    if (!write_file(name, hit.bytes)) return kExitInputError;
    std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

/// extract: one entry's bytes by --target, or the selection's by --device.
int run_extract(CommandContext& context) {
  const std::string target = context.arguments.text(kTarget);
  const std::string output = context.arguments.text(kOutput);
  const std::optional<std::size_t> only_bundle = context.arguments.number(kBundle);
  const std::string& path = context.operands.front();
  if (context.device) return extract_for_device(context, path, output, only_bundle);

  const StreamOptions& stream_options = context.stream;
  std::optional<FatBinary> binary = open_checked(path, stream_options.read, only_bundle);
  if (!binary) return kExitInputError;

  std::list<Found> found;  // a list: `bytes` may view the element's own `streamed`
  // For "no entry matches": the first distinct IDs, then how many more entries.
  constexpr std::size_t kListed = 32;
  std::vector<std::string> present;
  std::uint64_t unlisted = 0;
  KeptBytes budget = command_budget(stream_options.read.max_decompressed_bytes);
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    if (!only_bundle || i == *only_bundle) indices.push_back(i);
  }
  // One bundle's entry for the target, or why it could not be read.
  struct Read {
    Found hit;
    TargetPick pick;
    std::string error;
  };
  auto read_one = [&](std::size_t i) {
    Read result{.hit = Found{i, std::nullopt, {}, {}}};
    const BundleInfo& info = binary->bundles()[i];
    try {
      if (info.format == BundleFormat::Compressed) {
        // Streamed: the table picks the entry, and only that entry is kept.
        EntryPicker picker = [&](std::span<const BundleEntry> table) {
          result.pick = pick_target(table, target);
          return result.pick.index;
        };
        auto streamed = extract_from_compressed_bundle(binary->source().bytes(), info, picker, stream_options);
        if (!streamed) {
          result.error = std::move(streamed).error().in_bundle(i).in_file(path).message();
          return result;
        }
        result.hit.streamed = std::move(streamed->chosen);
      } else {
        // A kpack key's table first (IDs only), then the one entry picked.
        auto bundle = binary->read_only(i, std::nullopt);
        if (bundle && info.format == BundleFormat::Kpack) {
          result.pick = pick_target(bundle->entries(), target);
          if (result.pick.index) bundle = binary->read_only(i, *result.pick.index);
        }
        if (!bundle) {
          result.error = bundle.error().message();
          return result;
        }
        result.pick = pick_target(bundle->entries(), target);
        if (result.pick.index) result.hit.bytes = bundle->entries()[*result.pick.index].bytes;
        result.hit.bundle = std::move(*bundle);
      }
    } catch (const std::exception& exception) {
      result.error = bundle_failure(i, exception).in_file(path).message();
    }
    return result;
  };
  bool failed = false;
  auto take = [&](std::size_t i, Read& result) {
    if (!result.error.empty()) {
      std::fprintf(stderr, "coload: %s\n", result.error.c_str());
      failed = true;
      return false;
    }
    const TargetPick& pick = result.pick;
    if (pick.distinct.size() > 1) {
      std::string ids;
      for (const std::string& id : pick.distinct) ids += " " + id;
      std::fprintf(stderr, "coload: %s: bundle %zu: target '%s' is ambiguous:%s; give the full entry ID\n",
                   path.c_str(), i, target.c_str(), ids.c_str());
      failed = true;
      return false;
    }
    for (const std::string& id : pick.present) {
      if (std::find(present.begin(), present.end(), id) != present.end()) continue;
      if (present.size() < kListed) {
        present.push_back(id);
      } else {
        ++unlisted;
      }
    }
    if (!pick.index) return true;
    if (auto charged = budget.charge(result.hit.streamed.size(), "its entry for the target"); !charged) {
      print_error(std::move(charged).error().in_bundle(i).in_file(path));
      failed = true;
      return false;
    }
    Found& hit = found.emplace_back(std::move(result.hit));
    if (!hit.bundle) hit.bytes = hit.streamed;  // views the list's own element
    return true;
  };
  std::vector<std::optional<Read>> reads(indices.size());
  for_each_in_order(
      indices.size(), decode_threads(*binary, indices, Unbundler::Builtin),
      [&](std::size_t slot) { reads[slot].emplace(read_one(indices[slot])); },
      [&](std::size_t slot) {
        bool going = take(indices[slot], *reads[slot]);
        reads[slot].reset();
        return going;
      });
  if (failed) return kExitInputError;
  if (found.empty()) {
    std::string listed;
    for (const std::string& id : present) listed += (listed.empty() ? "" : ", ") + id;
    if (unlisted > 0) listed += ", and " + std::to_string(unlisted) + " more";
    std::fprintf(stderr, "coload: %s: no entry matches '%s' (entries: %s)\n", path.c_str(), target.c_str(),
                 listed.empty() ? "none" : listed.c_str());
    return kExitInputError;
  }
  if (found.size() == 1) return write_file(output, found.front().bytes) ? kExitOk : kExitInputError;
  for (const Found& hit : found) {
    std::string name = output + "." + std::to_string(hit.bundle_index);
    if (!write_file(name, hit.bytes)) return kExitInputError;
    std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

std::optional<int> check_extract_usage(CommandContext& context) {
  const Arguments& arguments = context.arguments;
  DeviceOptions& device_options = context.device_options;
  const bool by_device = !device_options.spec.empty();
  const bool retarget = arguments.given(kRetarget);
  if (!arguments.text(kTarget).empty() && by_device) return usage_error("extract: give --target or --device, not both");
  if (!by_device && (retarget || device_options.overridden)) {
    return usage_error("extract: --retarget and the device options need --device SPEC");
  }
  if (arguments.text(kTarget).empty() && !by_device) return usage_error("extract: --target or --device is required");
  if (arguments.text(kOutput).empty()) return usage_error("extract: -o OUT is required");
  if (context.operands.size() != 1) return usage_error("extract: exactly one FILE is required");
  // Retargeting is the point of same-ISA equivalence: --retarget opts the device in.
  if (retarget) device_options.overrides.extended_isa_compat = true;
  return std::nullopt;
}

}  // namespace

const Command kExtract{
    .spec = &kExtractCommand, .builds_device = true, .check_usage = check_extract_usage, .run = run_extract};

}  // namespace coload::cli
