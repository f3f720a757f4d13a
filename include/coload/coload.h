/* coload/coload.h: the C API, for C runtimes (HIP/CLR-style) and other languages.
 *
 * Covers: a registry of fat binaries over a runtime (HSA, HIP or dry-run):
 * registering files, buffers, file sets and wrappers; per-device lookups of
 * kernels, host stubs and globals; the runtime's devices (its own or the
 * caller's); the entry each bundle chooses; and, with no registry,
 * coload_select (comgr's lookup with coload's rules). It mirrors
 * coload/registry.h; and listing and extracting kpack archives' entries
 * (declared in coload/coload_kpack.h, which this header includes).
 * Does not cover: listing, extracting or checking bundles.
 * Conventions (statuses, handles, struct_size, buffers): docs/loading.md, "C API".
 *
 * Ownership: kernel handles stay valid until their binary is unregistered or
 * the registry destroyed. Threads: every function may be called from many
 * threads at once on one registry, except coload_registry_destroy, which must
 * be the last call on it. No C++ exception ever crosses this boundary.
 */
#ifndef COLOAD_COLOAD_H
#define COLOAD_COLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "coload/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Results. The values from COLOAD_ERROR_IO on mirror coload::ErrorKind. */
typedef enum coload_status {
  COLOAD_OK = 0,
  COLOAD_ERROR_INVALID_HANDLE = 1,   /**< null or not a coload_registry */
  COLOAD_ERROR_NULL_ARGUMENT = 2,    /**< a required pointer argument is null */
  COLOAD_ERROR_BAD_STRUCT_SIZE = 3,  /**< struct_size smaller than the struct this library knows */
  COLOAD_ERROR_BUFFER_TOO_SMALL = 4, /**< output buffer capacity too small; *required says how much */
  COLOAD_ERROR_OUT_OF_MEMORY = 5,
  COLOAD_ERROR_INTERNAL = 6, /**< a bug in coload; the message says where */
  COLOAD_ERROR_IO = 16,
  COLOAD_ERROR_TRUNCATED = 17,
  COLOAD_ERROR_BAD_MAGIC = 18,
  COLOAD_ERROR_OUT_OF_BOUNDS = 19,
  COLOAD_ERROR_OVERFLOW = 20,
  COLOAD_ERROR_LIMIT_EXCEEDED = 21,
  COLOAD_ERROR_UNSUPPORTED_VERSION = 22,
  COLOAD_ERROR_UNSUPPORTED_METHOD = 23,
  COLOAD_ERROR_HASH_MISMATCH = 24,
  COLOAD_ERROR_SIZE_MISMATCH = 25,
  COLOAD_ERROR_CORRUPT_DATA = 26,
  COLOAD_ERROR_MALFORMED = 27,
  COLOAD_ERROR_NOT_FOUND = 28, /**< no fit, unknown kernel, unknown binary, no GPU */
  COLOAD_ERROR_AMBIGUOUS = 29,
  COLOAD_ERROR_INVALID_ARGUMENT = 30 /**< e.g. a device index out of range, a bad device spec */
} coload_status;

/** Which runtime a registry loads with. */
typedef enum coload_runtime_kind {
  COLOAD_RUNTIME_HSA = 0,    /**< ROCr (libhsa-runtime64), opened at run time */
  COLOAD_RUNTIME_HIP = 1,    /**< HIP (libamdhip64), opened at run time */
  COLOAD_RUNTIME_DRY_RUN = 2 /**< validation only, for the devices in dry_run_devices */
} coload_runtime_kind;

/** A registry of fat binaries over one runtime. Opaque. */
typedef struct coload_registry coload_registry;

/** A registered fat binary; 0 is never a valid one. */
typedef uint64_t coload_binary;

/** Severity of a log message, as COLOAD_LOG names them. */
typedef enum coload_log_level {
  COLOAD_LOG_ERROR = 0,
  COLOAD_LOG_WARN = 1,
  COLOAD_LOG_INFO = 2,
  COLOAD_LOG_DEBUG = 3
} coload_log_level;

/** Receives one message (valid during the call only). It may be called from
 *  several threads at once, while other first lookups wait: keep it short. */
typedef void (*coload_log_fn)(void* user_data, coload_log_level level, const char* message);

/** The settings of coload_registry_options: each mirrors a COLOAD_* variable
 *  (docs/environment.md), and 0 (or null) leaves it to that variable (unless
 *  ignore_environment) and else to its default. */
