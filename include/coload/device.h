// coload/device.h: what coload knows of a device it selects and validates for.
//
// Covers: the device description and building one from a spec string for
// offline use ("gfx942", "gfx942:sramecc+:xnack-") with table defaults and
// overrides. Does not cover: the runtimes' own queries, which build
// descriptions too (coload/runtime.h, docs/loading.md).
//
// Ownership and threads: a Device is a value; the functions share no state.
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
  /// Every feature the processor supports is On or Off, or Unsupported
  /// where the runtime reports no mode for it (gfx90c under current ROCr).
  TargetId target;
  /// Bytes of LDS a work-group may use; 0 when unknown.
  std::uint64_t lds_bytes = 0;
  std::uint8_t wave_sizes = 0;  ///< WaveSize mask
  /// Code object versions coload offers the runtime, ascending: those from v4
  /// on that its release loads (every ROCr and HIP also loads v2 and v3;
  /// offering v4 on is coload's policy: docs/loading.md, "HSA releases").
  std::vector<unsigned> code_object_versions{4, 5, 6};
  /// Whether the runtime loads generic code objects (ROCr from ROCm 6.4,
  /// HIP from 6.4: docs/loading.md, "HSA releases" and "HIP releases").
  bool loads_generic = true;
  /// The runtime release these limits come from, as refusals name it
  /// ("ROCr 1.14.60200 (ROCm 6.2)"); empty for a device from a spec.
  std::string runtime_release;
  /// HSA_AMD_AGENT_INFO_ASIC_REVISION where known.
  std::optional<std::uint32_t> asic_revision;
  /// Opt-in same-ISA equivalence (docs/selection.md) for this device.
  bool extended_isa_compat = false;

  std::string str() const { return target.str(); }
  bool accepts_code_object_version(unsigned version) const;
  /// code_object_versions as refusals print them: "4, 5, 6".
  std::string code_object_versions_text() const;
  /// runtime_release, or "the runtime" without one.
  std::string runtime_name() const { return runtime_release.empty() ? "the runtime" : runtime_release; }

  /// Every field equal: the two devices are judged alike by selection.
  friend bool operator==(const Device&, const Device&) = default;
};

/// Overrides for a spec string; unset fields come from the processor table.
struct DeviceOverrides {
  std::optional<std::uint64_t> lds_bytes;
  std::optional<std::vector<unsigned>> code_object_versions;
  std::optional<std::uint32_t> asic_revision;
  bool extended_isa_compat = false;
};

/// A device from a target ID spec ("gfx942:sramecc+:xnack-", or the ISA name
/// "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" that rocminfo prints). Features
/// left out take the table's device default (xnack off; sramecc on where the
/// processor has it; no xnack mode for gfx902/gfx909/gfx90c, which ROCr
/// reports bare). `xnack+` on gfx1250/gfx1251 is accepted as redundant.
/// Errors: InvalidArgument for a generic target (not a device), an empty
/// version list or an unknown code object version, plus the errors of
/// TargetId::parse.
Expected<Device> device_from_spec(std::string_view spec, const DeviceOverrides& overrides = {});

/// The target of a device as a runtime names it: an HSA ISA name without its
/// "amdgcn-amd-amdhsa--" prefix, or HIP's gcnArchName. A feature the name
/// leaves out is one the device reports no mode for (Unsupported), so only
/// code leaving it Any fits, as in ROCr, which reports gfx902, gfx909 and
/// gfx90c bare (docs/selection.md, "Device defaults"). Errors: those of TargetId::parse, and
/// InvalidArgument for a generic target.
Expected<TargetId> device_target_from_runtime(std::string_view name);

/// Parses "4,5,6" into ascending unique versions, each 3..6 (what coload reads).
/// Errors: InvalidArgument naming the bad item.
Expected<std::vector<unsigned>> parse_code_object_versions(std::string_view text);

}  // namespace coload
