/* A process that loads through HSA and exits, in each of the ways a program
 * ends (docs/loading.md, "Shutdown"). The test HSA library ends the process
 * with status 86 when it is called after its own static state is destroyed,
 * as a real ROCr's static destructors leave it unusable at exit.
 *
 *   hsa_exit_test TEST_HSA_LIBRARY BUNDLE MODE
 *
 * MODE: unregister  everything released in main (the library counts it);
 *       leave       the registry never destroyed;
 *       atexit      destroyed by an atexit handler registered before coload
 *                   opened the runtime (it runs after the library's statics);
 *       destructor  destroyed by a destructor function (runs later still, as
 *                   a C++ global object's destructor would). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coload/coload.h"

static coload_registry* registry; /* reachable until exit: nothing leaks */
static coload_binary binary;
static int destroy_in_destructor;

static void destroy_registry(void) {
  if (coload_unregister(registry, binary) != COLOAD_OK || coload_registry_destroy(registry) != COLOAD_OK) {
    fprintf(stderr, "FAIL: releasing at exit: %s\n", coload_last_error_message());
    _exit(1);
  }
  registry = NULL;
}

__attribute__((destructor)) static void destroy_late(void) {
  if (destroy_in_destructor) destroy_registry();
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const char* mode = argv[3];
  if (strcmp(mode, "atexit") == 0) atexit(destroy_registry);
  destroy_in_destructor = strcmp(mode, "destructor") == 0;

  setenv("COLOAD_TEST_HSA_SCRIPT", "gpu gfx90a:sramecc+:xnack- lds=65536", 1);
  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_HSA;
  options.runtime_library = argv[1];
  options.ignore_environment = 1;
  coload_kernel_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (coload_registry_create(&options, &registry) != COLOAD_OK || coload_register_file(registry, argv[2], &binary) ||
      coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info) != COLOAD_OK) {
    fprintf(stderr, "FAIL: %s\n", coload_last_error_message());
    return 1;
  }
  if (strcmp(mode, "unregister") == 0) {
    void* library = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    long (*counter)(const char*) = library ? (long (*)(const char*))dlsym(library, "coload_test_hsa_counter") : NULL;
    destroy_registry();
    if (!counter || counter("executables_created") != 1 || counter("executables_destroyed") != 1 ||
        counter("readers_destroyed") != 1 || counter("shut_down") != 1 || counter("order_violations") != 0) {
      fprintf(stderr, "FAIL: the HSA handles were not all released in order\n");
      return 1;
    }
  }
  printf("PASS: %s: loaded kernel object 0x%llx, exiting\n", mode, (unsigned long long)info.handle);
  return 0;
}
