/* preload_probe: loads a HIP runtime, then a HIP shared library whose
 * static constructors register its wrappers, as a program linked against
 * both would, and writes what the runtime received (preload_recording_hip.c):
 *
 *   preload_probe HIP_RUNTIME LIBRARY OUT_DIR
 *
 * Run under LD_PRELOAD=libcoload_preload.so by tests/preload_test.cpp: the
 * runtime is loaded RTLD_GLOBAL, after the preload in the search order, so
 * the library's registrations reach coload first and the runtime through
 * dlsym(RTLD_NEXT). Exit 1 when something does not load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: preload_probe HIP_RUNTIME LIBRARY OUT_DIR\n");
    return 2;
  }
  void* runtime = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!runtime) {
    fprintf(stderr, "preload_probe: %s\n", dlerror());
    return 1;
  }
  void* library = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "preload_probe: %s\n", dlerror());
    return 1;
  }
  int (*dump)(const char*) = (int (*)(const char*))dlsym(runtime, "preload_recording_dump");
  if (!dump || dump(argv[3]) != 0) {
    fprintf(stderr, "preload_probe: cannot write %s/received.tsv\n", argv[3]);
    return 1;
  }
  return 0;
}
