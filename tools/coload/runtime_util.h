// Opening a runtime by name for the `devices` and `load` commands.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "coload/device.h"
#include "coload/error.h"
#include "coload/runtime.h"

namespace coload::cli {

/// Opens "hsa" or "hip" (the libraries at their default names).
/// Errors: InvalidArgument for another name, and those of open_*_runtime.
Expected<std::unique_ptr<Runtime>> open_gpu_runtime(std::string_view name);

/// "wave32", "wave64" or "wave32,wave64".
std::string wave_sizes_text(std::uint8_t mask);

}  // namespace coload::cli
