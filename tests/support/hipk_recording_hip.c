/* hipk_recording_hip: a HIP library for executables to link against
 * (libhipk_recording_hip.so) that records their registrations
 * (record_registrations.c, RECORD_ONLY), does nothing on a launch, and at
 * exit prints what was registered (hipk_report.h) when HIPK_MARKER_SIZE is
 * set (the bytes of each wrapper's target to print). Used by
 * tests/fixtures/hipk_fixtures.sh for the mixed-target executables, so
 * tests/hipk_images_test.sh sees what a kpack'd executable's constructors
 * hand a HIP runtime. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>

#include "hip_launch_stubs.h"
#include "hipk_report.h"

__attribute__((destructor)) static void hipk_report_at_exit(void) {
  const char* size = getenv("HIPK_MARKER_SIZE");
  if (size != NULL) hipk_report(strtoul(size, NULL, 0));
}