typedef enum coload_unbundler {
  COLOAD_UNBUNDLER_DEFAULT = 0,
  COLOAD_UNBUNDLER_BUILTIN = 1, /**< coload reads and selects (COLOAD_UNBUNDLER=builtin) */
  COLOAD_UNBUNDLER_COMGR = 2    /**< comgr's lookup for plain bundles (COLOAD_UNBUNDLER=comgr) */
} coload_unbundler;
typedef enum coload_switch { COLOAD_SWITCH_DEFAULT = 0, COLOAD_SWITCH_OFF = 1, COLOAD_SWITCH_ON = 2 } coload_switch;
typedef enum coload_hash_check {
  COLOAD_HASH_CHECK_DEFAULT = 0,
  COLOAD_HASH_CHECK_VERIFY = 1, /**< a CCOB's stream decoded to its end and its MD5 checked */
  COLOAD_HASH_CHECK_SKIP = 2    /**< decoding stops once the choice is final; no MD5 */
} coload_hash_check;
typedef enum coload_log_setting {
  COLOAD_LOG_LEVEL_DEFAULT = 0,
  COLOAD_LOG_LEVEL_ERROR = 1,
  COLOAD_LOG_LEVEL_WARN = 2,
  COLOAD_LOG_LEVEL_INFO = 3,
  COLOAD_LOG_LEVEL_DEBUG = 4
} coload_log_setting;

/** Options of coload_registry_create. Zero-initialise, then set struct_size.
 *  Fields after ignore_environment were added later: a caller built against
 *  an older coload.h passes a smaller struct_size and gets their defaults. */
typedef struct coload_registry_options {
  size_t struct_size; /**< sizeof(coload_registry_options) */
  coload_runtime_kind runtime;
  /** DRY_RUN: the devices, comma-separated target IDs ("gfx90a,gfx942:xnack+"). Required there. */
  const char* dry_run_devices;
  /** HSA/HIP: the library to open instead of the default; null for the default. */
  const char* runtime_library;
  /** Nonzero: ignore the COLOAD_* environment variables: a setting below
   *  left at 0 or null takes its default. */
  int ignore_environment;
  /** Threads a first lookup may read a host image's bundles on (the calling
   *  one included); 0: as coload decides (one per bundle up to the
   *  hardware's concurrency, at most 8; one with the comgr unbundler). */
  uint32_t decode_threads;
  /** Receives the registry's messages at COLOAD_LOG's level (default warn)
   *  or more severe; null: they go to stderr. */
  coload_log_fn log;
  void* log_user_data; /**< passed to `log` */

  /* The caller's devices: coload's device i is the runtime's device the
   * caller names i-th, so the numbers agree with the caller's own; every one
   * named is used (none left out) or coload_registry_create fails with
   * COLOAD_ERROR_INVALID_ARGUMENT naming the index and value. A list given
   * to another runtime (dry-run included) or an empty list (a pointer with
   * count 0) is INVALID_ARGUMENT; a null pointer with a nonzero count is
   * COLOAD_ERROR_NULL_ARGUMENT. The arrays are read during the call only. */
  /** HSA: the GPU agents to use, as their hsa_agent_t handles, in this order
   *  (null: every GPU agent ROCr lists whose processor coload knows). The
   *  agents must be the process's ROCr's: the library already loaded in the
   *  process is used when there is one (any libhsa-runtime64.so[.N]),
   *  runtime_library (or the default) opened only when there is none. An
   *  agent that is not one of its GPU agents, repeats an earlier one, or
   *  whose ISA coload cannot describe is refused. */
  const uint64_t* hsa_agents;
  size_t hsa_agent_count;
  /** HIP: the device ordinals to use (as hipSetDevice takes them, after
   *  HIP_VISIBLE_DEVICES), in this order (null: every device). The HIP
   *  library already loaded in the process is used when there is one. An
   *  ordinal out of range or repeated is refused. */
  const int* hip_devices;
  size_t hip_device_count;

  /* Settings; each 0 or null: the COLOAD_* variable, then its default. */
  coload_unbundler unbundler;      /**< COLOAD_UNBUNDLER */
  const char* extended_isa_compat; /**< COLOAD_EXTENDED_ISA_COMPAT: "all" or "gfx1031,gfx1011" */
  coload_switch hotswap;           /**< COLOAD_HOTSWAP */
  const char* hotswap_plugin;      /**< COLOAD_HOTSWAP_PLUGIN: a plugin's path */
  const char* hotswap_pairs;       /**< COLOAD_HOTSWAP_PAIRS: "gfx1030>gfx1031,…" */
  coload_hash_check hash_check;    /**< COLOAD_HASH_CHECK */
  uint64_t max_decompressed_bytes; /**< COLOAD_MAX_DECOMPRESSED_BYTES, in bytes */
  coload_log_setting log_level;    /**< COLOAD_LOG */
  const char* verify_cache;        /**< COLOAD_VERIFY_CACHE: "off" or an absolute directory */
  /* Added in 0.5; a caller's smaller struct_size leaves them out. */
  /** COLOAD_KPACK_ROOT: where a HIPK image's archive paths start, in place of
   *  the binary's own directory (docs/loading.md, "kpack'd libraries"). */
  const char* kpack_root;
  /** The file of every HIPK wrapper this registry registers, for a caller
   *  that knows it (a record copied or mapped without a file); null: the
   *  loaded object or mapping that holds the record names it. No variable. */
  const char* kpack_binary_path;
} coload_registry_options;

