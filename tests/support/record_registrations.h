/* record_registrations.h: definitions of __hipRegisterFatBinary,
 * __hipRegisterFunction, __hipRegisterVar and __hipUnregisterFatBinary that
 * record what a clang-built HIP image's constructors register, in order, so
 * a test or benchmark can replay or inspect it (docs/fixtures.md, "Template
 * library").
 *
 * Link record_registrations.c into the executable and export its symbols
 * (CMake ENABLE_EXPORTS): a HIP shared library dlopen'ed afterwards binds
 * its registration calls to these definitions, which come first in the
 * global scope. In RECORD_ONLY mode nothing else sees the calls: the
 * handles are the shim's own (the library's launches must then go nowhere:
 * dlopen it with RTLD_LAZY when no hipLaunchKernel is defined). In
 * RECORD_AND_FORWARD mode each call is also passed to the next definition
 * (dlsym RTLD_NEXT: a HIP runtime or examples/hip_layer linked after it) and
 * the handle recorded is the one that definition returned.
 *
 * Not covered: managed variables, surfaces and textures (not recorded, not
 * forwarded: the next definition receives them directly).
 *
 * Threads: every function takes one lock; the arrays the accessors return
 * stay valid until the next registration or record_registrations_start. */
#ifndef COLOAD_TESTS_RECORD_REGISTRATIONS_H
#define COLOAD_TESTS_RECORD_REGISTRATIONS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Whether calls are also passed to the next definition. */
typedef enum record_mode { RECORD_ONLY = 0, RECORD_AND_FORWARD = 1 } record_mode;

/** One __hipRegisterFatBinary call. */
typedef struct recorded_wrapper {
  const void* wrapper; /**< the __hip_fatbin_wrapper the constructor passed */
  void** handle;       /**< what the call returned to it */
  int unregistered;    /**< nonzero once __hipUnregisterFatBinary ran for it */
} recorded_wrapper;

/** One __hipRegisterFunction call. */
typedef struct recorded_function {
  size_t wrapper;          /**< index of its wrapper in record_wrappers() */
  const void* host_stub;   /**< the stub (kernel handle) launches name */
  const char* device_name; /**< the kernel's symbol, copied */
} recorded_function;

/** One __hipRegisterVar call. */
typedef struct recorded_var {
  size_t wrapper;
  const void* host_var;
  const char* device_name; /**< copied */
} recorded_var;

/* The entry points clang's host code calls, defined by record_registrations.c. */
struct dim3; /* HIP's {x, y, z}; only pointers to it pass through */
void** __hipRegisterFatBinary(const void* wrapper);
void __hipUnregisterFatBinary(void** handle);
void __hipRegisterFunction(void** handle, const void* host_stub, char* device_function, const char* device_name,
                           unsigned thread_limit, void* tid, void* bid, struct dim3* block_dim, struct dim3* grid_dim,
                           int* wave_size);
void __hipRegisterVar(void** handle, char* host_variable, char* device_address, const char* device_name, int external,
                      size_t size, int constant, int global);

/** Forgets everything recorded (freeing the shim's own handles) and sets the mode. */
void record_registrations_start(record_mode mode);
/** The wrappers registered since the start, in call order; *count their number. */
const recorded_wrapper* record_wrappers(size_t* count);
/** The functions registered since the start, in call order. */
const recorded_function* record_functions(size_t* count);
/** The variables registered since the start, in call order. */
const recorded_var* record_vars(size_t* count);
/** Calls that could not be recorded or forwarded (no memory; no next
 *  definition in RECORD_AND_FORWARD mode; an unknown handle). */
size_t record_registration_errors(void);
/** Unregisters wrapper `index` now, as its static destructor would
 *  (forwarded in RECORD_AND_FORWARD mode); the destructor's own call later
 *  is then recorded as done and not passed on. 0 on success, -1 for an
 *  index out of range or a wrapper already unregistered. */
int record_unregister(size_t index);

#ifdef __cplusplus
}
#endif

#endif /* COLOAD_TESTS_RECORD_REGISTRATIONS_H */
