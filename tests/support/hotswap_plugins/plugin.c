/* A test hotswap plugin (coload/hotswap_plugin.h), built several times with
 * different definitions: a good one whose transform returns its input
 * unchanged, one that returns a file's bytes (PLUGIN_OUTPUT_FILE: a
 * transpiler's output, built for the device), and bad ones (a missing symbol, another ABI version, a failing
 * transform, a transform returning garbage or nothing, an unknown processor
 * in its pairs). tests/hotswap_test.cpp loads each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coload/hotswap_plugin.h"

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "test-plugin"
#endif
#ifndef PLUGIN_VERSION
#define PLUGIN_VERSION COLOAD_HOTSWAP_PLUGIN_ABI
#endif
#ifndef PLUGIN_SOURCE
#define PLUGIN_SOURCE "gfx1250"
#endif
#ifndef PLUGIN_DEVICE
#define PLUGIN_DEVICE "gfx942"
#endif

static const char* const kSources[] = {PLUGIN_SOURCE, "gfx1250"};
static const char* const kDevices[] = {PLUGIN_DEVICE, "gfx950"};

COLOAD_HOTSWAP_PLUGIN_EXPORT int coload_hotswap_plugin_version(void) { return PLUGIN_VERSION; }

COLOAD_HOTSWAP_PLUGIN_EXPORT const char* coload_hotswap_plugin_name(void) { return PLUGIN_NAME; }

COLOAD_HOTSWAP_PLUGIN_EXPORT int coload_hotswap_plugin_pairs(const char* const** sources, const char* const** devices,
                                                             size_t* count) {
  *sources = kSources;
  *devices = kDevices;
  *count = 2;
  return 0;
}

COLOAD_HOTSWAP_PLUGIN_EXPORT int coload_hotswap_plugin_transform(const void* in, size_t in_size,
                                                                 const char* device_target_id, void** out,
                                                                 size_t* out_size, char* error, size_t error_capacity) {
  (void)device_target_id;
#if defined(PLUGIN_TRANSFORM_FAILS)
  (void)in;
  (void)in_size;
  (void)out;
  (void)out_size;
  strncpy(error, "stepping not supported", error_capacity);
  if (error_capacity) error[error_capacity - 1] = '\0';
  return 7;
#elif defined(PLUGIN_TRANSFORM_GARBAGE)
  (void)in;
  (void)error;
  (void)error_capacity;
  *out = malloc(in_size);
  if (!*out) return 1;
  memset(*out, 'x', in_size);
  *out_size = in_size;
  return 0;
#elif defined(PLUGIN_TRANSFORM_PADDED)
  /* The input, then 1 MiB of zeros no ELF header accounts for. */
  (void)error;
  (void)error_capacity;
  *out = calloc(in_size + (1u << 20), 1);
  if (!*out) return 1;
  memcpy(*out, in, in_size);
  *out_size = in_size + (1u << 20);
  return 0;
#elif defined(PLUGIN_OUTPUT_FILE)
  (void)in;
  (void)in_size;
  FILE* file = fopen(PLUGIN_OUTPUT_FILE, "rb");
  long size = -1;
  if (file && fseek(file, 0, SEEK_END) == 0) size = ftell(file);
  *out = size > 0 ? malloc((size_t)size) : NULL;
  if (!*out || fseek(file, 0, SEEK_SET) != 0 || fread(*out, 1, (size_t)size, file) != (size_t)size) {
    if (file) fclose(file);
    free(*out);
    strncpy(error, "cannot read " PLUGIN_OUTPUT_FILE, error_capacity);
    if (error_capacity) error[error_capacity - 1] = '\0';
    return 1;
  }
  fclose(file);
  *out_size = (size_t)size;
  return 0;
#elif defined(PLUGIN_TRANSFORM_EMPTY)
  (void)in;
  (void)in_size;
  (void)error;
  (void)error_capacity;
  *out = NULL;
  *out_size = 0;
  return 0;
#else
  (void)error;
  (void)error_capacity;
  *out = malloc(in_size);
  if (!*out) return 1;
  memcpy(*out, in, in_size);
  *out_size = in_size;
  return 0;
#endif
}

#ifndef PLUGIN_OMIT_FREE
COLOAD_HOTSWAP_PLUGIN_EXPORT void coload_hotswap_plugin_free(void* buffer) { free(buffer); }
#endif
