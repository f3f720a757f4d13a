// A file set: several files opened as one binary (coload/fat_binary.h,
// FatBinary::open_files; docs/loading.md, "File sets"). Bare code objects
// with the same kernel names become one bundle (FileGroup) whose entries are
// those files; every other file adds its own bundles.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "coload/fat_binary.h"
#include "common/bytes.h"
#include "common/try.h"
#include "elf/elf_view.h"
#include "formats/file_group.h"
#include "formats/kpack_bundles.h"
#include "io/map_budget.h"
#include "llvm/BinaryFormat/ELF.h"
#include "target/elf_target.h"

namespace coload {
namespace {

/// The kernels of a bare code object: its defined, non-local `.kd`
/// descriptor symbols (what CodeObject::read turns into kernels), from the
/// ELF's header tables and symbol tables only.
Expected<std::vector<std::string>> kernel_names(std::span<const std::byte> elf) {
  auto view = detail::ElfView::open(elf);
  COLOAD_RETURN_IF_ERROR(view);
  auto layout = view->layout();
  COLOAD_RETURN_IF_ERROR(layout);
  auto symbols = detail::read_symbols(elf, *layout);
  COLOAD_RETURN_IF_ERROR(symbols);
  std::vector<std::string> names;
  for (const detail::ElfSymbol& symbol : *symbols) {
    if (symbol.type != llvm::ELF::STT_OBJECT || symbol.binding == llvm::ELF::STB_LOCAL ||
        !detail::is_real_section(symbol.shndx, *layout) || !symbol.name.ends_with(".kd")) {
      continue;
    }
    names.emplace_back(symbol.name.substr(0, symbol.name.size() - 3));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());  // .symtab and .dynsym list them both
  return names;
}

/// A bare code object of the set: its target ID and kernels.
struct BareObject {
  std::size_t file = 0;
  std::string target;
  std::vector<std::string> kernels;
};

}  // namespace

Expected<std::vector<std::string>> list_set_members(const std::string& path, const DirectoryScan& scan) {
  auto files = list_directory(path, scan);
  if (files && files->empty()) {
    std::string taken = scan.pattern.empty() ? "no file" : "no file matching \"" + scan.pattern + "\"";
    return Error(ErrorKind::NotFound, path + ": holds " + taken + (scan.recursive ? "" : " (not recursive)"));
  }
  return files;
}

Expected<FatBinary> FatBinary::open_directory(const std::string& path, const DirectoryScan& scan,
                                              const ReadOptions& options) {
  auto files = list_set_members(path, scan);
  COLOAD_RETURN_IF_ERROR(files);
  return open_files(*files, path, options);
}

Expected<FatBinary> FatBinary::open_files(std::span<const std::string> paths, std::string name,
                                          const ReadOptions& options) {
  if (paths.empty()) return Error(ErrorKind::InvalidArgument, "a file set needs at least one file");
  if (paths.size() > kMaxSetFiles) {
    return Error(ErrorKind::LimitExceeded, "a file set of " + std::to_string(paths.size()) +
                                               " files is above the limit of " + std::to_string(kMaxSetFiles))
        .at_field("files", std::nullopt, paths.size(), kMaxSetFiles);
  }
  if (name.empty()) {
    name =
        paths.size() == 1 ? paths.front() : paths.front() + " and " + std::to_string(paths.size() - 1) + " more files";
  }
  // Each member stays mapped: a set the process has no mappings left for
  // would fail at the first mmap past vm.max_map_count, after mapping and
  // reading every file before it (docs/loading.md, "File sets").
  if (auto budget = detail::map_budget(); budget && paths.size() > 1) {
    const std::uint64_t used = budget->in_use + detail::kReservedMappings;
    const std::uint64_t left = budget->max_map_count > used ? budget->max_map_count - used : 0;
    if (paths.size() > left) {
      return Error(ErrorKind::LimitExceeded, name + ": a file set of " + std::to_string(paths.size()) +
                                                 " files maps each one, but vm.max_map_count " +
                                                 std::to_string(budget->max_map_count) + " leaves " +
                                                 std::to_string(left) + " (" + std::to_string(budget->in_use) +
                                                 " mappings in use, " + std::to_string(detail::kReservedMappings) +
                                                 " kept for the rest of the process)")
          .at_field("vm.max_map_count", std::nullopt, paths.size(), left);
    }
  }
  if (paths.size() == 1) {
    auto one = open(paths.front(), options);
    if (one) one->name_ = std::move(name);
    return one;
  }
  std::vector<File> files;
  std::vector<BareObject> bare;
  // Per file, in order: its own bundles (BundleInfo with file-relative offsets) or its bare object.
  std::vector<std::vector<BundleInfo>> own(paths.size());
  std::vector<std::vector<std::shared_ptr<const detail::kpack::Members>>> own_kpack(paths.size());  // kpack inputs
  for (std::size_t i = 0; i < paths.size(); ++i) {
    auto source = Source::map_file(paths[i]);  // its errors name the path
    COLOAD_RETURN_IF_ERROR(source);
    auto layout = inspect_source(source->bytes());
    if (!layout) return std::move(layout).error().in_file(paths[i]);
    if (layout->kind == SourceKind::CodeObject) {
      auto target = detail::target_id_from_elf_header(source->bytes());
      if (!target) return std::move(target).error().in_file(paths[i]);
      auto kernels = kernel_names(source->bytes());
      if (!kernels) return std::move(kernels).error().in_file(paths[i]);
      bare.push_back({i, std::move(*target), std::move(*kernels)});
    } else if (layout->kind == SourceKind::KpackArchive || layout->kpack_ref) {
      auto kpack = detail::kpack_input_bundles(*source, *layout, options);
      if (!kpack) return std::move(kpack).error().in_file(paths[i]);
      for (detail::KpackBundle& bundle : *kpack) {
        own[i].push_back(std::move(bundle.info));
        own_kpack[i].push_back(std::move(bundle.members));
      }
    } else {
      auto bundles = scan_bundles(source->reader(), *layout, options);
      if (!bundles) return std::move(bundles).error().in_file(paths[i]);
      own[i] = std::move(*bundles);
    }
    files.push_back({std::move(*source), std::move(*layout)});
  }

  // One kernel for one target in two files: which would a device load?
  std::map<std::pair<std::string_view, std::string_view>, std::size_t> placed;
  std::map<std::vector<std::string>, std::shared_ptr<Group>> groups;  // by kernel names
  std::vector<std::shared_ptr<Group>> group_at(paths.size());         // the group a file starts
  for (const BareObject& object : bare) {
    auto clash = [&](std::string_view kernel, std::size_t other) {
      std::string what = kernel.empty() ? "a code object without kernels" : "kernel \"" + std::string(kernel) + "\"";
      return Error(ErrorKind::Ambiguous, name + ": " + what + " for target " + object.target + " is in both " +
                                             paths[other] + " and " + paths[object.file] +
                                             "; one file per kernel and target");
    };
    // No kernels: the target alone is the key, so two such objects for one target still clash.
    std::vector<std::string_view> keys(object.kernels.begin(), object.kernels.end());
    if (keys.empty()) keys.emplace_back();
    for (std::string_view kernel : keys) {
      auto [it, inserted] = placed.try_emplace({kernel, object.target}, object.file);
      if (!inserted) return clash(kernel, it->second);
    }
    std::shared_ptr<Group>& group = groups[object.kernels];
    if (!group) {
      group = std::make_shared<Group>();
      group->kernels = object.kernels;
      group_at[object.file] = group;
    }
    group->files.push_back(object.file);
    group->ids.push_back("hipv4-amdgcn-amd-amdhsa--" + object.target);
  }

  // Bundles in the order of their first file.
  std::vector<BundleInfo> bundles;
  std::vector<Origin> origins;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    for (std::size_t key = 0; key < own[i].size(); ++key) {
      own[i][key].index = bundles.size();
      bundles.push_back(std::move(own[i][key]));
      origins.push_back({.file = i, .kpack = key < own_kpack[i].size() ? own_kpack[i][key] : nullptr});
    }
    if (const std::shared_ptr<Group>& group = group_at[i]) {
      std::uint64_t size = 0;
      for (std::size_t file : group->files) size += files[file].source.bytes().size();
      bundles.push_back({.index = bundles.size(), .offset = 0, .size = size, .format = BundleFormat::FileGroup});
      origins.push_back({.file = i, .group = group});
    }
  }
  return FatBinary(std::move(name), std::move(files), std::move(bundles), std::move(origins), options);
}

}  // namespace coload
