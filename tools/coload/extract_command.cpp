// coload extract: write one entry's bytes, as clang-offload-bundler --unbundle
// does (--target), or the entry `coload select` chooses for a device
// (--device), retargeted for it when it is a same-ISA equivalent (--retarget).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/fat_binary.h"
#include "coload/hotswap.h"
#include "coload/select.h"
#include "commands.h"

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

/// Entries of `bundle` whose entry ID, or failing that target ID, equals `wanted`.
std::vector<const BundleEntry*> matching(const Bundle& bundle, std::string_view wanted) {
  std::vector<const BundleEntry*> by_id;
  std::vector<const BundleEntry*> by_target;
  for (const BundleEntry& entry : bundle.entries()) {
    if (entry.is_host) continue;
    if (entry.id == wanted) by_id.push_back(&entry);
    else if (target_part(entry.id) == wanted) by_target.push_back(&entry);
  }
  return by_id.empty() ? by_target : by_id;
}

struct Found {
  std::size_t bundle_index;
  Bundle bundle;
  const BundleEntry* entry;
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
int extract_for_device(const std::string& path, const std::string& output, std::optional<std::size_t> only_bundle,
                       std::optional<std::uint64_t> max_decompressed, DeviceOptions device_options, bool retarget) {
  // Retargeting is the point of same-ISA equivalence: --retarget opts the device in.
  if (retarget) device_options.overrides.extended_isa_compat = true;
  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  std::optional<Device> device = build_device(device_options, *config, "extract");
  if (!device) return kExitUsage;
  StreamOptions stream_options = config->stream_options();
  if (max_decompressed) stream_options.read.max_decompressed_bytes = *max_decompressed;

  std::optional<FatBinary> binary = open_checked(path, stream_options.read, only_bundle);
  if (!binary) return kExitInputError;
  std::vector<Chosen> chosen;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    if (only_bundle && i != *only_bundle) continue;
    std::string where = path + ": bundle " + std::to_string(i);
    auto choice = choose_in_bundle(*binary, i, *device, config->select_options(), stream_options, where);
    if (!choice) {
      std::fprintf(stderr, "coload: %s\n", choice.error().message().c_str());
      return kExitInputError;
    }
    const Candidate* candidate = choice->selection.chosen();
    if (!candidate) {
      std::fprintf(stderr, "coload: %s\n",
                   no_fit_error(*device, choice->selection).with_context(where).message().c_str());
      return kExitInputError;
    }
    std::span<const std::byte> bytes = choice->chosen_bytes();
    std::string tier(to_string(*candidate->tier));
    if (retarget && candidate->tier == Tier::Equivalent) {
      auto retargeted = retarget_code_object(bytes, *device);
      if (!retargeted) {
        std::fprintf(stderr, "coload: %s: %s: %s\n", where.c_str(), candidate->id.c_str(),
                     retargeted.error().message().c_str());
        return kExitInputError;
      }
      std::fprintf(stderr, "coload: %s: %s retargeted for %s\n", where.c_str(), candidate->id.c_str(),
                   device->str().c_str());
      chosen.push_back({i, std::move(*retargeted)});
    } else {
      if (retarget) {
        std::fprintf(stderr, "coload: %s: %s is a %s fit for %s; written unchanged\n", where.c_str(),
                     candidate->id.c_str(), tier.c_str(), device->str().c_str());
      }
      chosen.push_back({i, std::vector<std::byte>(bytes.begin(), bytes.end())});
    }
  }
  if (chosen.size() == 1) return write_file(output, chosen.front().bytes) ? kExitOk : kExitInputError;
  for (const Chosen& hit : chosen) {
    std::string name = output + "." + std::to_string(hit.bundle_index);
    if (!write_file(name, hit.bytes)) return kExitInputError;
    std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

}  // namespace

int run_extract(std::span<const std::string> args) {
  std::string target;
  std::string output;
  std::optional<std::size_t> only_bundle;
  ReadOptions options;
  std::optional<std::uint64_t> max_decompressed;
  DeviceOptions device_options;
  bool retarget = false;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool has_value = i + 1 < args.size();
    if (Option taken = take_device_option(args, i, "extract", device_options); taken != Option::NotMine) {
      if (taken == Option::UsageError) return kExitUsage;
    } else if (arg == "--retarget") {
      retarget = true;
    } else if (arg == "--target" && has_value) {
      target = args[++i];
    } else if (arg == "-o" && has_value) {
      output = args[++i];
    } else if (arg == "--bundle" && has_value) {
      auto index = parse_number(args[++i]);
      if (!index) return usage_error("extract: --bundle needs a bundle index");
      only_bundle = *index;
    } else if (arg == "--max-decompressed-bytes" && has_value) {
      auto limit = parse_number(args[++i]);
      if (!limit) return usage_error("extract: --max-decompressed-bytes needs a number");
      options.max_decompressed_bytes = *limit;
      max_decompressed = *limit;
    } else if (arg.starts_with("-")) {
      return usage_error("extract: unknown option or missing value: '" + arg + "'");
    } else {
      files.push_back(arg);
    }
  }
  bool by_device = !device_options.spec.empty();
  if (!target.empty() && by_device) return usage_error("extract: give --target or --device, not both");
  if (!by_device && (retarget || device_options.overridden)) {
    return usage_error("extract: --retarget and the device options need --device SPEC");
  }
  if (target.empty() && !by_device) return usage_error("extract: --target or --device is required");
  if (output.empty()) return usage_error("extract: -o OUT is required");
  if (files.size() != 1) return usage_error("extract: exactly one FILE is required");
  const std::string& path = files.front();
  if (by_device) return extract_for_device(path, output, only_bundle, max_decompressed, device_options, retarget);