/** A kernel as the runtime registered it. Set struct_size before the call. */
typedef struct coload_kernel_info {
  size_t struct_size; /**< sizeof(coload_kernel_info) */
  /** HSA: the AQL kernel_object; HIP: the hipFunction_t; dry-run: 0. */
  uint64_t handle;
  uint32_t kernarg_segment_size;
  uint32_t kernarg_segment_align;
  uint32_t group_segment_size;   /**< static LDS bytes */
  uint32_t private_segment_size; /**< scratch bytes per work-item */
  int dynamic_callstack;         /**< nonzero when the private size is only a lower bound */
  /* Added in 0.2; a caller's smaller struct_size leaves them out. */
  /** End of the explicit arguments a launch packs (the hidden ones follow,
   *  filled by the runtime): the kernarg_bytes coload_check_dispatch expects. */
  uint32_t explicit_kernarg_size;
} coload_kernel_info;

/** Opens the runtime and creates a registry over its devices. Errors: those
 *  of opening the runtime (COLOAD_ERROR_NOT_FOUND when there is no GPU),
 *  COLOAD_ERROR_INVALID_ARGUMENT for a bad device spec or environment value. */
coload_status coload_registry_create(const coload_registry_options* options, coload_registry** out);
/** Unloads everything and frees the registry; as coload_unregister, every
 *  dispatch of its kernels must have finished. The HSA runtime is shut down
 *  (hsa_shut_down) but never unloaded from the process. Null is
 *  COLOAD_ERROR_INVALID_HANDLE. */
coload_status coload_registry_destroy(coload_registry* registry);

/** Maps the file at `path` and registers it (headers read, nothing
 *  decompressed or loaded). What a lookup reads of a plain bundle or a bare
 *  code object is checked first, so a file cut short since is
 *  COLOAD_ERROR_IO naming it and the offset, not SIGBUS; a CCOB is still
 *  decoded from the mapping, and its file must keep its length until
 *  coload_unregister (docs/reading-rules.md, "What coload requires of the
 *  caller's memory and files"). */
coload_status coload_register_file(coload_registry* registry, const char* path, coload_binary* out);
/** Registers `size` bytes at `bytes`, which must stay mapped and readable
 *  until unregistered: they are read in place, unchecked. `name` (may be
 *  null) appears in error messages. */
coload_status coload_register_memory(coload_registry* registry, const void* bytes, size_t size, const char* name,
                                     coload_binary* out);
/** Registers `count` files as one binary, a file set (docs/loading.md, "File
 *  sets"): each file is a bare code object or anything coload_register_file
 *  takes (a bundle file, a CCOB, a host image). Bare code objects holding the
 *  same kernel names (their `.kd` symbols) are alternatives of one another:
 *  they form one bundle whose entries are those files, and each device
 *  chooses one of them by coload's tiers (native, exact features before
 *  any, same-ISA opt-in, generic family, hotswap), as in a bundle. Objects
 *  with other kernels are bundles of their own, loaded beside it; a bundle
 *  file or host image adds its bundles. Registering maps every file and reads
 *  its headers (a bare object's ELF header and symbol tables), nothing more:
 *  selection and loading happen at the first lookup per device, as for any
 *  binary. Bundles are numbered in the order of `paths` (a group at its first
 *  file). One path is coload_register_file. The binary's name (in messages,
 *  and coload_choice's `file` of a group nothing fits) is the one path, or
 *  "<first path> and N more files"; coload_choice's `file` names the file
 *  each choice came from.
 *  Errors: COLOAD_ERROR_NULL_ARGUMENT (`paths`, one of them, or `out`),
 *  COLOAD_ERROR_INVALID_ARGUMENT (`count` 0), COLOAD_ERROR_LIMIT_EXCEEDED
 *  (`count` above 2^20, or more files than the process has mappings left
 *  under vm.max_map_count: the message names it), COLOAD_ERROR_IO (a file that
 *  cannot be opened or mapped, or is no regular file), the header errors of
 *  a corrupt file (COLOAD_ERROR_BAD_MAGIC, COLOAD_ERROR_MALFORMED, ...), and
 *  COLOAD_ERROR_AMBIGUOUS for one kernel name in two files for one target ID
 *  (the same processor and features); every message names the file (and the
 *  kernel and both files for a clash). Ownership: the paths are copied;
 *  the files stay mapped until coload_unregister. On failure *out is 0 and
 *  nothing is registered. Threads: as coload_register_file. */
