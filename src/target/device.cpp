#include <algorithm>
#include <charconv>
#include <optional>

#include "coload/device.h"
#include "common/try.h"
#include "target/isa_name.h"

namespace coload {

bool Device::accepts_code_object_version(unsigned version) const {
  return std::find(code_object_versions.begin(), code_object_versions.end(), version) != code_object_versions.end();
}

std::string Device::code_object_versions_text() const {
  std::string text;
  for (unsigned version : code_object_versions) text += (text.empty() ? "" : ", ") + std::to_string(version);
  return text;
}

Expected<std::vector<unsigned>> parse_code_object_versions(std::string_view text) {
  const std::string_view whole = text;
  std::vector<unsigned> versions;
  while (true) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    unsigned version = 0;
    auto [end, status] = std::from_chars(item.data(), item.data() + item.size(), version);
    if (item.empty() || status != std::errc() || end != item.data() + item.size() || version < 3 || version > 6) {
      // Offset: the item's position in the text; value: the version, when it is a number.
      std::optional<std::uint64_t> number;
      if (!item.empty() && status == std::errc() && end == item.data() + item.size()) number = version;
      return Error(ErrorKind::InvalidArgument, "code object version '" + std::string(item) + "' in '" +
                                                   std::string(text) + "' is not one of 3, 4, 5, 6")
          .at_field("code_object_versions", static_cast<std::uint64_t>(item.data() - whole.data()), number);
    }
    versions.push_back(version);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  return versions;
}

namespace {

// A device's target ID as a runtime or a user writes it: the ISA-name prefix
// (rocminfo, hsa_isa_get_info) is dropped. `xnack+` on a processor whose
// xnack is always on (which clang's target IDs cannot write) is kept as On:
// a runtime that names the device so also knows objects named so
// (docs/selection.md, "Always-on xnack").
Expected<TargetId> parse_device_target(std::string_view text) {
  std::string_view id = text.starts_with(detail::kIsaNamePrefix) ? text.substr(detail::kIsaNamePrefix.size()) : text;
  std::string_view name = id.substr(0, id.find(':'));
  const Processor* processor = find_processor(name);
  std::string without_xnack;
  bool xnack_named = false;
  if (processor && processor->xnack == XnackSupport::AlwaysOn) {
    without_xnack = name;
    std::string_view rest = id.substr(name.size());
    while (!rest.empty()) {
      std::size_t next = rest.find(':', 1);
      std::string_view token = rest.substr(0, next);
      if (token != ":xnack+") without_xnack += token;
      xnack_named = xnack_named || token == ":xnack+";
      rest.remove_prefix(token.size());
    }
    id = without_xnack;
  }
  auto target = TargetId::parse(id);
  COLOAD_RETURN_IF_ERROR(target);
  if (xnack_named) target->xnack = FeatureState::On;
  if (target->processor->is_generic) {
    return Error(ErrorKind::InvalidArgument, "target ID '" + std::string(id) + "' names the generic target " +
                                                 std::string(target->processor_name()) +
                                                 ", not a device; name a processor")
        .at_field("processor", 0);
  }
  return target;
}

}  // namespace

Expected<TargetId> device_target_from_runtime(std::string_view name) {
  auto target = parse_device_target(name);
  COLOAD_RETURN_IF_ERROR(target);
  // ROCr names every mode a device has; what it leaves out the device lacks.
  if (target->xnack == FeatureState::Any) target->xnack = FeatureState::Unsupported;
  if (target->sramecc == FeatureState::Any) target->sramecc = FeatureState::Unsupported;
  return target;
}

Expected<Device> device_from_spec(std::string_view spec, const DeviceOverrides& overrides) {
  auto target = parse_device_target(spec);
  if (!target) return std::move(target).error().with_context("device spec");
  const Processor& processor = *target->processor;
  Device device;
  device.target = *target;
  if (device.target.xnack == FeatureState::Any) device.target.xnack = processor.default_xnack;
  if (device.target.sramecc == FeatureState::Any) device.target.sramecc = processor.default_sramecc;
  device.lds_bytes = overrides.lds_bytes.value_or(processor.lds_bytes);
  device.wave_sizes = processor.wave_sizes;
  if (overrides.code_object_versions) {
    if (overrides.code_object_versions->empty()) {
      return Error(ErrorKind::InvalidArgument,
                   "device spec '" + std::string(spec) + "': no code object version accepted")
          .at_field("code_object_versions", std::nullopt);
    }
    for (unsigned version : *overrides.code_object_versions) {
      if (version < 3 || version > 6) {
        return Error(ErrorKind::InvalidArgument, "device spec '" + std::string(spec) + "': code object version " +
                                                     std::to_string(version) + " is not one of 3, 4, 5, 6")
            .at_field("code_object_versions", std::nullopt, version);
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