  std::optional<FatBinary> binary = open_checked(path, options, only_bundle);
  if (!binary) return kExitInputError;

  std::vector<Found> found;
  std::vector<std::string> present;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    if (only_bundle && i != *only_bundle) continue;
    auto bundle = binary->read(i);
    if (!bundle) {
      std::fprintf(stderr, "coload: %s\n", bundle.error().message().c_str());
      return kExitInputError;
    }
    auto hits = matching(*bundle, target);
    std::vector<std::string_view> distinct;
    for (const BundleEntry* hit : hits) {
      if (std::find(distinct.begin(), distinct.end(), hit->id) == distinct.end()) distinct.push_back(hit->id);
    }
    if (distinct.size() > 1) {
      std::string ids;
      for (auto id : distinct) ids += " " + std::string(id);
      std::fprintf(stderr, "coload: %s: bundle %zu: target '%s' is ambiguous:%s; give the full entry ID\n",
                   path.c_str(), i, target.c_str(), ids.c_str());
      return kExitInputError;
    }
    for (const BundleEntry& entry : bundle->entries()) present.emplace_back(entry.id);
    if (!hits.empty()) {
      const BundleEntry* first = hits.front();  // duplicates: the first in table order, as comgr does
      found.push_back({i, std::move(*bundle), first});
    }
  }
  if (found.empty()) {
    std::string listed;
    for (const std::string& id : present) listed += (listed.empty() ? "" : ", ") + id;
    std::fprintf(stderr, "coload: %s: no entry matches '%s' (entries: %s)\n", path.c_str(), target.c_str(),
                 listed.empty() ? "none" : listed.c_str());
    return kExitInputError;
  }
  if (found.size() == 1) return write_file(output, found.front().entry->bytes) ? kExitOk : kExitInputError;
  for (const Found& hit : found) {
    std::string name = output + "." + std::to_string(hit.bundle_index);
    if (!write_file(name, hit.entry->bytes)) return kExitInputError;
    std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

}  // namespace coload::cli
