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

#include "hipk_report.h"

typedef struct {
  unsigned x, y, z;
} hipk_dim3;

int hipLaunchKernel(const void* fn, hipk_dim3 grid, hipk_dim3 block, void** args, size_t shmem, void* stream) {
  (void)fn, (void)grid, (void)block, (void)args, (void)shmem, (void)stream;
  return 0;
}

static hipk_dim3 saved_grid, saved_block;
static size_t saved_shmem;
static void* saved_stream;

int __hipPushCallConfiguration(hipk_dim3 grid, hipk_dim3 block, size_t shmem, void* stream) {
  saved_grid = grid, saved_block = block, saved_shmem = shmem, saved_stream = stream;
  return 0;
}

int __hipPopCallConfiguration(hipk_dim3* grid, hipk_dim3* block, size_t* shmem, void** stream) {
  *grid = saved_grid, *block = saved_block, *shmem = saved_shmem, *stream = saved_stream;
  return 0;
}

__attribute__((destructor)) static void hipk_report_at_exit(void) {
  const char* size = getenv("HIPK_MARKER_SIZE");
  if (size != NULL) hipk_report(strtoul(size, NULL, 0));
}
