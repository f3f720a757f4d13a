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
  if (layout->kind == SourceKind::KpackArchive || layout->kpack_ref) {
    return locate_kpack(std::move(source), std::move(*layout), options);
  }
  auto bundles = scan_bundles(source.reader(), *layout, options);
  if (!bundles) return std::move(bundles).error().in_file(source.name());
  std::string name = source.name();
  std::vector<File> files;
  files.push_back({std::move(source), std::move(*layout)});
  std::vector<Origin> origins(bundles->size());
  return FatBinary(std::move(name), std::move(files), std::move(*bundles), std::move(origins), options);
}

Expected<FatBinary> FatBinary::locate_kpack(Source source, SourceLayout layout, const ReadOptions& options) {
  auto kpack = detail::kpack_input_bundles(source, layout, options);
  if (!kpack) return std::move(kpack).error().in_file(source.name());
  std::string name = source.name();
  std::vector<BundleInfo> bundles;
  std::vector<Origin> origins;
  for (detail::KpackBundle& bundle : *kpack) {
    bundles.push_back(std::move(bundle.info));
    origins.push_back({.file = 0, .kpack = std::move(bundle.members)});
  }
  std::vector<File> files;
  files.push_back({std::move(source), std::move(layout)});
  return FatBinary(std::move(name), std::move(files), std::move(bundles), std::move(origins), options);
}

std::shared_ptr<const detail::kpack::Members> FatBinary::kpack_members(std::size_t index) const {
  return index < origins_.size() ? origins_[index].kpack : nullptr;
}

const std::string& FatBinary::file(std::size_t index, std::optional<std::size_t> entry) const {
  if (index >= origins_.size()) return name_;
  const Origin& origin = origins_[index];
  if (origin.kpack && entry && *entry < origin.kpack->members.size()) {
    const detail::kpack::Member& member = origin.kpack->members[*entry];
    if (member.file->source) return member.file->path;  // an archive a HIPK image's search found
  }
  if (files_.size() == 1) return name_;
  if (!origin.group) return files_[origin.file].source.name();
  if (!entry || *entry >= origin.group->files.size()) return name_;
  return files_[origin.group->files[*entry]].source.name();
}

Expected<Bundle> FatBinary::read_only(std::size_t index, std::optional<std::size_t> entry) const {
  if (index >= bundles_.size() || !origins_[index].kpack) return read(index);
  const Origin& origin = origins_[index];
  std::vector<detail::KpackPart> parts(origin.kpack->members.size(), detail::KpackPart::Nothing);
  if (entry && *entry < parts.size()) parts[*entry] = detail::KpackPart::Whole;
  auto bundle = detail::read_kpack_bundle(origin.kpack, bundles_[index], parts);
  if (!bundle) return std::move(bundle).error().in_bundle(index).in_file(files_[origin.file].source.name());
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
  const Source& source = files_[origin.file].source;
  if (origin.kpack) {
    auto bundle = detail::read_kpack_bundle(origin.kpack, bundles_[index]);
    if (!bundle) return std::move(bundle).error().in_bundle(index).in_file(source.name());
    return bundle;
  }
  auto bundle = read_bundle(source.reader(), bundles_[index], options_);
  if (!bundle) return std::move(bundle).error().in_file(source.name());
  return bundle;
}

}  // namespace coload
