// coload extract: write one entry's bytes, as clang-offload-bundler --unbundle does.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "coload/fat_binary.h"
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

}  // namespace

int run_extract(std::span<const std::string> args) {
  std::string target;
  std::string output;
  std::optional<std::size_t> only_bundle;
  ReadOptions options;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool has_value = i + 1 < args.size();
    if (arg == "--target" && has_value) {
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
    } else if (arg.starts_with("-")) {
      return usage_error("extract: unknown option or missing value: '" + arg + "'");
    } else {
      files.push_back(arg);
    }
  }
  if (target.empty()) return usage_error("extract: --target is required");
  if (output.empty()) return usage_error("extract: -o OUT is required");
  if (files.size() != 1) return usage_error("extract: exactly one FILE is required");
  const std::string& path = files.front();

  auto binary = FatBinary::open(path, options);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return kExitInputError;
  }
  if (only_bundle && *only_bundle >= binary->bundles().size()) {
    std::fprintf(stderr, "coload: %s: --bundle %zu: the file has %zu bundle(s)\n", path.c_str(), *only_bundle,
                 binary->bundles().size());
    return kExitInputError;
  }

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
