// kpack_pack: packs the device code objects of bundle files into kpack
// archives with the test-side writer (kpack_writer.h), as rocm-kpack's
// packer does (used by tests/fixtures/kpack_fixtures.sh).
//
//   kpack_pack --scheme none|zstd-per-kernel (--out FILE | --split DIR) [--group NAME] KEY=FILE...
//
// Each FILE (a plain or compressed bundle file, a host image, or a bare code
// object) is opened with coload's FatBinary and every entry of every bundle
// whose ID has a "--" (not host-*) is stored, in file order, under its target
// key (the ID after its last "--") with metadata.target = the entry ID and
// metadata.source_prefix = NAME. Binary keys: a KEY with a '#' is used as it
// is; otherwise the entries are numbered per target across the file's bundles,
// as the packer does (artifact_splitter.py: the first gfx90a entry is KEY#0,
// the next gfx90a entry, in whatever bundle, KEY#1).
// --out writes one archive (gfx_arches: its targets in first-use order);
// --split writes one per target, DIR/<NAME>_<target>.kpack with gfx_arches =
// [target] and gfx_arch_family = target, as TheRock does. NAME defaults to "test".
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "coload/fat_binary.h"
#include "kpack_writer.h"

namespace {

namespace kpack = coload::testing::kpack;

int usage(const char* argv0) {
  std::fprintf(
      stderr, "usage: %s --scheme none|zstd-per-kernel (--out FILE | --split DIR) [--group NAME] KEY=FILE...\n", argv0);
  return 2;
}

bool write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

/// Appends the device entries of `path` under `key` to `objects`; false (with a message) on an unreadable file.
bool add_file(const std::string& key, const std::string& path, const std::string& group,
              std::vector<kpack::Object>& objects) {
  auto binary = coload::FatBinary::open(path);
  if (!binary) {
    std::fprintf(stderr, "kpack_pack: %s\n", binary.error().message().c_str());
    return false;
  }
  std::map<std::string, unsigned> next_index;  // per target, across the file's bundles
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    auto bundle = binary->read(i);
    if (!bundle) {
      std::fprintf(stderr, "kpack_pack: %s\n", bundle.error().message().c_str());
      return false;
    }
    for (const coload::BundleEntry& entry : bundle->entries()) {
      const std::string id(entry.id);
      if (id.starts_with("host-") || id.find("--") == std::string::npos) continue;
      const std::string target = kpack::target_of(id);
      const std::string name =
          key.find('#') != std::string::npos ? key : key + "#" + std::to_string(next_index[target]++);
      objects.push_back({name, target, std::vector<std::byte>(entry.bytes.begin(), entry.bytes.end()), id, group});
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kpack::Options options;
  bool have_scheme = false;
  std::string out, split;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--scheme") {
      const char* v = value();
      if (!v) return usage(argv[0]);
      const std::string_view scheme = v;
      if (scheme == "none") {
        options.scheme = kpack::Scheme::None;
      } else if (scheme == "zstd-per-kernel") {
        options.scheme = kpack::Scheme::ZstdPerKernel;
      } else {
        return usage(argv[0]);
      }
      have_scheme = true;
    } else if (arg == "--out" || arg == "--split" || arg == "--group") {
      const char* v = value();
      if (!v) return usage(argv[0]);
      (arg == "--out" ? out : arg == "--split" ? split : options.group_name) = v;
    } else if (std::size_t eq = arg.find('='); eq != std::string_view::npos && eq > 0 && !arg.starts_with("-")) {
      inputs.emplace_back(std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1)));
    } else {
      return usage(argv[0]);
    }
  }
  if (!have_scheme || inputs.empty() || out.empty() == split.empty()) return usage(argv[0]);

  try {
    std::vector<kpack::Object> objects;
    for (const auto& [key, path] : inputs) {
      if (!add_file(key, path, options.group_name, objects)) return 1;
    }
    if (objects.empty()) {
      std::fprintf(stderr, "kpack_pack: no device code objects in the inputs\n");
      return 1;
    }
    if (!out.empty()) return write_file(out, kpack::write(objects, options)) ? 0 : 1;
    std::vector<std::string> targets;
    for (const kpack::Object& object : objects) {
      if (std::find(targets.begin(), targets.end(), object.target) == targets.end()) targets.push_back(object.target);
    }
    for (const std::string& target : targets) {
      std::vector<kpack::Object> mine;
      for (const kpack::Object& object : objects) {
        if (object.target == target) mine.push_back(object);
      }
      kpack::Options one = options;
      one.gfx_arches = std::vector<std::string>{target};
      one.gfx_arch_family = target;
      const std::filesystem::path path = std::filesystem::path(split) / (options.group_name + "_" + target + ".kpack");
      if (!write_file(path, kpack::write(mine, one))) {
        std::fprintf(stderr, "kpack_pack: cannot write %s\n", path.c_str());
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kpack_pack: %s\n", error.what());
    return 1;
  }
}
