/* A CLR-style HIP registration layer over coload's C API alone (hip_layer.h).
 *
 * clang's host code for a HIP translation unit calls, from a static
 * constructor, __hipRegisterFatBinary(&its __hip_fatbin_wrapper), then
 * __hipRegisterFunction for each kernel's host stub and __hipRegisterVar for
 * each device global; `kernel<<<grid, block, lds>>>(args)` becomes
 * __hipPushCallConfiguration, then the stub, which pops the configuration and
 * calls hipLaunchKernel(stub, ...). A static destructor calls
 * __hipUnregisterFatBinary. This layer maps each of those to coload: one
 * binary per wrapper, kernels and globals resolved within their own binary,
 * the dispatch checked before a launch. It launches nothing itself: with a GPU
 * a runtime would now write the AQL packet with kernel.handle as kernel_object. */
#include "hip_layer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hipError_t values, as HIP's hip_runtime_api.h numbers them. */
enum {
  kHipSuccess = 0,
  kHipErrorInvalidValue = 1,
  kHipErrorNotInitialized = 3,
  kHipErrorInvalidConfiguration = 9,
  kHipErrorInvalidSymbol = 13,
  kHipErrorInvalidDeviceFunction = 98,
};

typedef struct dim3 {
  uint32_t x, y, z;
} dim3;
typedef void* hipStream_t;

/* What __hipRegisterFatBinary hands back, as a void**: the module's binary. */
typedef struct hip_layer_module {
  coload_binary binary; /* 0 when the wrapper could not be registered */
} hip_layer_module;

/* A device global as __hipRegisterVar names it. */
typedef struct hip_layer_var {
  const void* host_symbol;
  coload_binary binary;
  char* name;
} hip_layer_var;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static coload_registry* registry;
static size_t launch_device;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards vars and binary_count */
static hip_layer_var* vars;
static size_t var_count, var_capacity;
static size_t binary_count;

static __thread hip_layer_launch last_launch;
static __thread int has_launched;
static __thread struct {
  dim3 grid, block;
  size_t lds;
  hipStream_t stream;
} pushed[16];
static __thread int pushed_count;

static void report(const char* what, coload_status status) {
  fprintf(stderr, "hip_layer: %s: %s: %s\n", what, coload_status_string(status), coload_last_error_message());
}

static void create_registry(void) {
  const char* runtime = getenv("HIP_LAYER_RUNTIME");
  const char* device = getenv("HIP_LAYER_DEVICE");
  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_HSA;
  if (runtime && strcmp(runtime, "hip") == 0) options.runtime = COLOAD_RUNTIME_HIP;
  if (runtime && strcmp(runtime, "dry-run") == 0) options.runtime = COLOAD_RUNTIME_DRY_RUN;
  options.dry_run_devices = getenv("HIP_LAYER_DEVICES");
  options.runtime_library = getenv("HIP_LAYER_LIBRARY");
  launch_device = device ? (size_t)strtoul(device, NULL, 10) : 0;
  coload_status status = coload_registry_create(&options, &registry);
  if (status != COLOAD_OK) {
    report("coload_registry_create", status);
    registry = NULL;
  }
}

coload_registry* hip_layer_registry(void) {
  pthread_once(&once, create_registry);
  return registry;
}

static coload_binary binary_of(void** handle) { return handle ? ((hip_layer_module*)handle)->binary : 0; }

void** __hipRegisterFatBinary(const void* wrapper) {
  hip_layer_module* module = calloc(1, sizeof *module);
  if (!module) return NULL;
  coload_registry* registered_in = hip_layer_registry();
  if (registered_in) {
    coload_status status = coload_register_wrapper(registered_in, wrapper, NULL, &module->binary);
    if (status != COLOAD_OK) {
      report("__hipRegisterFatBinary", status);
    } else {
      pthread_mutex_lock(&lock);
      ++binary_count;
      pthread_mutex_unlock(&lock);
    }
  }
  return (void**)module;
}

void __hipUnregisterFatBinary(void** handle) {
  coload_binary binary = binary_of(handle);
  if (binary != 0) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < var_count;) {
      if (vars[i].binary == binary) {
        free(vars[i].name);
        vars[i] = vars[--var_count];
      } else {
        ++i;
      }
    }
    --binary_count;
    pthread_mutex_unlock(&lock);
    coload_status status = coload_unregister(registry, binary);
    if (status != COLOAD_OK) report("__hipUnregisterFatBinary", status);
  }
  free(handle);
}

void __hipRegisterFunction(void** handle, const void* host_stub, char* device_function, const char* device_name,
                           unsigned thread_limit, void* tid, void* bid, dim3* block_dim, dim3* grid_dim,
                           int* wave_size) {
  (void)device_function, (void)thread_limit, (void)tid, (void)bid, (void)block_dim, (void)grid_dim, (void)wave_size;
  coload_binary binary = binary_of(handle);
  if (binary == 0) return;
  coload_status status = coload_register_function(registry, binary, host_stub, device_name);
  if (status != COLOAD_OK) report("__hipRegisterFunction", status);
}

