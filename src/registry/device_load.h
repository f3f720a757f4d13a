// Internal: one (binary, device) load of the registry (registry.cpp): the
// pipeline's choice in every bundle (coload/pipeline.h), each bundle read
// through the registry's ImageCache, each chosen code object transformed
// where its tier asks (transform.cpp), admitted, loaded, and its kernels
// indexed. Runs once per pair, under the pair's DeviceSlot mutex.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/detail/hotswap.h"
#include "coload/device.h"
#include "coload/pipeline.h"
#include "coload/runtime.h"
#include "registry/binary_state.h"
#include "registry/registry_state.h"

namespace coload::registry {

/// What a load uses of its registry; all of it outlives the load.
struct LoadContext {
  Runtime& runtime;
  const std::vector<Device>& devices;
  const HotswapRegistry& hotswap;
  const std::optional<Error>& hotswap_error;  ///< set: the hotswap passes could not be built, every load fails
  const ChooseOptions& choose;                ///< select, stream and thread options
  std::uint64_t max_kept_bytes;               ///< ReadOptions::max_decompressed_bytes
  ImageCache& images;
  Counters& counters;
  const Log& log;
};

/// Loads every bundle of `binary` (opened) that fits device `index` into
/// `state` and indexes its kernels; on failure nothing stays loaded,
/// state.error is set and the failure is logged at warn.
/// For a HIPK wrapper, `registered` (the kernels its host stubs name) must
/// all be in what was loaded, or the load fails (Ambiguous).
void load_device(const LoadContext& context, Binary& binary, std::size_t index, DeviceState& state,
                 std::span<const std::string> registered = {});

}  // namespace coload::registry
