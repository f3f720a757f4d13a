/* hip_launch_stubs.h: the launch entry points clang's host code calls
 * (hipLaunchKernel and the call configuration push/pop), for the test HIP
 * runtimes that record registrations (hipk_recording_hip.c,
 * preload_recording_hip.c): a launch goes nowhere. Include it in one source
 * file of the library. */
#ifndef COLOAD_TESTS_HIP_LAUNCH_STUBS_H
#define COLOAD_TESTS_HIP_LAUNCH_STUBS_H

#include <stddef.h>

typedef struct {
  unsigned x, y, z;
} recording_dim3;

int hipLaunchKernel(const void* fn, recording_dim3 grid, recording_dim3 block, void** args, size_t shmem,
                    void* stream) {
  (void)fn, (void)grid, (void)block, (void)args, (void)shmem, (void)stream;
  return 0;
}

static recording_dim3 saved_grid, saved_block;
static size_t saved_shmem;
static void* saved_stream;

int __hipPushCallConfiguration(recording_dim3 grid, recording_dim3 block, size_t shmem, void* stream) {
  saved_grid = grid, saved_block = block, saved_shmem = shmem, saved_stream = stream;
  return 0;
}

int __hipPopCallConfiguration(recording_dim3* grid, recording_dim3* block, size_t* shmem, void** stream) {
  *grid = saved_grid, *block = saved_block, *shmem = saved_shmem, *stream = saved_stream;
  return 0;
}

#endif /* COLOAD_TESTS_HIP_LAUNCH_STUBS_H */
