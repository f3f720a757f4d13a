/* Loads and unloads clang-built HIP shared libraries repeatedly with the
 * example registration layer (examples/hip_layer) as their HIP runtime: their
 * static constructors register one binary per wrapper through the layer and
 * their destructors unregister them. Each round checks the layer's binary
 * count before, while and after, and calls launcher functions of the library,
 * checking the status the layer gave their last launch.
 *
 *   hip_proof_dlopen ROUNDS LIBRARY WRAPPERS [FUNCTION=STATUS]...
 *
 * A FUNCTION is called as int f(void*, void*, void*, void*, int) with nulls
 * and 0 (the fixtures' launchers take pointers and a count; nothing runs).
 * Exit 0 when every check holds. Run under ASan and TSan by the tests. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_layer.h"

typedef int (*launcher)(void*, void*, void*, void*, int);

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: hip_proof_dlopen ROUNDS LIBRARY WRAPPERS [FUNCTION=STATUS]...\n");
    return 2;
  }
  const int rounds = atoi(argv[1]);
  const char* library = argv[2];
  const size_t wrappers = (size_t)strtoul(argv[3], NULL, 10);
  int failures = 0;
  for (int round = 0; round < rounds; ++round) {
    const size_t before = hip_layer_binary_count();
    void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      fprintf(stderr, "dlopen %s: %s\n", library, dlerror());
      return 1;
    }
    if (hip_layer_binary_count() != before + wrappers) {
      fprintf(stderr, "round %d: %zu binaries registered, expected %zu\n", round, hip_layer_binary_count() - before,
              wrappers);
      ++failures;
    }
    for (int i = 4; i < argc; ++i) {
      char name[256];
      const char* equals = strchr(argv[i], '=');
      if (!equals || (size_t)(equals - argv[i]) >= sizeof name) return 2;
      memcpy(name, argv[i], (size_t)(equals - argv[i]));
      name[equals - argv[i]] = '\0';
      launcher function = (launcher)dlsym(handle, name);
      if (!function) {
        fprintf(stderr, "%s: no function %s\n", library, name);
        return 1;
      }
      function(NULL, NULL, NULL, NULL, 0);
      hip_layer_launch launch;
      if (hip_layer_last_launch(&launch) != 0 || launch.status != atoi(equals + 1)) {
        fprintf(stderr, "round %d: %s's last launch gave %d, expected %s\n", round, name, launch.status, equals + 1);
        ++failures;
      }
    }
    if (dlclose(handle) != 0) {
      fprintf(stderr, "dlclose %s: %s\n", library, dlerror());
      return 1;
    }
    if (hip_layer_binary_count() != before) {
      fprintf(stderr, "round %d: %zu binaries left registered after dlclose\n", round,
              hip_layer_binary_count() - before);
      ++failures;
    }
  }
  printf("%s: %d rounds, %zu wrappers each, %s\n", library, rounds, wrappers,
         failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
