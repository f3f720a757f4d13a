/* The template library's registrations recorded without any HIP runtime
 * (tests/support/record_registrations.h, RECORD_ONLY: the library is
 * dlopen'ed lazily, its launch code never runs), then replayed into a
 * dry-run registry of coload's C API as a runtime would make them, as
 * bench/ does: every wrapper, then every function in call order. Checks the
 * counts, that every registration is accepted, and how many distinct stubs
 * resolve on the device.
 * Usage: hip_templates_replay LIBRARY DEVICE_SPEC RESOLVED NOT_FOUND. Exit 0
 * when all hold. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coload/coload.h"
#include "record_registrations.h"

enum { kWrappers = 104, kFunctions = 876 };

static int failures;

static void expect(int holds, const char* what, long value) {
  printf("%s: %s (%ld)\n", holds ? "ok" : "FAILED", what, value);
  if (!holds) ++failures;
}

/* Whether functions[i] is the first registration of its stub. */
static int first_of_stub(const recorded_function* functions, size_t i) {
  for (size_t j = 0; j < i; ++j) {
    if (functions[j].host_stub == functions[i].host_stub) return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: hip_templates_replay LIBRARY DEVICE_SPEC RESOLVED NOT_FOUND\n");
    return 2;
  }
  record_registrations_start(RECORD_ONLY);
  void* library = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  expect(library != NULL, "the library loads with no HIP runtime in the process", 0);
  if (!library) return 1;
  size_t wrapper_count = 0, function_count = 0;
  const recorded_wrapper* wrappers = record_wrappers(&wrapper_count);
  const recorded_function* functions = record_functions(&function_count);
  expect(wrapper_count == kWrappers, "wrappers recorded", (long)wrapper_count);
  expect(function_count == kFunctions, "__hipRegisterFunction calls recorded", (long)function_count);
  expect(record_registration_errors() == 0, "calls the shim could not record", (long)record_registration_errors());

  coload_registry_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_DRY_RUN;
  options.dry_run_devices = argv[2];
  options.log_level = COLOAD_LOG_LEVEL_ERROR; /* the devices with no code warn once per binary */
  coload_registry* registry = NULL;
  expect(coload_registry_create(&options, &registry) == COLOAD_OK, "a dry-run registry", 0);
  if (!registry) return 1;
  coload_binary* binaries = calloc(wrapper_count, sizeof *binaries);
  size_t refused_wrappers = 0, refused_functions = 0;
  for (size_t i = 0; i < wrapper_count; ++i) {
    if (coload_register_wrapper(registry, wrappers[i].wrapper, NULL, &binaries[i]) != COLOAD_OK) ++refused_wrappers;
  }
  for (size_t i = 0; i < function_count; ++i) {
    coload_status status = coload_register_function(registry, binaries[functions[i].wrapper], functions[i].host_stub,
                                                    functions[i].device_name);
    if (status != COLOAD_OK && ++refused_functions <= 3)
      printf("refused: %s: %s\n", coload_status_string(status), coload_last_error_message());
  }
  expect(refused_wrappers == 0, "wrappers refused", (long)refused_wrappers);
  expect(refused_functions == 0, "functions refused", (long)refused_functions);

  long resolved = 0, not_found = 0, other = 0;
  for (size_t i = 0; i < function_count; ++i) {
    if (!first_of_stub(functions, i)) continue;
    coload_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    coload_status status = coload_lookup_function(registry, functions[i].host_stub, 0, &info);
    if (status == COLOAD_OK) {
      ++resolved;
    } else if (status == COLOAD_ERROR_NOT_FOUND) {
      ++not_found;
    } else {
      ++other;
    }
  }
  expect(resolved == strtol(argv[3], NULL, 10), "distinct stubs resolved on the device", resolved);
  expect(not_found == strtol(argv[4], NULL, 10), "distinct stubs with no code for the device", not_found);
  expect(other == 0, "lookups failing otherwise", other);
  for (size_t i = 0; i < wrapper_count; ++i) {
    if (binaries[i] != 0) coload_unregister(registry, binaries[i]);
  }
  free(binaries);
  coload_registry_destroy(registry);
  dlclose(library);
  expect(record_registration_errors() == 0, "every destructor's unregistration recorded", 0);
  printf("%s\n", failures == 0 ? "all checks passed" : "some checks FAILED");
  return failures == 0 ? 0 : 1;
}
