#include "target/processors.h"

namespace coload::detail {
namespace {

constexpr ProcessorRow kProcessors[] = {
#define COLOAD_PROCESSOR(name, mach, in_llvm22) ProcessorRow{name, mach, in_llvm22},
#include "target/processors.def"
#undef COLOAD_PROCESSOR
};

}  // namespace

std::span<const ProcessorRow> processor_table() { return kProcessors; }

std::optional<std::string_view> processor_for_mach(std::uint32_t mach) {
  for (const ProcessorRow& row : kProcessors) {
    if (row.mach == mach) return row.name;
  }
  return std::nullopt;
}

}  // namespace coload::detail
