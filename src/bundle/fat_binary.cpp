#include "coload/fat_binary.h"

namespace coload {

Expected<FatBinary> FatBinary::open(const std::string& path, const ReadOptions& options) {
  auto source = Source::map_file(path);
  if (!source) return std::move(source).error();
  return locate(std::move(*source), options);
}

Expected<FatBinary> FatBinary::from_memory(std::span<const std::byte> bytes, std::string name,
                                           const ReadOptions& options) {
  return locate(Source::borrow(bytes, std::move(name)), options);
}

Expected<FatBinary> FatBinary::locate(Source source, const ReadOptions& options) {
  auto layout = inspect_source(source.bytes());
  if (!layout) return std::move(layout).error().in_file(source.name());
  auto bundles = scan_bundles(source.reader(), *layout, options);
  if (!bundles) return std::move(bundles).error().in_file(source.name());
  return FatBinary(std::move(source), std::move(*layout), std::move(*bundles), options);
}

Expected<Bundle> FatBinary::read(std::size_t index) const {
  if (index >= bundles_.size()) {
    return Error(ErrorKind::InvalidArgument, "does not exist (the input has " + std::to_string(bundles_.size()) + ")")
        .in_bundle(index)
        .in_file(source_.name());
  }
  auto bundle = read_bundle(source_.reader(), bundles_[index], options_);
  if (!bundle) return std::move(bundle).error().in_file(source_.name());
  return bundle;
}

}  // namespace coload
