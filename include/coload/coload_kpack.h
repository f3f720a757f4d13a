/* coload/coload_kpack.h: the C API for kpack archives (`.kpack`, TheRock's
 * per-target code object archives: docs/format.md, "kpack archives"):
 * listing an archive's entries and extracting one code object, as `coload
 * ls` and `coload extract` do. No registry is needed; archives are read with
 * coload's default limits (no COLOAD_* variable is read). Added in 0.5.
 *
 * Part of the C API of coload/coload.h, with its conventions; each header
 * includes the other, so either may be included first.
 */
#ifndef COLOAD_COLOAD_KPACK_H
#define COLOAD_COLOAD_KPACK_H

#include <stddef.h>
#include <stdint.h>

#include "coload/coload.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An archive's compression_scheme. */
typedef enum coload_kpack_scheme {
  COLOAD_KPACK_SCHEME_NONE = 0,           /**< "none": code objects stored as they are */
  COLOAD_KPACK_SCHEME_ZSTD_PER_KERNEL = 1 /**< "zstd-per-kernel": one zstd frame each */
} coload_kpack_scheme;

/** One (binary key, target) of an archive's TOC. Every pointer in it stays
 *  valid until the listing is freed. */
typedef struct coload_kpack_entry {
  size_t struct_size;     /**< sizeof(coload_kpack_entry) of the library that made it */
  size_t bundle;          /**< the key's bundle index, as `coload ls` numbers it */
  const char* key;        /**< "lib/librocblas.so.4#3": the binary and its code object index */
  const char* binary;     /**< the key before its last '#' (the whole key without one) */
  int has_index;          /**< nonzero when the key ends in "#N" with N a number */
  uint32_t index;         /**< that N; 0 when has_index is 0 */
  const char* target;     /**< "gfx942", "gfx90a:xnack+", "gfx11-generic", "amdgcnspirv" */
  const char* entry_id;   /**< the bundle entry ID it is presented under ("hipv4-amdgcn-amd-amdhsa--gfx942") */
  uint32_t ordinal;       /**< its index among the archive's blobs or frames */
  uint64_t original_size; /**< the code object's size */
  uint64_t stored_offset; /**< file offset of its blob (none) or zstd frame */
  uint64_t stored_size;   /**< bytes stored there (none: original_size) */
} coload_kpack_entry;

/** What coload_kpack_list made; free it with coload_kpack_listing_free. */
typedef struct coload_kpack_listing {
  size_t struct_size; /**< sizeof(coload_kpack_listing) of the library that made it */
  coload_kpack_scheme scheme;
  const char* group_name;      /**< the TOC's group_name ("blas") */
  const char* gfx_arch_family; /**< the TOC's gfx_arch_family */
  size_t gfx_arch_count;
  const char* const* gfx_arches; /**< the targets rocm-kpack's loader trusts */
  size_t code_objects;           /**< blobs or frames the archive declares */
  size_t count;
  const coload_kpack_entry* const* entries; /**< every TOC entry, by key (bundle), then TOC order */
} coload_kpack_listing;

/** Lists every entry of the kpack archive at `path` from its header and
 *  TOC (a zstd archive's frame sizes are read; nothing is decoded). Errors
 *  (then *out is null): COLOAD_ERROR_NULL_ARGUMENT (`path`, `out`),
 *  COLOAD_ERROR_IO (a file that cannot be opened or mapped),
 *  COLOAD_ERROR_BAD_MAGIC (no kpack archive: the message says what the file
 *  is), and the archive's errors with their location (file, field, offset,
 *  value): COLOAD_ERROR_UNSUPPORTED_VERSION (field "version" or
 *  "format_version"), COLOAD_ERROR_UNSUPPORTED_METHOD, COLOAD_ERROR_MALFORMED,
 *  COLOAD_ERROR_OUT_OF_BOUNDS, ... (docs/reading-rules.md, "kpack archives").
 *  Threads: calls share no state. */
coload_status coload_kpack_list(const char* path, coload_kpack_listing** out);
/** Frees what coload_kpack_list made. Null is fine; anything else must come
 *  from coload_kpack_list and be freed once. */
void coload_kpack_listing_free(coload_kpack_listing* listing);

/** One code object coload_kpack_extract read; free it with
 *  coload_kpack_object_free. */
typedef struct coload_kpack_object {
  size_t struct_size;   /**< sizeof(coload_kpack_object) of the library that made it */
  const void* bytes;    /**< the code object, exactly as it was packed; valid until freed */
  size_t size;          /**< its size (the entry's original_size) */
  const char* entry_id; /**< its bundle entry ID */
  size_t bundle;        /**< its key's bundle index, as coload_kpack_entry's */
} coload_kpack_object;

/** The code object the kpack archive at `path` holds for binary key `key`
 *  ("lib/librocblas.so.4#3") and TOC target `target` ("gfx942", as
 *  coload_kpack_entry's, compared exactly): a view of the mapped archive
 *  (none) or its one zstd frame decoded (zstd-per-kernel), checked against
 *  its target's ELF header. Errors (then *out is null):
 *  COLOAD_ERROR_NULL_ARGUMENT (`path`, `key`, `target`, `out`),
 *  coload_kpack_list's, COLOAD_ERROR_NOT_FOUND naming the key (field "key")
 *  or, for a key without that target, the target and the key's targets
 *  (field "target", its bundle set), and the entry's read errors with their
 *  location (COLOAD_ERROR_CORRUPT_DATA, COLOAD_ERROR_SIZE_MISMATCH,
 *  COLOAD_ERROR_MALFORMED). Threads: calls share no state. */
coload_status coload_kpack_extract(const char* path, const char* key, const char* target, coload_kpack_object** out);
/** Frees what coload_kpack_extract made (and unmaps its archive). Null is
 *  fine; anything else must come from coload_kpack_extract and be freed once. */
void coload_kpack_object_free(coload_kpack_object* object);

#ifdef __cplusplus
}
#endif

#endif /* COLOAD_COLOAD_KPACK_H */
