// The kpack install-tree audit (kpack_audit.h).
#include "kpack_audit.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"
#include "commands.h"

namespace coload::cli {

namespace {

namespace fs = std::filesystem;

/// "1-3, 5": wrapper indices as ranges.
std::string ranges(const std::vector<std::size_t>& indices) {
  std::string text;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(indices[i]);
    if (j > i) text += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return text;
}

bool starts_elf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

std::string canonical(const std::string& path) {
  std::error_code error;
  fs::path real = fs::canonical(path, error);
  return error ? path : real.string();
}

}  // namespace

bool is_kpack_tree(const std::string& dir) {
  std::error_code error;
  return fs::is_directory(fs::path(dir) / ".kpack", error);
}

int run_kpack_audit(CommandContext& context, const std::string& dir) {
  ReportPrinter& out = *context.report;
  const ReadOptions& options = context.stream.read;
  // The tree's archives (in any .kpack folder) and its kpack'd binaries.
  std::map<std::string, std::string> archives;  // real path -> path as found
  std::vector<std::string> images;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, error), end;
       !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    if (!it->is_regular_file(error)) continue;
    if (path.parent_path().filename() == ".kpack" && path.extension() == ".kpack") {
      archives.emplace(canonical(path.string()), path.string());
    } else if (starts_elf(path)) {
      images.push_back(path.string());
    }
  }
  std::sort(images.begin(), images.end());

  std::set<std::string> targets, used;  // every target any archive holds; archives some wrapper takes code from
  std::vector<std::string> unreadable;
  for (const auto& [real, path] : archives) {
    auto binary = FatBinary::open(path, options);
    if (!binary) {
      unreadable.push_back(binary.error().message());
      continue;
    }
    for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
      for (const auto& member : binary->kpack_members(i)->members) targets.emplace(member.toc().target);
    }
  }

  bool ok = unreadable.empty();
  std::size_t kpacked = 0;
  out.begin_object();
  out.field("directory", dir);
  out.begin_array("binaries");
  for (const std::string& image : images) {
    auto binary = FatBinary::open(image, options);
    if (!binary || !binary->layout().kpack_ref) continue;  // not a kpack'd image (or no HIP image at all)
    ++kpacked;
    const std::size_t wrappers = binary->bundles().size();
    out.begin_object();
    out.field("file", image);
    out.field("wrappers", wrappers);
    out.text_field("wrapper_count", count_of(wrappers, "HIPK wrapper"));
    out.text("{file}: {wrapper_count}\n");
    out.begin_array("targets");
    for (const std::string& target : targets) {
      std::vector<std::size_t> nothing, refused;
      for (std::size_t w = 0; w < wrappers; ++w) {
        bool has = false, trusted = false;
        for (const auto& member : binary->kpack_members(w)->members) {
          if (member.toc().target != target) continue;
          has = true;
          trusted = trusted || member.refused.empty();
          used.insert(canonical(member.file->path));
        }
        if (!has) nothing.push_back(w);
        if (has && !trusted) refused.push_back(w);
      }
      out.begin_object();
      out.field("target", target);
      out.field("nothing", ranges(nothing));
      out.field("ambiguous", ranges(refused));
      out.text_field("nothing_count", count_of(nothing.size(), "wrapper"));
      out.text_field("ambiguous_count", count_of(refused.size(), "wrapper"));
      if (nothing.empty() && refused.empty()) {
        out.text("  {target}: every wrapper has code\n");
      } else {
        ok = false;
        if (!nothing.empty()) out.text("  {target}: no code for {nothing_count}: {nothing}\n");
        if (!refused.empty()) out.text("  {target}: only ambiguous code for {ambiguous_count}: {ambiguous}\n");
      }
      out.end_object();
    }
    out.end_array();
    out.begin_array("warnings");
    for (const std::string& warning : binary->layout().warnings) {
      out.field("", warning);
      out.text("  warning: {}\n");
    }
    out.end_array();
    out.end_object();
  }
  out.end_array();
  out.begin_array("unused_archives");
  for (const auto& [real, path] : archives) {
    if (used.count(real)) continue;
    ok = false;
    out.field("", path);
    out.text("archive {} gives no kpack'd binary of the tree code\n");
  }
  out.end_array();
  out.begin_array("unreadable_archives");
  for (const std::string& message : unreadable) {
    out.field("", message);
    out.text("unreadable archive: {}\n");
  }
  out.end_array();
  out.field("kpacked_binaries", kpacked);
  out.field("archives", archives.size());
  out.field("ok", ok);
  out.text("{directory}: {kpacked_binaries} kpack'd binaries, {archives} archives: " +
           std::string(ok ? "ok" : "problems found") + "\n");
  out.end_object();
  out.finish();
  return ok ? kExitOk : kExitInputError;
}

}  // namespace coload::cli