coload_status coload_register_files(coload_registry* registry, const char* const* paths, size_t count,
                                    coload_binary* out);
/** Registers the regular files under directory `path` whose file names match
 *  `pattern` (fnmatch(3), e.g. "*.co"; NULL or "": every file; with a '/',
 *  paths relative to `path`, e.g. "gfx942/fmha_*.co", entering only the
 *  subdirectories it can reach: docs/loading.md, "File sets"), descending
 *  into subdirectories when `recursive` is nonzero, as coload_register_files
 *  does with them in sorted path order; the binary is named `path`. Entries
 *  whose names start with "." are skipped, symbolic links to files followed
 *  (to directories, not: they could loop). AITER's layout
 *  (hsa/gfx942/fmha_fwd.co, hsa/gfx950/fmha_fwd.co) registers with
 *  coload_register_directory(registry, "hsa", "*.co", 1, &binary). Errors:
 *  COLOAD_ERROR_NULL_ARGUMENT (`path`, `out`), COLOAD_ERROR_IO (`path` is
 *  no directory, or a directory cannot be read: the message names it),
 *  COLOAD_ERROR_NOT_FOUND (no file matches), then coload_register_files'.
 *  Ownership and threads: as coload_register_files. */
coload_status coload_register_directory(coload_registry* registry, const char* path, const char* pattern, int recursive,
                                        coload_binary* out);
/** Registers the fat binary of a `__hip_fatbin_wrapper`, the pointer a HIP
 *  runtime's __hipRegisterFatBinary receives: {uint32_t magic 0x48495046
 *  "HIPF", uint32_t version 1, const void* binary, void* reserved}. Only the
 *  record is read here, through the kernel (one system call), and `binary`
 *  must lie in a mapping listed readable. At the binary's first use the
 *  image (a plain bundle, a CCOB or a bare code object) is measured from its
 *  own headers and copied, every byte read through the kernel within the
 *  mapping that holds it (the loaded segment, else /proc/self/maps): a page
 *  made PROT_NONE, past its file's end or in [vvar] ends the readable bytes,
 *  and an image whose headers reach past them fails that use and every later
 *  one (COLOAD_ERROR_OUT_OF_BOUNDS naming the field, or the headers'
 *  errors), never a fault. The record and the image must stay mapped from
 *  this call to that first use; coload then reads only its copy (the
 *  image's size, kept until coload_unregister). One wrapper is one binary, loaded
 *  lazily like any other. `name` (may be null: "__hip_fatbin_wrapper at
 *  0x…") appears in error messages. Errors: COLOAD_ERROR_OUT_OF_BOUNDS (the
 *  wrapper or its binary in no readable mapping), COLOAD_ERROR_TRUNCATED (a
 *  wrapper record cut by the end of its mapping), COLOAD_ERROR_BAD_MAGIC,
 *  COLOAD_ERROR_UNSUPPORTED_VERSION, COLOAD_ERROR_MALFORMED (a null binary). */
coload_status coload_register_wrapper(coload_registry* registry, const void* wrapper, const char* name,
                                      coload_binary* out);

/** Records that `host_stub` (the address a HIP program launches a kernel
 *  by, as __hipRegisterFunction receives it with `device_name`) stands for
 *  the kernel named `device_name` of `binary`. Lookups by the stub then
 *  resolve within the binaries that registered it only: two translation
 *  units with kernels of the same name (internal linkage) each reach their
 *  own. Several binaries may register one stub for the same name (a
 *  template's stub, one COMDAT function for every translation unit that
 *  instantiated it); for another name it is COLOAD_ERROR_AMBIGUOUS. The same
 *  binary again is COLOAD_OK. Nothing is loaded. A binary's registrations
 *  are forgotten when it is unregistered. Errors: COLOAD_ERROR_NOT_FOUND
 *  (unknown binary), COLOAD_ERROR_NULL_ARGUMENT, COLOAD_ERROR_INVALID_ARGUMENT
 *  (an empty name). */
coload_status coload_register_function(coload_registry* registry, coload_binary binary, const void* host_stub,
                                       const char* device_name);
/** The kernel `host_stub` stands for on `device`: of the binaries that
 *  registered it, the one whose code fits the device best (the tier, then
 *  exact features before "any"; the first registration on a tie), loading
 *  binaries on `device` first if needed (docs/embedding.md, "Host stubs").
 *  Errors: COLOAD_ERROR_NOT_FOUND for a stub never registered, or whose
 *  binaries were all unregistered; COLOAD_ERROR_INVALID_ARGUMENT for a
 *  device out of range; when none has the kernel for the device, the first
 *  binary's coload_lookup_kernel error. */
