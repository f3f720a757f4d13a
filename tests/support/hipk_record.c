/* hipk_record: dlopens a HIP shared library with its registrations recorded
 * (record_registrations.h, RECORD_ONLY: no HIP runtime, no libcoload) and
 * prints what its constructors passed to __hipRegisterFatBinary, for
 * tests/hipk_images_test.sh to compare with the file:
 *
 *   hipk_record LIBRARY MARKER_SIZE
 *
 * stdout, one line per wrapper in call order, then one per function:
 *   wrapper <i> magic 0x<u32> version <u32> pointer <offset|null> reserved1 0x<u64> marker <hex|->
 *   function <wrapper> <device name>
 *   errors <n>
 * pointer is the wrapper's binary pointer minus the library's load base
 * (hex); marker is the MARKER_SIZE bytes it points at (hex), '-' for a null
 * pointer. Exit 1 when the library does not load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_registrations.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hipk_record LIBRARY MARKER_SIZE\n");
    return 2;
  }
  size_t marker_size = strtoul(argv[2], NULL, 0);
  record_registrations_start(RECORD_ONLY);
  void* library = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "hipk_record: %s\n", dlerror());
    return 1;
  }
  size_t wrapper_count = 0, function_count = 0;
  const recorded_wrapper* wrappers = record_wrappers(&wrapper_count);
  for (size_t i = 0; i < wrapper_count; ++i) {
    const unsigned char* w = wrappers[i].wrapper;
    uint32_t magic, version;
    uint64_t pointer, reserved1;
    memcpy(&magic, w, 4);
    memcpy(&version, w + 4, 4);
    memcpy(&pointer, w + 8, 8);
    memcpy(&reserved1, w + 16, 8);
    Dl_info info;
    if (!dladdr(w, &info)) {
      fprintf(stderr, "hipk_record: wrapper %zu is not in a loaded object\n", i);
      return 1;
    }
    printf("wrapper %zu magic 0x%08x version %u ", i, magic, version);
    if (pointer == 0) {
      printf("pointer null reserved1 0x%016llx marker -\n", (unsigned long long)reserved1);
      continue;
    }
    printf("pointer 0x%llx reserved1 0x%016llx marker ",
           (unsigned long long)(pointer - (uint64_t)(uintptr_t)info.dli_fbase), (unsigned long long)reserved1);
    const unsigned char* marker = (const unsigned char*)(uintptr_t)pointer;
    for (size_t b = 0; b < marker_size; ++b) printf("%02x", marker[b]);
    printf("\n");
  }
  const recorded_function* functions = record_functions(&function_count);
  for (size_t i = 0; i < function_count; ++i) {
    printf("function %zu %s\n", functions[i].wrapper, functions[i].device_name);
  }
  printf("errors %zu\n", record_registration_errors());
  return 0;
}
