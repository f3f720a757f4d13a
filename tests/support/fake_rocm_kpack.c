/* librocm_kpack for the preload tests: the symbol a CLR built with rocm-kpack
 * imports (kpack_load_code_object), so that preload_hip_kpack7 links it as
 * TheRock's libamdhip64 links the real one. Never called by the tests. */
#include <stddef.h>

int kpack_load_code_object(void* cache, const void* metadata, const char* binary_path, const char* const* arch_list,
                           size_t arch_count, void** code_object, size_t* size) {
  (void)cache;
  (void)metadata;
  (void)binary_path;
  (void)arch_list;
  (void)arch_count;
  (void)code_object;
  (void)size;
  return 1;
}
