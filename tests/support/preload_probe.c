/* preload_probe: loads a HIP runtime, then a HIP shared library whose
 * static constructors register its wrappers, as a program linked against
 * both would, and writes what the runtime received (preload_recording_hip.c):
 *
 *   preload_probe HIP_RUNTIME LIBRARY OUT_DIR
 *   preload_probe HIP_RUNTIME hostile OUT_DIR   (records no clang writes: register_hostile)
 *   preload_probe HIP_RUNTIME module:FILE OUT_DIR   (FILE loaded with hipModuleLoadData)
 *
 * Run under LD_PRELOAD=libcoload_preload.so by tests/preload_test.cpp: the
 * runtime is loaded RTLD_GLOBAL, after the preload in the search order, so
 * the library's registrations reach coload first and the runtime through
 * dlsym(RTLD_NEXT). Exit 1 when something does not load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Registers records no clang writes, each at its own address (printed to
 * OUT_DIR/given.tsv: index, address): garbage where a bundle should be, a
 * table cut by a page that cannot be read, a null binary, version 2, another
 * magic, an entry count of 2^40. */
static int register_hostile(const char* out_dir) {
  void** (*register_fat_binary)(const void*) = (void** (*)(const void*))dlsym(RTLD_DEFAULT, "__hipRegisterFatBinary");
  if (!register_fat_binary) return 1;
  const long page = sysconf(_SC_PAGESIZE);
  unsigned char* pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return 1;
  static unsigned char garbage[64];
  memset(garbage, 0x5a, sizeof garbage);
  static unsigned char huge[64];
  memcpy(huge, "__CLANG_OFFLOAD_BUNDLE__", 24);
  const uint64_t count = (uint64_t)1 << 40;
  memcpy(huge + 24, &count, sizeof count);
  unsigned char* cut = pages + page - 40; /* magic, a count of 3, then the page ends */
  memcpy(cut, "__CLANG_OFFLOAD_BUNDLE__", 24);
  const uint64_t three = 3;
  memcpy(cut + 24, &three, sizeof three);
  if (mprotect(pages + page, page, PROT_NONE) != 0) return 1;
  static struct {
    uint32_t magic, version;
    const void* binary;
    void* reserved;
  } records[6];
  const void* binaries[6] = {garbage, cut, NULL, garbage, garbage, huge};
  for (int i = 0; i < 6; ++i) {
    records[i].magic = i == 4 ? 0x58585858u : 0x48495046u;
    records[i].version = i == 3 ? 2 : 1;
    records[i].binary = binaries[i];
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/given.tsv", out_dir);
  FILE* given = fopen(path, "w");
  if (!given) return 1;
  for (int i = 0; i < 6; ++i) {
    register_fat_binary(&records[i]);
    fprintf(given, "%d\t%p\n", i, (void*)&records[i]);
  }
  fclose(given);
  return 0;
}

/* Loads the file `path` from memory as a program's kernels would
 * (hipModuleLoadData, through whatever definition comes first), then unloads
 * it; given.tsv: 0, the buffer's address. */
static int load_module_from(const char* path, const char* out_dir) {
  int (*load)(void**, const void*) = (int (*)(void**, const void*))dlsym(RTLD_DEFAULT, "hipModuleLoadData");
  int (*unload)(void*) = (int (*)(void*))dlsym(RTLD_DEFAULT, "hipModuleUnload");
  FILE* file = fopen(path, "rb");
  if (!load || !unload || !file) return 1;
  static unsigned char image[1 << 20];
  const size_t size = fread(image, 1, sizeof image, file);
  fclose(file);
  if (size == 0) return 1;
  void* module = NULL;
  if (load(&module, image) != 0 || unload(module) != 0) return 1;
  char given_path[4096];
  snprintf(given_path, sizeof given_path, "%s/given.tsv", out_dir);
  FILE* given = fopen(given_path, "w");
  if (!given) return 1;
  fprintf(given, "0\t%p\n", (void*)image);
  fclose(given);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: preload_probe HIP_RUNTIME LIBRARY|hostile OUT_DIR\n");
    return 2;
  }
  void* runtime = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!runtime) {
    fprintf(stderr, "preload_probe: %s\n", dlerror());
    return 1;
  }
  const int hostile = strcmp(argv[2], "hostile") == 0;
  if (strncmp(argv[2], "module:", 7) == 0) {
    if (load_module_from(argv[2] + 7, argv[3]) != 0) {
      fprintf(stderr, "preload_probe: %s did not load and unload\n", argv[2] + 7);
      return 1;
    }
  } else if (hostile) {
    if (register_hostile(argv[3]) != 0) {
      fprintf(stderr, "preload_probe: the hostile records could not be set up\n");
      return 1;
    }
  } else if (!dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "preload_probe: %s\n", dlerror());
    return 1;
  }
  int (*dump)(const char*, int) = (int (*)(const char*, int))dlsym(runtime, "preload_recording_dump");
  if (!dump || dump(argv[3], !hostile) != 0) {
    fprintf(stderr, "preload_probe: cannot write %s/received.tsv\n", argv[3]);
    return 1;
  }
  return 0;
}
