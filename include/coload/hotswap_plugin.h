/* coload/hotswap_plugin.h: the C ABI of an external hotswap pass.
 *
 * Covers: the five functions a shared library exports so that
 * COLOAD_HOTSWAP_PLUGIN=/path/lib.so (or HotswapRegistry::add_plugin) can use
 * it as a transpiler pass, the HSA_TOOLS_LIB-style route for vendor tools.
 * Does not cover: how coload chooses when to call it (coload/detail/hotswap.h,
 * coload/select.h) or what the plugin does inside.
 *
 * Contract: coload dlopens the library (RTLD_NOW | RTLD_LOCAL), resolves every
 * function below (a missing one is an error), checks the version, reads the
 * name and pairs once, and keeps the library loaded while the pass may run.
 * Every string and array the plugin returns from version/name/pairs must stay
 * valid while the library is loaded; coload copies them. No C++ exception and
 * no longjmp may cross these functions. transform may be called from several
 * threads at once. */
#ifndef COLOAD_HOTSWAP_PLUGIN_H
#define COLOAD_HOTSWAP_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; coload refuses any other. */
#define COLOAD_HOTSWAP_PLUGIN_ABI 1

/** Marks the plugin's exported functions (default visibility). */
#define COLOAD_HOTSWAP_PLUGIN_EXPORT __attribute__((visibility("default")))

/** Returns COLOAD_HOTSWAP_PLUGIN_ABI as the plugin was built against. */
int coload_hotswap_plugin_version(void);

/** The pass name (non-empty, NUL-terminated), unique among the registry's passes. */
const char* coload_hotswap_plugin_name(void);

/** The (source processor -> device processor) pairs the pass is validated
 * for: two parallel arrays of `*count` canonical processor names
 * ("gfx1250", "gfx942"). Returns 0 on success. */
int coload_hotswap_plugin_pairs(const char* const** sources, const char* const** devices, size_t* count);

/** Transforms the code object `in[0, in_size)` (borrowed for the call) into
 * one for the device whose full target ID is `device_target_id`
 * ("gfx942:sramecc+:xnack-"). On success returns 0 and sets `*out` and
 * `*out_size` to a buffer coload releases with coload_hotswap_plugin_free. On
 * failure returns non-zero and writes a NUL-terminated reason of at most
 * `error_capacity` bytes into `error`; `*out`, if set, is still freed. */
int coload_hotswap_plugin_transform(const void* in, size_t in_size, const char* device_target_id, void** out,
                                    size_t* out_size, char* error, size_t error_capacity);

/** Releases a buffer transform returned; null is ignored. */
void coload_hotswap_plugin_free(void* buffer);

#ifdef __cplusplus
}
#endif

#endif /* COLOAD_HOTSWAP_PLUGIN_H */