coload_status coload_lookup_function(coload_registry* registry, const void* host_stub, size_t device,
                                     coload_kernel_info* out);

/** coload_check_dispatch for the kernel coload_lookup_function resolves to:
 *  what a runtime's hipLaunchKernel checks before it launches. Errors: those
 *  of coload_lookup_function, then coload_check_dispatch's. */
coload_status coload_check_function_dispatch(coload_registry* registry, const void* host_stub, size_t device,
                                             uint64_t kernarg_bytes, uint64_t dynamic_lds,
                                             const uint32_t* workgroup_size);

/** coload_bundle_size's `available` when the caller does not know it: the
 *  image is then bounded by the mapping that holds `bytes`. */
#define COLOAD_AVAILABLE_MAPPED SIZE_MAX

/** Bytes the image at `bytes` occupies, from its own headers, when it lies
 *  within the first `available` bytes: a plain bundle's table and furthest
 *  entry, a CCOB's total_size (v1: measured from its zstd frame headers, or
 *  by decoding), a bare code object's ELF tables. Nothing is kept or
 *  registered. Those `available` bytes must be readable; with
 *  COLOAD_AVAILABLE_MAPPED the image is read through the kernel, as
 *  coload_register_wrapper's is at first use, and a page that cannot be read
 *  never faults (COLOAD_ERROR_OUT_OF_BOUNDS for `bytes` itself, else the
 *  field that reaches past it). Errors: COLOAD_ERROR_BAD_MAGIC (no image starts there),
 *  COLOAD_ERROR_TRUNCATED or COLOAD_ERROR_OUT_OF_BOUNDS (it would run past
 *  `available`), and the headers' errors. */
coload_status coload_bundle_size(const void* bytes, size_t available, size_t* out);

/** Unloads the binary on every device and releases it, once lookups of it
 *  running on other threads have returned (it waits for them): never call it
 *  from a log callback. The caller must first let every dispatch of its
 *  kernels finish (drain the queues): ROCr and HIP free a code object's
 *  memory when it is unloaded, and a kernel still queued or running then
 *  faults the GPU. */
coload_status coload_unregister(coload_registry* registry, coload_binary binary);

/** Looks `kernel_name` up in `binary` for device `device`, loading the binary
 *  there on first use. Errors: COLOAD_ERROR_NOT_FOUND (no code object fits,
 *  unknown kernel or binary), COLOAD_ERROR_UNSUPPORTED_VERSION (code for the
 *  device is there but the runtime's release cannot load it: its code object
 *  version or a generic target; the message names the release),
 *  COLOAD_ERROR_INVALID_ARGUMENT (device out of range), and whatever reading,
 *  validating or loading reports. */
coload_status coload_lookup_kernel(coload_registry* registry, coload_binary binary, size_t device,
                                   const char* kernel_name, coload_kernel_info* out);

/** Loads `binary` on device `device` as the first lookup of a kernel would
 *  (choosing in every bundle, reading, validating and loading the chosen
 *  code objects), once per (binary, device): later calls, and later lookups,
 *  find it loaded. For a caller that wants to know whether a binary loads
 *  on a device before it needs a kernel by name. Errors: those of
 *  coload_lookup_kernel but an unknown kernel: COLOAD_ERROR_NOT_FOUND (no
 *  code object fits, unknown binary), COLOAD_ERROR_UNSUPPORTED_VERSION (only
 *  the runtime's release stands in the way), COLOAD_ERROR_INVALID_ARGUMENT (device
 *  out of range), and whatever reading, validating or loading reports (a
 *  validation error names the kernel, the field, the value and the limit).
 *  Threads: as coload_lookup_kernel. */
coload_status coload_load(coload_registry* registry, coload_binary binary, size_t device);

/** Looks the global variable `name` (a `__device__` or `__constant__`
 *  variable, by its symbol name) up in `binary` for device `device`, loading
 *  the binary there on first use, as coload_lookup_kernel: `*address` is
 *  where the runtime placed it (HSA: the executable's variable symbol
 *  address; HIP: hipModuleGetGlobal's device pointer; dry-run: 0) and
 *  `*size` its size in bytes (dry-run: the symbol's st_size). Both are set
 *  to 0 on failure (when not null). The address stays valid until the binary is
 *  unregistered or the registry destroyed. Errors: COLOAD_ERROR_NOT_FOUND
 *  (no variable of that name in any code object loaded for the device, a
 *  kernel's name included; the message names the variable and the binary),
 *  COLOAD_ERROR_NULL_ARGUMENT, and those of coload_lookup_kernel. */
