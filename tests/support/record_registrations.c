/* Recording definitions of the HIP registration entry points
 * (record_registrations.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "record_registrations.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef void** (*register_fat_binary_fn)(const void*);
typedef void (*unregister_fat_binary_fn)(void**);
/* The next definition's types must be these exactly (UBSan's -fsanitize=function checks calls through pointers). */
typedef void (*register_function_fn)(void**, const void*, char*, const char*, unsigned, void*, void*, struct dim3*,
                                     struct dim3*, int*);
typedef void (*register_var_fn)(void**, char*, char*, const char*, int, size_t, int, int);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static record_mode mode = RECORD_ONLY;
static recorded_wrapper* wrappers;
static size_t wrapper_count, wrapper_capacity;
static recorded_function* functions;
static size_t function_count, function_capacity;
static recorded_var* vars;
static size_t var_count, var_capacity;
static size_t errors;

/* Grows *array (of `size`-byte elements) to hold one more; 0 on success. */
static int reserve_one(void** array, size_t* capacity, size_t count, size_t size) {
  if (count < *capacity) return 0;
  size_t grown = *capacity ? 2 * *capacity : 64;
  void* more = realloc(*array, grown * size);
  if (!more) return -1;
  *array = more;
  *capacity = grown;
  return 0;
}

/* The next definition of `name` after this executable's, or null. */
static void* next_definition(const char* name) { return dlsym(RTLD_NEXT, name); }

/* The index of the wrapper `handle` was returned for, preferring one still
 * registered (a freed handle may be returned again later); wrapper_count if none. */
static size_t wrapper_of(void** handle) {
  size_t found = wrapper_count;
  for (size_t i = wrapper_count; i-- > 0;) {
    if (wrappers[i].handle != handle) continue;
    if (!wrappers[i].unregistered) return i;
    if (found == wrapper_count) found = i;
  }
  return found;
}

void record_registrations_start(record_mode new_mode) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < wrapper_count; ++i) {
    if (mode == RECORD_ONLY) free(wrappers[i].handle);
  }
  for (size_t i = 0; i < function_count; ++i) free((char*)functions[i].device_name);
  for (size_t i = 0; i < var_count; ++i) free((char*)vars[i].device_name);
  wrapper_count = function_count = var_count = 0;
  errors = 0;
  mode = new_mode;
  pthread_mutex_unlock(&lock);
}

const recorded_wrapper* record_wrappers(size_t* count) {
  pthread_mutex_lock(&lock);
  *count = wrapper_count;
  pthread_mutex_unlock(&lock);
  return wrappers;
}

const recorded_function* record_functions(size_t* count) {
  pthread_mutex_lock(&lock);
  *count = function_count;
  pthread_mutex_unlock(&lock);
  return functions;
}

const recorded_var* record_vars(size_t* count) {
  pthread_mutex_lock(&lock);
  *count = var_count;
  pthread_mutex_unlock(&lock);
  return vars;
}

size_t record_registration_errors(void) {
  pthread_mutex_lock(&lock);
  size_t count = errors;
  pthread_mutex_unlock(&lock);
  return count;
}

void** __hipRegisterFatBinary(const void* wrapper) {
  void** handle = NULL;
  pthread_mutex_lock(&lock);
  record_mode current = mode;
  pthread_mutex_unlock(&lock);
  if (current == RECORD_AND_FORWARD) {
    register_fat_binary_fn next = (register_fat_binary_fn)next_definition("__hipRegisterFatBinary");
    if (next) handle = next(wrapper);
  } else {
    handle = malloc(sizeof *handle);
    if (handle) *handle = (void*)wrapper;
  }
  pthread_mutex_lock(&lock);
  if (!handle || reserve_one((void**)&wrappers, &wrapper_capacity, wrapper_count, sizeof *wrappers) != 0) {
    ++errors;
  } else {
    wrappers[wrapper_count].wrapper = wrapper;
    wrappers[wrapper_count].handle = handle;
    wrappers[wrapper_count].unregistered = 0;
    ++wrapper_count;
  }
  pthread_mutex_unlock(&lock);
  return handle;
}

