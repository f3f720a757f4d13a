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

LoadedKernel loaded_kernel(const Kernel& kernel, std::uint64_t handle) {
  LoadedKernel loaded;
  loaded.name = kernel.name;
  loaded.symbol = kernel.symbol;
  loaded.handle = handle;
  loaded.kernarg_segment_size = kernel.kernarg_segment_size;
  loaded.kernarg_segment_align = kernel.kernarg_segment_align;
  loaded.explicit_kernarg_size = kernel.layout.explicit_size;
  loaded.group_segment_size = kernel.group_segment_fixed_size;
  loaded.private_segment_size = kernel.private_segment_fixed_size;
  loaded.dynamic_callstack =
      kernel.uses_dynamic_stack.value_or(kernel.descriptor && kernel.descriptor->uses_dynamic_stack());
  return loaded;
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