void __hipRegisterVar(void** handle, char* host_variable, char* device_address, const char* device_name, int external,
                      size_t size, int constant, int global) {
  (void)device_address, (void)external, (void)size, (void)constant, (void)global;
  coload_binary binary = binary_of(handle);
  if (binary == 0) return;
  pthread_mutex_lock(&lock);
  if (var_count == var_capacity) {
    size_t capacity = var_capacity ? 2 * var_capacity : 16;
    hip_layer_var* grown = realloc(vars, capacity * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&lock);
      return;
    }
    vars = grown;
    var_capacity = capacity;
  }
  vars[var_count].host_symbol = host_variable;
  vars[var_count].binary = binary;
  vars[var_count].name = strdup(device_name);
  if (vars[var_count].name) ++var_count;
  pthread_mutex_unlock(&lock);
}

int __hipPushCallConfiguration(dim3 grid, dim3 block, size_t lds, hipStream_t stream) {
  if (pushed_count == (int)(sizeof pushed / sizeof pushed[0])) return kHipErrorInvalidConfiguration;
  pushed[pushed_count].grid = grid;
  pushed[pushed_count].block = block;
  pushed[pushed_count].lds = lds;
  pushed[pushed_count].stream = stream;
  ++pushed_count;
  return kHipSuccess;
}

int __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* lds, hipStream_t* stream) {
  if (pushed_count == 0) return kHipErrorInvalidConfiguration;
  --pushed_count;
  *grid = pushed[pushed_count].grid;
  *block = pushed[pushed_count].block;
  *lds = pushed[pushed_count].lds;
  *stream = pushed[pushed_count].stream;
  return kHipSuccess;
}

int hipLaunchKernel(const void* host_stub, dim3 grid, dim3 block, void** args, size_t lds, hipStream_t stream) {
  (void)args, (void)stream;
  hip_layer_launch launch;
  memset(&launch, 0, sizeof launch);
  launch.host_stub = host_stub;
  launch.kernel.struct_size = sizeof launch.kernel;
  launch.grid[0] = grid.x, launch.grid[1] = grid.y, launch.grid[2] = grid.z;
  launch.block[0] = block.x, launch.block[1] = block.y, launch.block[2] = block.z;
  launch.dynamic_lds = lds;
  coload_registry* launched_in = hip_layer_registry();
  if (!launched_in) {
    launch.status = kHipErrorNotInitialized;
  } else {
    coload_status status = coload_lookup_function(launched_in, host_stub, launch_device, &launch.kernel);
    if (status != COLOAD_OK) {
      report("hipLaunchKernel", status);
      launch.status = kHipErrorInvalidDeviceFunction;
    } else {
      /* The runtime packs the explicit arguments (args[i]) up to explicit_kernarg_size and fills the hidden ones. */
      status = coload_check_function_dispatch(launched_in, host_stub, launch_device,
                                              launch.kernel.explicit_kernarg_size, lds, launch.block);
      if (status != COLOAD_OK) {
        report("hipLaunchKernel", status);
        launch.status = status == COLOAD_ERROR_SIZE_MISMATCH ? kHipErrorInvalidValue : kHipErrorInvalidConfiguration;
      }
    }
  }
  last_launch = launch;
  has_launched = 1;
  return launch.status;
}

int hip_layer_last_launch(hip_layer_launch* out) {
  if (!has_launched || !out) return 1;
  *out = last_launch;
  return 0;
}

size_t hip_layer_binary_count(void) {
  pthread_mutex_lock(&lock);
  size_t count = binary_count;
  pthread_mutex_unlock(&lock);
  return count;
}

/* The global registered for `host_symbol`, looked up on the launch device. */
static int lookup_var(const void* host_symbol, uint64_t* address, size_t* size) {
  coload_binary binary = 0;
  char* name = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < var_count; ++i) {
    if (vars[i].host_symbol == host_symbol) {
      binary = vars[i].binary;
      name = strdup(vars[i].name);
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (!name) return kHipErrorInvalidSymbol;
  coload_status status = coload_lookup_global(registry, binary, launch_device, name, address, size);
  free(name);
  if (status != COLOAD_OK) {
    report("hipGetSymbol", status);
    return kHipErrorInvalidSymbol;
  }
  return kHipSuccess;
}

int hipGetSymbolAddress(void** device_pointer, const void* host_symbol) {
  uint64_t address = 0;
  size_t size = 0;
  if (!device_pointer) return kHipErrorInvalidValue;
  int status = lookup_var(host_symbol, &address, &size);
  if (status == kHipSuccess) *device_pointer = (void*)(uintptr_t)address;
  return status;
}

int hipGetSymbolSize(size_t* size, const void* host_symbol) {
  uint64_t address = 0;
  if (!size) return kHipErrorInvalidValue;
  return lookup_var(host_symbol, &address, size);
}
