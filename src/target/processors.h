// Internal: the processor table of processors.def, looked up by
// EF_AMDGPU_MACH. Our own table instead of LLVM's getAMDGPUCPUName, which
// hits llvm_unreachable for values it does not know.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace coload::detail {

/// One row of processors.def.
struct ProcessorRow {
  std::string_view name;
  std::uint32_t mach;
  bool in_llvm22;  ///< LLVM 22.1 knows this processor (tests check it against LLVM)
};

/// Every row, in EF_AMDGPU_MACH order.
std::span<const ProcessorRow> processor_table();

/// The processor an EF_AMDGPU_MACH value names, or nullopt for an unknown,
/// reserved or retired value.
std::optional<std::string_view> processor_for_mach(std::uint32_t mach);

}  // namespace coload::detail
