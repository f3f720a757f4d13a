/* preload_recording_hip: a HIP runtime for the preload tests
 * (tests/preload_test.cpp), built under HIP's own names per release
 * (libamdhip64.so.6.2.41133 and so on, tests/Preload.cmake) so that
 * libcoload_preload.so reads its release from its file name as it reads
 * ROCm's. Its __hipRegisterFatBinary is CLR's (hipamd/src/hip_platform.cpp)
 * up to the point where CLR keeps the image: a record whose magic is not
 * HIPF ("__hipFatMAGIC2") or whose version is not 1 is refused with CLR's
 * message and a null handle (built with KPACK_CAPABLE: HIPK is accepted as
 * TheRock's CLR accepts it); an accepted one is recorded
 * (record_registrations.c, RECORD_ONLY). Launches do nothing.
 *
 * preload_recording_dump(dir, bundles) writes dir/received.tsv, one line per
 * registration in call order:
 *   <i>\t<accepted 0|1>\t<object of the record: its path, or "anonymous">\t<record's offset in it (hex), or 0>\t<its
 * address> and, when `bundles`, for an accepted record outside every loaded object (one coload made),
 * dir/wrapper_<i>.bundle: the plain bundle it points at, measured from its entry table. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_launch_stubs.h"
#include "record_registrations.h"

/* The size of the plain bundle at `bundle`: its table's furthest entry end; 0 when it is none. */
static uint64_t bundle_size(const unsigned char* bundle) {
  static const char magic[] = "__CLANG_OFFLOAD_BUNDLE__";
  if (memcmp(bundle, magic, 24) != 0) return 0;
  uint64_t count = 0, end = 0, at = 32;
  memcpy(&count, bundle + 24, 8);
  for (uint64_t i = 0; i < count && i < 4096; ++i) {
    uint64_t offset, size, id_size;
    memcpy(&offset, bundle + at, 8);
    memcpy(&size, bundle + at + 8, 8);
    memcpy(&id_size, bundle + at + 16, 8);
    at += 24 + id_size;
    if (offset + size > end) end = offset + size;
  }
  return end > at ? end : at;
}

#ifdef KPACK_CAPABLE
/* A CLR built with rocm-kpack links librocm_kpack and reads HIPK records
 * (hipamd's hip_kpack.cpp), unless ROCM_KPACK_DISABLE is a non-zero number;
 * their archives are read at first use, which the recording never reaches. */
int kpack_load_code_object(void* cache, const void* metadata, const char* binary_path, const char* const* arch_list,
                           size_t arch_count, void** code_object, size_t* size);
/* Referenced, so that the library needs librocm_kpack as CLR's does. */
__attribute__((used)) static int (*const kpack_loader)(void*, const void*, const char*, const char* const*, size_t,
                                                       void**, size_t*) = kpack_load_code_object;
static int kpack_enabled(void) {
  const char* disabled = getenv("ROCM_KPACK_DISABLE");
  return disabled == NULL || atoi(disabled) == 0;
}
#else
static int kpack_enabled(void) { return 0; }
#endif

/* The registrations CLR accepts: magic HIPF (0x48495046), version 1; HIPK
 * (0x4B504948) too for a CLR with rocm-kpack. */
static int clr_accepts(const void* wrapper) {
  uint32_t magic, version;
  memcpy(&magic, wrapper, 4);
  memcpy(&version, (const char*)wrapper + 4, 4);
  if ((magic != 0x48495046u && !(magic == 0x4B504948u && kpack_enabled())) || version != 1) {
    fprintf(stderr, "Cannot Register fat binary. FatMagic: %u version: %u \n", magic, version);
    return 0;
  }
  return 1;
}

/* hipModuleLoadData's images, copied during the call (CLR reads the image then). */
typedef struct {
  const void* image;
  unsigned char* bytes;
  size_t size;
  int unloaded;
} recorded_module;
static recorded_module modules[64];
static size_t module_count;

