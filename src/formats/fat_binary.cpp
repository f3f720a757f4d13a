#include "coload/fat_binary.h"

#include "common/bytes.h"
#include "common/try.h"
#include "formats/file_group.h"
#include "formats/kpack_bundles.h"

namespace coload {

Expected<FatBinary> FatBinary::open(const std::string& path, const ReadOptions& options) {
  auto source = Source::map_file(path);
  COLOAD_RETURN_IF_ERROR(source);
  return locate(std::move(*source), options);
}

Expected<FatBinary> FatBinary::from_memory(std::span<const std::byte> bytes, std::string name,
                                           const ReadOptions& options) {
  return locate(Source::borrow(bytes, std::move(name)), options);
}

Expected<FatBinary> FatBinary::locate(Source source, const ReadOptions& options) {
  auto layout = inspect_source(source.bytes());
  if (!layout) return std::move(layout).error().in_file(source.name());
  if (layout->kind == SourceKind::KpackArchive) return locate_kpack(std::move(source), std::move(*layout), options);
  auto bundles = scan_bundles(source.reader(), *layout, options);
  if (!bundles) return std::move(bundles).error().in_file(source.name());
  std::string name = source.name();
  std::vector<File> files;
  files.push_back({std::move(source), std::move(*layout)});
  std::vector<Origin> origins(bundles->size());
  return FatBinary(std::move(name), std::move(files), std::move(*bundles), std::move(origins), options);
}

Expected<FatBinary> FatBinary::locate_kpack(Source source, SourceLayout layout, const ReadOptions& options) {
  auto kpack = detail::kpack_bundles(source, layout, options);
  if (!kpack) return std::move(kpack).error().in_file(source.name());
  std::string name = source.name();
  std::vector<Origin> origins;
  for (std::size_t i = 0; i < kpack->bundles.size(); ++i) origins.push_back({.file = 0, .key = i});
  std::vector<File> files;
  files.push_back({std::move(source), std::move(layout), std::move(kpack->archive)});
  return FatBinary(std::move(name), std::move(files), std::move(kpack->bundles), std::move(origins), options);
}

FatBinary::KpackKey FatBinary::kpack_key(std::size_t index) const {
  if (index >= origins_.size()) return {};
  return {files_[origins_[index].file].archive, origins_[index].key};
}

const std::string& FatBinary::file(std::size_t index, std::optional<std::size_t> entry) const {
  if (index >= origins_.size() || files_.size() == 1) return name_;
  const Origin& origin = origins_[index];
  if (!origin.group) return files_[origin.file].source.name();
  if (!entry || *entry >= origin.group->files.size()) return name_;
  return files_[origin.group->files[*entry]].source.name();
}

Expected<Bundle> FatBinary::read_only(std::size_t index, std::optional<std::size_t> entry) const {
  if (index >= bundles_.size() || !files_[origins_[index].file].archive) return read(index);
  const File& file = files_[origins_[index].file];
  const detail::kpack::Archive& archive = *file.archive;
  std::vector<detail::KpackPart> parts(archive.binaries()[origins_[index].key].count, detail::KpackPart::Nothing);
  if (entry && *entry < parts.size()) parts[*entry] = detail::KpackPart::Whole;
  auto bundle = detail::read_kpack_bundle(file.archive, bundles_[index], origins_[index].key, parts);
  if (!bundle) return std::move(bundle).error().in_bundle(index).in_file(file.source.name());
  return bundle;
}

Error FatBinary::at_bundle(Error error, std::size_t index) const {
  const Origin* origin = index < origins_.size() ? &origins_[index] : nullptr;
  if (!origin || !origin->group) return std::move(error).in_bundle(index).in_file(file(index));
  // The files a group's report is about: its entry IDs name only targets.
  constexpr std::size_t kListed = 8;
  const Group& group = *origin->group;
  std::string view = " (";
  for (std::size_t i = 0; i < group.kernels.size() && i < 3; ++i) view += (i ? ", " : "") + group.kernels[i];
  if (group.kernels.size() > 3) view += ", +" + std::to_string(group.kernels.size() - 3) + " kernels";
  view += group.kernels.empty() ? "no kernels in " : " in ";
  for (std::size_t i = 0; i < group.files.size() && i < kListed; ++i) {
    view += (i ? ", " : "") + files_[group.files[i]].source.name();
  }
  if (group.files.size() > kListed) view += ", and " + std::to_string(group.files.size() - kListed) + " more";
  return std::move(error).in_bundle(index, std::nullopt, view + ")").in_file(name_);
}

Expected<Bundle> FatBinary::read(std::size_t index) const {
  if (index >= bundles_.size()) {
    return Error(ErrorKind::InvalidArgument, "does not exist (the input has " + std::to_string(bundles_.size()) + ")")
        .in_bundle(index)
        .in_file(name_);
  }
  const Origin& origin = origins_[index];
  if (origin.group) {
    // Each file is one entry, viewed in place; the group owns the IDs.
    std::vector<BundleEntry> entries;
    entries.reserve(origin.group->files.size());
    for (std::size_t i = 0; i < origin.group->files.size(); ++i) {
      std::span<const std::byte> bytes = files_[origin.group->files[i]].source.bytes();
      entries.push_back({.id = origin.group->ids[i], .offset = 0, .size = bytes.size(), .bytes = bytes});
    }
    return Bundle(bundles_[index], std::move(entries), {}, origin.group);
  }
  const File& file = files_[origin.file];
  if (file.archive) {
    auto bundle = detail::read_kpack_bundle(file.archive, bundles_[index], origin.key);
    if (!bundle) return std::move(bundle).error().in_bundle(index).in_file(file.source.name());
    return bundle;
  }
  const Source& source = file.source;
  auto bundle = read_bundle(source.reader(), bundles_[index], options_);
  if (!bundle) return std::move(bundle).error().in_file(source.name());
  return bundle;
}

}  // namespace coload
