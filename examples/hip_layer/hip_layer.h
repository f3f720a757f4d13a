/* hip_layer.h: what the example HIP registration layer (hip_layer.c) offers
 * besides the entry points clang's generated host code calls.
 *
 * The layer is a CLR-style runtime front end over coload's C API alone: each
 * __hip_fatbin_wrapper a static constructor hands to __hipRegisterFatBinary
 * becomes one coload binary, each __hipRegisterFunction a host stub, each
 * __hipRegisterVar a global, and hipLaunchKernel looks the stub's kernel up
 * and checks the dispatch before it would launch.
 *
 * Configuration, read once (environment):
 *   HIP_LAYER_RUNTIME  hsa (default), hip or dry-run
 *   HIP_LAYER_DEVICES  dry-run: the devices ("gfx90a,gfx1100")
 *   HIP_LAYER_LIBRARY  hsa/hip: the runtime library to open instead of the default
 *   HIP_LAYER_DEVICE   the device launches go to (default 0) */
#ifndef HIP_LAYER_H
#define HIP_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "coload/coload.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The last launch this thread made through hipLaunchKernel. */
typedef struct hip_layer_launch {
  const void* host_stub;
  coload_kernel_info kernel; /**< what coload_lookup_function gave */
  uint32_t grid[3], block[3];
  uint64_t dynamic_lds;
  int status; /**< what hipLaunchKernel returned (0 success) */
} hip_layer_launch;

/** Copies this thread's last launch into *out; 0 when there was one. */
int hip_layer_last_launch(hip_layer_launch* out);
/** The number of fat binaries registered now (wrappers registered, not yet unregistered). */
size_t hip_layer_binary_count(void);
/** The registry the layer uses (created on first use); null when it could not be. */
coload_registry* hip_layer_registry(void);

/** hipGetSymbolAddress / hipGetSymbolSize: the device address and size of the
 *  global registered for `host_symbol` (__hipRegisterVar), on the launch device. */
int hipGetSymbolAddress(void** device_pointer, const void* host_symbol);
int hipGetSymbolSize(size_t* size, const void* host_symbol);

#ifdef __cplusplus
}
#endif

#endif /* HIP_LAYER_H */
