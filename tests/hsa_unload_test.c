/* A registry over ROCr (the test HSA library, not loaded before) created and
 * destroyed: hsa_shut_down is called, but the library stays mapped, since
 * unmapping ROCr runs its static destructors after its runtime state is gone
 * (docs/loading.md, "Shutdown"). Its own process, so nothing else holds the
 * library.
 *
 *   hsa_unload_test TEST_HSA_LIBRARY */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coload/coload.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) {
    fprintf(stderr, "FAIL: %s is loaded before the test\n", argv[1]);
    return 1;
  }
  setenv("COLOAD_TEST_HSA_SCRIPT", "gpu gfx90a:sramecc+:xnack- lds=65536", 1);
  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_HSA;
  options.runtime_library = argv[1];
  options.ignore_environment = 1;
  coload_registry* registry = NULL;
  if (coload_registry_create(&options, &registry) != COLOAD_OK) {
    fprintf(stderr, "FAIL: coload_registry_create: %s\n", coload_last_error_message());
    return 1;
  }
  if (coload_registry_destroy(registry) != COLOAD_OK) {
    fprintf(stderr, "FAIL: coload_registry_destroy: %s\n", coload_last_error_message());
    return 1;
  }
  void* still = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  if (!still) {
    fprintf(stderr, "FAIL: the HSA library was unloaded when the registry was destroyed\n");
    return 1;
  }
  long (*counter)(const char*) = (long (*)(const char*))dlsym(still, "coload_test_hsa_counter");
  if (!counter || counter("shut_down") != 1 || counter("refcount") != 0) {
    fprintf(stderr, "FAIL: hsa_shut_down was not called once (shut_down %ld, refcount %ld)\n",
            counter ? counter("shut_down") : -1, counter ? counter("refcount") : -1);
    return 1;
  }
  printf("PASS: hsa_shut_down called once, the HSA library still mapped\n");
  return 0;
}