coload_status coload_lookup_global(coload_registry* registry, coload_binary binary, size_t device, const char* name,
                                   uint64_t* address, size_t* size);

/** Checks a dispatch of `kernel_name` before it is submitted (loading the
 *  binary on `device` first if needed, as coload_lookup_kernel):
 *  `kernarg_bytes` is the length of the caller's packed explicit arguments,
 *  `dynamic_lds` the bytes of dynamic LDS, `workgroup_size` x, y, z (null:
 *  1, 1, 1). The kernarg length must cover the explicit arguments and stop
 *  before the hidden ones (the whole segment when the metadata lists no
 *  arguments); static + dynamic LDS must fit the device; the workgroup must
 *  respect the kernel's limits. Errors: COLOAD_ERROR_SIZE_MISMATCH (kernarg
 *  length), COLOAD_ERROR_LIMIT_EXCEEDED (LDS), COLOAD_ERROR_INVALID_ARGUMENT
 *  (workgroup size), COLOAD_ERROR_MALFORMED (a kernarg layout that cannot be
 *  dispatched), and those of coload_lookup_kernel; the message names the
 *  kernel, the field, the value and the limit. */
coload_status coload_check_dispatch(coload_registry* registry, coload_binary binary, size_t device,
                                    const char* kernel_name, uint64_t kernarg_bytes, uint64_t dynamic_lds,
                                    const uint32_t* workgroup_size);

/** How an entry fits a device (coload::Tier; docs/selection.md). */
typedef enum coload_tier {
  COLOAD_TIER_NATIVE = 0,     /**< built for the device's processor */
  COLOAD_TIER_EQUIVALENT = 1, /**< a same-ISA processor's, with the opt-in */
  COLOAD_TIER_GENERIC = 2,    /**< the device's generic family */
  COLOAD_TIER_HOTSWAP = 3     /**< an allowlisted hotswap source */
} coload_tier;

/** One bundle's choice, as coload_choose hands it over. Every pointer in it
 *  is valid during the callback only: copy what is needed after it. */
typedef struct coload_choice {
  size_t struct_size; /**< sizeof(coload_choice) of the library that made it */
  size_t bundle;      /**< the bundle's index in the binary */
  /** COLOAD_OK: an entry was chosen. COLOAD_ERROR_NOT_FOUND: none fits (the
   *  message lists the entries and the nearest miss). Another status: the
   *  bundle could not be read (the message names file, bundle and field). */
  coload_status status;
  const char* message;  /**< "" when an entry was chosen; never null */
  size_t entry_index;   /**< the chosen entry's position in the bundle */
  const char* entry_id; /**< its bundle entry ID; "" when none */
  coload_tier tier;
  /** The chosen code object as stored (an EQUIVALENT or HOTSWAP entry is not
   *  transformed here); null and 0 when none. */
  const void* bytes;
  size_t size;
  /* Added in 0.3; read it only when struct_size covers it. */
  /** The file the bundle came from: the binary's path (or name) for a
   *  one-file binary; in a file set, the member file, and for a group of code
   *  objects the chosen entry's file (the set's name when none is chosen).
   *  Never null. */
  const char* file;
} coload_choice;

/** Receives one bundle's choice; returns nonzero to go on, 0 to stop. */
typedef int (*coload_choice_fn)(void* user_data, const coload_choice* choice);

/** Chooses for device `device` in every bundle of `binary` (coload's tiers,
 *  CCOBs streamed and verified as the registry's options say) and calls `fn`
 *  for each bundle in order, on this thread. Nothing is loaded or cached.
 *  Returns COLOAD_OK once every bundle was handed over or `fn` stopped,
 *  whatever each bundle's status; errors: an unknown binary,
 *  COLOAD_ERROR_INVALID_ARGUMENT (device out of range), and a hotswap plugin
 *  that could not be used. */
coload_status coload_choose(coload_registry* registry, coload_binary binary, size_t device, coload_choice_fn fn,
                            void* user_data);

/** The number of devices the runtime has. */
coload_status coload_device_count(const coload_registry* registry, size_t* out);
/** Device `device`'s target ID ("gfx90a:sramecc+:xnack-") into `buffer` of
 *  `capacity` bytes, NUL-terminated. `required` (may be null) receives the
 *  size needed, NUL included, also when the buffer is too small. */
coload_status coload_device_name(const coload_registry* registry, size_t device, char* buffer, size_t capacity,
                                 size_t* required);

/** The message of this thread's last failed call; "" after a success. Valid
 *  until this thread's next coload call. Never null. */
