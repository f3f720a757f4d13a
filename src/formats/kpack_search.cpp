// The archives of a kpack'd host image (kpack_search.h).
#include "formats/kpack_search.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>

#include "common/try.h"
#include "io/map_budget.h"

namespace coload::detail {

namespace {

namespace fs = std::filesystem;

/// Archives one image's search may map: far more than a real tree has
/// (TheRock ships one per target and variant, a few dozen), far fewer than a
/// hostile directory of matching names could make it map.
constexpr std::size_t kMaxArchives = 1024;
/// Matches of one pattern past which the process's mappings left
/// (vm.max_map_count) are checked before any is mapped; fewer cost nothing.
constexpr std::size_t kBudgetCheckedAbove = 16;

/// Whether `text` can be the target a pattern's @GFXARCH@ stands for.
bool target_like(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' || c == '+' ||
           c == '-' || c == '_';
  });
}

/// Search order of a pattern's matches: by processor, each processor's
/// feature variants (partial overlays) before its base archive.
bool before(const std::pair<std::string, std::string>& a, const std::pair<std::string, std::string>& b) {
  std::string_view pa = std::string_view(a.first).substr(0, a.first.find(':'));
  std::string_view pb = std::string_view(b.first).substr(0, b.first.find(':'));
  if (pa != pb) return pa < pb;
  auto features = [](const std::string& t) { return std::count(t.begin(), t.end(), ':'); };
  if (features(a.first) != features(b.first)) return features(a.first) > features(b.first);
  return a.second < b.second;
}

class Searcher {
 public:
  Searcher(const ReadOptions& options, ArchiveSearch& out) : options_(options), out_(out) {}

  /// Reads the archive at `path` unless it was read already.
  void add(const std::string& path) {
    out_.looked_at.push_back(path);
    std::error_code error;
    if (!fs::is_regular_file(path, error)) return;  // absent: rocm-kpack skips it too
    fs::path real = fs::canonical(path, error);
    if (!seen_.insert(error ? path : real.string()).second) return;
    if (out_.archives.size() >= kMaxArchives) {
      if (!capped_) {  // once: a marker can name thousands of paths
        out_.warnings.push_back("kpack archive " + path +
                                " and any after it are not read: the image's search has read " +
                                std::to_string(kMaxArchives) + " archives, its limit");
      }
      capped_ = true;
      return;
    }
    auto source = Source::map_file(path);
    if (!source) {
      out_.warnings.push_back("kpack archive " + path + ": " + source.error().message());
      return;
    }
    auto file = std::make_shared<kpack::ArchiveFile>(kpack::ArchiveFile{.path = path, .source = std::move(*source)});
    auto archive = kpack::Archive::parse(file->source->reader(), options_);
    if (!archive) {
      out_.warnings.push_back("kpack archive " + path + " is not read: " + archive.error().message());
      return;
    }
    file->archive = std::move(*archive);
    for (const std::string& warning : file->archive->warnings()) out_.warnings.push_back(path + ": " + warning);
    out_.archives.push_back(std::move(file));
  }

  /// Every file of the pattern's directory whose name is the pattern with a
  /// target in place of @GFXARCH@.
  void add_matches(const std::string& pattern) {
    const fs::path as_path(pattern);
    const std::string name = as_path.filename().string();
    const std::size_t at = name.find(kpack::kTargetPlaceholder);
    if (at == std::string::npos ||
        as_path.parent_path().string().find(kpack::kTargetPlaceholder) != std::string::npos) {
      out_.warnings.push_back("kpack search path " + pattern + ": @GFXARCH@ is read only in a file name");
      return;
    }
    const std::string head = name.substr(0, at), tail = name.substr(at + kpack::kTargetPlaceholder.size());
    out_.looked_at.push_back(pattern);
    std::vector<std::pair<std::string, std::string>> matches;  // target, path
    std::error_code error;
    for (fs::directory_iterator it(as_path.parent_path(), error), end; !error && it != end; it.increment(error)) {
      const std::string file = it->path().filename().string();
      if (file.size() <= head.size() + tail.size() || !file.starts_with(head) || !file.ends_with(tail)) continue;
      std::string target = file.substr(head.size(), file.size() - head.size() - tail.size());
      if (target_like(target)) matches.emplace_back(std::move(target), it->path().string());
    }
    std::sort(matches.begin(), matches.end(), before);
    if (std::optional<std::string> refused = too_many(pattern, matches.size())) {
      out_.warnings.push_back(std::move(*refused));
      return;
    }
    for (const auto& [target, path] : matches) {
      add(path);
      out_.looked_at.pop_back();  // the pattern stands for them
    }
  }

