/* Eight threads launch the two `scale` kernels of this program's own
 * translation units through the example registration layer while another
 * thread loads and unloads a HIP shared library (whose constructors and
 * destructors register and unregister its wrappers): every launch must reach
 * its own kernel, whatever the registry is doing. Run under TSan by
 * scripts/test.sh and in the normal and ASan builds by ctest.
 *
 *   hip_proof_threads LIBRARY ROUNDS */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "hip_layer.h"

void launch_scale_a_c(void);
void launch_scale_b_c(void);

static atomic_int failures;
static atomic_int loading_done;
static int rounds;

static void* launcher(void* unused) {
  (void)unused;
  /* Until the loader is done, so that launches and loads overlap, and at least `rounds` times. */
  for (int i = 0; i < rounds || !atomic_load(&loading_done); ++i) {
    hip_layer_launch launch;
    launch_scale_a_c();
    if (hip_layer_last_launch(&launch) != 0 || launch.status != 0 || launch.kernel.group_segment_size != 0)
      atomic_fetch_add(&failures, 1);
    launch_scale_b_c();
    if (hip_layer_last_launch(&launch) != 0 || launch.status != 0 || launch.kernel.group_segment_size != 2048)
      atomic_fetch_add(&failures, 1);
  }
  return NULL;
}

static void* loader(void* library) {
  for (int i = 0; i < rounds; ++i) {
    void* handle = dlopen((const char*)library, RTLD_NOW | RTLD_LOCAL);
    if (!handle || dlclose(handle) != 0) {
      fprintf(stderr, "dlopen/dlclose %s: %s\n", (const char*)library, dlerror());
      atomic_fetch_add(&failures, 1);
      break;
    }
  }
  atomic_store(&loading_done, 1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hip_proof_threads LIBRARY ROUNDS\n");
    return 2;
  }
  rounds = atoi(argv[2]);
  pthread_t threads[9];
  pthread_create(&threads[8], NULL, loader, argv[1]);
  for (int i = 0; i < 8; ++i) pthread_create(&threads[i], NULL, launcher, NULL);
  for (int i = 0; i < 9; ++i) pthread_join(threads[i], NULL);
  const size_t left = hip_layer_binary_count();
  printf("8 launching threads, %d library loads: %d failures, %zu binaries registered\n", rounds,
         atomic_load(&failures), left);
  if (atomic_load(&failures) == 0 && left == 2) {
    printf("all checks passed\n");
    return 0;
  }
  return 1;
}