/* Marks the wrapper of `handle` unregistered; returns whether the call is to be passed on. */
static int mark_unregistered(void** handle, size_t index) {
  if (index == wrapper_count) {
    ++errors;
    return mode == RECORD_AND_FORWARD;
  }
  if (wrappers[index].unregistered) return 0;
  wrappers[index].unregistered = 1;
  if (mode == RECORD_ONLY) {
    free(handle);
    wrappers[index].handle = NULL;
    return 0;
  }
  return 1;
}

static void forward_unregister(void** handle) {
  unregister_fat_binary_fn next = (unregister_fat_binary_fn)next_definition("__hipUnregisterFatBinary");
  if (next) {
    next(handle);
  } else {
    pthread_mutex_lock(&lock);
    ++errors;
    pthread_mutex_unlock(&lock);
  }
}

void __hipUnregisterFatBinary(void** handle) {
  pthread_mutex_lock(&lock);
  int pass_on = mark_unregistered(handle, wrapper_of(handle));
  pthread_mutex_unlock(&lock);
  if (pass_on) forward_unregister(handle);
}

int record_unregister(size_t index) {
  pthread_mutex_lock(&lock);
  if (index >= wrapper_count || wrappers[index].unregistered) {
    pthread_mutex_unlock(&lock);
    return -1;
  }
  void** handle = wrappers[index].handle;
  int pass_on = mark_unregistered(handle, index);
  pthread_mutex_unlock(&lock);
  if (pass_on) forward_unregister(handle);
  return 0;
}

void __hipRegisterFunction(void** handle, const void* host_stub, char* device_function, const char* device_name,
                           unsigned thread_limit, void* tid, void* bid, struct dim3* block_dim, struct dim3* grid_dim,
                           int* wave_size) {
  pthread_mutex_lock(&lock);
  size_t index = wrapper_of(handle);
  char* name = device_name ? strdup(device_name) : NULL;
  if (index == wrapper_count || !name ||
      reserve_one((void**)&functions, &function_capacity, function_count, sizeof *functions) != 0) {
    ++errors;
    free(name);
  } else {
    functions[function_count].wrapper = index;
    functions[function_count].host_stub = host_stub;
    functions[function_count].device_name = name;
    ++function_count;
  }
  record_mode current = mode;
  pthread_mutex_unlock(&lock);
  if (current != RECORD_AND_FORWARD) return;
  register_function_fn next = (register_function_fn)next_definition("__hipRegisterFunction");
  if (next) {
    next(handle, host_stub, device_function, device_name, thread_limit, tid, bid, block_dim, grid_dim, wave_size);
  } else {
    pthread_mutex_lock(&lock);
    ++errors;
    pthread_mutex_unlock(&lock);
  }
}

void __hipRegisterVar(void** handle, char* host_variable, char* device_address, const char* device_name, int external,
                      size_t size, int constant, int global) {
  pthread_mutex_lock(&lock);
  size_t index = wrapper_of(handle);
  char* name = device_name ? strdup(device_name) : NULL;
  if (index == wrapper_count || !name || reserve_one((void**)&vars, &var_capacity, var_count, sizeof *vars) != 0) {
    ++errors;
    free(name);
  } else {
    vars[var_count].wrapper = index;
    vars[var_count].host_var = host_variable;
    vars[var_count].device_name = name;
    ++var_count;
  }
  record_mode current = mode;
  pthread_mutex_unlock(&lock);
  if (current != RECORD_AND_FORWARD) return;
  register_var_fn next = (register_var_fn)next_definition("__hipRegisterVar");
  if (next) {
    next(handle, host_variable, device_address, device_name, external, size, constant, global);
  } else {
    pthread_mutex_lock(&lock);
    ++errors;
    pthread_mutex_unlock(&lock);
  }
}