const char* coload_last_error_message(void);

/** coload_error_location.has: which of its numbers are set. */
#define COLOAD_LOCATION_HAS_BUNDLE (1u << 0)
#define COLOAD_LOCATION_HAS_BUNDLE_OFFSET (1u << 1)
#define COLOAD_LOCATION_HAS_ENTRY (1u << 2)
#define COLOAD_LOCATION_HAS_OFFSET (1u << 3)
#define COLOAD_LOCATION_HAS_VALUE (1u << 4)
#define COLOAD_LOCATION_HAS_LIMIT (1u << 5)

/** Where this thread's last error lies, as data (coload::ErrorLocation): the
 *  fields coload_last_error_message() renders into its sentence. A number is
 *  set only when its COLOAD_LOCATION_HAS_* bit is in `has` (else it is 0); a
 *  string is "" when unset, never null. Added in 0.4. */
typedef struct coload_error_location {
  size_t struct_size;     /**< sizeof(coload_error_location), set by the caller */
  coload_status status;   /**< the status the failed call returned; COLOAD_OK when none failed */
  uint32_t has;           /**< COLOAD_LOCATION_HAS_* bits */
  const char* file;       /**< the file, or the name a binary was registered under */
  uint64_t bundle;        /**< the bundle's index in the file */
  uint64_t bundle_offset; /**< that bundle's byte offset in the file */
  uint64_t entry;         /**< the entry's index in that bundle's table */
  const char* entry_id;   /**< that entry's ID ("hipv4-amdgcn-amd-amdhsa--gfx90a") */
  const char* field;      /**< the field at fault ("uncompressed_size", "max_decompressed_bytes") */
  uint64_t offset;        /**< the field's byte offset in its structure */
  uint64_t value;         /**< the value found there */
  uint64_t limit;         /**< the limit it passes */
} coload_error_location;

/** Fills `*out` with where this thread's last error lies. The caller
 *  zero-initialises it and sets struct_size to sizeof(coload_error_location);
 *  only the fields that lie wholly within struct_size are written, and
 *  struct_size never: a struct grown by a later coload.h keeps its new
 *  fields 0 under this library, and a caller built against this one gets
 *  the fields it knows from a later library. After a success, or before any call failed, it returns
 *  COLOAD_OK with status COLOAD_OK, has 0 and every string "". An error that
 *  named no place (a null argument, a bad handle) has has 0 and "" strings
 *  too. The strings live in the thread's last-error storage: valid until
 *  this thread's next coload call other than coload_last_error_message and
 *  coload_last_error_location. Errors: COLOAD_ERROR_NULL_ARGUMENT (`out`),
 *  COLOAD_ERROR_BAD_STRUCT_SIZE (struct_size does not reach `has`), which
 *  leave the last error as it was: a mistaken call does not erase the error
 *  being inspected. Threads: per thread, as coload_last_error_message. */
coload_status coload_last_error_location(coload_error_location* out);

/** A constant name for a status ("not_found"); "unknown_status" for others. */
const char* coload_status_string(coload_status status);

/** The library's version, "MAJOR.MINOR.PATCH" (constant, never null). A
 *  program may compare it with the COLOAD_VERSION_* it was compiled against
 *  (coload/version.h): the same MAJOR is ABI-compatible (docs/packaging.md). */
const char* coload_version(void);

/* ---------------------------------------------------------------------------
 * The comgr-shaped lookup, for runtimes that load code objects themselves:
 * "for these ISAs, which entry of this image, and where", as
 * amd_comgr_lookup_code_object answers it, with coload's tiers and CCOBs
 * decoded and verified. Nothing is registered, loaded or cached; no registry
 * is needed. docs/comgr.md ("coload_select") maps it onto comgr's call. */

/** Options of coload_select. Zero-initialise, then set struct_size; null
 *  options are all defaults. The settings mirror coload_registry_options'
 *  and their COLOAD_* variables, which apply unless ignore_environment (so do
 *  COLOAD_UNBUNDLER, COLOAD_HOTSWAP* and COLOAD_VERIFY_CACHE). */
typedef struct coload_select_options {
  size_t struct_size; /**< sizeof(coload_select_options) */
  int ignore_environment;
  coload_hash_check hash_check;    /**< COLOAD_HASH_CHECK: how a CCOB's MD5 is checked */
  uint64_t max_decompressed_bytes; /**< COLOAD_MAX_DECOMPRESSED_BYTES: cap of a CCOB's bundle */
  const char* extended_isa_compat; /**< COLOAD_EXTENDED_ISA_COMPAT: "all" or "gfx1031,gfx1011" */
} coload_select_options;

/** The answer for one ISA. Every pointer in it stays valid until the
 *  selection is freed. */
