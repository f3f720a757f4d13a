/* hipk_report.h: prints what record_registrations.c recorded, for
 * tests/hipk_images_test.sh (hipk_record.c after a dlopen, the recording
 * HIP library hipk_recording_hip.c at exit). stdout, one line per wrapper in
 * call order, then one per function, then the error count:
 *   wrapper <i> magic 0x<u32> version <u32> pointer <0x offset|null> reserved1 0x<u64> marker <hex|->
 *   function <wrapper> <device name>
 *   errors <n>
 * pointer is the wrapper's binary pointer minus its object's load bias
 * (l_addr: the link-time address); marker the `marker_size` bytes it points
 * at, '-' for a null pointer. Returns -1 when a wrapper is in no loaded object. */
#ifndef COLOAD_TESTS_HIPK_REPORT_H
#define COLOAD_TESTS_HIPK_REPORT_H

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "record_registrations.h"

static int hipk_report(size_t marker_size) {
  size_t wrapper_count = 0, function_count = 0;
  const recorded_wrapper* wrappers = record_wrappers(&wrapper_count);
  for (size_t i = 0; i < wrapper_count; ++i) {
    const unsigned char* w = (const unsigned char*)wrappers[i].wrapper;
    uint32_t magic, version;
    uint64_t pointer, reserved1;
    memcpy(&magic, w, 4);
    memcpy(&version, w + 4, 4);
    memcpy(&pointer, w + 8, 8);
    memcpy(&reserved1, w + 16, 8);
    Dl_info info;
    struct link_map* map = NULL;
    if (!dladdr1(w, &info, (void**)&map, RTLD_DL_LINKMAP) || map == NULL) {
      fprintf(stderr, "hipk_report: wrapper %zu is not in a loaded object\n", i);
      return -1;
    }
    printf("wrapper %zu magic 0x%08x version %u ", i, magic, version);
    if (pointer == 0) {
      printf("pointer null reserved1 0x%016llx marker -\n", (unsigned long long)reserved1);
      continue;
    }
    printf("pointer 0x%llx reserved1 0x%016llx marker ", (unsigned long long)(pointer - (uint64_t)map->l_addr),
           (unsigned long long)reserved1);
    const unsigned char* marker = (const unsigned char*)(uintptr_t)pointer;
    for (size_t b = 0; b < marker_size; ++b) printf("%02x", marker[b]);
    printf("\n");
  }
  const recorded_function* functions = record_functions(&function_count);
  for (size_t i = 0; i < function_count; ++i) {
    printf("function %zu %s\n", functions[i].wrapper, functions[i].device_name);
  }
  printf("errors %zu\n", record_registration_errors());
  fflush(stdout);
  return 0;
}

#endif /* COLOAD_TESTS_HIPK_REPORT_H */
