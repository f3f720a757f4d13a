// The test HIP library's control interface: what a test scripts before it
// opens coload's HIP backend on the library, and the counters it asserts on.
//
// Covers: libcoload_test_hip.so, a stand-in for libamdhip64 that exports the
// hip* functions coload's HIP backend calls (same names and signatures as
// HIP 5's <hip/hip_runtime_api.h>) with scripted devices and failures, and
// answers as the HIP release it is set to (docs/loading.md, "HIP releases"):
// hipRuntimeGetVersion's number and initialisation; the code object
// versions, generic targets and ISAs hipModuleLoadData loads, refusing the
// rest with that release's status (hipErrorSharedObjectInitFailed before
// 6.1, hipErrorNoBinaryForGpu after); from 5.5 with the runtime unbundler
// off (6.0's default; 7.x has no other path), reopening by path the file
// the bytes are mapped from (hipErrorFileNotFound when it cannot); the
// thread's last error as HIP_RETURN keeps it (every status before 7.0,
// failures other than hipErrorNotReady from 7.0), with hipGetLastError and
// hipPeekAtLastError. hipModuleGetFunction knows the STT_FUNC symbols only.
// Copies per major, with that SONAME: libcoload_test_hip.so.5 (no
// hipGetDevicePropertiesR0600), .so.6, .so.7, .so.8 (a major coload
// refuses); and under HIP's own name, each in its own directory:
// libamdhip64.so.7 (SONAME libamdhip64.so.7, release 7.0) and
// libamdhip64.so.8. Does not cover: any GPU work;
// a module is a record, a function a pointer into it, a global an address (a
// per-module base + st_value) read from the image's symbol table.
// hipModuleGetGlobal answers only on the module's device.
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

/// (And COLOAD_TEST_HIP_RELEASE="6.2" sets the release when it loads, and
/// HIP_USE_RUNTIME_UNBUNDLER=0 or 1 the unbundler, as CLR reads it at start.)

/// Forgets every device, failure and counter; the release back to the
/// copy's major (5.2.3, 6.2, 7.0, 8.0; 7.0 for the unversioned copy).
void coload_fake_hip_reset(void);
/// Sets the release: "5.0", "5.1", "5.2", "5.4", "5.5", "6.0" … "6.4", "7.0" or "8.0";
/// -1 (nothing changed) for another name.
int coload_fake_hip_set_release(const char* release);
/// Adds a device: gcnArchName (e.g. "gfx90a:sramecc+:xnack-"), shared memory
/// per block in bytes, warp size.
void coload_fake_hip_add_device(const char* arch, int lds_bytes, int warp_size);
/// What hipRuntimeGetVersion reports (major * 10000000 + minor * 100000 + patch).
void coload_fake_hip_set_version(int version);
/// HIP_USE_RUNTIME_UNBUNDLER: 1 (the runtime unbundler, from memory), 0
/// (comgr's, which reopens a mapped file by path; 5.5 and later), -1 the
/// release's default (1 up to 5.7, 0 from 6.0; 7.x has no such flag).
void coload_fake_hip_set_runtime_unbundler(int use);
/// Makes every later call of `function` (e.g. "hipModuleLoadData") return
/// `status` (a hipError_t value) without doing anything.
void coload_fake_hip_fail(const char* function, int status);
/// hipModuleGetFunction answers hipErrorNotFound for kernel `name`.
void coload_fake_hip_hide_kernel(const char* name);
/// Counters: "module_loads", "module_unloads", "live_modules",
/// "bad_unloads" (unload of an unknown or already unloaded module),
/// "set_device" (hipSetDevice calls), "current_device", "properties_r0000"
/// and "properties_r0600" (calls of hipGetDeviceProperties, the HIP 5
/// layout, and of hipGetDevicePropertiesR0600, HIP 6's), "init" (calls that
/// run HIP's init: every hip* function but the two error texts), "reopens"
/// (loads whose bytes lay in a file mapping the release reopened by path),
/// "own_mappings" (loads whose bytes start a page of an anonymous mapping
/// without a name: an mmap of their own, not malloc memory), "bytes_changed" (unloads that
/// found the bytes given at load changed), "failed_calls" (hip* calls that
/// returned an error; what hipGetLastError and hipPeekAtLastError return
/// aside); -1 when unknown.
int coload_fake_hip_counter(const char* name);
/// The bytes the last hipModuleLoadData was handed (null before any).
const void* coload_fake_hip_last_image(void);

#ifdef __cplusplus
}
#endif