 private:
  /// Why the `count` archives `pattern` matches are not read, when it would
  /// map more than an image may or than the process has mappings left for;
  /// nullopt when they may be (each archive stays mapped while it is used).
  std::optional<std::string> too_many(const std::string& pattern, std::size_t count) const {
    const std::string matched = "kpack search path " + pattern + " matches " + std::to_string(count) + " archives";
    if (out_.archives.size() + count > kMaxArchives) {
      return matched + "; with the " + std::to_string(out_.archives.size()) +
             " read before, that is above the limit of " + std::to_string(kMaxArchives) +
             " archives per image: none of them is read";
    }
    if (count <= kBudgetCheckedAbove) return std::nullopt;
    auto budget = map_budget();
    if (!budget) return std::nullopt;
    const std::uint64_t used = budget->in_use + kReservedMappings;
    const std::uint64_t left = budget->max_map_count > used ? budget->max_map_count - used : 0;
    if (count <= left) return std::nullopt;
    return matched + ", but vm.max_map_count " + std::to_string(budget->max_map_count) + " leaves " +
           std::to_string(left) + " mappings (" + std::to_string(budget->in_use) + " in use, " +
           std::to_string(kReservedMappings) + " kept for the rest of the process): none of them is read";
  }

  const ReadOptions& options_;
  ArchiveSearch& out_;
  std::set<std::string> seen_;
  bool capped_ = false;
};

}  // namespace

std::string ArchiveSearch::none_found(const std::string& key) const {
  std::string where;
  for (std::size_t i = 0; i < looked_at.size() && i < 8; ++i) where += (i ? ", " : "") + looked_at[i];
  if (looked_at.size() > 8) where += ", and " + std::to_string(looked_at.size() - 8) + " more";
  if (archives.empty())
    return "no kpack archive found for " + key + " (looked at " + (where.empty() ? "nothing" : where) + ")";
  return "none of the " + std::to_string(archives.size()) + " kpack archives found has " + key;
}

ArchiveSearch find_archives(const kpack::Marker& marker, const std::string& binary_path, const ReadOptions& options) {
  ArchiveSearch search;
  const KpackSearch& kpack = options.kpack;
  if (kpack.disabled) {
    search.warnings.push_back("ROCM_KPACK_DISABLE is set: no kpack archive is read");
    search.looked_at.push_back("nothing: ROCM_KPACK_DISABLE");
    return search;
  }
  Searcher searcher(options, search);
  if (!kpack.paths.empty()) {  // rocm-kpack: the override replaces every other path
    for (const std::string& path : kpack.paths) searcher.add(path);
    return search;
  }
  for (const std::string& path : kpack.prefix_paths) searcher.add(path);
  // Relative paths start at the binary's real directory (rocm-kpack resolves
  // them against the path CLR finds for the image), or at the caller's root.
  std::error_code error;
  fs::path base = kpack.root.empty() ? fs::canonical(binary_path, error).parent_path() : fs::path(kpack.root);
  if (error) {
    search.warnings.push_back("the kpack marker's relative paths cannot be resolved: " + binary_path +
                              " has no real path (" + error.message() +
                              "); set COLOAD_KPACK_ROOT or the registry's binary path");
  }
  for (const std::string& relative : marker.search_paths) {
    fs::path path(relative);
    if (path.is_relative()) {
      if (error) continue;
      path = base / path;
    }
    const std::string resolved = path.lexically_normal().string();
    if (resolved.find(kpack::kTargetPlaceholder) != std::string::npos) {
      searcher.add_matches(resolved);
    } else {
      searcher.add(resolved);
    }
  }
  return search;
}

}  // namespace coload::detail
