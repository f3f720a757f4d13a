// The C API's device globals (coload/coload.h, coload_lookup_global): a
// `__device__` or `__constant__` variable of a binary on one device, as the
// runtime placed it, for a HIP-style runtime's __hipRegisterVar.
#include <string>

#include "capi/c_boundary.h"
#include "coload/coload.h"
#include "coload/runtime.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

extern "C" {

coload_status coload_lookup_global(coload_registry* registry, coload_binary binary, size_t device, const char* name,
                                   uint64_t* address, size_t* size) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!address) return null_argument(function, "address");
    if (!size) return null_argument(function, "size");
    *address = 0;
    *size = 0;
    if (!name) return null_argument(function, "name");
    auto global = cxx->lookup_global(coload::BinaryHandle{binary}, device, name);
    if (!global) return fail(global.error());
    if (global->size > SIZE_MAX) {  // only where size_t is narrower than 64 bits
      return fail(COLOAD_ERROR_OVERFLOW, std::string(function) + ": \"" + name + "\" has " +
                                             std::to_string(global->size) + " bytes, more than a size_t holds");
    }
    *address = global->address;
    *size = static_cast<size_t>(global->size);
    return ok();
  });
}

}  // extern "C"
