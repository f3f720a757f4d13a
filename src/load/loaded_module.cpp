// load/loaded_module.cpp: what every LoadedModule shares, whatever its runtime.
#include "load/loaded_module.h"

#include <string>

#include "coload/runtime.h"

namespace coload {

const LoadedKernel* LoadedModule::find(std::string_view name) const {
  for (const LoadedKernel& kernel : kernels()) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

Error global_not_found(const CodeObject& code_object, std::string_view name, std::string_view cause) {
  std::string message = "global variable \"" + std::string(name) + "\" not found in the code object for " +
                        code_object.target().target.str() + " (" + std::to_string(code_object.variables().size()) +
                        " variables)";
  for (const Kernel& kernel : code_object.kernels()) {
    if (kernel.name == name || kernel.symbol == name) {
      message += ": it names kernel \"" + kernel.name + "\", not a variable";
      break;
    }
  }
  if (!cause.empty()) message += ": " + std::string(cause);
  return Error(ErrorKind::NotFound, std::move(message));
}

}  // namespace coload
