// load/loaded_module.cpp: what every LoadedModule shares, whatever its runtime.
#include "coload/runtime.h"

namespace coload {

const LoadedKernel* LoadedModule::find(std::string_view name) const {
  for (const LoadedKernel& kernel : kernels()) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

}  // namespace coload
