// The test HIP library's control interface: what a test scripts before it
// opens coload's HIP backend on the library, and the counters it asserts on.
//
// Covers: libcoload_test_hip.so, a stand-in for libamdhip64 that exports the
// hip* functions coload's HIP backend calls (same names and signatures as
// HIP 5's <hip/hip_runtime_api.h>) with scripted devices and failures. Does
// not cover: any GPU work; a module is a record, a function a pointer into it,
// a global an address (a per-module base + st_value) read from the image's
// symbol table. hipModuleGetGlobal answers only on the module's device.
//
// Use: a test dlopens the library (RTLD_LOCAL, the same path coload opens, so
// both get the one instance) and resolves the entry points below with dlsym;
// it must not link against the library, or its hip* symbols would interpose
// on a real libamdhip64 loaded in the same process.
// Threads: every entry point takes one lock; state is process-wide, so tests
// call coload_fake_hip_reset first.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/// (Without a chance to call these first, a process sets
/// COLOAD_TEST_HIP_DEVICES="ARCH/LDS/WARP,…": those devices are added when
/// the library loads.)

/// Forgets every device, failure and counter; version back to 50221153.
void coload_fake_hip_reset(void);
/// Adds a device: gcnArchName (e.g. "gfx90a:sramecc+:xnack-"), shared memory
/// per block in bytes, warp size.
void coload_fake_hip_add_device(const char* arch, int lds_bytes, int warp_size);
/// What hipRuntimeGetVersion reports (major * 10000000 + minor * 100000 + patch).
void coload_fake_hip_set_version(int version);
/// Makes every later call of `function` (e.g. "hipModuleLoadData") return
/// `status` (a hipError_t value) without doing anything.
void coload_fake_hip_fail(const char* function, int status);
/// hipModuleGetFunction answers hipErrorNotFound for kernel `name`.
void coload_fake_hip_hide_kernel(const char* name);
/// Counters: "module_loads", "module_unloads", "live_modules",
/// "bad_unloads" (unload of an unknown or already unloaded module),
/// "set_device" (hipSetDevice calls), "current_device", "properties_r0000"
/// and "properties_r0600" (calls of hipGetDeviceProperties, the HIP 5
/// layout, and of hipGetDevicePropertiesR0600, HIP 6's); -1 when unknown.
int coload_fake_hip_counter(const char* name);

#ifdef __cplusplus
}
#endif
