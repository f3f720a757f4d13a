#include <algorithm>
#include <charconv>

#include "coload/device.h"

namespace coload {

bool Device::accepts_code_object_version(unsigned version) const {
  return std::find(code_object_versions.begin(), code_object_versions.end(), version) != code_object_versions.end();
}

Expected<std::vector<unsigned>> parse_code_object_versions(std::string_view text) {
  std::vector<unsigned> versions;
  while (true) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    unsigned version = 0;
    auto [end, status] = std::from_chars(item.data(), item.data() + item.size(), version);
    if (item.empty() || status != std::errc() || end != item.data() + item.size() || version < 3 || version > 6) {
      return Error(ErrorKind::InvalidArgument, "code object version '" + std::string(item) + "' in '" +
                                                   std::string(text) + "' is not one of 3, 4, 5, 6");
    }
    versions.push_back(version);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  return versions;
}

Expected<Device> device_from_spec(std::string_view spec, const DeviceOverrides& overrides) {
  auto target = TargetId::parse(spec);
  if (!target) return std::move(target).error().with_context("device spec");
  const Processor& processor = *target->processor;
  if (processor.is_generic) {
    return Error(ErrorKind::InvalidArgument, "device spec '" + std::string(spec) + "': " +
                                                 std::string(processor.name) +
                                                 " is a generic target, not a device; name a processor");
  }
  Device device;
  device.target = *target;
  if (device.target.xnack == FeatureState::Any) device.target.xnack = processor.default_xnack;
  if (device.target.sramecc == FeatureState::Any) device.target.sramecc = processor.default_sramecc;
  device.lds_bytes = overrides.lds_bytes.value_or(processor.lds_bytes);
  device.wave_sizes = processor.wave_sizes;
  if (overrides.code_object_versions) {
    if (overrides.code_object_versions->empty()) {
      return Error(ErrorKind::InvalidArgument, "device spec '" + std::string(spec) + "': no code object version accepted");
    }
    for (unsigned version : *overrides.code_object_versions) {
      if (version < 3 || version > 6) {
        return Error(ErrorKind::InvalidArgument, "device spec '" + std::string(spec) + "': code object version " +
                                                     std::to_string(version) + " is not one of 3, 4, 5, 6");
      }
    }
    device.code_object_versions = *overrides.code_object_versions;
    std::sort(device.code_object_versions.begin(), device.code_object_versions.end());
  }
  device.asic_revision = overrides.asic_revision;
  device.extended_isa_compat = overrides.extended_isa_compat;
  return device;
}

}  // namespace coload