typedef struct coload_selected {
  size_t struct_size; /**< sizeof(coload_selected) of the library that made it */
  /** COLOAD_OK: an entry was chosen. COLOAD_ERROR_NOT_FOUND: none fits (the
   *  message lists the entries and the nearest miss). Another status: the
   *  image could not be read for this ISA (a CCOB's corrupt stream or hash,
   *  the comgr unbundler's refusal), the message says where. */
  coload_status status;
  const char* message;  /**< "" when an entry was chosen; never null */
  coload_tier tier;     /**< as coload_choice's: an EQUIVALENT or HOTSWAP entry is not transformed */
  size_t entry_index;   /**< the chosen entry's position in the bundle's table */
  const char* entry_id; /**< its bundle entry ID; "" when none */
  /** The chosen code object; null and 0 when none. owned 0 (a plain bundle
   *  or a bare code object): a view of the caller's image, `offset` bytes
   *  from its start, as comgr's offset and size. owned nonzero (a CCOB): the
   *  entry decoded into a buffer the selection owns, `offset` its place in
   *  the decoded bundle's table. */
  const void* bytes;
  size_t size;
  size_t offset;
  int owned;
  /** Every entry of the bundle judged for this ISA, one line each: "[N]
   *  verdict tier ID: reason", after a line saying the choice, as
   *  `coload select` prints it. Never null. */
  const char* report;
} coload_selected;

/** What coload_select made; free it with coload_selection_free. */
typedef struct coload_selection {
  /** The image the offsets count from (for coload_select_wrapper, the
   *  wrapper's `binary`) and the bytes it occupies, from its own headers. */
  const void* image;
  size_t image_size;
  size_t count;                          /**< isa_count */
  const coload_selected* const* results; /**< results[i] answers isas[i] */
} coload_selection;

/** For each of `isa_count` ISAs, the entry the image at `bytes` would load
 *  there and where: one image (a plain bundle, a CCOB of any version or a
 *  bare code object) of at most `size` bytes, measured from its own headers
 *  (COLOAD_AVAILABLE_MAPPED: bounded by the mapping that holds `bytes`, as
 *  coload_bundle_size). An ISA is named as comgr and ROCr name it
 *  ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-") or as a bare target ID
 *  ("gfx90a:xnack-", HIP's gcnArchName); a feature it leaves out is one the
 *  device has no mode for, so only entries leaving it open fit (as comgr
 *  matches a bare "gfx90a"). Each ISA has its own tiers (docs/selection.md);
 *  a CCOB is decoded for the first ISA and again only for an entry no
 *  earlier ISA chose (in skip mode, per ISA when a stream stopped early).
 *  The bytes of a plain bundle or code object stay the caller's and must
 *  outlive their use; *out owns everything else, freed with
 *  coload_selection_free. Errors (then *out is null):
 *  COLOAD_ERROR_NULL_ARGUMENT (bytes, out, isas with isa_count > 0, or an
 *  isas[i]), COLOAD_ERROR_INVALID_ARGUMENT (an ISA that names no device, its
 *  index in the message; isa_count above 4096; a bad option), COLOAD_ERROR_BAD_STRUCT_SIZE,
 *  COLOAD_ERROR_BAD_MAGIC, COLOAD_ERROR_TRUNCATED or
 *  COLOAD_ERROR_OUT_OF_BOUNDS (the image would run past `size` or its
 *  mapping), the headers' errors (COLOAD_ERROR_MALFORMED for a host ELF:
 *  register that with coload_register_memory), and a hotswap plugin that
 *  could not be loaded. Per-ISA outcomes are in the results. Threads:
 *  calls share no state. */
coload_status coload_select(const void* bytes, size_t size, const char* const* isas, size_t isa_count,
                            const coload_select_options* options, coload_selection** out);

/** coload_select on the image of a `__hip_fatbin_wrapper` (the pointer
 *  __hipRegisterFatBinary receives), measured within its mapping as
 *  coload_register_wrapper does; the offsets count from the wrapper's
 *  `binary`. Errors: coload_register_wrapper's for the wrapper, then
 *  coload_select's. */
coload_status coload_select_wrapper(const void* wrapper, const char* const* isas, size_t isa_count,
                                    const coload_select_options* options, coload_selection** out);

/** Frees what coload_select made (its results, strings and owned buffers).
 *  Null is fine; anything else must come from coload_select or
 *  coload_select_wrapper and be freed once. */
void coload_selection_free(coload_selection* selection);

#ifdef __cplusplus
}
#endif

/* Listing and extracting kpack archives' entries (coload/coload_kpack.h). */
#include "coload/coload_kpack.h"

#endif /* COLOAD_COLOAD_H */
