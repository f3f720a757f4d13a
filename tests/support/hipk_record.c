/* hipk_record: dlopens a HIP shared library with its registrations recorded
 * (record_registrations.h, RECORD_ONLY: no HIP runtime, no libcoload) and
 * prints what its constructors registered (hipk_report.h says the format),
 * for tests/hipk_images_test.sh to compare with the file:
 *
 *   hipk_record LIBRARY MARKER_SIZE
 *
 * Exit 1 when the library does not load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "hipk_report.h"

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
  return hipk_report(marker_size) == 0 ? 0 : 1;
}
