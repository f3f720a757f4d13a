// coload/device.h: what coload knows of a device it selects and validates for.
//
// Covers: the device description and building one from a spec string for
// offline use ("gfx942", "gfx942:sramecc+:xnack-") with table defaults and
// overrides. Runtimes (HSA, HIP) build descriptions from their own queries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"
#include "coload/target.h"

namespace coload {

/// A device, as the selector and validator see it.
struct Device {
  /// Concrete: every feature the processor supports is On or Off.
  TargetId target;
  /// Bytes of LDS a work-group may use; 0 when unknown.
  std::uint64_t lds_bytes = 0;
  std::uint8_t wave_sizes = 0;  ///< WaveSize mask
  /// Code object versions the runtime loads, ascending.
  std::vector<unsigned> code_object_versions{4, 5, 6};
  /// HSA_AMD_AGENT_INFO_ASIC_REVISION where known.
  std::optional<std::uint32_t> asic_revision;
  /// Opt-in same-ISA equivalence (isa-matching.md section 5) for this device.
  bool extended_isa_compat = false;

  std::string str() const { return target.str(); }
  bool accepts_code_object_version(unsigned version) const;
};

/// Overrides for a spec string; unset fields come from the processor table.
struct DeviceOverrides {
  std::optional<std::uint64_t> lds_bytes;
  std::optional<std::vector<unsigned>> code_object_versions;
  std::optional<std::uint32_t> asic_revision;
  bool extended_isa_compat = false;
};

/// A device from a target ID spec. Features left out take the table's device
/// default (xnack off; sramecc on where the processor has it). Errors:
/// InvalidArgument for a generic target (not a device), an empty version
/// list or an unknown code object version, plus the errors of TargetId::parse.
Expected<Device> device_from_spec(std::string_view spec, const DeviceOverrides& overrides = {});

/// Parses "4,5,6" into ascending unique versions, each 3..6 (what coload reads).
/// Errors: InvalidArgument naming the bad item.
Expected<std::vector<unsigned>> parse_code_object_versions(std::string_view text);

}  // namespace coload
