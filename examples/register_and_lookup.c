/* Registers a fat binary with coload and looks a kernel up on device 0, in C.
 *
 *   register_and_lookup [--dry-run DEVICE_SPEC] FILE KERNEL
 *
 * Uses the HSA runtime when there is a GPU; otherwise (or with --dry-run)
 * the dry-run runtime for DEVICE_SPEC (default gfx90a), which validates the
 * code object without loading it. Exit 0 when the kernel was found. */
#include <stdio.h>
#include <string.h>

#include "coload/coload.h"

static int report(const char* what, coload_status status) {
  fprintf(stderr, "register_and_lookup: %s: %s: %s\n", what, coload_status_string(status), coload_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  const char* dry_run = NULL;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--dry-run") == 0) {
    dry_run = argv[2];
    first = 3;
  }
  if (argc - first != 2) {
    fprintf(stderr, "usage: register_and_lookup [--dry-run DEVICE_SPEC] FILE KERNEL\n");
    return 2;
  }
  const char* path = argv[first];
  const char* kernel_name = argv[first + 1];

  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  coload_registry* registry = NULL;
  coload_status status = COLOAD_ERROR_NOT_FOUND;
  if (!dry_run) {
    options.runtime = COLOAD_RUNTIME_HSA;
    status = coload_registry_create(&options, &registry);
    if (status != COLOAD_OK) {
      fprintf(stderr, "register_and_lookup: no HSA runtime (%s); using the dry-run runtime\n",
              coload_last_error_message());
    }
  }
  if (status != COLOAD_OK) {
    options.runtime = COLOAD_RUNTIME_DRY_RUN;
    options.dry_run_devices = dry_run ? dry_run : "gfx90a";
    status = coload_registry_create(&options, &registry);
    if (status != COLOAD_OK) return report("coload_registry_create", status);
  }

  char device[128];
  status = coload_device_name(registry, 0, device, sizeof device, NULL);
  if (status != COLOAD_OK) {
    report("coload_device_name", status);
    coload_registry_destroy(registry);
    return 1;
  }

  coload_binary binary = 0;
  status = coload_register_file(registry, path, &binary);
  if (status != COLOAD_OK) {
    report("coload_register_file", status);
    coload_registry_destroy(registry);
    return 1;
  }

  coload_kernel_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  status = coload_lookup_kernel(registry, binary, 0, kernel_name, &info);
  if (status != COLOAD_OK) {
    report("coload_lookup_kernel", status);
    coload_registry_destroy(registry);
    return 1;
  }
  printf("%s on device 0 (%s): handle 0x%llx, kernarg %u (align %u), LDS %u, private %u%s\n", kernel_name, device,
         (unsigned long long)info.handle, info.kernarg_segment_size, info.kernarg_segment_align,
         info.group_segment_size, info.private_segment_size, info.dynamic_callstack ? " (dynamic stack)" : "");

  coload_unregister(registry, binary);
  coload_registry_destroy(registry);
  return 0;
}
