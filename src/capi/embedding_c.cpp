// The C API's entry points for runtimes that embed coload (coload/coload.h):
// registering from a __hip_fatbin_wrapper, measuring an image in place, and
// kernels looked up by their host stubs.
#include <cstddef>
#include <span>

#include "capi/c_boundary.h"
#include "coload/coload.h"
#include "coload/detail/registry_copies.h"
#include "coload/detail/wrapper.h"
#include "coload/registry.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

extern "C" {

coload_status coload_register_wrapper(coload_registry* registry, const void* wrapper, const char* name,
                                      coload_binary* out) {
  return register_binary(__func__, registry, out, wrapper, "wrapper",
                         [&](coload::Registry& cxx) { return cxx.register_wrapper(wrapper, name ? name : ""); });
}

coload_status coload_bundle_size(const void* bytes, size_t available, size_t* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = 0;
    if (!bytes) return null_argument(function, "bytes");
    if (available == COLOAD_AVAILABLE_MAPPED) {
      // Memory given without a size is measured through checked reads (docs/reading-rules.md).
      auto mapped = coload::readable_bytes_at(bytes);
      if (!mapped) return fail(mapped.error());
      auto image = coload::measured_in_place(*mapped);
      if (!image) return fail(image.error());
      *out = image->size();
      return ok();
    }
    auto image = coload::measure_image(std::span(static_cast<const std::byte*>(bytes), available));
    if (!image) return fail(image.error());
    *out = image->size;
    return ok();
  });
}

coload_status coload_register_function(coload_registry* registry, coload_binary binary, const void* host_stub,
                                       const char* device_name) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!host_stub) return null_argument(function, "host_stub");
    if (!device_name) return null_argument(function, "device_name");
    auto registered = cxx->register_function(coload::BinaryHandle{binary}, host_stub, device_name);
    if (!registered) return fail(registered.error());
    return ok();
  });
}

coload_status coload_lookup_function(coload_registry* registry, const void* host_stub, size_t device,
                                     coload_kernel_info* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (coload_status status = check_kernel_info(function, out); status != COLOAD_OK) return status;
    if (!host_stub) return null_argument(function, "host_stub");
    auto kernel = coload::detail::RegistryCopies::function(*cxx, host_stub, device);
    if (!kernel) return fail(kernel.error());
    fill_kernel_info(*kernel, out);
    return ok();
  });
}

coload_status coload_check_function_dispatch(coload_registry* registry, const void* host_stub, size_t device,
                                             uint64_t kernarg_bytes, uint64_t dynamic_lds,
                                             const uint32_t* workgroup_size) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!host_stub) return null_argument(function, "host_stub");
    auto checked =
        cxx->check_function_dispatch(host_stub, device, dispatch_of(kernarg_bytes, dynamic_lds, workgroup_size));
    if (!checked) return fail(checked.error());
    return ok();
  });
}

}  // extern "C"