/* An image's size from its own headers: a plain bundle's table, an ELF's
 * section header table, a CCOB's total size (v2: u32, v3: u64, at offset 8). */
static size_t image_size(const unsigned char* image) {
  if (memcmp(image, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) return (size_t)bundle_size(image);
  if (memcmp(image,
             "\x7f"
             "ELF",
             4) == 0) {
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, image + 40, 8);
    memcpy(&shentsize, image + 58, 2);
    memcpy(&shnum, image + 60, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  if (memcmp(image, "CCOB", 4) == 0) {
    uint16_t version;
    memcpy(&version, image + 4, 2);
    if (version == 2) {
      uint32_t total;
      memcpy(&total, image + 8, 4);
      return total;
    }
    uint64_t total;
    memcpy(&total, image + 8, 8);
    return (size_t)total;
  }
  return 0;
}

int hipGetDevice(int* device) {
  const char* given = getenv("PRELOAD_RECORDING_DEVICE");
  *device = given ? atoi(given) : 0;
  return 0;
}

/* CLR: hipErrorInvalidValue (1) for a null module or image. */
int hipModuleLoadData(void** module, const void* image) {
  if (!module || !image || module_count == sizeof modules / sizeof modules[0]) return 1;
  recorded_module* record = &modules[module_count];
  record->image = image;
  record->size = image_size(image);
  record->bytes = malloc(record->size ? record->size : 1);
  if (record->bytes) memcpy(record->bytes, image, record->size);
  *module = record;
  ++module_count;
  return 0;
}

int hipModuleLoadDataEx(void** module, const void* image, unsigned int count, void* options, void** values) {
  (void)count, (void)options, (void)values;
  return hipModuleLoadData(module, image);
}

int hipModuleUnload(void* module) {
  recorded_module* record = module;
  if (!record || record < modules || record >= modules + module_count || record->unloaded) return 400;
  record->unloaded = 1;
  return 0;
}

int preload_recording_dump(const char* dir, int bundles) {
  char path[4096];
  snprintf(path, sizeof path, "%s/received.tsv", dir);
  FILE* out = fopen(path, "w");
  if (!out) return -1;
  size_t count = 0;
  const recorded_wrapper* wrappers = record_wrappers(&count);
  for (size_t i = 0; i < count; ++i) {
    const void* wrapper = wrappers[i].wrapper;
    const int accepted = clr_accepts(wrapper);
    Dl_info info;
    struct link_map* map = NULL;
    if (dladdr1(wrapper, &info, (void**)&map, RTLD_DL_LINKMAP) && map) {
      fprintf(out, "%zu\t%d\t%s\t%llx\t%p\n", i, accepted, info.dli_fname,
              (unsigned long long)((uintptr_t)wrapper - map->l_addr), wrapper);
      continue;
    }
    fprintf(out, "%zu\t%d\tanonymous\t0\t%p\n", i, accepted, wrapper);
    if (!accepted || !bundles) continue;
    const unsigned char* bundle;
    memcpy(&bundle, (const char*)wrapper + 8, sizeof bundle);
    const uint64_t size = bundle_size(bundle);
    snprintf(path, sizeof path, "%s/wrapper_%zu.bundle", dir, i);
    FILE* file = fopen(path, "wb");
    if (!file) return -1;
    fwrite(bundle, 1, size, file);
    fclose(file);
  }
  fclose(out);
  /* modules.tsv: <i>\t<image's address>\t<unloaded 0|1>; module_<i>.image its bytes. */
  snprintf(path, sizeof path, "%s/modules.tsv", dir);
  out = fopen(path, "w");
  if (!out) return -1;
  for (size_t i = 0; i < module_count; ++i) {
    fprintf(out, "%zu\t%p\t%d\n", i, modules[i].image, modules[i].unloaded);
    snprintf(path, sizeof path, "%s/module_%zu.image", dir, i);
    FILE* file = fopen(path, "wb");
    if (!file) return -1;
    fwrite(modules[i].bytes, 1, modules[i].size, file);
    fclose(file);
  }
  fclose(out);
  return 0;
}
